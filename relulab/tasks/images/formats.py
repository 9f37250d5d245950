"""Readers for the three file formats the image data sets are distributed in.

* IDX (MNIST): a 4-byte magic ``00 00 TT DD`` (``TT`` the element type, ``DD`` the number of
  dimensions), ``DD`` big-endian ``uint32`` sizes, then the elements, big-endian, row-major.
  Plain or gzipped (recognised by the gzip magic ``1f 8b``, whatever the file's name).
* Pickle (CIFAR-10 "python version"): dicts written by Python 2's ``cPickle`` (protocol 2) whose
  arrays are NumPy ``ndarray`` reductions. Read with an allow-list unpickler: only the three
  globals those files name (``numpy.core.multiarray._reconstruct``, ``numpy.ndarray``,
  ``numpy.dtype``) and ``_codecs.encode`` (how Python 3 writes ``bytes`` at protocol 2) are
  resolved; any other global is refused, so a hostile file cannot run code.
* Multi-page TIFF (ISBI 2012): one 8-bit grayscale page per slice, read with Pillow's
  ``ImageSequence``.

Every malformed input raises :class:`~relulab.tasks.images.errors.ImageDataError` (a
``ValueError``) with a one-line message naming the file.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import pickle
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from relulab.reading import InputFileError, read_bytes_bounded
from relulab.tasks.images.errors import ImageDataError

__all__ = [
    "IDX_TYPES",
    "MAX_DATA_BYTES",
    "MAX_PICKLE_DEPTH",
    "MAX_PICKLE_ITEMS",
    "check_structure",
    "read_idx",
    "read_tiff_stack",
    "unpickle_restricted",
]

#: IDX element-type codes (the magic's third byte) → big-endian NumPy dtypes.
IDX_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

_GZIP_MAGIC = b"\x1f\x8b"


MAX_DATA_BYTES = 2**30  # a data file (after gunzip) larger than 1 GiB is refused unread
MAX_PICKLE_DEPTH = 16  # a CIFAR batch is a dict of arrays and lists: depth 2
MAX_PICKLE_ITEMS = 10_000_000  # elements of the unpickled structure with shared parts expanded


def _too_big(path: Path, what: str) -> ImageDataError:
    return ImageDataError(
        f"{path}: {what} is larger than {MAX_DATA_BYTES // 2**20} MiB; not a data file relulab "
        "reads (refused before reading it)"
    )


def _gunzip(path: Path, raw: bytes) -> bytes:
    """Decompress a gzip stream (every member), reading at most one byte beyond
    :data:`MAX_DATA_BYTES` — a stream that expands further is refused."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            data = stream.read(MAX_DATA_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise ImageDataError(f"{path}: broken gzip stream ({error})") from None
    if len(data) > MAX_DATA_BYTES:
        raise _too_big(path, "its gunzipped content")
    return data


def _read_bytes(path: Path) -> bytes:
    """The file's content, gunzipped when it starts with the gzip magic; either larger than
    :data:`MAX_DATA_BYTES` is refused before it is held in memory."""
    try:
        if path.stat().st_size > MAX_DATA_BYTES:
            raise _too_big(path, "the file")
    except OSError as error:
        raise ImageDataError(f"{path}: cannot read ({error.strerror or error})") from None
    try:  # bounded even if the file is swapped or grows after the size check
        raw = read_bytes_bounded(path, "data file", MAX_DATA_BYTES, "a data file")
    except InputFileError as error:
        raise ImageDataError(str(error)) from None
    return _gunzip(path, raw) if raw.startswith(_GZIP_MAGIC) else raw


def _children(node: Any) -> tuple[Any, ...]:
    if isinstance(node, dict):
        return (*node.keys(), *node.values())
    if isinstance(node, list | tuple | set | frozenset):
        return tuple(node)
    return ()  # arrays, numbers, strings, bytes: leaves


