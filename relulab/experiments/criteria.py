r"""Criteria: the test a claim applies to its measurement, as small objects.

A criterion says in words what the seed leads us to expect (:meth:`text`) and turns a
measurement into a verdict (:meth:`judge`). Keeping the two together is what lets every claim
carry a **positive control** (data on which the seed's statement is true must hold) and a
**negative control** (a counter-example must fail): both are calls of ``judge``.

A measurement is a number or an :class:`~relulab.analysis.Estimate` (a value with a confidence
interval). For a number the verdict is ``holds`` or ``fails``; for an estimate it follows the
interval: ``holds`` when the whole interval satisfies the criterion, ``fails`` when none of it
does, ``inconclusive`` when it straddles the boundary. A NaN measurement fails: the behaviour
the criterion looks for was not observed.

* :class:`Below`, :class:`Above`, :class:`Inside`, :class:`Within` — one quantity against a
  bound, a band or a target;
* :class:`Ordered` — named values in increasing (or decreasing) order;
* :class:`Correlated` — the sign of a correlation (its Fisher-z interval);
* :class:`AllOf` — several conditions of one statement, each on its own measurement;
* :class:`Every` — one condition at every point of a sweep, on intervals that hold together
  (:func:`relulab.analysis.simultaneous_level`): never the raw worst of K;
* :class:`NoneBeyond` — a bound no point of a sweep significantly violates (one-sided t-tests,
  Holm over the points), for a bound the seed says is reached (tight) somewhere;
* :class:`Equivalent` — one condition with a margin at every point of a sweep, by equivalence
  tests (one-sided t-tests against each edge): ``holds`` when every point is significantly
  inside, ``fails`` when one is significantly outside (Holm), ``inconclusive`` otherwise.

Example:
    >>> Below("final loss", 1e-3).judge(3e-6)
    'holds'
    >>> Below("final loss", 1e-3).text()
    'final loss < 0.001'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from relulab.analysis.intervals import Estimate, holm, p_beyond

__all__ = [
    "Above",
    "AllOf",
    "Below",
    "Correlated",
    "Criterion",
    "Equivalent",
    "Every",
    "Inside",
    "Measured",
    "NoneBeyond",
    "Ordered",
    "Verdict",
    "Within",
    "combine",
    "fmt",
]

Verdict = Literal["holds", "fails", "inconclusive", "not tested"]
Measured = float | Estimate
_TOLERANCE = 1e-9  # a family's per-point level may be rounded this much


@runtime_checkable
class Criterion(Protocol):
    """What every criterion provides."""

    def judge(self, measured: Any) -> Verdict:
        """The verdict on a measurement."""
        ...

    def text(self) -> str:
        """The criterion in words, as ``expected`` shows it."""
        ...

    def headline(self, measured: Any) -> Measured:
        """The one number (or estimate) the scorecard shows as ``measured``."""
        ...

    def describe(self, measured: Any) -> str:
        """The parts of a compound measurement, for the claim's detail (``""`` if none)."""
        ...


def fmt(value: float) -> str:
    """A number as criteria print it: 4 significant digits.

    Example:
        >>> fmt(0.0208333)
        '0.02083'
    """
    return f"{value:.4g}"


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""


def _bounds(measured: Measured) -> tuple[float, float, float]:
    """``(value, low, high)``; a plain number is its own interval."""
    if isinstance(measured, Estimate):
        return float(measured.value), float(measured.low), float(measured.high)
    value = float(measured)
    return value, value, value


def _in_region(measured: Measured, low: float, high: float) -> Verdict:
    """The verdict for "the quantity lies in [low, high]" (either bound may be infinite)."""
    value, lo, hi = _bounds(measured)
    if math.isnan(value):
        return "fails"
    if low <= lo and hi <= high:
        return "holds"
    if hi < low or lo > high:
        return "fails"
    return "inconclusive"


def _below(measured: Measured, bound: float, or_equal: bool) -> Verdict:
    value, lo, hi = _bounds(measured)
    if math.isnan(value):
        return "fails"

    def satisfied(v: float) -> bool:
        return v <= bound if or_equal else v < bound

    if satisfied(hi):
        return "holds"
    if not satisfied(lo):
        return "fails"
    return "inconclusive"


