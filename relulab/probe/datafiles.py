"""The data ``relulab diagnose`` probes with: a user's file — ``.npy`` (one array), ``.npz``
(several: model arguments such as ``input_ids`` and ``attention_mask``) or ``.pt`` (a tensor or
a dict of tensors) — floating point as float32, integers (token ids, masks) as int64, booleans
as they are; or relulab's guess from the model's first layer (:func:`guess_inputs`): Gaussian
:math:`N(0, 1)` samples shaped for a Linear or convolution (3×32×32 by default for a ``Conv2d``
[I]), random token ids for an embedding (sequences of :data:`DEFAULT_SEQUENCE_LENGTH`).

A file that is not a NumPy/torch file, is damaged, holds strings or objects, a single number, no
samples, tensors of different lengths, or non-finite values is a ``ValueError`` with one clear
message.
"""

from __future__ import annotations

import math
import os
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn

from relulab.errors import describe_error
from relulab.probe.core import ProbeData
from relulab.probe.upstream import first_layer
from relulab.reading import (
    InputFileError,
    check_input_file,
    format_size,
    open_regular,
    read_head,
)

__all__ = [
    "DEFAULT_SEQUENCE_LENGTH",
    "InputGuess",
    "default_shape",
    "first_layer",
    "guess_inputs",
    "load_data",
]

#: The sequence length of the random token ids guessed for a model whose first layer is an
#: ``nn.Embedding`` (``--input-shape T`` sets it).
DEFAULT_SEQUENCE_LENGTH = 32


