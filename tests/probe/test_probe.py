"""Probes: exact on hand-built networks, one layer per call, in-place and functional calls,
the unit axis, modes, per-sample gradients, the model left as found, clear errors. Real
architectures: tests/probe/test_probe_zoo.py."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from matplotlib.figure import Figure
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
    assert (layer.name, layer.module, layer.call, layer.family) == ("1#0", "1", 0, "rectifier")
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
    per_sample = 40 * grad.double()  # the batch loss is the mean of 40 per-sample losses
    assert result.layers[0].metrics["gradient_second_moment"] == pytest.approx(
        float(per_sample.square().mean()), rel=1e-6
    )
    assert all(p.grad is None for p in model.parameters()), "the probe leaves no gradients behind"


@pytest.mark.parametrize(
    ("loss_fn", "scale"),
    [
        (nn.MSELoss(), 1),
        (nn.MSELoss(reduction="sum"), 4),  # ℓ_t sums 2 outputs: twice the mean, gradient² 4×
        (lambda output, target: F.mse_loss(output, target), 1),
        (lambda output, target: (output - target).square().sum(), 4),
    ],
)
def test_gradient_second_moment_is_per_sample_whatever_the_batch_and_the_reduction(loss_fn, scale):
    """⟨(∂ℓ_t/∂h_t)²⟩ with ℓ_t the loss of sample t alone: one sample per batch is the
    reference, and every batch size and reduction agrees with it."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 2))
    x, y = torch.randn(24, 3), torch.randn(24, 2)
    reference = probe(model, x, targets=y, loss_fn=nn.MSELoss(), batch_size=1)
    for batch_size in (None, 8, 5):
        result = probe(model, x, targets=y, loss_fn=loss_fn, batch_size=batch_size)
        for got, want in zip(result.layers, reference.layers, strict=True):
            expected = want.metrics["gradient_second_moment"] * scale
            assert got.metrics["gradient_second_moment"] == pytest.approx(expected, rel=1e-6)


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
    whole = probe(cnn, x, mode="eval")
    batched = probe(cnn, x, batch_size=5, mode="eval")
    assert [layer.units for layer in whole.layers] == [8, 16]
    for a, b in zip(whole.layers, batched.layers, strict=True):
        for key in ("dead_fraction", "delta", "sample_mean_variance_ratio"):
            assert a.metrics[key] == pytest.approx(b.metrics[key], rel=1e-9)
    frame = whole.frame
    assert list(frame.columns) == [
        "layer", "name", "module", "kind", "units", "unit_axis", "unit_axis_rule", "metric", "value"
    ]  # fmt: skip
    assert set(frame["unit_axis_rule"]) == {"producer"}
    assert len(frame) > 10 and whole.names == ["2#0", "5#0"]


def test_clear_errors():
    no_activation = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid())
    with pytest.raises(ValueError, match="no ReLU-family or smooth activation was called"):
        probe(no_activation, torch.randn(4, 3))
    with pytest.raises(ValueError, match="mode must be 'train' or 'eval'"):
        probe(_hand_built(), torch.randn(4, 1), mode="inference")
    with pytest.raises(ValueError, match="3 targets for 4 samples"):
        probe(_hand_built(), torch.randn(4, 1), targets=torch.randn(3, 4), loss_fn=nn.MSELoss())
    with pytest.raises(ValueError, match="reduction='none'"):
        probe(
            _hand_built(),
            torch.randn(4, 1),
            targets=torch.randn(4, 4),
            loss_fn=nn.MSELoss(reduction="none"),
        )
    with pytest.raises(ValueError, match=r"data of shape \(4, 7\).*expects \(N, 1\)"):
        probe(_hand_built(), torch.randn(4, 7))
    with pytest.raises(ValueError, match="both targets and loss_fn"):
        probe(_hand_built(), torch.randn(4, 1), targets=torch.randn(4, 4))


