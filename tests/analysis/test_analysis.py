"""The shared analysis helpers: selection by condition, curve readings, estimator bias."""

import math

import numpy as np
import pytest
import torch

from relulab.analysis import (
    first_below,
    first_match,
    fit_log_slope,
    group_means,
    interpolated_crossing,
    locate_boundary,
    longest_plateau,
    plateau_level,
    power_law_exponent,
    sample_bias_corrected_ratio,
    where,
)
from relulab.report.plotting import Figure, plt, save
from relulab.store import UnitResult
from relulab.tasks import two_inputs_with_correlation

CONDITIONS = [
    {"b2": float(b2), "parameterisation": p, "seed": s}
    for p in ("standard", "reparam")
    for s in (0, 1)
    for b2 in np.linspace(-2.0, -0.5, 16)
]


# --- selection ---------------------------------------------------------------------------------
def test_where_matches_floats_within_isclose_and_other_values_exactly():
    found = where(CONDITIONS, b2=-1.1)  # linspace gives -1.0999999999999999
    assert len(found) == 4
    assert all(math.isclose(CONDITIONS[i]["b2"], -1.1) for i in found)
    both = where(CONDITIONS, b2=-1.1, parameterisation="reparam", seed=1)
    assert both.tolist() == [63 - 6]
    assert where(CONDITIONS, parameterisation="other").size == 0
    assert where(CONDITIONS, parameterisation="reparam").dtype.kind == "i"


def test_where_without_criteria_selects_everything_and_ints_are_exact():
    assert where(CONDITIONS).tolist() == list(range(len(CONDITIONS)))
    assert where(CONDITIONS, seed=1).size == 32
    assert where([{"n": 3}], n=3.0000000001).size == 1  # a float criterion: isclose
    assert where([{"n": 3}], n=4).size == 0


def test_first_match_is_the_first_index_or_none():
    assert first_match(CONDITIONS, parameterisation="reparam") == 32
    assert first_match(CONDITIONS, b2=-1.1) == int(where(CONDITIONS, b2=-1.1)[0])
    assert first_match(CONDITIONS, b2=-3.0) is None


def test_group_means_average_each_level_and_leave_missing_levels_nan():
    values = np.array([1.0, 3.0, 10.0, 20.0, 5.0])
    keys = np.array([0.1, 0.1, 0.2, 0.2, 0.3])
    means = group_means(values, keys, [0.3, 0.1, 0.2, 0.4])
    assert means[:3].tolist() == [5.0, 2.0, 15.0]
    assert math.isnan(means[3])
    assert group_means(values, keys + 1e-12, [0.1]).tolist() == [2.0]  # keys match by isclose


# --- curves ------------------------------------------------------------------------------------
def test_plateau_level_ignores_a_spike_that_the_last_step_would_not():
    curve = np.full(100, 0.02)
    curve[:20] = np.linspace(1.0, 0.02, 20)
    curve[-1] = 5.0  # an Adam spike on the plateau at the last record
    assert plateau_level(curve) == pytest.approx(0.02)
    assert plateau_level(curve, tail=0.001) == 5.0  # at least one point: the last one
    assert plateau_level(np.array([3.0, 1.0, 2.0]), tail=1.0) == 2.0


def test_longest_plateau_measures_the_flat_stretch_above_the_floor():
    steps = np.arange(0, 20_000, 10)
    saddle = (steps >= 2_000) & (steps < 7_000)
    loss = np.where(steps < 2_000, 2.0 - steps / 2_000, 0.5)  # steep: no flat window
    loss = np.where(steps >= 7_000, 1e-9, loss)  # converged: below the floor, not a plateau
    loss = np.where(saddle, 0.5, loss)
    length = longest_plateau(steps, loss, floor=1e-4)
    # records 2000..(7000 - 500 - 10) are flat over the next 500 steps: 4500 steps, + the window
    assert length == 5_000
    assert longest_plateau(steps, np.exp(-steps / 100.0), floor=1e-30) == 0  # never flat
    flat_converged = np.full_like(steps, 1e-9, dtype=float)
    assert longest_plateau(steps, flat_converged, floor=1e-4) == 0


