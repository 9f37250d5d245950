"""Criteria on one condition at every point of a sweep (layers, widths, α …), judged so that
the family keeps its level: :class:`Every` (intervals that hold together), :class:`NoneBeyond`
(a bound no point significantly violates, Holm) and :class:`Equivalent` (every point shown
inside a margin by equivalence tests). See :mod:`relulab.experiments.criteria`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from relulab.analysis.intervals import Estimate
from relulab.analysis.multiplicity import holm, p_beyond
from relulab.experiments.criteria.scalar import (
    Above,
    Below,
    Inside,
    Measured,
    Verdict,
    Within,
    _describe,
    combine,
)

__all__ = ["Equivalent", "Every", "NoneBeyond"]

_TOLERANCE = 1e-9  # a family's per-point level may be rounded this much


def _first_points(lines: Sequence[str], shown: int, order: str) -> str:
    """The first ``shown`` of a family's per-point lines, saying how many more there are."""
    if len(lines) <= shown:
        return "; ".join(lines)
    rest = len(lines) - shown
    return f"{'; '.join(lines[:shown])}; … and {rest} more points ({order})"


def _distance(condition: Below | Above | Inside | Within, value: Measured) -> float:
    """How far a point's value lies on the failing side of ``condition`` (larger: less
    favourable; negative inside)."""
    v = float(value)
    if isinstance(condition, Below):
        return v - condition.bound
    if isinstance(condition, Above):
        return condition.bound - v
    if isinstance(condition, Within):
        return abs(v - condition.target) - condition.half_width
    return max(condition.low - v, v - condition.high)


@dataclass(frozen=True)
class Every:
    """One condition at every point of a sweep (layers, widths, α …), judged on intervals that
    hold together: each estimate must carry at least the per-point level
    :math:`1 - (1 - \\text{level})/K` (:func:`relulab.analysis.simultaneous_level`), so that
    neither "holds" nor "fails" rests on the raw worst of K per-point intervals. Plain
    (deterministic) numbers need no correction.

    ``judge`` takes ``{point: measured}``. The headline is the point least favourable to the
    claim (a metric; the verdict comes from all points together).

    Example:
        >>> every = Every(Below("excess over the bound", 0.0))
        >>> every.judge({"l=2": Estimate(-0.1, -0.2, -0.01, 30, 0.99),
        ...              "l=3": Estimate(-0.2, -0.3, -0.1, 30, 0.99)})
        'holds'
    """

    condition: Below | Above | Inside | Within
    level: float = 0.95
    points_name: str = "point"
    shown: int = 8  # points the detail lists (least favourable first); all count in the verdict

    def _check_levels(self, measured: Mapping[str, Measured]) -> None:
        needed = 1.0 - (1.0 - self.level) / max(len(measured), 1)
        for point, value in measured.items():
            if isinstance(value, Estimate) and value.level < needed - _TOLERANCE:
                raise ValueError(
                    f"Every: the interval at {point} has level {value.level:g}, but "
                    f"{len(measured)} points judged together need {needed:.6g} each "
                    "(relulab.analysis.simultaneous_level)"
                )

    def verdicts(self, measured: Mapping[str, Measured]) -> dict[str, Verdict]:
        if not measured:
            raise ValueError("Every needs at least one point")
        self._check_levels(measured)
        return {point: self.condition.judge(value) for point, value in measured.items()}

    def judge(self, measured: Mapping[str, Measured]) -> Verdict:
        return combine(list(self.verdicts(measured).values()))

    def _distance(self, value: Measured) -> float:
        return _distance(self.condition, value)

    def headline(self, measured: Mapping[str, Measured]) -> Measured:
        worst = max(measured, key=lambda point: self._distance(measured[point]))
        return measured[worst]

    def describe(self, measured: Mapping[str, Measured]) -> str:
        verdicts = self.verdicts(measured)
        order = sorted(measured, key=lambda point: -self._distance(measured[point]))
        return _first_points(
            [f"{point}: {_describe(measured[point])} ({verdicts[point]})" for point in order],
            self.shown,
            "least favourable first",
        )

    def text(self) -> str:
        return (
            f"{self.condition.text()} at every {self.points_name} "
            f"(intervals simultaneous at {self.level:.0%})"
        )


