"""The batched single-neuron engine against autograd and a per-neuron torch.optim loop."""

import numpy as np
import pytest
import torch

from relulab.engine import STATE_CODES, BatchedAdam, BatchedSGD, BatchedSingleNeuron, train
from relulab.nn import SingleNeuron

CONDITIONS = [  # (b1, b2, lr): balanced, stuck-hyperactive, dead, large lr
    (0.0, -1.1, 0.01),
    (0.0, -1.2, 0.01),
    (-1.5, 0.0, 0.02),
    (0.3, 0.5, 0.2),
]


def _inputs(dtype):
    x = torch.linspace(-1, 1, 101, dtype=dtype)
    return x, torch.relu(x)


def _batched(x, y, activation="relu", parameterisation="standard", conditions=CONDITIONS):
    n = len(conditions)
    return BatchedSingleNeuron(
        x,
        y,
        [1.0] * n,
        [c[0] for c in conditions],
        [1.0] * n,
        [c[1] for c in conditions],
        activation=activation,
        parameterisation=parameterisation,
    )


@pytest.mark.parametrize("activation", ["relu", "silu", "tanh"])
@pytest.mark.parametrize("parameterisation", ["standard", "reparam"])
def test_hand_gradients_equal_autograd(activation, parameterisation):
    x, y = _inputs(torch.float64)
    problem = _batched(x, y, activation, parameterisation)
    problem.theta.add_(
        torch.randn(
            problem.theta.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64
        )
        * 0.3
    )
    loss, (grads,) = problem.loss_and_grads()
    for s in range(problem.n_networks):
        w1, b1, w2, b2 = problem.theta[s].tolist()
        module = SingleNeuron(w1, b1, w2, b2, activation, parameterisation, dtype=torch.float64)
        reference = ((module(x) - y) ** 2).mean()
        reference.backward()
        expected = torch.stack([module.w1.grad, module.b1.grad, module.w2.grad, module.b2.grad])
        assert loss[s].item() == pytest.approx(reference.item(), rel=1e-12)
        torch.testing.assert_close(grads[s], expected, rtol=1e-10, atol=1e-12)


def _per_neuron_reference(x, y, conditions, steps, optimiser_factory, parameterisation="standard"):
    """Plain PyTorch: one module and one torch.optim optimiser per neuron, looped."""
    finals = []
    for b1, b2, lr in conditions:
        module = SingleNeuron(b1=b1, b2=b2, parameterisation=parameterisation, dtype=x.dtype)
        optimiser = optimiser_factory(module.parameters(), lr)
        for _ in range(steps):
            optimiser.zero_grad()
            ((module(x) - y) ** 2).mean().backward()
            optimiser.step()
        finals.append([module.w1.item(), module.b1.item(), module.w2.item(), module.b2.item()])
    return torch.tensor(finals, dtype=x.dtype)


@pytest.mark.parametrize("parameterisation", ["standard", "reparam"])
def test_batched_adam_matches_torch_adam_loop_float64(parameterisation):
    x, y = _inputs(torch.float64)
    problem = _batched(x, y, parameterisation=parameterisation)
    optimiser = BatchedAdam(problem.params, [c[2] for c in CONDITIONS])
    train(problem, optimiser, steps=400, record_every=100)
    reference = _per_neuron_reference(
        x, y, CONDITIONS, 400, lambda p, lr: torch.optim.Adam(p, lr=lr), parameterisation
    )
    torch.testing.assert_close(problem.theta, reference, rtol=1e-9, atol=1e-11)


def test_batched_adam_matches_torch_adam_loop_float32():
    x, y = _inputs(torch.float32)
    problem = _batched(x, y)
    train(problem, BatchedAdam(problem.params, [c[2] for c in CONDITIONS]), 300, 100)
    reference = _per_neuron_reference(
        x, y, CONDITIONS, 300, lambda p, lr: torch.optim.Adam(p, lr=lr)
    )
    torch.testing.assert_close(problem.theta, reference, rtol=1e-4, atol=1e-5)


def test_batched_sgd_momentum_matches_torch_sgd_loop():
    x, y = _inputs(torch.float64)
    problem = _batched(x, y)
    lrs = [c[2] for c in CONDITIONS]
    train(problem, BatchedSGD(problem.params, lrs, momentum=0.9), 200, 50)
    reference = _per_neuron_reference(
        x, y, CONDITIONS, 200, lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9)
    )
    torch.testing.assert_close(problem.theta, reference, rtol=1e-9, atol=1e-11)


def test_diverging_network_is_frozen_and_flagged_while_others_train_on():
    x, y = _inputs(torch.float64)
    conditions = [(0.0, -1.1, 0.01), (0.3, 0.5, 0.01)]
    problem = _batched(x, y, conditions=conditions)
    lrs = torch.tensor([0.01, 0.01], dtype=torch.float64)
    optimiser = BatchedSGD(problem.params, lrs)
    optimiser.lr[1] = 1e6  # SGD with this step size overflows within a few steps
    result = train(problem, optimiser, 50, 10)
    assert result.diverged.tolist() == [False, True]
    assert result.diverged_step[1] > 0
    assert torch.isfinite(problem.theta).all(), "a frozen network keeps its last finite parameters"
    alone = _batched(x, y, conditions=conditions[:1])
    train(alone, BatchedSGD(alone.params, [0.01]), 50, 10)
    torch.testing.assert_close(problem.theta[0], alone.theta[0], rtol=0, atol=0)