def default_shape(model: nn.Module, input_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """``input_shape`` if given, else the per-sample shape the model's first layer takes (a
    sequence of :data:`DEFAULT_SEQUENCE_LENGTH` token ids for an embedding)."""
    if input_shape:
        return input_shape
    first = first_layer(model)
    if isinstance(first, nn.Linear):
        return (first.in_features,)
    if isinstance(first, nn.Conv2d):
        return (first.in_channels, 32, 32)
    if isinstance(first, nn.Conv1d):
        return (first.in_channels, 64)
    if isinstance(first, nn.Embedding):
        return (DEFAULT_SEQUENCE_LENGTH,)
    raise ValueError("cannot infer the input shape; pass --input-shape")


@dataclass(frozen=True)
class InputGuess:
    """Inputs relulab made up for a model given no data.

    Attributes:
        data: the samples (Gaussian floats, or token ids for an embedding).
        description: what they are and why, e.g. ``Gaussian samples of shape 3×32×32
            (relulab's guess from the first layer, a Conv2d)``.
        guessed: whether the shape was guessed (no ``--input-shape``).
    """

    data: torch.Tensor
    description: str
    guessed: bool


def guess_inputs(
    model: nn.Module,
    samples: int,
    input_shape: tuple[int, ...] | None,
    generator: torch.Generator,
) -> InputGuess:
    """Inputs for a model given no data: random token ids in ``[0, num_embeddings)`` when its
    first layer is an ``nn.Embedding``, else Gaussian :math:`N(0, 1)` samples; per-sample shape
    ``input_shape`` or :func:`default_shape`'s guess.

    Args:
        model: the model the inputs are for.
        samples: N.
        input_shape: the per-sample shape (``--input-shape``), or ``None`` to guess it.
        generator: the random generator.

    Returns:
        An :class:`InputGuess`: the data, what they are, and whether the shape was guessed.

    Example:
        >>> guess = guess_inputs(nn.Sequential(nn.Embedding(50, 8), nn.ReLU()), 4, None,
        ...                      torch.Generator().manual_seed(0))
        >>> guess.data.shape, guess.data.dtype, guess.guessed
        (torch.Size([4, 32]), torch.int64, True)
    """
    shape = default_shape(model, input_shape)
    first = first_layer(model)
    text = "×".join(str(size) for size in shape)
    source = (
        "given by --input-shape"
        if input_shape
        else f"relulab's guess from the first layer, a {type(first).__name__}"
    )
    if isinstance(first, nn.Embedding):
        data = torch.randint(0, first.num_embeddings, (samples, *shape), generator=generator)
        return InputGuess(
            data, f"random token ids, sequences of {text} ({source})", not input_shape
        )
    data = torch.randn((samples, *shape), generator=generator)
    return InputGuess(data, f"Gaussian samples of shape {text} ({source})", not input_shape)


def load_data(
    path: str | None,
    model: nn.Module,
    samples: int,
    input_shape: tuple[int, ...] | None,
    generator: torch.Generator,
) -> ProbeData:
    """The data to probe with: a file's array (``.npy``), arrays (``.npz``: a dict, or the one
    array of ``np.savez(file, x)``) or tensor / dict of tensors (``.pt``), the first
    ``samples`` of each; or, without a file, :func:`guess_inputs`'s. Floating point becomes
    float32, integers int64 (token ids stay integers), booleans stay booleans.

    Memory is bounded by ``samples``, not by the file: a ``.npy`` is memory-mapped, a C-order
    ``.npz`` member is read row by row from its zip stream, a zip ``.pt`` is loaded with
    ``mmap=True`` — and only the first ``samples`` are copied and converted. A file that must
    be read whole (a Fortran-order ``.npz`` member, a legacy ``.pt``) is checked against the
    memory available first. Big-endian arrays are converted to native byte order.

    Args:
        path: the ``--data`` file, or ``None`` to guess inputs.
        model: the model (for the guess).
        samples: N, the most samples taken from the file.
        input_shape: the per-sample shape for the guess.
        generator: the random generator for the guess.

    Returns:
        A tensor of at most ``samples`` samples, or a dict of such tensors.

    Raises:
        ValueError: a file that is missing, not a regular file, not a NumPy/torch file,
            damaged, of strings, objects, quantized or complex numbers, a single number, empty,
            of arrays of different lengths, or whose samples are not finite float32 numbers.

    Example:
        >>> load_data("inputs.npy", model, 64, None, torch.Generator())  # doctest: +SKIP
    """
    if path is None:
        return guess_inputs(model, samples, input_shape, generator).data
    file = _check_data_file(path)
    if file.suffix == ".npy":
        read: dict[str, _Read] = {"": _read_npy(file, samples)}
    elif file.suffix == ".npz":
        read = _read_npz(file, samples)
    elif file.suffix == ".pt":
        read = _read_pt(file, samples)
    else:
        raise ValueError(f"data must be a .npz, .npy or .pt file, got {file.name}")
    if list(read) == [""]:
        return _finished(read[""], file)
    _check_lengths(read, file)
    return {name: _finished(part, file, name) for name, part in read.items()}


@dataclass(frozen=True)
class _Read:
    """The first samples of one array as read (native byte order, dtype as stored), and the
    number of samples the file holds (``None`` for a 0-d array)."""

    tensor: torch.Tensor
    length: int | None


def _check_data_file(path: str) -> Path:
    if not str(path).strip():
        raise ValueError("--data must not be empty")
    file = Path(path)
    if not os.path.lexists(file) or file.is_dir():
        raise ValueError(f"no data file at {file}")
    check_input_file(file, "--data")
    return file


def _where(file: Path, name: str) -> str:
    return f"{file}[{name!r}]" if name else str(file)


def _check_fits(file: Path, nbytes: int, why: str) -> None:
    """Refuse a read of ``nbytes`` that the memory available cannot hold twice over."""
    from relulab.resources import available_memory_bytes

    available = available_memory_bytes(torch.device("cpu"))
    if available is not None and 2 * nbytes > available:
        raise ValueError(
            f"{file}: reading {why} takes {format_size(nbytes)}, and twice that is more than "
            f"the {format_size(available)} of memory available; use fewer --samples, or save "
            "the data as a C-order .npy so relulab reads only the first --samples"
        )


# -- .npy --------------------------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"


def _read_npy(file: Path, samples: int) -> _Read:
    if read_head(file, "--data", len(_NPY_MAGIC)) != _NPY_MAGIC:
        raise ValueError(f"{file} is not a .npy file (no NumPy header)")
    try:
        array = np.load(file, mmap_mode="r", allow_pickle=False)
    except ValueError as error:
        if "allow_pickle" in str(error) or "Python objects" in str(error):
            raise ValueError(f"{file} holds Python objects, expected an array of numbers") from None
        raise ValueError(f"{file} is a damaged .npy file ({describe_error(error)})") from None
    except Exception as error:
        raise ValueError(f"{file} is a damaged .npy file ({describe_error(error)})") from None
    _check_numbers(array.dtype, file)
    part = array[:samples] if array.ndim else array
    _check_fits(file, part.nbytes, f"its first {samples} samples")
    return _Read(_first_samples(part), array.shape[0] if array.ndim else None)


def _check_numbers(dtype: np.dtype, file: Path, name: str = "") -> None:
    if dtype.hasobject:
        raise ValueError(f"{_where(file, name)} holds Python objects, expected arrays of numbers")
    if dtype.kind not in "biuf":
        raise ValueError(f"{_where(file, name)} holds {dtype} data, expected numbers")


def _first_samples(part: np.ndarray) -> torch.Tensor:
    """``part`` (the first samples of an array, perhaps a view of a memory-mapped file) copied
    in native byte order, C order: only these bytes are read from the file."""
    return torch.from_numpy(np.array(part, dtype=part.dtype.newbyteorder("="), order="C"))


# -- .npz --------------------------------------------------------------------------------------
def _read_npz(file: Path, samples: int) -> dict[str, _Read]:
    try:
        with open_regular(file, "--data") as stream, zipfile.ZipFile(stream) as archive:
            members = [info for info in archive.infolist() if not info.is_dir()]
            read = {
                _member_name(info): _read_member(archive, info, file, samples) for info in members
            }
    except (InputFileError, _MemberError):
        raise
    except Exception as error:
        raise ValueError(f"{file} is not a readable .npz file ({describe_error(error)})") from None
    if not read:
        raise ValueError(f"{file} holds no arrays")
    if list(read) == ["arr_0"]:  # np.savez(file, x): one unnamed array
        return {"": read["arr_0"]}
    return read


class _MemberError(ValueError):
    """A refusal of one member of an ``.npz`` archive (passed on unwrapped)."""


def _member_name(info: zipfile.ZipInfo) -> str:
    return info.filename.removesuffix(".npy")


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: Path, samples: int
) -> _Read:
    """The first ``samples`` rows of one ``.npy`` member, reading only their bytes from the
    zip stream when the array is in C order."""
    name = _member_name(info)
    with archive.open(info) as stream:
        try:
            version = np.lib.format.read_magic(stream)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read_header(stream)
        except ValueError as error:
            where = _where(file, name)
            raise _MemberError(f"{where} is not a .npy array ({describe_error(error)})") from None
        try:
            _check_numbers(dtype, file, name)
        except ValueError as error:
            raise _MemberError(str(error)) from None
        rows, order = _rows_to_read(shape, fortran, samples)
        count = rows * math.prod(shape[1:]) if shape else 1
        why = f"{name!r} is in Fortran order" if fortran else f"{name!r}'s first {rows} samples"
        _check_fits(file, count * dtype.itemsize, why)
        data = stream.read(count * dtype.itemsize)
    if len(data) != count * dtype.itemsize:
        raise _MemberError(f"{_where(file, name)} is truncated (a damaged .npz file)")
    array = np.frombuffer(data, dtype).reshape((rows, *shape[1:]) if shape else (), order=order)
    part = array[:samples] if shape else array
    return _Read(_first_samples(part), shape[0] if shape else None)