class _Reused(nn.Module):
    """One in-place ReLU called twice, and F.relu / Tensor.relu_ in forward."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(2, 4), nn.Linear(4, 4), nn.Linear(4, 4)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        h = self.relu(self.fc1(x))
        h = self.relu(self.fc2(h))
        return F.relu(self.fc3(h), inplace=True) + self.fc3(h).relu_()


def test_every_call_is_a_layer_with_its_input_before_the_in_place_write():
    torch.manual_seed(0)
    model = _Reused()
    x = torch.randn(50, 2)
    result = probe(model, x)
    assert result.names == ["relu#0", "relu#1", ":relu#0", ":relu#1"]
    assert [layer.kind for layer in result.layers] == ["ReLU", "ReLU", "F.relu", "F.relu"]
    with torch.no_grad():
        z1 = model.fc1(x)
        z2 = model.fc2(torch.relu(z1))
        z3 = model.fc3(torch.relu(z2))
    for layer, z in zip(result.layers, (z1, z2, z3, z3), strict=False):
        z = z.double()
        m2, v2 = z.mean(0).square().mean(), z.var(0, unbiased=False).mean()
        assert layer.metrics["sample_mean_variance_ratio"] == pytest.approx(float((m2 / v2).sqrt()))
        assert layer.metrics["delta"] == pytest.approx(float(torch.relu(z).mean(0).std(0, False)))
    expected_kinks = -model.fc1.bias.detach() / model.fc1.weight.detach().norm(dim=1)
    np.testing.assert_allclose(result.layers[0].kinks, expected_kinks.double(), rtol=1e-6)
    assert result.layers[2].producer == "fc3 (linear)" and result.layers[3].kinks is not None


def test_sequence_units_are_the_feature_axis():
    """(N, T, d) through a Linear: d units, statistics over N and T; a −100 bias kills half."""
    block = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8))
    with torch.no_grad():
        block[0].bias[:16] = -100.0
    result = probe(block, torch.randn(6, 10, 8))
    (layer,) = result.layers
    assert (layer.units, layer.unit_axis, layer.unit_axis_rule) == (32, 2, "producer")
    assert layer.producer == "0 (linear)"
    assert layer.metrics["dead_fraction"] == 0.5
    transposed = probe(block, torch.randn(6, 10, 8), unit_axis=1)
    assert transposed.layers[0].units == 10 and transposed.layers[0].unit_axis_rule == "given"


def test_leaky_and_smooth_units_that_never_cross_zero_are_not_called_dead():
    for activation in (nn.LeakyReLU(0.1), nn.GELU(), nn.SiLU(), nn.Tanh(), nn.ELU()):
        model = nn.Sequential(nn.Linear(3, 8), activation)
        with torch.no_grad():
            model[0].bias[:2] = -100.0
        (layer,) = probe(model, torch.randn(40, 3)).layers
        assert "dead_fraction" not in layer.metrics, activation
        assert layer.metrics["never_positive_fraction"] == 0.25
        assert layer.family in ("leaky", "smooth")


def test_modes_and_the_model_is_left_exactly_as_found():
    torch.manual_seed(3)
    model = nn.Sequential(
        nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 1)
    )
    model[1].eval()  # a mixed state: the model in train mode, one BatchNorm frozen
    model[4].weight.requires_grad_(False)
    model[0].weight.grad = torch.ones_like(model[0].weight)
    calls = []
    model[2].register_forward_hook(lambda *args: calls.append(1))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [m.training for m in model.modules()]
    x, y = torch.randn(32, 4) * 3 + 2, torch.randn(32, 1)
    rng = torch.get_rng_state()
    train = probe(model, x, targets=y, loss_fn=nn.MSELoss())
    evaluation = probe(model, x, mode="eval")
    assert (train.mode, evaluation.mode) == ("train", "eval")
    # train mode: BatchNorm normalises with the batch → about half the units fire on each sample
    assert train.layers[0].metrics["sample_mean_variance_ratio"] < 1e-3
    assert evaluation.layers[0].metrics["sample_mean_variance_ratio"] > 0.1
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, state[key], rtol=0, atol=0, msg=key)
    assert [m.training for m in model.modules()] == flags
    assert model[4].weight.requires_grad is False and model[0].bias.grad is None
    torch.testing.assert_close(model[0].weight.grad, torch.ones_like(model[0].weight))
    assert torch.equal(torch.get_rng_state(), rng)
    assert len(model[2]._forward_hooks) == 1 and len(calls) == 2, "the user's hook stays"


def test_plot_returns_a_figure_and_saves_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = probe(_hand_built(), torch.randn(30, 1))
    figure = result.plot()
    assert isinstance(figure, Figure) and list(tmp_path.iterdir()) == []
    result.plot(tmp_path / "probe.png")
    assert (tmp_path / "probe.png").stat().st_size > 1000


class _NewGELU(nn.Module):
    """GPT-2's gelu_new as transformers writes it: a torch.tanh inside a formula."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3.0))))


