"""linearization-images (seed 004 §3, appendix C.1–C.2 on image data) and the engine options it
needs: per-network minibatch order and a per-network stop criterion."""

from __future__ import annotations

import numpy as np
import torch

from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train

F64 = torch.float64


def _sgd_reference(module, x, y, order_seed, lr, steps, batch, stop_every=None, stop_at=None):
    """One network alone: torch.optim.SGD on the sum loss with its own minibatch order; stops
    (freezes) at the first multiple of ``stop_every`` whose full-data loss is ≤ ``stop_at``."""
    generator = torch.Generator().manual_seed(order_seed)
    optimiser = torch.optim.SGD(module.parameters(), lr=lr)
    order, cursor, stopped = None, 0, -1
    for step in range(steps + 1):
        if stop_every and step % stop_every == 0:
            with torch.no_grad():
                full = 0.5 * (module(x) - y).square().sum()
            if full <= stop_at:
                stopped = step
                break
        if step == steps:
            break
        if order is None or cursor + batch > len(x):
            order, cursor = torch.randperm(len(x), generator=generator), 0
        index = order[cursor : cursor + batch]
        cursor += batch
        optimiser.zero_grad()
        loss = 0.5 * (module(x[index]) - y[index]).square().sum()
        loss.backward()
        optimiser.step()
    return [p.detach().clone() for p in module.parameters()], stopped


def test_per_network_minibatch_order_matches_a_per_network_torch_optim_loop():
    """Each network follows its own shuffled order: the batched family equals torch.optim.SGD
    on each network alone with a generator seeded by its order seed (float64, rtol 1e-12)."""
    torch.manual_seed(0)
    x, y = torch.randn(14, 5, dtype=F64), torch.randn(14, 3, dtype=F64)
    seeds, order_seeds = [1, 2, 3], [7, 8, 9]
    model = BatchedMLP(MLPSpec((5, 8, 3), bias=False), 3, seeds=seeds, dtype=F64)
    modules = [model.module(s) for s in range(3)]
    problem = SupervisedProblem(model, x, y, "half_sum", batch_size=4, order_seeds=order_seeds)
    train(problem, BatchedSGD(problem.params, 0.05), 25, record_every=5)
    for s, module in enumerate(modules):
        expected, _ = _sgd_reference(module, x, y, order_seeds[s], 0.05, 25, 4)
        for got, want in zip(problem.params, expected, strict=True):
            np.testing.assert_allclose(got[s].detach().numpy(), want.numpy(), rtol=1e-12)
    # networks with different order seeds saw different batches: the same start parts
    same_start = BatchedMLP(MLPSpec((5, 8, 3), bias=False), 2, seeds=[1, 1], dtype=F64)
    problem = SupervisedProblem(same_start, x, y, "half_sum", batch_size=4, order_seeds=[7, 8])
    train(problem, BatchedSGD(problem.params, 0.05), 10, record_every=5)
    assert not torch.allclose(same_start.params[0][0], same_start.params[0][1])


def test_stop_criterion_freezes_each_network_at_its_own_step():
    """A network is frozen at the first recording whose full-data loss meets the criterion (as
    a lone torch.optim loop that stops there); the others go on; the stop steps are kept."""
    torch.manual_seed(1)
    x, y = torch.randn(16, 4, dtype=F64), torch.randn(16, 2, dtype=F64)
    seeds, lr, steps, every = [3, 4, 5], 0.02, 200, 10
    model = BatchedMLP(MLPSpec((4, 16, 2), bias=False), 3, seeds=seeds, dtype=F64)
    modules = [model.module(s) for s in range(3)]
    problem = SupervisedProblem(model, x, y, "half_sum", batch_size=4, order_seeds=[0, 1, 2])
    with torch.no_grad():
        start = 0.5 * (model.forward(x) - y).square().sum(dim=(1, 2))
    level = float(start.min()) * 0.6
    result = train(
        problem,
        BatchedSGD(problem.params, lr),
        steps,
        every,
        stop=lambda values: values["full_loss"] <= level,
    )
    assert (result.stopped_step >= 0).any()
    for s, module in enumerate(modules):
        expected, stopped = _sgd_reference(module, x, y, s, lr, steps, 4, every, level)
        assert result.stopped_step[s] == stopped
        for got, want in zip(problem.params, expected, strict=True):
            np.testing.assert_allclose(got[s].detach().numpy(), want.numpy(), rtol=1e-12)
    stopped = result.stopped_step >= 0
    row = np.searchsorted(result.steps, result.stopped_step[stopped])
    np.testing.assert_allclose(
        result.final["full_loss"][stopped],
        result.curves["full_loss"][stopped, row],
    )


def test_training_ends_when_every_network_stopped():
    x, y = torch.randn(8, 3, dtype=F64), torch.randn(8, 1, dtype=F64)
    model = BatchedMLP(MLPSpec((3, 4, 1)), 2, seeds=[0, 1], dtype=F64)
    problem = SupervisedProblem(model, x, y, "half_sum")
    before = [p.clone() for p in problem.params]
    result = train(problem, BatchedSGD(problem.params, 0.1), 50, 10, stop=lambda v: v["loss"] > -1)
    assert result.stopped_step.tolist() == [0, 0]
    assert all(torch.equal(a, b) for a, b in zip(before, problem.params, strict=True))
    assert np.all(result.curves["loss"] == result.curves["loss"][:, :1])
