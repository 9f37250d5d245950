"""The data a data-dependent initialiser measures, and the state the model is measured in.

* :func:`gather_batches`: a tensor, a dict of tensors (a HuggingFace batch, run as
  ``model(**batch)``), or an iterable of batches — a ``DataLoader``, a list — whose batches
  are joined along the first axis into one.
* :func:`calibration_mode`: dropout and other train-only randomness off (the model in eval
  mode) except normalisation layers with running statistics, which keep their own mode and get
  their running statistics back afterwards; PyTorch's fused attention fast path off (it skips
  the submodule calls the hooks watch); no gradients.
* :func:`call_model` runs one batch; :class:`StopForward` ends a pass early from a hook.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.modules.batchnorm import _NormBase

from relulab.nn.run import model_device, run_model, to_device
from relulab.progress import step_progress

__all__ = [
    "Batch",
    "Data",
    "StopForward",
    "calibration_mode",
    "call_model",
    "describe",
    "gather_batches",
    "progress_bar",
    "run_until_stopped",
]

#: One model input: a tensor (``model(x)``) or a mapping of keyword arguments
#: (``model(**batch)``, e.g. ``input_ids`` and ``attention_mask``).
Batch = Tensor | Mapping[str, Any]

#: What a data-dependent initialiser measures: one batch, or an iterable of batches (a
#: ``DataLoader``, a list, a generator), each a batch or an ``(input, target, …)`` tuple.
Data = Batch | Iterable[Any]


class StopForward(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a hook to end a forward pass once everything it needed has run."""


def _model_input(batch: Any) -> Batch:
    """A batch as the model takes it: a tensor or mapping as it is, the first element of a
    ``(input, target, …)`` tuple or list (a labelled ``DataLoader``'s batch)."""
    if isinstance(batch, Tensor | Mapping):
        return batch
    if isinstance(batch, tuple | list) and batch and isinstance(batch[0], Tensor | Mapping):
        return batch[0]
    raise TypeError(
        f"a batch must be a tensor, a mapping of model arguments, or an (input, …) tuple; got "
        f"{type(batch).__name__} (pass get_input= to take the input out of it)"
    )


def _join_tensors(tensors: list[Tensor], key: str = "") -> Tensor:
    if len(tensors) == 1:
        return tensors[0]
    shapes = {tuple(t.shape[1:]) for t in tensors}
    if len(shapes) > 1:
        where = f" {key!r}" if key else ""
        raise ValueError(
            f"batches are measured together, joined along their first axis, so they must agree "
            f"on every other axis; the batches' inputs{where} have {sorted(shapes)} (pad them "
            "to one length)"
        )
    return torch.cat(tensors, dim=0)


def _join(batches: list[Batch]) -> Batch:
    tensors = [b for b in batches if isinstance(b, Tensor)]
    if len(tensors) == len(batches):
        return _join_tensors(tensors)
    mappings = [b for b in batches if isinstance(b, Mapping)]
    if len(mappings) != len(batches):
        raise TypeError("the batches mix tensors and mappings")
    joined: dict[str, Any] = {}
    for key, first in mappings[0].items():
        values = [b[key] for b in mappings]
        joined[key] = _join_tensors(values, key) if isinstance(first, Tensor) else first
    return joined


def gather_batches(
    data: Data,
    max_batches: int | None = None,
    get_input: Callable[[Any], Batch] | None = None,
) -> Batch:
    """The model input of ``data``, its batches joined along the first axis.

    Args:
        data: a tensor, a mapping of model arguments, or an iterable of batches (a
            ``DataLoader``, a list, a generator; a tuple too). Each batch is a tensor, a
            mapping, or a tuple/list whose first element is the input (labels are dropped).
        max_batches: read at most this many batches of an iterable (default: all of them).
        get_input: takes the model input out of each batch instead.

    Returns:
        One tensor or one mapping (tensor values concatenated, the others from the first batch).

    Example:
        >>> gather_batches([torch.zeros(2, 3), torch.ones(4, 3)]).shape
        torch.Size([6, 3])
        >>> gather_batches([{"x": torch.zeros(1, 2)}] * 3)["x"].shape
        torch.Size([3, 2])
    """
    batches: list[Any]  # each a batch, or an (input, …) tuple for take
    if isinstance(data, Tensor | Mapping):
        batches = [data]
    else:
        batches = list(itertools.islice(iter(data), max_batches))
    if not batches:
        raise ValueError("the data hold no batch")
    take = get_input or _model_input
    return _join([take(batch) for batch in batches])


