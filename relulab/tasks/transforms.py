"""Input transforms shared by the tasks."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["append_constant"]


def append_constant(x: Tensor, constant: float = 1.0) -> Tensor:
    r"""Append a constant feature: :math:`\tilde x = [x, c]` (seed ``004_…``).

    A bias-free first layer on :math:`\tilde x` has the hidden bias :math:`b = c\,w_{:,d+1}`
    built in; seed 004 uses ``c = 1`` (10 on MNIST). Works on ``(N, d)`` and ``(S, N, d)``.
    """
    column = torch.full((*x.shape[:-1], 1), float(constant), dtype=x.dtype, device=x.device)
    return torch.cat([x, column], dim=-1)
