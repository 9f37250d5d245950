r"""The deliberately broken networks of ``relulab bench remedies`` (:mod:`relulab.bench.remedies`):
their data, their architectures and how each is broken.

Every case is one small network with one symptom the advice names, trained on a task it can
learn when healthy:

* the MLP cases regress a teacher, :math:`y = \tanh(x_0 W_1)\,w_2 + 0.05\,\epsilon` with
  :math:`x_0 \sim N(0, I_{16})`, :math:`W_1` 16 × 32 and :math:`w_2` of entries
  :math:`N(0, 1/16)` and :math:`N(0, 1/32)` (mean squared error); the network sees
  :math:`x = x_0` — or, for the input cases, :math:`x_0 + 10` (*shifted*) or :math:`x_0`
  scaled per feature by :math:`10^{-1.5} … 10^{1.5}` (*unscaled*);
* the transformer case classifies token sequences (16 tokens of 16, a first ``[CLS]`` token):
  which of tokens 1, 2 and 3 occurs most often (cross-entropy).

Each case seeds its data, its network and its batches from the seed alone, so every arm of a
seed (untreated, each remedy) sees the same task, the same draws and the same batches: the
comparisons are paired.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from relulab import init
from relulab.nn.models import MLP, residual_block

__all__ = [
    "CASES",
    "Case",
    "PoolerTransformer",
    "ResidualMLP",
    "Size",
    "Split",
    "sequence_data",
    "teacher_data",
]


@dataclass(frozen=True)
class Size:
    """The sizes of the benchmark (:data:`relulab.bench.remedies.FULL`, ``QUICK``).

    Attributes:
        seeds: paired networks per arm.
        steps: Adam steps per network.
        train: training samples; test: held-out samples.
        batch: samples per step.
        inputs: input features of the MLP cases.
        width: hidden width; depth: hidden layers of the MLP cases; deep: of the deep case.
        tokens: sequence length; vocabulary: token ids; d_model, heads, layers: the
            transformer's.
        lr: Adam's learning rate; high_lr: the one that kills units.
        every: the steps between the monitor's measurements (the learning-rate case).
        warmup: the warmup's steps.
    """

    seeds: int = 8
    steps: int = 300
    train: int = 512
    test: int = 2048
    batch: int = 64
    inputs: int = 16
    width: int = 64
    depth: int = 4
    deep: int = 40
    tokens: int = 16
    vocabulary: int = 16
    d_model: int = 32
    heads: int = 4
    layers: int = 2
    lr: float = 3e-3
    high_lr: float = 0.1
    every: int = 25
    warmup: int = 100


@dataclass(frozen=True)
class Split:
    """A task's data: training and held-out inputs and targets."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor


def teacher_data(seed: int, size: Size, transform: str = "none") -> Split:
    """The MLP cases' regression task (module docstring), its inputs transformed.

    Args:
        seed: draws the teacher, the inputs and the noise.
        size: the sizes.
        transform: ``"none"``, ``"shift"`` (+10 on every feature) or ``"scale"`` (feature
            :math:`j` times :math:`10^{-1.5 + 3j/(d-1)}`).

    Returns:
        A :class:`Split`, targets of shape ``(N, 1)``.

    Example:
        >>> split = teacher_data(0, Size(train=8, test=4), "shift")
        >>> split.x_train.shape, split.y_test.shape, float(split.x_train.mean()) > 9
        (torch.Size([8, 16]), torch.Size([4, 1]), True)
    """
    generator = torch.Generator().manual_seed(10_000 + seed)
    d, hidden = size.inputs, 32
    w1 = torch.randn(d, hidden, generator=generator) / d**0.5
    w2 = torch.randn(hidden, 1, generator=generator) / hidden**0.5
    x = torch.randn(size.train + size.test, d, generator=generator)
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(len(x), 1, generator=generator)
    if transform == "shift":
        x = x + 10.0
    elif transform == "scale":
        x = x * torch.logspace(-1.5, 1.5, d)
    elif transform != "none":
        raise ValueError(f"unknown transform {transform!r}")
    n = size.train
    return Split(x[:n], y[:n], x[n:], y[n:])


