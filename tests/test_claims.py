"""Claim builders: each can hold, fail and (with an interval) be inconclusive; expected renders."""

import math

import numpy as np
import pytest

from relulab.analysis import (
    Estimate,
    argmin_ci,
    boundary_bracket,
    correlation_ci,
    mean_ci,
    proportion_ci,
    statistic_ci,
    tail_range,
)
from relulab.experiments.claims import (
    Claim,
    above,
    below,
    correlated,
    inside,
    judged,
    ordered,
    within,
)

SRC = "seed 999 §1"


def est(value, low, high, n=10):
    return Estimate(value, low, high, n)


@pytest.mark.parametrize(
    ("measured", "verdict"),
    [
        (0.5, "holds"),
        (1.5, "fails"),
        (1.0, "fails"),
        (float("nan"), "fails"),
        (est(0.5, 0.4, 0.6), "holds"),
        (est(0.9, 0.8, 1.2), "inconclusive"),
        (est(1.5, 1.1, 1.9), "fails"),
    ],
)
def test_below(measured, verdict):
    claim = below("c", "s.", quantity="q", measured=measured, bound=1.0, source=SRC)
    assert claim.verdict == verdict
    assert claim.passed == (verdict == "holds")
    assert claim.expected.startswith("q < 1 — seed 999 §1")


def test_below_or_equal_and_above():
    assert below("c", "s", quantity="q", measured=1.0, bound=1.0, source=SRC, or_equal=True).passed
    assert above("c", "s", quantity="q", measured=2.0, bound=1.0, source=SRC).passed
    assert not above("c", "s", quantity="q", measured=0.5, bound=1.0, source=SRC).passed
    claim = above("c", "s", quantity="q", measured=est(1.2, 0.9, 1.5), bound=1.0, source=SRC)
    assert claim.verdict == "inconclusive"
    assert (
        above("c", "s", quantity="q", measured=est(0.5, 0.1, 0.9), bound=1.0, source=SRC).verdict
        == "fails"
    )


def test_interval_fields_and_expected_note():
    claim = below(
        "c",
        "s",
        quantity="q",
        measured=est(0.5, 0.4, 0.6, n=30),
        bound=1.0,
        source=SRC,
        note="threshold inferred",
        unit="steps",
    )
    assert (claim.n, claim.ci_low, claim.ci_high, claim.ci_level) == (30, 0.4, 0.6, 0.95)
    assert "verdict from the 95% CI" in claim.expected
    assert claim.expected.endswith("threshold inferred")
    assert "1 steps" in claim.expected and claim.unit == "steps"


@pytest.mark.parametrize(
    ("measured", "verdict"),
    [
        (0.25, "holds"),
        (0.35, "fails"),
        (est(0.25, 0.15, 0.28), "inconclusive"),
        (est(0.5, 0.4, 0.6), "fails"),
        (est(0.25, 0.21, 0.29), "holds"),
    ],
)
def test_inside(measured, verdict):
    claim = inside("c", "s", quantity="b", measured=measured, low=0.2, high=0.3, source=SRC)
    assert claim.verdict == verdict


def test_within_absolute_and_relative():
    assert within(
        "c", "s", quantity="x", measured=0.55, target=0.5, tolerance=0.1, source=SRC
    ).passed
    assert not within(
        "c", "s", quantity="x", measured=0.65, target=0.5, tolerance=0.1, source=SRC
    ).passed
    relative = within(
        "c",
        "s",
        quantity="x",
        measured=105.0,
        target=100.0,
        tolerance=0.02,
        relative=True,
        source=SRC,
    )
    assert not relative.passed and "±2%" in relative.expected


def test_ordered():
    kw = dict(quantity="loss", source=SRC)
    assert ordered("o", "s", values=[("a", 1.0), ("b", 2.0), ("c", 3.0)], **kw).verdict == "holds"
    broken = ordered("o", "s", values=[("a", 1.0), ("b", 3.0), ("c", 2.0)], **kw)
    assert broken.verdict == "fails" and broken.measured == -1.0
    assert ordered("o", "s", values=[("a", 1.0), ("b", 1.0)], **kw).verdict == "fails"
    overlapping = [("a", est(1.0, 0.5, 1.5)), ("b", est(1.2, 0.9, 1.6))]
    assert ordered("o", "s", values=overlapping, **kw).verdict == "inconclusive"
    decreasing = ordered("o", "s", values=[("a", 3.0), ("b", 1.0)], increasing=False, **kw)
    assert decreasing.passed and "a > b" in decreasing.expected
    with pytest.raises(ValueError):
        ordered("o", "s", values=[("a", 1.0)], **kw)


def test_correlated():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    assert (
        correlated("c", "s", quantity="ρ", x=x, y=x + 0.1 * rng.normal(size=50), source=SRC).verdict
        == "holds"
    )
    assert correlated("c", "s", quantity="ρ", x=x, y=-x, source=SRC).verdict == "fails"
    noise = correlated("c", "s", quantity="ρ", x=x, y=rng.normal(size=50), source=SRC)
    assert noise.verdict == "inconclusive" and noise.n == 50
    assert correlated("c", "s", quantity="ρ", x=x, y=-x, positive=False, source=SRC).passed


