r"""The ReLU−b module (seed ``000_…``, Liu, *Adding bias after ReLU*):
:math:`\sigma_b(z) = \mathrm{ReLU}(z) - b`, a constant subtracted after the ReLU to re-centre
its output.

Its own module, below :mod:`relulab.nn.catalogue` (which declares it as an activation kind) and
:mod:`relulab.nn.activations` (which re-exports it), so that neither imports the other.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["ReLUMinusB"]


class ReLUMinusB(nn.Module):
    r""":math:`\mathrm{ReLU}(z) - b`: ReLU followed by a fixed negative bias (seed ``000_…``).

    ``b`` is a scalar or one value per feature (axis 1: Linear units, conv channels); ``b = 0``
    is the plain ReLU. For :math:`z \sim N(0, s^2)` the choice
    :math:`b^* = E[\mathrm{ReLU}(z)] = s/\sqrt{2\pi}` centres the output ([D], the half-normal
    mean); :func:`relulab.init.calibrate_relu_shift_` measures a per-feature shift on data.
    """

    b: Tensor  # a buffer (register_buffer below); declared so mypy sees a Tensor

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