def sequence_data(seed: int, size: Size) -> Split:
    """The transformer case's task (module docstring): token ids ``(N, T)``, position 0 the
    ``[CLS]`` token 0, the others uniform in ``[1, vocabulary)``; the label is which of tokens
    1, 2, 3 occurs most often (the smallest on a tie).

    Example:
        >>> split = sequence_data(0, Size(train=8, test=4))
        >>> split.x_train.shape, split.x_train[:, 0].tolist() == [0] * 8, split.y_train.dtype
        (torch.Size([8, 16]), True, torch.int64)
    """
    generator = torch.Generator().manual_seed(20_000 + seed)
    n = size.train + size.test
    ids = torch.randint(1, size.vocabulary, (n, size.tokens), generator=generator)
    ids[:, 0] = 0
    counts = torch.stack([(ids == token).sum(dim=1) for token in (1, 2, 3)], dim=1)
    labels = counts.argmax(dim=1)
    return Split(ids[: size.train], labels[: size.train], ids[size.train :], labels[size.train :])


class ResidualMLP(nn.Module):
    """The deep case's practitioner fix: a Linear into the width, then pre-LayerNorm residual
    blocks :math:`h + \\mathrm{fc}_2(\\mathrm{ReLU}(\\mathrm{fc}_1(\\mathrm{LN}(h))))`
    (:func:`relulab.nn.models.residual_block`) — two Linears per block, so ``depth`` hidden
    Linears in ``depth // 2`` blocks, as many as the plain MLP's — then a Linear readout."""

    def __init__(self, inputs: int, width: int, depth: int) -> None:
        super().__init__()
        self.embed = nn.Linear(inputs, width)
        blocks = max(depth // 2, 1)
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.fc1 = nn.ModuleList(nn.Linear(width, width) for _ in range(blocks))
        self.fc2 = nn.ModuleList(nn.Linear(width, width) for _ in range(blocks))
        self.relu = nn.ReLU()
        self.readout = nn.Linear(width, 1)

    def forward(self, x: Tensor) -> Tensor:
        """``(N, inputs)`` → ``(N, 1)``."""
        h = self.embed(x)
        for norm, fc1, fc2 in zip(self.norms, self.fc1, self.fc2, strict=True):
            h = residual_block(h, fc1, fc2, self.relu, "pre", 1.0, norm).stream
        return self.readout(h)


class PoolerTransformer(nn.Module):
    """A small BERT-like classifier: token and position embeddings, post-LN
    ``nn.TransformerEncoderLayer`` s (GELU), then either BERT's pooler — a Linear and a Tanh on
    the first (``[CLS]``) token — or, as the practitioner's alternative, the mean over tokens;
    a Linear to the classes."""

    def __init__(self, size: Size, classes: int = 3, pooling: str = "cls") -> None:
        super().__init__()
        d = size.d_model
        self.pooling = pooling
        self.tokens = nn.Embedding(size.vocabulary, d)
        self.positions = nn.Embedding(size.tokens, d)
        layer = nn.TransformerEncoderLayer(
            d, size.heads, 2 * d, dropout=0.0, activation="gelu", batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, size.layers, enable_nested_tensor=False)
        self.pooler = nn.Sequential(nn.Linear(d, d), nn.Tanh()) if pooling == "cls" else None
        self.classifier = nn.Linear(d, classes)

    def forward(self, ids: Tensor) -> Tensor:
        """Token ids ``(N, T)`` → class logits ``(N, classes)``."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = self.encoder(self.tokens(ids) + self.positions(positions))
        pooled = self.pooler(h[:, 0]) if self.pooler is not None else h.mean(dim=1)
        return self.classifier(pooled)


def _kaiming(model: nn.Module, seed: int) -> nn.Module:
    init.init_model_(model, "kaiming_normal", torch.Generator().manual_seed(seed))
    return model


def _biases(value: float) -> Callable[[nn.Module], None]:
    def breaks(model: nn.Module) -> None:
        for layer in model.modules():
            if isinstance(layer, nn.Linear) and layer.bias is not None:
                nn.init.constant_(layer.bias, value)

    return breaks


def _nan_weight(model: nn.Module) -> None:
    """One NaN in the second Linear's weight."""
    linears = [layer for layer in model.modules() if isinstance(layer, nn.Linear)]
    with torch.no_grad():
        linears[1].weight[0, 0] = float("nan")


#: The architecture variants a case's builder takes (the remedies that change the model).
VARIANTS = ("plain", "batch_norm", "residual_layer_norm", "mean_pool")


def _mlp(depth_field: str) -> Callable[[Size, int, str], nn.Module | None]:
    def build(size: Size, seed: int, variant: str) -> nn.Module | None:
        torch.manual_seed(seed)
        depth = getattr(size, depth_field)
        if variant == "residual_layer_norm":
            return _kaiming(ResidualMLP(size.inputs, size.width, depth), seed)
        if variant not in ("plain", "batch_norm"):
            return None
        widths = (size.inputs, *[size.width] * depth, 1)
        return _kaiming(MLP(widths, batchnorm=variant == "batch_norm"), seed)

    return build


def _transformer(size: Size, seed: int, variant: str) -> nn.Module | None:
    if variant not in ("plain", "mean_pool"):
        return None
    torch.manual_seed(seed)
    return PoolerTransformer(size, pooling="mean" if variant == "mean_pool" else "cls")


@dataclass(frozen=True)
class Case:
    """One broken network.

    Attributes:
        name: its key (``shifted_inputs``, …).
        symptom: the finding it is built to show (a key of
            :data:`relulab.probe.remedies.FINDINGS`).
        description: the case in words (docs and the advice's evidence).
        build: ``build(size, seed, variant)`` → the network (``None``: no such variant).
        data: ``data(seed, size)`` → its :class:`Split`.
        breaks: what breaks the built network (applied to every arm's network first).
        loss: ``"mse"`` or ``"cross_entropy"``.
        high_lr: trained at :attr:`Size.high_lr` instead of :attr:`Size.lr`.
        practice: the practitioner's fixes it is also trained with (remedy names).
        monitored: detect its findings with a :class:`~relulab.probe.Monitor` during the
            untreated training (the learning-rate case), not with a probe at init.
    """

    name: str
    symptom: str
    description: str
    build: Callable[[Size, int, str], nn.Module | None]
    data: Callable[[int, Size], Split]
    breaks: Callable[[nn.Module], None] | None = None
    loss: str = "mse"
    high_lr: bool = False
    practice: tuple[str, ...] = field(default_factory=tuple)
    monitored: bool = False


def _teacher(transform: str) -> Callable[[int, Size], Split]:
    return lambda seed, size: teacher_data(seed, size, transform)


_PLAIN = _teacher("none")

#: The broken networks, in the order of the table.
CASES: dict[str, Case] = {
    case.name: case
    for case in (
        Case(
            "shifted_inputs",
            "unstandardised_inputs",
            "4-layer Kaiming ReLU MLP (width 64), inputs N(10, 1) per feature",
            _mlp("depth"),
            _teacher("shift"),
            practice=("standardise",),
        ),
        Case(
            "unscaled_inputs",
            "unstandardised_inputs",
            "4-layer Kaiming ReLU MLP, feature j scaled by 10^(-1.5 … 1.5)",
            _mlp("depth"),
            _teacher("scale"),
            practice=("standardise",),
        ),
        Case(
            "dead_biases",
            "dead_units",
            "4-layer Kaiming ReLU MLP, every bias −3 (every unit dead)",
            _mlp("depth"),
            _PLAIN,
            _biases(-3.0),
            practice=("default_init",),
        ),
        Case(
            "always_on_biases",
            "always_on_units",
            "4-layer Kaiming ReLU MLP, every bias +6 (every unit always on)",
            _mlp("depth"),
            _PLAIN,
            _biases(6.0),
            practice=("default_init",),
        ),
        Case(
            "deep_mlp",
            "sample_variance_decay",
            "40-layer Kaiming ReLU MLP (width 64), plain",
            _mlp("deep"),
            _PLAIN,
            practice=("residual_layer_norm",),
        ),
        Case(
            "lr_kills_units",
            "units_died",
            "4-layer Kaiming ReLU MLP trained at Adam lr 0.1 (the others: 0.003)",
            _mlp("depth"),
            _PLAIN,
            high_lr=True,
            practice=("lower_lr",),
            monitored=True,
        ),
        Case(
            "tanh_pooler",
            "high_delta",
            "2-layer post-LN transformer (d 32, GELU) with BERT's Linear+Tanh pooler on [CLS]",
            _transformer,
            sequence_data,
            loss="cross_entropy",
            practice=("mean_pool",),
        ),
        Case(
            "nan_weight",
            "non_finite",
            "4-layer Kaiming ReLU MLP with one NaN weight in its second layer",
            _mlp("depth"),
            _PLAIN,
            _nan_weight,
            practice=("find_nan",),
        ),
    )
}
