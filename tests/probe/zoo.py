"""Reference architectures in plain torch, small enough for tests (torchvision's CPU wheels do not
match the pinned torch): each factory returns ``(model, inputs, unit_axis)``, the activation
input's unit axis for the probe's reference computation (1 for convolutions, −1 for Linear)."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from relulab.bench.monitor import BasicBlock  # torchvision's block, defined once


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


class ResNet18(nn.Module):
    """ResNet-18 (BasicBlocks [2, 2, 2, 2]) with a CIFAR-style 3×3 stem: 17 ReLU calls."""

    def __init__(self, width: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        channels = [width, 2 * width, 4 * width, 8 * width]
        inputs = width
        for index, (outputs, stride) in enumerate(zip(channels, (1, 2, 2, 2), strict=True)):
            blocks = [BasicBlock(inputs, outputs, stride), BasicBlock(outputs, outputs)]
            setattr(self, f"layer{index + 1}", nn.Sequential(*blocks))
            inputs = outputs
        self.fc = nn.Linear(inputs, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet18() -> tuple[nn.Module, torch.Tensor, int]:
    torch.manual_seed(0)
    return ResNet18(), torch.randn(12, 3, 16, 16, generator=_generator(1)), 1


class VGG(nn.Module):
    """VGG-style: conv/ReLU(inplace) features with max-pooling, a dropout classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * 4 * 4, 32),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(32, 32),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(32, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


def vgg() -> tuple[nn.Module, torch.Tensor, int]:
    torch.manual_seed(0)
    return VGG(), torch.randn(12, 3, 16, 16, generator=_generator(2)), 1


def transformer(activation: str) -> tuple[nn.Module, torch.Tensor, int]:
    """PyTorch's own encoder: its layers call ``F.relu`` / ``F.gelu`` functionally."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        16, 2, dim_feedforward=32, dropout=0.1, activation=activation, batch_first=True
    )
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return model, torch.randn(8, 6, 16, generator=_generator(3)), -1


class FunctionalMLP(nn.Module):
    """No activation module: ``F.relu`` in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(10, 32), nn.Linear(32, 32), nn.Linear(32, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def functional_mlp() -> tuple[nn.Module, torch.Tensor, int]:
    torch.manual_seed(0)
    return FunctionalMLP(), torch.randn(40, 10, generator=_generator(4)) + 0.5, -1


class GELUBlock(nn.Module):
    """A transformer MLP block on ``(N, T, d)``: LayerNorm, Linear(d, 4d), GELU, Linear(4d, d),
    residual; half the hidden units pushed far below zero by a −100 bias."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1, self.act, self.fc2 = nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)
        with torch.no_grad():
            self.fc1.bias[: 2 * d] = -100.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


def gelu_block() -> tuple[nn.Module, torch.Tensor, int]:
    torch.manual_seed(0)
    return GELUBlock(), torch.randn(8, 10, 16, generator=_generator(5)), -1


def leaky_net() -> tuple[nn.Module, torch.Tensor, int]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(6, 24), nn.LeakyReLU(0.1), nn.Linear(24, 24), nn.LeakyReLU(0.1), nn.Linear(24, 2)
    )
    with torch.no_grad():
        model[2].bias[:6] = -50.0
    return model, torch.randn(30, 6, generator=_generator(6)), -1


#: name → factory
ZOO = {
    "resnet18": resnet18,
    "vgg": vgg,
    "transformer_relu": lambda: transformer("relu"),
    "transformer_gelu": lambda: transformer("gelu"),
    "functional_mlp": functional_mlp,
    "gelu_block": gelu_block,
    "leaky_net": leaky_net,
}
