r"""One divergence policy for every claim that reads trained networks.

A network *diverged* when the engine froze it (a non-finite value), when any recorded value of
its loss is non-finite, or when one exceeds the study's stated cap (:class:`DivergencePolicy`).
Every claim that uses a network counts it the same way: as diverged, in its detail
(:func:`divergence_counts`, :func:`divergence_text`), never as a sentinel loss in one claim and
a dropped network in another.

Comparisons of speed or loss between two groups of networks use a statistic defined with
divergence in it: the probability of superiority
:math:`\theta = P(\text{a draw of the first group ends better than a draw of the second})`, in
which a diverged network ranks last (:func:`superiority_ci`). Two diverged networks tie.

>>> policy = DivergencePolicy(cap=1e3)
>>> policy.diverged(np.array([False, False, True]), np.array([[1.0, 0.5], [1.0, 2e3], [1.0, 0.1]]))
array([False,  True,  True])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from relulab.analysis.intervals import LEVEL, Estimate, proportion_ci

__all__ = [
    "DivergencePolicy",
    "divergence_counts",
    "divergence_text",
    "ranked_last",
    "superiority_ci",
]


@dataclass(frozen=True)
class DivergencePolicy:
    """Which networks diverged: flagged by the engine, a non-finite recorded value, or a
    recorded value above ``cap``.

    Args:
        cap: the largest value (of the quantity the study caps: a loss) a network that has not
            diverged may record; ``inf``: non-finite values only.
        quantity: what the cap applies to, for the claims' details.

    Example:
        >>> DivergencePolicy(1e6, "validation loss").describe()
        'diverged: frozen by the engine, a non-finite validation loss, or one above 1e+06'
    """

    cap: float = math.inf
    quantity: str = "loss"

    def __post_init__(self) -> None:
        if math.isnan(self.cap) or self.cap <= 0:
            raise ValueError(f"a divergence cap is a positive number or inf, not {self.cap}")

    def diverged(self, flagged: np.ndarray | None, values: np.ndarray) -> np.ndarray:
        """Per network, whether it diverged.

        Args:
            flagged: the engine's per-network divergence flags ``(S,)`` (``None``: none).
            values: the capped quantity per network, ``(S,)`` or recorded ``(S, T)``.

        Returns:
            A boolean array ``(S,)``.
        """
        values = np.asarray(values, dtype=np.float64)
        rows = values.reshape(len(values), -1)
        over = ~np.isfinite(rows) | (rows > self.cap)
        diverged = over.any(axis=1)
        if flagged is not None:
            diverged |= np.asarray(flagged, bool)
        return diverged

    def describe(self) -> str:
        """The policy in words."""
        limit = f", or one above {self.cap:g}" if math.isfinite(self.cap) else ""
        return f"diverged: frozen by the engine, a non-finite {self.quantity}{limit}"


def divergence_counts(
    diverged: np.ndarray, groups: Mapping[str, Sequence[int] | np.ndarray]
) -> dict[str, tuple[int, int]]:
    """Per group: (networks that diverged, networks).

    Example:
        >>> divergence_counts(np.array([True, False, False]), {"he": [0, 1], "aci": [2]})
        {'he': (1, 2), 'aci': (0, 1)}
    """
    flags = np.asarray(diverged, bool)
    return {
        name: (int(flags[np.asarray(rows, dtype=int)].sum()), len(rows))
        for name, rows in groups.items()
    }


def divergence_text(counts: Mapping[str, tuple[int, int]]) -> str:
    """Divergence counts for a claim's detail.

    Example:
        >>> divergence_text({"he": (0, 20), "aci": (4, 20)})
        'diverged: he 0/20, aci 4/20'
    """
    return "diverged: " + ", ".join(f"{k} {d}/{n}" for k, (d, n) in counts.items())


def ranked_last(scores: np.ndarray, diverged: np.ndarray | None) -> np.ndarray:
    """``scores`` (lower is better) with every diverged network at ``+inf``: it ranks last.

    Example:
        >>> ranked_last(np.array([0.1, 0.2]), np.array([False, True])).tolist()
        [0.1, inf]
    """
    scores = np.asarray(scores, dtype=np.float64).copy()
    if diverged is not None:
        scores[np.asarray(diverged, bool)] = np.inf
    scores[np.isnan(scores)] = np.inf  # an unscored network never ranks above a scored one
    return scores


def superiority_ci(
    first: np.ndarray,
    second: np.ndarray,
    first_diverged: np.ndarray | None = None,
    second_diverged: np.ndarray | None = None,
    level: float = LEVEL,
) -> Estimate:
    r"""The probability that a network of the first group ends better (a lower score) than an
    independent network of the second, a diverged network ranking last, with an exact interval.

    The draws are paired as they come (the i-th of each group; the longer group's extra draws
    are left out): each pair is an independent draw of the two, so the first group's wins among
    the pairs that do not tie are Binomial(n, θ), θ the probability of superiority given no tie,
    and the Clopper–Pearson interval of :func:`~relulab.analysis.proportion_ci` keeps its level
    at every n (a rank statistic over all n² pairs would be sharper, but its usual intervals
    miss more than their level at n ≤ 10). θ = 0.5: neither group tends to end better; two
    diverged networks tie.

    Args:
        first, second: per-network scores, lower is better (a loss, a time to a loss level).
        first_diverged, second_diverged: per-network divergence (:class:`DivergencePolicy`).
        level: the interval's confidence level.

    Returns:
        The :class:`~relulab.analysis.Estimate` of θ; ``n`` counts the pairs that did not tie.

    Example:
        >>> estimate = superiority_ci(np.arange(10.0), np.arange(10.0) + 0.5,
        ...                           second_diverged=np.array([False] * 8 + [True] * 2))
        >>> estimate.value, estimate.n, round(estimate.low, 3)
        (1.0, 10, 0.692)
    """
    a = ranked_last(first, first_diverged)
    b = ranked_last(second, second_diverged)
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    untied = a != b
    wins = int((a[untied] < b[untied]).sum())
    estimate = proportion_ci(wins, int(untied.sum()), level)
    return Estimate(
        estimate.value,
        estimate.low,
        estimate.high,
        estimate.n,
        level,
        "probability of superiority, draws paired in order, Clopper-Pearson",
    )
