"""Mean-field maps: identities, χ1 by finite differences, phases, and a width-2048 simulation."""

import time

import numpy as np
import pytest
import torch

from relulab.init import correlated_
from relulab.tasks import two_inputs_with_correlation
from relulab.theory import (
    batchnorm_gradient_slope,
    batchnorm_sample_std,
    chi1,
    correlation_map,
    correlation_trajectory,
    get_kernel,
    length_fixed_point,
    normalised_arccos_kernel,
    normalised_arccos_kernel_derivative,
    phase_diagram,
    relu_bounded_limit,
    relu_family_length_fixed_point,
    sample_statistics,
)

RELU = get_kernel("relu")


def test_normalised_arccos_kernel_identities():
    assert normalised_arccos_kernel(0.0) == pytest.approx(1 / np.pi, rel=1e-15)
    assert normalised_arccos_kernel(1.0) == pytest.approx(1.0, rel=1e-15)
    assert normalised_arccos_kernel_derivative(1.0) == pytest.approx(1.0, rel=1e-15)
    c = np.linspace(-0.99, 0.99, 41)
    h = 1e-6
    finite_difference = (normalised_arccos_kernel(c + h) - normalised_arccos_kernel(c - h)) / (
        2 * h
    )
    np.testing.assert_allclose(normalised_arccos_kernel_derivative(c), finite_difference, rtol=1e-7)
    assert np.all(normalised_arccos_kernel(c) > c), "K(c) > c on [−1, 1): correlations grow"
    np.testing.assert_allclose(normalised_arccos_kernel(c), RELU.cross(1, 1, c) / 0.5, rtol=1e-13)


def test_sample_statistics_match_the_seed_numbers():
    statistics = sample_statistics(50)
    assert statistics.rho[0] == 0 and statistics.rho[1] == pytest.approx(1 / np.pi)
    np.testing.assert_allclose(statistics.mean**2 + statistics.std**2, 2.0)
    assert np.all(np.diff(statistics.mean_to_std_ratio) > 0)
    assert batchnorm_sample_std() == pytest.approx(0.826, abs=5e-4)
    assert 1 / batchnorm_sample_std() == pytest.approx(1.21, abs=5e-3)
    assert batchnorm_gradient_slope() == pytest.approx(-0.383, abs=5e-4)
    # sub-exponential: the per-layer contraction of 1 − ρ tends to 1 (K'(1) = 1)
    gaps = 1 - sample_statistics(2000).rho
    assert gaps[1000] / gaps[999] > gaps[20] / gaps[19] > 0.9


@pytest.mark.parametrize(
    ("a", "b", "sigma_w2", "sigma_b2"), [(1, 0, 1.5, 0.1), (1, -1, 2.5, 0.3), (1, 0.5, 1.2, 0.05)]
)
def test_chi1_is_the_slope_of_the_correlation_map_at_one(a, b, sigma_w2, sigma_b2):
    q_star = float(length_fixed_point(RELU, sigma_w2, sigma_b2, a, b))
    # the ReLU correlation map has a (1 − c)^{3/2} term at c = 1, so a one-sided difference
    # has an O(sqrt(h)) error: h = 1e-10 makes it ~1e-5, rounding adds ~1e-6
    h = 1e-10
    slope = (1.0 - correlation_map(RELU, 1.0 - h, q_star, sigma_w2, sigma_b2, a, b)) / h
    assert chi1(RELU, q_star, sigma_w2, a) == pytest.approx(slope, rel=1e-4)
    assert chi1(RELU, q_star, sigma_w2, a) == pytest.approx(sigma_w2 * a / 2)


def test_correlation_fixed_point_is_one_when_ordered_and_below_one_when_chaotic():
    from relulab.theory import correlation_fixed_point

    ordered_q = length_fixed_point(RELU, 1.5, 0.2)
    assert correlation_fixed_point(RELU, ordered_q, 1.5, 0.2) == pytest.approx(1.0, abs=1e-6)
    chaotic_q = length_fixed_point(RELU, 2.5, 0.3, a=1, b=-1)
    c_star = float(correlation_fixed_point(RELU, chaotic_q, 2.5, 0.3, a=1, b=-1))
    assert c_star < 0.99
    assert correlation_map(RELU, c_star, chaotic_q, 2.5, 0.3, 1, -1) == pytest.approx(
        c_star, abs=1e-10
    )
    unbounded = length_fixed_point(RELU, 3.0, 0.2)
    assert np.isnan(correlation_fixed_point(RELU, unbounded, 3.0, 0.2))


