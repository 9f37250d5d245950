"""Data-dependent model-level initialisers on arbitrary nn.Modules."""

import math

import pytest
import torch
from torch import nn

from relulab import init
from relulab.nn import ReLUMinusB


def _data(n=256, d=12, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed)) * 2 + 0.5


def _mlp(bias=True):
    return nn.Sequential(
        nn.Linear(12, 32, bias=bias),
        nn.ReLU(),
        nn.Linear(32, 32, bias=bias),
        nn.ReLU(),
        nn.Linear(32, 4, bias=bias),
    )


def _outputs(model, x):
    outputs = []
    hooks = [
        m.register_forward_hook(lambda mod, i, o: outputs.append(o.detach()))
        for m in model
        if isinstance(m, nn.Linear | nn.Conv2d)
    ]
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    return outputs


def test_scale_bias_zero_mean_per_feature_unit_second_moment_per_layer():
    x = _data()
    model = _mlp()
    report = init.scale_bias_(model, x, eps=0.0, generator=torch.Generator().manual_seed(1))
    assert len(report) == 3
    for u in _outputs(model, x):
        torch.testing.assert_close(u.mean(dim=0), torch.zeros(u.shape[1]), atol=1e-5, rtol=0)
        assert u.square().mean().item() == pytest.approx(1.0, rel=1e-5)


def test_scale_bias_per_feature_gives_unit_variance_per_feature():
    x = _data()
    model = _mlp()
    init.scale_bias_(model, x, per_feature=True, eps=0.0)
    for u in _outputs(model, x):
        torch.testing.assert_close(u.mean(dim=0), torch.zeros(u.shape[1]), atol=1e-5, rtol=0)
        torch.testing.assert_close(
            u.var(dim=0, unbiased=False), torch.ones(u.shape[1]), rtol=1e-4, atol=0
        )


def test_scale_unit_second_moment_biases_zero():
    x = _data()
    model = _mlp()
    init.scale_(model, x, eps=0.0)
    for u in _outputs(model, x):
        assert u.square().mean().item() == pytest.approx(1.0, rel=1e-5)
    assert all(float(m.bias.detach().abs().sum()) == 0 for m in model if isinstance(m, nn.Linear))


