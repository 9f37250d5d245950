"""scale / scale+bias give what they promise, network by network."""

import pytest
import torch

from relulab.engine import BatchedMLP, MLPSpec, scale_init_batched_

F64 = torch.float64


def _hidden_preactivations(model, x):
    return model.trace(x).preactivations


def test_scale_bias_gives_zero_mean_unit_variance_per_feature():
    x = torch.randn(64, 10, generator=torch.Generator().manual_seed(0), dtype=F64) * 3 + 1
    model = BatchedMLP(MLPSpec((10, 20, 20, 20, 1)), 3, init="normal", dtype=F64)
    reports = scale_init_batched_(model, x, with_bias=True, eps=0.0)
    assert [r.layer for r in reports] == [0, 1, 2] and all(r.centred for r in reports)
    for z in _hidden_preactivations(model, x):
        torch.testing.assert_close(z.mean(dim=1), torch.zeros(3, 20, dtype=F64), atol=1e-12, rtol=0)
        torch.testing.assert_close(z.square().mean(dim=(1, 2)), torch.ones(3, dtype=F64))


def test_scale_gives_unit_second_moment_but_leaves_means():
    x = torch.randn(64, 10, generator=torch.Generator().manual_seed(1), dtype=F64)
    model = BatchedMLP(MLPSpec((10, 30, 30, 1), bias=False), 2, init="normal", dtype=F64)
    scale_init_batched_(model, x, with_bias=False, eps=0.0)
    preactivations = _hidden_preactivations(model, x)
    for z in preactivations:
        torch.testing.assert_close(z.square().mean(dim=(1, 2)), torch.ones(2, dtype=F64))
    assert preactivations[-1].mean(dim=1).abs().mean() > 0.1, "deeper layers keep a sample mean"


def test_bad_models_are_rejected():
    x = torch.randn(8, 4)
    with pytest.raises(ValueError, match="hidden biases"):
        scale_init_batched_(BatchedMLP(MLPSpec((4, 5, 1), bias=False), 1), x, with_bias=True)
    with pytest.raises(ValueError, match="BatchNorm"):
        scale_init_batched_(BatchedMLP(MLPSpec((4, 5, 1), batchnorm=True), 1), x, with_bias=False)