def test_longest_plateau_respects_the_tolerance():
    steps = np.arange(0, 5_000, 100)
    drifting = 0.5 * np.exp(-0.0002 * steps)  # falls 10 % per 500 steps: never flat at 5 %
    assert longest_plateau(steps, drifting, floor=0.0) == 0
    assert longest_plateau(steps, drifting, floor=0.0, rtol=0.2) == 4_500 + 500


def test_first_below_returns_the_recorded_step_or_nan():
    steps = np.array([0, 10, 20, 30])
    values = np.array([1.0, 0.5, 1e-5, 1e-9])
    assert first_below(steps, values, 1e-4) == 20.0
    assert first_below(steps, values, 1.0) == 10.0  # strictly below
    assert math.isnan(first_below(steps, values, 1e-12))


def test_interpolated_crossing_interpolates_and_handles_the_edges():
    x = np.array([0.0, 0.5, 1.0])
    assert interpolated_crossing(x, np.array([3.0, 2.0, 1.0]), 1.5) == pytest.approx(0.75)
    assert interpolated_crossing(x, np.array([1.0, 0.5, 0.2]), 1.5) == 0.0  # already below
    assert math.isnan(interpolated_crossing(x, np.array([3.0, 2.0, 1.6]), 1.5))
    # the result does not depend on the grid for a linear curve
    fine = np.linspace(0, 1, 101)
    assert interpolated_crossing(fine, 3 - 2 * fine, 1.5) == pytest.approx(0.75)


def test_locate_boundary_midpoint_and_flip_count():
    values = np.array([-0.5, -1.0, -1.5, -2.0])
    assert locate_boundary(values, np.array([True, True, False, False])) == (-1.25, 1)
    boundary, flips = locate_boundary(values, np.array([True, False, True, False]))
    assert (boundary, flips) == (-0.75, 3)
    boundary, flips = locate_boundary(values, np.ones(4, bool))
    assert math.isnan(boundary) and flips == 0


def test_log_slope_and_power_law_recover_their_exponents_and_differ():
    layers = np.arange(1.0, 51.0)
    exponential = 7.0 * np.exp(-0.383 * layers)
    power = 3.0 * layers**0.5
    assert fit_log_slope(layers, exponential) == pytest.approx(-0.383)
    assert power_law_exponent(layers, power) == pytest.approx(0.5)
    assert power_law_exponent(layers, 1.0 / layers) == pytest.approx(-1.0)
    # each fit is linear only in its own coordinates
    assert fit_log_slope(layers, power) != pytest.approx(0.5, abs=0.1)


# --- estimators --------------------------------------------------------------------------------
def test_sample_bias_corrected_ratio_closed_form_and_limits():
    assert float(sample_bias_corrected_ratio(0.0, 101)) == pytest.approx(0.1)
    ratios = np.array([0.5, 2.0, 8.0])
    corrected = sample_bias_corrected_ratio(ratios, 100)
    assert np.all(corrected > ratios)  # the estimator reads high
    assert sample_bias_corrected_ratio(ratios, 10**9) == pytest.approx(ratios, rel=1e-6)


def test_sample_bias_corrected_ratio_matches_monte_carlo():
    rng = np.random.default_rng(1)
    n, m, v = 50, 0.3, 1.0
    u = m + v * rng.standard_normal((2000, n, 40))  # 2000 trials, n samples, 40 units
    empirical = np.sqrt((u.mean(1) ** 2).sum(1) / u.var(1).sum(1))
    assert np.mean(empirical**2) == pytest.approx(
        float(sample_bias_corrected_ratio(m / v, n)) ** 2, rel=0.02
    )


