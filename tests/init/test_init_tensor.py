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
    with pytest.raises(ValueError, match="needs a bias"):
        init.rai_(torch.empty(3, 3), None)


# ---------------------------------------------------------------------------------------------
# Call-compatible with torch.nn.init, and the same draws for the same generator.
# ---------------------------------------------------------------------------------------------
SHAPES = [(7, 5), (40, 30), (16, 8, 3, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("kaiming_normal_", (), {}),
        ("kaiming_normal_", (0, "fan_out"), {}),
        ("kaiming_normal_", (0.2, "fan_in", "leaky_relu"), {}),
        ("kaiming_normal_", (), {"nonlinearity": "relu", "mode": "fan_out"}),
        ("kaiming_uniform_", (), {}),
        ("kaiming_uniform_", (0, "fan_out"), {}),
        ("kaiming_uniform_", (), {"a": 0.1, "nonlinearity": "leaky_relu"}),
        ("normal_", (0.5, 2.0), {}),
        ("normal_", (), {"std": 0.01}),
        ("orthogonal_", (), {}),
        ("orthogonal_", (2.0,), {}),
    ],
)
def test_namesakes_take_torch_signatures_and_make_torch_draws(shape, dtype, name, args, kwargs):
    ours = getattr(init, name)(torch.empty(shape, dtype=dtype), *args, **kwargs, generator=_gen(4))
    theirs = getattr(torch.nn.init, name)(
        torch.empty(shape, dtype=dtype), *args, **kwargs, generator=_gen(4)
    )
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


@pytest.mark.parametrize("make", [lambda: nn.Linear(9, 4), lambda: nn.Conv2d(3, 5, 3)])
def test_torch_default_draws_what_the_layers_reset_parameters_draw(make):
    torch.manual_seed(11)
    reference = make()
    layer = make()
    torch.manual_seed(11)
    init.torch_default_(layer.weight, layer.bias)  # the global generator, like reset_parameters
    torch.testing.assert_close(layer.weight, reference.weight, rtol=0, atol=0)
    torch.testing.assert_close(layer.bias, reference.bias, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["kaiming_normal_", "kaiming_uniform_", "normal_", "orthogonal_"])
def test_float64_draw_gives_float32_and_float64_tensors_the_same_numbers(name):
    fill = getattr(init, name)
    single = fill(torch.empty(20, 10), generator=_gen(2), draw="float64")
    double = fill(torch.empty(20, 10, dtype=F64), generator=_gen(2), draw="float64")
    torch.testing.assert_close(single, double.float(), rtol=0, atol=0)


def test_registry_keeps_its_float64_draws_bit_for_bit():
    """The engine's networks (and so every scorecard) are drawn by the registry: its fills are
    the float64 formulas relulab has always used, written out here independently."""
    shape, fan = (30, 20), 20

    def legacy_normal(std):
        return torch.randn(shape, generator=_gen(3), dtype=F64) * std

    def legacy_uniform(bound):
        return (torch.rand(shape, generator=_gen(3), dtype=F64) * 2 - 1) * bound

    expected = {
        "kaiming_normal": legacy_normal(math.sqrt(2.0) / math.sqrt(fan)),
        "kaiming_uniform": legacy_uniform(math.sqrt(2.0) * math.sqrt(3.0 / fan)),
        "lecun_normal": legacy_normal(1.0 / math.sqrt(fan)),
        "normal": legacy_normal(1.0),
        "torch_default": legacy_uniform(1 / math.sqrt(fan)),
    }
    for name, want in expected.items():
        weight = torch.empty(shape, dtype=torch.float32)
        init.SCHEMES[name].fill(weight, None, _gen(3))
        torch.testing.assert_close(weight, want.float(), rtol=0, atol=0, msg=name)


def test_gain_is_given_through_a_and_nonlinearity_or_directly_not_both():
    leaky = init.kaiming_normal_(torch.empty(500, 400, dtype=F64), a=0.5, generator=_gen())
    assert leaky.var().item() == pytest.approx(2 / 1.25 / 400, rel=0.02)
    linear = init.kaiming_normal_(
        torch.empty(500, 400, dtype=F64), nonlinearity="linear", generator=_gen()
    )
    assert linear.var().item() == pytest.approx(1 / 400, rel=0.02)
    direct = init.kaiming_normal_(torch.empty(500, 400, dtype=F64), gain=3.0, generator=_gen())
    assert direct.var().item() == pytest.approx(9 / 400, rel=0.02)
    with pytest.raises(ValueError, match="gain"):
        init.kaiming_normal_(torch.empty(3, 3), a=0.1, gain=1.0)
    with pytest.raises(ValueError, match="draw must be"):
        init.normal_(torch.empty(3, 3), draw="float16")


