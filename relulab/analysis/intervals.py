r"""Measured values with confidence intervals: what every stochastic claim reports.

An :class:`Estimate` is a value, the bounds of its confidence interval (95 % by default), the
number of independent samples behind it and how the interval was computed. The verdict of a claim
built on an estimate follows the interval, not the point value (:mod:`relulab.experiments.claims`).

* :func:`mean_ci` — the mean of independent samples (networks, seeds) with Student's t interval.
* :func:`statistic_ci` — any smooth statistic of one or several (paired or independent) samples
  with the jackknife standard error and Student-t quantiles (for a mean this *is* Student's t,
  for a difference of two independent means Welch's); the BCa bootstrap on request.
* :func:`rows_statistic_ci` — a statistic of a whole table of per-network curves, jackknifed
  over the rows.
* :func:`mean_difference_ci` — the difference of two independent samples' means (Welch).
* :func:`argmin_ci` — where a mean curve is lowest: the grid points that no other point beats
  significantly (paired one-sided t-tests, Bonferroni over the grid).
* :func:`proportion_ci` — a fraction of successes with the exact Clopper–Pearson interval.
* :func:`correlation_ci` — Pearson or Spearman correlation with the Fisher-z interval; for
  Spearman the standard error :math:`\sqrt{1.06/(n-3)}` of Fieller, Hartley & Pearson (1957).
* :func:`simultaneous_level` — the per-point level that keeps a family of K intervals at its
  level (Bonferroni), for claims about every point of a sweep; :meth:`Estimate.at_level`
  recomputes a t interval at it.
* :func:`p_beyond` and :func:`holm` — one-sided p-values of t-based estimates against a bound,
  and Holm's step-down adjustment, for "no point significantly beyond the bound".

**Why t-based intervals.** A bootstrap interval is too short at the sample sizes experiments
have: under the null, a 95 % BCa interval of a mean difference excluded the truth on one side in
13 % of draws at n = 3 and 6.7 % at n = 5 (nominal 2.5 %), and a BCa interval of a mean still
missed 3.5 % / 3.7 % per side at n = 30 (measured for issue 28, normal samples, 6000 draws).
The jackknife-t intervals keep their level: ``tests/analysis/test_coverage.py`` simulates the null
for every interval function at n = 3, 5, 10 and 30 and holds each side's miss rate to
2.5 % ± 1 % (discrete intervals — a proportion's, the argmin's grid set — may only miss less).

The bootstrap (``method="bca"``) is seeded, so a report rebuilt from the same store shows the
same intervals; the default intervals are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

__all__ = [
    "Estimate",
    "argmin_ci",
    "correlation_ci",
    "mean_ci",
    "mean_difference_ci",
    "proportion_ci",
    "rows_statistic_ci",
    "statistic_ci",
]

LEVEL = 0.95
RESAMPLES = 9999
SEED = 20260101
JACKKNIFE = "jackknife standard error, Student t"
SPEARMAN_MIN = 10  # fewest pairs for which Spearman's Fisher-z interval keeps its level
_CHUNK_VALUES = 4_000_000  # leave-one-out resamples are evaluated in chunks of this many values

IntervalMethod = Literal["jackknife", "bca"]


@dataclass(frozen=True)
class Estimate:
    """A measured value with its ``level`` confidence interval ``[low, high]`` from ``n`` samples.

    Example:
        >>> mean_ci([0.9, 1.1, 1.0, 1.05, 0.95]).describe()
        '1 [0.902, 1.1], n = 5'
    """

    value: float
    low: float
    high: float
    n: int
    level: float = LEVEL
    method: str = ""
    se: float | None = None  # the standard error behind a t interval (for p-values)
    dof: float | None = None  # its degrees of freedom

    def __float__(self) -> float:
        return float(self.value)

    def at_level(self, level: float) -> Estimate:
        """The same t interval at another confidence level (e.g. a simultaneous one).

        Raises:
            ValueError: the estimate carries no standard error (not a t interval).

        Example:
            >>> wide = mean_ci([1.0, 2.0, 3.0, 4.0]).at_level(0.99)
            >>> round(wide.low, 3), round(wide.high, 3)
            (-1.27, 6.27)
        """
        if self.se is None or self.dof is None:
            raise ValueError(f"{self.method or 'this'} interval carries no standard error")
        half = float(stats.t.ppf(0.5 + level / 2, self.dof)) * self.se
        return Estimate(
            self.value,
            self.value - half,
            self.value + half,
            self.n,
            level,
            self.method,
            self.se,
            self.dof,
        )

    def describe(self, digits: int = 3) -> str:
        """``value [low, high], n = N`` with ``digits`` significant digits."""
        return (
            f"{self.value:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}], n = {self.n}"
        )


# a statistic of 1-D samples: a number, or an array along its axis keyword (``vectorized``)
Statistic = Callable[..., float | np.floating | np.ndarray]


def _unbounded(value: float, n: int, method: str) -> Estimate:
    """Too few samples for an interval: it is the whole line, so no verdict can rest on it."""
    return Estimate(value, -math.inf, math.inf, n, LEVEL, method)


def statistic_ci(
    samples: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    statistic: Statistic,
    paired: bool = True,
    level: float = LEVEL,
    method: IntervalMethod = "jackknife",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    vectorized: bool = False,
) -> Estimate:
    r"""``statistic(*samples)`` with a confidence interval that keeps its level at small n.

    The default interval is the jackknife standard error with Student-t quantiles,

    .. math::
        \hat\theta \pm t_{\nu,(1+\text{level})/2}\,\widehat{\mathrm{se}}_{\mathrm{jack}},
        \qquad \widehat{\mathrm{se}}^2_{\mathrm{jack}}
        = \frac{n-1}{n}\sum_i \bigl(\hat\theta_{(i)} - \hat\theta_{(\cdot)}\bigr)^2,

    with :math:`\nu = n - 1` for paired rows (row i left out of every sample at once) and, for
    independent samples, the sum of each sample's jackknife variance with the
    Welch–Satterthwaite :math:`\nu` (Efron & Tibshirani 1993, ch. 11). For a mean this is
    Student's t interval exactly, for a difference of independent means Welch's. The jackknife
    suits smooth statistics (means, ratios and differences of means, a mean curve at a point
    fixed before the run); a maximum over points is not one — judge every point at
    :func:`simultaneous_level` instead. A ratio whose denominator is noisy (coefficient of
    variation of its mean above ≈ 0.1) gets a lopsided interval at n ≤ 10 (measured: 1.2 % /
    3.7 % misses at n = 5 for a denominator mean with CV 0.33). ``method="bca"`` gives the
    bias-corrected and accelerated bootstrap (Efron 1987; :func:`scipy.stats.bootstrap`),
    which reaches its level only at large n (module docstring).

    A statistic that is constant over the samples gets the degenerate interval ``[v, v]``;
    fewer than 3 samples give the unbounded interval (no verdict can rest on it).

    Args:
        samples: one or several 1-D arrays of samples.
        statistic: a function of as many 1-D arrays, returning a number.
        paired: the arrays' rows belong together (the same network or seed measured twice).
        level: confidence level.
        method: ``"jackknife"`` (default) or ``"bca"``.
        resamples: number of bootstrap resamples (``method="bca"``).
        seed: seed of the resampling (``method="bca"``).
        vectorized: ``statistic`` takes an ``axis`` keyword and reduces along it (faster).

    Returns:
        An :class:`Estimate`; ``n`` is the length of the first sample.

    Example:
        >>> estimate = statistic_ci([[1.0, 2.0, 3.0, 4.0], [2.0, 4.1, 5.9, 8.0]],
        ...                         lambda a, b: np.mean(b) / np.mean(a))
        >>> round(estimate.value, 3), estimate.low < 2.0 < estimate.high
        (2.0, True)
    """
    if method not in ("jackknife", "bca"):
        raise ValueError(f"method must be 'jackknife' or 'bca', got {method!r}")
    arrays = [np.asarray(s, dtype=np.float64).ravel() for s in samples]
    value = float(statistic(*arrays))
    n = len(arrays[0])
    label = JACKKNIFE if method == "jackknife" else f"BCa bootstrap, {resamples} resamples"
    if min(len(a) for a in arrays) < 3 or not math.isfinite(value):
        return _unbounded(value, n, label)
    if all(np.ptp(a) == 0 for a in arrays):
        return Estimate(value, value, value, n, level, "exact (constant samples)")
    if method == "jackknife":
        se, dof = _jackknife_se(arrays, statistic, paired, vectorized)
        return _t_estimate(value, se, dof, n, level, label)
    batched = statistic if vectorized else (lambda *a, axis=-1: _vectorised(statistic, a, axis))
    low, high = _bootstrap(arrays, batched, paired, level, resamples, seed, "BCa")
    if not (math.isfinite(low) and math.isfinite(high)):  # BCa undefined (e.g. a tie-heavy sample)
        low, high = _bootstrap(arrays, batched, paired, level, resamples, seed, "percentile")
        label = f"percentile bootstrap, {resamples} resamples"
    return Estimate(value, float(low), float(high), n, level, label)


def _leave_one_out(
    arrays: list[np.ndarray],
    statistic: Statistic,
    which: int | None,
    vectorized: bool,
) -> np.ndarray:
    """The statistic with each row left out: of every array (``which=None``, paired rows) or of
    array ``which`` only (independent samples)."""
    size = len(arrays[0] if which is None else arrays[which])
    if not vectorized:
        return np.array(
            [
                float(
                    statistic(
                        *[
                            np.delete(a, i) if which in (None, k) else a
                            for k, a in enumerate(arrays)
                        ]
                    )
                )
                for i in range(size)
            ]
        )
    keep = ~np.eye(size, dtype=bool)
    index = np.nonzero(keep)[1].reshape(size, size - 1)  # row i: every index but i
    width = sum(len(a) for a in arrays)
    chunk = max(1, _CHUNK_VALUES // max(width, 1))
    values = []
    for start in range(0, size, chunk):
        rows = index[start : start + chunk]
        picked = [
            a[rows] if which in (None, k) else np.broadcast_to(a, (len(rows), len(a)))
            for k, a in enumerate(arrays)
        ]
        values.append(np.asarray(statistic(*picked, axis=-1), dtype=np.float64).reshape(-1))
    return np.concatenate(values)


def _jackknife_variance(replicates: np.ndarray) -> float:
    size = len(replicates)
    return float((size - 1) / size * np.sum((replicates - replicates.mean()) ** 2))


def _jackknife_se(
    arrays: list[np.ndarray],
    statistic: Statistic,
    paired: bool,
    vectorized: bool,
) -> tuple[float, float]:
    """The jackknife standard error and its degrees of freedom (see :func:`statistic_ci`)."""
    with np.errstate(all="ignore"):
        if paired or len(arrays) == 1:
            replicates = _leave_one_out(arrays, statistic, None, vectorized)
            return math.sqrt(_jackknife_variance(replicates)), float(len(arrays[0]) - 1)
        parts = [
            _jackknife_variance(_leave_one_out(arrays, statistic, k, vectorized))
            for k in range(len(arrays))
        ]
        variance = float(sum(parts))
        spread = sum(p**2 / (len(a) - 1) for p, a in zip(parts, arrays, strict=True))
        dof = variance**2 / spread if spread > 0 else float(min(map(len, arrays)) - 1)
    return math.sqrt(variance), dof


def _t_estimate(value: float, se: float, dof: float, n: int, level: float, label: str) -> Estimate:
    """``value ± t·se``; an undefined standard error gives the unbounded interval."""
    if not math.isfinite(se):
        return Estimate(value, -math.inf, math.inf, n, level, label)
    half = float(stats.t.ppf(0.5 + level / 2, dof)) * se
    return Estimate(value, value - half, value + half, n, level, label, se, dof)


def _bootstrap(
    arrays: list[np.ndarray],
    statistic: Statistic,
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


def _vectorised(statistic: Statistic, arrays: tuple, axis: int) -> np.ndarray:
    """Apply a statistic of 1-D arrays along ``axis`` of each (batched) resample array."""
    moved = [np.moveaxis(np.asarray(a), axis, -1) for a in arrays]
    batch = moved[0].shape[:-1]
    flat = [m.reshape(-1, m.shape[-1]) for m in moved]
    values = np.array([statistic(*rows) for rows in zip(*flat, strict=True)], dtype=np.float64)
    return values.reshape(batch)


def mean_ci(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> Estimate:
    r"""The mean of independent samples with Student's t interval,
    :math:`\bar x \pm t_{n-1,(1+\text{level})/2}\, s/\sqrt n` (exact for normal samples; the
    jackknife interval of :func:`statistic_ci` for the mean).

    Args:
        values: the samples (networks, seeds), at least 3 for a bounded interval.
        level: confidence level.

    Returns:
        An :class:`Estimate`.

    Example:
        >>> estimate = mean_ci([0.9, 1.1, 1.0, 1.05, 0.95])
        >>> estimate.low < 1.0 < estimate.high
        True
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    n = len(values)
    value = float(values.mean()) if n else float("nan")
    if n < 3 or not math.isfinite(value):
        return _unbounded(value, n, "Student t")
    if np.ptp(values) == 0:
        return Estimate(value, value, value, n, level, "exact (constant samples)")
    se = float(values.std(ddof=1)) / math.sqrt(n)
    return _t_estimate(value, se, float(n - 1), n, level, "Student t")