def check_structure(
    value: Any, max_depth: int = MAX_PICKLE_DEPTH, max_items: int = MAX_PICKLE_ITEMS
) -> None:
    """Refuse an unpickled structure deeper than ``max_depth`` or with more than ``max_items``
    elements once its shared parts are counted as many times as they are referenced — what
    ``np.asarray`` or a loop over it would build or visit. Each distinct container is visited
    once, so a ≈ 100-byte pickle of lists sharing one another 26 levels deep (2²⁶ elements
    expanded) is refused in microseconds instead of taking gigabytes.

    Args:
        value: the unpickled object.
        max_depth: the deepest nesting of containers allowed.
        max_items: the most elements allowed, shared parts expanded.

    Raises:
        ValueError: the structure is deeper or larger than allowed.

    Example:
        >>> shared = [0, 0]
        >>> for _ in range(30):
        ...     shared = [shared, shared]
        >>> check_structure(shared)
        Traceback (most recent call last):
        ...
        ValueError: the structure nests deeper than 16 levels
    """
    expanded: dict[int, int] = {}
    stack: list[tuple[Any, int, bool]] = [(value, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if id(node) in expanded:
            continue
        children = _children(node)
        if not children_done:
            if depth > max_depth:
                raise ValueError(f"the structure nests deeper than {max_depth} levels")
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children)
            continue
        total = 1 + sum(expanded.get(id(child), 1) for child in children)
        if total > max_items:
            raise ValueError(f"the structure expands to more than {max_items} elements")
        expanded[id(node)] = total


def read_idx(path: str | Path) -> np.ndarray:
    r"""Read an IDX file (plain or gzipped) into a native-endian array.

    The format of the MNIST distribution (LeCun et al.): magic ``00 00 TT DD``, then ``DD``
    big-endian ``uint32`` sizes :math:`n_1, \dots, n_D`, then :math:`\prod_i n_i` elements of type
    ``TT`` (see :data:`IDX_TYPES`). The data must be exactly that long: a truncated file or one
    with trailing bytes is refused.

    Args:
        path: the IDX file, e.g. ``train-images-idx3-ubyte`` or ``train-images-idx3-ubyte.gz``.

    Returns:
        An array of shape ``(n_1, …, n_D)``; ``uint8`` for MNIST's images and labels.

    Raises:
        ImageDataError: a missing file, a broken gzip stream, a wrong magic, an unknown type code
            or a size that disagrees with the header.

    Example:
        >>> images = read_idx("mnist/train-images-idx3-ubyte.gz")  # doctest: +SKIP
        >>> images.shape, images.dtype  # doctest: +SKIP
        ((60000, 28, 28), dtype('uint8'))
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise ImageDataError(f"{path}: not an IDX file ({len(raw)} bytes, shorter than a header)")
    if raw[0] != 0 or raw[1] != 0:
        raise ImageDataError(f"{path}: not an IDX file (magic {raw[:4].hex()} does not start 0000)")
    type_code, n_dims = raw[2], raw[3]
    if type_code not in IDX_TYPES:
        raise ImageDataError(f"{path}: not an IDX file (unknown element type 0x{type_code:02x})")
    if n_dims == 0:
        raise ImageDataError(f"{path}: not an IDX file (zero dimensions in the magic)")
    header_length = 4 + 4 * n_dims
    if len(raw) < header_length:
        raise ImageDataError(f"{path}: truncated IDX header ({len(raw)} of {header_length} bytes)")
    shape = tuple(int(n) for n in np.frombuffer(raw, dtype=">u4", count=n_dims, offset=4))
    dtype = IDX_TYPES[type_code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(raw) - header_length
    if found != expected:
        what = "truncated" if found < expected else "has trailing bytes"
        raise ImageDataError(
            f"{path}: IDX file {what}: header says {'×'.join(map(str, shape))} × "
            f"{dtype.itemsize} B = {expected} data bytes, found {found}"
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header_length).reshape(shape)
    return data.astype(dtype.newbyteorder("="), copy=True)


def _ndarray_reconstructor() -> Any:
    """The function NumPy's own ``ndarray.__reduce__`` names (found without a private import)."""
    return np.empty(0).__reduce__()[0]


class _AllowListUnpickler(pickle.Unpickler):
    """Resolves only the globals a CIFAR-10 batch needs; refuses every other one."""

    _allowed: dict[tuple[str, str], Any] = {
        ("numpy.core.multiarray", "_reconstruct"): _ndarray_reconstructor(),
        ("numpy._core.multiarray", "_reconstruct"): _ndarray_reconstructor(),
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): codecs.encode,
    }

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refused global {module}.{name}") from None


