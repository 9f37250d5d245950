r"""Diagnostics of the activations of any ``nn.Module``, one *layer* per activation **call**.

Every call of an activation — a module (``nn.ReLU``, :class:`relulab.nn.ReLUMinusB`,
``nn.LeakyReLU``, ``nn.GELU``, ``nn.SiLU``, ``nn.Tanh``, …) or a function (``F.relu``,
``torch.relu``, ``x.relu_()``, ``F.gelu``, ``F.silu``, ``torch.tanh``, …, as
``nn.TransformerEncoderLayer`` calls its activation) — is a layer, named ``{module path}#{k}``
or ``{caller path}:{function}#{k}`` (:mod:`relulab.probe.calls`). Its input :math:`z`, taken
before any in-place write, is the pre-activation; its output :math:`h`. A *unit* is a feature
on the unit axis, which follows the layer that produced :math:`z`: the **last** axis of a
Linear output at any rank (a sequence ``(N, T, d)`` has d units), axis **1** of a convolution;
statistics run over every other axis. Per-unit sums, maxima and minima are accumulated call
by call (no tensor is kept but the first rows of :math:`h` for the rank); every statistic is
then computed by the one function of :mod:`relulab.nn.statistics` the engine uses too.

Definitions, over the probed data:

* **unit states** of a *rectifier* (ReLU, ReLU−b, ReLU6: zero output and gradient for
  :math:`z \le 0`): **dead** — :math:`z \le 0` on every sample and position (the unit never
  fires and gets no gradient); **always on** — :math:`z > 0` everywhere (linear on the data);
  **balanced** — the rest. For leaky and smooth activations (leaky ReLU, PReLU, ELU, SELU, GELU,
  SiLU, tanh, …) a unit with :math:`z \le 0` everywhere still gets gradient, so the same masks
  are reported as sign states: ``never_positive_fraction``, ``always_positive_fraction``,
  ``mixed_sign_fraction`` — never as ``dead_fraction``. (Other tools call "dead" a small *mean*
  activation; this one does not.)
* **kinks** (a call whose input is exactly a Linear layer's output): the signed distance of unit
  :math:`j`'s hyperplane from the origin, :math:`-b_j/\lVert w_j\rVert` (seed ``001_…``'s
  :math:`x_t = -b_1/w_1` in d dims; seed ``004_…`` §5.3).
* **Δ** (seed ``000_…``, §Representation collapse): the std over units of the per-unit sample
  mean of :math:`h`.
* **sample-mean/variance ratio** (seed ``002_…`` §2.2, eq. 9):
  :math:`r = \sqrt{\sum_i \langle z_i\rangle^2 / \sum_i \mathrm{Var}_t z_i}`; and the split of
  the total second moment :math:`\langle z^2\rangle = m^2 + v^2` into squared sample mean
  :math:`m^2` and sample variance :math:`v^2` (per unit, averaged), reported as
  ``sample_variance_fraction`` :math:`v^2/(m^2+v^2)`.
* **gradient second moment** (with ``targets`` and ``loss_fn``): per sample,
  :math:`\langle(\partial \ell_t/\partial h_t)^2\rangle` averaged over units, positions and
  samples, :math:`\ell_t` the loss of sample :math:`t` alone — independent of the batch size
  (a mean-reduced batch loss :math:`L = \frac1B\sum_t \ell_t` gives
  :math:`\partial \ell_t/\partial h_t = B\,\partial L/\partial h_t`; a summed one is
  already per sample).
* **effective rank** (seed ``004_…`` §3, eq. 1): :math:`\exp(-\sum_i \bar s_i \ln \bar s_i)`,
  :math:`\bar s = s/\sum s`, :math:`s` the singular values of the samples × features matrix of
  :math:`h` (each sample's activation flattened), *uncentred* and *centred* (centring caps it
  at N − 1).
* **R²** on given features (seed ``004_…`` appendix D): the in-sample :math:`R^2` of a
  least-squares fit (with intercept) from :math:`h` to each feature column, averaged over
  columns.

**Modes.** ``mode="train"`` (the default) runs the forward pass a training step runs:
normalisation layers use the batch's statistics and dropout is active — the units that are
dead *for the optimiser*; ``mode="eval"`` runs it as inference does (running statistics, no
dropout), for a trained model. Either way the model is left exactly as it was found: every
module's training flag, every buffer (BatchNorm's running statistics), ``requires_grad``,
parameters' ``.grad``, hooks, and torch's global random state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from relulab.files import replacing
from relulab.nn.run import run_model
from relulab.nn.statistics import (
    delta_from_means,
    effective_rank,
    mean_variance_ratio,
    r_squared,
    sample_moments_from_sums,
    sample_variance_fraction,
    squared_mean_and_variance,
    unit_states_from_extremes,
)
from relulab.probe.calls import (
    ACTIVATION_FUNCTIONS,
    ACTIVATION_MODULES,
    CallRecorder,
    LayerAccumulator,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ACTIVATION_TYPES", "MODES", "LayerProbe", "ProbeResult", "preserved", "probe"]

#: The activation module types probed without being asked (plus ``activation_types``).
ACTIVATION_TYPES: tuple[type[nn.Module], ...] = tuple(ACTIVATION_MODULES)

#: The forward modes: ``"train"`` (batch statistics, dropout on) and ``"eval"``.
MODES: tuple[str, ...] = ("train", "eval")

RECTIFIER_STATES = ("dead_fraction", "always_on_fraction", "balanced_fraction")
SIGN_STATES = ("never_positive_fraction", "always_positive_fraction", "mixed_sign_fraction")


@dataclass
class LayerProbe:
    r"""Everything measured at one activation call.

    Attributes:
        index: the call's position among the model's activation calls (first-call order).
        name: ``{module path}#{k}`` for a module, ``{caller path}:{function}#{k}`` for a
            function (:mod:`relulab.probe.calls`).
        kind: the module's class name (``ReLU``, ``GELU``, …) or ``F.{function}``.
        units: the number of units (features on :attr:`unit_axis`).
        metrics: metric name → value (module docstring).
        kinks: per unit :math:`-b_j/\lVert w_j\rVert` when the input is a Linear output.
        module: the activation module's path, or the calling module's for a function.
        call: k, the call's index among that module's (or caller's function's) calls in one
            forward pass.
        family: ``"rectifier"`` (dead units exist), ``"leaky"``, ``"smooth"`` or ``"other"``.
        unit_axis: the unit axis of the call's input.
        unit_axis_rule: how it was chosen: ``"producer"``, ``"moved"``, ``"default"``,
            ``"given"`` (:func:`relulab.probe.calls.resolve_unit_axis`).
        producer: the layer that produced the input (``"fc1 (linear)"``), if one matched.

    Example:
        >>> layer = probe(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), torch.randn(20, 2)).layers[0]
        >>> layer.name, layer.kind, layer.units, layer.kinks.shape
        ('1#0', 'ReLU', 3, (3,))
    """

    index: int
    name: str
    kind: str
    units: int
    metrics: dict[str, float]
    kinks: np.ndarray | None = None
    module: str = ""
    call: int = 0
    family: str = "rectifier"
    unit_axis: int = 1
    unit_axis_rule: str = "default"
    producer: str | None = None


@dataclass
class ProbeResult:
    """The :class:`LayerProbe` of every activation call, the mode they were measured in, tidy
    and wide tables and a figure.

    Example:
        >>> result = probe(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), torch.randn(20, 2))
        >>> sorted(result.frame.columns)
        ['kind', 'layer', 'metric', 'module', 'name', 'value']
        >>> result.mode, "dead_fraction" in result.table().columns
        ('train', True)
    """

    layers: list[LayerProbe]
    mode: str = "train"

    @property
    def frame(self) -> pd.DataFrame:
        """Tidy: one row per call and metric (``layer``, ``name``, ``module``, ``kind``,
        ``metric``, ``value``)."""
        columns = ["layer", "name", "module", "kind", "metric", "value"]
        rows = [
            (layer.index, layer.name, layer.module, layer.kind, metric, value)
            for layer in self.layers
            for metric, value in layer.metrics.items()
        ]
        return pd.DataFrame(rows, columns=columns)

    def table(self) -> pd.DataFrame:
        """Wide: one row per call (``layer``, ``name``, ``kind``, ``units``), one column per
        metric (NaN where a metric does not apply, e.g. ``dead_fraction`` of a GELU)."""
        return pd.DataFrame(
            [
                {
                    "layer": layer.index,
                    "name": layer.name,
                    "kind": layer.kind,
                    "units": layer.units,
                    **layer.metrics,
                }
                for layer in self.layers
            ]
        )

    def layer(self, name: str) -> LayerProbe:
        """The :class:`LayerProbe` called ``name`` (e.g. ``"layer1.0.relu#1"``)."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"no activation call {name!r}; calls: {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        """The calls' names, in order."""
        return [layer.name for layer in self.layers]

    def plot(self, path: str | Path | None = None) -> Figure:
        """Per-call panels: unit states, r, effective rank, Δ (and gradients if measured).

        Args:
            path: if given, the figure is also written there (PNG).

        Returns:
            The matplotlib ``Figure`` (shown by a notebook; no pyplot state is touched).
        """
        from matplotlib.figure import Figure

        table = self.table()
        x = table["layer"].to_numpy()
        panels = [
            ("unit states", [m for m in RECTIFIER_STATES[:2] + SIGN_STATES[:2] if m in table]),
            ("sample mean / variance ratio r", ["sample_mean_variance_ratio"]),
            ("effective rank", ["effective_rank_uncentred", "effective_rank_centred"]),
            ("Δ (std of unit means)", ["delta"]),
        ]
        if "gradient_second_moment" in table:
            panels.append(("⟨(∂ℓ/∂h)²⟩ per sample", ["gradient_second_moment"]))
        fig = Figure(figsize=(3.6 * len(panels), 3.6), layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (title, metrics) in zip(axes, panels, strict=True):
            for metric in metrics:
                if metric in table:
                    ax.plot(x, table[metric], "o-", ms=3, label=metric.replace("_", " "))
            ax.set(title=title, xlabel=f"activation call ({self.mode} mode)")
            if metrics == ["gradient_second_moment"]:
                ax.set_yscale("log")
            if len(metrics) > 1:
                ax.legend(fontsize=7)
            if len(x) <= 24:
                ax.set_xticks(x, table["name"], rotation=60, ha="right", fontsize=6)
        if path is not None:
            with replacing(Path(path)) as temporary:
                fig.savefig(temporary, format="png", metadata={"Software": None})
        return fig


def _layer_metrics(acc: LayerAccumulator, features: np.ndarray | None) -> dict[str, float]:
    mean, variance = sample_moments_from_sums(acc.z_sum, acc.z_sq_sum, acc.count)
    states = unit_states_from_extremes(acc.z_min, acc.z_max)
    named = (
        states.fractions(torch.float64)
        if acc.family == "rectifier"
        else states.sign_fractions(torch.float64)
    )
    m2, v2 = squared_mean_and_variance(mean, variance, reduce="mean")
    metrics = {key: float(value) for key, value in named.items()}
    if acc.h_sum is not None:
        metrics["delta"] = float(delta_from_means(acc.h_sum / acc.count))
    metrics.update(
        {
            "squared_sample_mean": float(m2),
            "sample_variance": float(v2),
            "sample_variance_fraction": float(sample_variance_fraction(m2, v2)),
            "sample_mean_variance_ratio": float(mean_variance_ratio(m2, v2)),
        }
    )
    if acc.kept:
        kept = torch.cat(acc.kept)
        metrics["effective_rank_uncentred"] = effective_rank(kept, centred=False)
        metrics["effective_rank_centred"] = effective_rank(kept, centred=True)
        if features is not None:
            metrics["r_squared"] = r_squared(kept.numpy(), features[: kept.shape[0]])
    if acc.grad_count:
        metrics["gradient_second_moment"] = acc.grad_sq_sum / acc.grad_count
    if acc.kinks is not None:
        metrics["kink_abs_median"] = float(np.median(np.abs(acc.kinks)))
    return metrics


@contextmanager
def preserved(model: nn.Module, devices: Sequence[int] = ()) -> Iterator[None]:
    """Run a block and leave ``model`` as it was: every module's training flag, every buffer
    (same tensor objects, same values — BatchNorm's running statistics and batch counts), and
    torch's global random state (CPU and the given CUDA ``devices``); the fused fast path of
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
        with torch.random.fork_rng(devices=list(devices)):
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


def _cuda_devices(model: nn.Module, data: Tensor) -> list[int]:
    tensors = [data, *model.parameters(), *model.buffers()]
    return sorted({t.device.index or 0 for t in tensors if t.is_cuda})


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
        once = loss_fn(output.detach(), target)
        twice = loss_fn(torch.cat([output.detach()] * 2), torch.cat([target] * 2))
    if not isinstance(once, Tensor) or once.numel() != 1:
        raise ValueError("loss_fn must return a scalar (reduction 'mean' or 'sum')")
    ratio = float(twice) / float(once) if float(once) != 0 else float("nan")
    if abs(ratio - 1) < 1e-4:
        return "mean"
    if abs(ratio - 2) < 1e-4:
        return "sum"
    raise unknown


def _backward_inputs(model: nn.Module, leaf: Tensor | None) -> list[Tensor]:
    inputs = [p for p in model.parameters() if p.requires_grad]
    if leaf is not None:
        inputs.insert(0, leaf)
    if not inputs:
        raise ValueError(
            "cannot measure gradients: the data are not floating point and no parameter "
            "requires grad"
        )
    return inputs


def _run_batches(
    model: nn.Module,
    recorder: CallRecorder,
    data: Tensor,
    targets: Tensor | None,
    loss_fn: Callable | None,
    batch_size: int | None,
) -> None:
    step = batch_size or len(data)
    reduction = None
    for start in range(0, len(data), step):
        batch = data[start : start + step]
        size = batch.shape[0]
        if loss_fn is None:
            with torch.no_grad(), recorder.recording(size):
                run_model(model, batch, tuple(data.shape))
            continue
        target = targets[start : start + step]
        leaf = batch.detach().clone().requires_grad_(True) if batch.is_floating_point() else None
        inputs = _backward_inputs(model, leaf)
        with torch.enable_grad():
            with recorder.recording(size, gradients=True):
                output = run_model(model, batch if leaf is None else leaf.clone(), data.shape)
            reduction = reduction or _loss_reduction(loss_fn, output, target)
            # per sample: a mean over the batch scales every sample's gradient by 1/B
            recorder.gradient_factor = float(size) if reduction == "mean" else 1.0
            loss = loss_fn(output, target)
            if not isinstance(loss, Tensor) or not loss.requires_grad:
                raise ValueError("the loss does not depend on anything that requires grad")
            torch.autograd.grad(loss, inputs, allow_unused=True)


def probe(
    model: nn.Module,
    data: Tensor,
    targets: Tensor | None = None,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
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
    it was found (mode, buffers, ``requires_grad``, ``.grad``, hooks, random state).

    Args:
        model: any ``nn.Module``.
        data: inputs ``(N, …)`` in the model's input shape, samples first.
        targets: with ``loss_fn``, the targets; then the per-sample gradient second moment is
            measured (the parameters' ``.grad`` are not touched).
        loss_fn: a scalar loss averaging or summing over samples, e.g. ``nn.MSELoss()``.
        features: ``(N, k)`` task features: adds the R² of each call's representation.
        batch_size: run ``data`` in batches of this size (default: all at once). In
            ``"train"`` mode, normalisation layers then see batches of this size.
        max_rank_samples: rows of each call's activation kept for effective rank and R².
        activation_types: further module types to probe as activations (your own); the
            built-in ones (:data:`ACTIVATION_TYPES`) are always probed.
        mode: ``"train"`` (batch statistics, dropout on: what training sees) or ``"eval"``.
        unit_axis: the unit axis of every call, instead of the producer rule.

    Returns:
        A :class:`ProbeResult`.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
        >>> result = probe(model, torch.randn(256, 4))
        >>> 0.0 <= result.layers[0].metrics["dead_fraction"] <= 1.0
        True
    """
    if mode not in MODES:
        raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
    if (targets is None) != (loss_fn is None):
        raise ValueError("give both targets and loss_fn to measure gradients, or neither")
    if targets is not None and len(targets) != len(data):
        raise ValueError(f"{len(targets)} targets for {len(data)} samples")
    if features is not None:
        features = np.asarray(features, dtype=np.float64).reshape(len(data), -1)
    recorder = CallRecorder(
        model, tuple(activation_types), unit_axis, min(max_rank_samples, len(data))
    )
    with preserved(model, _cuda_devices(model, data)):
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
            metrics=_layer_metrics(acc, features),
            kinks=acc.kinks,
            module=acc.module,
            call=acc.call,
            family=acc.family,
            unit_axis=acc.unit_axis,
            unit_axis_rule=acc.unit_axis_rule,
            producer=acc.producer,
        )
        for acc in recorder.layers.values()
    ]
    return ProbeResult(layers, mode)


def _no_activation_message(model: nn.Module) -> str:
    modules = ", ".join(t.__name__ for t in ACTIVATION_TYPES)
    functions = ", ".join(sorted({short for short, _ in ACTIVATION_FUNCTIONS.values()}))
    return (
        f"no ReLU-family or smooth activation was called by the {type(model).__name__} model: "
        f"neither a module ({modules}) nor a function ({functions}); pass "
        "activation_types= for your own activation modules"
    )