def test_relu_phase_boundaries_and_the_bounded_chaotic_window():
    w2 = np.linspace(0.05, 4.0, 200)
    b2 = np.linspace(0.01, 2.0, 200)
    started = time.perf_counter()
    uncorrelated = phase_diagram(RELU, w2, b2)
    anti = phase_diagram(RELU, w2, b2, a=1, b=-1)
    assert time.perf_counter() - started < 0.5, "a 200×200 grid is well under a second"
    assert uncorrelated.bounded_chaotic_fraction == 0.0  # seed 003: no chaotic phase for k ≥ 0
    assert anti.bounded_chaotic_fraction > 0
    window = anti.bounded & anti.chaotic
    assert window[:, w2 <= 2.0].sum() == 0 and window[:, w2 >= relu_bounded_limit(1, -1)].sum() == 0
    assert relu_bounded_limit(1, -1) == pytest.approx(2 * np.pi / (np.pi - 1))


@pytest.mark.parametrize("shift", [0.2, 0.5, -0.3])
@pytest.mark.parametrize("b", [0.0, -0.5])
def test_relu_b_closed_form_fixed_point_matches_iteration(shift, b):
    kernel = get_kernel("relu_b", shift=shift)
    w2, b2 = np.meshgrid(np.linspace(0.2, 3.5, 40), np.linspace(0.05, 1.5, 30))
    closed = relu_family_length_fixed_point(kernel, w2, b2, 1.0, b)
    iterated = length_fixed_point(kernel, w2, b2, 1.0, b, iterations=20000)
    slope = w2 * (0.5 + b / (2 * np.pi))
    away = np.abs(slope - 1) > 0.05  # near slope 1 iteration neither converges nor diverges
    np.testing.assert_array_equal(np.isfinite(closed)[away], np.isfinite(iterated)[away])
    both = away & np.isfinite(closed)
    np.testing.assert_allclose(closed[both], iterated[both], rtol=1e-8)


def _simulate_two_inputs(sigma_w2, sigma_b2, k, width, depth, c0, seed=0):
    """Two inputs of correlation c0 through one random ReLU net with correlated weights."""
    generator = torch.Generator().manual_seed(seed)
    h = two_inputs_with_correlation(width, c0, generator)
    lengths, correlations = [], []
    for layer in range(depth):
        weight = correlated_(
            torch.empty(width, width, dtype=torch.float64),
            sigma_w2=sigma_w2,
            k=k,
            generator=generator,
        )
        bias = torch.randn(width, generator=generator, dtype=torch.float64) * np.sqrt(sigma_b2)
        u = (torch.relu(h) if layer else h) @ weight.T + bias
        q1, q2 = (u**2).mean(dim=1)
        lengths.append(float(q1))
        correlations.append(float((u[0] * u[1]).mean() / torch.sqrt(q1 * q2)))
        h = u
    return np.array(lengths), np.array(correlations)


@pytest.mark.parametrize(("sigma_w2", "sigma_b2", "k"), [(2.0, 0.1, 0.0), (2.5, 0.3, -1.0)])
def test_correlation_trajectory_matches_a_width_2048_network(sigma_w2, sigma_b2, k):
    q0 = 1.0
    _, theory = correlation_trajectory(RELU, 0.3, q0, 12, sigma_w2, sigma_b2, a=1, b=k)
    sims = np.array(
        [_simulate_two_inputs(sigma_w2, sigma_b2, k, 2048, 12, 0.3, seed)[1] for seed in range(3)]
    )
    # finite-width fluctuations of a correlation at width 2048 are O(1/sqrt(N)) ≈ 0.02 per
    # layer; the tolerance 0.05 on the mean of 3 networks covers them with margin.
    np.testing.assert_allclose(sims.mean(axis=0), theory, atol=0.05)


def test_correlated_sampler_has_the_stated_row_covariance():
    fan_in, rows = 6, 200_000
    weight = correlated_(
        torch.empty(rows, fan_in, dtype=torch.float64),
        sigma_w2=2.0,
        a=1.5,
        b=-1.2,
        generator=torch.Generator().manual_seed(0),
    )
    empirical = np.cov(weight.numpy(), rowvar=False)
    expected = (2.0 / fan_in) * (1.5 * np.eye(fan_in) + (-1.2 / fan_in) * np.ones((fan_in, fan_in)))
    # entries have standard error ≈ 0.33·sqrt(2/200000) ≈ 1e-3; 5e-3 is 5 sigma
    np.testing.assert_allclose(empirical, expected, atol=5e-3)
    zero_sum = correlated_(torch.empty(50, 40), k=-1.0, generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(zero_sum.sum(dim=1).numpy(), 0.0, atol=1e-5)
    with pytest.raises(ValueError, match="not PSD"):
        correlated_(torch.empty(3, 3), a=1.0, b=-2.0)
