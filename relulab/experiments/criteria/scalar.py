"""Criteria on one measurement, or on a few named ones: :class:`Below`, :class:`Above`,
:class:`Inside`, :class:`Within`, :class:`Ordered`, :class:`Correlated`, :class:`AllOf`, and
what every criterion shares (the :class:`Criterion` protocol, the verdict of an interval against
a bound or a region, :func:`combine`). See :mod:`relulab.experiments.criteria`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from relulab.analysis.intervals import Estimate

__all__ = [
    "Above",
    "AllOf",
    "Below",
    "Correlated",
    "Criterion",
    "Inside",
    "Measured",
    "Ordered",
    "Verdict",
    "Within",
    "combine",
    "fmt",
]

Verdict = Literal["holds", "fails", "inconclusive", "not tested"]
Measured = float | Estimate


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
