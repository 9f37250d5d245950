"""train(..., compiled_steps=K): chunks of K steps in one torch.compile'd call."""

import importlib

import numpy as np
import pytest
import torch

from relulab.engine import BatchedAdam, BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train

F64 = torch.float64


def _problem(lrs, device="cpu"):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8, 4, generator=generator, dtype=F64).to(device)
    y = torch.randn(8, 3, generator=generator, dtype=F64).to(device)
    model = BatchedMLP(MLPSpec((4, 16, 3), output_bias=False), len(lrs), dtype=F64, device=device)
    problem = SupervisedProblem(model, x, y, loss="half_sum")
    return problem, BatchedSGD(problem.params, lrs)


def _eager_and_compiled(lrs, steps=120, record_every=40, compiled_steps=7):
    eager_problem, eager_sgd = _problem(lrs)
    eager = train(eager_problem, eager_sgd, steps, record_every)
    problem, sgd = _problem(lrs)
    compiled = train(problem, sgd, steps, record_every, compiled_steps=compiled_steps)
    return eager, eager_problem, compiled, problem


def test_compiled_chunks_equal_the_eager_loop():
    eager, eager_problem, compiled, problem = _eager_and_compiled([0.01, 0.03, 0.02])
    np.testing.assert_array_equal(compiled.steps, eager.steps)
    np.testing.assert_allclose(compiled.curves["loss"], eager.curves["loss"], rtol=1e-9)
    assert compiled.curves["loss"][:, -1].max() < 0.9 * compiled.curves["loss"][:, 0].min()
    for p, q in zip(problem.params, eager_problem.params, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-9, atol=1e-12)


def test_a_chunk_in_which_a_network_diverges_is_undone_and_replayed_step_by_step():
    # network 2 diverges at step 6, inside the first chunk (steps 1–7): frozen at the same step
    # and with the same last finite parameters as in the eager loop
    eager, eager_problem, compiled, problem = _eager_and_compiled([0.01, 0.03, 0.5])
    assert eager.diverged_step.tolist() == [-1, -1, 6]
    np.testing.assert_array_equal(compiled.diverged_step, eager.diverged_step)
    np.testing.assert_allclose(compiled.curves["loss"][:2], eager.curves["loss"][:2], rtol=1e-9)
    for p, q in zip(problem.params, eager_problem.params, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-9, atol=1e-12)


def test_compiled_steps_refuse_what_they_cannot_compile():
    problem, _ = _problem([0.01])
    with pytest.raises(ValueError, match="optimiser .*BatchedAdam"):
        train(problem, BatchedAdam(problem.params, 0.01), 5, 5, compiled_steps=4)
    with pytest.raises(ValueError, match="optimiser .*BatchedSGD"):
        train(problem, BatchedSGD(problem.params, 0.01, momentum=0.9), 5, 5, compiled_steps=4)
    minibatch = SupervisedProblem(problem.model, problem.x, problem.y, batch_size=4)
    with pytest.raises(ValueError, match="problem"):
        train(minibatch, BatchedSGD(problem.params, 0.01), 5, 5, compiled_steps=4)
    with pytest.raises(ValueError, match="at least 1"):
        train(problem, BatchedSGD(problem.params, 0.01), 5, 5, compiled_steps=0)


def test_chunks_fill_the_gaps_between_recordings_and_survive_a_stop_criterion(monkeypatch):
    # compiled_steps ≥ record_every still compiles (a shorter chunk before each recording), and
    # a stop criterion that stops nobody does not switch compilation off
    train_module = importlib.import_module("relulab.engine.train")  # the module, not train()

    lengths = []
    run = train_module._CompiledChunks.run

    def counting(self, length):
        lengths.append(length)
        return run(self, length)

    monkeypatch.setattr(train_module._CompiledChunks, "run", counting)
    problem, sgd = _problem([0.01, 0.02])
    never = lambda values: torch.zeros_like(values["loss"], dtype=torch.bool)  # noqa: E731
    result = train(problem, sgd, steps=30, record_every=10, stop=never, compiled_steps=12)
    assert lengths == [9, 9, 9]
    eager_problem, eager_sgd = _problem([0.01, 0.02])
    eager = train(eager_problem, eager_sgd, steps=30, record_every=10)
    np.testing.assert_allclose(result.curves["loss"], eager.curves["loss"], rtol=1e-9)


@pytest.fixture
def compiling(monkeypatch):
    """Run the compiled-only branches eagerly: they are plain torch operators."""
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)


