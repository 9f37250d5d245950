r"""Diagnostics of the activations of any ``nn.Module``, one *layer* per activation **call**.

Every call of an activation — a module (``nn.ReLU``, :class:`relulab.nn.ReLUMinusB`,
``nn.LeakyReLU``, ``nn.GELU``, ``nn.SiLU``, ``nn.Tanh``, …, and composite ones such as Hugging
Face's ``NewGELUActivation``) or a function (``F.relu``, ``torch.relu``, ``x.relu_()``,
``F.gelu``, ``F.silu``, ``torch.tanh``, …, as ``nn.TransformerEncoderLayer`` calls its
activation) — is a layer, named ``{module path}#{k}`` or ``{caller path}:{function}#{k}``
(:mod:`relulab.probe.intercept`). Its input :math:`z`, taken before any in-place write, is the
pre-activation; its output :math:`h`. A *unit* is a feature on the unit axis, which follows the
layer that produced :math:`z`: the **last** axis of a Linear (``addmm``, ``matmul``, Hugging
Face ``Conv1D``) output at any rank (a sequence ``(N, T, d)`` has d units), axis **1** of a
convolution; statistics run over every other axis — over the kept tokens only when the data
carry an ``attention_mask``. When no producer explains the axis the default (axis 1) is used
and :class:`UnitAxisWarning` names the calls. Per-unit sums, maxima and minima are accumulated
call by call (no tensor is kept but the first rows of :math:`h` for the ranks); every statistic
is then computed by the one function of :mod:`relulab.nn.statistics` the engine uses too.

The data are a tensor (``model(x)``) or a mapping of model arguments (``model(**inputs)``: a
tokenizer's ``input_ids``, ``attention_mask``, …; every tensor in it has the samples first and
is batched, anything else is passed unchanged). The model may return a tensor, a tuple, a
mapping or a Hugging Face ``ModelOutput``: its ``logits`` (else its first tensor) are what
``loss_fn`` receives, and ``loss_fn="model"`` takes the model's own ``loss``.

The statistics of each call and their definitions: :mod:`relulab.probe.result`.

**Advice.** :meth:`ProbeResult.advice` maps the measurements to remedies, the inputs
(:attr:`ProbeResult.inputs`, :mod:`relulab.probe.upstream`) and non-finite values first
(:mod:`relulab.probe.advice`).

**Modes.** ``mode="train"`` (the default) runs the forward pass a training step runs:
normalisation layers use the batch's statistics and dropout is active — the units that are
dead *for the optimiser*; ``mode="eval"`` runs it as inference does (running statistics, no
dropout), for a trained model. Either way the model is left exactly as it was found: every
module's training flag, every buffer (BatchNorm's running statistics), ``requires_grad``,
parameters' ``.grad``, hooks, and torch's global random state.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
import torch
from torch import Tensor, nn

from relulab.nn.run import cuda_devices as _cuda_devices
from relulab.nn.run import expected_input, model_device, preserved, to_device
from relulab.probe.batching import ProbeError, token_mask
from relulab.probe.intercept import CallRecorder
from relulab.probe.result import (
    RANK_CAP_FRACTION,
    LayerProbe,
    ProbeResult,
    accumulated_finite,
    layer_metrics,
    rank_at_sample_cap,
    unit_states_by_batch_norm,
)
from relulab.probe.tables import ACTIVATION_FUNCTIONS, ACTIVATION_MODULES, COMPOSITE_ACTIVATIONS
from relulab.probe.upstream import non_finite_parameters, summarise_inputs

if TYPE_CHECKING:
    pass

__all__ = [
    "ACTIVATION_TYPES",
    "MODES",
    "RANK_CAP_FRACTION",
    "LayerProbe",
    "MODEL_ERRORS",
    "ModelRunError",
    "NonFiniteWarning",
    "ProbeData",
    "ProbeResult",
    "UnitAxisWarning",
    "preserved",
    "model_run_error",
    "probe",
    "rank_at_sample_cap",
    "unit_states_by_batch_norm",
]

#: The data :func:`probe` takes: a tensor (``model(x)``) or a mapping of model arguments
#: (``model(**inputs)``), samples first.
ProbeData: TypeAlias = Tensor | Mapping[str, Any]

#: The activation module types probed without being asked (plus ``activation_types``).
ACTIVATION_TYPES: tuple[type[nn.Module], ...] = tuple(ACTIVATION_MODULES)

#: The forward modes: ``"train"`` (batch statistics, dropout on) and ``"eval"``.
MODES: tuple[str, ...] = ("train", "eval")


class UnitAxisWarning(UserWarning):
    """Some activation calls got their unit axis by the default rule (axis 1): no producing
    layer explained it, so their ``units`` may be positions rather than features."""


class NonFiniteWarning(UserWarning):
    """Some activation calls saw NaN or infinite values: their statistics are NaN; the warning
    names them and the parameters holding such values."""


class ModelRunError(ValueError):
    """The model itself failed on the data (wrong shape, dtype, arguments, image size …).

    Attributes:
        data: how the data looked (shapes and dtypes).
        reason: the model's own error, one line.
    """

    def __init__(self, message: str, data: str, reason: str) -> None:
        super().__init__(message)
        self.data = data
        self.reason = reason


# -- the data: a tensor or a mapping of model arguments ------------------------------------
def _tensors(data: ProbeData) -> list[Tensor]:
    if isinstance(data, Tensor):
        return [data]
    return [value for value in data.values() if isinstance(value, Tensor)]


def _num_samples(data: ProbeData) -> int:
    """N, the samples on the first axis of the data (of every tensor of a mapping)."""
    if isinstance(data, Tensor):
        if data.dim() == 0:
            raise ValueError("the data are a single number; give samples along the first axis")
        return data.shape[0]
    if not isinstance(data, Mapping):
        raise TypeError(f"data must be a tensor or a mapping of tensors, got {type(data).__name__}")
    sizes = {name: value.shape[0] for name, value in data.items() if isinstance(value, Tensor)}
    if not sizes or any(value.dim() == 0 for value in _tensors(data)):
        raise ValueError("the data mapping needs tensors with the samples on their first axis")
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{name}: {size}" for name, size in sizes.items())
        raise ValueError(f"the data's tensors disagree on the number of samples ({shown})")
    return next(iter(sizes.values()))


def _batch(data: ProbeData, start: int, stop: int) -> ProbeData:
    if isinstance(data, Tensor):
        return data[start:stop]
    return {
        name: value[start:stop] if isinstance(value, Tensor) else value
        for name, value in data.items()
    }


def _describe(data: Any) -> str:
    """``of shape (4, 7) (float32)``; ``input_ids (4, 16) int64, …`` for a mapping; ``of
    positional arguments (4, 7) (float32), (4,) (int64)`` for a tuple or list."""

    def one(tensor: Tensor) -> str:
        return f"{tuple(tensor.shape)} ({str(tensor.dtype).removeprefix('torch.')})"

    if isinstance(data, Tensor):
        return f"of shape {one(data)}"
    if isinstance(data, tuple | list):
        shown = ", ".join(one(value) for value in data if isinstance(value, Tensor))
        return f"of positional arguments {shown}"
    if not isinstance(data, Mapping):
        return f"of type {type(data).__name__}"
    return ", ".join(
        f"{name} {one(value)}" for name, value in data.items() if isinstance(value, Tensor)
    )


def _expected(model: nn.Module) -> str:
    """What the model's first layer takes, for error messages (token ids for an embedding)."""
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            return f"integer token ids (N, T) below {module.num_embeddings}"
        if isinstance(module, nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d):
            break
    return expected_input(model)


