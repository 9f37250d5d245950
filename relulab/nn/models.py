"""Model families as ordinary ``nn.Module``s: the MLP (two-layer and deep) and the residual toy.

These are the per-network counterparts of :mod:`relulab.engine.models`: ``BatchedMLP.module(s)``
returns network ``s`` of a batched sweep as one of these, with its current weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import torch
from torch import Tensor, nn

from relulab.nn.activations import ReLUMinusB

__all__ = ["MLP", "ResidualBlockStep", "ResidualToy", "activation_module", "residual_block"]


def activation_module(name: str, relu_shift: float = 0.0, leaky_slope: float = 0.01) -> nn.Module:
    """The ``nn.Module`` for an activation name; ReLU with a shift becomes :class:`ReLUMinusB`."""
    if relu_shift and name != "relu":
        raise ValueError("relu_shift applies to the ReLU activation only")
    modules: dict[str, Callable[[], nn.Module]] = {
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


class ResidualBlockStep(NamedTuple):
    """What one residual block computed: the new stream and the block's intermediates."""

    stream: Tensor
    inner: Tensor
    preactivation: Tensor
    activation: Tensor


def residual_block(
    h: Tensor,
    fc1: Callable[[Tensor], Tensor],
    fc2: Callable[[Tensor], Tensor],
    activate: Callable[[Tensor], Tensor],
    norm: Literal["post", "pre"],
    alpha: float,
    layer_norm: Callable[[Tensor], Tensor],
) -> ResidualBlockStep:
    r"""One block of Liu's residual toy (the "depth-1" model seed ``000_…`` builds on), with
    :math:`u(v) = \alpha\,\mathrm{FC2}(\sigma(\mathrm{FC1}\,v))`:

    Post-LN :math:`h \leftarrow \mathrm{LN}(h + u(h))`; Pre-LN :math:`h \leftarrow h +
    u(\mathrm{LN}(h))`. The one definition of the block, used by :class:`ResidualToy` and by the
    batched :class:`relulab.engine.BatchedResidualToy` (which passes batched layers).

    Args:
        h: the residual stream.
        fc1: the first linear map (width → hidden).
        fc2: the second (hidden → width).
        activate: :math:`\sigma`, e.g. ReLU−b.
        norm: ``"post"`` or ``"pre"``.
        alpha: the scale :math:`\alpha` of the block's output.
        layer_norm: the layer norm.

    Returns:
        :class:`ResidualBlockStep`: the new stream, FC1's input, its output :math:`z` and
        :math:`\sigma(z)`.

    Example:
        >>> ln = nn.LayerNorm(4, elementwise_affine=False)
        >>> fc1, fc2 = nn.Linear(4, 8), nn.Linear(8, 4)
        >>> step = residual_block(torch.randn(3, 4), fc1, fc2, torch.relu, "pre", 1.0, ln)
        >>> step.stream.shape, step.preactivation.shape
        (torch.Size([3, 4]), torch.Size([3, 8]))
    """
    inner = layer_norm(h) if norm == "pre" else h
    z = fc1(inner)
    activation = activate(z)
    h = torch.add(h, fc2(activation), alpha=alpha)  # h + α·u in one pass (no α = 1 product)
    if norm == "post":
        h = layer_norm(h)
    return ResidualBlockStep(h, inner, z, activation)


class ResidualToy(nn.Module):
    r"""Liu's residual toy, one network (seed ``000_…`` §Motivation builds on it): ``blocks``
    blocks of :func:`residual_block` with ``FC1: width→hidden``, ReLU−b, ``FC2: hidden→width``,
    no biases; LayerNorm without affine, eps 1e-5. See :mod:`relulab.engine.models`.

    Example:
        >>> ResidualToy(width=4, hidden=16, blocks=2)(torch.randn(5, 4)).shape
        torch.Size([5, 4])
    """

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

    def _activate(self, z: Tensor) -> Tensor:
        return torch.relu(z) - self.relu_shift

    def forward(self, h: Tensor) -> Tensor:
        for fc1, fc2 in zip(self.fc1, self.fc2, strict=True):
            step = residual_block(
                h, fc1, fc2, self._activate, self.norm, self.alpha, self.layer_norm
            )
            h = step.stream
        return h