def _negated(measured: Measured) -> Measured:
    if isinstance(measured, Estimate):
        return Estimate(-measured.value, -measured.high, -measured.low, measured.n, measured.level)
    return -float(measured)


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """``fails`` if any part fails, else ``inconclusive`` if any is, else ``holds``.

    Example:
        >>> combine(["holds", "inconclusive"])
        'inconclusive'
    """
    if "fails" in verdicts:
        return "fails"
    return "inconclusive" if "inconclusive" in verdicts else "holds"


class _Scalar:
    """Criteria on one measurement: the headline is the measurement itself."""

    def headline(self, measured: Measured) -> Measured:
        return measured

    def describe(self, measured: Measured) -> str:
        return ""


@dataclass(frozen=True)
class Below(_Scalar):
    """``quantity < bound`` (``≤`` with ``or_equal``).

    Example:
        >>> Below("x", 1.0).judge(Estimate(0.9, 0.8, 1.2, 10))
        'inconclusive'
    """

    quantity: str
    bound: float
    or_equal: bool = False
    unit: str = ""

    def judge(self, measured: Measured) -> Verdict:
        return _below(measured, self.bound, self.or_equal)

    def text(self) -> str:
        sign = "≤" if self.or_equal else "<"
        return f"{self.quantity} {sign} {fmt(self.bound)}{_unit(self.unit)}"


@dataclass(frozen=True)
class Above(_Scalar):
    """``quantity > bound`` (``≥`` with ``or_equal``).

    Example:
        >>> Above("x", 1.0).judge(0.5)
        'fails'
    """

    quantity: str
    bound: float
    or_equal: bool = False
    unit: str = ""

    def judge(self, measured: Measured) -> Verdict:
        return _below(_negated(measured), -self.bound, self.or_equal)

    def text(self) -> str:
        sign = "≥" if self.or_equal else ">"
        return f"{self.quantity} {sign} {fmt(self.bound)}{_unit(self.unit)}"


@dataclass(frozen=True)
class Inside(_Scalar):
    """``low ≤ quantity ≤ high``.

    Example:
        >>> Inside("x", 0.2, 0.3).judge(0.25)
        'holds'
    """

    quantity: str
    low: float
    high: float
    unit: str = ""

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise ValueError(f"Inside needs low ≤ high, got [{self.low}, {self.high}]")

    def judge(self, measured: Measured) -> Verdict:
        return _in_region(measured, self.low, self.high)

    def text(self) -> str:
        return f"{self.quantity} in [{fmt(self.low)}, {fmt(self.high)}]{_unit(self.unit)}"


@dataclass(frozen=True)
class Within(_Scalar):
    """``|quantity − target| ≤ tolerance`` (``tolerance × |target|`` with ``relative``).

    Example:
        >>> Within("x", 1.0, 0.05).judge(1.04)
        'holds'
    """

    quantity: str
    target: float
    tolerance: float
    relative: bool = False
    unit: str = ""

    def __post_init__(self) -> None:
        if not self.tolerance >= 0:
            raise ValueError(f"Within needs a tolerance ≥ 0, got {self.tolerance}")

    @property
    def half_width(self) -> float:
        return self.tolerance * abs(self.target) if self.relative else self.tolerance

    def judge(self, measured: Measured) -> Verdict:
        return _in_region(measured, self.target - self.half_width, self.target + self.half_width)

    def text(self) -> str:
        spread = f"±{self.tolerance:.0%}" if self.relative else f"±{fmt(self.tolerance)}"
        return f"{self.quantity} = {fmt(self.target)}{_unit(self.unit)} {spread}"


def _describe(measured: Measured) -> str:
    return measured.describe() if isinstance(measured, Estimate) else fmt(float(measured))


