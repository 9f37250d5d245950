"""A run directory: which directories a run may write into, and one writer at a time.

A run writes only into a directory that is absent, empty, or already a run of the same config
(:func:`check_run_dir`); relulab's own scaffolding (the lock file, ``.relulab-tmp-*`` files a
killed process left, its units' checkpoints) does not make a directory foreign. While a
process writes a run directory it holds an exclusive lock (:func:`locked`): ``fcntl.flock`` on
``.relulab.lock``, which holds the writer's PID. A second writer is refused at once with that
PID. The kernel drops the lock when its holder dies, however it dies, so a lock file left by a
killed process never blocks. A process may nest :func:`locked` on a directory it holds (a
robustness run holds its directory from the first reading to ``robustness.json``, and each of
its sweeps locks it again): the inner call is a no-op, and :func:`check_not_in_use` does not
refuse the holder itself. (Where ``fcntl`` does not exist — Windows — directories are not
locked.)
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from relulab.engine.checkpoint import CHECKPOINT_DIRNAME
from relulab.files import TEMP_PREFIX
from relulab.records.robustness import ROBUSTNESS_FILENAME
from relulab.store import STORE_FILENAME, SWEEP_FILENAME, RunStore, StoreError, read_sweep_record

fcntl: ModuleType | None  # None where the platform has no fcntl
try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = [
    "DIAGNOSE_MARKER",
    "LOCK_FILENAME",
    "DirectoryInUseError",
    "check_not_in_use",
    "check_run_dir",
    "check_holds",
    "directory_holds",
    "is_scaffolding",
    "locked",
]

LOCK_FILENAME = ".relulab.lock"
_HELD: set[Path] = set()  # the directories this process holds the lock of (for nesting)
DIAGNOSE_MARKER = ".relulab-diagnose"  # marks a directory as a diagnose report's: rewritable


class DirectoryInUseError(RuntimeError):
    """Another process is writing this directory."""


def is_scaffolding(name: str) -> bool:
    """Whether a file name is relulab's own bookkeeping (a lock, a killed process's temporary,
    a killed unit's training checkpoints)."""
    return name in (LOCK_FILENAME, CHECKPOINT_DIRNAME) or name.startswith(TEMP_PREFIX)


def _holder(lock_path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(lock_path.read_text().strip())
        return f"PID {pid}"
    return "another process"


def _busy(directory: Path, lock_path: Path) -> DirectoryInUseError:
    return DirectoryInUseError(
        f"{directory} is in use by {_holder(lock_path)} (another relulab command is writing "
        "it); wait for it to finish or choose another directory"
    )


def _check_lock_entry(directory: Path, lock_path: Path) -> None:
    """Refuse a lock path that is not a plain file (a directory, a symbolic link, a FIFO): it
    cannot be locked, and a link would be written through."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(lock_path).st_mode):
            raise DirectoryInUseError(
                f"{lock_path} is not a plain file, so {directory} cannot be locked; remove it "
                "(relulab creates it)"
            )


def check_not_in_use(directory: Path) -> None:
    """Raise :class:`DirectoryInUseError` if a live process holds ``directory``'s lock, or its
    lock path is not a plain file; writes nothing (a missing lock file is not created)."""
    lock_path = directory / LOCK_FILENAME
    _check_lock_entry(directory, lock_path)
    if fcntl is None or directory.resolve() in _HELD:  # no locks; or the holder is us
        return
    try:
        handle = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _busy(directory, lock_path) from None
    finally:
        os.close(handle)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold ``directory``'s exclusive lock (creating the directory); :class:`DirectoryInUseError` if
    a live process holds it. The lock file is removed on release, and so are the directories
    the lock created if nothing else was written into them (a command refused after taking
    its lock leaves no trace)."""
    created = _missing_ancestors(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = directory.resolve()
    if key in _HELD:  # this process holds it already (a robustness run's sweep): nested
        yield
        return
    try:
        with _hold(directory):
            _HELD.add(key)
            try:
                yield
            finally:
                _HELD.discard(key)
    finally:
        _remove_if_empty(created)


def _missing_ancestors(directory: Path) -> list[Path]:
    """``directory`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    current = directory
    while not os.path.lexists(current) and current.parent != current:
        missing.append(current)
        current = current.parent
    return missing


def _remove_if_empty(directories: list[Path]) -> None:
    for directory in directories:  # deepest first; stops at the first that holds something
        try:
            directory.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def _hold(directory: Path) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    lock_path = directory / LOCK_FILENAME
    _check_lock_entry(directory, lock_path)
    while True:
        handle = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            raise _busy(directory, lock_path) from None
        try:
            current = os.stat(lock_path)
        except FileNotFoundError:
            current = None
        if current is not None and os.path.samestat(os.fstat(handle), current):
            break
        os.close(handle)  # its holder removed the file while we waited: lock the new one
    try:
        os.ftruncate(handle, 0)
        os.write(handle, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path)
        os.close(handle)


def directory_holds(directory: Path) -> str | None:
    """What a directory a command is about to write already holds, by the file that marks each
    kind: ``"robustness run"`` (``robustness.json``, or a ``sweep.json`` with a ``preset``
    reading — what an interrupted ``relulab robustness`` leaves; a plain sweep's points are
    always named ``key=value``), ``"sweep"`` (``sweep.json``), ``"run"`` (``runs.sqlite``),
    ``"diagnose report"`` (a diagnose report's marker), ``"other files"`` (anything else), or
    ``None`` (absent, or holding only relulab's scaffolding).

    Args:
        directory: the directory (it may not exist).

    Returns:
        The kind, as above.

    Example:
        >>> directory_holds(Path("no/such/directory")) is None
        True
    """
    if not directory.is_dir():
        return None
    if os.path.lexists(directory / ROBUSTNESS_FILENAME):
        return "robustness run"
    if os.path.lexists(directory / SWEEP_FILENAME):
        with contextlib.suppress(StoreError):
            if any(point.name == "preset" for point in read_sweep_record(directory).points):
                return "robustness run"
        return "sweep"
    if os.path.lexists(directory / STORE_FILENAME):
        return "run"
    if os.path.lexists(directory / DIAGNOSE_MARKER):
        return "diagnose report"
    if any(not is_scaffolding(child.name) for child in directory.iterdir()):
        return "other files"
    return None


def check_holds(directory: Path, kind: str, label: str = "--out") -> bool:
    """Refuse a directory that holds something other than ``kind`` (:func:`directory_holds`);
    writes nothing.

    Args:
        directory: the directory a command is about to write.
        kind: what the command writes (``"run"``, ``"sweep"``, ``"robustness run"``,
            ``"diagnose report"``).
        label: how the user named it.

    Returns:
        Whether it already holds a ``kind`` (to be checked for the same config by the caller).

    Raises:
        ValueError: it holds another kind, or files relulab did not write.
    """
    holds = directory_holds(directory)
    if holds is None:
        return False
    if holds == kind:
        return True
    if holds == "other files":
        raise ValueError(
            f"{label} {directory} is not empty and holds no relulab {kind}; "
            "choose another directory"
        )
    raise ValueError(f"{label} {directory} holds a relulab {holds}, not a {kind}; choose another")


def check_run_dir(out_dir: Path, experiment: str, preset: str, config: dict[str, Any]) -> None:
    """Refuse a path that is a file, a non-empty foreign directory, or a store holding finished
    units of a different run; writes nothing (whether it is in use: :func:`check_not_in_use`)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir} exists and is not a directory")
    if check_holds(out_dir, "run"):
        RunStore.check_resumable(out_dir / STORE_FILENAME, experiment, preset, config)
