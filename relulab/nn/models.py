"""Model families as ordinary ``nn.Module``s: the MLP (two-layer and deep) and the residual toy.

These are the per-network counterparts of :mod:`relulab.engine.models`: ``BatchedMLP.module(s)``
returns network ``s`` of a batched sweep as one of these, with its current weights.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from relulab.nn.activations import ReLUMinusB

__all__ = ["MLP", "ResidualToy", "activation_module"]


def activation_module(name: str, relu_shift: float = 0.0, leaky_slope: float = 0.01) -> nn.Module:
    """The ``nn.Module`` for an activation name; ReLU with a shift becomes :class:`ReLUMinusB`."""
    if relu_shift and name != "relu":
        raise ValueError("relu_shift applies to the ReLU activation only")
    modules = {
        "relu": lambda: ReLUMinusB(relu_shift) if relu_shift else nn.ReLU(),
        "leaky_relu": lambda: nn.LeakyReLU(leaky_slope),
        "silu": nn.SiLU,
        "tanh": nn.Tanh,
        "linear": nn.Identity,
    }
    if name not in modules:
        raise ValueError(f"unknown activation {name!r}; choose one of {', '.join(modules)}")
    return modules[name]()


class MLP(nn.Sequential):
    """``Linear → [BatchNorm] → activation`` per hidden layer, then a ``Linear`` readout.

    BatchNorm has no affine parameters and always normalises by batch statistics (as the
    batched engine does).
    """

    def __init__(
        self,
        widths: tuple[int, ...],
        activation: str = "relu",
        bias: bool = True,
        output_bias: bool | None = None,
        batchnorm: bool = False,
        relu_shift: float = 0.0,
        leaky_slope: float = 0.01,
    ) -> None:
        layers: list[nn.Module] = []
        n_layers = len(widths) - 1
        for i, (inp, out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            last = i == n_layers - 1
            has_bias = (bias if output_bias is None else output_bias) if last else bias
            layers.append(nn.Linear(inp, out, bias=has_bias))
            if not last:
                if batchnorm:
                    layers.append(nn.BatchNorm1d(out, affine=False, track_running_stats=False))
                layers.append(activation_module(activation, relu_shift, leaky_slope))
        super().__init__(*layers)


class ResidualToy(nn.Module):
    r"""Liu's residual toy (SETUPS.md §2), one network; see :mod:`relulab.engine.models`."""

    def __init__(
        self,
        width: int,
        hidden: int,
        blocks: int,
        norm: Literal["post", "pre"] = "post",
        alpha: float = 1.0,
        relu_shift: float = 0.0,
    ) -> None:
        super().__init__()
        self.norm, self.alpha, self.relu_shift = norm, alpha, relu_shift
        self.fc1 = nn.ModuleList(nn.Linear(width, hidden, bias=False) for _ in range(blocks))
        self.fc2 = nn.ModuleList(nn.Linear(hidden, width, bias=False) for _ in range(blocks))
        self.layer_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-5)

    def forward(self, h: Tensor) -> Tensor:
        for fc1, fc2 in zip(self.fc1, self.fc2, strict=True):
            inner = self.layer_norm(h) if self.norm == "pre" else h
            h = h + self.alpha * fc2(torch.relu(fc1(inner)) - self.relu_shift)
            if self.norm == "post":
                h = self.layer_norm(h)
        return h
