"""The probe on the architectures people train (tests/probe/zoo.py), against a reference computed
here: each call's pre-activation captured by a plain hook on a copy of the model (a pre-hook
cloning an activation module's input, or a forward hook on the Linear layer that feeds a
functional activation), and the statistics written out in plain torch/NumPy."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from relulab.probe import probe
from tests.probe.zoo import ZOO

ACTIVATION_MODULES = (nn.ReLU, nn.LeakyReLU, nn.GELU)
FUNCTIONS = {"transformer_relu": F.relu, "transformer_gelu": F.gelu, "functional_mlp": F.relu}


def _feeding_layers(name, model):
    """The Linear layers whose output a functional activation takes, in call order."""
    if name == "functional_mlp":
        return [model.fc1, model.fc2]
    return [layer.linear1 for layer in model.layers]


def _reference_calls(name, model, x, mode):
    """``[(z, h), …]`` per activation call, in call order, from a copy of the model."""
    model = copy.deepcopy(model).train(mode == "train")
    calls, handles = [], []
    modules = [m for m in model.modules() if isinstance(m, ACTIVATION_MODULES)]
    if modules:
        for module in modules:
            handles.append(
                module.register_forward_pre_hook(
                    lambda m, inputs: calls.append([inputs[0].detach().clone(), None])
                )
            )
            handles.append(
                module.register_forward_hook(
                    lambda m, i, output: calls[-1].__setitem__(1, output.detach().clone())
                )
            )
    else:
        activation = FUNCTIONS[name]
        for layer in _feeding_layers(name, model):
            handles.append(
                layer.register_forward_hook(
                    lambda m, i, z: calls.append([z.detach().clone(), activation(z.detach())])
                )
            )
    torch.manual_seed(7)  # the dropout masks of train mode: the probe below draws the same
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)  # the probe's attention: unfused, as trained
    try:
        with torch.no_grad():
            model(x)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    for handle in handles:
        handle.remove()
    return calls


def _rank(matrix, centred):
    matrix = matrix - matrix.mean(axis=0) if centred else matrix
    s = np.linalg.svd(matrix, compute_uv=False)
    p = s / s.sum()
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def _reference_metrics(z, h, unit_axis):
    """The statistics by their definitions (docs/probe.md), units on ``unit_axis``."""
    units = z.shape[unit_axis]
    zu = z.double().movedim(unit_axis, -1).reshape(-1, units).numpy()
    hu = h.double().movedim(unit_axis, -1).reshape(-1, units).numpy()
    m2, v2 = (zu.mean(axis=0) ** 2).mean(), zu.var(axis=0).mean()
    flat = h.double().reshape(h.shape[0], -1).numpy()
    return {
        "units": units,
        "never_positive": float((zu.max(axis=0) <= 0).mean()),
        "always_positive": float((zu.min(axis=0) > 0).mean()),
        "r": float(np.sqrt(m2 / v2)),
        "delta": float(hu.mean(axis=0).std()),
        "rank_uncentred": _rank(flat, False),
        "rank_centred": _rank(flat, True),
    }


def _snapshot(model):
    return (
        {key: value.clone() for key, value in model.state_dict().items()},
        [m.training for m in model.modules()],
        [(p.requires_grad, None if p.grad is None else p.grad.clone()) for p in model.parameters()],
    )


def _assert_unchanged(model, before):
    state, flags, params = before
    after = model.state_dict()
    assert after.keys() == state.keys()
    for key, value in state.items():
        torch.testing.assert_close(after[key], value, rtol=0, atol=0, msg=key)
    assert [m.training for m in model.modules()] == flags
    assert [(p.requires_grad, p.grad) for p in model.parameters()] == params


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("name", list(ZOO))
def test_probe_agrees_with_a_hand_computed_reference_and_leaves_the_model_as_found(name, mode):
    model, x, unit_axis = ZOO[name]()
    model.train()
    before = _snapshot(model)
    fastpath = torch.backends.mha.get_fastpath_enabled()
    reference = _reference_calls(name, model, x, mode)
    torch.manual_seed(7)
    result = probe(model, x, mode=mode)
    _assert_unchanged(model, before)
    assert torch.backends.mha.get_fastpath_enabled() == fastpath
    assert result.mode == mode and len(result.layers) == len(reference)
    for layer, (z, h) in zip(result.layers, reference, strict=True):
        want = _reference_metrics(z, h, unit_axis)
        got = layer.metrics
        assert layer.units == want["units"], layer.name
        if layer.family == "rectifier":
            states = got["dead_fraction"], got["always_on_fraction"]
            assert "never_positive_fraction" not in got
        else:
            states = got["never_positive_fraction"], got["always_positive_fraction"]
            assert "dead_fraction" not in got
        assert states == (want["never_positive"], want["always_positive"]), layer.name
        assert got["sample_mean_variance_ratio"] == pytest.approx(want["r"], rel=1e-8)
        assert got["delta"] == pytest.approx(want["delta"], rel=1e-8, abs=1e-12)
        assert got["effective_rank_uncentred"] == pytest.approx(want["rank_uncentred"], rel=1e-8)
        assert got["effective_rank_centred"] == pytest.approx(want["rank_centred"], rel=1e-8)


def test_resnet18_has_seventeen_calls_two_per_block():
    model, x, _ = ZOO["resnet18"]()
    result = probe(model, x)
    blocks = [f"layer{i}.{b}.relu#{k}" for i in range(1, 5) for b in range(2) for k in range(2)]
    assert result.names == ["relu#0", *blocks]
    assert {layer.unit_axis for layer in result.layers} == {1}
    assert [layer.units for layer in result.layers[1:]] == [8] * 4 + [16] * 4 + [32] * 4 + [64] * 4
    # the second call of a block takes the residual sum: its producer is still the block's BN
    assert result.layer("layer2.0.relu#1").producer in {
        "layer2.0.bn2 (batch_norm)",
        "layer2.0.downsample.1 (batch_norm)",
    }


def test_call_names_units_and_families_across_the_zoo():
    cases = {
        "vgg": (["features.1#0", "features.3#0", "features.6#0", "classifier.1#0",
                 "classifier.4#0"], [8, 8, 16, 32, 32], "rectifier"),
        "transformer_relu": (["layers.0:relu#0", "layers.1:relu#0"], [32, 32], "rectifier"),
        "transformer_gelu": (["layers.0:gelu#0", "layers.1:gelu#0"], [32, 32], "smooth"),
        "functional_mlp": ([":relu#0", ":relu#1"], [32, 32], "rectifier"),
        "gelu_block": (["act#0"], [64], "smooth"),
        "leaky_net": (["1#0", "3#0"], [24, 24], "leaky"),
    }  # fmt: skip
    for name, (names, units, family) in cases.items():
        model, x, _ = ZOO[name]()
        result = probe(model, x)
        assert result.names == names, name
        assert [layer.units for layer in result.layers] == units, name
        assert {layer.family for layer in result.layers} == {family}, name
    gelu = probe(*ZOO["gelu_block"]()[:2]).layers[0]
    assert gelu.metrics["never_positive_fraction"] == 0.5 and gelu.unit_axis == 2
    assert gelu.producer == "fc1 (linear)" and gelu.kinks is not None
    leaky = probe(*ZOO["leaky_net"]()[:2]).layer("3#0")
    assert leaky.metrics["never_positive_fraction"] >= 0.25  # the −50 biases: not "dead"


def test_in_place_relu_gradients_are_those_of_each_calls_output():
    """ResNet-18 in train mode: the probe on the in-place model against retain_grad on the
    outputs of a copy whose ReLUs are not in place; per sample: B × ∂L/∂h for a mean loss."""
    model, x, _ = ZOO["resnet18"]()
    y = torch.arange(len(x)) % 10
    before = _snapshot(model)
    result = probe(model, x, targets=y, loss_fn=nn.CrossEntropyLoss())
    _assert_unchanged(model, before)
    copied = copy.deepcopy(model).train()
    outputs = []

    def keep(module, inputs, h):
        h.retain_grad()
        outputs.append(h)

    for module in copied.modules():
        if isinstance(module, nn.ReLU):
            module.inplace = False
            module.register_forward_hook(keep)
    nn.CrossEntropyLoss()(copied(x), y).backward()
    assert len(outputs) == len(result.layers) == 17
    for layer, h in zip(result.layers, outputs, strict=True):
        want = float((len(x) * h.grad.double()).square().mean())
        assert layer.metrics["gradient_second_moment"] == pytest.approx(want, rel=1e-6)


def test_functional_relu_gradients_by_a_manual_forward():
    model, x, _ = ZOO["functional_mlp"]()
    y = torch.arange(len(x)) % 3
    result = probe(model, x, targets=y, loss_fn=nn.CrossEntropyLoss(), batch_size=16)
    h1 = F.relu(model.fc1(x))
    h1.retain_grad()
    h2 = F.relu(model.fc2(h1))
    h2.retain_grad()
    F.cross_entropy(model.fc3(h2), y, reduction="sum").backward()  # per-sample gradients
    for layer, h in zip(result.layers, (h1, h2), strict=True):
        want = float(h.grad.double().square().mean())
        assert layer.metrics["gradient_second_moment"] == pytest.approx(want, rel=1e-6)
