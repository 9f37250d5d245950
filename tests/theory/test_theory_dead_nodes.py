"""Dead-node theory (seed 003 Table 1): closed forms vs Genz vs sampling, and every theory
path (orthant of the mean-field kernel, exact one-input law, population dynamics) against
wide random networks initialised by relulab's own samplers."""

import numpy as np
import pytest
import torch

from relulab.init import kaiming_normal_, raai_, rai_
from relulab.init.correlated import correlated_
from relulab.theory import correlation_trajectory, get_kernel
from relulab.theory.asymmetric import RowScheme, layer_laws
from relulab.theory.dead_nodes import (
    equicorrelated_dead_probability,
    gaussian_dead_on_all,
    gaussian_gram_trajectory,
    pair_dead_probability,
)
from relulab.theory.population import population_dynamics

WIDTH, DEPTH, N_INPUTS = 1000, 5, 6
INPUTS = np.random.default_rng(0).standard_normal((N_INPUTS, WIDTH))

SCHEMES = {
    "he": RowScheme(2.0),
    "aci": RowScheme(2.0, b=-1.0, sigma_b2=0.5),
    "positive": RowScheme(1.2, b=1.0, sigma_b2=0.5),  # positively correlated control
    "rai": RowScheme(0.6007**2, asymmetric=True),
    "raai": RowScheme(0.92, b=-1.0, asymmetric=True),
}


def _layer(name, generator):
    """One width × width layer drawn by relulab's samplers (float64)."""
    weight = torch.empty(WIDTH, WIDTH, dtype=torch.float64)
    bias = torch.zeros(WIDTH, dtype=torch.float64)
    scheme = SCHEMES[name]
    if name == "he":
        kaiming_normal_(weight, generator=generator)
    elif name == "rai":
        rai_(weight, bias, generator=generator)
    elif name == "raai":
        raai_(weight, bias, generator=generator, sigma_w2=scheme.sigma_w2, k=scheme.b)
    else:
        correlated_(weight, sigma_w2=scheme.sigma_w2, a=scheme.a, b=scheme.b, generator=generator)
        bias = torch.randn(WIDTH, generator=generator, dtype=torch.float64)
        bias *= np.sqrt(scheme.sigma_b2)
    return weight, bias


