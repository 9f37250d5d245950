"""Every batched family against a plain per-network loop of torch modules and torch.optim."""

import numpy as np
import pytest
import torch

from relulab.engine import (
    BatchedAdam,
    BatchedMLP,
    BatchedResidualToy,
    BatchedSGD,
    MLPSpec,
    ResidualToySpec,
    SupervisedProblem,
    init_weight_stack,
    train,
)
from relulab.nn import ReLUMinusB
from tests.engine.reference_loop import assert_same_parameters, loop_reference

F64 = torch.float64


def _data(n_samples, d_in, d_out, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n_samples, d_in, generator=generator, dtype=F64)
    y = torch.randn(n_samples, d_out, generator=generator, dtype=F64)
    return x, y


OPTIMISERS = {
    "sgd": (lambda p, lr: BatchedSGD(p, lr), lambda p, lr: torch.optim.SGD(p, lr=lr)),
    "momentum": (
        lambda p, lr: BatchedSGD(p, lr, momentum=0.9),
        lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9),
    ),
    "adam": (lambda p, lr: BatchedAdam(p, lr), lambda p, lr: torch.optim.Adam(p, lr=lr)),
}


@pytest.mark.parametrize(
    ("spec", "shift", "optimiser", "loss", "batch_size"),
    [
        (MLPSpec((8, 16, 5)), 0.0, "sgd", "half_sum", None),  # two-layer ReLU, hidden bias
        (MLPSpec((8, 16, 5), activation="linear", bias=False), 0.0, "sgd", "half_sum", None),
        (MLPSpec((6, 12, 12, 12, 3)), [0.0, 0.2, 0.5], "adam", "mse", None),  # ReLU−b per network
        (
            MLPSpec((6, 10, 10, 3), activation="leaky_relu", leaky_slope=0.1),
            0.0,
            "momentum",
            "mse",
            8,
        ),
        (MLPSpec((6, 10, 10, 3), activation="silu", bias=False), 0.0, "adam", "mse", 8),
        (MLPSpec((6, 10, 10, 3), activation="tanh"), 0.0, "sgd", "mse", None),
        # A bias right before BatchNorm has an exactly-zero gradient; Adam would turn the
        # rounding noise there into full steps, so the Adam case drops it (as is usual with BN).
        (MLPSpec((6, 10, 10, 3), batchnorm=True, bias=False), 0.0, "adam", "mse", 12),
        (MLPSpec((6, 10, 10, 3), batchnorm=True), 0.0, "momentum", "mse", None),
    ],
)
def test_batched_mlp_matches_per_network_loop(spec, shift, optimiser, loss, batch_size):
    x, y = _data(24, spec.widths[0], spec.widths[-1])
    lrs = [lr / (len(x) if loss == "half_sum" else 1) for lr in (0.003, 0.01, 0.02)]
    model = BatchedMLP(
        spec,
        3,
        init=["kaiming_normal", "torch_default", "lecun_normal"],
        seeds=[11, 12, 13],
        relu_shift=shift,
        dtype=F64,
    )
    modules = [model.module(s) for s in range(3)]
    make_batched, make_torch = OPTIMISERS[optimiser]
    problem = SupervisedProblem(
        model, x, y, loss=loss, batch_size=batch_size, generator=torch.Generator().manual_seed(5)
    )
    train(problem, make_batched(problem.params, lrs), steps=40, record_every=10)
    loop_reference(modules, x, y, 40, make_torch, lrs, loss, batch_size, seed=5)
    assert_same_parameters(model, modules)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu", "silu", "tanh", "linear"])
