"""Issue 35: ``relulab.nn.replace_activations`` swaps a model's activation modules (ReLU for
ReLU−b), each site its own copy so per-layer shifts can be calibrated, and
``restore_activations`` puts the originals back bit for bit; functional activation calls,
which module replacement cannot reach, are found and reported."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from relulab.init import analytic_relu_shift, calibrate_relu_shift_
from relulab.nn import (
    ActivationReplacementWarning,
    ReLUMinusB,
    replace_activations,
    restore_activations,
)
from relulab.nn.statistics import delta, module_sample_dims


class BasicBlock(nn.Module):
    """ResNet's basic block, with a ReLU module per call (so each call can get its own shift)."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )
        self.relu2 = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu1(self.bn1(self.conv1(x)))
        return self.relu2(self.bn2(self.conv2(out)) + self.shortcut(x))


class TinyResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8))
        self.relu = nn.ReLU(inplace=True)
        self.layers = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2))
        self.head = nn.Linear(16, 10)

    def forward(self, x: Tensor) -> Tensor:
        h = self.layers(self.relu(self.stem(x)))
        return self.head(h.mean(dim=(2, 3)))


class FunctionalBlock(nn.Module):
    """An activation written as a function: module replacement cannot reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.fc(self.act(x))) + torch.relu(x)


class ReusedReLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.relu = nn.Linear(3, 4), nn.Linear(4, 4), nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        return self.relu(self.fc2(self.relu(self.fc1(x))))


def _mean_delta(model: nn.Module, x: Tensor) -> float:
    """Δ of every activation module's output, averaged over the activations."""
    deltas: list[float] = []

    def hook(module: nn.Module, inputs: tuple, output: Tensor) -> None:
        deltas.append(float(delta(output, module_sample_dims(output))))

    handles = [
        m.register_forward_hook(hook)
        for m in model.modules()
        if isinstance(m, nn.ReLU | ReLUMinusB)
    ]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return sum(deltas) / len(deltas)


def test_calibrated_relu_minus_b_lowers_delta_and_restoring_gives_the_same_outputs_bit_for_bit():
    torch.manual_seed(0)
    model = TinyResNet().eval()
    x, fresh = torch.randn(64, 3, 8, 8), torch.randn(64, 3, 8, 8)
    with torch.no_grad():
        before = model(x).clone()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    originals = {name: m for name, m in model.named_modules() if isinstance(m, nn.ReLU)}
    plain, plain_fresh = _mean_delta(model, x), _mean_delta(model, fresh)

    shift = analytic_relu_shift(scheme="torch_default")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every activation is a module: nothing to warn about
        record = replace_activations(model, ReLUMinusB(shift), example_input=x)
    assert sorted(record.names) == sorted(originals)
    assert record.complete and record.functional_calls == [] and record.repeated_calls == {}
    shifted = [m for m in model.modules() if isinstance(m, ReLUMinusB)]
    assert len(shifted) == 5 and len({id(m) for m in shifted}) == 5, "one copy per site"
    assert all(float(m.b) == shift for m in shifted)
    assert not any(isinstance(m, nn.ReLU) for m in model.modules())

    report = calibrate_relu_shift_(model, x)
    assert len(report) == 5
    assert all(m.b.shape == (m.b.numel(),) and m.b.numel() in (8, 16) for m in shifted)
    assert len({tuple(m.b.tolist()) for m in shifted}) == 5, "a shift per layer"
    calibrated, calibrated_fresh = _mean_delta(model, x), _mean_delta(model, fresh)
    assert calibrated < 1e-4 * plain, "each unit is centred on the calibration batch"
    assert calibrated_fresh < 0.5 * plain_fresh, "and Δ stays lower on new data"

    restore_activations(model, record)
    assert {n: m for n, m in model.named_modules() if isinstance(m, nn.ReLU)} == originals
    assert all(originals[n] is m for n, m in model.named_modules() if isinstance(m, nn.ReLU))
    with torch.no_grad():
        after = model(x)
    assert torch.equal(after, before), "bit for bit"
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert list(model.state_dict()) == list(state)


def test_each_site_gets_its_own_copy_even_of_a_shared_module():
    shared = nn.ReLU()
    model = nn.Sequential(nn.Linear(2, 3), shared, nn.Linear(3, 3), shared)
    record = replace_activations(model, ReLUMinusB(0.1))
    assert record.names == ["1", "3"] and model[1] is not model[3]
    model[1].set_shift(torch.ones(3))
    assert float(model[3].b) == pytest.approx(0.1), "calibrating one site leaves the other"
    record.undo()
    assert model[1] is shared and model[3] is shared


def test_factories_types_modes_and_the_context_manager():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Tanh(), nn.GELU())).train()
    model[1].eval()
    seen: list[str] = []

    def factory(name: str, original: nn.Module) -> nn.Module:
        seen.append(f"{name}:{type(original).__name__}")
        return nn.SiLU()

    with replace_activations(model, factory, types=(nn.ReLU, nn.Tanh)) as record:
        assert seen == ["1:ReLU", "2.0:Tanh"]
        assert isinstance(model[1], nn.SiLU) and not model[1].training, "the mode follows"
        assert isinstance(model[2][1], nn.GELU), "types not asked for stay"
        assert set(record.modules) == {"1", "2.0"}
    assert record.restored and type(model[1]) is nn.ReLU and type(model[2][0]) is nn.Tanh

    record = replace_activations(model, nn.Identity)  # a class: a fresh instance per site
    assert type(model[1]) is nn.Identity
    record.undo()
    record.undo()  # a second undo does nothing
    assert type(model[1]) is nn.ReLU


def test_refusals():
    with pytest.raises(ValueError, match="model itself"):
        replace_activations(nn.ReLU(), ReLUMinusB(0.1))
    with pytest.raises(TypeError, match="not a module"):
        replace_activations(nn.Sequential(nn.ReLU()), lambda name, old: 3)
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    record = replace_activations(model, ReLUMinusB(0.1))
    with pytest.raises(ValueError, match="another model"):
        restore_activations(nn.Sequential(), record)
    model[1] = nn.Tanh()  # changed since: nothing is restored
    with pytest.raises(RuntimeError, match="no longer holds"):
        record.undo()
    assert type(model[1]) is nn.Tanh and not record.restored


def test_functional_calls_are_found_in_the_source_and_counted_on_an_example_input():
    model = nn.Sequential(nn.Linear(3, 4), FunctionalBlock())
    with pytest.warns(ActivationReplacementWarning, match="F.relu"):
        record = replace_activations(model, ReLUMinusB(0.1))
    assert record.names == ["1.act"] and record.functional_calls is None
    assert record.functional_sources == ["1 (FunctionalBlock.forward): F.relu, torch.relu"]
    record.undo()

    with pytest.warns(ActivationReplacementWarning, match="2 activation call"):
        record = replace_activations(model, ReLUMinusB(0.1), example_input=torch.randn(16, 3))
    assert record.functional_calls == ["1:relu#0", "1:relu#1"] and not record.complete
    assert any("functions, not modules" in note for note in record.notes())
    record.undo()


def test_a_module_called_twice_is_reported():
    model = ReusedReLU()
    with pytest.warns(ActivationReplacementWarning, match="called 2 times"):
        record = replace_activations(model, ReLUMinusB(0.1), example_input=torch.randn(8, 3))
    assert record.repeated_calls == {"relu": 2} and record.functional_calls == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replace_activations(ReusedReLU(), ReLUMinusB(0.1), warn=False)
