"""Hugging Face transformers through the probe, models built from tiny configs (nothing is
downloaded): composite activations are one call each, HF ``Conv1D`` / ``addmm`` produce the unit
axis, the numbers agree with forward hooks on the activation modules, token data (a dict, a
``ModelOutput``, padding left out), ``relulab diagnose`` on token data, the ViT refusal."""

import sys
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

transformers = pytest.importorskip("transformers")
from transformers import activations as hf_activations  # noqa: E402

from relulab import cli  # noqa: E402
from relulab.nn.statistics import (  # noqa: E402
    delta_from_means,
    effective_rank,
    mean_variance_ratio,
    sample_moments,
    squared_mean_and_variance,
    unit_states,
)
from relulab.probe import UnitAxisWarning, probe  # noqa: E402

transformers.logging.set_verbosity_error()

VOCAB = 50
#: The activation modules the reference hooks: HF's composite ones and torch's.
HOOKED = (
    nn.ReLU,
    nn.Tanh,
    hf_activations.GELUActivation,
    hf_activations.NewGELUActivation,
    hf_activations.GELUTanh,
)
#: The layers feeding each model's MLP activation (BERT, GPT-2, T5, ViT, ConvNeXt).
MLP_INPUTS = ("intermediate.dense", "mlp.c_fc", "DenseReluDense.wi", "mlp.fc1", "pwconv1")
DROPOUT_OFF = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def _bert():
    config = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        **DROPOUT_OFF,
    )
    return transformers.BertModel(config)


def _gpt2(activation="gelu_new", head=False):
    config = transformers.GPT2Config(
        vocab_size=VOCAB,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=64,
        n_inner=128,
        activation_function=activation,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return (transformers.GPT2LMHeadModel if head else transformers.GPT2Model)(config)


def _t5():
    config = transformers.T5Config(
        vocab_size=VOCAB, d_model=32, d_ff=64, d_kv=16, num_layers=2, num_heads=2, dropout_rate=0.0
    )
    return transformers.T5EncoderModel(config)


def _vit(image_size=32):
    config = transformers.ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=image_size,
        patch_size=8,
        **DROPOUT_OFF,
    )
    return transformers.ViTModel(config)


def _convnext():
    config = transformers.ConvNextConfig(
        num_channels=3, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, image_size=32
    )
    return transformers.ConvNextModel(config)


def _build(factory, *args, **kwargs):
    torch.manual_seed(0)
    try:
        return factory(*args, **kwargs)
    except ImportError as error:  # a model class that needs torchvision (never imported here)
        pytest.skip(f"{factory.__name__} cannot be built here: {error}")


def _tokens(samples=6, length=16, seed=1):
    return torch.randint(1, VOCAB, (samples, length), generator=torch.Generator().manual_seed(seed))


