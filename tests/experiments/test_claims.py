"""Criteria and claims: each criterion can hold, fail and (with an interval) be inconclusive;
claim() fills expected, the interval fields, not tested and beyond the seed; ClaimSpec evaluates
a claim from stored results and exposes its criterion to control tests."""

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
    simultaneous_level,
    statistic_ci,
    tail_range,
)
from relulab.experiments.claims import Claim, ClaimSpec, Reading, claim, evaluate
from relulab.experiments.criteria import (
    Above,
    AllOf,
    Below,
    Correlated,
    Criterion,
    Equivalent,
    Every,
    Inside,
    NoneBeyond,
    Ordered,
    Within,
    combine,
)

SRC = "seed 999 §1"


def est(value, low, high, n=10, level=0.95):
    return Estimate(value, low, high, n, level)


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
    assert Below("q", 1.0).judge(measured) == verdict
    made = claim("c", "s.", criterion=Below("q", 1.0), measured=measured, source=SRC)
    assert made.verdict == verdict and made.passed == (verdict == "holds")
    assert made.expected.startswith("q < 1 — seed 999 §1")


def test_below_or_equal_and_above():
    assert Below("q", 1.0, or_equal=True).judge(1.0) == "holds"
    assert Above("q", 1.0).judge(2.0) == "holds"
    assert Above("q", 1.0).judge(0.5) == "fails"
    assert Above("q", 1.0).judge(est(1.2, 0.9, 1.5)) == "inconclusive"
    assert Above("q", 1.0).judge(est(0.5, 0.1, 0.9)) == "fails"
    assert Above("q", 1.0, or_equal=True).text() == "q ≥ 1"


def test_interval_fields_expected_note_and_scope():
    made = claim(
        "c",
        "s",
        criterion=Below("q", 1.0, unit="steps"),
        measured=est(0.5, 0.4, 0.6, n=30),
        source=SRC,
        note="threshold inferred",
        scope="early in training",
        unit="steps",
    )
    assert (made.n, made.ci_low, made.ci_high, made.ci_level) == (30, 0.4, 0.6, 0.95)
    assert "verdict from the 95% CI" in made.expected
    assert "the seed's scope: early in training" in made.expected
    assert made.expected.endswith("threshold inferred")
    assert "1 steps" in made.expected and made.unit == "steps" and made.scope


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
    assert Inside("b", 0.2, 0.3).judge(measured) == verdict


def test_within_absolute_and_relative():
    assert Within("x", 0.5, 0.1).judge(0.55) == "holds"
    assert Within("x", 0.5, 0.1).judge(0.65) == "fails"
    relative = Within("x", 100.0, 0.02, relative=True)
    assert relative.judge(105.0) == "fails" and "±2%" in relative.text()
    assert Within("x", 0.5, 0.1).judge(est(0.52, 0.45, 0.58)) == "holds"
    assert Within("x", 0.5, 0.1).judge(est(0.58, 0.55, 0.7)) == "inconclusive"
    assert Within("x", 0.5, 0.1).judge(est(0.8, 0.7, 0.9)) == "fails"
    with pytest.raises(ValueError):
        Within("x", 0.5, -0.1)
    with pytest.raises(ValueError):
        Inside("x", 1.0, 0.0)


def test_ordered():
    increasing = Ordered("loss", names=("a", "b", "c"))
    assert increasing.judge([("a", 1.0), ("b", 2.0), ("c", 3.0)]) == "holds"
    broken = [("a", 1.0), ("b", 3.0), ("c", 2.0)]
    assert increasing.judge(broken) == "fails" and increasing.headline(broken) == -1.0
    assert Ordered("loss").judge([("a", 1.0), ("b", 1.0)]) == "fails"
    overlapping = [("a", est(1.0, 0.5, 1.5)), ("b", est(1.2, 0.9, 1.6))]
    assert Ordered("loss").judge(overlapping) == "inconclusive"
    decreasing = Ordered("loss", increasing=False, names=("a", "b"))
    assert decreasing.judge([("a", 3.0), ("b", 1.0)]) == "holds" and "a > b" in decreasing.text()
    with pytest.raises(ValueError):
        Ordered("loss").judge([("a", 1.0)])
    made = claim("o", "s", criterion=increasing, measured=broken, source=SRC)
    assert made.measured == -1.0 and "b: 3" in made.detail


