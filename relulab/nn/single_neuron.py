r"""The single-neuron network of seed ``001_…`` as a plain ``nn.Module``.

Standard parameterisation (the seed): :math:`f(x) = w_2\,\sigma(w_1 x + b_1) + b_2`.

Reparameterised neuron (the seed's open Question 1): :math:`f(x) = w_2\,\sigma(w_1 (x + b')) + b_2`,
so that the kink sits at :math:`x_t = -b'` whatever :math:`w_1` is. With the same initial
numbers (``b1 = b'`` and ``w1 = 1``) both start as the same function; only the training
dynamics differ.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from relulab.nn.activations import get_activation

__all__ = ["SingleNeuron", "Parameterisation"]

Parameterisation = Literal["standard", "reparam"]


class SingleNeuron(nn.Module):
    """One hidden neuron, scalar input and output; see the module docstring for the formulas."""

    # parameters registered by setattr in __init__; declared so mypy sees them as tensors
    w1: nn.Parameter
    b1: nn.Parameter
    w2: nn.Parameter
    b2: nn.Parameter

    def __init__(
        self,
        w1: float = 1.0,
        b1: float = 0.0,
        w2: float = 1.0,
        b2: float = 0.0,
        activation: str = "relu",
        parameterisation: Parameterisation = "standard",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        if parameterisation not in ("standard", "reparam"):
            raise ValueError(
                f"parameterisation must be 'standard' or 'reparam', got {parameterisation!r}"
            )
        self.activation = get_activation(activation)
        self.parameterisation = parameterisation
        for name, value in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)):
            setattr(self, name, nn.Parameter(torch.tensor(float(value), dtype=dtype)))

    def preactivation(self, x: Tensor) -> Tensor:
        if self.parameterisation == "reparam":
            return self.w1 * (x + self.b1)
        return self.w1 * x + self.b1

    def forward(self, x: Tensor) -> Tensor:
        return self.w2 * self.activation.fn(self.preactivation(x)) + self.b2

    def kink(self) -> float:
        """Where the pre-activation crosses zero: :math:`-b_1/w_1` (standard) or :math:`-b'`."""
        if self.parameterisation == "reparam":
            return float(-self.b1)
        return float(-self.b1 / self.w1)
