r"""Diagnostics of the ReLU-family activations of any ``nn.Module``, through forward hooks.

Every activation module (``nn.ReLU``, :class:`relulab.nn.ReLUMinusB`, ``nn.LeakyReLU``,
``nn.ReLU6``, ``nn.PReLU``) is a *layer*; its input :math:`z` is the pre-activation, its output
:math:`h`. A *unit* is a feature on axis 1 (a Linear output, a conv channel); statistics run over
samples and, for convolutions, spatial positions. The hooks accumulate per-unit sums, maxima and
minima batch by batch; every statistic is then computed by the one function of
:mod:`relulab.nn.statistics` that the engine uses too. Definitions, over the probed data:

* **dead**: :math:`z \le 0` for every sample and position (the unit never fires and gets no
  gradient); **always on**: :math:`z > 0` everywhere (the unit is linear on the data);
  **balanced**: the rest. (Other tools call "dead" a small *mean* activation; this one does not.)
* **kinks** (Linear → activation pairs): the signed distance of unit :math:`j`'s hyperplane from
  the origin, :math:`-b_j/\lVert w_j\rVert` (seed ``001_…``'s :math:`x_t = -b_1/w_1` in d dims;
  seed ``004_…`` §5.3).
* **Δ** (seed ``000_…``, §Representation collapse): the std over units of the per-unit sample
  mean of :math:`h`.
* **sample-mean/variance ratio** (seed ``002_…`` §2.2, eq. 9):
  :math:`r = \sqrt{\sum_i \langle z_i\rangle^2 / \sum_i \mathrm{Var}_t z_i}`; and the split of
  the total second moment :math:`\langle z^2\rangle = m^2 + v^2` into squared sample mean
  :math:`m^2` and sample variance :math:`v^2` (per unit, averaged), reported as
  ``sample_variance_fraction`` :math:`v^2/(m^2+v^2)`.
* **gradient second moment** (with ``targets`` and ``loss_fn``):
  :math:`\langle(\partial L/\partial h)^2\rangle` per layer, averaged over units and samples.
* **effective rank** (seed ``004_…`` §3, eq. 1): :math:`\exp(-\sum_i \bar s_i \ln \bar s_i)`,
  :math:`\bar s = s/\sum s`, :math:`s` the singular values of the samples × features matrix of
  :math:`h` (flattened per sample), *uncentred* and *centred* (centring caps it at N − 1).
* **R²** on given features (seed ``004_…`` appendix D): the in-sample :math:`R^2` of a least-squares
  fit (with intercept) from :math:`h` to each feature column, averaged over columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from relulab.nn.activations import ReLUMinusB
from relulab.nn.run import run_model
from relulab.nn.statistics import (
    delta_from_means,
    effective_rank,
    mean_variance_ratio,
    module_sample_dims,
    r_squared,
    sample_moments_from_sums,
    sample_variance_fraction,
    squared_mean_and_variance,
    unit_states_from_extremes,
)

__all__ = ["ACTIVATION_TYPES", "LayerProbe", "ProbeResult", "probe"]

ACTIVATION_TYPES: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    ReLUMinusB,
    nn.LeakyReLU,
    nn.ReLU6,
    nn.PReLU,
)
LINEAR_TYPES = (nn.Linear,)


@dataclass
class _Accumulator:
    """Running per-unit sums over batches (float64, CPU)."""

    count: int = 0
    positions: int = 0
    z_sum: Tensor | None = None
    z_sq_sum: Tensor | None = None
    z_max: Tensor | None = None
    z_min: Tensor | None = None
    h_sum: Tensor | None = None
    grad_sq_sum: float = 0.0
    grad_count: int = 0
    kept: list[Tensor] = field(default_factory=list)
    kept_rows: int = 0

    def add(self, z: Tensor, h: Tensor, keep_rows: int) -> None:
        z64, h64 = z.detach().double().cpu(), h.detach().double().cpu()
        dims = module_sample_dims(z64)
        first = self.z_sum is None
        self.count += z64.shape[0]
        self.positions = int(np.prod(z64.shape[2:])) if z64.dim() > 2 else 1
        sums = (
            z64.sum(dim=dims),
            z64.square().sum(dim=dims),
            z64.amax(dim=dims),
            z64.amin(dim=dims),
            h64.sum(dim=dims),
        )
        if first:
            self.z_sum, self.z_sq_sum, self.z_max, self.z_min, self.h_sum = sums
        else:
            self.z_sum += sums[0]
            self.z_sq_sum += sums[1]
            self.z_max = torch.maximum(self.z_max, sums[2])
            self.z_min = torch.minimum(self.z_min, sums[3])
            self.h_sum += sums[4]
        if self.kept_rows < keep_rows:
            take = h64[: keep_rows - self.kept_rows].reshape(
                min(h64.shape[0], keep_rows - self.kept_rows), -1
            )
            self.kept.append(take)
            self.kept_rows += take.shape[0]


@dataclass
class LayerProbe:
    r"""Everything measured at one activation layer.

    Attributes:
        index: the layer's position among the model's activation modules.
        name: the module's name in the model.
        kind: its class name (``ReLU``, ``ReLUMinusB``, …).
        units: the number of units (features on axis 1).
        metrics: metric name → value (module docstring).
        kinks: per unit :math:`-b_j/\lVert w_j\rVert` when a Linear layer feeds the activation.

    Example:
        >>> layer = probe(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), torch.randn(20, 2)).layers[0]
        >>> layer.kind, layer.units, layer.kinks.shape
        ('ReLU', 3, (3,))
    """

    index: int
    name: str
    kind: str
    units: int
    metrics: dict[str, float]
    kinks: np.ndarray | None = None


@dataclass
class ProbeResult:
    """The :class:`LayerProbe` of every activation layer, with tidy and wide tables and a plot.

    Example:
        >>> result = probe(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), torch.randn(20, 2))
        >>> sorted(result.frame.columns)
        ['layer', 'metric', 'module', 'value']
        >>> "dead_fraction" in result.table().columns
        True
    """

    layers: list[LayerProbe]

    @property
    def frame(self) -> pd.DataFrame:
        """Tidy: one row per layer and metric (``layer``, ``module``, ``metric``, ``value``)."""
        rows = [
            {"layer": layer.index, "module": layer.name, "metric": metric, "value": value}
            for layer in self.layers
            for metric, value in layer.metrics.items()
        ]
        return pd.DataFrame(rows, columns=["layer", "module", "metric", "value"])

    def table(self) -> pd.DataFrame:
        """Wide: one row per layer, one column per metric."""
        return self.frame.pivot_table(
            index=["layer", "module"], columns="metric", values="value", sort=False
        ).reset_index()

    def plot(self, path: str) -> None:
        """Per-layer panels: unit states, r, effective rank, Δ (and gradients if measured)."""
        from relulab.report.plotting import plt, save_figure

        table = self.table()
        x = table["layer"].to_numpy()
        panels = [
            ("unit states", ["dead_fraction", "always_on_fraction", "balanced_fraction"]),
            ("sample mean / variance ratio r", ["sample_mean_variance_ratio"]),
            ("effective rank", ["effective_rank_uncentred", "effective_rank_centred"]),
            ("Δ (std of unit means)", ["delta"]),
        ]
        if "gradient_second_moment" in table:
            panels.append(("⟨(∂L/∂h)²⟩", ["gradient_second_moment"]))
        fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.2))
        for ax, (title, metrics) in zip(axes, panels, strict=True):
            for metric in metrics:
                ax.plot(x, table[metric], "o-", ms=3, label=metric.replace("_", " "))
            ax.set(title=title, xlabel="activation layer")
            if metric == "gradient_second_moment":
                ax.set_yscale("log")
            if len(metrics) > 1:
                ax.legend()
        save_figure(fig, path)


def _activation_modules(
    model: nn.Module, types: tuple[type[nn.Module], ...]
) -> list[tuple[str, nn.Module]]:
    found = [(name, m) for name, m in model.named_modules() if isinstance(m, types)]
    if not found:
        kinds = ", ".join(t.__name__ for t in types)
        raise ValueError(
            f"no ReLU-family activation module ({kinds}) found in the model; "
            "activations called functionally (F.relu in forward) cannot be hooked: "
            "use nn.ReLU modules"
        )
    return found


def _preceding_linear(
    model: nn.Module, activations: list[nn.Module], data: Tensor
) -> dict[int, nn.Linear]:
    """For each activation, the Linear layer called right before it (if its width matches)."""
    calls: list[nn.Module] = []
    watched = [m for m in model.modules() if isinstance(m, LINEAR_TYPES) or m in activations]
    hooks = [m.register_forward_hook(lambda mod, i, o: calls.append(mod)) for m in watched]
    try:
        with torch.no_grad():
            run_model(model, data[:2], tuple(data.shape))
    finally:
        for hook in hooks:
            hook.remove()
    pairs, last_linear = {}, None
    for module in calls:
        if isinstance(module, LINEAR_TYPES):
            last_linear = module
        elif last_linear is not None and id(module) not in pairs:
            pairs[id(module)] = last_linear
            last_linear = None
    return pairs


def _kinks(linear: nn.Linear) -> np.ndarray:
    with torch.no_grad():
        norms = linear.weight.detach().double().norm(dim=1)
        bias = linear.bias.detach().double() if linear.bias is not None else torch.zeros_like(norms)
        return (-bias / norms).cpu().numpy()


def _layer_metrics(acc: _Accumulator, features: np.ndarray | None) -> dict[str, float]:
    n = acc.count * acc.positions
    mean, variance = sample_moments_from_sums(acc.z_sum, acc.z_sq_sum, n)
    states = unit_states_from_extremes(acc.z_min, acc.z_max)
    fractions = {key: float(value) for key, value in states.fractions(torch.float64).items()}
    m2, v2 = squared_mean_and_variance(mean, variance, reduce="mean")
    metrics = {
        **fractions,
        "delta": float(delta_from_means(acc.h_sum / n)),
        "squared_sample_mean": float(m2),
        "sample_variance": float(v2),
        "sample_variance_fraction": float(sample_variance_fraction(m2, v2)),
        "sample_mean_variance_ratio": float(mean_variance_ratio(m2, v2)),
    }
    if acc.kept:
        kept = torch.cat(acc.kept)
        metrics["effective_rank_uncentred"] = effective_rank(kept, centred=False)
        metrics["effective_rank_centred"] = effective_rank(kept, centred=True)
        if features is not None:
            metrics["r_squared"] = r_squared(kept.numpy(), features[: kept.shape[0]])
    if acc.grad_count:
        metrics["gradient_second_moment"] = acc.grad_sq_sum / acc.grad_count
    return metrics


def probe(
    model: nn.Module,
    data: Tensor,
    targets: Tensor | None = None,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    features: np.ndarray | Tensor | None = None,
    batch_size: int | None = None,
    max_rank_samples: int = 2000,
    activation_types: Sequence[type[nn.Module]] = ACTIVATION_TYPES,
) -> ProbeResult:
    """Measure every ReLU-family activation of ``model`` on ``data`` (module docstring).

    Forward hooks on the activation modules accumulate per-unit sums, maxima and minima over
    batches; the statistics are those of :mod:`relulab.nn.statistics`. The model's training
    flag is restored and, with a loss, its gradients are cleared afterwards.

    Args:
        model: any ``nn.Module`` whose activations are modules of ``activation_types``
            (activations called functionally, e.g. ``F.relu``, cannot be hooked).
        data: inputs ``(N, …)`` in the model's input shape.
        targets: with ``loss_fn``, the targets; then the gradient second moment is measured.
        loss_fn: e.g. ``nn.MSELoss()``.
        features: ``(N, k)`` task features: adds the R² of each layer's representation.
        batch_size: run ``data`` in batches of this size (default: all at once).
        max_rank_samples: rows of each layer kept for effective rank and R².
        activation_types: the module types that count as activations.

    Returns:
        A :class:`ProbeResult`.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
        >>> result = probe(model, torch.randn(256, 4))
        >>> 0.0 <= result.layers[0].metrics["dead_fraction"] <= 1.0
        True
    """
    if (targets is None) != (loss_fn is None):
        raise ValueError("give both targets and loss_fn to measure gradients, or neither")
    if features is not None:
        features = np.asarray(features, dtype=np.float64).reshape(len(data), -1)
    named = _activation_modules(model, tuple(activation_types))
    modules = [m for _, m in named]
    pairs = _preceding_linear(model, modules, data)
    accumulators = [_Accumulator() for _ in named]
    keep_rows = min(max_rank_samples, len(data))

    def forward_hook(index: int) -> Callable:
        def hook(module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
            accumulators[index].add(inputs[0], output, keep_rows)
            if output.requires_grad:

                def record(grad: Tensor, acc: _Accumulator = accumulators[index]) -> None:
                    acc.grad_sq_sum += float(grad.detach().double().square().sum())
                    acc.grad_count += grad.numel()

                output.register_hook(record)

        return hook

    hooks = [m.register_forward_hook(forward_hook(i)) for i, m in enumerate(modules)]
    was_training = model.training
    try:
        step = batch_size or len(data)
        for start in range(0, len(data), step):
            batch = data[start : start + step]
            if loss_fn is None:
                with torch.no_grad():
                    run_model(model, batch)
            else:
                loss = loss_fn(run_model(model, batch), targets[start : start + step])
                loss.backward()
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
        if loss_fn is not None:
            model.zero_grad(set_to_none=True)
    layers = []
    for index, ((name, module), acc) in enumerate(zip(named, accumulators, strict=True)):
        if acc.z_sum is None:
            continue  # defined but never called in forward
        linear = pairs.get(id(module))
        kinks = _kinks(linear) if linear is not None else None
        metrics = _layer_metrics(acc, features)
        if kinks is not None:
            metrics["kink_abs_median"] = float(np.median(np.abs(kinks)))
        layers.append(
            LayerProbe(index, name, type(module).__name__, int(acc.z_sum.numel()), metrics, kinks)
        )
    return ProbeResult(layers)