def test_correlated():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    positive = Correlated("ρ")
    assert positive.judge(correlation_ci(x, x + 0.1 * rng.normal(size=50))) == "holds"
    assert positive.judge(correlation_ci(x, -x)) == "fails"
    noise = correlation_ci(x, rng.normal(size=50))
    assert positive.judge(noise) == "inconclusive" and noise.n == 50
    assert Correlated("ρ", positive=False).judge(correlation_ci(x, -x)) == "holds"
    assert positive.judge(0.0) == "fails"


@pytest.mark.filterwarnings("ignore:An input array is constant")
def test_correlated_needs_enough_pairs():
    few = correlation_ci([1, 2, 3, 4, 5], [1, 3, 2, 5, 4])
    assert Correlated("ρ").judge(few) == "inconclusive" and math.isinf(few.high)  # Spearman < 10
    flat = correlation_ci(range(10), [1.0] * 10)
    assert Correlated("ρ").judge(flat) == "fails"  # no correlation measured (NaN)


def test_all_of_combines_its_parts():
    both = AllOf({"relu": Above("relu", 2.0), "tanh": Below("tanh", 1.5)}, headline_part="tanh")
    assert both.judge({"relu": 5.0, "tanh": 1.0}) == "holds"
    assert both.judge({"relu": 5.0, "tanh": 2.0}) == "fails"
    assert both.judge({"relu": est(2.5, 1.8, 3.0), "tanh": 1.0}) == "inconclusive"
    assert both.headline({"relu": 5.0, "tanh": 1.0}) == 1.0
    assert "relu > 2 and tanh < 1.5" == both.text()
    with pytest.raises(ValueError):
        both.judge({"relu": 5.0})
    with pytest.raises(ValueError):
        AllOf({})
    made = claim("a", "s", criterion=both, measured={"relu": 5.0, "tanh": 2.0}, source=SRC)
    assert made.verdict == "fails" and "tanh: 2 (fails)" in made.detail
    assert combine(["holds", "holds"]) == "holds" and combine(["inconclusive", "fails"]) == "fails"


def test_every_needs_simultaneous_intervals():
    every = Every(Below("excess", 0.0), points_name="layer")
    per_point = {f"l={k}": est(-0.1, -0.2, -0.05) for k in range(5)}
    with pytest.raises(ValueError, match="simultaneous_level"):
        every.judge(per_point)
    level = simultaneous_level(5)
    together = {f"l={k}": est(-0.1 * k - 0.1, -0.1 * k - 0.2, -0.05, level=level) for k in range(5)}
    assert every.judge(together) == "holds"
    together["l=2"] = est(0.1, -0.05, 0.2, level=level)
    assert every.judge(together) == "inconclusive"
    assert every.headline(together) is together["l=2"]  # the least favourable point, a metric
    assert every.judge({"a": 0.5, "b": -1.0}) == "fails"  # plain numbers need no correction
    assert "at every layer" in every.text()


def test_none_beyond_fails_only_on_a_significant_violation():
    bound = NoneBeyond(Below("excess", 0.0), points_name="layer")
    tight = {f"l={k}": mean_ci(np.random.default_rng(k).normal(0.0, 0.02, 30)) for k in range(5)}
    assert bound.judge(tight) == "holds"  # on the bound everywhere: no significant excess
    assert "Holm p" in bound.describe(tight) and "at every" not in bound.text()
    beyond = dict(tight, **{"l=9": mean_ci(np.random.default_rng(9).normal(0.05, 0.02, 30))})
    assert bound.judge(beyond) == "fails" and bound.headline(beyond) is beyond["l=9"]
    floor = NoneBeyond(Above("ratio", 1.0))
    assert floor.judge({"a": 1.2, "b": 1.0}) == "holds" and floor.judge({"a": 0.9}) == "fails"
    assert floor.judge({"a": float("nan")}) == "fails"
    with pytest.raises(ValueError):
        bound.judge({})