def _rows_to_read(
    shape: tuple[int, ...], fortran: bool, samples: int
) -> tuple[int, Literal["C", "F"]]:
    """How many rows of an array of ``shape`` to read, and their order: the first
    ``samples`` of a C-order array, all of a Fortran-order one."""
    if not shape:
        return 0, "C"
    if fortran:
        return shape[0], "F"
    return min(samples, shape[0]), "C"


# -- .pt ---------------------------------------------------------------------------------------
_ZIP_MAGIC, _PICKLE_MAGIC = b"PK\x03\x04", b"\x80"  # torch.save's zip archive; legacy pickle


def _read_pt(file: Path, samples: int) -> dict[str, _Read]:
    head = read_head(file, "--data", 4)
    if not head.startswith((_ZIP_MAGIC, _PICKLE_MAGIC)):
        raise ValueError(f"{file} is not a .pt file (neither a torch zip archive nor a pickle)")
    mmap = head.startswith(_ZIP_MAGIC)
    if not mmap:  # a legacy pickle cannot be memory-mapped: read whole, if it fits
        _check_fits(file, file.stat().st_size, "a legacy, non-zip torch file")
    try:
        with warnings.catch_warnings():  # torch's notes on its own storage classes
            warnings.simplefilter("ignore")
            loaded = torch.load(file, weights_only=True, mmap=mmap, map_location="cpu")
    except Exception as error:
        first_sentence = describe_error(error).split(". ")[0]
        raise ValueError(f"{file} is a damaged or unsafe .pt file ({first_sentence})") from None
    if isinstance(loaded, Mapping):
        return {str(key): _pt_part(value, file, samples, str(key)) for key, value in loaded.items()}
    return {"": _pt_part(loaded, file, samples)}


