r"""What :func:`relulab.probe.probe` returns: one :class:`LayerProbe` per activation call, in a
:class:`ProbeResult`, and how each call's metrics are computed from the sums the probe
accumulated (every formula is the one of :mod:`relulab.nn.statistics` the engine uses too).

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
  mean of :math:`h`; ``delta_relative``, Δ over :math:`\sqrt{\langle\mathrm{Var}_t
  h_i\rangle_i}` (the monitor's normalisation: one threshold for every scale).
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
  :math:`h` (each sample's activation flattened, padded tokens set to 0), *uncentred* and
  *centred*; centring caps it at :math:`\min(N-1, \text{features})`
  (``effective_rank_centred_cap``). A sequence ``(T, d)`` flattened into T·d features puts
  every transformer layer at that N − 1 cap (:func:`rank_at_sample_cap`), so calls with
  positions (tokens, pixels) also get the **per-token** reading
  ``effective_rank_token_{uncentred,centred}``: rows = the kept tokens (positions), columns =
  the units.
* **R²** on given features (seed ``004_…`` appendix D): the in-sample :math:`R^2` of a
  least-squares fit (with intercept) from :math:`h` to each feature column, averaged over
  columns.

**Non-finite values.** A call whose input or output holds NaN or :math:`\pm\infty` (a NaN
weight upstream, a diverged step) is *non-finite*: every statistic of it is NaN — never the
"0 dead, 100 % balanced" that comparisons with NaN would give, nor an SVD error —
:attr:`LayerProbe.non_finite` is set, and one :class:`relulab.probe.NonFiniteWarning` names
those calls and the parameters holding such values (:attr:`ProbeResult.non_finite_parameters`),
as the monitor does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from relulab.files import replacing
from relulab.nn.statistics import (
    delta_from_means,
    effective_rank,
    effective_rank_cap,
    mean_variance_ratio,
    r_squared,
    relative_delta,
    sample_moments_from_sums,
    sample_variance_fraction,
    squared_mean_and_variance,
    unit_states_from_extremes,
)
from relulab.probe.advice import AdviceList, advise
from relulab.probe.batching import LayerAccumulator, ProbeError
from relulab.probe.findings import AdviceThresholds
from relulab.probe.upstream import InputScale

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "RANK_CAP_FRACTION",
    "RECTIFIER_STATES",
    "SIGN_STATES",
    "LayerProbe",
    "ProbeResult",
    "accumulated_finite",
    "layer_metrics",
    "rank_at_sample_cap",
    "unit_states_by_batch_norm",
]

#: A centred per-sample effective rank at or above this fraction of its N − 1 cap is reported
#: as *at the sample cap* (:func:`rank_at_sample_cap`).
RANK_CAP_FRACTION = 0.9

RECTIFIER_STATES = ("dead_fraction", "always_on_fraction", "balanced_fraction")
SIGN_STATES = ("never_positive_fraction", "always_positive_fraction", "mixed_sign_fraction")


def rank_at_sample_cap(metrics: Mapping[str, float]) -> bool:
    """Whether a call's centred per-sample effective rank sits at its cap N − 1 — the number of
    probed samples, not the representation, bounds it (at least :data:`RANK_CAP_FRACTION` of
    the cap, with N − 1 below the number of features).

    Args:
        metrics: a call's metrics (``effective_rank_centred``, ``effective_rank_centred_cap``,
            ``effective_rank_rows``).

    Returns:
        ``True`` when at the sample cap; ``False`` otherwise or when the rank was not measured.

    Example:
        >>> rank_at_sample_cap(
        ...     {"effective_rank_centred": 30.6, "effective_rank_centred_cap": 31,
        ...      "effective_rank_rows": 32}
        ... )
        True
    """
    rank = metrics.get("effective_rank_centred")
    cap = metrics.get("effective_rank_centred_cap")
    rows = metrics.get("effective_rank_rows")
    if rank is None or cap is None or rows is None or cap <= 0:
        return False
    return cap == rows - 1 and rank >= RANK_CAP_FRACTION * cap


def unit_states_by_batch_norm(layer: LayerProbe, mode: str) -> bool:
    r"""Whether a call's unit states say nothing about the layers before it: its input is a
    BatchNorm's output in train mode, which centres every unit over the batch, so each unit
    takes both signs and none is dead or always on — by construction while BatchNorm's shift
    :math:`\beta` is near 0 (0 at init); a dead unit there needs :math:`\beta_i \le
    -\gamma_i \max_t \hat z_{ti}`.

    Args:
        layer: the call.
        mode: the mode it was probed in.

    Returns:
        ``True`` for a call right after a train-mode BatchNorm.

    Example:
        >>> import torch
        >>> from torch import nn
        >>> from relulab.probe import probe
        >>> model = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.ReLU())
        >>> layer = probe(model, torch.randn(32, 3)).layers[0]
        >>> unit_states_by_batch_norm(layer, "train"), layer.metrics["dead_fraction"]
        (True, 0.0)
    """
    return mode == "train" and layer.after_batch_norm


@dataclass
class LayerProbe:
    r"""Everything measured at one activation call.

    Attributes:
        index: the call's position among the model's activation calls (first-call order).
        name: ``{module path}#{k}`` for a module, ``{caller path}:{function}#{k}`` for a
            function (:mod:`relulab.probe.intercept`).
        kind: the module's class name (``ReLU``, ``GELU``, …) or ``F.{function}``.
        units: the number of units (features on :attr:`unit_axis`).
        metrics: metric name → value (module docstring).
        kinks: per unit :math:`-b_j/\lVert w_j\rVert` when the input is a Linear output.
        module: the activation module's path, or the calling module's for a function.
        call: k, the call's index among that module's (or caller's function's) calls in one
            forward pass.
        family: ``"rectifier"`` (dead units exist), ``"leaky"``, ``"smooth"`` or ``"other"``.
        unit_axis: the unit axis of the call's input.
        unit_axis_rule: how it was chosen: ``"producer"``, ``"reshaped"``, ``"moved"``,
            ``"default"``, ``"given"`` (:func:`relulab.probe.unit_axis.resolve_unit_axis`).
        producer: the layer that produced the input (``"fc1 (linear)"``), if one matched.
        after_batch_norm: the input is exactly a BatchNorm's output (``F.batch_norm``, so
            ``nn.BatchNorm*d``), unmodified; in train mode its unit states are then set by
            construction (:func:`unit_states_by_batch_norm`).
        non_finite: the call's input or output held NaN or ±inf: every statistic is NaN.

    Example:
        >>> import torch
        >>> from torch import nn
        >>> from relulab.probe import probe
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
    after_batch_norm: bool = False
    non_finite: bool = False

    @property
    def rank_at_sample_cap(self) -> bool:
        """Whether the centred per-sample effective rank sits at its N − 1 cap
        (:func:`rank_at_sample_cap`)."""
        return rank_at_sample_cap(self.metrics)