def _sample(mean: float, sd: float = 0.02, n: int = 30, seed: int = 0) -> Estimate:
    """``n`` samples with exactly this mean and sd (so the t statistic is set)."""
    z = np.random.default_rng(seed).standard_normal(n)
    return mean_ci(mean + sd * (z - z.mean()) / z.std(ddof=1))


def test_equivalent_holds_fails_and_can_be_inconclusive():
    """A bound with a margin: every point shown inside holds, a point that sits on the margin
    (neither shown inside nor outside) leaves it inconclusive, a point shown outside after Holm
    fails — each point's 95 % interval here is ± 0.0075 (sd 0.02, 30 samples)."""
    bound = Equivalent(Below("excess", 0.01), points_name="layer")
    inside = {f"l={k}": _sample(-0.005 * k, seed=k) for k in range(10)}
    assert bound.judge(inside) == "holds"
    assert set(bound.verdicts(inside).values()) == {"holds"}
    undecided = dict(inside, **{"l=9": _sample(0.01, seed=9)})
    assert bound.judge(undecided) == "inconclusive"
    assert bound.verdicts(undecided)["l=9"] == "inconclusive"
    assert bound.headline(undecided) is undecided["l=9"]  # the point farthest beyond: a metric
    beyond = dict(inside, **{"l=9": _sample(0.05, seed=9)})
    assert bound.judge(beyond) == "fails" and bound.verdicts(beyond)["l=9"] == "fails"
    floor = Equivalent(Above("ratio", 1.0))
    assert floor.judge({"a": _sample(1.05), "b": 1.2}) == "holds"
    assert floor.judge({"a": _sample(0.9)}) == "fails"
    with pytest.raises(ValueError):
        bound.judge({})
    with pytest.raises(ValueError, match="alpha"):
        Equivalent(Below("q", 1.0), alpha=0.0)


def test_equivalent_tests_a_band_with_two_one_sided_tests():
    """Within/Inside: each point is tested against both edges (TOST); it holds only when shown
    inside both, fails when shown outside either."""
    band = Equivalent(Within("ratio", 1.0, 0.05))
    assert band.judge({"a": _sample(1.0), "b": _sample(1.02, seed=1)}) == "holds"
    assert band.judge({"a": _sample(1.0), "b": _sample(1.05, seed=1)}) == "inconclusive"
    assert band.judge({"a": _sample(1.0), "b": _sample(0.9, seed=1)}) == "fails"
    assert band.judge({"a": _sample(1.0), "b": _sample(1.1, seed=1)}) == "fails"
    inside = Equivalent(Inside("x", 0.0, 1.0))
    assert inside.judge({"a": 0.0, "b": 1.0}) == "holds"  # a band's edges are inside
    assert inside.judge({"a": 0.5, "b": 1.5}) == "fails"


def test_equivalent_reads_exact_and_unusable_points():
    strict, loose = Equivalent(Below("q", 1.0)), Equivalent(Below("q", 1.0, or_equal=True))
    assert strict.judge({"a": 1.0}) == "fails" and loose.judge({"a": 1.0}) == "holds"
    assert strict.judge({"a": 0.5, "b": float("nan")}) == "fails"  # a NaN is outside
    assert strict.judge({"a": mean_ci([3.0, 3.0, 3.0])}) == "fails"  # exact: no interval
    assert strict.judge({"a": mean_ci([0.1, 0.2])}) == "inconclusive"  # too few for a t-test
    with pytest.raises(ValueError, match="standard error"):
        strict.judge({"a": est(0.5, 0.4, 0.6)})  # an interval without a standard error