#: The errors of a model failing on its data, which :func:`model_run_error` rewords.
MODEL_ERRORS: tuple[type[Exception], ...] = (RuntimeError, ValueError, TypeError, IndexError)


def model_run_error(
    model: nn.Module, data: Any, error: Exception, description: str | None = None
) -> ModelRunError:
    """The :class:`ModelRunError` saying that ``model`` failed on ``data`` with ``error``: the
    data's shapes, what the model's first layer takes, and the model's own message in one line
    (the probe's wording, which the monitor shares). A tuple of tensors is the model's
    positional arguments: the message then says to pass inputs only, not ``(inputs, targets)``.

    Args:
        model: the model that failed.
        data: what it was called on: a tensor, a mapping (keywords) or a tuple (positions).
        error: what it raised.
        description: the data as the message shows them (default: from ``data``).

    Returns:
        The error to raise (``from None``).

    Example:
        >>> model = nn.Linear(3, 2)
        >>> try:
        ...     model(torch.zeros(4, 5))
        ... except RuntimeError as error:
        ...     print(model_run_error(model, torch.zeros(4, 5), error).data)
        of shape (4, 5) (float32)
    """
    description = description if description is not None else _describe(data)
    reason = " ".join(str(error).split()) or type(error).__name__
    hint = ""
    if isinstance(data, tuple | list) and len(data) > 1:
        hint = (
            f"; a {type(data).__name__} is passed as positional arguments, model(*batch): "
            "give the inputs only, not an (inputs, targets) pair"
        )
    return ModelRunError(
        f"the model could not run on data {description} (its first layer expects "
        f"{_expected(model)}): {reason}{hint}",
        description,
        reason,
    )


