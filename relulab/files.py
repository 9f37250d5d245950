"""Writing files safely: output paths checked before any work, atomic replacement, leftovers.

Every command checks its output paths first (:func:`check_output_dir`, :func:`check_output_file`)
so that a path under a file, under ``/proc``, on a read-only mount or with an over-long name is
refused in one line before minutes of work — and without creating anything: writability is
probed with a temporary file in the nearest existing directory, removed at once (running as root
makes permission bits meaningless, so only trying tells). Files that must never be seen half
written are written under a temporary name in the same directory and renamed
(:func:`replacing`, :func:`write_atomic`) — every page, figure, table and JSON file relulab
writes goes this way, so a full disk leaves the previous file whole and a symbolic link planted
at an output's name is replaced rather than written through; a process killed mid-write leaves
only ``.relulab-tmp-*`` files, which :func:`remove_temporaries` clears on the next run.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = [
    "TEMP_PREFIX",
    "OutputPathError",
    "check_output_dir",
    "check_no_links_inside",
    "check_output_file",
    "check_path_name",
    "fsync_directory",
    "remove_temporaries",
    "replacing",
    "temporary_path",
    "write_atomic",
]

TEMP_PREFIX = ".relulab-tmp-"


class OutputPathError(ValueError):
    """An output path that cannot be written: refused before any work."""


def _nearest_existing(path: Path) -> Path:
    current = path
    while not current.exists():
        if os.path.lexists(current):
            raise OutputPathError(f"{path}: {current} is a dangling symbolic link")
        if current.parent == current:
            break
        current = current.parent
    return current


def _probe_writable(directory: Path, label: str, path: Path) -> None:
    try:
        handle, name = tempfile.mkstemp(prefix=TEMP_PREFIX + "probe-", dir=directory)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise OutputPathError(f"{label} {path}: cannot write in {directory} ({reason})") from None
    os.close(handle)
    os.unlink(name)


def check_path_name(
    path: str | Path, label: str, error: type[ValueError] = OutputPathError
) -> None:
    """Refuse a path that is empty (or blank), holds a NUL or has a component over 255 bytes —
    the name alone, nothing on disk is looked at. An empty string would otherwise mean the
    working directory, silently. Paths written and paths read (:mod:`relulab.reading`) are
    checked here alike.

    Args:
        path: the path as given.
        label: how the user named it, for the message (``--out``, ``log_dir``).
        error: the ``ValueError`` to raise (a reader's ``InputFileError``).

    Raises:
        OutputPathError: a ``ValueError`` (or ``error``).

    Example:
        >>> check_path_name("", "log_dir")
        Traceback (most recent call last):
            ...
        relulab.files.OutputPathError: log_dir must not be empty
    """
    text = os.fspath(path)
    if not text.strip():
        raise error(f"{label} must not be empty")
    if "\x00" in text:
        raise error(f"{label} contains a NUL character")
    for part in Path(text).parts:
        if len(os.fsencode(part)) > 255:
            raise error(f"{label} {text[:60]}…: a path component is over 255 bytes")


def check_output_dir(path: str | Path, label: str = "--out") -> Path:
    """Refuse a directory path that cannot be created or written; creates nothing.

    Args:
        path: the directory a command will write into (it may not exist yet).
        label: how the user named it, for the message (``--out``).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Example:
        >>> check_output_dir("/proc/runs")  # doctest: +SKIP
        OutputPathError: --out /proc/runs: cannot write in /proc (No such file or directory)
    """
    check_path_name(path, label)
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{label} {path} exists and is not a directory")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise OutputPathError(f"{label} {path}: {existing} is a file, not a directory")
    _probe_writable(existing, label, path)
    return path


def check_output_file(
    path: str | Path, label: str = "--out", suffixes: tuple[str, ...] = ()
) -> Path:
    """Refuse a file path that is a directory, lies under a file or cannot be written.

    Args:
        path: the file a command will write (replaced if it exists).
        label: how the user named it.
        suffixes: allowed lower-case suffixes (``(".png",)``); empty allows any.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    check_path_name(path, label)
    path = Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise OutputPathError(f"{label} {path} must end in {' or '.join(suffixes)}")
    if path.is_dir():
        raise OutputPathError(f"{label} {path} is a directory; give a file path")
    if path.exists():
        try:
            with path.open("ab"):
                pass  # opening to append writes nothing
        except OSError as error:
            raise OutputPathError(f"{label} {path} cannot be written ({error.strerror})") from None
        return path
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        raise OutputPathError(f"{label} {path}: {existing} is a file, not a directory")
    _probe_writable(existing, label, path)
    return path


def check_no_links_inside(root: str | Path, paths: Iterable[str | Path], label: str) -> None:
    """Refuse to write ``paths`` under ``root`` when an existing entry between them is a
    symbolic link: writing through it would put files outside ``root``. ``root`` itself may be
    a link (the user named it). Creates nothing.

    Args:
        root: the output directory the user named.
        paths: the files or directories a command will write, each under ``root``.
        label: how the user named ``root`` (``--tensorboard``).

    Raises:
        OutputPathError: a path leaves ``root`` or passes through a link inside it.

    Example:
        >>> check_no_links_inside("logdir", ["logdir/unit/0000"], "--tensorboard")  # nothing
    """
    root = Path(root)
    for path in paths:
        relative = Path(path).relative_to(root)
        if ".." in relative.parts:
            raise OutputPathError(f"{label} {root}: {path} leaves the directory")
        current = root
        for part in relative.parts:
            current = current / part
            if current.is_symlink():
                raise OutputPathError(
                    f"{label} {root}: {current} is a symbolic link; relulab writes no file "
                    "through a link inside its output directory (remove it)"
                )
            if not os.path.lexists(current):
                break


def temporary_path(target: Path) -> Path:
    """A temporary name for ``target`` in the same directory (so a rename is atomic)."""
    return target.with_name(f"{TEMP_PREFIX}{os.getpid()}-{target.name}")


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort where directories cannot be synced)."""
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write into; renamed onto ``path`` when the block
    succeeds, removed when it fails. Readers see the old file or the new one, never half of it
    (a full disk leaves the old file), and the rename replaces whatever entry is at ``path`` —
    a symbolic link there is replaced, never written through, so no output lands outside its
    directory.

    Example:
        >>> with replacing(Path("report.html")) as temporary:  # doctest: +SKIP
        ...     temporary.write_text(html)
    """
    path = Path(path)
    temporary = temporary_path(path)
    temporary.unlink(missing_ok=True)  # a leftover of this very process, never written through
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`replacing`: readers see the old file or the
    new one, never half; a symbolic link at ``path`` is replaced, not followed."""
    with replacing(Path(path)) as temporary:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())


def remove_temporaries(directory: Path) -> None:
    """Remove ``.relulab-tmp-*`` files left in ``directory`` by a killed process."""
    for leftover in directory.glob(TEMP_PREFIX + "*"):
        with contextlib.suppress(OSError):
            leftover.unlink()