def test_equivalent_keeps_its_level_without_a_correction_to_hold():
    """The intersection–union test: with one point exactly on the margin, "holds" is said in at
    most α of draws (each point's own one-sided test, no Bonferroni); with 10 points exactly on
    it, "fails" (Holm) is said in at most α of draws, and "holds" almost never."""
    rng = np.random.default_rng(43)
    bound = Equivalent(Below("excess", 0.0))
    holds = [
        bound.judge({"edge": mean_ci(rng.normal(0.0, 1.0, 10)), "far": -1.0}) == "holds"
        for _ in range(2000)
    ]
    assert np.mean(holds) < 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
    verdicts = [
        bound.judge({k: mean_ci(rng.normal(0.0, 1.0, 10)) for k in range(10)}) for _ in range(400)
    ]
    assert verdicts.count("fails") / 400 < 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)
    assert verdicts.count("holds") == 0


def test_equivalent_needs_no_correction_where_every_needs_one():
    """49 points each shown inside at 95 % (one-sided) hold; Every would need each 99.9 %
    interval inside, which the same data do not give."""
    points = {f"l={k}": _sample(-0.0075, seed=k) for k in range(49)}  # t ≈ 2.05 below 0
    assert Equivalent(Below("excess", 0.0)).judge(points) == "holds"
    level = simultaneous_level(49)
    together = {k: v.at_level(level) for k, v in points.items()}
    assert Every(Below("excess", 0.0)).judge(together) == "inconclusive"


def test_equivalent_describes_every_point_and_says_how_it_decides():
    points = {f"l={k}": _sample(0.01 * k - 0.05, seed=k) for k in range(12)}
    bound = Equivalent(Below("excess", 0.0))
    detail = bound.describe(points)
    assert detail.startswith("l=11:") and "p inside" in detail and "Holm p outside" in detail
    assert detail.endswith("… and 4 more points (least certain first)")
    assert "equivalence" in bound.text()
    made = claim("eq", "s", criterion=bound, measured=points, source=SRC)
    assert made.verdict == "fails" and "intersection–union" in made.expected
    assert "CI" not in made.expected


def test_criteria_are_criterion_protocol_objects():
    for criterion in (
        Below("q", 1),
        Above("q", 1),
        Inside("q", 0, 1),
        Within("q", 0, 1),
        Ordered("q"),
        Correlated("q"),
        AllOf({"a": Below("q", 1)}),
        Every(Below("q", 1)),
        NoneBeyond(Below("q", 1)),
        Equivalent(Below("q", 1)),
    ):
        assert isinstance(criterion, Criterion)


def test_not_tested_keeps_the_measurement_and_says_why():
    made = claim(
        "n",
        "s",
        criterion=Below("q", 1.0),
        measured=0.5,
        source=SRC,
        untested="150 steps, the seed's statement is about 10k",
    )
    assert made.verdict == "not tested" and not made.passed and made.measured == 0.5
    assert made.why_not_tested.startswith("150 steps")


def test_beyond_seed_and_hand_built_claim():
    made = claim("b", "s", criterion=Below("q", 1.0), measured=0.5, source=SRC, beyond_seed=True)
    assert made.beyond_seed and made.verdict == "holds"
    assert Claim("h", "s", "e", 1.0, True).verdict == "holds"
    assert Claim("h", "s", "e", 1.0, False).verdict == "fails"


