"""Model-level initialisers on real architectures: HuggingFace BERT, GPT-2 (Conv1D), T5 encoder
(bias-free), ViT, ConvNeXt, torch's TransformerEncoder (MultiheadAttention) and transposed
convolutions — built from small configs, never downloaded.

Every registered scheme sets exactly the layers it should and lists every other weight; the
data-dependent schemes reach their targets on the layers they set, in one early-stopped pass;
batches come as DataLoaders or dicts; bias-free layers and constant inputs are handled."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from relulab import init
from relulab.init.data import calibration_mode
from relulab.init.layers import model_blocks
from relulab.init.model import ConstantInputWarning

transformers = pytest.importorskip("transformers")

D, FF, LAYERS, HEADS, VOCAB = 32, 64, 2, 2, 50
NOT_A_LAYER = "not a layer the initialisers set ({})"


@dataclass
class Case:
    """A model factory, its data, and what an initialiser must set and leave."""

    build: Callable[[], nn.Module]
    data: Callable[[], object]
    layers: list[str]  # every block set by default, module order
    untouched: dict[str, str]  # parameter name -> owner class
    has_biases: bool = True
    tied: dict[str, str] = field(default_factory=dict)  # parameter name -> its other names


def _ids(n: int = 4, t: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (n, t), generator=torch.Generator().manual_seed(seed))


def _images(n: int = 4, size: int = 16, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _each(pattern: str, *kinds: tuple[str, str]) -> dict[str, str]:
    """``{pattern.format(i, name): kind}`` for every layer i and every (name, kind)."""
    return {pattern.format(i, name): kind for i in range(LAYERS) for name, kind in kinds}


def _norm(prefix: str, kind: str = "LayerNorm") -> dict[str, str]:
    return {f"{prefix}.weight": kind, f"{prefix}.bias": kind}


def bert() -> Case:
    config = transformers.BertConfig(
        hidden_size=D,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=FF,
        vocab_size=VOCAB,
        max_position_embeddings=16,
    )
    per_layer = [
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "intermediate.dense",
        "output.dense",
    ]
    untouched = {
        "embeddings.word_embeddings.weight": "Embedding",
        "embeddings.position_embeddings.weight": "Embedding",
        "embeddings.token_type_embeddings.weight": "Embedding",
        **_norm("embeddings.LayerNorm"),
    }
    for i in range(LAYERS):
        untouched |= _norm(f"encoder.layer.{i}.attention.output.LayerNorm")
        untouched |= _norm(f"encoder.layer.{i}.output.LayerNorm")
    return Case(
        lambda: transformers.BertModel(config),
        lambda: {"input_ids": _ids(), "attention_mask": torch.ones(4, 6, dtype=torch.long)},
        [f"encoder.layer.{i}.{name}" for i in range(LAYERS) for name in per_layer]
        + ["pooler.dense"],
        untouched,
    )


def gpt2() -> Case:
    config = transformers.GPT2Config(
        n_embd=D, n_layer=LAYERS, n_head=HEADS, vocab_size=VOCAB, n_positions=16,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    untouched = {"wte.weight": "Embedding", "wpe.weight": "Embedding"}
    for i in range(LAYERS):
        untouched |= _norm(f"h.{i}.ln_1") | _norm(f"h.{i}.ln_2")
    untouched |= _norm("ln_f")
    layers = ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]
    return Case(
        lambda: transformers.GPT2Model(config),
        lambda: {"input_ids": _ids()},
        [f"h.{i}.{name}" for i in range(LAYERS) for name in layers],
        untouched,
    )


def t5() -> Case:
    config = transformers.T5Config(
        d_model=D, d_kv=D // HEADS, d_ff=FF, num_layers=LAYERS, num_heads=HEADS,
        vocab_size=VOCAB, dropout_rate=0.0,
    )  # fmt: skip
    attention = [f"layer.0.SelfAttention.{p}" for p in "qkvo"]
    layers = [f"encoder.block.{i}.{n}" for i in range(LAYERS) for n in attention + [
        "layer.1.DenseReluDense.wi", "layer.1.DenseReluDense.wo"]]  # fmt: skip
    untouched = {
        "shared.weight": "Embedding",
        "encoder.embed_tokens.weight": "Embedding",  # the same tensor: listed under both names
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight": "Embedding",
    }
    for i in range(LAYERS):
        untouched[f"encoder.block.{i}.layer.0.layer_norm.weight"] = "T5LayerNorm"
        untouched[f"encoder.block.{i}.layer.1.layer_norm.weight"] = "T5LayerNorm"
    untouched["encoder.final_layer_norm.weight"] = "T5LayerNorm"
    return Case(
        lambda: transformers.T5EncoderModel(config),
        lambda: {"input_ids": _ids()},
        layers,
        untouched,
        has_biases=False,
        tied={
            "shared.weight": "encoder.embed_tokens.weight",
            "encoder.embed_tokens.weight": "shared.weight",
        },
    )


def vit() -> Case:
    config = transformers.ViTConfig(
        hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=FF, image_size=16, patch_size=4,
    )  # fmt: skip
    per_layer = ["q_proj", "k_proj", "v_proj", "o_proj"]
    model = transformers.ViTModel(config)
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear | nn.Conv2d)]
    assert any(n.endswith(per_layer[0]) for n in names)  # the layout this case was written for
    untouched = {
        "embeddings.cls_token": "ViTEmbeddings",
        "embeddings.position_embeddings": "ViTEmbeddings",
    }
    for i in range(LAYERS):
        untouched |= _norm(f"layers.{i}.layernorm_before") | _norm(f"layers.{i}.layernorm_after")
    untouched |= _norm("layernorm")
    return Case(lambda: transformers.ViTModel(config), _images, names, untouched)


def convnext() -> Case:
    config = transformers.ConvNextConfig(
        num_channels=3, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, image_size=16
    )
    try:
        transformers.ConvNextModel(config)
    except Exception as error:  # pragma: no cover - depends on the installed extras
        pytest.skip(f"ConvNextModel does not build here: {error}")
    stages = [f"encoder.stages.{s}.layers.0" for s in range(2)]
    layers = ["embeddings.patch_embeddings"]
    layers += [f"{stages[0]}.{n}" for n in ("dwconv", "pwconv1", "pwconv2")]
    layers += ["encoder.stages.1.downsampling_layer.1"]
    layers += [f"{stages[1]}.{n}" for n in ("dwconv", "pwconv1", "pwconv2")]
    untouched = _norm("embeddings.layernorm", "ConvNextLayerNorm")
    untouched[f"{stages[0]}.layer_scale_parameter"] = "ConvNextLayer"
    untouched |= _norm(f"{stages[0]}.layernorm", "ConvNextLayerNorm")
    untouched |= _norm("encoder.stages.1.downsampling_layer.0", "ConvNextLayerNorm")
    untouched[f"{stages[1]}.layer_scale_parameter"] = "ConvNextLayer"
    untouched |= _norm(f"{stages[1]}.layernorm", "ConvNextLayerNorm")
    untouched |= _norm("layernorm")
    return Case(lambda: transformers.ConvNextModel(config), _images, layers, untouched)


def torch_encoder() -> Case:
    def build() -> nn.Module:
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)

    attention = [f"self_attn.in_proj[{p}]" for p in "qkv"] + ["self_attn.out_proj"]
    layers = [f"layers.{i}.{n}" for i in range(LAYERS) for n in attention + ["linear1", "linear2"]]
    untouched = _each("layers.{}.{}", *((f"norm{k}.{p}", "LayerNorm") for k in (1, 2)
                                        for p in ("weight", "bias")))  # fmt: skip
    return Case(build, lambda: torch.randn(4, 6, D, generator=torch.Generator().manual_seed(0)),
                layers, untouched)  # fmt: skip


def conv_transpose() -> Case:
    def build() -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1, groups=2),
            nn.ReLU(),
            nn.ConvTranspose2d(4, 2, 3, padding=1),
        )

    return Case(build, lambda: _images(size=8), ["0", "3", "5"], _norm("1", "BatchNorm2d"))


CASES = {
    "bert": bert,
    "gpt2": gpt2,
    "t5": t5,
    "vit": vit,
    "convnext": convnext,
    "torch_encoder": torch_encoder,
    "conv_transpose": conv_transpose,
}
DATA_DEPENDENT = [name for name, s in init.SCHEMES.items() if s.data_dependent]


def _fresh(case: Case, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return case.build()


def _expected_untouched(case: Case) -> list[tuple[str, str]]:
    def reason(name: str, kind: str) -> str:
        tie = f"; tied to {case.tied[name]}" if name in case.tied else ""
        return NOT_A_LAYER.format(kind) + tie

    return sorted((name, reason(name, kind)) for name, kind in case.untouched.items())


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter by each of its names (a tied one under all of them)."""
    return {name: p.detach().clone() for name, p in model.named_parameters(remove_duplicate=False)}