def _call_model(model: nn.Module, batch: ProbeData, description: str) -> Any:
    """``model(batch)``, or ``model(**batch)`` for a mapping; the model's own failure on the
    data becomes a :class:`ModelRunError` naming the data and what the model takes."""
    try:
        return model(**batch) if isinstance(batch, Mapping) else model(batch)
    except ProbeError:
        raise
    except MODEL_ERRORS as error:
        raise model_run_error(model, batch, error, description) from None


def _output_tensor(output: Any) -> Any:
    """The tensor a loss compares with the targets: the output itself, its ``logits`` (a
    Hugging Face ``ModelOutput`` or any mapping), else its first tensor."""
    if isinstance(output, Tensor):
        return output
    if isinstance(output, Mapping):
        logits, values = output.get("logits"), list(output.values())
    else:
        logits = getattr(output, "logits", None)
        values = list(output) if isinstance(output, tuple | list) else []
    if isinstance(logits, Tensor):
        return logits
    return next((value for value in values if isinstance(value, Tensor)), output)


def _scalar_loss(loss: Any) -> Any:
    """A loss as a tensor: itself, or the ``loss`` of a ``ModelOutput`` / mapping."""
    if isinstance(loss, Tensor):
        return loss
    if isinstance(loss, Mapping):
        return loss.get("loss")
    return getattr(loss, "loss", loss)


def _loss_reduction(loss_fn: Callable, output: Any, target: Tensor) -> str:
    """Whether ``loss_fn`` averages (``"mean"``) or sums over the samples of a batch: its
    ``reduction`` attribute, else the loss of the batch repeated twice (the same or double)."""
    reduction = getattr(loss_fn, "reduction", None)
    if reduction in ("mean", "sum"):
        return reduction
    if reduction is not None:
        raise ValueError(
            f"loss_fn has reduction={reduction!r}; the probe needs a scalar loss "
            "(reduction 'mean' or 'sum')"
        )
    unknown = ValueError(
        "cannot tell whether loss_fn averages or sums over the samples; give a loss with "
        "reduction='mean' or 'sum' (e.g. nn.MSELoss())"
    )
    if not isinstance(output, Tensor):
        raise unknown
    with torch.no_grad():
        once = _scalar_loss(loss_fn(output.detach(), target))
        twice = _scalar_loss(loss_fn(torch.cat([output.detach()] * 2), torch.cat([target] * 2)))
    if not isinstance(once, Tensor) or once.numel() != 1:
        raise ValueError("loss_fn must return a scalar (reduction 'mean' or 'sum')")
    ratio = float(twice) / float(once) if float(once) != 0 else float("nan")
    if abs(ratio - 1) < 1e-4:
        return "mean"
    if abs(ratio - 2) < 1e-4:
        return "sum"
    raise unknown


