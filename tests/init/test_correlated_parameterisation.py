"""Readings of seed 003's correlation strength k: covariance per reading (exact and sampled),
PSD errors, phase boundaries and the Table 1 consistency they imply."""

import math

import numpy as np
import pytest
import torch

from relulab.init import raai_
from relulab.init.correlated import correlate_rows, correlated_
from relulab.theory import chi1, get_kernel, phase_diagram, relu_bounded_limit
from relulab.theory.correlated import (
    PARAMETERISATIONS,
    covariance_coefficients,
    describe,
    relu_phase_boundaries,
    row_covariance,
)

F64 = torch.float64
N = 6
SIGMA_W2 = 1.7


def _stated_covariance(reading, k, n=N, sigma_w2=SIGMA_W2):
    """Each reading's covariance written the way its name says, independently of (a, b)."""
    eye, ones = np.eye(n), np.ones((n, n))
    if reading == "additive":
        return sigma_w2 / n * (eye + k / n * ones)
    if reading == "negated":
        return sigma_w2 / n * (eye - k / n * ones)
    if reading in ("pairwise", "correlation"):
        rho = k / n if reading == "pairwise" else k
        return sigma_w2 / n * np.where(eye == 1, 1.0, rho)
    if reading == "one_plus_k":
        return sigma_w2 / n * ((1 + k) * eye - k / n * ones)
    if reading == "precision":
        return np.linalg.inv(n / sigma_w2 * (eye + k / n * ones))
    raise AssertionError(reading)


CASES = [
    ("additive", -1.0),
    ("additive", 0.7),
    ("negated", 0.6),
    ("pairwise", -1.1),
    ("pairwise", 3.0),
    ("correlation", -0.15),
    ("correlation", 0.4),
    ("one_plus_k", 2.5),
    ("precision", 100.0),
    ("precision", -0.5),
]


@pytest.mark.parametrize(("reading", "k"), CASES)
def test_each_reading_gives_the_covariance_its_name_states(reading, k):
    a, b = covariance_coefficients(k, reading, fan_in=N)
    np.testing.assert_allclose(
        row_covariance(N, SIGMA_W2, a, b), _stated_covariance(reading, k), rtol=0, atol=1e-14
    )


@pytest.mark.parametrize(("reading", "k"), CASES)
def test_the_samplers_linear_map_is_an_exact_square_root_of_the_covariance(reading, k):
    a, b = covariance_coefficients(k, reading, fan_in=N)
    rows_of_a = correlate_rows(torch.eye(N, dtype=F64), SIGMA_W2, a, b).numpy()  # A is symmetric
    np.testing.assert_allclose(rows_of_a, rows_of_a.T, atol=1e-15)
    np.testing.assert_allclose(
        rows_of_a @ rows_of_a.T, _stated_covariance(reading, k), rtol=0, atol=1e-14
    )


@pytest.mark.parametrize(("reading", "k"), CASES)
def test_sampled_rows_have_the_stated_covariance(reading, k):
    n_rows = 100_000
    weight = correlated_(
        torch.empty(n_rows, N, dtype=F64),
        sigma_w2=SIGMA_W2,
        k=k,
        generator=torch.Generator().manual_seed(5),
        parameterisation=reading,
    )
    sample = weight.numpy()
    empirical = sample.T @ sample / n_rows  # the mean is known to be 0
    sigma = _stated_covariance(reading, k)
    diagonal = np.diag(sigma)
    # standard error of a second moment of Gaussians: sqrt((Σii Σjj + Σij²)/n)
    standard_error = np.sqrt((np.outer(diagonal, diagonal) + sigma**2) / n_rows)
    assert np.max(np.abs(empirical - sigma) / standard_error) < 5.0


def test_default_reading_is_the_previous_behaviour_and_k_overrides_a_b():
    draw = torch.randn(30, 9, generator=torch.Generator().manual_seed(2), dtype=F64)
    expected = correlate_rows(draw, 2.0, 1.0, -0.4)
    got = correlated_(
        torch.empty(30, 9, dtype=F64),
        sigma_w2=2.0,
        k=-0.4,
        generator=torch.Generator().manual_seed(2),
    )
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    explicit = correlated_(
        torch.empty(30, 9, dtype=F64),
        sigma_w2=2.0,
        a=1.0,
        b=-0.4,
        generator=torch.Generator().manual_seed(2),
    )
    torch.testing.assert_close(explicit, expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("reading", "k", "fan_in"),
    [
        ("additive", -1.5, None),
        ("negated", 1.5, None),
        ("pairwise", 11.0, 10),
        ("pairwise", -1.2, 10),
        ("correlation", -0.5, 10),
        ("one_plus_k", -2.0, None),
        ("precision", -1.0, None),
    ],
)
def test_invalid_strengths_are_rejected(reading, k, fan_in):
    with pytest.raises(ValueError, match="PSD|k > −1"):
        covariance_coefficients(k, reading, fan_in=fan_in)
    with pytest.raises(ValueError, match="PSD|k > −1"):
        correlated_(torch.empty(3, fan_in or 4), k=k, parameterisation=reading)