def _images(samples=6, size=32, seed=2):
    return torch.randn(samples, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _push_biases(model, fraction=0.25, value=-50.0):
    """The first ``fraction`` of every MLP input layer's units pushed far below zero; where a
    layer has no bias (T5), their weights zeroed: z = 0 ≤ 0 on every token."""
    with torch.no_grad():
        for name, module in model.named_modules():
            if not name.endswith(MLP_INPUTS):
                continue
            conv1d = name.endswith("c_fc")  # HF Conv1D: weight (in, out)
            weight = module.weight if conv1d else module.weight.T
            units = weight.shape[1]
            if module.bias is None:
                weight[:, : int(fraction * units)] = 0.0
            else:
                module.bias[: int(fraction * units)] = value


def _hooked_calls(model, inputs):
    """``[(z, h), …]`` of every activation module call, in call order, by forward hooks."""
    calls, handles = [], []
    for module in model.modules():
        if isinstance(module, HOOKED):
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
    with torch.no_grad():
        model(**inputs) if isinstance(inputs, dict) else model(inputs)
    for handle in handles:
        handle.remove()
    return calls


def _reference(z, h, mask=None):
    """The statistics by their definitions (relulab.nn.statistics), units on the last axis,
    over the kept tokens (mask 1) of an (N, T, d) call."""
    units = z.shape[-1]
    z, h = z.double(), h.double()
    if mask is not None and z.dim() == 3:
        z, h = z[mask.bool()], h[mask.bool()]
    z, h = z.reshape(-1, units), h.reshape(-1, units)
    states = unit_states(z, (0,))
    mean, variance = sample_moments(z, (0,))
    m2, v2 = squared_mean_and_variance(mean, variance, reduce="mean")
    return {
        "units": units,
        "never_positive": float(states.dead.double().mean()),
        "always_positive": float(states.always_on.double().mean()),
        "r": float(mean_variance_ratio(m2, v2)),
        "delta": float(delta_from_means(h.mean(dim=0))),
        "token_rank": effective_rank(h, centred=True),
    }


def _assert_agrees(result, calls, mask=None, rel=1e-7):
    assert len(result.layers) == len(calls), result.names
    for layer, (z, h) in zip(result.layers, calls, strict=True):
        want = _reference(z, h, mask)
        got = layer.metrics
        assert layer.units == want["units"] and layer.unit_axis == z.dim() - 1, layer.name
        assert layer.unit_axis_rule != "default", layer.name
        if layer.family == "rectifier":
            states = got["dead_fraction"], got["always_on_fraction"]
        else:
            states = got["never_positive_fraction"], got["always_positive_fraction"]
        assert states == (want["never_positive"], want["always_positive"]), layer.name
        assert got["sample_mean_variance_ratio"] == pytest.approx(want["r"], rel=rel)
        assert got["delta"] == pytest.approx(want["delta"], rel=rel, abs=1e-12)
        if z.dim() > 2:
            assert got["effective_rank_token_centred"] == pytest.approx(
                want["token_rank"], rel=1e-6
            )


def _probe_without_warnings(model, data, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitAxisWarning)
        return probe(model, data, **options)


@pytest.mark.parametrize("activation", ["gelu_new", "gelu_pytorch_tanh"])
def test_gpt2_has_one_gelu_per_layer_with_n_inner_units(activation):
    """gelu_new is ONE activation (not the torch.tanh inside its formula); HF Conv1D (addmm)
    produces the unit axis: n_inner units, not the sequence length."""
    model = _build(_gpt2, activation)
    _push_biases(model)
    x = _tokens()
    result = _probe_without_warnings(model, x)
    kind = {"gelu_new": "NewGELUActivation", "gelu_pytorch_tanh": "GELUTanh"}[activation]
    assert result.names == ["h.0.mlp.act#0", "h.1.mlp.act#0"]
    assert [layer.kind for layer in result.layers] == [kind, kind]
    assert "F.tanh" not in {layer.kind for layer in result.layers}  # the tanh inside gelu_new
    assert [layer.units for layer in result.layers] == [128, 128]
    assert {layer.unit_axis_rule for layer in result.layers} == {"producer"}
    assert result.layers[0].producer == "h.0.mlp.c_fc (Conv1D)"
    assert result.layers[0].metrics["never_positive_fraction"] == 0.25
    c_fc = model.h[0].mlp.c_fc  # Conv1D: x @ W + b with W (in, out): unit j is column j
    expected = -c_fc.bias.detach().double() / c_fc.weight.detach().double().norm(dim=0)
    np.testing.assert_allclose(result.layers[0].kinks, expected.numpy(), rtol=1e-6)
    _assert_agrees(result, _hooked_calls(model.train(), x))


@pytest.mark.parametrize(
    ("factory", "inputs", "kinds"),
    [
        (_bert, _tokens, {"GELUActivation", "Tanh"}),
        (_t5, _tokens, {"ReLU"}),
        (_vit, _images, {"GELUActivation", "Tanh"}),
        (_convnext, _images, {"GELUActivation"}),
    ],
    ids=["bert", "t5-encoder", "vit", "convnext"],
)
def test_probe_agrees_with_hooks_on_the_activation_modules(factory, inputs, kinds):
    model = _build(factory)
    _push_biases(model)
    x = inputs()
    result = _probe_without_warnings(model, x)
    assert {layer.kind for layer in result.layers} == kinds
    first = result.layers[0]
    assert first.metrics.get("never_positive_fraction", first.metrics.get("dead_fraction")) == 0.25
    _assert_agrees(result, _hooked_calls(model.train(), x))


def test_the_default_rule_warns_once_naming_the_calls():
    class Raw(nn.Module):  # activations on the raw input: nothing produced it
        def forward(self, x):
            return torch.tanh(F.gelu(x))

    with pytest.warns(
        UnitAxisWarning, match=r"2 activation call\(s\).*:gelu#0 \(10 units\)"
    ) as caught:
        result = probe(Raw(), torch.randn(4, 10, 6))
    assert len([w for w in caught if w.category is UnitAxisWarning]) == 1
    assert "(relulab diagnose --unit-axis)" in str(caught[0].message)
    assert [layer.unit_axis_rule for layer in result.layers] == ["default", "default"]
    assert result.table()["unit_axis_rule"].tolist() == ["default", "default"]
    given = _probe_without_warnings(Raw(), torch.randn(4, 10, 6), unit_axis=-1)
    assert [layer.units for layer in given.layers] == [6, 6]


def test_matmul_and_addmm_produce_the_last_axis():
    weight = torch.randn(6, 12)

    class Products(nn.Module):
        def forward(self, x):
            a = F.relu(x @ weight)  # (N, T, 12): matmul
            flat = torch.addmm(torch.zeros(12), x.reshape(-1, 6), weight)
            return a + F.relu(flat.view(*x.shape[:2], 12))  # addmm on (N·T, 6), re-viewed

    result = _probe_without_warnings(Products(), torch.randn(4, 12, 6))
    assert [layer.units for layer in result.layers] == [12, 12]
    assert [layer.unit_axis_rule for layer in result.layers] == ["producer", "reshaped"]


def test_dict_inputs_and_model_outputs_with_gradients():
    """probe(model, {"input_ids", "attention_mask", "labels"}): model(**data); the loss reads
    the ModelOutput's logits, or loss_fn="model" takes its .loss — the same per-sample
    gradients for the same loss."""
    model = _build(_gpt2, head=True)
    ids = _tokens(samples=4, length=12)
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def shifted_cross_entropy(logits, targets):  # what GPT2LMHeadModel computes from labels
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), targets[:, 1:].flatten())

    explicit = probe(model, data, targets=ids, loss_fn=shifted_cross_entropy)
    own = probe(model, {**data, "labels": ids}, loss_fn="model")
    assert explicit.names == own.names == ["transformer.h.0.mlp.act#0", "transformer.h.1.mlp.act#0"]
    for a, b in zip(explicit.layers, own.layers, strict=True):
        assert a.metrics["gradient_second_moment"] > 0
        assert a.metrics["gradient_second_moment"] == pytest.approx(
            b.metrics["gradient_second_moment"], rel=1e-5
        )
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(ValueError, match="return its loss"):
        probe(model, data, loss_fn="model")