@dataclass(frozen=True)
class Ordered:
    """Named values in strictly increasing (or decreasing) order.

    ``judge`` takes ``[(name, measured), …]`` in the claimed order. With estimates, each
    consecutive pair must have separated intervals to hold; a pair separated the wrong way
    fails; otherwise the verdict is inconclusive. Equal plain numbers are not ordered. The
    headline is the smallest step in the claimed direction (negative when the order breaks).

    Example:
        >>> Ordered("loss").judge([("a", 1.0), ("b", 2.0)])
        'holds'
    """

    quantity: str
    increasing: bool = True
    names: tuple[str, ...] = ()

    def _pairs(self, measured: Sequence[tuple[str, Measured]]) -> list[tuple[Measured, Measured]]:
        if len(measured) < 2:
            raise ValueError("Ordered needs at least two values")
        values = [value for _, value in measured]
        return list(zip(values[:-1], values[1:], strict=True))

    def _pair_verdict(self, first: Measured, second: Measured) -> Verdict:
        v1, lo1, hi1 = _bounds(first)
        v2, lo2, hi2 = _bounds(second)
        if math.isnan(v1) or math.isnan(v2):
            return "fails"
        right = lo2 > hi1 if self.increasing else hi2 < lo1
        wrong = hi2 < lo1 if self.increasing else lo2 > hi1
        if right:
            return "holds"
        if wrong or not (isinstance(first, Estimate) or isinstance(second, Estimate)):
            return "fails"
        return "inconclusive"

    def judge(self, measured: Sequence[tuple[str, Measured]]) -> Verdict:
        return combine([self._pair_verdict(a, b) for a, b in self._pairs(measured)])

    def headline(self, measured: Sequence[tuple[str, Measured]]) -> float:
        sign = 1.0 if self.increasing else -1.0
        return min(sign * (float(b) - float(a)) for a, b in self._pairs(measured))

    def describe(self, measured: Sequence[tuple[str, Measured]]) -> str:
        return "; ".join(f"{name}: {_describe(value)}" for name, value in measured)

    def text(self) -> str:
        relation = " < " if self.increasing else " > "
        order = (
            relation.join(self.names)
            if self.names
            else ("increasing" if self.increasing else "decreasing")
        )
        return f"{self.quantity}: {order}"


@dataclass(frozen=True)
class Correlated(_Scalar):
    """A positive (or negative) correlation: its interval (from
    :func:`relulab.analysis.correlation_ci`) excludes 0 on the claimed side. A correlation of
    exactly 0 fails.

    Example:
        >>> Correlated("ρ(x, y)").judge(Estimate(0.6, 0.3, 0.8, 30))
        'holds'
    """

    quantity: str
    positive: bool = True
    method: Literal["spearman", "pearson"] = "spearman"

    def judge(self, measured: Measured) -> Verdict:
        bounds = (0.0, math.inf) if self.positive else (-math.inf, 0.0)
        verdict = _in_region(measured, *bounds)
        return "fails" if verdict == "holds" and float(measured) == 0.0 else verdict

    def text(self) -> str:
        name = "Spearman" if self.method == "spearman" else "Pearson"
        return f"{name} {self.quantity} {'>' if self.positive else '<'} 0"


def _check_keys(parts: Mapping[str, Any], measured: Mapping[str, Any], kind: str) -> None:
    if set(parts) != set(measured):
        raise ValueError(
            f"{kind} judges {sorted(parts)} but was given {sorted(map(str, measured))}"
        )


@dataclass(frozen=True)
class AllOf:
    """Several conditions of one statement, each judged on its own measurement: holds when
    every part holds, fails when any part fails, inconclusive otherwise. The headline is the
    ``headline`` part's (the first part's by default).

    For one condition at every point of a sweep use :class:`Every`, which keeps the family's
    level.

    Example:
        >>> both = AllOf({"relu": Above("ReLU σ1/σ2", 2.0), "tanh": Below("tanh σ1/σ2", 1.5)})
        >>> both.judge({"relu": 5.3, "tanh": 1.05})
        'holds'
    """

    parts: Mapping[str, Criterion]
    headline_part: str = ""
    joiner: str = field(default=" and ")

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("AllOf needs at least one part")
        if self.headline_part and self.headline_part not in self.parts:
            raise ValueError(f"headline part {self.headline_part!r} is not one of the parts")

    def verdicts(self, measured: Mapping[str, Any]) -> dict[str, Verdict]:
        _check_keys(self.parts, measured, "AllOf")
        return {name: part.judge(measured[name]) for name, part in self.parts.items()}

    def judge(self, measured: Mapping[str, Any]) -> Verdict:
        return combine(list(self.verdicts(measured).values()))

    def headline(self, measured: Mapping[str, Any]) -> Measured:
        name = self.headline_part or next(iter(self.parts))
        return self.parts[name].headline(measured[name])

    def describe(self, measured: Mapping[str, Any]) -> str:
        verdicts = self.verdicts(measured)
        return "; ".join(
            f"{name}: {_describe(part.headline(measured[name]))} ({verdicts[name]})"
            for name, part in self.parts.items()
        )

    def text(self) -> str:
        return self.joiner.join(part.text() for part in self.parts.values())


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
