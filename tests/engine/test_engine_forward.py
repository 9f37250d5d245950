"""Forward statistics of wide random nets against a direct per-network computation."""

import math

import numpy as np
import pytest
import torch

from relulab.engine.forward import forward_statistics


def _direct(seed, width, depth, x):
    """One network, its layers drawn in order from its own generator, statistics by hand."""
    generator = torch.Generator().manual_seed(seed)
    h, rows = x.double(), []
    for _ in range(depth):
        w = torch.randn(width, h.shape[1], generator=generator, dtype=torch.float64)
        u = h @ (w * math.sqrt(2.0 / h.shape[1])).T
        mean = u.mean(0)
        rows.append(((mean**2).sum().item(), (u.var(0, unbiased=False)).sum().item()))
        h = torch.relu(u)
    return np.array(rows)


def test_matches_direct_computation_network_by_network():
    x = torch.randn(20, 16, generator=torch.Generator().manual_seed(1))
    stats = forward_statistics(3, 32, 4, x, seeds=[5, 6, 7], dtype=torch.float64)
    for s, seed in enumerate([5, 6, 7]):
        direct = _direct(seed, 32, 4, x)
        np.testing.assert_allclose(stats.mean_sq[s], direct[:, 0], rtol=1e-6)
        np.testing.assert_allclose(stats.sample_var[s], direct[:, 1], rtol=1e-6)
    np.testing.assert_allclose(stats.ratio, np.sqrt(stats.mean_sq / stats.sample_var))


def test_sample_mean_grows_relative_to_sample_variance_with_depth():
    # Seed 002's central finding, qualitatively (the quantitative study is its own experiment).
    x = torch.randn(50, 200, generator=torch.Generator().manual_seed(2))
    stats = forward_statistics(4, 200, 20, x)
    ratio = stats.ratio.mean(axis=0)
    assert ratio[-1] > 3 * ratio[1] and np.all(np.diff(ratio[1:]) > -0.2)


# --- sampler="gram": each layer from its exact Gaussian law given its input ---------------------


def test_gram_sampler_draws_a_layer_with_covariance_sigma2_h_h_transposed():
    # Fixed input H (N × n_in): the pre-activations of every unit are N(0, (2/n_in) H Hᵀ), so
    # their covariance over 20 nets × 2000 units (40 000 columns) must be that matrix.
    x = torch.randn(12, 64, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    stats = forward_statistics(
        20, 2000, 1, x, dtype=torch.float64, keep_layers=[0], keep_units=2000, sampler="gram"
    )
    u = torch.from_numpy(stats.units[0]).permute(1, 0, 2).reshape(12, -1)  # (N, S · units)
    empirical = u @ u.T / u.shape[1]
    expected = 2.0 / 64 * x @ x.T
    error = torch.linalg.matrix_norm(empirical - expected)
    assert error < 0.03 * torch.linalg.matrix_norm(expected)


def test_gram_and_weight_samplers_give_the_same_distribution_of_statistics(monkeypatch):
    # 600 networks per sampler, different seeds; float64; the last layer's r, m², v² compared
    # with Welch's test (fixed seeds: the p-values are fixed numbers, not a flaky test).
    from scipy import stats as scipy_stats

    x = torch.randn(16, 80, generator=torch.Generator().manual_seed(4))
    common = dict(dtype=torch.float64)
    by_weights = forward_statistics(600, 80, 8, x, seeds=range(600), **common)
    by_gram = forward_statistics(600, 80, 8, x, seeds=range(600, 1200), sampler="gram", **common)
    for name in ("ratio", "mean_sq", "sample_var"):
        a, b = getattr(by_weights, name)[:, -1], getattr(by_gram, name)[:, -1]
        assert scipy_stats.ttest_ind(a, b, equal_var=False).pvalue > 0.01, name
        assert scipy_stats.ks_2samp(a, b).pvalue > 0.01, name
    # counter-example: a Gram path with the wrong square root (Rᵀ, covariance RᵀR ≠ σ²HHᵀ but
    # the same trace) is told apart by the same tests
    import relulab.engine.forward as forward_module

    right_root = forward_module._gram_root
    monkeypatch.setattr(forward_module, "_gram_root", lambda h, std: right_root(h, std).mT)
    wrong = forward_statistics(600, 80, 8, x, seeds=range(600, 1200), sampler="gram", **common)
    for name in ("ratio", "mean_sq", "sample_var"):
        a, b = getattr(by_weights, name)[:, -1], getattr(wrong, name)[:, -1]
        assert scipy_stats.ttest_ind(a, b, equal_var=False).pvalue < 1e-6, name
        assert scipy_stats.ks_2samp(a, b).pvalue < 1e-6, name


def test_gram_sampler_draws_weights_where_the_input_is_no_wider_than_the_samples():
    x = torch.randn(40, 24, generator=torch.Generator().manual_seed(5))
    by_weights = forward_statistics(3, 30, 4, x, dtype=torch.float64)
    by_gram = forward_statistics(3, 30, 4, x, dtype=torch.float64, sampler="gram")
    np.testing.assert_array_equal(by_gram.ratio, by_weights.ratio)


def test_gram_sampler_survives_a_singular_gram_matrix():
    # identical samples: H Hᵀ has rank 1, Cholesky fails, the eigendecomposition takes over
    x = torch.randn(1, 50, generator=torch.Generator().manual_seed(6)).expand(10, 50)
    stats = forward_statistics(2, 60, 3, x, dtype=torch.float64, sampler="gram")
    assert np.all(np.isfinite(stats.mean_sq)) and np.all(stats.mean_sq > 0)
    np.testing.assert_allclose(stats.sample_var, 0.0, atol=1e-9 * stats.mean_sq.max())


def test_gram_sampler_is_deterministic_and_rejects_unknown_samplers():
    x = torch.randn(10, 50, generator=torch.Generator().manual_seed(7))
    first = forward_statistics(2, 60, 3, x, sampler="gram")
    again = forward_statistics(2, 60, 3, x, sampler="gram")
    np.testing.assert_array_equal(first.ratio, again.ratio)
    with pytest.raises(ValueError, match="sampler"):
        forward_statistics(2, 60, 3, x, sampler="kernel")
