"""Per-tensor initialisers: stated variances, orthogonality, RAI/RAAI structure, dead nodes."""

import math

import pytest
import torch
from torch import nn

from relulab import init

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize(
    ("fill", "mode", "expected_var"),
    [
        (init.kaiming_normal_, "fan_in", 2 / 300),
        (init.kaiming_normal_, "fan_out", 2 / 400),
        (init.kaiming_uniform_, "fan_in", 2 / 300),
        (init.kaiming_uniform_, "fan_out", 2 / 400),
    ],
)
def test_kaiming_variances_follow_the_stated_fan(fill, mode, expected_var):
    weight = fill(torch.empty(400, 300, dtype=F64), mode=mode, generator=_gen())
    # 120 000 draws: relative s.e. of a variance ≈ 0.4 %; 2 % is 5 sigma
    assert weight.var().item() == pytest.approx(expected_var, rel=0.02)


def test_conv_fans_include_the_kernel():
    assert init.fans(torch.empty(16, 8, 3, 3)) == (72, 144)
    weight = init.lecun_normal_(torch.empty(64, 32, 3, 3, dtype=F64), generator=_gen())
    assert weight.var().item() == pytest.approx(1 / (32 * 9), rel=0.03)


@pytest.mark.parametrize("shape", [(20, 50), (50, 20), (8, 4, 3, 3)])
def test_orthogonal_rows_or_columns(shape):
    weight = init.orthogonal_(torch.empty(shape, dtype=F64), gain=2.0, generator=_gen())
    flat = weight.reshape(shape[0], -1)
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    torch.testing.assert_close(gram, 4.0 * torch.eye(gram.shape[0], dtype=F64))


def test_rai_replaces_exactly_one_entry_per_row_by_a_beta_draw():
    fan_out, fan_in = 500, 30
    weight, bias = torch.empty(fan_out, fan_in, dtype=F64), torch.empty(fan_out, dtype=F64)
    init.rai_(weight, bias, generator=_gen(7))
    # replay the Gaussian draw: every row differs from it in exactly one entry, the Beta one
    gaussian = torch.randn(fan_out, fan_in + 1, generator=_gen(7), dtype=F64) * (
        0.6007 / math.sqrt(fan_in)
    )
    matrix = torch.cat([weight, bias[:, None]], dim=1)
    changed = matrix != gaussian
    assert changed.sum(dim=1).tolist() == [1] * fan_out
    beta = matrix[changed]
    assert bool(((beta > 0) & (beta < 1)).all())
    assert beta.mean().item() == pytest.approx(2 / 3, abs=0.03)  # Beta(2, 1) mean, 5 s.e.
    positions = changed.double().argmax(dim=1)
    assert (positions == fan_in).any(), "the bias is among the candidates"


def test_raai_rows_are_anti_correlated_then_asymmetric():
    weight, bias = torch.empty(20000, 9, dtype=F64), torch.empty(20000, dtype=F64)
    init.raai_(weight, bias, generator=_gen(3), sigma_w2=1.0, k=-1.0)
    rows = torch.cat([weight, bias[:, None]], dim=1)
    # with k = −1 every Gaussian row sums to 0; one Beta entry per row moves the sum to ξ − v
    sums = rows.sum(dim=1)
    assert sums.mean().item() == pytest.approx(2 / 3, abs=0.03)


def _dead_probability(layer, n_inputs=2000):
    """P(pre-activation ≤ 0) for a hidden layer, whose inputs are ReLU outputs (non-negative):
    the setting of Lu et al.'s dead-node probability, where RAI's positive Beta entry acts."""
    x = torch.relu(torch.randn(n_inputs, layer.in_features, generator=_gen(11)))
    with torch.no_grad():
        return float((layer(x) <= 0).double().mean())


def test_dead_node_probability_is_one_half_for_symmetric_inits_and_lower_for_rai():
    for scheme in ("kaiming_normal", "lecun_normal", "orthogonal"):
        layer = nn.Linear(50, 400)
        init.init_model_(layer, scheme, generator=_gen(1))
        assert _dead_probability(layer) == pytest.approx(0.5, abs=0.02), scheme
    layer = nn.Linear(50, 400)
    init.init_model_(layer, "rai", generator=_gen(2))
    assert _dead_probability(layer) < 0.45


def test_model_level_inits_report_every_layer_and_reject_unknown_names():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    report = init.init_model_(model, "kaiming_normal", generator=_gen())
    frame = report.to_frame()
    assert list(frame["layer"]) == ["0", "2"] and set(frame["scheme"]) == {"kaiming_normal"}
    assert float(model[0].bias.detach().abs().sum()) == 0.0
    with pytest.raises(ValueError, match="unknown init"):
        init.init_model_(model, "he")
    with pytest.raises(ValueError, match="needs one"):
        init.rai_(torch.empty(3, 3), None)
