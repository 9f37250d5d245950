"""Running a user's model: its data moved to where the model is, and a clear error when the
data do not fit it."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import torch
from torch import Tensor, nn

__all__ = [
    "cuda_devices",
    "expected_input",
    "model_device",
    "preserved",
    "run_model",
    "to_device",
]


def model_device(model: nn.Module) -> torch.device | None:
    """The device of the model's first parameter or buffer (``None`` for a model without any).

    Example:
        >>> model_device(nn.Linear(2, 1))
        device(type='cpu')
    """
    tensor = next(itertools.chain(model.parameters(), model.buffers()), None)
    return None if tensor is None else tensor.device


def to_device(batch: Any, device: torch.device | None) -> Any:
    """``batch`` with every tensor in it on ``device``: a tensor, or a mapping, tuple or list
    of them (nested; a mapping or sequence keeps its type); other values as they are. The
    data-dependent inits, the probe and the monitor call it, so data on the CPU measure a model
    on a GPU as a training loop would after its own ``.to(device)``.

    Example:
        >>> to_device({"ids": torch.zeros(2), "name": "x"}, torch.device("cpu"))["name"]
        'x'
        >>> from collections import namedtuple
        >>> to_device(namedtuple("Batch", "x y")(torch.zeros(2), 1), torch.device("cpu")).y
        1
    """
    if device is None:
        return batch
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, Mapping):
        # the mapping's own type, built from a dict (dict, BatchEncoding, …); Mapping has no
        # constructor in its type, hence the cast
        rebuild = cast(Any, type(batch))
        return rebuild({key: to_device(value, device) for key, value in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple: by position
        return type(batch)(*(to_device(value, device) for value in batch))
    if isinstance(batch, tuple | list):
        return type(batch)(to_device(value, device) for value in batch)
    return batch


def expected_input(model: nn.Module) -> str:
    """The input shape the model's first Linear/Conv layer expects, for error messages."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            return f"(N, {module.in_features})"
        if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d):
            return f"(N, {module.in_channels}, …)"
    return "unknown"


def run_model(model: nn.Module, batch: Tensor, data_shape: tuple[int, ...] | None = None) -> Tensor:
    """``model(batch)``, turning a shape error into a ``ValueError`` naming the data's shape
    (``data_shape`` when ``batch`` is a slice of larger data) and what the model expects."""
    try:
        return model(batch)
    except RuntimeError as error:
        raise ValueError(
            f"the model could not run on data of shape {data_shape or tuple(batch.shape)} "
            f"(its first layer expects {expected_input(model)}): {error}"
        ) from None


def cuda_devices(tensors: Iterable[Tensor]) -> list[int]:
    """The CUDA device indices the ``tensors`` live on.

    Example:
        >>> cuda_devices([torch.zeros(2)])
        []
    """
    return sorted({t.device.index or 0 for t in tensors if t.is_cuda})


@contextmanager
def preserved(model: nn.Module, devices: Sequence[int] = ()) -> Iterator[None]:
    """Run a block and leave ``model`` as it was: every module's training flag, every buffer
    (same tensor objects, same values — BatchNorm's running statistics and batch counts), and
    torch's global random state (CPU, the CUDA devices holding the model's parameters and
    buffers, and any further CUDA ``devices``); the fused fast path of
    ``nn.TransformerEncoderLayer`` / ``nn.MultiheadAttention`` is off inside.

    Example:
        >>> bn = nn.BatchNorm1d(3)
        >>> with preserved(bn):
        ...     _ = bn.train()(torch.randn(8, 3) + 5)
        >>> bn.training, float(bn.running_mean.abs().sum())
        (True, 0.0)
    """
    flags = [(module, module.training) for module in model.modules()]
    buffers = [
        (module, name, buffer, buffer.detach().clone())
        for module in model.modules()
        for name, buffer in module.named_buffers(recurse=False)
    ]
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        model_devices = cuda_devices([*model.parameters(), *model.buffers()])
        with torch.random.fork_rng(devices=sorted({*model_devices, *devices})):
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
        for module, training in flags:
            module.training = training
        with torch.no_grad():
            for module, name, buffer, saved in buffers:
                if getattr(module, name, None) is not buffer:
                    setattr(module, name, buffer)
                buffer.copy_(saved)
