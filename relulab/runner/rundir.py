"""A run directory: which directories a run may write into, and one writer at a time.

A run writes only into a directory that is absent, empty, or already a run of the same config
(:func:`check_run_dir`); relulab's own scaffolding (the lock file, ``.relulab-tmp-*`` files a
killed process left, its units' checkpoints) does not make a directory foreign. While a
process writes a run directory it holds an exclusive lock (:func:`locked`): ``fcntl.flock`` on
``.relulab.lock``, which holds the writer's PID. A second writer is refused at once with that
PID. The kernel drops the lock when its holder dies, however it dies, so a lock file left by a
killed process never blocks. (Where ``fcntl`` does not exist — Windows — directories are not
locked.)
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relulab.engine.checkpoint import CHECKPOINT_DIRNAME
from relulab.files import TEMP_PREFIX
from relulab.store import STORE_FILENAME, RunStore

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = [
    "LOCK_FILENAME",
    "DirectoryInUseError",
    "check_not_in_use",
    "check_run_dir",
    "is_scaffolding",
    "locked",
]

LOCK_FILENAME = ".relulab.lock"


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
    if fcntl is None:
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
    a live process holds it. The lock file is removed on release."""
    directory.mkdir(parents=True, exist_ok=True)
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


def check_run_dir(out_dir: Path, experiment: str, preset: str, config: dict[str, Any]) -> None:
    """Refuse a path that is a file, a non-empty foreign directory, or a store holding finished
    units of a different run; writes nothing (whether it is in use: :func:`check_not_in_use`)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir} exists and is not a directory")
    if not out_dir.is_dir():
        return
    store_path = out_dir / STORE_FILENAME
    if os.path.lexists(store_path):
        RunStore.check_resumable(store_path, experiment, preset, config)
    elif any(not is_scaffolding(child.name) for child in out_dir.iterdir()):
        raise ValueError(
            f"--out {out_dir} is not empty and holds no relulab run; choose another directory"
        )
