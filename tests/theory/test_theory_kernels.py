"""Gaussian expectations: closed forms vs an independent quadrature vs Monte Carlo."""

import numpy as np
import pytest
from scipy import integrate, stats

from relulab.theory import arccos_kernel, get_kernel, monte_carlo_cross
from relulab.theory.kernels import safe_correlation

COVARIANCES = [(1.0, 1.0, 0.0), (2.0, 0.5, 0.7), (1.3, 1.3, -1.2), (0.7, 1.1, 0.8)]


def _dblquad_cross(fn, q1, q2, q12):
    """Independent path: adaptive 2-D integration against the bivariate normal density."""
    density = stats.multivariate_normal(mean=[0, 0], cov=[[q1, q12], [q12, q2]])
    limit = 9 * np.sqrt(max(q1, q2))
    value, _ = integrate.dblquad(
        lambda v, u: fn(u) * fn(v) * density.pdf([u, v]),
        -limit,
        limit,
        -limit,
        limit,
        epsabs=1e-11,
        epsrel=1e-10,
    )
    return value


RELU_FAMILY = {
    "relu": lambda z: np.maximum(z, 0),
    "relu_b": lambda z: np.maximum(z, 0) - 0.3,
    "leaky_relu": lambda z: np.where(z > 0, z, 0.2 * z),
    "abs": np.abs,
}


KERNEL_ARGS = {"relu_b": {"shift": 0.3}, "leaky_relu": {"slope": 0.2}}


@pytest.mark.parametrize("name", list(RELU_FAMILY))
@pytest.mark.parametrize(("q1", "q2", "q12"), COVARIANCES[:2])
def test_relu_family_closed_form_matches_adaptive_quadrature(name, q1, q2, q12):
    kernel = get_kernel(name, **KERNEL_ARGS.get(name, {}))
    expected = _dblquad_cross(RELU_FAMILY[name], q1, q2, q12)
    assert kernel.cross(q1, q2, q12) == pytest.approx(expected, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("name", ["relu", "relu_b", "leaky_relu", "tanh", "silu", "gelu", "erf"])
@pytest.mark.parametrize(("q1", "q2", "q12"), COVARIANCES)
def test_every_kernel_matches_monte_carlo(name, q1, q2, q12):
    kernel = get_kernel(name, **KERNEL_ARGS.get(name, {}))
    fn = (
        RELU_FAMILY.get(name)
        or {
            "tanh": np.tanh,
            "erf": __import__("scipy.special").special.erf,
            "silu": lambda z: z / (1 + np.exp(-z)),
            "gelu": lambda z: z * stats.norm.cdf(z),
        }[name]
    )
    estimate, stderr = monte_carlo_cross(fn, q1, q2, q12, n_samples=400_000, seed=1)
    assert kernel.cross(q1, q2, q12) == pytest.approx(estimate, abs=5 * stderr + 1e-12)


def test_erf_closed_form_matches_its_quadrature():
    closed = get_kernel("erf")
    quadrature = type(closed).__mro__[1].cross  # QuadratureKernel.cross: the numerical path
    for q1, q2, q12 in COVARIANCES:
        assert closed.cross(q1, q2, q12) == pytest.approx(quadrature(closed, q1, q2, q12), rel=1e-9)


def test_relu_identities():
    relu = get_kernel("relu")
    q = np.array([0.3, 1.0, 4.0])
    np.testing.assert_allclose(relu.second_moment(q), q / 2, rtol=1e-15)
    np.testing.assert_allclose(relu.mean(q), np.sqrt(q / (2 * np.pi)), rtol=1e-15)
    np.testing.assert_allclose(relu.cross(q, q, 0 * q), q / (2 * np.pi), rtol=1e-15)
    np.testing.assert_allclose(relu.derivative_second_moment(q), 0.5)
    assert get_kernel("linear").cross(1.0, 2.0, 0.4) == pytest.approx(0.4)


def test_shift_only_adds_mean_and_constant_terms():
    q1, q2, q12, s = 1.5, 0.8, 0.3, 0.25
    relu, shifted = get_kernel("relu"), get_kernel("relu_b", shift=s)
    expected = relu.cross(q1, q2, q12) - s * (relu.mean(q1) + relu.mean(q2)) + s * s
    assert shifted.cross(q1, q2, q12) == pytest.approx(expected, rel=1e-14)


def test_no_nan_at_correlation_plus_minus_one():
    for c in (1.0, 1 + 1e-15, -1.0, -1 - 1e-15, 1 - 1e-17):
        value = arccos_kernel(2.0, 2.0, 2.0 * c)
        assert np.isfinite(value)
    assert arccos_kernel(2.0, 2.0, 2.0) == pytest.approx(1.0)  # = q/2 at c = 1
    assert arccos_kernel(2.0, 2.0, -2.0) == pytest.approx(0.0, abs=1e-15)
    assert safe_correlation(0.0, 0.0, 0.0) == 1.0


def test_unknown_activation_is_rejected():
    with pytest.raises(ValueError, match="unknown activation"):
        get_kernel("swish")


# One arc-cosine kernel: every special form is the general J(q1, q2, q12) (neural-tangents style).
CORRELATIONS = np.linspace(-1.0, 1.0, 201)


def test_arccos_kernel_is_the_angular_factor_times_the_lengths():
    from relulab.theory import arccos_j1

    q1, q2 = 1.7, 0.4
    q12 = CORRELATIONS * np.sqrt(q1 * q2)
    expected = np.sqrt(q1 * q2) / (2 * np.pi) * arccos_j1(safe_correlation(q1, q2, q12))
    np.testing.assert_array_equal(arccos_kernel(q1, q2, q12), expected)


def test_normalised_kernel_is_twice_the_unit_arccos_kernel_and_the_kaiming_correlation_map():
    from relulab.theory import correlation_map, normalised_arccos_kernel

    k = normalised_arccos_kernel(CORRELATIONS)
    np.testing.assert_allclose(k, 2 * arccos_kernel(1.0, 1.0, CORRELATIONS), rtol=1e-15, atol=0)
    # a Kaiming ReLU layer without biases (σ_w² = 2, σ_b² = 0) maps c to K(c), at any length
    for q in (0.5, 2.0):
        mapped = correlation_map(get_kernel("relu"), CORRELATIONS, q, 2.0, 0.0)
        np.testing.assert_allclose(mapped, k, rtol=1e-14, atol=1e-15)


def test_normalised_kernel_derivative_is_twice_the_relu_derivative_cross_moment():
    from relulab.theory import normalised_arccos_kernel_derivative

    derivative = normalised_arccos_kernel_derivative(CORRELATIONS)
    general = 2 * get_kernel("relu").derivative_cross(1.0, 1.0, CORRELATIONS)
    np.testing.assert_array_equal(derivative, general)


def test_correlation_angle_is_arccos_and_safe_past_the_ends():
    from relulab.theory import correlation_angle

    np.testing.assert_allclose(correlation_angle(CORRELATIONS), np.arccos(CORRELATIONS), atol=1e-7)
    assert correlation_angle(1 + 1e-12) == 0.0 and correlation_angle(-1 - 1e-12) == np.pi