def test_unknown_reading_and_missing_fan_in_are_rejected():
    with pytest.raises(ValueError, match="unknown parameterisation"):
        covariance_coefficients(0.1, "cholesky")
    with pytest.raises(ValueError, match="needs fan_in"):
        covariance_coefficients(0.1, "pairwise")
    with pytest.raises(ValueError, match="not PSD"):
        correlate_rows(torch.zeros(2, 3), 1.0, 1.0, -2.0)


def test_every_reading_is_uncorrelated_at_k_zero_and_pairwise_tends_to_additive():
    for reading in PARAMETERISATIONS:
        assert covariance_coefficients(0.0, reading, fan_in=50) == (1.0, 0.0)
    a, b = covariance_coefficients(-0.8, "pairwise", fan_in=10**6)
    assert (a, b) == (pytest.approx(1.0, abs=1e-6), -0.8)
    # the O(1) correlation reading's extreme anti-correlation is the zero-sum subspace
    a, b = covariance_coefficients(-1 / 999, "correlation", fan_in=1000)
    assert a + b == pytest.approx(0.0, abs=1e-12)


RELU = get_kernel("relu")


@pytest.mark.parametrize(("reading", "k"), CASES)
def test_phase_boundaries_agree_with_the_mean_field_maps(reading, k):
    a, b = covariance_coefficients(k, reading, fan_in=N)
    boundaries = relu_phase_boundaries(a, b)
    assert chi1(RELU, 1.0, boundaries.chaos_onset, a) == pytest.approx(1.0)
    assert boundaries.bounded_limit == pytest.approx(relu_bounded_limit(a, b))
    assert boundaries.has_bounded_chaotic_window == (b < 0)
    w2 = np.linspace(0.05, 1.2 * min(boundaries.bounded_limit, 6.0), 300)
    diagram = phase_diagram(RELU, w2, [0.3], a, b)
    window = diagram.bounded & diagram.chaotic
    assert window.any() == boundaries.has_bounded_chaotic_window
    inside = w2[window[0]]
    if inside.size:
        assert inside.min() > boundaries.chaos_onset and inside.max() < boundaries.bounded_limit


def test_table_1_is_consistent_only_under_the_precision_reading():
    """Seed 003 Table 1 read as (σ_w², k, chaotic phase, dead-node probability): ACI is
    (2.0, 100.0): valid, anti-correlated and on the order-to-chaos boundary (§2) only as a
    precision matrix I + (k/N)J."""
    aci = describe(2.0, 100.0, "precision")
    assert aci.anti_correlated and aci.phase == "critical"
    assert aci.boundaries.bounded_limit == pytest.approx(2 * math.pi / (math.pi - 100 / 101))
    assert describe(2.0, 100.0, "additive").phase == "unbounded"  # positive correlation
    assert describe(2.0, 100.0, "pairwise", fan_in=100).phase == "unbounded"
    one_plus_k = describe(2.0, 100.0, "one_plus_k")
    assert one_plus_k.anti_correlated and one_plus_k.phase == "unbounded"
    for reading in ("negated", "correlation"):
        with pytest.raises(ValueError, match="PSD"):
            describe(2.0, 100.0, reading, fan_in=100)
    # He (2.0, 0.0) sits where χ1 = 1 and the length limit meet: no chaotic window
    he = describe(2.0, 0.0, "precision").boundaries
    assert he.chaos_onset == he.bounded_limit == pytest.approx(2.0)


def test_raai_accepts_a_reading_and_the_table_1_strength():
    weight, bias = torch.empty(20000, 9, dtype=F64), torch.empty(20000, dtype=F64)
    raai_(
        weight,
        bias,
        generator=torch.Generator().manual_seed(4),
        sigma_w2=0.92,
        k=100.0,
        parameterisation="precision",
    )
    sums = torch.cat([weight, bias[:, None]], dim=1).sum(dim=1)
    # Gaussian row sums have variance σ_w²(a + b) = 0.92/101; the Beta entry moves the mean
    # to E[ξ] − E[v] = 2/3
    assert sums.mean().item() == pytest.approx(2 / 3, abs=0.01)