# ---------------------------------------------------------------------------------------------
# Every registered scheme on every architecture.
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", init.MODEL_INITS)
@pytest.mark.parametrize("name", CASES)
def test_every_scheme_sets_every_layer_and_lists_every_other_weight(name, scheme):
    case = CASES[name]()
    model = _fresh(case)
    before = _state(model)
    needs_bias = init.SCHEMES[scheme].requires_bias
    if needs_bias and not case.has_biases:
        with pytest.raises(init.InitNotApplicableError, match="have none"):
            init.apply_init_(model, scheme, case.data(), torch.Generator().manual_seed(1))
        assert all(torch.equal(before[n], p) for n, p in model.named_parameters())
        return
    report = init.apply_init_(model, scheme, case.data(), torch.Generator().manual_seed(1))
    assert sorted(row.layer for row in report) == sorted(case.layers)
    assert sorted((w.name, w.reason) for w in report.untouched) == _expected_untouched(case)
    for weight in report.untouched:
        assert tuple(before[weight.name].shape) == weight.shape
    after = dict(model.named_parameters(remove_duplicate=False))
    for param in case.untouched:  # left exactly as they were
        assert torch.equal(before[param], after[param]), param
    for block in model_blocks(model):  # every layer weight written
        assert not torch.equal(block.stored, _rows(before, block)), block.name
    frame = report.to_frame()
    assert list(frame["status"]).count("untouched") == len(case.untouched)
    assert "left untouched:" in str(report) or not case.untouched


