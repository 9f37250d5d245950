"""Readings of ``init-training``'s stored units, fixed before looking at results; the claims,
the metrics and the figures compute every number through them.

* **ratio profile at init** (seed §3.3, Fig. 2 middle/right): per network the ratio r_l of
  seed eq. 9 at every Linear/Conv layer, ``(networks, layers)``; a convolution's feature is
  its channel, with statistics over samples *and* positions [I: the seed does not say how it
  pools a feature map]. Increments r_{l+1} − r_l are paired per network. The wide-MLP curve
  is :func:`relulab.theory.sample_statistics` with layer 1 = the seed's layer 0. The same
  pass reads the ratio with a feature per (channel, position), statistics over samples only
  (a metric: the other reading of eq. 9 for a feature map).
* **rise at every layer** (§3.3, ALL-CNN-C): the rise from the first layer to the last, and
  per layer step the paired increment with its Student-t estimate (for a Holm test of "no step
  falls").
* **excess over the wide MLP from the first pooling** (§3.3, UNet): r_l − wide-MLP m/v at each
  layer from ``first`` to ``upto``, intervals at the simultaneous level of those layers.
* **divergence** (one policy, :data:`DIVERGENCE`): a network diverged when the engine froze it
  or any recorded minibatch loss is non-finite (no cap: the comparisons are rank-based, so a
  loss that grows large but stays finite already ranks by its size). Every reading below counts
  a diverged network the same way — as ranked last, never dropped, never given a sentinel loss.
* **fastest-converging learning rate** (§5.2): per init, the lr with the fewest diverged seeds,
  then the lowest mean over its other seeds of the run's mean ln-loss (``lr_selection =
  mean_log_loss``) or of the late loss: a diverged run ranks last (infinitely slow).
* **training speed** (§5.3, Fig. 4): per seed the mean ln-loss over the recorded steps (an area
  under the log-loss curve: lower = faster), at each init's best lr. Two inits are compared by
  the probability that a scale+bias run ends faster than its paired scale run (paired by seed
  index: same data stream, same N(0, 1) draw), a diverged run ranking last, with the exact
  Clopper–Pearson interval (:func:`~relulab.analysis.superiority_ci`); the paired difference
  with Student's t interval is a metric, defined only when no paired run diverged.
* **late loss**: the mean loss over the last ``late_fraction`` of the recorded steps, compared
  the same way.
* **ratios after training**: per layer, the seed-mean ratio at the last recorded step; a layer
  read on a diverged network has no ratio to converge, and its gap counts as infinite.
* **time to loss level**: the first recorded step with loss < ``loss_level`` × the label entropy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relulab.analysis import (
    DivergencePolicy,
    Estimate,
    divergence_counts,
    first_below,
    mean_ci,
    simultaneous_level,
    superiority_ci,
)
from relulab.experiments.base import Results
from relulab.experiments.init_training.config import LAYERS, InitTrainingConfig
from relulab.experiments.init_training.units import (
    AtInit,
    Training,
    ratios_key,
    train_key,
    training_view,
)
from relulab.theory import sample_statistics

__all__ = [
    "DIVERGENCE",
    "at_init_ratios",
    "at_init_ratios_per_position",
    "excess_from",
    "layer_steps",
    "overall_rise",
    "best_lr_runs",
    "diverged",
    "excess_over_mlp",
    "fall_from_layer",
    "divergence_of",
    "fall_from_peak",
    "faster",
    "last_layer_ratio",
    "late_loss",
    "mean_log_loss",
    "mlp_theory_ratio",
    "paired_difference",
    "peak_layer",
    "ratio_gap",
    "rise",
    "training_unit",
    "training_summary",
    "weakest",
]

#: The one divergence policy of every training reading (module docstring).
DIVERGENCE = DivergencePolicy(quantity="minibatch loss")


def mlp_theory_ratio(layers: int) -> np.ndarray:
    """The wide-MLP m/v per layer, layer 1 first (the seed's layer 0: ρ = 0)."""
    return sample_statistics(layers).mean_to_std_ratio


def weakest(estimates: list[Estimate]) -> tuple[int, Estimate]:
    """The estimate that most threatens "every one is above 0": one wholly below 0 if any,
    else the one with the lowest lower bound."""
    for index, estimate in enumerate(estimates):
        if estimate.high < 0:
            return index, estimate
    index = int(np.argmin([e.low for e in estimates]))
    return index, estimates[index]


# ---------------------------------------------------------------------------------------------
# At initialisation: r is ``(networks, layers)``.
# ---------------------------------------------------------------------------------------------
def _at_init(results: Results, task: str) -> AtInit:
    key = ratios_key(task)
    return AtInit.read(results[key], key)


def at_init_ratios(results: Results, task: str) -> np.ndarray:
    """The at-init ratio of every network and layer of ``task``, ``(networks, layers)``."""
    return _at_init(results, task).ratio


def at_init_ratios_per_position(results: Results, task: str) -> np.ndarray | None:
    """The at-init ratio with a feature per (channel, position), ``(networks, layers)``; None
    for a unit stored before it was recorded."""
    return _at_init(results, task).ratio_per_position


def overall_rise(r: np.ndarray) -> Estimate:
    """r at the last layer − r at the first, paired per network (Student t)."""
    return mean_ci(r[:, -1] - r[:, 0])


def layer_steps(r: np.ndarray) -> dict[str, Estimate]:
    """Per layer step ``"l→l+1"`` the increment r_{l+1} − r_l, paired per network (Student t,
    95 %: :class:`~relulab.experiments.criteria.NoneBeyond` corrects for the 9 steps)."""
    return {f"{k + 1}→{k + 2}": mean_ci(r[:, k + 1] - r[:, k]) for k in range(r.shape[1] - 1)}


def excess_from(r: np.ndarray, first: int, upto: int) -> dict[str, Estimate]:
    """Per layer ``"l=…"`` from ``first`` to ``upto`` (from 1) r_l − wide-MLP m/v, each at the
    simultaneous level of those layers (Bonferroni)."""
    theory = mlp_theory_ratio(r.shape[1])
    layers = range(first - 1, min(upto, r.shape[1]))
    level = simultaneous_level(len(layers))
    return {f"l={k + 1}": mean_ci(r[:, k] - theory[k]).at_level(level) for k in layers}


def rise(r: np.ndarray) -> tuple[int, Estimate]:
    """The least certain layer step r_{l+1} − r_l (paired over networks, Student t): its
    index k (the step from layer k + 1 to k + 2) and estimate (:func:`weakest`)."""
    return weakest([mean_ci(r[:, k + 1] - r[:, k]) for k in range(r.shape[1] - 1)])


def last_layer_ratio(r: np.ndarray) -> Estimate:
    """The ratio at the last layer, mean over networks (Student t)."""
    return mean_ci(r[:, -1])


def peak_layer(r: np.ndarray) -> int:
    """The layer (from 1) of the largest network-mean ratio."""
    return int(np.argmax(r.mean(axis=0))) + 1


def fall_from_layer(r: np.ndarray, layer: int) -> Estimate:
    """r at the last layer / r at ``layer`` (from 1), per network, mean over networks (Student
    t): the fall from a layer fixed before the run (the seed's stated layer 12), reported in
    ``unet-ratio-falls``' detail (bd01425 judged it against 1; issue 43 withdrew that).

    Example:
        >>> r = np.array([[1.0, 2.0, 1.0], [1.0, 2.0, 1.2], [1.0, 2.0, 0.8]])
        >>> round(fall_from_layer(r, 2).value, 6)
        0.5
    """
    return mean_ci(r[:, -1] / r[:, layer - 1])


def fall_from_peak(r: np.ndarray) -> Estimate:
    """r at the last layer / r at the layer of the largest network-mean ratio
    (:func:`peak_layer`, chosen from the same nets), per network, mean over networks (Student
    t): ``unet-ratio-falls``' reading, registered before the cpu run (bd01425 replaced it after
    that run; issue 43 restored it). Picking the peak from the same nets raises it, so the
    reading leans towards a fall (in the seed's favour), never against it.

    Example:
        >>> r = np.array([[1.0, 2.0, 1.0], [1.0, 2.0, 1.2], [1.0, 2.0, 0.8]])
        >>> round(fall_from_peak(r).value, 6)
        0.5
    """
    return mean_ci(r[:, -1] / r[:, peak_layer(r) - 1])


def excess_over_mlp(r: np.ndarray, upto: int) -> tuple[int, Estimate]:
    """r_l − wide-MLP m/v at the least certain of layers 1 … ``upto`` (:func:`weakest`): its
    index (layer − 1) and estimate."""
    theory = mlp_theory_ratio(r.shape[1])
    return weakest([mean_ci(r[:, k] - theory[k]) for k in range(min(upto, r.shape[1]))])


# ---------------------------------------------------------------------------------------------
# Training.
# ---------------------------------------------------------------------------------------------
def mean_log_loss(loss: np.ndarray) -> np.ndarray:
    """Per run the mean ln-loss over the recorded steps (last axis); ``inf`` (ranked last) if a
    recorded loss is NaN or infinite — the run diverged (a loss of exactly 0 gives ``-inf``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.log(loss).mean(axis=-1)
    return np.where(np.isnan(value) | (value == np.inf), np.inf, value)


def late_loss(loss: np.ndarray, fraction: float) -> np.ndarray:
    """Per run the mean loss over the last ``fraction`` of the recorded steps (at least one)."""
    tail = max(1, math.ceil(fraction * loss.shape[-1]))
    value = loss[..., -tail:].mean(axis=-1)
    return np.where(np.isfinite(value), value, np.inf)


def paired_difference(first: np.ndarray, second: np.ndarray) -> Estimate:
    """``first − second`` paired by seed, with Student's t interval; NaN if a run diverged
    (a metric: the claims compare with :func:`faster`, which ranks a diverged run last)."""
    difference = first - second
    if not np.all(np.isfinite(difference)):
        return Estimate(float("nan"), float("nan"), float("nan"), len(difference))
    return mean_ci(difference)


def faster(
    first: np.ndarray,
    second: np.ndarray,
    first_diverged: np.ndarray,
    second_diverged: np.ndarray,
) -> Estimate:
    """The probability that a run of the first init ends with a lower score (faster, or a
    lower late loss) than its paired run of the second, a diverged run ranking last: the
    one divergence-aware comparison of :func:`~relulab.analysis.superiority_ci` (exact
    Clopper–Pearson over the seeds paired in order; ``n`` counts the pairs that did not tie).

    Example:
        >>> estimate = faster(np.zeros(8), np.ones(8), np.zeros(8, bool), np.zeros(8, bool))
        >>> estimate.value, round(estimate.low, 3)
        (1.0, 0.631)
    """
    return superiority_ci(first, second, first_diverged, second_diverged)


def ratio_gap(
    first: np.ndarray, second: np.ndarray, diverged: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Per layer |r_first − r_second| / their mean, from the seed-mean ratios at the last
    recorded step of ``(runs, layers, T)`` curves; and its largest value. A run that diverged
    (``diverged``, over the runs of both, first's then second's) has no ratio to converge: the
    gap is then infinite at every layer."""
    if diverged is not None and np.asarray(diverged, bool).any():
        relative = np.full(first.shape[1], np.inf)
        return float("inf"), relative
    a = first[:, :, -1].mean(axis=0)
    b = second[:, :, -1].mean(axis=0)
    relative = np.abs(a - b) / (0.5 * (a + b))
    largest = float(np.nanmax(relative)) if not np.isnan(relative).all() else float("nan")
    return largest, relative


def training_unit(results: Results, task: str, optimiser: str, init: str) -> Training:
    """The training unit of ``task``, ``optimiser`` and ``init``, read as its view."""
    key = train_key(task, optimiser, init)
    return training_view(LAYERS[task]).read(results[key], key)


def diverged(unit: Training) -> np.ndarray:
    """Per run of the unit, whether it diverged (:data:`DIVERGENCE`)."""
    return DIVERGENCE.diverged(unit.diverged, unit.loss)


def best_lr_runs(unit: Training, config: InitTrainingConfig) -> tuple[float, np.ndarray]:
    """The fastest-converging lr of one training unit and its runs' row indices, ordered by
    seed index (module docstring): the fewest diverged seeds, then the lowest mean score of
    the others."""
    lrs = np.array([c["lr"] for c in unit.conditions])
    score = (
        mean_log_loss(unit.loss)
        if config.lr_selection == "mean_log_loss"
        else late_loss(unit.loss, config.late_fraction)
    )
    lost = diverged(unit)
    candidates = sorted(set(lrs.tolist()))

    def rank(lr: float) -> tuple[int, float]:
        rows = lrs == lr
        kept = score[rows & ~lost]
        return int(lost[rows].sum()), float(np.mean(kept)) if len(kept) else np.inf

    best = min(candidates, key=rank)
    rows = np.flatnonzero(lrs == best)
    order = np.argsort([unit.conditions[i]["seed_index"] for i in rows])
    return best, rows[order]


def training_summary(
    results: Results, config: InitTrainingConfig, task: str, optimiser: str
) -> dict[str, dict[str, Any]]:
    """Per init: best lr, its runs, which diverged, per-seed mean ln-loss, late loss, time to
    level and the ratios during training."""
    summary = {}
    for init in config.inits:
        unit = training_unit(results, task, optimiser, init)
        lr, rows = best_lr_runs(unit, config)
        loss = unit.loss[rows]
        level = config.loss_level * float(unit.label_entropy[0])
        summary[init] = {
            "lr": lr,
            "rows": rows,
            "diverged": diverged(unit)[rows],
            "speed": mean_log_loss(loss),
            "late": late_loss(loss, config.late_fraction),
            "time_to_level": np.array([first_below(unit.steps, c, level) for c in loss]),
            "level": level,
            "ratios": unit.layer_ratios(rows),
            "steps": unit.steps,
            "loss": loss,
        }
    return summary


def divergence_of(summary: dict, inits: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """Per init of ``inits``: (runs that diverged, runs) at its best lr, as a claim reads them."""
    flags = np.concatenate([summary[init]["diverged"] for init in inits])
    groups, start = {}, 0
    for init in inits:
        count = len(summary[init]["diverged"])
        groups[init] = np.arange(start, start + count)
        start += count
    return divergence_counts(flags, groups)