def test_judged_and_hand_built_claim():
    assert (
        judged("j", "s", expected="a and b", measured=1.0, holds=None, source=SRC).verdict
        == "inconclusive"
    )
    assert not judged("j", "s", expected="a", measured=1.0, holds=False, source=SRC).passed
    assert Claim("h", "s", "e", 1.0, True).verdict == "holds"
    assert Claim("h", "s", "e", 1.0, False).verdict == "fails"


def test_intervals():
    estimate = mean_ci(np.random.default_rng(1).normal(2.0, 1.0, size=200))
    assert estimate.low < 2.0 < estimate.high and estimate.n == 200
    assert estimate == mean_ci(np.random.default_rng(1).normal(2.0, 1.0, size=200))  # seeded
    assert math.isinf(mean_ci([1.0, 2.0]).low)
    assert mean_ci([3.0, 3.0, 3.0]).low == 3.0
    paired = statistic_ci(
        [[1.0, 2.0, 3.0, 4.0, 5.0], [1.1, 2.1, 3.1, 4.1, 5.1]], lambda a, b: np.mean(b - a)
    )
    assert paired.low == pytest.approx(0.1) and paired.high == pytest.approx(0.1)
    wilson = proportion_ci(0, 20)
    assert wilson.low == 0.0 and 0.1 < wilson.high < 0.2
    rho = correlation_ci([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5])
    assert rho.low < rho.value < rho.high


# --- issue 12: every builder fails on a counter-example, straddling intervals are inconclusive


@pytest.mark.parametrize(
    "build",
    [
        lambda m: below("c", "s", quantity="q", measured=m, bound=1.0, source=SRC),
        lambda m: above("c", "s", quantity="q", measured=m, bound=1.0, source=SRC),
        lambda m: inside("c", "s", quantity="q", measured=m, low=0.0, high=1.0, source=SRC),
        lambda m: within("c", "s", quantity="q", measured=m, target=0.5, tolerance=1, source=SRC),
        lambda m: ordered("c", "s", quantity="q", values=[("a", m), ("b", 2.0)], source=SRC),
    ],
)
def test_a_nan_measurement_fails_every_builder(build):
    assert build(float("nan")).verdict == "fails"


def test_within_reads_its_interval():
    kw = dict(quantity="x", target=0.5, tolerance=0.1, source=SRC)
    assert within("c", "s", measured=est(0.52, 0.45, 0.58), **kw).verdict == "holds"
    assert within("c", "s", measured=est(0.58, 0.55, 0.7), **kw).verdict == "inconclusive"
    assert within("c", "s", measured=est(0.8, 0.7, 0.9), **kw).verdict == "fails"


@pytest.mark.filterwarnings("ignore:An input array is constant")
def test_correlated_needs_enough_pairs():
    few = correlated("c", "s", quantity="ρ", x=[1, 2, 3], y=[1, 2, 3.5], source=SRC)
    assert few.verdict in ("holds", "inconclusive")  # ρ = 1 exactly: the interval is a point
    few = correlated("c", "s", quantity="ρ", x=[1, 2, 3], y=[1, 3, 2], source=SRC)
    assert few.verdict == "inconclusive" and math.isinf(few.ci_high)
    flat = correlated("c", "s", quantity="ρ", x=range(10), y=[1.0] * 10, source=SRC)
    assert flat.verdict == "fails"  # no correlation measured (NaN)


def test_argmin_ci_locates_a_clear_minimum_and_widens_with_noise():
    grid = np.linspace(0, 0.9, 10)
    rng = np.random.default_rng(0)
    clear = np.abs(grid - 0.2) + 0.01 * rng.standard_normal((20, 10))
    estimate = argmin_ci(grid, clear)
    assert (estimate.value, estimate.low, estimate.high, estimate.n) == (0.2, 0.2, 0.2, 20)
    claim = inside("c", "s", quantity="b", measured=estimate, low=0.15, high=0.35, source=SRC)
    assert claim.verdict == "holds"
    noisy = argmin_ci(grid, np.abs(grid - 0.2) + 2.0 * rng.standard_normal((5, 10)))
    assert noisy.high - noisy.low >= 0.3
    claim = inside("c", "s", quantity="b", measured=noisy, low=0.15, high=0.35, source=SRC)
    assert claim.verdict == "inconclusive"
    assert math.isinf(argmin_ci(grid, clear[:2]).high)  # two rows: no interval


def test_boundary_bracket_and_tail_range():
    values = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    clean = np.array([True, True, True, False, False, False])
    assert boundary_bracket(values, clean) == pytest.approx((0.35, 0.3, 0.4, 1))
    chaotic = np.array([True, False, True, False, True, False])
    assert boundary_bracket(values, chaotic) == pytest.approx((0.15, 0.1, 0.6, 5))
    assert all(math.isnan(v) for v in boundary_bracket(values, np.ones(6, bool))[:3])
    descending = boundary_bracket(values[::-1], clean[::-1])  # read from the other side
    assert descending[1:3] == pytest.approx((0.3, 0.4))
    assert tail_range(np.array([5.0, 4, 3, 2, 1, 9, 1, 1, 1, 1]), tail=0.5) == (1.0, 9.0)