@pytest.mark.parametrize("factory", [_bert, _gpt2], ids=["bert", "gpt2"])
def test_padding_is_left_out_of_the_statistics(factory):
    """Right-padded sequences with their attention mask give the statistics of the real tokens
    alone: each sequence run unpadded, on its own, hooked."""
    model = _build(factory)
    _push_biases(model)
    lengths = [16, 11, 7, 13]
    ids = _tokens(samples=4, length=16)
    mask = (torch.arange(16)[None] < torch.tensor(lengths)[:, None]).long()
    padded = probe(model, {"input_ids": ids, "attention_mask": mask})
    alone = [_hooked_calls(model.train(), ids[k : k + 1, :n]) for k, n in enumerate(lengths)]
    joined = [  # the tokens of every sequence as one (1, Σn, d); the pooler's (N, d) stacked
        [torch.cat([calls[i][j] for calls in alone], dim=alone[0][i][j].dim() - 2) for j in (0, 1)]
        for i in range(len(alone[0]))
    ]
    _assert_agrees(padded, joined, rel=1e-5)
    unmasked = probe(model, ids)  # the padding tokens counted: other numbers
    ratio = "sample_mean_variance_ratio"
    assert unmasked.layers[0].metrics[ratio] != pytest.approx(padded.layers[0].metrics[ratio])


