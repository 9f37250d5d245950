"""Reading files a user can point relulab at: bounded, regular files only, one-line refusals.

The mirror of :mod:`relulab.files` (which is about writing). Every file a user can name —
a ``robustness.json`` or ``summary.json``, a ``sweep.json``, a ``runs.sqlite``, a ``--data``
array, an IDX or image data file — is checked by :func:`check_input_file` before it is opened:
the path is not empty, exists, and is a *regular* file once symbolic links are followed (a
FIFO would hang the reader forever, a link to ``/dev/zero`` would grow without end), no
larger than a cap the refusal states. :func:`read_bytes_bounded` and :func:`read_text_bounded`
then read at most one byte beyond the cap from a descriptor opened with ``O_NONBLOCK`` and
checked again with ``fstat``, so a FIFO swapped in after the check cannot hang them either.
:func:`read_json` adds a nesting-depth cap checked before the text is parsed (Python's parser
recurses, and a file of ``[[[[…`` would end in a ``RecursionError``).

Each refusal is an :class:`InputFileError` (a ``ValueError``) of one line that names the file
and what is wrong; the command line reports it as a usage error (exit 2).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from relulab.files import check_path_name

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "InputFileError",
    "check_input_file",
    "check_json_depth",
    "format_size",
    "json_depth",
    "open_regular",
    "read_bytes_bounded",
    "read_head",
    "read_json",
    "read_text_bounded",
]

#: The largest JSON record relulab reads (``summary.json``, ``robustness.json``, ``sweep.json``,
#: a registry or benchmark table). The largest committed one is under 100 KiB: 64 MiB is over
#: 600 times that, and still small enough to hold and parse at once.
MAX_JSON_BYTES = 64 * 2**20

#: The deepest nesting of arrays and objects relulab parses in a JSON record. Committed
#: records nest at most 8 deep; Python's parser recurses once per level and fails near 1000.
MAX_JSON_DEPTH = 100

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_CHUNK = 1 << 20  # the depth scan's window, in bytes
_OPENERS, _CLOSERS, _QUOTE, _BACKSLASH = (91, 123), (93, 125), 34, 92


class InputFileError(ValueError):
    """A file relulab was asked to read that it refuses: missing, not a regular file, too
    large, undecodable or too deeply nested. Its message is one line naming the file."""


def format_size(n: int) -> str:
    """``n`` bytes in binary units, as the refusals state sizes.

    Args:
        n: a size in bytes.

    Returns:
        ``'70 MiB'``, ``'1.5 GiB'``, ``'512 B'``.

    Example:
        >>> format_size(70 * 2**20)
        '70 MiB'
    """
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.3g} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(path: Path, label: str, mode: int) -> InputFileError:
    kind = _kind(mode)
    if path.is_symlink():
        target = os.path.realpath(path)
        return InputFileError(
            f"{label} {path} is a symbolic link to {target}, {kind}, not a regular file"
        )
    return InputFileError(f"{label} {path} is {kind}, not a regular file")


def _stat(path: Path, label: str) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise InputFileError(f"{label} {path} is a dangling symbolic link") from None
        raise InputFileError(f"{label} {path} does not exist") from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputFileError(f"{label} {path} cannot be read ({reason})") from None


def _check_size(path: Path, label: str, size: int, max_bytes: int | None, what: str) -> None:
    if max_bytes is not None and size > max_bytes:
        raise InputFileError(
            f"{label} {path} is {format_size(size)}, over relulab's {format_size(max_bytes)} "
            f"cap for {what}"
        )


def check_input_file(
    path: str | Path,
    label: str = "file",
    max_bytes: int | None = None,
    what: str = "a file it reads",
) -> Path:
    """Refuse a path that is empty, missing, not a regular file (after following symbolic
    links: a directory, FIFO, device or socket) or larger than ``max_bytes``; opens nothing.

    Args:
        path: the file a user named.
        label: how to name it in a refusal (``--data``, ``robustness record``).
        max_bytes: the largest size accepted; ``None`` for no cap (an SQLite store, which is
            never read whole).
        what: what the cap is for, as the refusal says it (``a JSON record``).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        InputFileError: any of the above, in one line naming the path.

    Example:
        >>> check_input_file("/dev/zero", "--data")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        relulab.reading.InputFileError: --data /dev/zero is a character device, not a regular file
    """
    check_path_name(path, label, InputFileError)
    path = Path(path)
    status = _stat(path, label)
    if not stat.S_ISREG(status.st_mode):
        raise _not_regular(path, label, status.st_mode)
    _check_size(path, label, status.st_size, max_bytes, what)
    return path


def _read_descriptor(handle: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(handle, min(limit - total, 1 << 22))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_bytes_bounded(
    path: str | Path,
    label: str = "file",
    max_bytes: int | None = None,
    what: str = "a file it reads",
) -> bytes:
    """The content of a regular file of at most ``max_bytes``, never reading more than one
    byte beyond: checked by :func:`check_input_file`, opened with ``O_NONBLOCK`` (a FIFO
    swapped in after the check cannot block) and checked again on the open descriptor.

    Args:
        path: the file a user named.
        label: how to name it in a refusal.
        max_bytes: the largest size accepted (``None``: :data:`MAX_JSON_BYTES`).
        what: what the cap is for, as the refusal says it.

    Returns:
        The file's bytes.

    Raises:
        InputFileError: the file is refused (see :func:`check_input_file`), cannot be opened,
            or grew beyond ``max_bytes`` while being read.

    Example:
        >>> read_bytes_bounded("README.md", "readme", 2**20)[:9]  # doctest: +SKIP
        b'# relulab'
    """
    max_bytes = MAX_JSON_BYTES if max_bytes is None else max_bytes
    path = check_input_file(path, label, max_bytes, what)
    data = _read_regular(path, label, max_bytes + 1)
    _check_size(path, label, len(data), max_bytes, what)
    return data


def _open_descriptor(path: Path, label: str) -> int:
    """``path`` opened without blocking and checked to be a regular file on the open
    descriptor (a FIFO swapped in after a check cannot hang the reader)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputFileError(f"{label} {path} cannot be read ({reason})") from None
    status = os.fstat(handle)
    if not stat.S_ISREG(status.st_mode):  # replaced between the check and the open
        os.close(handle)
        raise _not_regular(path, label, status.st_mode)
    return handle