@pytest.mark.parametrize(
    ("a_transposed", "b_transposed", "blas_calls"),
    [(False, False, 0), (False, True, 0), (True, False, 0), (True, True, 1)],
)
def test_small_products_as_broadcast_sums_equal_bmm(
    compiling, monkeypatch, a_transposed, b_transposed, blas_calls
):
    # both operands transposed fit neither broadcast form: that product keeps the BLAS
    from relulab.engine.family import batched_matmul

    generator = torch.Generator().manual_seed(1)
    a = torch.randn(3, 5, 7, generator=generator, dtype=F64)
    b = torch.randn(3, 7, 4, generator=generator, dtype=F64)
    if a_transposed:
        a = a.transpose(1, 2).contiguous().transpose(1, 2)
    if b_transposed:
        b = b.transpose(1, 2).contiguous().transpose(1, 2)
    expected, bmm, calls = torch.bmm(a, b), torch.bmm, []
    monkeypatch.setattr(torch, "bmm", lambda *args: calls.append(1) or bmm(*args))
    torch.testing.assert_close(batched_matmul(a, b), expected, rtol=1e-12, atol=1e-12)
    assert len(calls) == blas_calls
    with pytest.raises(ValueError, match="batched_matmul"):
        batched_matmul(a[:, :, :1], b)  # K disagrees: an error, not a silent broadcast


def test_small_products_take_the_broadcast_form_only_inside_compile(monkeypatch):
    from relulab.engine import family

    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    calls = []
    monkeypatch.setattr(torch, "bmm", lambda *args: calls.append(args) or torch.zeros(2, 3, 5))
    family.batched_matmul(a, b)
    assert len(calls) == 1  # eager: the BLAS
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    family.batched_matmul(a, b)
    assert len(calls) == 1  # compiled and small: no BLAS call
    monkeypatch.setattr(family, "COMPILED_SMALL_PRODUCT", 10)
    family.batched_matmul(a, b)
    assert len(calls) == 2  # compiled but large: the BLAS again


def test_shared_input_products_as_broadcast_sums_equal_the_gemms(monkeypatch):
    from relulab.engine import family

    model = BatchedMLP(MLPSpec((4, 6, 3)), 5, dtype=F64)
    x = torch.randn(8, 4, dtype=F64)
    g = torch.randn(5, 8, 6, dtype=F64)
    weight, bias = model.weights[0], model.biases[0]
    eager_z = family.batched_linear(x, weight, bias)
    eager_grads = family.shared_input_grads(g, x, bias)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    mm, gemm_calls = torch.mm, []
    monkeypatch.setattr(torch, "mm", lambda *args: gemm_calls.append(1) or mm(*args))
    fused_z = family.batched_linear(x, weight, bias)
    torch.testing.assert_close(fused_z, eager_z, rtol=1e-12, atol=0)
    assert fused_z.is_contiguous()  # laid out (S, B, out)
    weight_grad, bias_grad = family.shared_input_grads(g, x, bias)
    assert gemm_calls == []  # both fused
    torch.testing.assert_close(weight_grad, eager_grads[0], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(bias_grad[0], eager_grads[1][0], rtol=1e-12, atol=1e-14)
    assert weight_grad.permute(2, 0, 1).is_contiguous()  # the weights' input-major layout
    # weights not laid out input-major keep the GEMM (a broadcast over them is slow)
    natural = weight.detach().contiguous()
    addmm, calls = torch.addmm, []
    monkeypatch.setattr(torch, "addmm", lambda *args: calls.append(1) or addmm(*args))
    torch.testing.assert_close(family.batched_linear(x, natural, bias), eager_z, rtol=1e-12, atol=0)
    family.batched_linear(x, weight, bias)
    assert calls == [1]


def test_chunks_are_captured_as_cuda_graphs_only_on_cuda():
    from relulab.engine.train import compile_mode

    assert compile_mode(torch.device("cpu")) is None
    assert compile_mode(torch.device("cuda")) == "reduce-overhead"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_captured_chunks_on_cuda_equal_the_eager_loop_on_the_cpu():
    eager_problem, eager_sgd = _problem([0.01, 0.03, 0.02])
    eager = train(eager_problem, eager_sgd, 120, 40)
    problem, sgd = _problem([0.01, 0.03, 0.02], device="cuda")  # the same networks and data
    captured = train(problem, sgd, 120, 40, compiled_steps=7)
    np.testing.assert_allclose(captured.curves["loss"], eager.curves["loss"], rtol=1e-9)