@dataclass
class ProbeResult:
    """The :class:`LayerProbe` of every activation call, the mode they were measured in, tidy
    and wide tables and a figure.

    Attributes:
        layers: one :class:`LayerProbe` per activation call, in first-call order.
        mode: ``"train"`` or ``"eval"``.
        inputs: the location and scale of each floating-point input
            (:class:`relulab.probe.upstream.InputScale`; empty for token ids).
        non_finite_parameters: the parameters and buffers holding NaN or ±inf, name →
            (non-finite values, size).

    Example:
        >>> import torch
        >>> from torch import nn
        >>> from relulab.probe import probe
        >>> result = probe(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), torch.randn(20, 2))
        >>> list(result.frame.columns[4:])
        ['units', 'unit_axis', 'unit_axis_rule', 'metric', 'value']
        >>> result.mode, "dead_fraction" in result.table().columns
        ('train', True)
    """

    layers: list[LayerProbe]
    mode: str = "train"
    inputs: list[InputScale] = field(default_factory=list)
    non_finite_parameters: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def frame(self) -> pd.DataFrame:
        """Tidy: one row per call and metric (``layer``, ``name``, ``module``, ``kind``,
        ``units``, ``unit_axis``, ``unit_axis_rule``, ``metric``, ``value``)."""
        columns = [*_CALL_COLUMNS, "metric", "value"]
        rows = [
            (*_call_fields(layer), metric, value)
            for layer in self.layers
            for metric, value in layer.metrics.items()
        ]
        return pd.DataFrame(rows, columns=columns)

    def table(self) -> pd.DataFrame:
        """Wide: one row per call (``layer``, ``name``, ``kind``, ``units``, ``unit_axis``,
        ``unit_axis_rule``, ``producer``, ``rank_at_sample_cap``,
        ``unit_states_by_batch_norm``, ``non_finite``), one column per metric (NaN where a
        metric does not apply, e.g. ``dead_fraction`` of a GELU)."""
        return pd.DataFrame(
            [
                {
                    "layer": layer.index,
                    "name": layer.name,
                    "kind": layer.kind,
                    "units": layer.units,
                    "unit_axis": layer.unit_axis,
                    "unit_axis_rule": layer.unit_axis_rule,
                    "producer": layer.producer,
                    "rank_at_sample_cap": layer.rank_at_sample_cap,
                    "unit_states_by_batch_norm": unit_states_by_batch_norm(layer, self.mode),
                    "non_finite": layer.non_finite,
                    **layer.metrics,
                }
                for layer in self.layers
            ]
        )

    def advice(self, thresholds: AdviceThresholds | None = None) -> AdviceList:
        """What the seeds suggest for these measurements (:func:`relulab.probe.advice.advise`):
        one :class:`~relulab.probe.advice.Advice` per finding and remedy, with its source and
        the numbers that triggered it; empty for a healthy network.

        Args:
            thresholds: when to report a finding (default
                :class:`~relulab.probe.advice.AdviceThresholds`).

        Returns:
            An :class:`~relulab.probe.advice.AdviceList` (``to_frame()`` for a table).

        Example:
            >>> import torch
            >>> from torch import nn
            >>> from relulab.probe import probe
            >>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
            >>> _ = nn.init.constant_(model[0].bias, -20.0)
            >>> [a.finding for a in probe(model, torch.randn(64, 4)).advice()][:1]
            ['dead_units']
        """
        return advise(self, thresholds)

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


