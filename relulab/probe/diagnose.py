"""Diagnose a user's model: build it from a factory, feed it data, probe it under several inits.

``module.path:factory`` names a callable returning an ``nn.Module``. Data come from a ``.npy``
or ``.pt`` file, or are Gaussian :math:`N(0, 1)` samples shaped for the model's first layer
(``--input-shape`` for convolutions; 3×32×32 by default [I]).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from relulab import init
from relulab.probe import probe

__all__ = ["KEY_METRICS", "build_model", "diagnose", "load_data"]

KEY_METRICS = (
    "dead_fraction",
    "always_on_fraction",
    "sample_mean_variance_ratio",
    "effective_rank_centred",
    "delta",
)


def build_model(spec: str) -> Callable[[], nn.Module]:
    """Resolve ``module.path:factory`` to a factory that returns a fresh ``nn.Module``."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected module.path:factory, got {spec!r}")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"cannot load {spec!r}: {error}") from None

    def make() -> nn.Module:
        model = factory()
        if not isinstance(model, nn.Module):
            raise ValueError(f"{spec} returned {type(model).__name__}, not an nn.Module")
        return model

    return make


def _default_shape(model: nn.Module, input_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    if input_shape:
        return input_shape
    for module in model.modules():
        if isinstance(module, nn.Linear):
            return (module.in_features,)
        if isinstance(module, nn.Conv2d):
            return (module.in_channels, 32, 32)
        if isinstance(module, nn.Conv1d):
            return (module.in_channels, 64)
    raise ValueError("cannot infer the input shape; pass --input-shape")


def load_data(
    path: str | None,
    model: nn.Module,
    samples: int,
    input_shape: tuple[int, ...] | None,
    generator: torch.Generator,
) -> torch.Tensor:
    """The data to probe with: a file's array, or Gaussian samples."""
    if path is None:
        return torch.randn((samples, *_default_shape(model, input_shape)), generator=generator)
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"no data file at {file}")
    if file.suffix == ".npy":
        array = torch.from_numpy(np.load(file, allow_pickle=False))
    elif file.suffix == ".pt":
        array = torch.load(file, weights_only=True)
        if not isinstance(array, torch.Tensor):
            raise ValueError(f"{file} holds a {type(array).__name__}, expected a tensor")
    else:
        raise ValueError(f"data must be a .npy or .pt file, got {file.name}")
    return array.float()[:samples]


def _apply_init(
    model: nn.Module, name: str, data: torch.Tensor, generator: torch.Generator
) -> None:
    if name != "default":
        init.apply_init_(model, name, data, generator)


def diagnose(
    factory: Callable[[], nn.Module], data: torch.Tensor, inits: list[str], seed: int = 0
) -> pd.DataFrame:
    """Probe a fresh model per init; a tidy frame with an ``init`` column."""
    frames = []
    for name in inits:
        model = factory()
        _apply_init(model, name, data, torch.Generator().manual_seed(seed))
        frame = probe(model.eval(), data).frame
        frame.insert(0, "init", name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def comparison_table(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows: activation layers; columns: inits; values: one metric."""
    chosen = frame[frame["metric"] == metric]
    return chosen.pivot_table(index="layer", columns="init", values="value", sort=False)