def _rows(state: dict[str, torch.Tensor], block) -> torch.Tensor:
    name = block.weight_name.split("[")[0]
    weight = state[name]
    return weight if block._rows is None else weight[block._rows]


# ---------------------------------------------------------------------------------------------
# Data-dependent targets, measured independently of the initialisers.
# ---------------------------------------------------------------------------------------------
def _measure(model: nn.Module, data: object) -> dict[str, torch.Tensor]:
    """Each block's output on ``data`` (features on axis 1): dropout off, BatchNorm on batch
    statistics (the models are built in train mode)."""
    outputs: dict[str, torch.Tensor] = {}
    names = {id(m): n for n, m in model.named_modules()}
    attention_outs = {
        id(m.out_proj) for m in model.modules() if isinstance(m, nn.MultiheadAttention)
    }

    def layer_hook(module, args, output):
        features_last = isinstance(module, nn.Linear) or type(module).__name__ == "Conv1D"
        u = output.movedim(-1, 1) if features_last and output.dim() > 2 else output
        outputs.setdefault(names[id(module)], u)

    def attention_pre(module, args, kwargs):
        d = module.embed_dim
        for i, label in enumerate("qkv"):
            x = args[i] if i < len(args) else kwargs[("query", "key", "value")[i]]
            w = module.in_proj_weight[i * d : (i + 1) * d]
            b = module.in_proj_bias[i * d : (i + 1) * d]
            u = nn.functional.linear(x, w, b).movedim(-1, 1)
            outputs.setdefault(f"{names[id(module)]}.in_proj[{label}]", u)

    def attention_post(module, args, output):
        outputs.setdefault(f"{names[id(module)]}.out_proj", output[0].movedim(-1, 1))

    hooks = []
    for module in model.modules():
        if isinstance(module, nn.MultiheadAttention):
            hooks.append(module.register_forward_pre_hook(attention_pre, with_kwargs=True))
            hooks.append(module.register_forward_hook(attention_post))
        elif (
            id(module) not in attention_outs
            and hasattr(module, "weight")
            and (
                isinstance(module, nn.Linear | nn.Conv2d | nn.ConvTranspose2d)
                or type(module).__name__ == "Conv1D"
            )
        ):
            hooks.append(module.register_forward_hook(layer_hook))
    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    model.eval()
    for module in model.modules():  # batch statistics, as the model (in train mode) normalises
        if isinstance(module, nn.BatchNorm2d):
            module.train()
    try:
        with torch.no_grad():
            model(**data) if isinstance(data, dict) else model(data)
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)
        for hook in hooks:
            hook.remove()
    return outputs


