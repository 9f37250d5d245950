r"""Measured values with confidence intervals: what every stochastic claim reports.

An :class:`Estimate` is a value, the bounds of its confidence interval (95 % by default), the
number of independent samples behind it and how the interval was computed. The verdict of a claim
built on an estimate follows the interval, not the point value (:mod:`relulab.experiments.claims`).

* :func:`mean_ci` — the mean of independent samples (networks, seeds) with a bias-corrected and
  accelerated (BCa) bootstrap interval (Efron 1987), through :func:`scipy.stats.bootstrap`.
* :func:`statistic_ci` — any statistic of one or several paired samples, same bootstrap.
* :func:`rows_statistic_ci` — a statistic of a whole table of per-network curves, same
  bootstrap over the rows.
* :func:`mean_difference_ci` — the difference of two independent samples' means, same bootstrap.
* :func:`proportion_ci` — a fraction of successes with the Wilson score interval (Wilson 1927).
* :func:`correlation_ci` — Pearson or Spearman correlation with the Fisher-z interval; for
  Spearman the standard error :math:`\sqrt{1.06/(n-3)}` of Fieller, Hartley & Pearson (1957).

Resampling is seeded, so a report rebuilt from the same store shows the same intervals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "Estimate",
    "argmin_ci",
    "correlation_ci",
    "mean_ci",
    "proportion_ci",
    "statistic_ci",
    "rows_statistic_ci",
    "mean_difference_ci",
]

LEVEL = 0.95
RESAMPLES = 9999
SEED = 20260101


@dataclass(frozen=True)
class Estimate:
    """A measured value with its ``level`` confidence interval ``[low, high]`` from ``n`` samples.

    Example:
        >>> mean_ci([0.9, 1.1, 1.0, 1.05, 0.95]).describe()  # doctest: +SKIP
        '1 [0.94, 1.05], n = 5'
    """

    value: float
    low: float
    high: float
    n: int
    level: float = LEVEL
    method: str = ""

    def __float__(self) -> float:
        return float(self.value)

    def describe(self, digits: int = 3) -> str:
        """``value [low, high], n = N`` with ``digits`` significant digits."""
        return (
            f"{self.value:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}], n = {self.n}"
        )


def _unbounded(value: float, n: int, method: str) -> Estimate:
    """Too few samples for an interval: it is the whole line, so no verdict can rest on it."""
    return Estimate(value, -math.inf, math.inf, n, LEVEL, method)


def statistic_ci(
    samples: Sequence[Sequence[float]] | np.ndarray,
    statistic: Callable[..., float],
    paired: bool = True,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    vectorized: bool = False,
) -> Estimate:
    r"""``statistic(*samples)`` with a BCa bootstrap confidence interval.

    Resamples the samples jointly when ``paired`` (rows belong together: the same network or
    seed measured twice), independently otherwise (Efron 1987; :func:`scipy.stats.bootstrap`).
    A statistic that is constant over resamples gets the degenerate interval ``[v, v]``;
    fewer than 3 samples give the unbounded interval (no verdict can rest on it).

    Args:
        samples: one or several 1-D arrays of samples.
        statistic: a function of as many 1-D arrays, returning a number.
        paired: resample the arrays' rows together.
        level: confidence level.
        resamples: number of bootstrap resamples.
        seed: seed of the resampling (intervals are reproducible).
        vectorized: ``statistic`` takes an ``axis`` keyword and reduces along it (faster).

    Returns:
        An :class:`Estimate`; ``n`` is the length of the first sample.

    Example:
        >>> statistic_ci([[1.0, 2.0, 3.0, 4.0]], np.median).value
        2.5
    """
    arrays = [np.asarray(s, dtype=np.float64).ravel() for s in samples]
    value = float(statistic(*arrays))
    n = len(arrays[0])
    method = f"BCa bootstrap, {resamples} resamples"
    if n < 3 or not math.isfinite(value):
        return _unbounded(value, n, method)
    if all(np.ptp(a) == 0 for a in arrays):
        return Estimate(value, value, value, n, level, "exact (constant samples)")
    batched = statistic if vectorized else (lambda *a, axis=-1: _vectorised(statistic, a, axis))
    low, high = _bootstrap(arrays, batched, paired, level, resamples, seed, "BCa")
    if not (math.isfinite(low) and math.isfinite(high)):  # BCa undefined (e.g. a tie-heavy sample)
        low, high = _bootstrap(arrays, batched, paired, level, resamples, seed, "percentile")
        method = f"percentile bootstrap, {resamples} resamples"
    return Estimate(value, float(low), float(high), n, level, method)


def _bootstrap(
    arrays: list[np.ndarray],
    statistic: Callable[..., np.ndarray],
    paired: bool,
    level: float,
    resamples: int,
    seed: int,
    method: str,
) -> tuple[float, float]:
    with np.errstate(all="ignore"):
        result = stats.bootstrap(
            arrays,
            statistic,
            paired=paired,
            vectorized=True,
            confidence_level=level,
            n_resamples=resamples,
            method=method,
            random_state=np.random.default_rng(seed),
        )
    low, high = result.confidence_interval
    return float(low), float(high)


def _vectorised(statistic: Callable[..., float], arrays: tuple, axis: int) -> np.ndarray:
    """Apply a statistic of 1-D arrays along ``axis`` of each (batched) resample array."""
    moved = [np.moveaxis(np.asarray(a), axis, -1) for a in arrays]
    batch = moved[0].shape[:-1]
    flat = [m.reshape(-1, m.shape[-1]) for m in moved]
    values = np.array([statistic(*rows) for rows in zip(*flat, strict=True)], dtype=np.float64)
    return values.reshape(batch)


def mean_ci(
    values: Sequence[float] | np.ndarray,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Estimate:
    """The mean of independent samples with a BCa bootstrap interval (see :func:`statistic_ci`).

    Example:
        >>> estimate = mean_ci([0.9, 1.1, 1.0, 1.05, 0.95])
        >>> estimate.low < 1.0 < estimate.high
        True
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    return statistic_ci(
        [values], np.mean, level=level, resamples=resamples, seed=seed, vectorized=True
    )