def proportion_ci(successes: int, n: int, level: float = LEVEL) -> Estimate:
    r"""A fraction :math:`k/n` with the Clopper–Pearson interval (Clopper & Pearson 1934).

    The bounds are the Beta quantiles
    :math:`B_{\alpha/2}(k, n-k+1)` and :math:`B_{1-\alpha/2}(k+1, n-k)`, :math:`\alpha =
    1 - \text{level}`: the interval inverts the exact binomial test, so each side misses the
    true fraction with probability at most :math:`\alpha/2` at every n and p. (Wilson's score
    interval, used before issue 28, missed one side with probability up to 14 % at n = 3,
    8 % at n = 5 and 7 % at n = 10 for small p.)

    Example:
        >>> proportion_ci(9, 10).describe()
        '0.9 [0.555, 0.997], n = 10'
    """
    if n < 1:
        return _unbounded(float("nan"), 0, "Clopper-Pearson")
    interval = stats.binomtest(int(successes), int(n)).proportion_ci(level, method="exact")
    return Estimate(
        successes / n, float(interval.low), float(interval.high), n, level, "Clopper-Pearson"
    )


def correlation_ci(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    method: str = "spearman",
    level: float = LEVEL,
) -> Estimate:
    r"""Pearson or Spearman correlation of paired samples with a Fisher-z interval.

    :math:`z = \operatorname{artanh} \rho`, standard error :math:`1/\sqrt{n-3}` (Pearson) or
    :math:`\sqrt{1.06/(n-3)}` (Spearman; Fieller, Hartley & Pearson 1957), interval
    :math:`\tanh(z \pm z_{(1+\text{level})/2}\,\mathrm{se})`. Spearman's interval needs
    :data:`SPEARMAN_MIN` = 10 pairs to keep its level (at n = 5 it missed one side in 4.1 % of
    null draws); below that, and below 4 pairs for Pearson, the interval is unbounded.

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
    if n < (SPEARMAN_MIN if method == "spearman" else 4) or not math.isfinite(rho):
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
) -> Estimate:
    r"""Where the mean curve over independent samples is lowest, with a confidence set.

    ``samples[i, k]`` is sample i's value (a network, a seed) at grid point k, all points
    measured on the same samples (a paired design). The value is
    :math:`\mathrm{grid}[\arg\min_k \bar s_k]`; the interval spans the grid points that no
    other point beats significantly: point k is dropped when a paired one-sided t-test of
    :math:`s_{ik} - s_{ij} > 0` rejects at level :math:`(1-\text{level})/(K-1)` for some j
    (Bonferroni over the other points). The true argmin is dropped only if one of its K − 1
    tests rejects a true null, so the set covers it with probability at least ``level`` at any
    n ≥ 3 (for normal differences). E.g. the shift b of least Δ over a sweep of seed 000.

    Args:
        grid: the grid points, ``(K,)``.
        samples: ``(n, K)`` values.
        level: confidence level.

    Returns:
        An :class:`Estimate` with ``n`` the number of rows and ``[low, high]`` the smallest and
        largest retained grid points; fewer than 3 rows give the unbounded interval.

    Example:
        >>> curves = np.array([[3.0, 1.0, 2.0], [3.1, 1.2, 2.0], [2.9, 0.9, 2.2]])
        >>> argmin_ci([0.1, 0.2, 0.3], curves).describe()
        '0.2 [0.2, 0.2], n = 3'
    """
    grid = np.asarray(grid, dtype=np.float64)
    samples = np.asarray(samples, dtype=np.float64)
    n, points = samples.shape
    value = float(grid[int(np.argmin(samples.mean(axis=0)))])
    method = "paired one-sided t-tests against every other point, Bonferroni"
    if n < 3:
        return _unbounded(value, n, method)
    if points == 1:
        return Estimate(value, value, value, n, level, method)
    differences = samples[:, :, None] - samples[:, None, :]  # (n, k, j): s_k - s_j
    mean = differences.mean(axis=0)
    spread = differences.std(axis=0, ddof=1) / math.sqrt(n)
    critical = float(stats.t.ppf(1 - (1 - level) / (points - 1), n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        beaten = np.where(spread > 0, mean > critical * spread, mean > 0)
    np.fill_diagonal(beaten, False)
    kept = grid[~beaten.any(axis=1)]
    return Estimate(value, float(kept.min()), float(kept.max()), n, level, method)


def rows_statistic_ci(
    rows: Sequence[Sequence[float]] | np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray | float],
    level: float = LEVEL,
    method: IntervalMethod = "jackknife",
) -> Estimate:
    r"""A statistic of a whole table of per-network rows, with an interval over the rows.

    For readings that need every network's curve at once — the mean curve's value at a fixed
    layer, the growth of the mean curve between two layers, a ratio of mean curves — leave out
    (or, with ``method="bca"``, resample) the networks, the rows of an ``(n, k)`` table, and
    recompute ``statistic`` (:func:`statistic_ci` on the row indices). ``statistic`` receives a
    stack of tables ``(..., m, k)`` and reduces the last two axes (write ``mean(axis=-2)``,
    then reduce ``axis=-1``). The jackknife needs a smooth statistic: for "at every layer" use
    one estimate per layer at :func:`simultaneous_level`.

    Args:
        rows: ``(n, k)``: one row per independent sample (network, seed), e.g. a curve.
        statistic: a function of a stack of tables ``(..., m, k)`` returning ``(...)``.
        level: confidence level.
        method: ``"jackknife"`` (default) or ``"bca"``.

    Returns:
        An :class:`Estimate` with ``n`` the number of rows.

    Example:
        >>> table = np.array([[1.0, 2.0], [1.2, 2.2], [0.8, 1.9], [1.1, 2.1]])
        >>> estimate = rows_statistic_ci(table, lambda t: t.mean(axis=-2)[..., 1])
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
    return statistic_ci([indices], on_rows, level=level, method=method, vectorized=True)


def mean_difference_ci(
    first: Sequence[float] | np.ndarray,
    second: Sequence[float] | np.ndarray,
    level: float = LEVEL,
) -> Estimate:
    r""":math:`\bar a - \bar b` of two independent samples (e.g. two initialisations' networks)
    with Welch's interval :math:`\bar a - \bar b \pm t_\nu \sqrt{s_a^2/n_a + s_b^2/n_b}`,
    :math:`\nu` by Welch–Satterthwaite (the jackknife interval of :func:`statistic_ci` for
    independent samples). ``n`` is the smaller sample's size. When the same seeds are measured
    under both conditions, use :func:`mean_ci` of the paired differences instead.

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
        vectorized=True,
    )
    smaller = min(len(a), len(b))
    return Estimate(
        estimate.value,
        estimate.low,
        estimate.high,
        smaller,
        level,
        "Welch t",
        estimate.se,
        estimate.dof,
    )