def _sample_dims(u: torch.Tensor) -> tuple[int, ...]:
    return (0,) + tuple(range(2, u.dim()))


TARGETS = {
    "scale": lambda u: abs(u.square().mean().item() - 1) < 1e-3,
    "scale_bias": lambda u: (
        u.mean(dim=_sample_dims(u)).abs().max().item() < 1e-3
        and abs(u.square().mean().item() - 1) < 1e-3
    ),
    "scale_bias_per_feature": lambda u: (
        u.mean(dim=_sample_dims(u)).abs().max().item() < 1e-3
        and (u.var(dim=_sample_dims(u), unbiased=False) - 1).abs().max().item() < 1e-2
    ),
    "lsuv": lambda u: abs(u.var().item() - 1) < 0.021,
}


def _apply(scheme: str, model: nn.Module, data: object, **options):
    generator = torch.Generator().manual_seed(2)
    if scheme == "scale_bias_per_feature":
        return init.scale_bias_(model, data, per_feature=True, generator=generator, **options)
    return init.apply_init_(model, scheme, data, generator) if not options else getattr(
        init, f"{scheme}_")(model, data, generator=generator, **options)  # fmt: skip


@pytest.mark.parametrize("scheme", list(TARGETS))
@pytest.mark.parametrize("name", CASES)
def test_data_dependent_schemes_reach_their_targets_on_every_layer_they_set(name, scheme):
    case = CASES[name]()
    model = _fresh(case).double()
    data = case.data()
    if isinstance(data, torch.Tensor):
        data = data.double()
    options = {"bias_free": "add"} if scheme.startswith("scale_bias") else {}
    if case.has_biases:
        options = {}
    report = _apply(scheme, model, data, **options)
    outputs = _measure(model, data)
    assert [row.layer for row in report] == [n for n in outputs if n in set(case.layers)]
    for row in report:
        assert TARGETS[scheme](outputs[row.layer]), (row.layer, row)


# ---------------------------------------------------------------------------------------------
# One forward pass, stopped after the last layer set.
# ---------------------------------------------------------------------------------------------
def _count_calls(model: nn.Module) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            counts[name] = 0
            module.register_forward_hook(lambda m, i, o, name=name: counts.__setitem__(
                name, counts[name] + 1))  # fmt: skip
    return counts


@pytest.mark.parametrize("scheme", DATA_DEPENDENT)
def test_one_pass_executes_every_layer_once_and_stops_after_the_last_one_set(scheme):
    case = bert()
    model = _fresh(case)
    counts = _count_calls(model)
    report = init.apply_init_(model, scheme, case.data(), exclude="pooler")
    assert "pooler.dense" not in [row.layer for row in report]
    assert counts.pop("pooler.dense") == 0  # the pass stopped before the pooler
    assert set(counts.values()) == {1}  # every other layer ran once: one forward pass
    reasons = {w.name: w.reason for w in report.untouched}
    assert reasons["pooler.dense.weight"] == "excluded by exclude='pooler'"