def test_recording_schedule_includes_init_and_final_step():
    x, y = _inputs(torch.float32)
    result = train(_batched(x, y), BatchedAdam(_batched(x, y).params, 0.01), 25, 10)
    np.testing.assert_array_equal(result.steps, [0, 10, 20, 25])
    assert result.curves["loss"].shape == (len(CONDITIONS), 4)
    assert set(result.curves) == {"loss", "w1", "b1", "w2", "b2", "state"}


def test_neuron_states_on_hand_built_neurons():
    x, y = _inputs(torch.float32)
    problem = BatchedSingleNeuron(
        x, y, [1.0, 1.0, 1.0, 2.0], [0.0, 1.5, -1.0, -2.5], [1.0] * 4, [0.0] * 4
    )
    # kinks at 0 (balanced), -1.5 (hyperactive), 1 (z <= 0 on every input: dead), 1.25 (dead)
    expected = ["balanced", "hyperactive", "dead", "dead"]
    assert problem.state().tolist() == [STATE_CODES[s] for s in expected]
    torch.testing.assert_close(problem.kink(), torch.tensor([0.0, -1.5, 1.0, 1.25]))


def test_bad_shapes_are_rejected():
    x, y = _inputs(torch.float32)
    with pytest.raises(ValueError, match="one entry per network"):
        BatchedSingleNeuron(x, y, [1.0, 1.0], [0.0], [1.0, 1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="y must have shape"):
        BatchedSingleNeuron(x, y[:-1], [1.0], [0.0], [1.0], [0.0])
    with pytest.raises(ValueError, match="lr must be"):
        BatchedAdam(_batched(x, y).params, [0.1, 0.2])


def _random_neurons(x, y, n, activation, parameterisation, method, seed=0):
    generator = torch.Generator().manual_seed(seed)
    draw = lambda: torch.randn(n, generator=generator, dtype=x.dtype) * 1.5  # noqa: E731
    w1, b1, w2, b2 = draw(), draw(), draw(), draw()
    w1[:3] = 0.0  # flat neurons: z = b1 (standard) or 0 (reparam) on every input
    b1[3] = -w1[3] * x[7]  # kink exactly on an input
    b1[4] = 1e6  # kink far outside the data
    return BatchedSingleNeuron(
        x,
        y,
        w1,
        b1,
        w2,
        b2,
        activation=activation,
        parameterisation=parameterisation,
        method=method,
    )


@pytest.mark.parametrize("activation", ["relu", "linear", "leaky_relu"])
@pytest.mark.parametrize("parameterisation", ["standard", "reparam"])
@pytest.mark.parametrize("sampling", ["grid", "unsorted", "per-network targets"])
def test_prefix_sums_equal_the_direct_pass(activation, parameterisation, sampling):
    generator = torch.Generator().manual_seed(3)
    n_networks = 64
    if sampling == "grid":
        x = torch.linspace(-1, 1, 201, dtype=torch.float64)
    else:
        x = torch.rand(300, generator=generator, dtype=torch.float64) * 2 - 1
    y = torch.relu(x)
    if sampling == "per-network targets":
        y = torch.randn(n_networks, x.shape[0], generator=generator, dtype=torch.float64)
    act = "leaky_relu" if activation == "leaky_relu" else activation
    pair = [
        _random_neurons(x, y, n_networks, act, parameterisation, method)
        for method in ("direct", "prefix")
    ]
    assert [p.method for p in pair] == ["direct", "prefix"]
    (loss_d, (grad_d,)), (loss_p, (grad_p,)) = (p.loss_and_grads() for p in pair)
    torch.testing.assert_close(loss_p, loss_d, rtol=1e-11, atol=1e-13)
    torch.testing.assert_close(grad_p, grad_d, rtol=1e-10, atol=1e-12)


def test_prefix_sums_put_every_input_on_the_side_the_direct_pass_does_float32():
    """In float32 a kink a rounding error away from an input must not move that input: the
    prefix path checks the split with the direct pre-activation."""
    x = torch.linspace(-1, 1, 1000)
    n = 2000
    b1 = -x[torch.arange(n) % 1000] * 0.7  # kinks on (or a rounding error from) inputs
    pair = [
        BatchedSingleNeuron(x, torch.relu(x), [0.7] * n, b1, [1.0] * n, [0.1] * n, method=m)
        for m in ("direct", "prefix")
    ]
    (loss_d, (grad_d,)), (loss_p, (grad_p,)) = (p.loss_and_grads() for p in pair)
    torch.testing.assert_close(loss_p, loss_d, rtol=2e-5, atol=1e-6)
    torch.testing.assert_close(grad_p, grad_d, rtol=2e-4, atol=2e-5)


def test_prefix_training_equals_direct_training_float64():
    x, y = _inputs(torch.float64)
    results = []
    for method in ("direct", "prefix"):
        problem = BatchedSingleNeuron(
            x,
            y,
            [1.0] * 4,
            [c[0] for c in CONDITIONS],
            [1.0] * 4,
            [c[1] for c in CONDITIONS],
            method=method,
        )
        train(problem, BatchedAdam(problem.params, [c[2] for c in CONDITIONS]), 500, 100)
        results.append(problem.theta)
    torch.testing.assert_close(results[1], results[0], rtol=1e-9, atol=1e-11)


def test_prefix_method_needs_a_piecewise_linear_activation():
    x, y = _inputs(torch.float32)
    with pytest.raises(ValueError, match="piecewise-linear"):
        BatchedSingleNeuron(x, y, [1.0], [0.0], [1.0], [0.0], activation="silu", method="prefix")
    assert BatchedSingleNeuron(x, y, [1.0], [0.0], [1.0], [0.0], activation="silu").method == (
        "direct"
    )