def _with_leaves(batch: ProbeData) -> tuple[ProbeData, list[Tensor]]:
    """The batch with its floating-point tensors as fresh leaves requiring grad (integer ones,
    token ids, as they are), and those leaves."""
    if isinstance(batch, Tensor):
        if not batch.is_floating_point():
            return batch, []
        leaf = batch.detach().clone().requires_grad_(True)
        return leaf.clone(), [leaf]
    leaves: dict[str, Tensor] = {
        name: value.detach().clone().requires_grad_(True)
        for name, value in batch.items()
        if isinstance(value, Tensor) and value.is_floating_point()
    }
    return {**batch, **{name: leaf.clone() for name, leaf in leaves.items()}}, list(leaves.values())


def _backward_inputs(model: nn.Module, leaves: list[Tensor]) -> list[Tensor]:
    inputs = [*leaves, *(p for p in model.parameters() if p.requires_grad)]
    if not inputs:
        raise ValueError(
            "cannot measure gradients: the data are not floating point and no parameter "
            "requires grad"
        )
    return inputs


def _model_loss(output: Any) -> Tensor:
    loss = _scalar_loss(output)
    if not isinstance(loss, Tensor) or loss.numel() != 1:
        raise ValueError(
            'loss_fn="model" needs the model to return its loss (a ModelOutput with .loss: '
            "give the labels in the data, e.g. {'input_ids': …, 'labels': …})"
        )
    return loss


def _run_batches(
    model: nn.Module,
    recorder: CallRecorder,
    data: ProbeData,
    targets: Tensor | None,
    loss_fn: Callable | str | None,
    batch_size: int | None,
) -> None:
    total = _num_samples(data)
    step = batch_size or total
    description = _describe(data)
    reduction = "mean" if loss_fn == "model" else None  # a model's loss averages its batch
    device = model_device(model)  # data elsewhere (on the CPU) go to the model, batch by batch
    for start in range(0, total, step):
        batch = to_device(_batch(data, start, start + step), device)
        size, mask = min(step, total - start), token_mask(batch)
        if loss_fn is None:
            with torch.no_grad(), recorder.recording(size, mask=mask):
                _call_model(model, batch, description)
            continue
        batch, leaves = _with_leaves(batch)
        inputs = _backward_inputs(model, leaves)
        with torch.enable_grad():
            with recorder.recording(size, gradients=True, mask=mask):
                output = _call_model(model, batch, description)
            if loss_fn == "model":
                loss = _model_loss(output)
            else:
                if targets is None or isinstance(loss_fn, str):  # _check_request refused these
                    raise ProbeError("a loss_fn measures gradients with targets, or is 'model'")
                prediction = _output_tensor(output)
                target = targets[start : start + step].to(prediction.device)
                reduction = reduction or _loss_reduction(loss_fn, prediction, target)
                loss = _scalar_loss(loss_fn(prediction, target))
            # per sample: a mean over the batch scales every sample's gradient by 1/B
            recorder.gradient_factor = float(size) if reduction == "mean" else 1.0
            if not isinstance(loss, Tensor) or not loss.requires_grad:
                raise ValueError("the loss does not depend on anything that requires grad")
            torch.autograd.grad(loss, inputs, allow_unused=True)