def test_capture_stops_the_forward_at_the_module():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    counts = _count_calls(model)
    assert init.model.capture(model, model[0], torch.randn(5, 3)).shape == (5, 4)
    assert counts == {"0": 1, "2": 0}


def test_relu_shift_calibration_is_one_pass():
    from relulab.nn import ReLUMinusB

    model = nn.Sequential(nn.Linear(3, 8), ReLUMinusB(0.0), nn.Linear(8, 8), ReLUMinusB(0.0))
    counts = _count_calls(model)
    x = torch.randn(64, 3, generator=torch.Generator().manual_seed(0))
    init.calibrate_relu_shift_(model, x)
    assert counts == {"0": 1, "2": 1}
    with torch.no_grad():
        h = model(x)
    torch.testing.assert_close(h.mean(dim=0), torch.zeros(8), atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------------------------
# Data: DataLoaders, lists, dict batches.
# ---------------------------------------------------------------------------------------------
def test_a_dataloader_is_its_batches_joined():
    case = torch_encoder()
    x = torch.randn(12, 6, D, generator=torch.Generator().manual_seed(3))
    loader = DataLoader(TensorDataset(x, torch.zeros(12)), batch_size=4)  # (input, label)
    joined, batched = _fresh(case), _fresh(case)
    init.scale_bias_(joined, x, generator=torch.Generator().manual_seed(0))
    init.scale_bias_(batched, loader, generator=torch.Generator().manual_seed(0))
    for a, b in zip(joined.parameters(), batched.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    first = _fresh(case)
    init.scale_bias_(first, loader, generator=torch.Generator().manual_seed(0), max_batches=1)
    reference = _fresh(case)
    init.scale_bias_(reference, x[:4], generator=torch.Generator().manual_seed(0))
    for a, b in zip(first.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_dict_batches_from_a_list_or_a_dataloader():
    case = bert()
    batches = [{"input_ids": _ids(seed=s), "attention_mask": torch.ones(4, 6, dtype=torch.long)}
               for s in range(3)]  # fmt: skip
    joined = {key: torch.cat([b[key] for b in batches]) for key in batches[0]}
    models = [_fresh(case) for _ in range(3)]
    sources = [joined, batches, DataLoader(batches, batch_size=None)]
    for model, data in zip(models, sources, strict=True):
        init.lsuv_(model, data, generator=torch.Generator().manual_seed(0))
    for other in models[1:]:
        for a, b in zip(models[0].parameters(), other.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(ValueError, match="pad them to one length"):
        init.scale_(_fresh(case), [{"input_ids": _ids(t=5)}, {"input_ids": _ids(t=6)}])


# ---------------------------------------------------------------------------------------------
# Bias-free layers.
# ---------------------------------------------------------------------------------------------
def test_scale_bias_on_bias_free_layers_says_what_to_use_and_changes_nothing():
    case = t5()
    model = _fresh(case)
    before = _state(model)
    with pytest.raises(init.InitNotApplicableError) as error:
        init.scale_bias_(model, case.data())
    message = str(error.value)
    assert "encoder.block.0.layer.0.SelfAttention.q (Linear)" in message
    for option in ("bias_free='add'", "bias_free='scale'", "exclude=", "scale_", "lsuv_"):
        assert option in message
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters())


def test_bias_free_add_gives_zero_mean_features_and_scale_only_scales():
    case = t5()
    added = _fresh(case)
    report = init.scale_bias_(added, case.data(), bias_free="add")
    assert {row.note for row in report} == {"bias added"}
    assert all(block.bias is not None for block in model_blocks(added))
    for row in report:
        assert TARGETS["scale_bias"](_measure(added, case.data())[row.layer]), row.layer
    scaled = _fresh(case)
    report = init.scale_bias_(scaled, case.data(), bias_free="scale")
    assert {row.note for row in report} == {"no bias: scaled, not centred"}
    assert all(block.bias is None for block in model_blocks(scaled))
    outputs = _measure(scaled, case.data())
    assert all(TARGETS["scale"](outputs[row.layer]) for row in report)
    with pytest.raises(ValueError, match="bias_free must be one of"):
        init.scale_bias_(scaled, case.data(), bias_free="centre")


def test_bias_free_convolutions_before_batchnorm():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 4, 3))  # fmt: skip
    x = _images(8, 10)
    stats = [b.clone() for b in model[1].buffers()]
    report = init.scale_bias_(model, x, bias_free="scale")
    assert [row.note for row in report] == ["no bias: scaled, not centred", None]
    assert all(torch.equal(a, b) for a, b in zip(stats, model[1].buffers(), strict=True))
    assert model.training and model[1].training


# ---------------------------------------------------------------------------------------------
# Constant inputs.
# ---------------------------------------------------------------------------------------------
class TimeConditioned(nn.Module):
    """A diffusion-style block: a time embedding the same for every sample of the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.time_embedding = nn.Linear(8, 16)
        self.inp = nn.Linear(4, 16)
        self.out = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.linspace(0, 1, 8).expand(x.shape[0], 8)
        return self.out(torch.relu(self.inp(x) + self.time_embedding(t)))


@pytest.mark.parametrize("scheme", ["scale_bias", "scale_bias_per_feature"])
def test_a_layer_with_a_constant_input_is_left_as_it_was_with_a_warning(scheme):
    model = TimeConditioned()
    before = _state(model)
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    with pytest.warns(ConstantInputWarning, match="'time_embedding'"):
        report = _apply(scheme, model, x)
    assert [row.layer for row in report] == ["inp", "out"]
    for param in ("time_embedding.weight", "time_embedding.bias"):
        assert torch.equal(before[param], dict(model.named_parameters())[param])
    reasons = {w.name: w.reason for w in report.untouched}
    assert set(reasons) == {"time_embedding.weight", "time_embedding.bias"}
    assert reasons["time_embedding.weight"].startswith("input constant over the data")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.scale_(TimeConditioned(), x)  # a constant output is scaled, not zeroed: no warning


@pytest.mark.parametrize("scheme", DATA_DEPENDENT)
def test_a_zero_input_is_left_by_every_scheme(scheme):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    first = model[0].weight.detach().clone()
    with pytest.warns(ConstantInputWarning) as caught:
        report = init.apply_init_(model, scheme, torch.zeros(16, 4))
    assert "layer '0' (Linear)" in str(caught[0].message)
    assert torch.equal(model[0].weight, first)
    if scheme == "scale_bias":  # layer 2's input, ReLU(layer 0's bias), is constant too
        assert [w.name for w in report.untouched] == ["0.weight", "0.bias", "2.weight", "2.bias"]
        return
    assert [w.name for w in report.untouched] == ["0.weight", "0.bias"]
    assert [row.layer for row in report] == ["2"]  # set on the untouched layer's output


# ---------------------------------------------------------------------------------------------
# Filters, layouts, reports.
# ---------------------------------------------------------------------------------------------
def test_include_and_exclude_by_glob_regex_and_predicate():
    case = bert()
    model = _fresh(case)
    report = init.init_model_(model, "kaiming_normal", include="encoder.layer.0")
    assert [r.layer for r in report] == case.layers[:6]
    report = init.init_model_(model, "normal", exclude=re.compile(r"\.(query|key)$"))
    assert not any(r.layer.endswith(("query", "key")) for r in report) and len(report) == 9
    reasons = {w.name: w.reason for w in report.untouched}
    assert reasons["encoder.layer.1.attention.self.key.bias"] == (
        "excluded by exclude=re.compile('\\\\.(query|key)$')"
    )

    def wide(name: str, module: nn.Module) -> bool:
        return module.weight.shape[0] == FF

    report = init.lsuv_(model, case.data(), include=wide)
    assert [r.layer for r in report] == [f"encoder.layer.{i}.intermediate.dense" for i in (0, 1)]
    with pytest.raises(ValueError, match="no layer left to initialise"):
        init.scale_(model, case.data(), include="nothing")


def test_a_head_tied_to_an_embedding_is_left_to_it():
    config = transformers.GPT2Config(n_embd=D, n_layer=1, n_head=HEADS, vocab_size=VOCAB,
                                     n_positions=16, bos_token_id=0, eos_token_id=0)  # fmt: skip
    model = transformers.GPT2LMHeadModel(config)
    embedding = model.transformer.wte.weight.detach().clone()
    report = init.init_model_(model, "kaiming_normal")
    assert torch.equal(model.transformer.wte.weight, embedding)
    reasons = {w.name: w.reason for w in report.untouched}
    assert (
        reasons["lm_head.weight"]
        == "tied to transformer.wte.weight (Embedding): left to that module"
    )
    # issue 46: the embedding itself was in neither list; now listed, its tie stated
    assert reasons["transformer.wte.weight"] == (
        "not a layer the initialisers set (Embedding); tied to lm_head.weight"
    )
    assert [w.name for w in report.untouched].count("transformer.wte.weight") == 1
    assert "transformer.wte.weight" in str(report)


def test_a_weight_shared_by_two_layers_is_set_once_and_says_so():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    model[2].weight = model[0].weight
    report = init.init_model_(model, "kaiming_normal", torch.Generator().manual_seed(0))
    assert [row.layer for row in report] == ["0"]
    assert report[0].note == "weight tied to 2.weight (Linear): set once, here"
    (bias,) = report.untouched  # the second layer's own bias: left, and why
    assert bias.name == "2.bias" and "tied to another layer's and set there" in bias.reason


def test_forward_layouts_compute_what_the_layers_compute():
    x = torch.randn(2, 4, 5, 5, generator=torch.Generator().manual_seed(0))
    deconv = nn.ConvTranspose2d(4, 6, 3, groups=2)
    (block,) = model_blocks(deconv)
    weight = block.read()
    assert weight.shape == (6, 2, 3, 3) and block.shape == (6, 2, 3, 3)
    as_conv = nn.functional.conv2d(x, weight.flip(-1, -2), deconv.bias, padding=2, groups=2)
    torch.testing.assert_close(deconv(x), as_conv)
    block.store(weight * 2)
    torch.testing.assert_close(block.read(), weight * 2)
    gpt = transformers.GPT2Model(transformers.GPT2Config(n_embd=8, n_layer=1, n_head=2,
                                 vocab_size=VOCAB, bos_token_id=0, eos_token_id=0))  # fmt: skip
    conv1d = gpt.h[0].mlp.c_fc
    (block,) = model_blocks(conv1d)
    h = torch.randn(3, 8)
    torch.testing.assert_close(conv1d(h), nn.functional.linear(h, block.read(), block.bias))
    assert init.fans(block.read()) == (8, 32)


def test_kaiming_on_a_transposed_convolution_uses_the_forward_fan_in():
    deconv = nn.ConvTranspose2d(64, 32, 4, groups=2)
    init.init_model_(deconv, "kaiming_normal", torch.Generator().manual_seed(0))
    fan_in = 64 // 2 * 16  # in/groups × kernel, not torch's (out/groups) × kernel
    assert deconv.weight.var().item() * fan_in == pytest.approx(2.0, rel=0.05)


def test_calibration_mode_restores_flags_running_statistics_and_the_fast_path():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5), nn.BatchNorm1d(3))
    model[1].eval()
    statistics = [b.clone() for b in model[2].buffers()]
    fast = torch.backends.mha.get_fastpath_enabled()
    with calibration_mode(model):
        assert not model[1].training and model[2].training
        assert not torch.backends.mha.get_fastpath_enabled()
        model(torch.randn(8, 3))
    assert [m.training for m in model] == [True, False, True]
    assert all(torch.equal(a, b) for a, b in zip(statistics, model[2].buffers(), strict=True))
    assert torch.backends.mha.get_fastpath_enabled() == fast