# --- tasks, store and figures used by the experiments ------------------------------------------
def test_two_inputs_have_exactly_the_requested_correlation_and_length():
    for c0 in (-0.7, 0.0, 0.5, 0.99):
        x = two_inputs_with_correlation(257, c0, torch.Generator().manual_seed(4))
        assert x.shape == (2, 257) and x.dtype == torch.float64
        q = x.square().mean(dim=1)
        assert q.tolist() == pytest.approx([1.0, 1.0], abs=1e-12)
        assert float((x[0] * x[1]).mean()) == pytest.approx(c0, abs=1e-12)


def test_forward_only_unit_result_has_no_divergence():
    result = UnitResult.forward_only(
        [{"alpha": 1.0}, {"alpha": 10.0}],
        np.arange(1, 4),
        {"norm": np.ones((2, 3))},
        {"norm": np.ones(2)},
    )
    assert result.n_networks == 2
    assert result.diverged.tolist() == [False, False]
    assert result.diverged_step.tolist() == [-1, -1]
    assert result.arrays == {}


def test_save_writes_a_deterministic_png_closes_and_returns_the_record(tmp_path):
    def draw():
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        return fig

    first = draw()
    record = save(first, tmp_path, "a.png", "A line.")
    assert record == Figure("a.png", "A line.")
    assert not plt.fignum_exists(first.number)
    (tmp_path / "b").mkdir()
    save(draw(), tmp_path / "b", "a.png", "A line.")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b" / "a.png").read_bytes()


def test_rows_statistic_ci_resamples_whole_rows():
    from relulab.analysis import rows_statistic_ci, statistic_ci

    table = np.random.default_rng(1).normal(size=(25, 6))
    batched = rows_statistic_ci(table, lambda t: t.mean(axis=-2).max(axis=-1))
    one_by_one = statistic_ci(
        [np.arange(25.0)], lambda i: float(table[i.astype(int)].mean(axis=0).max())
    )
    assert batched == one_by_one  # the same resamples, evaluated in one call
    assert batched.low < table.mean(axis=0).max() < batched.high and batched.n == 25
    constant = rows_statistic_ci(np.ones((5, 3)), lambda t: t.mean(axis=-2).min(axis=-1))
    assert (constant.low, constant.high) == (1.0, 1.0)
    with pytest.raises(ValueError, match="2-D"):
        rows_statistic_ci(np.ones(5), lambda t: t.mean(axis=-1))


def test_same_sign_fraction_matches_monte_carlo_units():
    from relulab.analysis import same_sign_fraction

    rng = np.random.default_rng(2)
    n, ratio = 100, 3.0
    means = ratio * rng.standard_normal(20_000)  # m = r·v over units, v = 1
    samples = means[:, None] + rng.standard_normal((20_000, n))
    same_sign = np.mean((samples > 0).all(axis=1) | (samples <= 0).all(axis=1))
    assert float(same_sign_fraction(ratio, n)) == pytest.approx(same_sign, abs=0.01)
    assert float(same_sign_fraction(0.0, n)) == pytest.approx(2.0 ** (1 - n))
    assert float(same_sign_fraction(1e6, n)) == pytest.approx(1.0)


def test_mean_difference_ci_covers_the_true_difference_and_needs_three_samples():
    from relulab.analysis import mean_difference_ci

    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 1.0, 40), rng.normal(0.0, 1.0, 25)
    estimate = mean_difference_ci(a, b)
    assert estimate.value == pytest.approx(a.mean() - b.mean())
    assert estimate.low < 1.0 < estimate.high and estimate.low > 0 and estimate.n == 25
    # an interval from unequal spreads is wider than the equal-spread one
    wide = mean_difference_ci(a * 5, b)
    assert wide.high - wide.low > estimate.high - estimate.low
    assert math.isinf(mean_difference_ci([1.0, 2.0], [0.0, 1.0, 2.0]).low)
