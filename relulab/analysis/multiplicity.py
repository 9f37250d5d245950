r"""Many intervals judged together: one-sided p-values of t-based estimates, Holm's step-down
adjustment and the Bonferroni level at which K intervals hold together — what a claim about
every point of a sweep needs (:class:`relulab.experiments.criteria.Every`) so that it does not
fail somewhere by chance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from relulab.analysis.intervals import LEVEL, Estimate

__all__ = ["holm", "p_beyond", "simultaneous_level"]


def p_beyond(estimate: Estimate, bound: float, above: bool = True) -> float:
    r"""The one-sided p-value that the estimated quantity lies beyond ``bound``: for
    ``above``, of :math:`H_0: \theta \le \text{bound}` against :math:`\theta > \text{bound}`,
    :math:`1 - F_{t,\nu}((\hat\theta - \text{bound})/\mathrm{se})` (below: the other tail).

    Args:
        estimate: a t-based estimate (it carries ``se`` and ``dof``).
        bound: the bound.
        above: test for the quantity above the bound (else below it).

    Returns:
        The p-value; 1.0 for an undefined or zero standard error with the value on the null's
        side, 0.0 with it beyond.

    Example:
        >>> from relulab.analysis.intervals import mean_ci
        >>> round(p_beyond(mean_ci([1.1, 1.2, 1.3, 1.15, 1.25]), 1.0), 4)
        0.0024
    """
    if estimate.se is None or estimate.dof is None:
        raise ValueError(f"{estimate.method or 'this'} interval carries no standard error")
    distance = (estimate.value - bound) if above else (bound - estimate.value)
    if not (math.isfinite(estimate.se) and estimate.se > 0):
        return 0.0 if distance > 0 else 1.0
    return float(stats.t.sf(distance / estimate.se, estimate.dof))


def holm(pvalues: Sequence[float]) -> np.ndarray:
    r"""Holm's step-down adjusted p-values (Holm 1979): sort :math:`p_{(1)} \le … \le
    p_{(K)}`, :math:`\tilde p_{(i)} = \max_{j \le i} \min(1, (K - j + 1)\,p_{(j)})`. A point is
    significant at family level α when its adjusted p-value is below α; the family-wise error
    stays at most α for any dependence between the points.

    Args:
        pvalues: one p-value per point.

    Returns:
        The adjusted p-values, in the input's order.

    Example:
        >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
        [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def simultaneous_level(points: int, level: float = LEVEL) -> float:
    r"""The per-point confidence level at which ``points`` intervals hold together at ``level``
    (Bonferroni): :math:`1 - (1 - \text{level})/K`.

    A claim about every point of a sweep ("the bound holds at every layer") judged on per-point
    95 % intervals fails somewhere by chance far more often than 5 % of the time; computing each
    point's interval at this level keeps the family's level (the criterion
    :class:`relulab.experiments.criteria.Every` checks it).

    Args:
        points: the number K of intervals judged together (at least 1).
        level: the family's confidence level.

    Returns:
        The per-point level.

    Example:
        >>> simultaneous_level(5)
        0.99
    """
    if points < 1:
        raise ValueError(f"points must be at least 1, got {points}")
    return round(1.0 - (1.0 - level) / points, 12)
