"""Per-network initialiser options in the batched engine (the ``correlated`` scheme of seed 003
with its σ_w², k per network) and the held-out validation loss of a supervised problem."""

import torch

from relulab.engine import (
    BatchedMLP,
    BatchedSGD,
    MLPSpec,
    SupervisedProblem,
    init_weight_stack,
    train,
)
from relulab.init import correlated_, raai_

F64 = torch.float64


def test_options_reach_each_networks_initialiser_with_its_own_seed():
    shapes, seeds = [(7, 5), (3, 7)], [11, 12, 13]
    options = [{"sigma_w2": 2.0, "k": -1.0}, {"sigma_w2": 1.5, "k": 0.5, "sigma_b2": 0.2}, {}]
    stack = init_weight_stack(
        shapes, 3, scheme="correlated", seeds=seeds, dtype=F64, options=options
    )
    for s, seed in enumerate(seeds):
        generator = torch.Generator().manual_seed(seed)
        for (weight, bias), shape in zip(stack, shapes, strict=True):
            w, b = torch.empty(shape, dtype=F64), torch.zeros(shape[0], dtype=F64)
            correlated_(w, b, generator=generator, **options[s])
            torch.testing.assert_close(weight[s], w, rtol=0, atol=0)
            torch.testing.assert_close(bias[s], b, rtol=0, atol=0)
    # k = −1: every row of the first network sums to zero; the default is uncorrelated N(0, 2/N)
    assert stack[0][0][0].sum(dim=1).abs().max() < 1e-12
    assert stack[0][0][1].sum(dim=1).abs().max() > 1e-3


def test_shared_options_and_mixed_schemes_in_one_model():
    model = BatchedMLP(
        MLPSpec((6, 8, 1)),
        n_networks=2,
        init=["raai", "kaiming_normal"],
        seeds=[3, 4],
        dtype=F64,
        init_options=[{"sigma_w2": 0.5, "k": -0.5}, {}],
    )
    generator = torch.Generator().manual_seed(3)
    w, b = torch.empty(8, 6, dtype=F64), torch.empty(8, dtype=F64)
    raai_(w, b, generator=generator, sigma_w2=0.5, k=-0.5)
    torch.testing.assert_close(model.weights[0][0], w, rtol=0, atol=0)
    torch.testing.assert_close(model.biases[0][0], b, rtol=0, atol=0)


def test_validation_loss_is_the_mse_on_held_out_data():
    x, y = torch.randn(20, 3, dtype=F64), torch.randn(20, 1, dtype=F64)
    x_val, y_val = torch.randn(9, 3, dtype=F64), torch.randn(9, 1, dtype=F64)
    model = BatchedMLP(MLPSpec((3, 5, 1)), n_networks=2, dtype=F64)
    problem = SupervisedProblem(model, x, y, batch_size=5, validation=(x_val, y_val))
    result = train(problem, BatchedSGD(problem.params, 0.05), steps=8, record_every=4)
    assert result.curves["validation_loss"].shape == (2, 3)
    for s in range(2):
        expected = (model.module(s)(x_val) - y_val).square().mean()
        assert torch.isclose(torch.tensor(result.final["validation_loss"][s]), expected.detach())
    assert "validation_loss" not in SupervisedProblem(model, x, y).observe()