@dataclass(frozen=True)
class NoneBeyond:
    """A bound that no point of a sweep significantly violates: each point's one-sided p-value of
    lying beyond the bound (:func:`relulab.analysis.p_beyond`, from its t-based estimate),
    adjusted by Holm over the points (:func:`relulab.analysis.holm`); ``fails`` when any
    adjusted p-value is below ``alpha``, ``holds`` otherwise. Plain numbers violate the bound
    when they lie beyond it.

    This is the test for a bound the seed says is *reached* at some points (an upper bound that
    is tight at shallow layers): there no interval can lie strictly inside the bound, so an
    interval criterion could only say "inconclusive". ``holds`` means "no point is significantly
    beyond the bound at family level 1 − α" — the detail gives each point's adjusted p-value
    and the headline (a metric) is the point farthest beyond.

    Example:
        >>> from relulab.analysis import mean_ci
        >>> bound = NoneBeyond(Below("excess over the bound", 0.0), points_name="layer")
        >>> bound.judge({"l=2": mean_ci([-0.01, 0.01, 0.0, 0.005]),
        ...              "l=3": mean_ci([-0.2, -0.1, -0.15, -0.12])})
        'holds'
        >>> bound.judge({"l=2": mean_ci([0.3, 0.31, 0.29, 0.3]), "l=3": -0.1})
        'fails'
    """

    condition: Below | Above
    alpha: float = 0.05
    points_name: str = "point"
    shown: int = 8  # points the detail lists (smallest adjusted p first); all count

    def _beyond(self, value: Measured) -> float:
        """The one-sided p-value of the point lying beyond the bound."""
        above = isinstance(self.condition, Below)
        bound = self.condition.bound
        if isinstance(value, Estimate):
            return p_beyond(value, bound, above=above)
        v = float(value)
        if math.isnan(v):
            return 0.0
        return 0.0 if (v > bound if above else v < bound) else 1.0

    def adjusted(self, measured: Mapping[str, Measured]) -> dict[str, float]:
        """Each point's Holm-adjusted p-value of lying beyond the bound."""
        if not measured:
            raise ValueError("NoneBeyond needs at least one point")
        points = list(measured)
        p = holm([self._beyond(measured[point]) for point in points])
        return dict(zip(points, (float(v) for v in p), strict=True))

    def judge(self, measured: Mapping[str, Measured]) -> Verdict:
        return "fails" if min(self.adjusted(measured).values()) < self.alpha else "holds"

    def headline(self, measured: Mapping[str, Measured]) -> Measured:
        sign = 1.0 if isinstance(self.condition, Below) else -1.0
        return measured[max(measured, key=lambda point: sign * float(measured[point]))]

    def describe(self, measured: Mapping[str, Measured]) -> str:
        adjusted = self.adjusted(measured)
        order = sorted(measured, key=lambda point: adjusted[point])
        return _first_points(
            [
                f"{point}: {_describe(measured[point])}, Holm p = {adjusted[point]:.3g}"
                for point in order
            ],
            self.shown,
            "smallest Holm p first",
        )

    def text(self) -> str:
        return (
            f"no {self.points_name} significantly beyond {self.condition.text()} "
            f"(one-sided t-tests, Holm, family level {1 - self.alpha:.0%})"
        )


def _edges(condition: Below | Above | Inside | Within) -> list[tuple[float, bool, bool]]:
    """The edges of a condition's region as ``(edge, inside_is_below, inclusive)``: one for a
    bound, two for a band."""
    if isinstance(condition, Below):
        return [(condition.bound, True, condition.or_equal)]
    if isinstance(condition, Above):
        return [(condition.bound, False, condition.or_equal)]
    if isinstance(condition, Within):
        low = condition.target - condition.half_width
        return [(low, False, True), (condition.target + condition.half_width, True, True)]
    return [(condition.low, False, True), (condition.high, True, True)]


def _edge_tests(value: Measured, edge: float, below: bool, inclusive: bool) -> tuple[float, float]:
    """One point against one edge: the one-sided p-values ``(inside, outside)`` of the quantity
    lying on the inside of ``edge`` and on its outside. An estimate needs a standard error (a t
    interval); a plain number, or an estimate with a zero-width interval, is exact (0 or 1); the
    unbounded interval of too few samples shows neither side (1, 1); a NaN is outside."""
    v = float(value)
    if math.isnan(v):
        return 1.0, 0.0
    if isinstance(value, Estimate) and value.se is not None and value.dof is not None:
        return p_beyond(value, edge, above=not below), p_beyond(value, edge, above=below)
    if isinstance(value, Estimate) and math.isinf(value.low) and math.isinf(value.high):
        return 1.0, 1.0  # too few samples for an interval: neither side can be shown
    if isinstance(value, Estimate) and value.low != value.high:
        raise ValueError(
            f"Equivalent tests each point with a t-test: a {value.method or 'this'} interval "
            "carries no standard error"
        )
    if below:
        inside = v <= edge if inclusive else v < edge
    else:
        inside = v >= edge if inclusive else v > edge
    return (0.0, 1.0) if inside else (1.0, 0.0)


