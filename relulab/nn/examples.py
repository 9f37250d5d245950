"""Small example models for ``relulab diagnose`` and the docs (factories taking no arguments)."""

from __future__ import annotations

from torch import nn

__all__ = ["deep_mlp", "small_cnn"]


def deep_mlp(depth: int = 20, width: int = 256, inputs: int = 64) -> nn.Sequential:
    """A deep ReLU MLP with PyTorch's default init.

    ``relulab diagnose relulab.nn.examples:deep_mlp --compare-inits``
    """
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(inputs if i == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def small_cnn() -> nn.Sequential:
    """A torchvision-style CNN on 3×32×32 inputs."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )
