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