def unpickle_restricted(path: str | Path) -> Any:
    """Unpickle a data file that may name only NumPy array globals (no arbitrary code).

    Reads Python 2 ``cPickle`` files the way the CIFAR-10 page prescribes
    (``encoding="bytes"``: Python 2 strings come back as ``bytes``) through an allow-list
    ``Unpickler``: ``numpy.core.multiarray._reconstruct`` (or ``numpy._core…``),
    ``numpy.ndarray``, ``numpy.dtype`` and ``_codecs.encode``. Anything else — the way a hostile
    pickle runs code — is refused. Resources are bounded before anything large is built: the
    file (gunzipped) at most :data:`MAX_DATA_BYTES`, the unpickled structure at most
    :data:`MAX_PICKLE_DEPTH` deep and :data:`MAX_PICKLE_ITEMS` elements with shared parts expanded
    (:func:`check_structure`).

    Args:
        path: the pickle file (plain or gzipped).

    Returns:
        The unpickled object (for CIFAR-10, a ``dict`` with ``bytes`` keys).

    Raises:
        ImageDataError: a missing file, a truncated or corrupt pickle, a refused global, or a
            file or structure beyond the bounds.

    Example:
        >>> batch = unpickle_restricted("cifar-10-batches-py/data_batch_1")  # doctest: +SKIP
        >>> batch[b"data"].shape  # doctest: +SKIP
        (10000, 3072)
    """
    path = Path(path)
    raw = _read_bytes(path)
    try:
        value = _AllowListUnpickler(io.BytesIO(raw), encoding="bytes").load()
        check_structure(value, MAX_PICKLE_DEPTH, MAX_PICKLE_ITEMS)
        return value
    except Exception as error:  # any failure to unpickle a data file means it is malformed
        reason = str(error) or type(error).__name__
        raise ImageDataError(f"{path}: not a readable pickle ({reason})") from None


_GRAY_MODES = {"L"}
_CONVERTIBLE_MODES = {"1", "P"}


def read_tiff_stack(path: str | Path) -> np.ndarray:
    """Read a multi-page 8-bit grayscale TIFF into an array ``(pages, height, width)``.

    The ISBI 2012 challenge distributes its volumes this way (``train-volume.tif``: 30 pages of
    512 × 512). Pages of mode ``L`` are taken as they are; bilevel (``1``) and palette (``P``)
    pages are converted to ``L`` by Pillow; any other mode (16-bit, float, colour) is refused,
    and so are pages of different sizes.

    Args:
        path: the TIFF file.

    Returns:
        A ``uint8`` array ``(pages, height, width)``.

    Raises:
        ImageDataError: a missing, unreadable or truncated file, or pages of an unsupported mode
            or of different sizes.

    Example:
        >>> volume = read_tiff_stack("isbi2012/train-volume.tif")  # doctest: +SKIP
        >>> volume.shape  # doctest: +SKIP
        (30, 512, 512)
    """
    from PIL import Image, ImageSequence

    path = Path(path)
    if not os.path.lexists(path):
        raise ImageDataError(f"{path}: no such file")
    try:  # read whole and bounded: Pillow never opens the path (a FIFO swapped in would hang)
        raw = read_bytes_bounded(path, "image file", MAX_DATA_BYTES, "a data file")
    except InputFileError as error:
        raise ImageDataError(str(error)) from None
    pages: list[np.ndarray] = []
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always")  # Pillow's "Corrupt EXIF data" joins the error
            caught = recorded
            with Image.open(io.BytesIO(raw)) as image:
                for number, page in enumerate(ImageSequence.Iterator(image)):
                    if page.mode in _CONVERTIBLE_MODES:
                        page = page.convert("L")
                    elif page.mode not in _GRAY_MODES:
                        raise ImageDataError(
                            f"{path}: page {number} has mode {page.mode}; "
                            "expected 8-bit grayscale (L)"
                        )
                    pages.append(np.array(page, dtype=np.uint8))
    except ImageDataError:
        raise
    except Exception as error:  # Pillow reports broken files as OSError, TypeError, KeyError…
        reason = " ".join((str(error) or type(error).__name__).split())
        said = {" ".join(str(w.message).split()) for w in caught}
        reason += "".join(f"; {text}" for text in sorted(said))
        raise ImageDataError(f"{path}: not a readable TIFF stack ({reason})") from None
    for warning in caught:  # a readable stack: Pillow's remarks still reach the user, once each
        warnings.warn(warning.message, warning.category, stacklevel=2)
    sizes = {p.shape for p in pages}
    if len(sizes) != 1:
        raise ImageDataError(f"{path}: pages differ in size ({sorted(sizes)})")
    return np.stack(pages)
