"""Scalar-input teacher–student data (seed ``001_…``: a single neuron fitting ``ReLU(x)``).

Inputs on ``[-1, 1]`` (seed 001, "Problem Setup" [stated]); a dense grid ``linspace(-1, 1, N)``
reproduces every threshold of the seed [inferred]; random uniform points need ≥ 1000 of them.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from relulab.nn.activations import get_activation

__all__ = ["scalar_inputs", "scalar_teacher"]

Sampling = Literal["grid", "uniform"]


def scalar_inputs(
    n_points: int,
    sampling: Sampling = "grid",
    low: float = -1.0,
    high: float = 1.0,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Tensor:
    """``n_points`` inputs on ``[low, high]``: an even grid, or i.i.d. uniform draws (sorted)."""
    if n_points < 2:
        raise ValueError(f"n_points must be at least 2, got {n_points}")
    if not low < high:
        raise ValueError(f"need low < high, got [{low}, {high}]")
    if sampling == "grid":
        return torch.linspace(low, high, n_points, dtype=dtype, device=device)
    if sampling == "uniform":
        u = torch.rand(n_points, generator=generator, dtype=torch.float64)
        return (low + (high - low) * u).sort().values.to(dtype=dtype, device=device)
    raise ValueError(f"sampling must be 'grid' or 'uniform', got {sampling!r}")


def scalar_teacher(
    x: Tensor,
    activation: str = "relu",
    w1: float = 1.0,
    b1: float = 0.0,
    w2: float = 1.0,
    b2: float = 0.0,
) -> Tensor:
    r"""Teacher outputs :math:`w_2\,\sigma(w_1 x + b_1) + b_2`; the seed's is ``ReLU(x)``."""
    return w2 * get_activation(activation).fn(w1 * x + b1) + b2
