"""Plateaus of the single neuron: exact values, an independent quadrature path, finite samples."""

from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate

from relulab.theory import (
    best_constant_fit_loss,
    best_linear_fit_loss,
    plateau_losses,
    sample_constant_fit_loss,
    sample_linear_fit_loss,
)


def test_plateaus_on_unit_interval_are_1_over_48_and_5_over_48():
    assert best_linear_fit_loss() == pytest.approx(float(Fraction(1, 48)), rel=1e-14)
    assert best_constant_fit_loss() == pytest.approx(float(Fraction(5, 48)), rel=1e-14)
    assert plateau_losses() == {
        "dead": best_constant_fit_loss(),
        "hyperactive": best_linear_fit_loss(),
    }


def _quadrature_plateaus(lo: float, hi: float) -> tuple[float, float]:
    """Independent path: moments by scipy.integrate.quad, then the normal equations."""

    def moment(f):
        return integrate.quad(f, lo, hi, points=[0.0])[0] / (hi - lo)

    relu = lambda x: max(x, 0.0)  # noqa: E731
    e1, ex, ex2 = 1.0, moment(lambda x: x), moment(lambda x: x * x)
    er, er2, exr = moment(relu), moment(lambda x: relu(x) ** 2), moment(lambda x: x * relu(x))
    gram = np.array([[ex2, ex], [ex, e1]])
    coef = np.linalg.solve(gram, [exr, er])
    linear = er2 - coef @ np.array([exr, er])
    return er2 - er**2, linear


@pytest.mark.parametrize(("lo", "hi"), [(-1.0, 1.0), (-0.3, 2.0), (-3.0, 0.5)])
def test_closed_form_matches_quadrature(lo, hi):
    constant, linear = _quadrature_plateaus(lo, hi)
    assert best_constant_fit_loss(lo, hi) == pytest.approx(constant, rel=1e-10)
    assert best_linear_fit_loss(lo, hi) == pytest.approx(linear, rel=1e-10)


def test_sample_plateaus_converge_to_closed_form_like_one_over_n():
    for n in (1_000, 10_000):
        x = np.linspace(-1, 1, n)
        y = np.maximum(x, 0)
        # A midpoint-like grid has O(1/N) bias: the tolerance scales with it.
        assert sample_linear_fit_loss(x, y) == pytest.approx(1 / 48, rel=5 / n)
        assert sample_constant_fit_loss(x, y) == pytest.approx(5 / 48, rel=5 / n)


def test_sample_plateaus_match_monte_carlo_draws():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 400_000)
    y = np.maximum(x, 0)
    # Standard error of a variance estimate at this n is ~0.2 %; 1 % is 5 sigma.
    assert sample_linear_fit_loss(x, y) == pytest.approx(1 / 48, rel=1e-2)
    assert sample_constant_fit_loss(x, y) == pytest.approx(5 / 48, rel=1e-2)


def test_kink_outside_domain_is_rejected():
    with pytest.raises(ValueError, match="lo < 0 < hi"):
        best_linear_fit_loss(0.5, 1.0)
