"""RAI/RAAI mean field (seed 003 appendices C–E): closed forms vs quadrature and Monte Carlo,
the seed's approximated maps and Table 2, the exact law vs population dynamics."""

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from relulab.theory import get_kernel, length_map
from relulab.theory.asymmetric import (
    RowScheme,
    approximate_boundaries,
    approximate_correlation_map,
    approximate_slopes,
    beta_quadrature,
    layer_laws,
    shifted_relu_cross_moment,
    shifted_relu_moments,
    table1_schemes,
)
from relulab.theory.population import population_dynamics

RAI = RowScheme(0.6007**2, asymmetric=True)
RAAI = RowScheme(0.92, b=-1.0, asymmetric=True)


@pytest.mark.parametrize("alpha", [1.0, 2.0, 3.5])
def test_beta_quadrature_reproduces_the_moments(alpha):
    nodes, weights = beta_quadrature(alpha, 32)
    for power in range(12):
        assert weights @ nodes**power == pytest.approx(alpha / (alpha + power), rel=1e-13)


@pytest.mark.parametrize(("mu", "s"), [(0.0, 1.0), (0.7, 0.3), (-1.2, 0.8), (2.0, 5.0)])
def test_shifted_relu_moments_match_quadrature_and_sampling(mu, s):
    p, first, second = shifted_relu_moments(mu, s)
    density = norm(mu, s).pdf
    upper = mu + 12 * s
    assert p == pytest.approx(integrate.quad(density, 0, upper)[0], abs=1e-12)
    assert first == pytest.approx(integrate.quad(lambda u: u * density(u), 0, upper)[0], abs=1e-10)
    assert second == pytest.approx(
        integrate.quad(lambda u: u * u * density(u), 0, upper)[0], abs=1e-10
    )
    u = mu + s * np.random.default_rng(0).standard_normal(1_000_000)
    positive = np.maximum(u, 0)
    # 1e6 samples: standard errors below 0.1 % of the spread; 5 s.e. tolerances
    assert first == pytest.approx(positive.mean(), abs=5 * positive.std() / 1e3)
    assert second == pytest.approx((positive**2).mean(), abs=5 * (positive**2).std() / 1e3)


def test_shifted_relu_moments_at_zero_spread_are_the_relu_of_the_shift():
    p, first, second = shifted_relu_moments(np.array([-0.5, 0.0, 0.5]), 0.0)
    np.testing.assert_array_equal(p, [0, 0, 1])
    np.testing.assert_array_equal(first, [0, 0, 0.5])
    np.testing.assert_array_equal(second, [0, 0, 0.25])


@pytest.mark.parametrize(("mu", "s", "rho"), [(0.4, 1.0, 0.5), (-0.3, 0.7, -0.6), (1.0, 0.5, 0.9)])
def test_cross_moment_matches_its_limits_and_sampling(mu, s, rho):
    _, first, second = shifted_relu_moments(mu, s)
    assert shifted_relu_cross_moment(mu, s, 1.0) == pytest.approx(float(second), rel=1e-10)
    assert shifted_relu_cross_moment(mu, s, 0.0) == pytest.approx(float(first) ** 2, rel=1e-10)
    z1, z2 = np.random.default_rng(1).standard_normal((2, 2_000_000))
    products = np.maximum(mu + s * z1, 0) * np.maximum(
        mu + s * (rho * z1 + np.sqrt(1 - rho**2) * z2), 0
    )
    assert shifted_relu_cross_moment(mu, s, rho) == pytest.approx(
        products.mean(), abs=5 * products.std() / np.sqrt(products.size)
    )


def test_table_2_rms_boundaries_of_rai_are_reproduced():
    """Seed 003 Table 2, RMS row: 0.57 (length, appendix D.1) and 1.41 (chaos, D.2)."""
    bounds = approximate_boundaries(RowScheme(1.0, asymmetric=True), "rms")
    assert round(bounds.length_limit, 2) == 0.57
    assert round(bounds.chaos_onset, 2) == 1.41
    # the seed: "the critical point for the length is smaller than that of the correlation"
    assert bounds.length_limit < bounds.chaos_onset
    # without the fixed-length assumption RAI never turns chaotic (appendix D.2's expectation)
    assert np.isnan(bounds.chaos_onset_scale_free)


@pytest.mark.parametrize("approximation", ["rms", "mean"])
@pytest.mark.parametrize("sigma_w2", [0.36, 1.0, 2.5])
def test_rai_is_ordered_for_every_variance(approximation, sigma_w2):
    slopes = approximate_slopes(RowScheme(sigma_w2, asymmetric=True), approximation)
    assert slopes.chaos_scale_free < 1.0
    assert slopes.chaos < slopes.length  # χ_c is the first term of χ_Q (eqs. 10, 11)


