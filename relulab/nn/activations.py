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
from torch import Tensor

from relulab.nn.catalogue import ACTIVATIONS
from relulab.nn.relu_minus_b import ReLUMinusB

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


#: The derivatives of the activations the engines train by hand; the rest of each (function,
#: slopes) is its declaration in :data:`relulab.nn.catalogue.ACTIVATIONS`.
_DERIVATIVES: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": _relu_grad,
    "silu": _silu_grad,
    "tanh": _tanh_grad,
    "linear": torch.ones_like,
}

_ACTIVATIONS: dict[str, Activation] = {
    kind.name: Activation(kind.name, kind.fn, _DERIVATIVES[kind.name], slopes=kind.slopes)
    for kind in ACTIVATIONS
    if kind.name in _DERIVATIVES and kind.fn is not None
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
