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

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from relulab.errors import describe_error
from relulab.probe.core import ProbeData
from relulab.probe.upstream import first_layer

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
    float32, integers int64 (token ids stay integers), booleans stay booleans."""
    if path is None:
        return guess_inputs(model, samples, input_shape, generator).data
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"no data file at {file}")
    if file.suffix == ".npy":
        data: ProbeData = _read_npy(file)
    elif file.suffix == ".npz":
        data = _read_npz(file)
    elif file.suffix == ".pt":
        data = _read_pt(file)
    else:
        raise ValueError(f"data must be a .npz, .npy or .pt file, got {file.name}")
    if isinstance(data, Mapping):
        _check_mapping(data, file)
        return {name: tensor[:samples] for name, tensor in data.items()}
    _check_samples(data, file)
    return data[:samples]


_NPY_MAGIC = b"\x93NUMPY"


def _read_npy(file: Path) -> torch.Tensor:
    with file.open("rb") as handle:
        if handle.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
            raise ValueError(f"{file} is not a .npy file (no NumPy header)")
    try:
        array = np.load(file, allow_pickle=False)
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise ValueError(f"{file} holds Python objects, expected an array of numbers") from None
        raise ValueError(f"{file} is a damaged .npy file ({describe_error(error)})") from None
    except Exception as error:
        raise ValueError(f"{file} is a damaged .npy file ({describe_error(error)})") from None
    return _tensor_from_numpy(array, file)


def _tensor_from_numpy(array: np.ndarray, file: Path, name: str = "") -> torch.Tensor:
    where = f"{file}[{name!r}]" if name else str(file)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{where} holds {array.dtype} data, expected numbers")
    return _standard_dtype(torch.from_numpy(np.array(array)))


def _standard_dtype(tensor: torch.Tensor) -> torch.Tensor:
    """Floating point as float32, integers as int64 (token ids), booleans as they are."""
    if tensor.is_floating_point():
        return tensor.float()
    if tensor.dtype == torch.bool:
        return tensor
    return tensor.long()


def _read_npz(file: Path) -> ProbeData:
    try:
        with np.load(file, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise ValueError(f"{file} holds Python objects, expected arrays of numbers") from None
        raise ValueError(f"{file} is a damaged .npz file ({describe_error(error)})") from None
    except Exception as error:
        raise ValueError(f"{file} is not a readable .npz file ({describe_error(error)})") from None
    if not arrays:
        raise ValueError(f"{file} holds no arrays")
    tensors = {name: _tensor_from_numpy(array, file, name) for name, array in arrays.items()}
    if list(tensors) == ["arr_0"]:  # np.savez(file, x): one unnamed array
        return tensors["arr_0"]
    return tensors


_PT_MAGICS = (b"PK\x03\x04", b"\x80")  # torch.save's zip archive; its legacy pickle


def _read_pt(file: Path) -> torch.Tensor:
    with file.open("rb") as handle:
        head = handle.read(4)
    if not any(head.startswith(magic) for magic in _PT_MAGICS):
        raise ValueError(f"{file} is not a .pt file (neither a torch zip archive nor a pickle)")
    try:
        array = torch.load(file, weights_only=True)
    except Exception as error:
        first_sentence = describe_error(error).split(". ")[0]
        raise ValueError(f"{file} is a damaged or unsafe .pt file ({first_sentence})") from None
    if isinstance(array, Mapping):
        return {str(name): _pt_tensor(value, file, str(name)) for name, value in array.items()}
    return _pt_tensor(array, file)


def _pt_tensor(value: object, file: Path, name: str = "") -> torch.Tensor:
    where = f"{file}[{name!r}]" if name else str(file)
    if not isinstance(value, torch.Tensor):
        raise ValueError(
            f"{where} holds a {type(value).__name__}, expected a tensor (or a dict of tensors)"
        )
    if value.is_complex():
        raise ValueError(f"{where} holds {value.dtype} data, expected real numbers")
    return _standard_dtype(value.detach())


def _check_mapping(data: Mapping[str, torch.Tensor], file: Path) -> None:
    if not data:
        raise ValueError(f"{file} holds an empty dict; expected tensors such as input_ids")
    for name, tensor in data.items():
        _check_samples(tensor, file, name)
    lengths = {name: tensor.shape[0] for name, tensor in data.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}: {length}" for name, length in lengths.items())
        raise ValueError(f"{file}: its arrays hold different numbers of samples ({shown})")


def _check_samples(array: torch.Tensor, file: Path, name: str = "") -> None:
    where = f"{file}[{name!r}]" if name else str(file)
    if array.ndim == 0:
        raise ValueError(f"{where} holds a single number; expected samples along the first axis")
    if array.shape[0] == 0 or array.numel() == 0:
        raise ValueError(f"{where} holds no samples (shape {tuple(array.shape)})")
    if not array.is_floating_point():
        return
    finite = torch.isfinite(array)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        raise ValueError(
            f"{where} contains {bad} NaN or infinite value(s) of {array.numel()}; "
            "the probe needs finite data"
        )
