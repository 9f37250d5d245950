"""What the catalogue's tables decide on a set of models — the probe's calls, the initialisers'
blocks, replace_activations' findings — as plain data: tests/nn/catalogue_snapshot.json holds it as
computed by the code before the catalogue (issue 48), and test_catalogue compares."""

from __future__ import annotations

import warnings

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from relulab.init.layers import model_blocks
from relulab.nn import ReLUMinusB, replace_activations
from relulab.nn.examples import deep_mlp, small_cnn
from relulab.probe import probe


class _Functional(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.up = nn.ConvTranspose1d(6, 3, 2)
        self.act = nn.SiLU()

    def forward(self, x):
        h = F.leaky_relu(self.fc(x)) + torch.tanh(self.fc(x)).relu()
        return self.act(self.up(F.elu(h).unsqueeze(-1)))


def _hf_models() -> dict[str, tuple[nn.Module, object]]:
    try:
        import transformers
    except ImportError:
        return {}
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (3, 7))
    gpt2 = {
        f"gpt2_{act}": transformers.GPT2Model(
            transformers.GPT2Config(vocab_size=50, n_embd=16, n_layer=2, n_head=2, n_positions=16,
                                    n_inner=32, activation_function=act, bos_token_id=0,
                                    eos_token_id=0)
        )
        for act in ("gelu_new", "relu", "quick_gelu")
    }  # fmt: skip
    bert = transformers.BertModel(
        transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=32,
                                max_position_embeddings=16, hidden_act="gelu")
    )  # fmt: skip
    return {name: (model, {"input_ids": ids}) for name, model in {**gpt2, "bert": bert}.items()}


def models() -> dict[str, tuple[nn.Module, object]]:
    """Name → (model, data), built from seed 0."""
    torch.manual_seed(0)
    encoder = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    found = {
        "deep_mlp": (deep_mlp(3, 16, 8), torch.randn(6, 8)),
        "small_cnn": (small_cnn(), torch.randn(4, 3, 32, 32)),
        "functional": (_Functional(), torch.randn(5, 4)),
        "encoder": (nn.Sequential(encoder, nn.GELU()), torch.randn(3, 5, 8)),
        "relu_b": (
            nn.Sequential(nn.Linear(3, 4), ReLUMinusB(0.1), nn.Linear(4, 2)),
            torch.randn(6, 3),
        ),
    }
    return {**found, **_hf_models()}


def fingerprint(model: nn.Module, data: object) -> dict:
    """The probe's layers, the initialisers' blocks and replace_activations' findings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = probe(model, data, max_rank_samples=2)
    layers = [
        [layer.name, layer.kind, layer.family, layer.unit_axis, layer.unit_axis_rule,
         layer.producer, layer.kinks is not None]
        for layer in result.layers
    ]  # fmt: skip
    blocks = [[b.name, b.kind, b._layout, b.features_last, b.role] for b in model_blocks(model)]
    found = {"layers": layers, "blocks": blocks}
    if isinstance(data, torch.Tensor):
        for types in ((nn.ReLU,), (nn.SiLU,), (nn.GELU,)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                record = replace_activations(model, nn.Identity, types, example_input=data)
            found[types[0].__name__] = [
                record.names, record.functional_sources, record.functional_calls,
                record.repeated_calls,
            ]  # fmt: skip
            record.undo()
    return found


def all_fingerprints() -> dict:
    return {name: fingerprint(model, data) for name, (model, data) in models().items()}


if __name__ == "__main__":
    import json
    import sys

    json.dump(all_fingerprints(), sys.stdout, indent=1)
