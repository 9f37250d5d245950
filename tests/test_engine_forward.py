"""Forward statistics of wide random nets against a direct per-network computation."""

import math

import numpy as np
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