def describe(batch: Batch) -> str:
    """The shapes of a batch, for messages.

    Example:
        >>> describe({"ids": torch.zeros(2, 5, dtype=torch.long)})
        'ids (2, 5)'
    """
    if isinstance(batch, Tensor):
        return str(tuple(batch.shape))
    return ", ".join(
        f"{key} {tuple(value.shape)}" for key, value in batch.items() if isinstance(value, Tensor)
    )


def call_model(model: nn.Module, batch: Batch) -> Any:
    """``model(batch)``, or ``model(**batch)`` for a mapping, with the batch's tensors moved to
    the model's device (:func:`relulab.nn.run.to_device`); a shape error becomes a
    ``ValueError`` naming the data's shapes.

    Example:
        >>> call_model(nn.Linear(2, 1), torch.zeros(3, 2)).shape
        torch.Size([3, 1])
    """
    batch = to_device(batch, model_device(model))
    if isinstance(batch, Tensor):
        return run_model(model, batch)
    try:
        return model(**batch)
    except RuntimeError as error:
        raise ValueError(
            f"the model could not run on the batch {describe(batch)}: {error}"
        ) from None


def run_until_stopped(model: nn.Module, batch: Batch) -> None:
    """One forward pass on ``batch``, ended early by a hook's :class:`StopForward`.

    Example:
        >>> run_until_stopped(nn.Linear(2, 1), torch.zeros(3, 2))
    """
    try:
        call_model(model, batch)
    except StopForward:
        pass


def _running_statistics(model: nn.Module) -> list[tuple[Tensor, Tensor]]:
    """Each normalisation buffer (running mean/var, batch count) with a copy of its value."""
    return [
        (buffer, buffer.detach().clone())
        for module in model.modules()
        if isinstance(module, _NormBase)
        for buffer in module.buffers(recurse=False)
    ]


@contextlib.contextmanager
def calibration_mode(model: nn.Module) -> Iterator[None]:
    """Measure ``model`` without the randomness of training and without side effects.

    Inside: no gradients; every module in eval mode (dropout, attention dropout and stochastic
    depth off) except the normalisation layers with running statistics (BatchNorm,
    InstanceNorm), which keep their own mode — a model in train mode normalises with each
    batch's statistics, as its training will; the fused attention fast path of
    ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` off. Afterwards: every module's
    ``training`` flag, the normalisation layers' running statistics and the fast-path setting
    are as they were.

    Example:
        >>> model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.BatchNorm1d(2))
        >>> with calibration_mode(model):
        ...     [m.training for m in model]
        [False, False, True]
        >>> model.training
        True
    """
    flags = [(module, module.training) for module in model.modules()]
    statistics = _running_statistics(model)
    fast_path = torch.backends.mha.get_fastpath_enabled()
    model.eval()
    for module, training in flags:
        if isinstance(module, _NormBase):
            module.training = training
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fast_path)
        for module, training in flags:
            module.training = training
        for buffer, value in statistics:
            buffer.copy_(value)


@contextlib.contextmanager
def progress_bar(total: int, description: str, show: bool | None) -> Iterator[Callable[[], None]]:
    """A rich progress bar on stderr over ``total`` steps, yielding its one-step advance; off a
    terminal, a line at most every :data:`relulab.progress.LINE_INTERVAL_S` seconds
    (:class:`relulab.progress.StepLines`), so a log is never silent for minutes and a fast
    init writes nothing.

    Args:
        total: the steps.
        description: the bar's label.
        show: ``True`` the bar, ``False`` nothing, ``None`` the bar on a terminal and the
            lines off one.

    Example:
        >>> with progress_bar(3, "layers", show=False) as advance:
        ...     advance()
    """
    with step_progress(total, description, show) as advance:
        yield lambda: advance(1)
