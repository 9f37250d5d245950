"""The torch.func family: S copies of any nn.Module trained as one computation equal S copies
trained one by one with torch.optim (float64), per-network learning rates, divergence isolation,
BatchNorm buffers, per-copy data-dependent init, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from relulab.engine import (
    BatchedAdam,
    BatchedSGD,
    FunctionalFamily,
    FunctionalProblem,
    minibatches,
    train,
)
from relulab.engine.copies import EXECUTIONS, default_execution
from relulab.init import scale_bias_

F64 = torch.float64


def small_cnn(batchnorm: bool = False) -> nn.Module:
    norm = [nn.BatchNorm2d(4)] if batchnorm else []
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, padding_mode="reflect"),
        *norm,
        nn.ReLU(),
        nn.Conv2d(4, 6, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(6, 3),
    )


def mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)
    )


def image_data(n: int = 24) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 1, 8, 8, generator=g, dtype=F64), torch.randint(0, 3, (n,), generator=g)


def vector_data(n: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    return torch.randn(n, 5, generator=g, dtype=F64), torch.randn(n, 2, generator=g, dtype=F64)


def reference_run(family, x, y, loss_fn, make_optimiser, lrs, steps, batch_size, seed):
    """Each copy alone: its nn.Module, torch.optim, the same minibatch stream."""
    modules = [family.module(s) for s in range(family.n_networks)]
    finals = []
    for module, lr in zip(modules, lrs, strict=True):
        optimiser = make_optimiser(module.parameters(), lr)
        stream = minibatches(x, y, batch_size, torch.Generator().manual_seed(seed))
        for _ in range(steps):
            xb, yb = next(stream)
            optimiser.zero_grad()
            loss_fn(module(xb), yb).backward()
            optimiser.step()
        with torch.no_grad():  # train() evaluates the loss after the last step too (BN counts it)
            module(next(stream)[0])
        finals.append(module)
    return finals


def batched_run(family, x, y, loss, optimiser, steps, batch_size, seed):
    stream = minibatches(x, y, batch_size, torch.Generator().manual_seed(seed))
    problem = FunctionalProblem(family, stream, loss)
    return train(problem, optimiser(problem.params), steps, record_every=steps)


def max_difference(family, modules) -> float:
    worst = 0.0
    for s, module in enumerate(modules):
        mine = family.module(s).state_dict()
        for name, value in module.state_dict().items():
            worst = max(worst, float((mine[name].double() - value.double()).abs().max()))
    return worst


CASES = [
    ("cnn-sgd", small_cnn, image_data, "cross_entropy", "sgd"),
    ("cnn-adam", small_cnn, image_data, "cross_entropy", "adam"),
    ("mlp-sgd", mlp, vector_data, "mse", "sgd"),
    ("mlp-adam", mlp, vector_data, "mse", "adam"),
    ("cnn-bn-sgd", lambda: small_cnn(batchnorm=True), image_data, "cross_entropy", "sgd"),
]


@pytest.mark.parametrize("execution", EXECUTIONS)
@pytest.mark.parametrize(
    ("factory", "data", "loss", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_equals_separate_torch_optim_copies(factory, data, loss, kind, execution):
    x, y = data()
    lrs = [0.01, 0.03, 0.1] if kind == "sgd" else [1e-3, 3e-3, 1e-2]
    family = FunctionalFamily(factory, 3, seeds=[5, 6, 7], dtype=F64, execution=execution)
    loss_fn = {"mse": nn.functional.mse_loss, "cross_entropy": nn.functional.cross_entropy}[loss]
    if kind == "sgd":
        reference_opt = lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9)  # noqa: E731
        batched_opt = lambda p: BatchedSGD(p, lrs, momentum=0.9)  # noqa: E731
    else:
        reference_opt = lambda p, lr: torch.optim.Adam(p, lr=lr)  # noqa: E731
        batched_opt = lambda p: BatchedAdam(p, lrs)  # noqa: E731
    modules = reference_run(family, x, y, loss_fn, reference_opt, lrs, 12, 8, seed=3)
    result = batched_run(family, x, y, loss, batched_opt, 12, 8, seed=3)
    assert not result.diverged.any()
    # parameters and (with BatchNorm) running statistics and batch counts
    assert max_difference(family, modules) < 1e-9


def _trained(execution, kind, batchnorm, steps=6, seeds=(5, 6, 7), lrs=None):
    """A small CNN family trained ``steps`` SGD-momentum or Adam steps by ``execution``."""
    x, y = image_data()
    family = FunctionalFamily(
        lambda: small_cnn(batchnorm), len(seeds), seeds=list(seeds), dtype=F64, execution=execution
    )
    lrs = lrs or ([0.01, 0.03, 0.1] if kind == "sgd" else [1e-3, 3e-3, 1e-2])[: len(seeds)]
    optimiser = (
        (lambda p: BatchedSGD(p, lrs, momentum=0.9))
        if kind == "sgd"
        else (lambda p: BatchedAdam(p, lrs))
    )
    result = batched_run(family, x, y, "cross_entropy", optimiser, steps, 8, seed=3)
    return family, result


@pytest.mark.parametrize("batchnorm", [False, True], ids=["plain", "batchnorm"])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_the_loop_and_vmap_executions_give_the_same_parameters(kind, batchnorm):
    """vmap's grouped convolution and the per-network loop (default and channels-last memory)
    are the same computation in another order: equal to rounding in float64, not bit for bit
    (SGD-momentum: ≤ 3e-16 measured; Adam divides by √v̂, which magnifies rounding: ≤ 2e-10)."""
    reference, reference_result = _trained("vmap", kind, batchnorm)
    for execution in ("loop", "loop-channels-last"):
        family, result = _trained(execution, kind, batchnorm)
        assert family.execution == execution
        np.testing.assert_allclose(
            result.curves["loss"], reference_result.curves["loss"], rtol=1e-12
        )
        for p, q in zip(family.params, reference.params, strict=True):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-9 if kind == "adam" else 1e-14)
        for name, buffer in reference.buffers.items():  # BatchNorm statistics and counts
            torch.testing.assert_close(family.buffers[name], buffer, rtol=0, atol=1e-9)


@pytest.mark.parametrize("execution", ["loop", "loop-channels-last"])
def test_a_looped_copy_trains_bit_for_bit_as_in_a_family_of_its_own(execution):
    """On the loop paths each copy is its own computation: copy 7 in a family of three and
    alone have the same parameters and BatchNorm statistics to the bit (one shared learning
    rate, so the optimiser takes the same arithmetic in both)."""
    family, _ = _trained(execution, "adam", True, seeds=(5, 6, 7), lrs=[1e-2] * 3)
    alone, _ = _trained(execution, "adam", True, seeds=(7,), lrs=[1e-2])
    for p, q in zip(family.params, alone.params, strict=True):
        assert torch.equal(p[2], q[0])
    for name, buffer in family.buffers.items():
        assert torch.equal(buffer[2], alone.buffers[name][0])


def test_auto_execution_is_the_device_rule_and_channels_last_lays_out_weights():
    family = FunctionalFamily(small_cnn, 2)
    assert family.execution == default_execution("cpu") == "loop-channels-last"
    assert default_execution("cuda") == "vmap"
    weight = family.params[family.names.index("2.weight")]  # (S, 6, 4, 3, 3), slices NHWC
    assert weight[1].is_contiguous(memory_format=torch.channels_last)
    assert not weight[1].is_contiguous()
    assert FunctionalFamily(small_cnn, 2, execution="loop").params[2].is_contiguous()
    with pytest.raises(ValueError, match="execution"):
        FunctionalFamily(small_cnn, 2, execution="fast")


def test_copies_differ_and_follow_their_seeds():
    a = FunctionalFamily(mlp, 3, seeds=[0, 1, 2], dtype=F64)
    b = FunctionalFamily(mlp, 2, seeds=[2, 0], dtype=F64)
    assert not torch.equal(a.params[0][0], a.params[0][1])
    torch.testing.assert_close(a.params[0][2], b.params[0][0], rtol=0, atol=0)
    torch.manual_seed(0)
    expected = mlp().double()
    torch.testing.assert_close(a.module(0)[0].weight, expected[0].weight, rtol=0, atol=0)


def test_family_leaves_global_random_state_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    FunctionalFamily(mlp, 2)
    assert torch.equal(before, torch.get_rng_state())


def test_divergence_is_isolated():
    x, y = vector_data()
    lrs = [0.01, 1e6, 0.02]  # the middle network blows up
    family = FunctionalFamily(mlp, 3, seeds=[1, 2, 3], dtype=F64)
    healthy = FunctionalFamily(mlp, 2, seeds=[1, 3], dtype=F64)
    result = batched_run(family, x, y, "mse", lambda p: BatchedSGD(p, lrs, momentum=0.9), 20, 8, 0)
    alone = batched_run(
        healthy, x, y, "mse", lambda p: BatchedSGD(p, [0.01, 0.02], momentum=0.9), 20, 8, 0
    )
    assert result.diverged.tolist() == [False, True, False]
    assert result.diverged_step[1] > 0
    for mine, theirs in zip(family.params, healthy.params, strict=True):
        torch.testing.assert_close(mine[[0, 2]], theirs, rtol=0, atol=1e-12)
    assert (result.curves["loss"][[0, 2]] == alone.curves["loss"]).all()
    frozen_at = result.curves["loss"][1]
    assert not math.isfinite(frozen_at[-1])


def test_batchnorm_buffers_frozen_with_a_diverged_network():
    x, y = image_data()
    family = FunctionalFamily(lambda: small_cnn(batchnorm=True), 2, dtype=F64)
    result = batched_run(
        family, x, y, "cross_entropy", lambda p: BatchedSGD(p, [0.01, 1e300]), 10, 8, 0
    )
    assert result.diverged.tolist() == [False, True]
    step = int(result.diverged_step[1])
    assert torch.isfinite(family.buffers["1.running_mean"][1]).all()
    assert int(family.buffers["1.num_batches_tracked"][1]) == step  # stopped when it diverged
    assert int(family.buffers["1.num_batches_tracked"][0]) == 11  # steps 0 … 10 all evaluated


def test_eval_mode_uses_running_statistics_and_observation_leaves_buffers():
    x, _ = image_data()
    family = FunctionalFamily(lambda: small_cnn(batchnorm=True), 2, dtype=F64)
    before = family.buffers["1.running_var"].clone()
    family.forward(x)
    family.trace(x)
    torch.testing.assert_close(family.buffers["1.running_var"], before, rtol=0, atol=0)
    family.forward(x, update_buffers=True)
    assert not torch.equal(family.buffers["1.running_var"], before)
    family.eval()
    module = family.module(1)
    assert not module.training
    torch.testing.assert_close(family.forward(x)[1], module(x), rtol=1e-12, atol=1e-12)


def test_per_network_data():
    x, y = vector_data()
    family = FunctionalFamily(mlp, 2, dtype=F64)
    xs = torch.stack([x, -x])
    out = family.forward(xs, per_network=True)
    torch.testing.assert_close(out[1], family.module(1)(-x))
    losses, grads = family.loss_and_grads_with(
        xs, torch.stack([y, y]), nn.functional.mse_loss, per_network=True
    )
    module = family.module(1)
    nn.functional.mse_loss(module(-x), y).backward()
    torch.testing.assert_close(grads[0][1], module[0].weight.grad)


def test_per_copy_data_dependent_init():
    g = torch.Generator().manual_seed(0)
    batches = [torch.randn(64, 5, generator=g, dtype=F64) + s for s in range(3)]
    family = FunctionalFamily(
        mlp, 3, seeds=[4, 5, 6], init="scale_bias", init_data=lambda s: batches[s], dtype=F64
    )
    assert all(len(report) == 3 for report in family.init_reports)
    for s in range(3):
        reference = mlp().double()
        scale_bias_(reference, batches[s], generator=torch.Generator().manual_seed(4 + s))
        torch.testing.assert_close(family.module(s)[2].bias, reference[2].bias)
        # each copy is centred on its own data, not the others'
        hidden = family.trace(batches[s]).linear_outputs[0][s]
        assert float(hidden.mean(dim=0).abs().max()) < 1e-9


def test_trace_and_layer_statistics():
    x, _ = image_data()
    family = FunctionalFamily(small_cnn, 3, dtype=F64)
    trace = family.trace(x)
    assert [tuple(u.shape) for u in trace.linear_outputs] == [
        (3, 24, 4, 8, 8),
        (3, 24, 6, 4, 4),
        (3, 24, 3),
    ]
    assert len(trace.preactivations) == 2
    torch.testing.assert_close(trace.activations[0], trace.preactivations[0].relu())
    torch.testing.assert_close(trace.output, family.forward(x))
    # the ratio from sums over batches equals the ratio from the whole tensor
    ratio = family.layer_statistics(x, batch_size=5).ratio()
    u = trace.linear_outputs[1][1]
    mean, var = u.mean(dim=(0, 2, 3)), u.var(dim=(0, 2, 3), unbiased=False)
    expected = (mean.square().sum() / var.sum()).sqrt()
    torch.testing.assert_close(ratio[1, 1], expected, rtol=1e-9, atol=0)


def test_determinism():
    x, y = image_data()

    def run():
        family = FunctionalFamily(small_cnn, 2, dtype=torch.float32)
        result = batched_run(
            family, x.float(), y, "cross_entropy", lambda p: BatchedAdam(p, 1e-2), 5, 8, 0
        )
        return result.curves["loss"], [p.clone() for p in family.params]

    (loss_a, params_a), (loss_b, params_b) = run(), run()
    assert (loss_a == loss_b).all()
    assert all(torch.equal(a, b) for a, b in zip(params_a, params_b, strict=True))


def test_bad_arguments():
    with pytest.raises(ValueError, match="seeds"):
        FunctionalFamily(mlp, 2, seeds=[1])
    with pytest.raises(ValueError, match="loss"):
        FunctionalProblem(FunctionalFamily(mlp, 1), iter([]), "hinge")
    with pytest.raises(ValueError, match="data-dependent"):
        FunctionalFamily(mlp, 1, init="scale")


def test_bench_w5_trains_the_same_networks_on_every_path():
    from relulab.bench import cnn, summary_rows

    result = cnn.w5_cnn_ensemble(
        torch.device("cpu"), steps=2, n_networks=2, widths=(1 / 32,), batch_size=4, repeats=1
    )
    measured = result["by_width"]["0.03125"]
    assert set(measured["paths"]) == set(cnn.W5_PATHS)
    for execution in EXECUTIONS:  # float32: the paths agree with the per-model loop
        assert measured["paths"][execution]["max_abs_diff_vs_naive"] < 1e-5
    assert measured["auto_execution"] == "loop-channels-last"
    assert measured["fastest_engine_path"] in EXECUTIONS
    # vmap and the per-network loop are both timed in the one run; their ratio is reported
    assert measured["loop_vs_vmap"] > 0 and measured["auto_vs_vmap"] > 0
    rows = summary_rows({"w5": result})
    assert any(row[0] == "W5 CNN ensemble ×0.03125" and "≥ 1.2×" in row[3] for row in rows)
    assert any("loop" in row[1] and "vmap" in row[1] and row[2].endswith("×") for row in rows)


def test_layer_statistics_of_a_linear_on_sequences_uses_the_last_axis():
    family = FunctionalFamily(lambda: nn.Sequential(nn.Linear(4, 5), nn.ReLU()), 2, dtype=F64)
    x = torch.randn(6, 7, 4, dtype=F64) + 1.0  # (N, T, d): 5 features over N and T
    sums = family.layer_statistics(x)
    assert sums.total[0].shape == (2, 5) and sums.count[0] == 42
    u = family.module(0)[0](x)
    mean, var = u.mean(dim=(0, 1)), u.var(dim=(0, 1), unbiased=False)
    expected = (mean.square().sum() / var.sum()).sqrt()
    torch.testing.assert_close(sums.ratio()[0, 0], expected, rtol=1e-9, atol=0)


def test_the_engines_supervised_problem_trains_the_family_by_autograd():
    from relulab.engine import SupervisedProblem

    x, y = vector_data()
    a = FunctionalFamily(mlp, 3, dtype=F64)
    b = FunctionalFamily(mlp, 3, dtype=F64)
    supervised = SupervisedProblem(a, x, y, loss="mse")
    functional = FunctionalProblem(b, iter(lambda: (x, y), None), "mse")
    result_a = train(supervised, BatchedAdam(supervised.params, [1e-3, 1e-2, 3e-2]), 8, 4)
    result_b = train(functional, BatchedAdam(functional.params, [1e-3, 1e-2, 3e-2]), 8, 4)
    np.testing.assert_allclose(result_a.curves["loss"], result_b.curves["loss"], rtol=1e-10)
    for p, q in zip(a.params, b.params, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-12)
    assert "dead_fraction" in result_a.curves  # the supervised problem's observables, from trace
