r"""Correlated (anti-correlated) Gaussian weights: ACI of seed ``003_…`` (Singh & Sreejith, §2,
eq. 1).

Each row (the weights into one unit) is :math:`N(0, \Sigma)` with
:math:`\Sigma = (\sigma_w^2/N)\,(a I + (b/N) J)`, :math:`N` the fan-in, :math:`J` the all-ones
matrix; rows are independent. PSD iff :math:`a \ge 0` and :math:`a + b \ge 0`. The seed's single
correlation strength ``k`` is read as ``a = 1, b = k`` [I] (its exact formula was lost):
``k = 0`` uncorrelated, ``k < 0`` anti-correlated, ``k = −1`` every row sums to zero.

Exact O(N) per row sampler [D]: with :math:`g \sim N(0, I)` and :math:`\bar g` its mean,
:math:`w = (\sigma_w/\sqrt N)\left(\sqrt a\,g + (\sqrt{a+b} - \sqrt a)\,\bar g\,\mathbf 1\right)`,
whose covariance is :math:`(\sigma_w^2/N)(a(I - P) + (a+b)P)` with :math:`P = J/N`, i.e. Σ.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["correlated_"]


def correlated_(
    tensor: Tensor,
    sigma_w2: float = 2.0,
    k: float | None = None,
    a: float = 1.0,
    b: float = 0.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Fill ``tensor`` ``(fan_out, fan_in, *kernel)`` in place with independent rows, each
    :math:`N(0, \Sigma)`, :math:`\Sigma = (\sigma_w^2/N)(a I + (b/N) J)` (module docstring).
    No torch namesake.

    Args:
        tensor: the weight; for convolutions a row is flattened and :math:`N` is
            ``in_channels × kernel size``.
        sigma_w2: :math:`\sigma_w^2`.
        k: the seed's correlation strength; sets ``a = 1, b = k`` [I] (overrides ``a``, ``b``).
        a: the diagonal weight of :math:`\Sigma`.
        b: the all-ones weight of :math:`\Sigma`.
        generator: the random generator.

    Returns:
        ``tensor``.

    Example:
        >>> w = correlated_(torch.empty(5, 8, dtype=torch.float64), k=-1.0)
        >>> torch.allclose(w.sum(dim=1), torch.zeros(5, dtype=torch.float64), atol=1e-12)
        True
    """
    if k is not None:
        a, b = 1.0, float(k)
    if a < 0 or a + b < 0:
        raise ValueError(f"row covariance is not PSD: need a ≥ 0 and a + b ≥ 0, got a={a}, b={b}")
    if tensor.dim() < 2:
        raise ValueError(
            f"need a weight of at least 2 dimensions (out, in, …), got {tuple(tensor.shape)}"
        )
    rows = tensor.shape[0]
    fan_in = tensor[0].numel()
    with torch.no_grad():
        g = torch.randn(rows, fan_in, generator=generator, dtype=torch.float64)
        row_mean = g.mean(dim=1, keepdim=True)
        w = (math.sqrt(a) * g + (math.sqrt(a + b) - math.sqrt(a)) * row_mean) * math.sqrt(
            sigma_w2 / fan_in
        )
        tensor.copy_(w.reshape(tensor.shape).to(tensor.dtype))
    return tensor