_CALL_COLUMNS = ("layer", "name", "module", "kind", "units", "unit_axis", "unit_axis_rule")


def _call_fields(layer: LayerProbe) -> tuple:
    return (
        layer.index,
        layer.name,
        layer.module,
        layer.kind,
        layer.units,
        layer.unit_axis,
        layer.unit_axis_rule,
    )


def _rank_metrics(rows: Tensor, prefix: str) -> dict[str, float]:
    """Uncentred and centred effective rank of a rows × features matrix, and the centred cap."""
    return {
        f"{prefix}_uncentred": effective_rank(rows, centred=False),
        f"{prefix}_centred": effective_rank(rows, centred=True),
        f"{prefix}_centred_cap": float(
            effective_rank_cap(rows.shape[0], rows.shape[1], centred=True)
        ),
    }


def accumulated_finite(acc: LayerAccumulator) -> bool:
    """Whether every per-unit sum, extreme and kept row of a call is finite.

    Args:
        acc: the call's accumulator.

    Returns:
        ``False`` for a call that saw NaN or ±inf (or whose sums overflowed).
    """
    parts = [acc.z_sum, acc.z_sq_sum, acc.z_min, acc.z_max, acc.h_sum, acc.h_sq_sum]
    parts += [*acc.kept, *acc.token_kept]
    return all(bool(torch.isfinite(part).all()) for part in parts if part is not None)


def _non_finite_metrics(acc: LayerAccumulator, features: np.ndarray | None) -> dict[str, float]:
    """Every metric a non-finite call would have, NaN (the counts behind the rank caps kept)."""
    names = list(RECTIFIER_STATES if acc.family == "rectifier" else SIGN_STATES)
    names += ["delta", "delta_relative"] if acc.h_sum is not None else []
    names += ["squared_sample_mean", "sample_variance", "sample_variance_fraction"]
    names += ["sample_mean_variance_ratio"]
    metrics = dict.fromkeys(names, float("nan"))
    for rows, prefix in ((acc.kept, "effective_rank"), (acc.token_kept, "effective_rank_token")):
        if rows:
            shape = (sum(row.shape[0] for row in rows), rows[0].shape[1])
            metrics[f"{prefix}_uncentred"] = metrics[f"{prefix}_centred"] = float("nan")
            metrics[f"{prefix}_centred_cap"] = float(effective_rank_cap(*shape, centred=True))
            if prefix == "effective_rank":
                metrics["effective_rank_rows"] = float(shape[0])
                if features is not None:
                    metrics["r_squared"] = float("nan")
    if acc.grad_count:
        metrics["gradient_second_moment"] = float("nan")
    if acc.kinks is not None:
        metrics["kink_abs_median"] = float(np.median(np.abs(acc.kinks)))
    return metrics


def layer_metrics(acc: LayerAccumulator, features: np.ndarray | None) -> dict[str, float]:
    """Every metric of one call from its accumulated sums (module docstring); NaN throughout
    for a non-finite call.

    Args:
        acc: the call's accumulator.
        features: ``(N, k)`` task features for R², or ``None``.

    Returns:
        Metric name → value.
    """
    if not accumulated_finite(acc):
        return _non_finite_metrics(acc, features)
    z_sum, z_sq_sum, z_min, z_max = acc.z_sum, acc.z_sq_sum, acc.z_min, acc.z_max
    if z_sum is None or z_sq_sum is None or z_min is None or z_max is None:
        raise ProbeError(f"activation call {acc.name} has no measured batch")
    mean, variance = sample_moments_from_sums(z_sum, z_sq_sum, acc.count)
    states = unit_states_from_extremes(z_min, z_max)
    named = (
        states.fractions(torch.float64)
        if acc.family == "rectifier"
        else states.sign_fractions(torch.float64)
    )
    m2, v2 = squared_mean_and_variance(mean, variance, reduce="mean")
    metrics = {key: float(value) for key, value in named.items()}
    if acc.h_sum is not None and acc.h_sq_sum is not None:  # set together, by add_output
        h_mean, h_variance = sample_moments_from_sums(acc.h_sum, acc.h_sq_sum, acc.count)
        metrics["delta"] = float(delta_from_means(h_mean))
        metrics["delta_relative"] = float(relative_delta(h_mean, h_variance))
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
        metrics.update(_rank_metrics(kept, "effective_rank"))
        metrics["effective_rank_rows"] = float(kept.shape[0])
        if features is not None:
            metrics["r_squared"] = r_squared(kept.numpy(), features[: kept.shape[0]])
    if acc.token_kept:
        metrics.update(_rank_metrics(torch.cat(acc.token_kept), "effective_rank_token"))
    if acc.grad_count:
        metrics["gradient_second_moment"] = acc.grad_sq_sum / acc.grad_count
    if acc.kinks is not None:
        metrics["kink_abs_median"] = float(np.median(np.abs(acc.kinks)))
    return metrics
