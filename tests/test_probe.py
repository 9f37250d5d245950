"""Probes: exact on hand-built networks, working on a torchvision-style CNN, clear errors."""

import numpy as np
import pytest
import torch
from torch import nn

from relulab.nn import ReLUMinusB
from relulab.probe import effective_rank, probe


def _hand_built():
    """Linear(1→4): units with kinks at 0 (balanced), −5 (always on), +5 (dead), 0.5 (balanced)."""
    linear = nn.Linear(1, 4)
    with torch.no_grad():
        linear.weight.copy_(torch.tensor([[1.0], [2.0], [1.0], [-1.0]]))
        linear.bias.copy_(torch.tensor([0.0, 10.0, -5.0, 0.5]))
    return nn.Sequential(linear, nn.ReLU())


def test_states_kinks_delta_and_ratio_are_exact_on_a_hand_built_layer():
    x = torch.linspace(-1, 1, 5).unsqueeze(1)  # −1, −0.5, 0, 0.5, 1
    result = probe(_hand_built(), x)
    (layer,) = result.layers
    metrics = layer.metrics
    assert metrics["dead_fraction"] == 0.25 and metrics["always_on_fraction"] == 0.25
    assert metrics["balanced_fraction"] == 0.5
    # signed distance along the unit normal w/|w|: unit 4 (w = −1) has its kink at x = 0.5,
    # which is −0.5 along its normal
    np.testing.assert_allclose(layer.kinks, [0.0, -5.0, 5.0, -0.5])
    z = torch.stack([x[:, 0], 2 * x[:, 0] + 10, x[:, 0] - 5, -x[:, 0] + 0.5], dim=1).double()
    h = torch.relu(z)
    assert metrics["delta"] == pytest.approx(float(h.mean(0).std(unbiased=False)))
    m2, v2 = float(z.mean(0).square().mean()), float(z.var(0, unbiased=False).mean())
    assert metrics["sample_mean_variance_ratio"] == pytest.approx(np.sqrt(m2 / v2))
    assert metrics["sample_variance_fraction"] == pytest.approx(v2 / (m2 + v2))
    assert metrics["effective_rank_uncentred"] == pytest.approx(effective_rank(h))


def test_effective_rank_of_known_spectra():
    assert effective_rank(torch.eye(5)) == pytest.approx(5.0)
    assert effective_rank(torch.ones(6, 3)) == pytest.approx(1.0)
    assert effective_rank(torch.ones(6, 3), centred=True) == 0.0
    spectrum = torch.diag(torch.tensor([3.0, 1.0]))
    p = np.array([0.75, 0.25])
    assert effective_rank(spectrum) == pytest.approx(np.exp(-(p * np.log(p)).sum()))


def test_gradient_second_moment_matches_autograd():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    x, y = torch.randn(40, 3), torch.randn(40, 2)
    result = probe(model, x, targets=y, loss_fn=nn.MSELoss())
    hidden = torch.relu(model[0](x)).detach().requires_grad_(True)
    loss = nn.MSELoss()(model[2](hidden), y)
    (grad,) = torch.autograd.grad(loss, hidden)
    assert result.layers[0].metrics["gradient_second_moment"] == pytest.approx(
        float(grad.double().square().mean()), rel=1e-6
    )
    assert all(p.grad is None for p in model.parameters()), "the probe leaves no gradients behind"


def test_r_squared_is_one_for_features_the_layer_encodes_linearly():
    model = nn.Sequential(nn.Linear(2, 3), ReLUMinusB(0.0))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        model[0].bias.copy_(torch.tensor([10.0, 10.0, 30.0]))  # always on: h = z − b ≥ 0
    x = torch.randn(50, 2)
    result = probe(model, x, features=x)
    assert result.layers[0].metrics["r_squared"] == pytest.approx(1.0)


def test_hooks_work_on_a_torchvision_style_sequential_cnn_and_batches_agree():
    cnn = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    ).eval()
    x = torch.randn(24, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    whole = probe(cnn, x)
    batched = probe(cnn, x, batch_size=5)
    assert [layer.units for layer in whole.layers] == [8, 16]
    for a, b in zip(whole.layers, batched.layers, strict=True):
        for key in ("dead_fraction", "delta", "sample_mean_variance_ratio"):
            assert a.metrics[key] == pytest.approx(b.metrics[key], rel=1e-9)
    frame = whole.frame
    assert set(frame.columns) == {"layer", "module", "metric", "value"} and len(frame) > 10


def test_clear_errors():
    no_relu = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    with pytest.raises(ValueError, match="no ReLU-family activation"):
        probe(no_relu, torch.randn(4, 3))
    with pytest.raises(ValueError, match=r"data of shape \(4, 7\).*expects \(N, 1\)"):
        probe(_hand_built(), torch.randn(4, 7))
    with pytest.raises(ValueError, match="both targets and loss_fn"):
        probe(_hand_built(), torch.randn(4, 1), targets=torch.randn(4, 4))
