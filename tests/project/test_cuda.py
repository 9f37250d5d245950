"""The CUDA paths, where a GPU is present (skipped elsewhere: CI and the project's own machines
have none). Each test compares a CUDA computation with its CPU twin or with what a user would
write by hand, in float64 where the arithmetic allows it, so a difference is a bug of the device
path rather than rounding: the batched engine against a per-network ``torch.optim`` loop on the
device and against itself on the CPU; the per-tensor inits and the data-dependent scale+bias
init on a CUDA model against the same calls on a CPU copy; and the probe against itself on the
CPU. Training with a :class:`relulab.probe.Monitor` against training without one, bit for bit
with dropout drawing from the CUDA generator, is ``test_monitor.py``'s test on the ``cuda``
device."""

import copy

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from relulab.engine import (
    BatchedAdam,
    BatchedMLP,
    BatchedResidualToy,
    BatchedSGD,
    MLPSpec,
    ResidualToySpec,
    SupervisedProblem,
    train,
)
from relulab.init import init_model_, lsuv_, scale_, scale_bias_
from relulab.probe import probe
from tests.engine.reference_loop import assert_same_parameters, loop_reference

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = "cuda"
DEVICE_TYPE = torch.device(CUDA).type
F64 = torch.float64


def _data(n_samples: int, d_in: int, d_out: int, device: str, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n_samples, d_in, generator=generator, dtype=F64)
    y = torch.randn(n_samples, d_out, generator=generator, dtype=F64)
    return x.to(device), y.to(device)


def _train_batched(device: str, optimiser: str, batch_size: int | None):
    spec = MLPSpec((6, 12, 12, 3))
    lrs = [0.003, 0.01, 0.02]
    model = BatchedMLP(
        spec, 3, init=["kaiming_normal", "torch_default", "lecun_normal"], seeds=[11, 12, 13],
        relu_shift=[0.0, 0.2, 0.5], dtype=F64, device=device,
    )  # fmt: skip
    modules = [model.module(s) for s in range(3)]  # copies at init, trained below by hand
    x, y = _data(24, 6, 3, device)
    problem = SupervisedProblem(
        model, x, y, loss="mse", batch_size=batch_size,
        generator=torch.Generator().manual_seed(5),
    )  # fmt: skip
    batched = (
        BatchedSGD(problem.params, lrs, momentum=0.9)
        if optimiser == "sgd"
        else BatchedAdam(problem.params, lrs)
    )
    train(problem, batched, steps=30, record_every=10)
    return model, modules, x, y, lrs


@pytest.mark.parametrize(("optimiser", "batch_size"), [("sgd", None), ("adam", 8)])
def test_engine_on_cuda_matches_a_torch_optim_loop_on_cuda(optimiser, batch_size):
    model, modules, x, y, lrs = _train_batched(CUDA, optimiser, batch_size)
    assert all(p.device.type == DEVICE_TYPE for p in model.params)
    make_torch = {
        "sgd": lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9),
        "adam": lambda p, lr: torch.optim.Adam(p, lr=lr),
    }[optimiser]
    loop_reference(modules, x, y, 30, make_torch, lrs, "mse", batch_size, seed=5)
    assert all(p.device.type == DEVICE_TYPE for module in modules for p in module.parameters())
    assert_same_parameters(model, modules)


@pytest.mark.parametrize(("optimiser", "batch_size"), [("sgd", None), ("adam", 8)])
def test_engine_on_cuda_matches_the_engine_on_cpu(optimiser, batch_size):
    """The init is drawn on the CPU from each network's seed, so both start equal."""
    on_cuda = _train_batched(CUDA, optimiser, batch_size)[0]
    on_cpu = _train_batched("cpu", optimiser, batch_size)[0]
    for got, want in zip(on_cuda.params, on_cpu.params, strict=True):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_residual_toy_on_cuda_matches_the_cpu(norm):
    spec = ResidualToySpec(width=6, hidden=24, blocks=3, norm=norm, alpha=1.5)
    params = []
    for device in (CUDA, "cpu"):
        model = BatchedResidualToy(
            spec, 2, seeds=[3, 4], relu_shift=[0.0, 0.25], dtype=F64, device=device
        )
        x, y = _data(20, 6, 6, device, seed=1)
        problem = SupervisedProblem(model, x, y)
        train(problem, BatchedAdam(problem.params, 2e-3), steps=20, record_every=10)
        params.append([p.detach().cpu() for p in model.params])
    for got, want in zip(*params, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-11)


def _cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4),
    ).double()  # fmt: skip


def _cnn_twins() -> tuple[nn.Module, nn.Module]:
    """The same CNN twice: on the CPU and on the GPU."""
    on_cpu = _cnn()
    return on_cpu, copy.deepcopy(on_cpu).to(CUDA)


def _assert_same_parameters(on_cuda: nn.Module, on_cpu: nn.Module, rtol: float, atol: float):
    for got, want in zip(on_cuda.parameters(), on_cpu.parameters(), strict=True):
        assert got.device.type == DEVICE_TYPE
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("scheme", ["kaiming_normal", "rai", "raai", "correlated", "orthogonal"])
def test_per_tensor_inits_on_a_cuda_model_equal_the_cpu_draws(scheme):
    """The registry draws in float64 from the given generator; the device only decides where
    the values go."""
    on_cpu, on_cuda = _cnn_twins()
    init_model_(on_cpu, scheme, generator=torch.Generator().manual_seed(7))
    init_model_(on_cuda, scheme, generator=torch.Generator().manual_seed(7))
    _assert_same_parameters(on_cuda, on_cpu, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("init", [scale_, scale_bias_, lsuv_], ids=lambda f: f.__name__)
def test_data_dependent_init_of_a_cuda_model_from_cpu_data_equals_the_cpu(init):
    """Data on the CPU go to the model's device; the N(0, 1) and orthogonal draws are made
    where the CPU generator lives, so the values do not depend on the model's device."""
    x = torch.randn(64, 3, 8, 8, generator=torch.Generator().manual_seed(2), dtype=F64)
    on_cpu, on_cuda = _cnn_twins()
    init(on_cpu, x, generator=torch.Generator().manual_seed(3))
    init(on_cuda, x, generator=torch.Generator().manual_seed(3))
    _assert_same_parameters(on_cuda, on_cpu, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("data_on", ["cuda", "cpu"])
def test_probe_on_cuda_equals_the_probe_on_cpu(data_on):
    """With a loss (the gradient statistics too) and in batches; data on the CPU are moved to
    the model batch by batch."""
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(64, 3, 8, 8, generator=generator, dtype=F64)
    labels = torch.randint(0, 4, (64,), generator=generator)
    on_cpu, on_cuda = _cnn_twins()
    device = CUDA if data_on == "cuda" else "cpu"
    found = probe(on_cuda, x.to(device), labels.to(device), loss_fn=F.cross_entropy, batch_size=16)
    got = {layer.name: layer.metrics for layer in found.layers}
    reference = probe(on_cpu, x, labels, loss_fn=F.cross_entropy, batch_size=16)
    want = {layer.name: layer.metrics for layer in reference.layers}
    assert list(got) == list(want) and got
    for name, metrics in want.items():
        for key, value in metrics.items():
            assert got[name][key] == pytest.approx(value, rel=1e-9, abs=1e-12), (name, key)
