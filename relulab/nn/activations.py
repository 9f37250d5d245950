r"""Activation functions with their derivatives, and the ReLU−b module.

The engine trains networks with hand-derived gradients where that is much faster than autograd
(the single neuron), so each activation carries its derivative :math:`\sigma'`. Conventions follow
torch's autograd so both paths agree exactly: :math:`\mathrm{ReLU}'(0) = 0`.

ReLU−b (seed ``000_…``, Liu, *Adding bias after ReLU*): :math:`\sigma_b(z) = \mathrm{ReLU}(z) - b`,
a constant subtracted after the ReLU to re-centre its output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

__all__ = ["Activation", "ReLUMinusB", "get_activation", "leaky_relu", "ACTIVATION_NAMES"]


@dataclass(frozen=True)
class Activation:
    r"""An elementwise function ``fn`` with its derivative ``grad`` (both Tensor → Tensor).

    ``slopes = (p, q)`` marks a piecewise-linear activation through the origin,
    :math:`\sigma(z) = p\,\min(z, 0) + q\,\max(z, 0)` with :math:`\sigma'(0) = p` (ReLU,
    leaky ReLU, linear); ``None`` for a smooth one. Engines use it for closed-form sums.
    """

    name: str
    fn: Callable[[Tensor], Tensor]
    grad: Callable[[Tensor], Tensor]
    slopes: tuple[float, float] | None = None


def _relu_grad(z: Tensor) -> Tensor:
    return (z > 0).to(z.dtype)


def _silu_grad(z: Tensor) -> Tensor:
    r""":math:`\frac{d}{dz} z\,s(z) = s(z)\,(1 + z\,(1 - s(z)))`, :math:`s` the logistic."""
    s = torch.sigmoid(z)
    return s * (1 + z * (1 - s))


def _tanh_grad(z: Tensor) -> Tensor:
    return 1 - torch.tanh(z) ** 2


_ACTIVATIONS: dict[str, Activation] = {
    "relu": Activation("relu", torch.relu, _relu_grad, slopes=(0.0, 1.0)),
    "silu": Activation("silu", torch.nn.functional.silu, _silu_grad),
    "tanh": Activation("tanh", torch.tanh, _tanh_grad),
    "linear": Activation("linear", lambda z: z, torch.ones_like, slopes=(1.0, 1.0)),
}

ACTIVATION_NAMES: tuple[str, ...] = tuple(_ACTIVATIONS)


def leaky_relu(slope: float) -> Activation:
    r"""Leaky ReLU :math:`\max(z, 0) + p\,\min(z, 0)` with slope :math:`p` (derivative at 0: p)."""
    return Activation(
        f"leaky_relu({slope:g})",
        lambda z: torch.nn.functional.leaky_relu(z, slope),
        # built in z's dtype: a Python-scalar torch.where would round the slope to float32
        lambda z: torch.full_like(z, slope).masked_fill_(z > 0, 1.0),
        slopes=(float(slope), 1.0),
    )


def get_activation(name: str, slope: float = 0.01) -> Activation:
    """Look an activation up by name: one of :data:`ACTIVATION_NAMES`, or ``leaky_relu``."""
    if name == "leaky_relu":
        return leaky_relu(slope)
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown activation {name!r}; choose one of {', '.join(ACTIVATION_NAMES)}, leaky_relu"
        ) from None


class ReLUMinusB(nn.Module):
    r""":math:`\mathrm{ReLU}(z) - b`: ReLU followed by a fixed negative bias (seed ``000_…``).

    ``b`` is a scalar or one value per feature (axis 1: Linear units, conv channels); ``b = 0``
    is the plain ReLU. For :math:`z \sim N(0, s^2)` the choice
    :math:`b^* = E[\mathrm{ReLU}(z)] = s/\sqrt{2\pi}` centres the output ([D], the half-normal
    mean); :func:`relulab.init.calibrate_relu_shift_` measures a per-feature shift on data.
    """

    def __init__(self, b: float | Tensor = 0.0) -> None:
        super().__init__()
        # float64 keeps a Python float exact; forward casts to the activation's dtype
        self.register_buffer("b", torch.as_tensor(b, dtype=torch.float64).clone())

    def set_shift(self, b: float | Tensor) -> None:
        """Replace the shift (scalar or per feature)."""
        self.b = torch.as_tensor(b, dtype=self.b.dtype, device=self.b.device).detach().clone()

    def forward(self, z: Tensor) -> Tensor:
        b = self.b.to(z.dtype)
        if b.dim() == 1:
            b = b.reshape((-1,) + (1,) * (z.dim() - 2))
        return torch.relu(z) - b

    def extra_repr(self) -> str:
        return f"b={self.b.item():g}" if self.b.dim() == 0 else f"b=per-feature({self.b.numel()})"