def _simulate(name, seed):
    """Per layer: inactive fraction, fraction of units dead on all inputs, correlation matrix."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.tensor(INPUTS)
    inactive, dead, correlations = [], [], []
    for _ in range(DEPTH):
        weight, bias = _layer(name, generator)
        h = x @ weight.T + bias  # (inputs, units)
        off = h <= 0
        inactive.append(off.double().mean().item())
        dead.append(off.all(dim=0).double().mean().item())
        gram = (h @ h.T / WIDTH).numpy()
        scale = np.sqrt(np.diag(gram))
        correlations.append(gram / np.outer(scale, scale))
        x = torch.relu(h)
    return np.array(inactive), np.array(dead), np.array(correlations)


@pytest.fixture(scope="module")
def simulations():
    return {name: [_simulate(name, seed) for seed in range(2)] for name in SCHEMES}


def test_pair_and_equicorrelated_closed_forms_match_genz_and_sampling():
    for c in (-0.6, 0.0, 0.45, 0.95):
        covariance = np.array([[2.0, 2.0 * c], [2.0 * c, 2.0]])
        assert gaussian_dead_on_all(covariance, 1e-6) == pytest.approx(
            float(pair_dead_probability(c)), abs=5e-6
        )
    rng = np.random.default_rng(1)
    for c, n in ((0.0, 5), (0.3, 5), (0.8, 7)):
        correlation = np.full((n, n), c) + (1 - c) * np.eye(n)
        closed = equicorrelated_dead_probability(c, n)
        assert closed == pytest.approx(gaussian_dead_on_all(correlation, 1e-6), abs=5e-6)
        draws = rng.multivariate_normal(np.zeros(n), correlation, 400_000)
        sampled = (draws <= 0).all(axis=1).mean()
        assert closed == pytest.approx(sampled, abs=5 * np.sqrt(closed * (1 - closed) / 400_000))
    assert equicorrelated_dead_probability(0.0, 4) == pytest.approx(1 / 16, rel=1e-12)
    assert equicorrelated_dead_probability(1.0, 50) == 0.5
    with pytest.raises(ValueError, match="0 ≤ c ≤ 1"):
        equicorrelated_dead_probability(-0.1, 3)


def test_gram_trajectory_matches_the_two_input_maps():
    x = np.random.default_rng(2).standard_normal((2, 5000))
    x[1] = 0.3 * x[0] + np.sqrt(1 - 0.09) * x[1]
    x /= np.sqrt((x**2).mean(axis=1, keepdims=True))  # unit mean square, as the maps assume
    c0 = (x[0] * x[1]).mean()
    for scheme in (SCHEMES["aci"], SCHEMES["positive"]):
        trajectory = gaussian_gram_trajectory(scheme, x - x.mean(axis=1, keepdims=True), 8)
        _, correlations = correlation_trajectory(
            get_kernel("relu"), c0, 1.0, 8, scheme.sigma_w2, scheme.sigma_b2, scheme.a, scheme.b
        )
        np.testing.assert_allclose(
            trajectory[:, 0, 1] / np.sqrt(trajectory[:, 0, 0] * trajectory[:, 1, 1]),
            correlations,
            atol=2e-3,  # the centring and normalisation of finite inputs
        )
    with pytest.raises(ValueError, match="RAI/RAAI"):
        gaussian_gram_trajectory(SCHEMES["rai"], x, 2)


def test_population_dynamics_reproduces_the_gaussian_closed_forms():
    scheme = SCHEMES["aci"]
    population = population_dynamics(scheme, INPUTS, DEPTH, particles=200_000, seed=3)
    kernel = gaussian_gram_trajectory(scheme, INPUTS, DEPTH)
    np.testing.assert_allclose(population.gram, kernel, rtol=0.02, atol=0.02 * kernel.max())
    orthant = np.array([gaussian_dead_on_all(c) for c in kernel])
    np.testing.assert_allclose(population.dead_on_all, orthant, atol=3e-3)
    np.testing.assert_allclose(population.inactive, 0.5, atol=3e-3)


@pytest.mark.parametrize("name", ["he", "aci", "positive"])
def test_gaussian_row_networks_follow_the_orthant_of_the_kernel(simulations, name):
    inactive = np.mean([run[0] for run in simulations[name]], axis=0)
    dead = np.mean([run[1] for run in simulations[name]], axis=0)
    # symmetric rows: P(h ≤ 0) = 1/2 exactly; 2 nets × 1000 units × 6 inputs, s.e. ≲ 0.01
    np.testing.assert_allclose(inactive, 0.5, atol=0.03)
    orthant = np.array(
        [gaussian_dead_on_all(c) for c in gaussian_gram_trajectory(SCHEMES[name], INPUTS, DEPTH)]
    )
    # 2000 units: binomial s.e. ≤ 0.011, plus finite-width fluctuations of the kernel
    np.testing.assert_allclose(dead, orthant, atol=0.035)


@pytest.mark.parametrize("name", ["rai", "raai"])
def test_asymmetric_networks_follow_the_exact_law_and_population(simulations, name):
    scheme = SCHEMES[name]
    inactive = np.mean([run[0] for run in simulations[name]], axis=0)
    dead = np.mean([run[1] for run in simulations[name]], axis=0)
    correlations = np.mean([run[2] for run in simulations[name]], axis=0)
    laws = layer_laws(scheme, DEPTH)
    np.testing.assert_allclose(inactive, laws.inactive, atol=0.02)
    population = population_dynamics(scheme, INPUTS, DEPTH, particles=200_000, seed=5)
    np.testing.assert_allclose(population.inactive, laws.inactive, atol=4e-3)
    np.testing.assert_allclose(dead, population.dead_on_all, atol=0.02)
    # one width-1000 network's correlations scatter by 0.02–0.04 per pair (more in deeper
    # layers), and pairs of one network move together: the mean over pairs of 2 networks has a
    # standard error up to ~0.02, hence 0.045
    pairs = np.triu_indices(N_INPUTS, 1)
    np.testing.assert_allclose(
        correlations[:, pairs[0], pairs[1]].mean(axis=1),
        population.correlation[:, pairs[0], pairs[1]].mean(axis=1),
        atol=0.045,
    )


def test_table_1_dead_node_probabilities():
    """Seed 003 Table 1: He and ACI 0.5; RAI and RAAI 0.36 — below one half, as the Beta entry
    gives positive activations a positive push. The exact per-input values lie between
    the second layer's and the deep limit's."""
    for name in ("he", "aci", "positive"):
        np.testing.assert_allclose(layer_laws(SCHEMES[name], 4).inactive, 0.5, atol=1e-12)
    rai = layer_laws(SCHEMES["rai"], 12).inactive
    raai = layer_laws(SCHEMES["raai"], 12).inactive
    assert rai[1] == pytest.approx(0.35, abs=0.005) and rai[-1] == pytest.approx(0.31, abs=0.005)
    assert raai[1] == pytest.approx(0.37, abs=0.005) and raai[-1] == pytest.approx(0.33, abs=0.005)
    assert np.all(rai[1:] < raai[1:])