def test_lsuv_reaches_unit_variance_within_tolerance_on_a_cnn():
    cnn = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    x = torch.randn(32, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    report = init.lsuv_(cnn, x, tol=0.02)
    assert [r.kind for r in report] == ["Conv2d", "Conv2d", "Linear"]
    for u in _outputs(cnn, x):
        assert abs(u.var().item() - 1.0) < 0.02


def test_scale_bias_needs_biases_and_runnable_data():
    with pytest.raises(init.InitNotApplicableError, match="have none"):
        init.scale_bias_(_mlp(bias=False), _data())
    with pytest.raises(ValueError, match="could not run on data of shape"):
        init.scale_(_mlp(), torch.randn(10, 5))


def test_analytic_relu_shift_values_of_setups():
    assert init.analytic_relu_shift(scheme="torch_default") == pytest.approx(
        1 / math.sqrt(6 * math.pi)
    )
    assert init.analytic_relu_shift(scheme="kaiming_normal") == pytest.approx(0.564, abs=1e-3)
    assert init.analytic_relu_shift(pre_activation_std=2.0) == pytest.approx(
        2 / math.sqrt(2 * math.pi)
    )
    with pytest.raises(ValueError):
        init.analytic_relu_shift()


def test_calibrated_relu_shift_centres_every_neuron_on_the_data():
    x = _data()
    model = nn.Sequential(nn.Linear(12, 16), ReLUMinusB(0.0), nn.Linear(16, 3))
    report = init.calibrate_relu_shift_(model, x)
    assert report[0].kind == "ReLUMinusB" and model[1].b.shape == (16,)
    with torch.no_grad():
        h = model[1](model[0](x))
    torch.testing.assert_close(h.mean(dim=0), torch.zeros(16), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="ReLUMinusB"):
        init.calibrate_relu_shift_(_mlp(), x)


def test_data_dependent_inits_take_a_linear_layers_features_on_the_last_axis():
    """Sequence inputs (N, T, d): a Linear layer's features are its last axis; the statistics
    run over N and T (GELU or ReLU alike)."""
    x = torch.randn(16, 5, 12, generator=torch.Generator().manual_seed(0)) + 1.0
    model = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 12), nn.SiLU())
    init.scale_bias_(model, x, eps=0.0, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        hidden = model[0](x)
        out = model[2](model[1](hidden))
    for u in (hidden, out):
        torch.testing.assert_close(u.mean(dim=(0, 1)), torch.zeros(u.shape[-1]), atol=1e-5, rtol=0)
        assert u.square().mean().item() == pytest.approx(1.0, rel=1e-5)
    init.scale_bias_(model, x, per_feature=True, eps=0.0)
    with torch.no_grad():
        hidden = model[0](x)
    torch.testing.assert_close(
        hidden.var(dim=(0, 1), unbiased=False), torch.ones(24), rtol=1e-4, atol=0
    )
    init.lsuv_(model, x)


def _layer_by_layer(model, x, centre, generator):
    """The procedure the one-pass implementation must equal: per layer in forward order, draw,
    run the whole model to capture its output, rescale (seed 002 §5.1)."""
    with torch.no_grad():
        for layer in [m for m in model if isinstance(m, nn.Linear)]:
            nn.init.normal_(layer.weight, generator=generator)
            layer.bias.zero_()
            output = init.model.capture(model, layer, x)
            init.rescale_layer_(layer.weight, layer.bias, output, centre=centre)


@pytest.mark.parametrize("centre", [False, True])
def test_one_pass_equals_the_layer_by_layer_procedure(centre):
    x = _data().double()
    one_pass, reference = _mlp().double(), _mlp().double()
    function = init.scale_bias_ if centre else init.scale_
    function(one_pass, x, generator=torch.Generator().manual_seed(5))
    _layer_by_layer(reference, x, centre, torch.Generator().manual_seed(5))
    for a, b in zip(one_pass.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_report_lists_untouched_weights_in_its_frame_and_text():
    model = nn.Sequential(nn.Linear(12, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    report = init.scale_bias_(model, _data(), exclude="2")
    assert [r.layer for r in report] == ["0"] and report[0].shape == (8, 12)
    assert [(w.name, w.kind, w.shape) for w in report.untouched] == [
        ("1.weight", "LayerNorm", (8,)),
        ("1.bias", "LayerNorm", (8,)),
        ("2.weight", "Linear", (2, 8)),
        ("2.bias", "Linear", (2,)),
    ]
    frame = report.to_frame()
    assert list(frame["status"]) == ["set"] + ["untouched"] * 4
    assert frame.loc[frame["layer"] == "2.weight", "reason"].item() == "excluded by exclude='2'"
    text = str(report)
    assert text.startswith("scale_bias: 1 layers set, 4 weights left untouched")
    assert "left untouched:" in text and "not a layer the initialisers set (LayerNorm)" in text


def test_parameter_layers_recognise_transposed_convolutions():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.ConvTranspose2d(4, 2, 2))
    x = torch.randn(2, 3, 6, 6)
    assert [name for name, _ in init.parameter_layers(model, x)] == ["0", "2"]
    assert [row.kind for row in init.scale_(model, x)] == ["Conv2d", "ConvTranspose2d"]


def test_scale_bias_error_names_the_alternatives():
    with pytest.raises(init.InitNotApplicableError, match="bias_free='add'"):
        init.scale_bias_(_mlp(bias=False), _data())
    report = init.scale_bias_(_mlp(bias=False), _data(), bias_free="add", eps=0.0)
    assert [r.note for r in report] == ["bias added"] * 3
    assert all(abs(r.output_mean) < 1e-5 for r in report)


def test_progress_bar_only_when_asked_or_on_a_terminal(capsys):
    init.scale_(_mlp(), _data(), progress=True)
    assert "scale" in capsys.readouterr().err
    init.scale_(_mlp(), _data())  # stderr is not a terminal under pytest: no bar
    init.lsuv_(_mlp(), _data(), progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("scheme", ["rai", "raai"])
def test_rai_and_raai_on_bias_free_models_by_bias_free(scheme):
    """As scale_bias_: an error naming the options by default, a zero bias added and drawn
    with "add", the weights drawn alone with "scale" (issue 46)."""
    with pytest.raises(init.InitNotApplicableError, match="bias_free='add'.*bias_free='scale'"):
        init.init_model_(_mlp(bias=False), scheme)
    added = _mlp(bias=False)
    report = init.init_model_(added, scheme, torch.Generator().manual_seed(0), bias_free="add")
    assert [r.note for r in report] == ["bias added"] * 3
    assert all(layer.bias is not None for layer in added if isinstance(layer, nn.Linear))
    assert any(bool(layer.bias.detach().any()) for layer in added if isinstance(layer, nn.Linear))
    scaled = _mlp(bias=False)
    report = init.init_model_(scaled, scheme, torch.Generator().manual_seed(0), bias_free="scale")
    assert [r.note for r in report] == ["no bias: weights drawn alone"] * 3
    for layer in scaled:
        if isinstance(layer, nn.Linear):
            assert layer.bias is None and bool((layer.weight > 0).any(dim=1).all())
    mixed = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2, bias=False))
    report = init.apply_init_(mixed, scheme, bias_free="scale")  # noted where it applied only
    assert [r.note for r in report] == [None, "no bias: weights drawn alone"]
    with pytest.raises(ValueError, match="bias_free must be one of"):
        init.init_model_(_mlp(), "kaiming_normal", bias_free="centre")