def _check_request(
    data: ProbeData, targets: Tensor | None, loss_fn: Callable | str | None, mode: str
) -> int:
    """N, after refusing inconsistent arguments in one line each."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
    samples = _num_samples(data)
    if samples == 0:
        raise ValueError(f"the data {_describe(data)} hold no samples; probe at least one")
    token_mask(data)  # a mask of the wrong shape is refused before anything runs
    if isinstance(loss_fn, str):
        if loss_fn != "model":
            raise ValueError(f'loss_fn must be a callable or "model", got {loss_fn!r}')
        if targets is not None:
            raise ValueError('loss_fn="model" takes no targets: put the labels in the data')
        return samples
    if (targets is None) != (loss_fn is None):
        raise ValueError("give both targets and loss_fn to measure gradients, or neither")
    if targets is not None and len(targets) != samples:
        raise ValueError(f"{len(targets)} targets for {samples} samples")
    return samples


def probe(
    model: nn.Module,
    data: ProbeData,
    targets: Tensor | None = None,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | Literal["model"] | None = None,
    features: np.ndarray | Tensor | None = None,
    batch_size: int | None = None,
    max_rank_samples: int = 2000,
    activation_types: Sequence[type[nn.Module]] = (),
    *,
    mode: Literal["train", "eval"] = "train",
    unit_axis: int | None = None,
) -> ProbeResult:
    """Measure every activation call of ``model`` on ``data`` (module docstring).

    One forward pass per batch, with hooks on every module and a torch-function mode that
    sees functional activations; per-unit sums, maxima and minima are accumulated call by
    call, and the statistics are those of :mod:`relulab.nn.statistics`. The model is left as
    it was found (mode, buffers, ``requires_grad``, ``.grad``, hooks, random state). When a
    call's unit axis came from the default rule (no producing layer explained it), one
    :class:`UnitAxisWarning` names those calls.

    Args:
        model: any ``nn.Module``.
        data: inputs ``(N, …)`` in the model's input shape, samples first — or a mapping of
            model arguments (``model(**data)``), e.g. ``{"input_ids": …, "attention_mask":
            …}``: every tensor in it is batched along its first axis, other values are passed
            unchanged; positions where ``attention_mask`` ``(N, T)`` is 0 (padding) are left
            out of every statistic.
        targets: with ``loss_fn``, the targets; then the per-sample gradient second moment is
            measured (the parameters' ``.grad`` are not touched).
        loss_fn: a scalar loss averaging or summing over samples, e.g. ``nn.MSELoss()``,
            called on the model's output (its ``logits`` for a ``ModelOutput``); or
            ``"model"``: the model's own ``loss`` (labels in ``data``), taken as a mean over
            the batch.
        features: ``(N, k)`` task features: adds the R² of each call's representation.
        batch_size: run ``data`` in batches of this size (default: all at once). In
            ``"train"`` mode, normalisation layers then see batches of this size.
        max_rank_samples: samples of each call's activation kept for effective rank and R²,
            and kept positions (tokens) for the per-token rank.
        activation_types: further module types to probe as activations (your own); the
            built-in ones (:data:`ACTIVATION_TYPES`, and the composite ones of
            :data:`relulab.probe.tables.COMPOSITE_ACTIVATIONS`) are always probed.
        mode: ``"train"`` (batch statistics, dropout on: what training sees) or ``"eval"``.
        unit_axis: the unit axis of every call, instead of the producer rule.

    Returns:
        A :class:`ProbeResult`.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
        >>> result = probe(model, torch.randn(256, 4))
        >>> 0.0 <= result.layers[0].metrics["dead_fraction"] <= 1.0
        True
        >>> embed = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 8), nn.GELU())
        >>> ids = torch.randint(0, 10, (4, 6))
        >>> class Wrapped(nn.Module):  # a language model's signature
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.body = embed
        ...     def forward(self, input_ids, attention_mask):
        ...         return self.body(input_ids)
        >>> found = probe(Wrapped(), {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
        >>> found.layers[0].units, found.layers[0].unit_axis_rule
        (8, 'producer')
    """
    samples = _check_request(data, targets, loss_fn, mode)
    if features is not None:
        features = np.asarray(features, dtype=np.float64).reshape(samples, -1)
    recorder = CallRecorder(
        model, tuple(activation_types), unit_axis, min(max_rank_samples, samples), max_rank_samples
    )
    with preserved(model, _cuda_devices(_tensors(data))):
        model.train(mode == "train")
        recorder.attach()
        try:
            _run_batches(model, recorder, data, targets, loss_fn, batch_size)
        finally:
            recorder.detach()
    if not recorder.layers:
        raise ValueError(_no_activation_message(model))
    layers = [
        LayerProbe(
            index=acc.index,
            name=acc.name,
            kind=acc.kind,
            units=acc.units,
            metrics=layer_metrics(acc, features),
            kinks=acc.kinks,
            module=acc.module,
            call=acc.call,
            family=acc.family,
            unit_axis=acc.unit_axis,
            unit_axis_rule=acc.unit_axis_rule,
            producer=acc.producer,
            after_batch_norm=acc.after_batch_norm,
            non_finite=not accumulated_finite(acc),
        )
        for acc in recorder.layers.values()
    ]
    _warn_default_axis(layers)
    result = ProbeResult(layers, mode, summarise_inputs(data, model), non_finite_parameters(model))
    _warn_non_finite(result)
    return result


def _warn_non_finite(result: ProbeResult) -> None:
    """One :class:`NonFiniteWarning` naming the non-finite calls and parameters, if any."""
    calls = [layer.name for layer in result.layers if layer.non_finite]
    inputs = [f"{found.name} ({found.non_finite})" for found in result.inputs if found.non_finite]
    if not calls and not result.non_finite_parameters and not inputs:
        return
    shown = ", ".join(calls[:6]) + (f" and {len(calls) - 6} more" if len(calls) > 6 else "")
    where = [f"{len(calls)} activation call(s) saw NaN or ±inf ({shown}): their statistics are NaN"]
    if result.non_finite_parameters:
        named = ", ".join(
            f"{name} ({bad} of {size})"
            for name, (bad, size) in list(result.non_finite_parameters.items())[:6]
        )
        where.append(f"parameters holding NaN or ±inf: {named}")
    if inputs:
        where.append(f"inputs holding NaN or ±inf: {', '.join(inputs)}")
    warnings.warn("; ".join(where), NonFiniteWarning, stacklevel=3)


def _warn_default_axis(layers: list[LayerProbe]) -> None:
    """One :class:`UnitAxisWarning` naming every call whose unit axis is the default's."""
    chosen = [layer for layer in layers if layer.unit_axis_rule == "default"]
    if not chosen:
        return
    named = ", ".join(f"{layer.name} ({layer.units} units)" for layer in chosen[:8])
    more = f" and {len(chosen) - 8} more" if len(chosen) > 8 else ""
    warnings.warn(
        f"{len(chosen)} activation call(s) took axis 1 as their unit axis by the default rule "
        f"(no Linear, convolution or normalisation produced their input): {named}{more}; "
        "if axis 1 is not the feature axis (e.g. a sequence (N, T, d)), pass unit_axis= "
        "(relulab diagnose --unit-axis)",
        UnitAxisWarning,
        stacklevel=3,
    )


def _no_activation_message(model: nn.Module) -> str:
    modules = ", ".join(t.__name__ for t in ACTIVATION_TYPES)
    composites = ", ".join(sorted({name.rsplit(".", 1)[1] for name in COMPOSITE_ACTIVATIONS}))
    functions = ", ".join(sorted({short for short, _ in ACTIVATION_FUNCTIONS.values()}))
    return (
        f"no ReLU-family or smooth activation was called by the {type(model).__name__} model: "
        f"neither a module ({modules}; {composites}) nor a function ({functions}); pass "
        "activation_types= for your own activation modules"
    )