def _pt_part(value: object, file: Path, samples: int, name: str = "") -> _Read:
    where = _where(file, name)
    if not isinstance(value, torch.Tensor):
        raise ValueError(
            f"{where} holds a {type(value).__name__}, expected a tensor (or a dict of tensors)"
        )
    if value.is_quantized:
        raise ValueError(
            f"{where} holds quantized {value.dtype} data, expected real numbers "
            "(save tensor.dequantize() instead)"
        )
    if value.is_complex():
        raise ValueError(f"{where} holds {value.dtype} data, expected real numbers")
    part = value.detach()[:samples] if value.ndim else value.detach()
    _check_fits(file, part.nelement() * part.element_size(), f"its first {samples} samples")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copied = part.clone()  # a copy of the slice alone: the memory map is released
    return _Read(copied, value.shape[0] if value.ndim else None)


# -- checks and conversion ---------------------------------------------------------------------
def _standard_dtype(tensor: torch.Tensor) -> torch.Tensor:
    """Floating point as float32, integers as int64 (token ids), booleans as they are."""
    if tensor.is_floating_point():
        return tensor.float()
    if tensor.dtype == torch.bool:
        return tensor
    return tensor.long()


def _check_lengths(read: Mapping[str, _Read], file: Path) -> None:
    if not read:
        raise ValueError(f"{file} holds an empty dict; expected tensors such as input_ids")
    for name, part in read.items():
        _check_shape(part, file, name)
    lengths = {name: part.length for name, part in read.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}: {length}" for name, length in lengths.items())
        raise ValueError(f"{file}: its arrays hold different numbers of samples ({shown})")


def _check_shape(part: _Read, file: Path, name: str = "") -> None:
    where, tensor = _where(file, name), part.tensor
    if part.length is None:
        raise ValueError(f"{where} holds a single number; expected samples along the first axis")
    if part.length == 0 or tensor.numel() == 0:
        raise ValueError(f"{where} holds no samples (shape {tuple(tensor.shape)})")


def _finished(part: _Read, file: Path, name: str = "") -> torch.Tensor:
    """The samples checked (shape; finite, and within float32's range) and converted."""
    _check_shape(part, file, name)
    tensor = part.tensor
    if tensor.is_floating_point():
        _check_finite(tensor, _where(file, name))
    return _standard_dtype(tensor)


def _check_finite(tensor: torch.Tensor, where: str) -> None:
    finite = torch.isfinite(tensor)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        raise ValueError(
            f"{where} contains {bad} NaN or infinite value(s) of {tensor.numel()}; "
            "the probe needs finite data"
        )
    largest = float(tensor.abs().max()) if tensor.numel() else 0.0
    limit = torch.finfo(torch.float32).max
    if largest > limit:
        raise ValueError(
            f"{where} holds finite values beyond float32's range (max |value| {largest:.3g} > "
            f"{limit:.3g}), which the probe's float32 cannot hold; rescale the data"
        )