# ---------------------------------------------------------------------------------------------
# One convention for the weight-and-bias schemes: (weight, bias, *, parameters…, generator=).
# ---------------------------------------------------------------------------------------------
def test_correlated_takes_weight_and_bias_and_keyword_parameters():
    layer = nn.Linear(40, 30)
    init.correlated_(layer.weight, layer.bias, k=-1, generator=_gen(1))
    assert float(layer.weight.detach().sum(dim=1).abs().max()) < 1e-5  # k = −1: every row sums to 0
    assert not layer.bias.any(), "σ_b² = 0 by default: biases 0"
    init.correlated_(layer.weight, layer.bias, k=-1, sigma_b2=0.25, generator=_gen(1))
    # the bias is drawn after the weight from the same generator: N(0, σ_b²)
    replay = _gen(1)
    torch.randn(30, 40, generator=replay, dtype=F64)
    expected = torch.randn(30, generator=replay, dtype=F64) * 0.5
    torch.testing.assert_close(layer.bias, expected.float(), rtol=0, atol=0)


def test_correlated_old_positional_sigma_is_deprecated_but_draws_the_same():
    with pytest.warns(DeprecationWarning, match="sigma_w2= by keyword"):
        old = init.correlated_(torch.empty(6, 9, dtype=F64), 1.5, k=-0.5, generator=_gen(2))
    new = init.correlated_(torch.empty(6, 9, dtype=F64), sigma_w2=1.5, k=-0.5, generator=_gen(2))
    torch.testing.assert_close(old, new, rtol=0, atol=0)


def test_weight_and_bias_schemes_give_clear_errors():
    layer = nn.Linear(5, 3)
    with pytest.raises(ValueError, match=r"bias must be None or have shape \(3,\)"):
        init.correlated_(layer.weight, torch.zeros(4))
    with pytest.raises(ValueError, match="sigma_w2 must be a positive"):
        init.correlated_(layer.weight, sigma_w2=-1.0)
    with pytest.raises(TypeError):
        init.rai_(layer.weight, layer.bias, _gen())  # the generator goes by keyword
    with pytest.raises(ValueError, match=r"bias must have shape \(3,\)"):
        init.raai_(layer.weight, torch.zeros(5))
    with pytest.raises(init.InitNotApplicableError, match="needs a bias"):
        init.raai_(layer.weight, None)


def test_init_model_names_the_layers_a_bias_setting_scheme_cannot_apply_to():
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.ReLU(), nn.Conv2d(4, 2, 1))
    with pytest.raises(
        init.InitNotApplicableError, match=r"rai sets every layer's bias.*0 \(Conv2d\)"
    ):
        init.init_model_(model, "rai")
    with pytest.raises(init.InitNotApplicableError, match="scale_bias"):
        init.apply_init_(model, "scale_bias", torch.randn(4, 3, 8, 8))


def test_relulab_only_fills_follow_torchs_zero_element_and_mode_rules():
    with pytest.warns(UserWarning, match="zero-element tensors is a no-op"):
        init.lecun_normal_(torch.empty(5, 0), draw="float64")
    upper = init.kaiming_normal_(
        torch.empty(6, 4), mode="FAN_OUT", generator=_gen(), draw="float64"
    )
    lower = init.kaiming_normal_(
        torch.empty(6, 4), mode="fan_out", generator=_gen(), draw="float64"
    )
    torch.testing.assert_close(upper, lower, rtol=0, atol=0)
    with pytest.raises(ValueError, match="mode must be"):
        init.kaiming_uniform_(torch.empty(6, 4), mode="fan_avg", gain=1.0)


@pytest.mark.parametrize("fill", [init.rai_, init.raai_])
def test_rai_and_raai_on_a_bias_free_layer_follow_bias_free(fill):
    """Issue 46: RAI/RAAI, the advice for dead units, refused bias-free layers outright."""
    conv = nn.Conv2d(3, 16, 3, bias=False)  # a ResNet convolution
    with pytest.raises(init.InitNotApplicableError, match="bias_free='scale'"):
        fill(conv.weight, None)
    with pytest.raises(ValueError, match="cannot add a bias to a tensor.*init_model_"):
        fill(conv.weight, None, bias_free="add")
    with pytest.raises(ValueError, match="bias_free must be one of error, add, scale"):
        fill(conv.weight, None, bias_free="centre")
    fill(conv.weight, None, generator=_gen(), bias_free="scale")
    rows = conv.weight.detach().reshape(16, -1)
    assert bool((rows > 0).any(dim=1).all())  # every unit has its Beta(2, 1) entry
    beta = rows.max(dim=1).values
    assert bool((beta <= 1).all())
    layer, again = nn.Linear(6, 4), nn.Linear(6, 4)  # with a bias, bias_free changes nothing
    fill(layer.weight, layer.bias, generator=_gen(1))
    fill(again.weight, again.bias, generator=_gen(1), bias_free="scale")
    assert torch.equal(layer.weight, again.weight) and torch.equal(layer.bias, again.bias)


def test_weights_alone_keep_rais_variance():
    weight = torch.empty(2000, 50, dtype=F64)
    init.rai_(weight, None, generator=_gen(), bias_free="scale")
    gaussian = weight[weight != weight.max(dim=1, keepdim=True).values]  # the Beta entries out
    # ≈ 98 000 Gaussian draws of variance 0.6007²/50: relative s.e. ≈ 0.5 %, 3 % is 6 sigma
    assert gaussian.var().item() == pytest.approx(0.6007**2 / 50, rel=0.03)