class _Conv1D(nn.Module):
    """transformers' Conv1D: x @ W + b by torch.addmm on the flattened input, W (in, out)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.3)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        out = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return out.view(*x.shape[:-1], self.nf)


_NewGELU.__name__ = _NewGELU.__qualname__ = "NewGELUActivation"
_NewGELU.__module__ = "transformers.activations"
_Conv1D.__name__ = _Conv1D.__qualname__ = "Conv1D"
_Conv1D.__module__ = "transformers.pytorch_utils"


class _GPT2MLP(nn.Module):
    def __init__(self, d=8, inner=24):
        super().__init__()
        self.c_fc, self.act, self.c_proj = _Conv1D(inner, d), _NewGELU(), _Conv1D(d, inner)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


def test_a_composite_activation_is_one_call_and_conv1d_produces_the_last_axis():
    """Recognised by class name (no transformers import): the tanh inside is not a layer, the
    units are Conv1D's n_inner (not the sequence length), the kinks read W's columns."""
    torch.manual_seed(0)
    model = _GPT2MLP()
    with torch.no_grad():
        model.c_fc.bias[:6] = -100.0
    x = torch.randn(5, 7, 8)
    result = probe(model, x)
    (layer,) = result.layers
    assert (layer.name, layer.kind, layer.family) == ("act#0", "NewGELUActivation", "smooth")
    assert (layer.units, layer.unit_axis, layer.unit_axis_rule) == (24, 2, "producer")
    assert layer.producer == "c_fc (Conv1D)"
    assert layer.metrics["never_positive_fraction"] == 0.25
    w, b = model.c_fc.weight.detach().double(), model.c_fc.bias.detach().double()
    np.testing.assert_allclose(layer.kinks, (-b / w.norm(dim=0)).numpy(), rtol=1e-9)
    z = model.c_fc(x).detach().double().reshape(-1, 24)
    m2, v2 = z.mean(0).square().mean(), z.var(0, unbiased=False).mean()
    assert layer.metrics["sample_mean_variance_ratio"] == pytest.approx(float((m2 / v2).sqrt()))


def test_activations_nested_in_an_activation_module_are_part_of_it():
    class Gate(nn.Module):  # the user's own composite, holding an nn.ReLU
        def __init__(self):
            super().__init__()
            self.inner = nn.ReLU()

        def forward(self, x):
            return self.inner(x) * torch.tanh(x)

    model = nn.Sequential(nn.Linear(3, 5), Gate(), nn.Linear(5, 5), nn.ReLU())
    result = probe(model, torch.randn(20, 3), activation_types=[Gate])
    assert result.names == ["1#0", "3#0"] and result.layers[0].kind == "Gate"


class _TokenModel(nn.Module):
    """A language model's signature: model(input_ids=…, attention_mask=…), a dict out."""

    def __init__(self):
        super().__init__()
        self.embed, self.fc = nn.Embedding(20, 6), nn.Linear(6, 10)

    def forward(self, input_ids, attention_mask, scale=1.0):
        h = F.relu(self.fc(self.embed(input_ids))) * scale
        return {"logits": h.sum(dim=1), "hidden": h}


def test_mapping_inputs_leave_padding_out_and_outputs_give_their_logits():
    torch.manual_seed(0)
    model = _TokenModel()
    ids = torch.randint(0, 20, (6, 5))
    mask = torch.ones_like(ids)
    mask[::2, 3:] = 0  # every other sequence: 3 tokens, then 2 of padding
    data = {"input_ids": ids, "attention_mask": mask, "scale": 2.0}
    result = probe(model, data, batch_size=4)
    (layer,) = result.layers
    z = model.fc(model.embed(ids)).detach().double()[mask.bool()]  # the 24 real tokens
    m2, v2 = z.mean(0).square().mean(), z.var(0, unbiased=False).mean()
    assert layer.metrics["sample_mean_variance_ratio"] == pytest.approx(float((m2 / v2).sqrt()))
    assert layer.metrics["dead_fraction"] == float((z.amax(0) <= 0).double().mean())
    h = torch.relu(z)
    assert layer.metrics["delta"] == pytest.approx(float(h.mean(0).std(unbiased=False)))
    assert layer.metrics["effective_rank_token_centred"] == pytest.approx(effective_rank(h, True))
    graded = probe(model, data, targets=torch.randn(6, 10), loss_fn=nn.MSELoss())
    assert graded.layers[0].metrics["gradient_second_moment"] > 0
    with pytest.raises(ValueError, match="disagree on the number of samples"):
        probe(model, {"input_ids": ids, "attention_mask": mask[:4]})
    with pytest.raises(ValueError, match=r"could not run on data input_ids \(6, 5\) \(int64\)"):
        probe(model, {"input_ids": ids})  # no attention_mask argument


def test_a_mask_of_the_wrong_length_and_data_without_samples_are_refused():
    """Issue 46: a mask one token short was accepted (it silently masked nothing), and no
    samples gave a raw error from deep inside."""
    model = _TokenModel()
    ids = torch.randint(0, 20, (6, 5))
    with pytest.raises(ValueError, match=r"attention_mask has shape \(6, 4\) but input_ids"):
        probe(model, {"input_ids": ids, "attention_mask": torch.ones(6, 4, dtype=torch.long)})
    with pytest.raises(ValueError, match="every position is padding"):
        probe(model, {"input_ids": ids, "attention_mask": torch.zeros_like(ids)})
    with pytest.raises(ValueError, match=r"data of shape \(0, 1\) \(float32\) hold no samples"):
        probe(_hand_built(), torch.randn(0, 1))