def proportion_ci(successes: int, n: int, level: float = LEVEL) -> Estimate:
    r"""A fraction :math:`k/n` with the Wilson score interval (Wilson 1927).

    .. math::
        \frac{\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    Example:
        >>> proportion_ci(9, 10).describe()
        '0.9 [0.596, 0.982], n = 10'
    """
    if n < 1:
        return _unbounded(float("nan"), 0, "Wilson score")
    interval = stats.binomtest(int(successes), int(n)).proportion_ci(level, method="wilson")
    return Estimate(successes / n, float(interval.low), float(interval.high), n, level, "Wilson")


def correlation_ci(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    method: str = "spearman",
    level: float = LEVEL,
) -> Estimate:
    r"""Pearson or Spearman correlation of paired samples with a Fisher-z interval.

    :math:`z = \operatorname{artanh} \rho`, standard error :math:`1/\sqrt{n-3}` (Pearson) or
    :math:`\sqrt{1.06/(n-3)}` (Spearman; Fieller, Hartley & Pearson 1957), interval
    :math:`\tanh(z \pm z_{(1+\text{level})/2}\,\mathrm{se})`.

    Example:
        >>> round(correlation_ci(range(10), range(10)).value, 12)
        1.0
    """
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    x, y = np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel()
    n = len(x)
    if n != len(y):
        raise ValueError(f"x has {n} samples but y has {len(y)}")
    test = stats.spearmanr if method == "spearman" else stats.pearsonr
    rho = float(test(x, y)[0]) if n >= 2 else float("nan")
    label = f"Fisher z ({method})"
    if n < 4 or not math.isfinite(rho):
        return _unbounded(rho, n, label)
    if abs(rho) == 1.0:
        return Estimate(rho, rho, rho, n, level, label)
    se = math.sqrt((1.06 if method == "spearman" else 1.0) / (n - 3))
    z = math.atanh(rho)
    half = stats.norm.ppf(0.5 + level / 2) * se
    return Estimate(rho, math.tanh(z - half), math.tanh(z + half), n, level, label)


