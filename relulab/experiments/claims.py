r"""Claims: an empirical test of one seed statement, with its criterion, measurement and verdict.

An experiment's ``analyse`` returns a list of claims built by the keyword-only builders below.
Each builder takes the seed ``source`` (section / figure / sentence the criterion comes from),
the measured ``quantity`` in words, the measurement and the criterion, and renders ``expected``
uniformly, so a ``claims`` function reads as a list of short entries:

>>> below("lr-0.2-converges", "lr 0.2 converges.", quantity="final loss",
...       measured=3e-6, bound=1e-3, source="seed 001 §4")  # doctest: +SKIP

**Verdicts.** A measurement is a number or an :class:`~relulab.analysis.Estimate` (a value with
a confidence interval and its sample size n). For a number the verdict is ``holds`` or
``fails``; for an estimate it follows the interval: ``holds`` when the whole interval satisfies
the criterion, ``fails`` when none of it does, ``inconclusive`` when it straddles the criterion
(then ``passed`` is false, and more samples are needed to decide). A NaN measurement fails: the
behaviour the criterion looks for was not observed.

The JSON shape of a claim is part of the run contract: ``id``, ``statement``, ``expected``,
``measured``, ``passed``, ``detail``, then the fields added since (``source``, ``verdict``,
``n``, ``ci_low``, ``ci_high``, ``ci_level``, ``unit``, ``scale``, ``figure`` — the PNG that
shows the evidence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from relulab.analysis.intervals import Estimate, correlation_ci

__all__ = [
    "Claim",
    "Measured",
    "Verdict",
    "above",
    "below",
    "correlated",
    "inside",
    "judged",
    "ordered",
    "within",
]

Verdict = Literal["holds", "fails", "inconclusive"]
Measured = float | Estimate


@dataclass(frozen=True)
class Claim:
    """One statement of a seed, what it leads us to expect, what we measured, and the verdict.

    Build claims with the builders of this module rather than by hand: they fill ``expected``,
    ``verdict`` and the interval fields consistently.
    """

    id: str
    statement: str
    expected: str
    measured: float
    passed: bool
    detail: str = ""
    source: str = ""
    verdict: Verdict | Literal[""] = ""
    n: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    unit: str = ""
    scale: str = ""
    figure: str = ""

    def __post_init__(self) -> None:
        if not self.verdict:  # a hand-built claim: the verdict is its pass/fail
            object.__setattr__(self, "verdict", "holds" if self.passed else "fails")


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _claim(
    claim_id: str,
    statement: str,
    *,
    criterion: str,
    measured: Measured,
    verdict: Verdict,
    source: str,
    unit: str,
    detail: str,
    note: str,
    scale: str,
    figure: str = "",
) -> Claim:
    expected = f"{criterion} — {source}"
    if isinstance(measured, Estimate):
        expected += f"; verdict from the {measured.level:.0%} CI"
    if note:
        expected += f"; {note}"
    interval = (
        {
            "n": measured.n,
            "ci_low": measured.low,
            "ci_high": measured.high,
            "ci_level": measured.level,
        }
        if isinstance(measured, Estimate)
        else {}
    )
    return Claim(
        claim_id,
        statement,
        expected,
        float(measured),
        verdict == "holds",
        detail,
        source,
        verdict,
        unit=unit,
        scale=scale,
        figure=figure,
        **interval,
    )


def _interval(measured: Measured) -> tuple[float, float, float]:
    """``(value, low, high)``; a plain number is its own interval."""
    if isinstance(measured, Estimate):
        return float(measured.value), float(measured.low), float(measured.high)
    value = float(measured)
    return value, value, value


def _judge_region(measured: Measured, low: float, high: float) -> Verdict:
    """Verdict for "the quantity lies in [low, high]" (either bound may be infinite)."""
    value, lo, hi = _interval(measured)
    if math.isnan(value):
        return "fails"
    if low <= lo and hi <= high:
        return "holds"
    if hi < low or lo > high:
        return "fails"
    return "inconclusive"


def _strict_below(measured: Measured, bound: float, or_equal: bool) -> Verdict:
    value, lo, hi = _interval(measured)
    if math.isnan(value):
        return "fails"
    inside = (lambda v: v <= bound) if or_equal else (lambda v: v < bound)
    if inside(hi):
        return "holds"
    if not inside(lo):
        return "fails"
    return "inconclusive"


def below(
    claim_id: str,
    statement: str,
    *,
    quantity: str,
    measured: Measured,
    bound: float,
    source: str,
    or_equal: bool = False,
    unit: str = "",
    detail: str = "",
    note: str = "",
    scale: str = "",
    figure: str = "",
) -> Claim:
    """``quantity < bound`` (``≤`` with ``or_equal``).

    Example:
        >>> below("x", "x is small.", quantity="x", measured=0.5, bound=1.0, source="s").verdict
        'holds'
    """
    verdict = _strict_below(measured, bound, or_equal)
    sign = "≤" if or_equal else "<"
    return _claim(
        claim_id,
        statement,
        criterion=f"{quantity} {sign} {_fmt(bound)}{_unit(unit)}",
        measured=measured,
        verdict=verdict,
        source=source,
        unit=unit,
        detail=detail,
        note=note,
        scale=scale,
        figure=figure,
    )


def _negate(measured: Measured) -> Measured:
    if isinstance(measured, Estimate):
        return Estimate(-measured.value, -measured.high, -measured.low, measured.n, measured.level)
    return -float(measured)


def above(
    claim_id: str,
    statement: str,
    *,
    quantity: str,
    measured: Measured,
    bound: float,
    source: str,
    or_equal: bool = False,
    unit: str = "",
    detail: str = "",
    note: str = "",
    scale: str = "",
    figure: str = "",
) -> Claim:
    """``quantity > bound`` (``≥`` with ``or_equal``).

    Example:
        >>> above("x", "x is big.", quantity="x", measured=0.5, bound=1.0, source="s").verdict
        'fails'
    """
    verdict = _strict_below(_negate(measured), -bound, or_equal)
    sign = "≥" if or_equal else ">"
    return _claim(
        claim_id,
        statement,
        criterion=f"{quantity} {sign} {_fmt(bound)}{_unit(unit)}",
        measured=measured,
        verdict=verdict,
        source=source,
        unit=unit,
        detail=detail,
        note=note,
        scale=scale,
        figure=figure,
    )


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""


def inside(
    claim_id: str,
    statement: str,
    *,
    quantity: str,
    measured: Measured,
    low: float,
    high: float,
    source: str,
    unit: str = "",
    detail: str = "",
    note: str = "",
    scale: str = "",
    figure: str = "",
) -> Claim:
    """``low ≤ quantity ≤ high``.

    Example:
        >>> inside("x", "x is moderate.", quantity="x", measured=0.25, low=0.2, high=0.3,
        ...        source="s").verdict
        'holds'
    """
    return _claim(
        claim_id,
        statement,
        criterion=f"{quantity} in [{_fmt(low)}, {_fmt(high)}]{_unit(unit)}",
        measured=measured,
        verdict=_judge_region(measured, low, high),
        source=source,
        unit=unit,
        detail=detail,
        note=note,
        scale=scale,
        figure=figure,
    )


def within(
    claim_id: str,
    statement: str,
    *,
    quantity: str,
    measured: Measured,
    target: float,
    tolerance: float,
    source: str,
    relative: bool = False,
    unit: str = "",
    detail: str = "",
    note: str = "",
    scale: str = "",
    figure: str = "",
) -> Claim:
    """``|quantity − target| ≤ tolerance`` (``tolerance × |target|`` with ``relative``).

    Example:
        >>> within("x", "x is 1.", quantity="x", measured=1.04, target=1.0, tolerance=0.05,
        ...        source="s").passed
        True
    """
    half = tolerance * abs(target) if relative else tolerance
    spread = f"±{tolerance:.0%}" if relative else f"±{_fmt(tolerance)}"
    return _claim(
        claim_id,
        statement,
        criterion=f"{quantity} = {_fmt(target)}{_unit(unit)} {spread}",
        measured=measured,
        verdict=_judge_region(measured, target - half, target + half),
        source=source,
        unit=unit,
        detail=detail,
        note=note,
        scale=scale,
        figure=figure,
    )


def ordered(
    claim_id: str,
    statement: str,
    *,
    quantity: str,
    values: Sequence[tuple[str, Measured]],
    source: str,
    increasing: bool = True,
    unit: str = "",
    detail: str = "",
    note: str = "",
    scale: str = "",
    figure: str = "",
) -> Claim:
    """The named values in strictly increasing (or decreasing) order.

    ``measured`` is the smallest step in the required direction (negative when the order is
    broken). With estimates, each consecutive pair must have separated intervals to hold; a pair
    whose intervals are separated the wrong way fails the claim; otherwise it is inconclusive.

    Example:
        >>> ordered("o", "a < b.", quantity="loss", values=[("a", 1.0), ("b", 2.0)],
        ...         source="s").verdict
        'holds'
    """
    if len(values) < 2:
        raise ValueError("ordered needs at least two values")
    sign = 1.0 if increasing else -1.0
    steps, verdicts = [], []
    for (_, first), (_, second) in zip(values[:-1], values[1:], strict=True):
        v1, lo1, hi1 = _interval(first)
        v2, lo2, hi2 = _interval(second)
        steps.append(sign * (v2 - v1))
        if math.isnan(v1) or math.isnan(v2):
            verdicts.append("fails")
        elif (lo2 > hi1) if increasing else (hi2 < lo1):
            verdicts.append("holds")
        elif (hi2 < lo1) if increasing else (lo2 > hi1):
            verdicts.append("fails")
        elif not isinstance(first, Estimate) and not isinstance(second, Estimate):
            verdicts.append("fails")  # equal plain numbers: not strictly ordered
        else:
            verdicts.append("inconclusive")
    verdict: Verdict = (
        "fails"
        if "fails" in verdicts
        else ("inconclusive" if "inconclusive" in verdicts else "holds")
    )
    relation = " < " if increasing else " > "
    listing = "; ".join(
        f"{name}: {v.describe() if isinstance(v, Estimate) else _fmt(float(v))}"
        for name, v in values
    )
    return _claim(
        claim_id,
        statement,
        criterion=f"{quantity}: {relation.join(name for name, _ in values)}",
        measured=float(np.min(steps)),
        verdict=verdict,
        source=source,
        unit=unit,
        detail="; ".join(filter(None, [listing, detail])),
        note=note,
        scale=scale,
        figure=figure,
    )


def correlated(
    claim_id: str,
    statement: str,
    *,
    quantity: str,
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    source: str,
    positive: bool = True,
    method: Literal["spearman", "pearson"] = "spearman",
    detail: str = "",
    note: str = "",
    scale: str = "",
    figure: str = "",
) -> Claim:
    """A positive (or negative) correlation of paired samples: its Fisher-z CI excludes 0.

    Example:
        >>> correlated("c", "y rises with x.", quantity="ρ(x, y)", x=range(10), y=range(10),
        ...            source="s").verdict
        'holds'
    """
    estimate = correlation_ci(x, y, method)
    bound = (0.0, math.inf) if positive else (-math.inf, 0.0)
    verdict = _judge_region(estimate, *bound)
    if verdict == "holds" and estimate.value == 0.0:
        verdict = "fails"
    name = "Spearman" if method == "spearman" else "Pearson"
    return _claim(
        claim_id,
        statement,
        criterion=f"{name} {quantity} {'>' if positive else '<'} 0",
        measured=estimate,
        verdict=verdict,
        source=source,
        unit="",
        detail=detail,
        note=note,
        scale=scale,
        figure=figure,
    )


def judged(
    claim_id: str,
    statement: str,
    *,
    expected: str,
    measured: Measured,
    holds: bool | None,
    source: str,
    unit: str = "",
    detail: str = "",
    note: str = "",
    scale: str = "",
    figure: str = "",
) -> Claim:
    """A compound criterion judged by the caller (``holds=None``: inconclusive).

    Use it only where no other builder fits (several conditions at once); ``expected`` says the
    criterion in words.

    Example:
        >>> judged("j", "both.", expected="a and b", measured=1.0, holds=True, source="s").passed
        True
    """
    verdict: Verdict = "inconclusive" if holds is None else ("holds" if holds else "fails")
    return _claim(
        claim_id,
        statement,
        criterion=expected,
        measured=measured,
        verdict=verdict,
        source=source,
        unit=unit,
        detail=detail,
        note=note,
        scale=scale,
        figure=figure,
    )