def test_claim_spec_evaluates_judges_and_names_its_controls():
    spec = ClaimSpec(
        "lr-0.2-converges",
        "lr 0.2 converges.",
        source=SRC,
        criterion=lambda config: Below("final loss", config["tol"]),
        measure=lambda results, config: Reading(results["loss"], detail="from the store"),
        untested=lambda config: "no budget" if config.get("short") else "",
    )
    assert spec.test_name == "test_lr_0_2_converges"
    assert spec.judge(1e-6, {"tol": 1e-3}) == "holds"
    assert spec.judge(1e-2, {"tol": 1e-3}) == "fails"
    made = spec.evaluate({"loss": 1e-6}, {"tol": 1e-3})
    assert made.verdict == "holds" and made.detail == "from the store"
    assert spec.evaluate({"loss": 1e-6}, {"tol": 1e-3, "short": True}).verdict == "not tested"
    assert [c.id for c in evaluate([spec], {"loss": 1.0}, {"tol": 1e-3})] == [spec.id]
    with pytest.raises(ValueError, match="unique"):
        evaluate([spec, spec], {"loss": 1.0}, {"tol": 1e-3})


@pytest.mark.parametrize(
    "criterion",
    [Below("q", 1.0), Above("q", 1.0), Inside("q", 0.0, 1.0), Within("q", 0.5, 1.0)],
)
def test_a_nan_measurement_fails_every_criterion(criterion):
    assert criterion.judge(float("nan")) == "fails"
    assert Ordered("q").judge([("a", float("nan")), ("b", 2.0)]) == "fails"


def test_intervals():
    estimate = mean_ci(np.random.default_rng(1).normal(2.0, 1.0, size=200))
    assert estimate.low < 2.0 < estimate.high and estimate.n == 200
    assert estimate == mean_ci(np.random.default_rng(1).normal(2.0, 1.0, size=200))
    assert math.isinf(mean_ci([1.0, 2.0]).low)
    assert mean_ci([3.0, 3.0, 3.0]).low == 3.0
    paired = statistic_ci(
        [[1.0, 2.0, 3.0, 4.0, 5.0], [1.1, 2.1, 3.1, 4.1, 5.1]], lambda a, b: np.mean(b - a)
    )
    assert paired.low == pytest.approx(0.1) and paired.high == pytest.approx(0.1)
    exact = proportion_ci(0, 20)
    assert exact.low == 0.0 and 0.1 < exact.high < 0.2
    rho = correlation_ci(range(12), [2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11])
    assert rho.low < rho.value < rho.high


def test_argmin_ci_locates_a_clear_minimum_and_widens_with_noise():
    grid = np.linspace(0, 0.9, 10)
    rng = np.random.default_rng(0)
    clear = np.abs(grid - 0.2) + 0.01 * rng.standard_normal((20, 10))
    estimate = argmin_ci(grid, clear)
    assert (estimate.value, estimate.low, estimate.high, estimate.n) == (0.2, 0.2, 0.2, 20)
    assert Inside("b", 0.15, 0.35).judge(estimate) == "holds"
    noisy = argmin_ci(grid, np.abs(grid - 0.2) + 2.0 * rng.standard_normal((5, 10)))
    assert noisy.high - noisy.low >= 0.3
    assert Inside("b", 0.15, 0.35).judge(noisy) == "inconclusive"
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


def test_an_exact_reading_says_so_instead_of_a_100_percent_ci():
    exact = Estimate(0.002, 0.002, 0.002, 1356, 1.0, "exact count")
    made = claim("exact", "s", criterion=Below("fraction", 0.05), measured=exact, source="seed 001")
    assert "verdict exact (a deterministic reading: no interval)" in made.expected
    assert "100% CI" not in made.expected


def test_family_details_list_the_least_favourable_points_first_and_count_the_rest():
    points = {f"l={k}": float(k) / 100 for k in range(20)}  # plain numbers: no correction
    every = Every(Below("excess", 0.5)).describe(points)
    assert every.startswith("l=19:") and every.endswith(
        "… and 12 more points (least favourable first)"
    )
    bound = NoneBeyond(Below("excess", 0.15)).describe(points)
    assert "Holm p = 0" in bound.split(";")[0] and "… and 12 more points" in bound
    made = claim(
        "holm", "s", criterion=NoneBeyond(Below("excess", 0.5)), measured=points, source=SRC
    )
    assert "Holm-adjusted" in made.expected and "CI" not in made.expected