def _read_regular(path: Path, label: str, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path`` (:func:`_open_descriptor`)."""
    handle = _open_descriptor(path, label)
    try:
        return _read_descriptor(handle, limit)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputFileError(f"{label} {path} cannot be read ({reason})") from None
    finally:
        os.close(handle)


def open_regular(path: str | Path, label: str = "file") -> BinaryIO:
    """A regular file a user named, open for reading in binary (for readers that take only
    what they need, such as a zip archive's members): checked by :func:`check_input_file`,
    then opened without blocking and checked again on the descriptor.

    Args:
        path: the file a user named.
        label: how to name it in a refusal.

    Returns:
        The open file; the caller closes it.

    Raises:
        InputFileError: the file is refused (see :func:`check_input_file`).

    Example:
        >>> with open_regular("data.npz", "--data") as stream:  # doctest: +SKIP
        ...     stream.read(4)
        b'PK\x03\x04'
    """
    return os.fdopen(_open_descriptor(check_input_file(path, label), label), "rb")


def read_head(path: str | Path, label: str, n: int) -> bytes:
    """The first ``n`` bytes of a regular file of any size (its magic number), checked and
    read as :func:`read_bytes_bounded` reads.

    Args:
        path: the file a user named.
        label: how to name it in a refusal.
        n: how many bytes to read at most.

    Returns:
        Up to ``n`` bytes (fewer when the file is shorter).

    Raises:
        InputFileError: the file is refused (see :func:`check_input_file`).

    Example:
        >>> read_head("runs.sqlite", "run store", 16)  # doctest: +SKIP
        b'SQLite format 3\x00'
    """
    return _read_regular(check_input_file(path, label), label, n)


def read_text_bounded(
    path: str | Path,
    label: str = "file",
    max_bytes: int | None = None,
    what: str = "a text file",
) -> str:
    """:func:`read_bytes_bounded`'s bytes decoded as UTF-8; undecodable bytes are a one-line
    refusal that says where.

    Args:
        path: the file a user named.
        label: how to name it in a refusal.
        max_bytes: the largest size accepted (``None``: :data:`MAX_JSON_BYTES`).
        what: what the cap is for, as the refusal says it.

    Returns:
        The file's text.

    Raises:
        InputFileError: the file is refused, or is not UTF-8 text.

    Example:
        >>> read_text_bounded("results/paper/anisotropy/summary.json")[:1]  # doctest: +SKIP
        '{'
    """
    data = read_bytes_bounded(path, label, max_bytes, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(
            f"{label} {path} is not UTF-8 text (byte {error.start}: {error.reason})"
        ) from None


def _escaped_quotes(quotes: np.ndarray, backslashes: np.ndarray) -> np.ndarray:
    """Which of ``quotes`` (positions) follow an odd run of backslashes."""
    if not len(backslashes) or not len(quotes):
        return np.zeros(len(quotes), bool)
    index = np.arange(len(backslashes))
    starts = np.ones(len(backslashes), bool)
    starts[1:] = np.diff(backslashes) != 1
    run = index - np.maximum.accumulate(np.where(starts, index, 0)) + 1
    before = np.searchsorted(backslashes, quotes) - 1
    clipped = np.maximum(before, 0)
    adjacent = (before >= 0) & (backslashes[clipped] == quotes - 1)
    return adjacent & (run[clipped] % 2 == 1)


def _trailing_escape(chunk: np.ndarray, backslashes: np.ndarray) -> bool:
    """Whether ``chunk`` ends in an odd run of backslashes (its next byte is escaped)."""
    if not len(backslashes) or backslashes[-1] != len(chunk) - 1:
        return False
    gaps = np.flatnonzero(np.diff(backslashes) != 1)
    first = gaps[-1] + 1 if len(gaps) else 0
    return (len(backslashes) - first) % 2 == 1


def _scan_chunk(chunk: np.ndarray, state: list[int]) -> int:
    """Advance ``state`` — ``[depth, inside a string, next byte escaped]`` — over ``chunk``;
    returns the deepest nesting reached in it."""
    depth, inside, escaped = state
    skip = np.ones(len(chunk), bool)
    skip[0] = not escaped  # an escaped first byte is neither a quote nor an escape
    backslashes = np.flatnonzero((chunk == _BACKSLASH) & skip)
    quotes = np.flatnonzero((chunk == _QUOTE) & skip)
    quotes = quotes[~_escaped_quotes(quotes, backslashes)]
    opens = (chunk == _OPENERS[0]) | (chunk == _OPENERS[1])
    brackets = np.flatnonzero(opens | (chunk == _CLOSERS[0]) | (chunk == _CLOSERS[1]))
    outside = (np.searchsorted(quotes, brackets) + inside) % 2 == 0
    steps = np.where(opens[brackets[outside]], 1, -1)
    levels = depth + np.cumsum(steps)
    state[0] = int(levels[-1]) if len(levels) else depth
    state[1] = (inside + len(quotes)) % 2
    state[2] = int(_trailing_escape(chunk, backslashes))
    return int(levels.max()) if len(levels) else depth


def json_depth(data: bytes, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in JSON text, without parsing it: brackets
    inside string literals (escaped quotes respected) are not counted. Linear time, in
    windows of 1 MiB; a text with no more opening brackets than ``stop_above`` is not scanned.

    Args:
        data: the JSON text as UTF-8 bytes.
        stop_above: return as soon as the depth is known to exceed this (``None``: scan all).

    Returns:
        The depth (``0`` for a bare number or string), or the first depth found above
        ``stop_above``.

    Example:
        >>> json_depth(b'{"a": [1, "]]]", [2]]}')
        3
    """
    if stop_above is not None and data.count(b"[") + data.count(b"{") <= stop_above:
        return min(data.count(b"[") + data.count(b"{"), stop_above)
    array = np.frombuffer(data, np.uint8)
    state, deepest = [0, 0, 0], 0
    for start in range(0, len(array), _CHUNK):
        deepest = max(deepest, _scan_chunk(array[start : start + _CHUNK], state))
        if stop_above is not None and deepest > stop_above:
            break
    return deepest


def check_json_depth(data: bytes, path: Path, label: str, max_depth: int) -> None:
    """Refuse JSON text nested deeper than ``max_depth``, before it is parsed.

    Args:
        data: the JSON text as UTF-8 bytes.
        path: the file it came from, for the message.
        label: how to name the file in a refusal.
        max_depth: the deepest nesting accepted.

    Raises:
        InputFileError: nested deeper, in one line.

    Example:
        >>> check_json_depth(b"[" * 1000, Path("x.json"), "record", 100)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        relulab.reading.InputFileError: record x.json nests arrays or objects deeper than ...
    """
    if json_depth(data, stop_above=max_depth) > max_depth:
        raise InputFileError(
            f"{label} {path} nests arrays or objects deeper than relulab's cap of "
            f"{max_depth} levels"
        )


def read_json(
    path: str | Path,
    label: str = "JSON record",
    max_bytes: int | None = None,
    max_depth: int | None = None,
) -> Any:
    """A JSON file a user named, parsed: bounded in size (:func:`read_bytes_bounded`) and in
    nesting depth (checked before parsing; a ``RecursionError`` is refused too).

    Args:
        path: the file.
        label: how to name it in a refusal (``robustness record``).
        max_bytes: the largest size accepted (``None``: :data:`MAX_JSON_BYTES`).
        max_depth: the deepest nesting accepted (``None``: :data:`MAX_JSON_DEPTH`).

    Returns:
        The parsed value.

    Raises:
        InputFileError: the file is refused, is not UTF-8 or is nested too deeply — in one
            line naming it.
        json.JSONDecodeError: the text is not JSON (a ``ValueError``: callers say which
            record it is, as they did before this module read their files).

    Example:
        >>> read_json("results/paper/anisotropy/summary.json")["experiment"]  # doctest: +SKIP
        'anisotropy'
    """
    data = read_bytes_bounded(path, label, max_bytes, "a JSON record")
    path = Path(path)
    check_json_depth(data, path, label, MAX_JSON_DEPTH if max_depth is None else max_depth)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputFileError(
            f"{label} {path} is not UTF-8 text (byte {error.start}: {error.reason})"
        ) from None
    except RecursionError:
        raise InputFileError(
            f"{label} {path} nests arrays or objects too deeply to parse"
        ) from None