@pytest.mark.parametrize("approximation", ["rms", "mean"])
def test_anti_correlation_opens_a_chaotic_window_for_raai(approximation):
    bounds = approximate_boundaries(RowScheme(1.0, b=-1.0, asymmetric=True), approximation)
    assert bounds.chaos_onset_scale_free < bounds.length_limit
    slopes = approximate_slopes(
        RowScheme(
            0.5 * (bounds.chaos_onset_scale_free + bounds.length_limit), b=-1.0, asymmetric=True
        ),
        approximation,
    )
    assert slopes.chaos_scale_free > 1.0 and slopes.length < 1.0


@pytest.mark.parametrize("scheme", [RAI, RowScheme(1.3, b=-1.0, asymmetric=True)])
def test_approximated_correlation_map_fixes_one_with_the_stated_slope(scheme):
    assert approximate_correlation_map(1.0, scheme) == pytest.approx(1.0, abs=1e-12)
    # the ReLU map has a (1 − c)^{3/2} term at c = 1: one-sided differences err by O(sqrt h)
    h = 1e-8
    slope = (1.0 - approximate_correlation_map(1.0 - h, scheme)) / h
    assert slope == pytest.approx(approximate_slopes(scheme).chaos_scale_free, rel=2e-3)
    c = np.linspace(0.3, 0.95, 7)  # with b < 0, ρ(c) reaches −1 below c = 2r − 1
    mapped = np.array([approximate_correlation_map(value, scheme) for value in c])
    assert np.all(np.diff(mapped) > 0) and np.all(mapped > -1) and np.all(mapped < 1)


def test_approximated_correlation_map_matches_a_sampled_reduced_model():
    """The map's quadrature against sampling u_i = m ξ + σ̃ z_i with the same (m, σ̃, ρ)."""
    scheme, c = RowScheme(1.3, b=-1.0, asymmetric=True), 0.4
    slopes = approximate_slopes(scheme)
    rho = (c - slopes.r) / (1 - slopes.r)  # (a c + b r)/(a + b r) with a = 1, b = −1
    rng = np.random.default_rng(2)
    xi = rng.random(2_000_000) ** 0.5
    z1, z2 = rng.standard_normal((2, xi.size))
    u1 = np.maximum(slopes.m * xi + slopes.sigma_tilde * z1, 0)
    u2 = np.maximum(slopes.m * xi + slopes.sigma_tilde * (rho * z1 + np.sqrt(1 - rho**2) * z2), 0)
    sampled = (u1 * u2).mean() / (u1**2).mean()
    assert approximate_correlation_map(c, scheme) == pytest.approx(sampled, abs=3e-3)


def test_exact_law_reduces_to_the_length_map_for_gaussian_rows():
    relu = get_kernel("relu")
    for scheme in (RowScheme(2.0), RowScheme(2.5, b=-1.0, sigma_b2=0.3)):
        laws = layer_laws(scheme, depth=5, q0=1.3)
        q = [scheme.sigma_w2 * 1.3 + scheme.sigma_b2]
        for _ in range(4):
            q.append(
                float(length_map(relu, q[-1], scheme.sigma_w2, scheme.sigma_b2, 1.0, scheme.b))
            )
        np.testing.assert_allclose(laws.pre_second_moment, q, rtol=2e-4)
        np.testing.assert_allclose(laws.inactive, 0.5, atol=1e-12)


@pytest.mark.parametrize("scheme", [RAI, RAAI])
def test_exact_law_agrees_with_population_dynamics_and_converges_in_the_grid(scheme):
    laws = layer_laws(scheme, depth=6)
    coarse = layer_laws(scheme, depth=6, grid=200, xi_nodes=24)
    np.testing.assert_allclose(coarse.inactive, laws.inactive, atol=2e-3)
    x = np.random.default_rng(3).standard_normal((1, 4000))
    population = population_dynamics(scheme, x, depth=6, particles=400_000, seed=4)
    # 400 000 particles: s.e. of a probability ≤ 8e-4; the tolerance is ~5 s.e.
    np.testing.assert_allclose(population.inactive, laws.inactive, atol=4e-3)
    np.testing.assert_allclose(
        population.gram[1:, 0, 0] / population.gram[:-1, 0, 0],
        laws.pre_second_moment[1:] / laws.pre_second_moment[:-1],
        rtol=0.02,
    )
    assert laws.inactive[0] == pytest.approx(0.5, abs=1e-12)  # centred inputs: symmetric layer 1
    assert np.all(laws.inactive[1:] < 0.4)  # the Beta entry lowers the dead-node probability


def test_table_1_schemes_under_the_precision_reading():
    schemes = table1_schemes()
    assert schemes["he"] == RowScheme(2.0)
    assert schemes["aci"].b == pytest.approx(-100 / 101) and not schemes["aci"].asymmetric
    assert schemes["rai"].sigma_w2 == pytest.approx(0.36, abs=1e-3) and schemes["rai"].b == 0
    assert schemes["raai"].asymmetric and schemes["raai"].sigma_w2 == 0.92
    assert table1_schemes(-1.0, "additive")["raai"].b == -1.0