def argmin_ci(
    grid: Sequence[float] | np.ndarray,
    samples: np.ndarray,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Estimate:
    r"""Where the mean curve over independent samples is lowest, with a bootstrap interval.

    ``samples[i, k]`` is sample i's value (a network, a seed) at grid point k. The statistic is
    :math:`\mathrm{grid}[\arg\min_k \frac1n\sum_i \mathrm{samples}_{ik}]`; the rows are
    resampled together (a paired design: one seed measured at every grid point). The argmin is
    a grid point, so the percentile interval is used (BCa needs a smooth statistic). E.g. the
    shift b of least Δ over a sweep of seed 000.

    Args:
        grid: the grid points, ``(K,)``.
        samples: ``(n, K)`` values.
        level: confidence level.
        resamples: number of bootstrap resamples.
        seed: seed of the resampling.

    Returns:
        An :class:`Estimate` with ``n`` the number of rows; fewer than 3 rows give the unbounded
        interval.

    Example:
        >>> curves = np.array([[3.0, 1.0, 2.0], [3.1, 1.2, 2.0], [2.9, 0.9, 2.2]])
        >>> argmin_ci([0.1, 0.2, 0.3], curves).describe()
        '0.2 [0.2, 0.2], n = 3'
    """
    grid = np.asarray(grid, dtype=np.float64)
    samples = np.asarray(samples, dtype=np.float64)
    n = samples.shape[0]
    value = float(grid[int(np.argmin(samples.mean(axis=0)))])
    method = f"percentile bootstrap of the argmin, {resamples} resamples"
    if n < 3:
        return _unbounded(value, n, method)
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, size=(resamples, n))
    means = samples[rows].mean(axis=1)  # (resamples, K)
    picks = grid[np.argmin(means, axis=1)]
    tail = (1 - level) / 2
    low, high = np.quantile(picks, [tail, 1 - tail], method="inverted_cdf")
    return Estimate(value, float(low), float(high), n, level, method)


def rows_statistic_ci(
    rows: Sequence[Sequence[float]] | np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray | float],
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Estimate:
    r"""A statistic of a whole table of per-network rows, with a BCa bootstrap over the rows.

    For readings that need every network's curve at once — the smallest value of the *mean*
    curve, the largest excess of the mean curve over a bound, the growth of the mean curve
    between two layers — resample the networks (the rows of an ``(n, k)`` table), recompute
    ``statistic`` on each resampled table and take the BCa interval (:func:`statistic_ci` on the
    row indices). All resamples are evaluated in one call: ``statistic`` receives a stack of
    tables ``(..., m, k)`` and reduces the last two axes (write ``mean(axis=-2)``, then reduce
    ``axis=-1``).

    Args:
        rows: ``(n, k)``: one row per independent sample (network, seed), e.g. a curve.
        statistic: a function of a stack of tables ``(..., m, k)`` returning ``(...)``.
        level: confidence level.
        resamples: number of bootstrap resamples.
        seed: seed of the resampling.

    Returns:
        An :class:`Estimate` with ``n`` the number of rows.

    Example:
        >>> table = np.array([[1.0, 2.0], [1.2, 2.2], [0.8, 1.9], [1.1, 2.1]])
        >>> estimate = rows_statistic_ci(table, lambda t: t.mean(axis=-2).max(axis=-1))
        >>> round(estimate.value, 3), estimate.n
        (2.05, 4)
    """
    table = np.asarray(rows, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"rows must be a 2-D table, got shape {table.shape}")

    def on_rows(picked: np.ndarray, axis: int = -1) -> np.ndarray:
        index = np.moveaxis(np.asarray(picked), axis, -1).astype(int)
        return np.asarray(statistic(table[index]), dtype=np.float64)

    indices = np.arange(len(table), dtype=np.float64)
    return statistic_ci(
        [indices], on_rows, level=level, resamples=resamples, seed=seed, vectorized=True
    )


def mean_difference_ci(
    first: Sequence[float] | np.ndarray,
    second: Sequence[float] | np.ndarray,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Estimate:
    r""":math:`\bar a - \bar b` of two independent samples (e.g. two initialisations' networks)
    with a BCa bootstrap interval, each sample resampled on its own (:func:`statistic_ci`,
    ``paired=False``); ``n`` is the smaller sample's size.

    Example:
        >>> estimate = mean_difference_ci([2.0, 2.1, 1.9, 2.05], [1.0, 1.1, 0.9, 0.95])
        >>> round(estimate.value, 3), estimate.low > 0
        (1.025, True)
    """
    a = np.asarray(first, dtype=np.float64).ravel()
    b = np.asarray(second, dtype=np.float64).ravel()
    estimate = statistic_ci(
        [a, b],
        lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        paired=False,
        level=level,
        resamples=resamples,
        seed=seed,
        vectorized=True,
    )
    if min(len(a), len(b)) < 3:
        return Estimate(estimate.value, -math.inf, math.inf, min(len(a), len(b)), level)
    return Estimate(
        estimate.value, estimate.low, estimate.high, min(len(a), len(b)), level, estimate.method
    )