def test_the_per_sample_rank_of_a_transformer_sits_at_the_sample_cap():
    model = _build(_gpt2)
    result = probe(model, _tokens(samples=12, length=16))
    for layer in result.layers:
        metrics = layer.metrics
        assert metrics["effective_rank_centred_cap"] == 11  # N − 1 < T·d
        assert layer.rank_at_sample_cap and metrics["effective_rank_centred"] > 10
        assert metrics["effective_rank_token_centred_cap"] == 128  # 192 tokens × 128 units
    assert result.table()["rank_at_sample_cap"].all()


FACTORIES = """
import torch
import transformers
from transformers import activations

def _seed():
    torch.manual_seed(0)

def bert():
    _seed()
    return transformers.BertModel(transformers.BertConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64))

def gpt2():
    _seed()
    return transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=50, n_embd=32, n_layer=2, n_head=2, n_positions=64, n_inner=128,
        bos_token_id=0, eos_token_id=0))

def vit():
    _seed()
    return transformers.ViTModel(transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        image_size=64, patch_size=16))
"""


@pytest.fixture
def factories(tmp_path, monkeypatch):
    (tmp_path / "tiny_hf.py").write_text(FACTORIES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delitem(sys.modules, "tiny_hf", raising=False)
    return tmp_path


@pytest.mark.parametrize(("model", "units"), [("bert", 64), ("gpt2", 128)])
def test_diagnose_on_token_data_from_an_npz(factories, capsys, model, units):
    import pandas as pd

    ids = np.random.default_rng(0).integers(1, VOCAB, (10, 16)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[::2, 12:] = 0  # every other sequence padded after 12 tokens
    np.savez(factories / "tokens.npz", input_ids=ids, attention_mask=mask)
    out = factories / "report"
    args = ["diagnose", f"tiny_hf:{model}", "--data", "tokens.npz", "--batch-size", "4"]
    assert cli.main([*args, "--compare-inits", "default,kaiming_normal", "--out", str(out)]) == 0
    frame = pd.read_csv(out / "probe.csv")
    gelu = frame[frame["kind"].str.contains("GELU")]
    assert set(gelu["units"]) == {units} and set(gelu["unit_axis_rule"]) == {"producer"}
    assert "effective_rank_token_centred" in set(frame["metric"])
    html = (out / "report.html").read_text()
    assert "Activation calls" in html and "input_ids (10, 16)" in html and "sample cap" in html
    printed = capsys.readouterr().out
    assert "activation calls" in printed and "never_positive_fraction" in printed


def test_diagnose_refuses_a_vit_on_the_guessed_image_size_in_one_line(factories, capsys):
    before = sorted(p.name for p in factories.iterdir())
    assert cli.main(["diagnose", "tiny_hf:vit"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Gaussian samples of shape 3×32×32" in err
    assert "relulab's guess" in err and "--input-shape" in err and "64*64" in err
    assert sorted(p.name for p in factories.iterdir()) == before, "nothing written"
    assert cli.main(["diagnose", "tiny_hf:vit", "--input-shape", "3,64,64", "--samples", "4"]) == 0
    assert (factories / "runs" / "diagnose-tiny_hf-vit" / "report.html").is_file()


def test_diagnose_makes_up_token_ids_for_a_language_model(factories):
    assert cli.main(["diagnose", "tiny_hf:gpt2", "--samples", "8", "--input-shape", "16"]) == 0
    html = (factories / "runs" / "diagnose-tiny_hf-gpt2" / "report.html").read_text()
    assert "random token ids, sequences of 16 (given by --input-shape)" in html