@pytest.mark.parametrize("loss", ["mse", "half_sum"])
def test_manual_backprop_equals_autograd(activation, loss):
    spec = MLPSpec((6, 10, 10, 3), activation=activation, leaky_slope=0.1)
    shift = [0.0, 0.2, 0.5] if activation == "relu" else 0.0
    model = BatchedMLP(spec, 3, seeds=[1, 2, 3], relu_shift=shift, dtype=F64)
    x, y = _data(8, 6, 3)
    losses, grads = model.loss_and_grads(x, y, loss)
    with torch.enable_grad():
        squared = (model.forward(x) - y).square()
        reference = squared.mean((1, 2)) if loss == "mse" else 0.5 * squared.sum((1, 2))
        reference_grads = torch.autograd.grad(reference.sum(), model.params)
    torch.testing.assert_close(losses, reference, rtol=1e-14, atol=0)
    for got, want in zip(grads, reference_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("lrs", [[1e-3, 3e-3], [2e-3, 2e-3]], ids=["per-network-lr", "one-lr"])
def test_batched_residual_toy_matches_per_network_loop(norm, lrs):
    """One learning rate for all takes BatchedAdam's fused path, several its own arithmetic."""
    spec = ResidualToySpec(width=6, hidden=24, blocks=3, norm=norm, alpha=1.5)
    x, y = _data(20, 6, 6, seed=1)
    model = BatchedResidualToy(spec, 2, seeds=[3, 4], relu_shift=[0.0, 0.25], dtype=F64)
    modules = [model.module(s) for s in range(2)]
    problem = SupervisedProblem(model, x, y)
    train(problem, BatchedAdam(problem.params, lrs), steps=30, record_every=10)
    loop_reference(modules, x, y, 30, lambda p, lr: torch.optim.Adam(p, lr=lr), lrs, "mse")
    assert_same_parameters(model, modules)


@pytest.mark.parametrize("optimiser", sorted(OPTIMISERS))
def test_one_learning_rate_for_all_steps_like_torch_optim(optimiser):
    """One shared lr takes the optimisers' all-networks-at-once path (fused Adam, foreach
    SGD); the MLP keeps its first weight input-major (another memory layout)."""
    spec = MLPSpec((8, 16, 5))
    x, y = _data(24, 8, 5)
    model = BatchedMLP(spec, 3, seeds=[11, 12, 13], dtype=F64)
    assert not model.weights[0].is_contiguous()
    modules = [model.module(s) for s in range(3)]
    make_batched, make_torch = OPTIMISERS[optimiser]
    problem = SupervisedProblem(model, x, y)
    train(problem, make_batched(problem.params, 0.01), steps=40, record_every=10)
    loop_reference(modules, x, y, 40, make_torch, [0.01] * 3, "mse")
    assert_same_parameters(model, modules)


@pytest.mark.parametrize("optimiser", sorted(OPTIMISERS))
def test_learning_rates_changed_after_construction_are_used(optimiser):
    """``lr`` is public: changed in place or replaced, the next step uses it (the shared-rate
    path must not keep a stale answer)."""
    theta = torch.zeros(2, 3, dtype=F64)
    step = OPTIMISERS[optimiser][0]([theta], 0.1)
    step.lr[1] = 0.0  # in place: network 1 no longer moves
    step.step([torch.ones(2, 3, dtype=F64)])
    assert bool((theta[0] != 0).all()) and bool((theta[1] == 0).all())
    step.lr = torch.zeros(2, dtype=F64)  # replaced: nobody moves
    before = theta.clone()
    step.step([torch.ones(2, 3, dtype=F64)])
    torch.testing.assert_close(theta, before, rtol=0, atol=0)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("shifts", ["none", "scalar", "per-neuron"])
def test_residual_training_forward_has_the_traced_forward_gradients(norm, shifts):
    """gradient_forward() applies ReLU in place on FC1's output (and masks the gradient in
    place); trace() keeps z. Both must give the same losses and gradients, bit for bit."""
    spec = ResidualToySpec(width=6, hidden=24, blocks=3, norm=norm)
    x, y = _data(20, 6, 6, seed=2)
    model = BatchedResidualToy(
        spec, 2, seeds=[3, 4], relu_shift=0.3 if shifts == "scalar" else 0.0, dtype=F64
    )
    if shifts == "per-neuron":
        model.calibrate_shifts_(x)
    with torch.enable_grad():
        fast = torch.autograd.grad((model.gradient_forward(x) - y).square().sum(), model.params)
        kept = torch.autograd.grad((model.trace(x).output - y).square().sum(), model.params)
    for got, want in zip(fast, kept, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_residual_forward_keeps_every_kind_of_differentiation():
    """The in-place ReLU is only in gradient_forward: forward() still has double backward,
    torch.func and forward mode (and gradient_forward builds a differentiable graph when
    asked to, create_graph)."""
    model = BatchedResidualToy(ResidualToySpec(width=4, hidden=8, blocks=2), 2, dtype=F64)
    x = torch.randn(5, 4, dtype=F64, generator=torch.Generator().manual_seed(0))
    for run in (model.forward, model.gradient_forward):
        with torch.enable_grad():
            w = model.params[0]
            (g,) = torch.autograd.grad(run(x).square().sum(), w, create_graph=True)
            (gg,) = torch.autograd.grad(g.square().sum(), w)  # a Hessian-vector product
        assert torch.isfinite(gg).all()
    grad_x = torch.func.grad(lambda v: model.forward(v).square().sum())(x)
    _, tangent = torch.func.jvp(lambda v: model.forward(v), (x,), (torch.ones_like(x),))
    assert grad_x.shape == x.shape and tangent.shape == (2, 5, 4)


def test_fused_adam_is_not_used_on_a_strided_parameter():
    """torch's fused Adam kernel walks memory as one block; a parameter that is a strided
    view (here every other column of a buffer) must take the per-tensor arithmetic."""
    buffer = torch.zeros(3, 4, 6, dtype=F64)
    theta = buffer[:, :, ::2]
    BatchedAdam([theta], 0.1).step([torch.ones(3, 4, 3, dtype=F64)])
    expected = torch.full_like(theta, -0.1 / (1 + 1e-8))  # first step: m̂ = v̂ = 1, eps = 1e-8
    torch.testing.assert_close(theta, expected, rtol=1e-12, atol=0)
    assert bool((buffer[:, :, 1::2] == 0).all()), "memory outside the parameter was written"


class _SeparateCalls:
    """A problem that offers train only loss_and_grads and observe (no recording_step)."""

    def __init__(self, problem):
        self.problem, self.params, self.n_networks = problem, problem.params, problem.n_networks
        self.loss_and_grads, self.observe = problem.loss_and_grads, problem.observe


@pytest.mark.parametrize("batch_size", [None, 5])
def test_recording_steps_in_one_pass_record_and_train_as_separate_calls(batch_size):
    """SupervisedProblem.recording_step takes a full-batch recording step's gradients and
    observables from one traced pass (and skips the backward after the last step)."""
    spec = ResidualToySpec(width=6, hidden=24, blocks=3, norm="post")
    x, y = _data(20, 6, 6, seed=3)
    results, models = [], []
    for wrap in (False, True):
        model = BatchedResidualToy(spec, 2, seeds=[3, 4], relu_shift=[0.0, 0.25], dtype=F64)
        problem = SupervisedProblem(model, x, y, batch_size=batch_size, record_parameters=True)
        optimiser = BatchedAdam(problem.params, 1e-2)
        results.append(train(_SeparateCalls(problem) if wrap else problem, optimiser, 12, 3))
        models.append(model)
    one_pass, separate = results
    assert one_pass.curves.keys() == separate.curves.keys()
    for name, curve in one_pass.curves.items():
        np.testing.assert_array_equal(curve, separate.curves[name], err_msg=name)
    for got, want in zip(models[0].params, models[1].params, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_subclass_redefining_observe_or_loss_and_grads_is_called_at_recording_steps():
    """The one-pass recording step would bypass a subclass's own observe/loss_and_grads."""

    class WithNorm(SupervisedProblem):
        def observe(self):
            return {**super().observe(), "norm": self.params[0].square().sum(dim=(1, 2))}

    class Scaled(SupervisedProblem):
        def loss_and_grads(self):
            losses, grads = super().loss_and_grads()
            return 2 * losses, grads

    spec = ResidualToySpec(width=6, hidden=24, blocks=2, norm="post")
    x, y = _data(20, 6, 6, seed=3)
    curves = {}
    for cls in (SupervisedProblem, WithNorm, Scaled):
        model = BatchedResidualToy(spec, 2, seeds=[3, 4], dtype=F64)
        problem = cls(model, x, y)
        curves[cls.__name__] = train(problem, BatchedAdam(problem.params, 1e-2), 6, 3).curves
    assert "norm" in curves["WithNorm"] and "norm" not in curves["SupervisedProblem"]
    np.testing.assert_allclose(curves["Scaled"]["loss"], 2 * curves["SupervisedProblem"]["loss"])


def test_network_init_depends_on_its_seed_only():
    shapes = [(7, 5), (3, 7)]
    alone = init_weight_stack(shapes, 1, seeds=[42], dtype=F64)
    in_a_sweep = init_weight_stack(shapes, 4, seeds=[1, 2, 42, 3], dtype=F64)
    for (w_alone, b_alone), (w_sweep, b_sweep) in zip(alone, in_a_sweep, strict=True):
        torch.testing.assert_close(w_alone[0], w_sweep[2], rtol=0, atol=0)
        torch.testing.assert_close(b_alone[0], b_sweep[2], rtol=0, atol=0)


@pytest.mark.parametrize(
    ("scheme", "weight_var", "bias_var"),
    [
        ("kaiming_normal", 2 / 400, 0.0),
        ("lecun_normal", 1 / 400, 0.0),
        ("kaiming_uniform", 2 / 400, 0.0),
        ("torch_default", 1 / (3 * 400), 1 / (3 * 400)),
    ],
)
def test_init_schemes_have_their_stated_variance(scheme, weight_var, bias_var):
    ((weight, bias),) = init_weight_stack([(300, 400)], 4, scheme=scheme, dtype=F64)
    # 480 000 draws: the variance estimate's relative standard error is ~0.3 %; 2 % is > 6 sigma.
    assert weight.var().item() == pytest.approx(weight_var, rel=0.02)
    assert bias.var().item() == pytest.approx(bias_var, rel=0.1, abs=1e-12)


def test_neuron_state_fractions_are_recorded():
    spec = MLPSpec((2, 4, 1), bias=True)
    model = BatchedMLP(spec, 1, dtype=F64)
    with torch.no_grad():
        model.weights[0].copy_(torch.tensor([[[1.0, 0], [-1, 0], [0, 0], [0, 0]]]))
        model.biases[0].copy_(torch.tensor([[0.0, 0, 5, -5]]))
    x = torch.tensor([[1.0, 0], [-1, 0], [2, 0]], dtype=F64)
    problem = SupervisedProblem(model, x, torch.zeros(3, 1, dtype=F64))
    observed = problem.observe()
    # unit 3 (bias +5) is always on, unit 4 (bias −5) is dead, units 1 and 2 are gating
    assert observed["always_on_fraction"].item() == 0.25
    assert observed["dead_fraction"].item() == 0.25


def test_one_diverging_network_does_not_disturb_the_others():
    spec = MLPSpec((4, 8, 2))
    x, y = _data(16, 4, 2)
    model = BatchedMLP(spec, 2, seeds=[0, 1], dtype=F64)
    problem = SupervisedProblem(model, x, y)
    result = train(problem, BatchedSGD(problem.params, [0.01, 1e8]), steps=30, record_every=10)
    assert result.diverged.tolist() == [False, True]
    # the same pair with a healthy neighbour: the same products of the same sizes, so network 0
    # must come out bit for bit as it did beside the diverging one
    reference = BatchedMLP(spec, 2, seeds=[0, 1], dtype=F64)
    reference_problem = SupervisedProblem(reference, x, y)
    train(reference_problem, BatchedSGD(reference_problem.params, [0.01, 0.01]), 30, 10)
    torch.testing.assert_close(model.weights[0][0], reference.weights[0][0], rtol=0, atol=0)
    # and to rounding as a lone network (the stacked first-layer product of shared inputs adds
    # in another order when the batch has another size)
    alone = BatchedMLP(spec, 1, seeds=[0], dtype=F64)
    alone_problem = SupervisedProblem(alone, x, y)
    train(alone_problem, BatchedSGD(alone_problem.params, [0.01]), 30, 10)
    torch.testing.assert_close(model.weights[0][0], alone.weights[0][0], rtol=1e-12, atol=1e-14)


def test_bad_configurations_are_rejected():
    with pytest.raises(ValueError, match="unknown activation"):
        MLPSpec((2, 3), activation="swish")
    with pytest.raises(ValueError, match="unknown init scheme"):
        BatchedMLP(MLPSpec((2, 3)), 2, init="he")
    with pytest.raises(ValueError, match="one entry per network"):
        BatchedMLP(MLPSpec((2, 3, 1)), 2, relu_shift=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="samples"):
        SupervisedProblem(BatchedMLP(MLPSpec((2, 1)), 1), torch.zeros(5, 2), torch.zeros(4, 1))


def test_hidden_bias_as_input_constant_equals_a_bias_parameter():
    from relulab.tasks import append_constant

    x, y = _data(8, 5, 3)
    with_bias = BatchedMLP(MLPSpec((5, 7, 3), output_bias=False), 2, dtype=F64)
    constant = BatchedMLP(MLPSpec((6, 7, 3), bias=False), 2, dtype=F64)
    with torch.no_grad():
        constant.weights[0][:, :, :5] = with_bias.weights[0]
        constant.weights[0][:, :, 5] = with_bias.biases[0] / 2.5
        constant.weights[1].copy_(with_bias.weights[1])
    torch.testing.assert_close(constant.forward(append_constant(x, 2.5)), with_bias.forward(x))


def test_training_result_goes_into_the_store(tmp_path):
    from relulab.store import RunStore, UnitResult

    x, y = _data(8, 4, 2)
    problem = SupervisedProblem(BatchedMLP(MLPSpec((4, 6, 2)), 3, dtype=F64), x, y)
    result = train(problem, BatchedSGD(problem.params, 0.01), 10, 5)
    conditions = [{"seed": s} for s in range(3)]
    with RunStore.create_or_resume(tmp_path / "runs.sqlite", "e", "quick", {}, {}) as store:
        store.save_unit("u", UnitResult.from_training(result, conditions))
        back = store.unit("u")
    assert back.conditions == conditions
    torch.testing.assert_close(
        torch.tensor(back.final["loss"]), torch.tensor(result.final["loss"]).double()
    )


# ---------------------------------------------------------------------------------------------
# The sealed face: forward -> Tensor, trace -> Trace, a declared manual_backward.
# ---------------------------------------------------------------------------------------------
def _module_hooks(module, x, types):
    """Inputs and outputs of every module of ``types`` in ``module(x)``, in call order."""
    seen = []
    hooks = [
        m.register_forward_hook(lambda mod, i, o: seen.append((i[0], o)))
        for m in module.modules()
        if isinstance(m, types)
    ]
    with torch.no_grad():
        module(x)
    for hook in hooks:
        hook.remove()
    return seen


@pytest.mark.parametrize(
    "spec",
    [MLPSpec((5, 7, 6, 2)), MLPSpec((5, 7, 6, 2), batchnorm=True), MLPSpec((5, 4, 3), bias=False)],
)
def test_mlp_trace_records_what_the_module_computes(spec):
    from relulab.engine import BatchedFamily, Trace

    model = BatchedMLP(spec, 2, seeds=[1, 2], relu_shift=[0.0, 0.3], dtype=F64)
    x, _ = _data(9, 5, 2)
    trace = model.trace(x)
    assert isinstance(model, BatchedFamily) and isinstance(trace, Trace)
    assert model.manual_backward == (not spec.batchnorm)
    torch.testing.assert_close(trace.output, model.forward(x), rtol=0, atol=0)
    assert trace.inputs[0] is x and len(trace.inputs) == len(model.weights)
    assert trace.activations == trace.inputs[1:] and trace.stream == ()
    if not spec.batchnorm:
        assert trace.linear_outputs == trace.preactivations
    for s in range(2):
        module = model.module(s)
        activations = _module_hooks(module, x, (torch.nn.ReLU, ReLUMinusB))
        linears = _module_hooks(module, x, torch.nn.Linear)
        for layer, (z, h) in enumerate(activations):
            torch.testing.assert_close(trace.preactivations[layer][s], z)
            torch.testing.assert_close(trace.activations[layer][s], h)
            torch.testing.assert_close(trace.linear_outputs[layer][s], linears[layer][1])


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_residual_trace_is_the_one_block_loop_of_the_module(norm):
    spec = ResidualToySpec(width=5, hidden=9, blocks=3, norm=norm, alpha=0.7)
    model = BatchedResidualToy(spec, 2, seeds=[3, 4], relu_shift=[0.0, 0.2], dtype=F64)
    x, _ = _data(11, 5, 5)
    trace = model.trace(x)
    assert model.manual_backward is False
    torch.testing.assert_close(trace.output, model.forward(x), rtol=0, atol=0)
    assert trace.stream[-1] is trace.output and len(trace.stream) == 3
    assert len(trace.inputs) == len(model.params) == 6
    for s in range(2):
        module = model.module(s)
        with torch.no_grad():
            torch.testing.assert_close(module(x), trace.output[s])
        fc1 = _module_hooks(module, x, torch.nn.Linear)[0::2]
        for block, (inner, z) in enumerate(fc1):
            torch.testing.assert_close(trace.inputs[2 * block][s], inner)
            torch.testing.assert_close(trace.preactivations[block][s], z)
            shift = model.shift[s]
            torch.testing.assert_close(trace.activations[block][s], torch.relu(z) - shift[0])


def test_families_without_manual_backward_say_so_and_errors_are_not_swallowed():
    model = BatchedResidualToy(ResidualToySpec(4, 6, 1), 1, dtype=F64)
    with pytest.raises(NotImplementedError, match="no manual backward"):
        model.loss_and_grads(torch.zeros(3, 4), torch.zeros(3, 4), "mse")
    problem = SupervisedProblem(model, torch.zeros(3, 5, dtype=F64), torch.zeros(3, 4, dtype=F64))
    with pytest.raises(RuntimeError):  # a real shape error reaches the caller
        problem.observe()