@dataclass(frozen=True)
class Equivalent:
    r"""One condition at every point of a sweep, its edges a margin the seed allows, decided by
    equivalence tests: at each point a one-sided t-test against each edge of the condition's
    region (:func:`relulab.analysis.p_beyond`, from the point's t-based estimate) — one edge for
    a bound (:class:`Below`, :class:`Above`), two for a band (:class:`Within`, :class:`Inside`:
    Schuirmann's two one-sided tests, TOST).

    * ``holds`` when **every** point is significantly inside every edge at level ``alpha``. The
      statement "every point is inside" is the intersection of the points' statements, so this
      intersection–union test (Berger 1982) has family level ``alpha`` with no correction for
      the number of points: a false "holds" needs the point that is truly outside to pass its
      own test, which it does with probability at most ``alpha``.
    * ``fails`` when **some** point is significantly outside an edge, its p-value Holm-adjusted
      over all the points' edges (:func:`relulab.analysis.holm`): family level ``alpha`` for any
      dependence between the points.
    * ``inconclusive`` otherwise: some point is neither shown inside nor shown outside — the
      data cannot tell (more samples are needed, or the point sits on an edge).

    Neither decision rests on the raw worst of K intervals: with K points, Bonferroni intervals
    (:class:`Every`) would ask each point's one-sided test for ``alpha / K`` to hold, which the
    intersection–union test shows is not needed, and Holm is at least as powerful as
    Bonferroni to fail. This is the test for a bound or band the seed says is *reached* at some
    points (an upper bound that is tight at shallow layers): there "no point significantly
    beyond" (:class:`NoneBeyond`) can never be inconclusive, and a point on the bound can only
    be shown inside a margin. The headline (a metric) is the point farthest on the failing
    side; the detail gives each point's p-values, least certain first.

    Plain numbers (and zero-width intervals) are exact: inside or outside. A NaN is outside.

    Example:
        >>> from relulab.analysis import mean_ci
        >>> bound = Equivalent(Below("excess over the bound", 0.05), points_name="layer")
        >>> bound.judge({"l=2": mean_ci([-0.01, 0.01, 0.0, 0.005]),
        ...              "l=3": mean_ci([-0.2, -0.1, -0.15, -0.12])})
        'holds'
        >>> bound.judge({"l=2": mean_ci([-0.05, 0.08, 0.0, 0.1]), "l=3": -0.1})
        'inconclusive'
        >>> bound.judge({"l=2": mean_ci([0.3, 0.31, 0.29, 0.3]), "l=3": -0.1})
        'fails'
    """

    condition: Below | Above | Inside | Within
    alpha: float = 0.05
    points_name: str = "point"
    shown: int = 8  # points the detail lists (least certain first); all count in the verdict

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"Equivalent needs 0 < alpha < 1, got {self.alpha}")

    def tests(self, measured: Mapping[str, Measured]) -> dict[str, tuple[float, float]]:
        """Per point ``(p inside, Holm p outside)``: the largest over its edges of the one-sided
        p-value of lying inside (the point is inside when it is below ``alpha``), and the
        smallest over its edges of the Holm-adjusted p-value of lying outside (over all the
        points' edges)."""
        if not measured:
            raise ValueError("Equivalent needs at least one point")
        edges = _edges(self.condition)
        points = list(measured)
        pairs = [[_edge_tests(measured[p], *edge) for edge in edges] for p in points]
        adjusted = holm([out for point in pairs for _, out in point]).reshape(len(points), -1)
        return {
            point: (max(inside for inside, _ in tests), float(adjusted[k].min()))
            for k, (point, tests) in enumerate(zip(points, pairs, strict=True))
        }

    def verdicts(self, measured: Mapping[str, Measured]) -> dict[str, Verdict]:
        """Per point: ``holds`` (significantly inside), ``fails`` (significantly outside, after
        Holm) or ``inconclusive``."""
        verdicts: dict[str, Verdict] = {}
        for point, (inside, outside) in self.tests(measured).items():
            if outside < self.alpha:
                verdicts[point] = "fails"
            else:
                verdicts[point] = "holds" if inside < self.alpha else "inconclusive"
        return verdicts

    def judge(self, measured: Mapping[str, Measured]) -> Verdict:
        return combine(list(self.verdicts(measured).values()))

    def headline(self, measured: Mapping[str, Measured]) -> Measured:
        return measured[max(measured, key=lambda point: _distance(self.condition, measured[point]))]

    def describe(self, measured: Mapping[str, Measured]) -> str:
        tests = self.tests(measured)
        verdicts = self.verdicts(measured)
        order = sorted(measured, key=lambda point: (-tests[point][0], tests[point][1]))
        return _first_points(
            [
                f"{point}: {_describe(measured[point])}, p inside = {tests[point][0]:.3g}, "
                f"Holm p outside = {tests[point][1]:.3g} ({verdicts[point]})"
                for point in order
            ],
            self.shown,
            "least certain first",
        )

    def text(self) -> str:
        return (
            f"{self.condition.text()} at every {self.points_name} (equivalence: one-sided "
            f"t-tests against each edge at level {self.alpha:g}; every {self.points_name} "
            "inside to hold, one outside after Holm to fail)"
        )
