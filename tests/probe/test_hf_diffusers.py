"""A diffusers UNet (issue 34's zoo) through the probe and every model-level initialiser, built
from a tiny config (nothing is downloaded) and called as ``model(sample, timestep).sample``.

The probe's SiLU calls agree with forward hooks on the SiLU modules: channels as the unit axis
of a feature map, features of the time embedding, sign states, r and Δ by the definitions of
relulab.nn.statistics. Every scheme of ``init.MODEL_INITS`` sets exactly the UNet's
convolutions and linear layers and lists every GroupNorm affine parameter as untouched; with
one timestep shared by the batch, the time-embedding path has an input constant over the data,
and the centring schemes leave it as it was with a ``ConstantInputWarning``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

diffusers = pytest.importorskip("diffusers")

from relulab import init  # noqa: E402
from relulab.init import ConstantInputWarning  # noqa: E402
from relulab.init.layers import model_blocks  # noqa: E402
from relulab.nn.statistics import (  # noqa: E402
    delta_from_means,
    effective_rank,
    mean_variance_ratio,
    sample_dims_except,
    sample_moments,
    squared_mean_and_variance,
    unit_states,
)
from relulab.probe import UnitAxisWarning, probe  # noqa: E402

N, SIZE = 8, 16
NOT_A_LAYER = "not a layer the initialisers set (GroupNorm)"

# ---------------------------------------------------------------------------------------------
# The model, written down: conv_in → time embedding → 2 down blocks (the second with
# attention) → mid block (resnet, attention, resnet) → 2 up blocks (the first with attention,
# layers_per_block + 1 = 2 resnets each) → GroupNorm, SiLU, conv_out.
# ---------------------------------------------------------------------------------------------
#: Every ResnetBlock2D: norm1 → SiLU → conv1 (+ time_emb_proj(SiLU(temb))) → norm2 → SiLU →
#: conv2, and a 1×1 conv_shortcut where its in and out channels differ (True here).
RESNETS = {
    "down_blocks.0.resnets.0": False,  # 8 → 8
    "down_blocks.1.resnets.0": True,  # 8 → 16
    "mid_block.resnets.0": False,  # 16 → 16
    "mid_block.resnets.1": False,
    "up_blocks.0.resnets.0": True,  # 16 + 16 skip → 16
    "up_blocks.0.resnets.1": True,  # 16 + 8 skip → 16
    "up_blocks.1.resnets.0": True,  # 16 + 8 skip → 8
    "up_blocks.1.resnets.1": True,  # 8 + 8 skip → 8
}
#: Every Attention: group_norm → to_q, to_k, to_v (Linear on (N, H·W, C)) → to_out.0.
ATTENTIONS = [
    "down_blocks.1.attentions.0",
    "mid_block.attentions.0",
    "up_blocks.0.attentions.0",
    "up_blocks.0.attentions.1",
]
TIME_LAYERS = ["time_embedding.linear_1", "time_embedding.linear_2"] + [
    f"{resnet}.time_emb_proj" for resnet in RESNETS
]
#: The layers every scheme sets: nn.Conv2d and nn.Linear, all with a bias.
LAYERS = sorted(
    ["conv_in", "conv_out", "down_blocks.0.downsamplers.0.conv", "up_blocks.0.upsamplers.0.conv"]
    + TIME_LAYERS
    + [f"{r}.{c}" for r in RESNETS for c in ("conv1", "conv2")]
    + [f"{r}.conv_shortcut" for r, shortcut in RESNETS.items() if shortcut]
    + [f"{a}.{p}" for a in ATTENTIONS for p in ("to_q", "to_k", "to_v", "to_out.0")]
)
#: The only other parameters: every GroupNorm's affine weight and bias (docs/init.md:
#: normalisation layers are not layers the initialisers set). Timesteps (the sinusoidal
#: projection), SiLU, Dropout(0), Upsample's interpolation have none.
GROUP_NORMS = (
    [f"{r}.{n}" for r in RESNETS for n in ("norm1", "norm2")]
    + [f"{a}.group_norm" for a in ATTENTIONS]
    + ["conv_norm_out"]
)
NORM_PARAMETERS = sorted(f"{g}.{p}" for g in GROUP_NORMS for p in ("weight", "bias"))


def _unet() -> nn.Module:
    torch.manual_seed(0)
    return diffusers.UNet2DModel(
        sample_size=SIZE,
        in_channels=3,
        out_channels=3,
        block_out_channels=(8, 16),
        layers_per_block=1,
        norm_num_groups=4,
        attention_head_dim=8,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    )


def _sample(seed: int = 1) -> torch.Tensor:
    return torch.randn(N, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(seed))


def _distinct() -> dict[str, object]:
    """One timestep per sample: the time embedding varies over the batch."""
    return {"sample": _sample(), "timestep": torch.arange(N) * 120 + 7}


def _shared() -> dict[str, object]:
    """One timestep for the whole batch (an int, passed unchanged): the time embedding, and
    everything computed from it alone, is the same for every sample."""
    return {"sample": _sample(), "timestep": 500}


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_the_written_down_structure_is_the_models():
    model = _unet()
    layers = [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d | nn.Linear)]
    norms = [n for n, m in model.named_modules() if isinstance(m, nn.GroupNorm)]
    assert sorted(layers) == LAYERS and len(LAYERS) == 51
    assert sorted(norms) == sorted(GROUP_NORMS) and len(NORM_PARAMETERS) == 42
    covered = {f"{n}.{p}" for n in LAYERS for p in ("weight", "bias")} | set(NORM_PARAMETERS)
    assert covered == {n for n, _ in model.named_parameters()}  # nothing else has parameters
    with torch.no_grad():
        assert model(**_distinct()).sample.shape == (N, 3, SIZE, SIZE)


# ---------------------------------------------------------------------------------------------
# The probe against forward hooks on the SiLU modules.
# ---------------------------------------------------------------------------------------------
def _push(model: nn.Module) -> None:
    """A quarter of the units of two SiLU inputs pushed far below zero: never positive."""
    with torch.no_grad():
        model.time_embedding.linear_1.bias[:8] = -50.0  # 8 of 32 time-embedding features
        model.down_blocks[0].resnets[0].norm1.bias[:2] = -50.0  # 2 of 8 channels


def _hooked_calls(model: nn.Module, data: dict[str, object]) -> list[list[torch.Tensor]]:
    """``[(z, h), …]`` of every SiLU module call, in call order (a ResnetBlock2D's one
    ``nonlinearity`` module is called three times: norm1's output, the time embedding,
    norm2's output)."""
    calls, handles = [], []
    for module in model.modules():
        if isinstance(module, nn.SiLU):
            handles.append(
                module.register_forward_pre_hook(
                    lambda m, args: calls.append([args[0].detach().clone(), None])
                )
            )
            handles.append(
                module.register_forward_hook(
                    lambda m, args, out: calls[-1].__setitem__(1, out.detach().clone())
                )
            )
    try:
        with torch.no_grad():
            model(**data)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def _reference(z: torch.Tensor, h: torch.Tensor) -> dict[str, float]:
    """The statistics by their definitions, units on axis 1: a feature map's channels (its
    samples and positions the sample axes), the time embedding's features."""
    z, h = z.double(), h.double()
    dims = sample_dims_except(z, 1)
    states = unit_states(z, dims)
    mean, variance = sample_moments(z, dims)
    m2, v2 = squared_mean_and_variance(mean, variance, reduce="mean")
    flat = h.reshape(h.shape[0], -1)
    return {
        "units": z.shape[1],
        "never_positive": float(states.dead.double().mean()),
        "always_positive": float(states.always_on.double().mean()),
        "r": float(mean_variance_ratio(m2, v2)),
        "delta": float(delta_from_means(h.mean(dim=dims))),
        "rank_uncentred": effective_rank(flat, centred=False),
        "rank_centred": effective_rank(flat, centred=True),
    }


def _names() -> list[str]:
    """The probe's names of the SiLU calls, in call order (RESNETS is in call order: down,
    mid, up)."""
    names = ["time_embedding.act#0"]
    for resnet in RESNETS:
        names += [f"{resnet}.nonlinearity#{k}" for k in range(3)]
    return names + ["conv_act#0"]


def _probe(model: nn.Module, data: dict[str, object]):
    """probe(model, {"sample", "timestep"}): model(**data). A resnet's time-embedding SiLU
    (``nonlinearity#1``, input (N, 32)) runs after norm1's GroupNorm, not right after the Linear
    that produced its input: where the most-recent-producer rule falls back to the default axis
    1 (the right one here), one warning names those calls, and no other call takes it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnitAxisWarning)
        result = probe(model, data)
    default = [layer.name for layer in result.layers if layer.unit_axis_rule == "default"]
    assert all(name.endswith(".nonlinearity#1") for name in default), default
    assert [w.category for w in caught] == [UnitAxisWarning] * bool(default)
    for name in default:
        assert f"{name} (32 units)" in str(caught[0].message)
    return result


@pytest.mark.parametrize("data", [_distinct, _shared], ids=["distinct", "shared"])
def test_probe_agrees_with_hooks_on_the_silu_modules(data):
    model = _unet()
    _push(model)
    before = {key: value.clone() for key, value in model.state_dict().items()}
    result = _probe(model, data())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # as found
    calls = _hooked_calls(model.train(), data())
    assert result.names == _names() and len(calls) == 26
    assert {layer.kind for layer in result.layers} == {"SiLU"}
    assert {layer.family for layer in result.layers} == {"smooth"}
    for layer, (z, h) in zip(result.layers, calls, strict=True):
        want, got = _reference(z, h), layer.metrics
        assert layer.units == want["units"] and layer.unit_axis == 1, layer.name
        if layer.name.endswith("nonlinearity#1"):  # the resnet's time embedding, (N, 32)
            assert z.shape == (N, 32) and layer.unit_axis_rule in ("producer", "default")
        else:  # a GroupNorm's output (N, C, H, W), or linear_1's (N, 32)
            assert layer.unit_axis_rule == "producer", layer.name
        assert "dead_fraction" not in got  # SiLU: sign states, not dead units
        states = got["never_positive_fraction"], got["always_positive_fraction"]
        assert states == (want["never_positive"], want["always_positive"]), layer.name
        assert got["sample_mean_variance_ratio"] == pytest.approx(want["r"], rel=1e-8)
        assert got["delta"] == pytest.approx(want["delta"], rel=1e-8, abs=1e-12)
        for rank in ("uncentred", "centred"):
            assert got[f"effective_rank_{rank}"] == pytest.approx(
                want[f"rank_{rank}"], rel=1e-6, abs=1e-9
            ), layer.name
    layers = dict(zip(result.names, result.layers, strict=True))
    pushed = layers["down_blocks.0.resnets.0.nonlinearity#0"]
    assert pushed.producer == "down_blocks.0.resnets.0.norm1 (group_norm)"
    assert pushed.metrics["never_positive_fraction"] == 0.25  # exactly the 2 pushed channels
    time_act = layers["time_embedding.act#0"]
    assert time_act.producer == "time_embedding.linear_1 (linear)" and time_act.units == 32
    assert time_act.metrics["never_positive_fraction"] >= 0.25
    linear_1 = model.time_embedding.linear_1  # the kinks z = 0 of its units: −b/‖w‖
    kinks = -linear_1.bias.detach().double() / linear_1.weight.detach().double().norm(dim=1)
    np.testing.assert_allclose(time_act.kinks, kinks.numpy(), rtol=1e-6)
    assert [layer.units for layer in result.layers[1:4]] == [8, 32, 8]  # channels, temb, channels
    temb = [layers["time_embedding.act#0"]]
    temb += [layer for layer in result.layers if layer.name.endswith("nonlinearity#1")]
    if data is _shared:  # one timestep: every sample's time embedding is the same
        for layer in temb:
            metrics = layer.metrics
            assert metrics["sample_variance"] == 0
            assert metrics["sample_mean_variance_ratio"] == float("inf")  # r = √(m²/0)
            assert metrics["never_positive_fraction"] + metrics["always_positive_fraction"] == 1
            assert metrics["effective_rank_centred"] == 0  # N equal rows: nothing left centred
            assert metrics["effective_rank_uncentred"] == pytest.approx(1)
    else:
        assert all(0 < layer.metrics["sample_variance"] for layer in temb)


# ---------------------------------------------------------------------------------------------
# Every model-level scheme.
# ---------------------------------------------------------------------------------------------
def _parameter_order(model: nn.Module, names: set[str]) -> list[str]:
    return [name for name, _ in model.named_parameters() if name in names]


@pytest.mark.parametrize("scheme", init.MODEL_INITS)
def test_every_scheme_sets_every_layer_and_leaves_only_the_group_norms(scheme):
    """Distinct timesteps: nothing is constant over the batch, so every scheme — per-tensor or
    data-dependent — sets all 51 convolutions and linear layers (all have biases, so rai, raai
    and scale_bias apply) and leaves exactly the 42 GroupNorm affine parameters."""
    model = _unet()
    before = _state(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantInputWarning)
        report = init.apply_init_(model, scheme, _distinct(), torch.Generator().manual_seed(1))
    assert sorted(row.layer for row in report) == LAYERS
    assert [w.name for w in report.untouched] == _parameter_order(model, set(NORM_PARAMETERS))
    assert {(w.kind, w.reason) for w in report.untouched} == {("GroupNorm", NOT_A_LAYER)}
    after = dict(model.named_parameters())
    for weight in report.untouched:
        assert tuple(before[weight.name].shape) == weight.shape
        assert torch.equal(before[weight.name], after[weight.name]), weight.name
    for block in model_blocks(model):  # every layer weight written
        assert not torch.equal(block.stored, before[block.weight_name]), block.name
    frame = report.to_frame()
    assert list(frame["status"]).count("untouched") == 42
    assert list(frame["status"]).count("set") == 51


#: With one shared timestep, the layers whose input is constant over the data, per scheme:
#: time_embedding.linear_1 takes the sinusoidal projection of the one timestep; left as it was,
#: its output is still constant, so linear_2 (after SiLU) is too, and so is every resnet's
#: time_emb_proj, which takes SiLU(linear_2's output). scale_bias (per feature or not) divides
#: by the per-feature sample variance — 0 there — so it leaves all ten. scale divides by the
#: second moment (not 0: a constant non-zero output is scaled without trouble) and lsuv by the
#: variance of the whole output, over its features too (not 0): both set them.
CONSTANT = {
    "scale_bias": TIME_LAYERS,
    "scale_bias_per_feature": TIME_LAYERS,
    "scale": [],
    "lsuv": [],
}


def _apply(scheme: str, model: nn.Module, data: object):
    generator = torch.Generator().manual_seed(2)
    if scheme == "scale_bias_per_feature":
        return init.scale_bias_(model, data, per_feature=True, generator=generator)
    return init.apply_init_(model, scheme, data, generator)


@pytest.mark.parametrize("scheme", list(CONSTANT))
def test_one_shared_timestep_leaves_the_time_embedding_path_of_the_centring_schemes(scheme):
    model = _unet()
    before = _state(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = _apply(scheme, model, _shared())
    left = CONSTANT[scheme]
    warned = [w for w in caught if w.category is ConstantInputWarning]
    assert len(warned) == len(left) == len(caught)
    for warning, layer in zip(warned, sorted(left, key=TIME_LAYERS.index), strict=True):
        assert f"layer {layer!r} (Linear) has an input constant over the data" in str(
            warning.message
        )
    assert sorted(row.layer for row in report) == sorted(set(LAYERS) - set(left))
    left_params = {f"{layer}.{p}" for layer in left for p in ("weight", "bias")}
    assert [w.name for w in report.untouched] == _parameter_order(
        model, set(NORM_PARAMETERS) | left_params
    )
    after = dict(model.named_parameters())
    for weight in report.untouched:
        assert torch.equal(before[weight.name], after[weight.name]), weight.name
        if weight.name in left_params:
            assert weight.kind == "Linear"
            assert weight.reason.startswith("input constant over the data (feature variance 0")
            assert weight.reason.endswith("): left as it was")
        else:
            assert weight.reason == NOT_A_LAYER
    for layer in set(TIME_LAYERS) - set(left):  # set: a finite, non-zero weight
        weight = after[f"{layer}.weight"]
        assert torch.isfinite(weight).all() and weight.abs().max() > 0, layer


# ---------------------------------------------------------------------------------------------
# The data-dependent targets, measured by hooks on the layers.
# ---------------------------------------------------------------------------------------------
def _measure(model: nn.Module, data: dict[str, object]) -> dict[str, torch.Tensor]:
    """Each layer's output on ``data``, features on axis 1 (an attention's Linear layers
    compute on (N, H·W, C): features last)."""
    outputs: dict[str, torch.Tensor] = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d | nn.Linear):

            def hook(m, args, out, name=name):
                u = out.movedim(-1, 1) if isinstance(m, nn.Linear) and out.dim() > 2 else out
                outputs[name] = u.detach()

            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(**data)
    finally:
        for handle in handles:
            handle.remove()
    return outputs


def _sample_dims(u: torch.Tensor) -> tuple[int, ...]:
    return (0,) + tuple(range(2, u.dim()))


def _centred(u: torch.Tensor) -> bool:
    return u.mean(dim=_sample_dims(u)).abs().max().item() < 1e-9  # float64: exact centring


#: The schemes' targets. Eq. 13 divides by √(⟨u²⟩ + ε), ε = 1e-5: the second moment reached
#: is ⟨u²⟩/(⟨u²⟩ + ε), within about ε/⟨u²⟩ of 1 (per feature: of that feature's ⟨u²⟩, so a
#: feature of small spread is further off). LSUV stops within its tolerance 0.02 of 1.
TARGETS = {
    "scale": lambda u: abs(u.square().mean().item() - 1) < 1e-4,
    "scale_bias": lambda u: _centred(u) and abs(u.square().mean().item() - 1) < 1e-4,
    "scale_bias_per_feature": lambda u: (
        _centred(u) and (u.var(dim=_sample_dims(u), unbiased=False) - 1).abs().max().item() < 1e-3
    ),
    "lsuv": lambda u: abs(u.var().item() - 1) < 0.021,
}


@pytest.mark.parametrize("data", [_distinct, _shared], ids=["distinct", "shared"])
@pytest.mark.parametrize("scheme", list(TARGETS))
def test_data_dependent_schemes_reach_their_targets_on_every_layer_they_set(scheme, data):
    model = _unet().double()
    batch = data()
    batch["sample"] = batch["sample"].double()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        report = _apply(scheme, model, batch)
    outputs = _measure(model, batch)
    assert len(report) == 51 - (len(CONSTANT[scheme]) if data is _shared else 0)
    for row in report:
        assert TARGETS[scheme](outputs[row.layer]), (row.layer, row)
