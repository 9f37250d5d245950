r"""Inputs with a prescribed correlation: the two signals of mean-field signal propagation.

Seed 003 §2 (Singh & Sreejith) follows two inputs :math:`x^{(1)}, x^{(2)}` through a deep random
network and tracks their correlation :math:`c_l` layer by layer; the theory starts from their
squared length :math:`q_0` and correlation :math:`c_0`.
"""

from __future__ import annotations

import math

import torch

__all__ = ["two_inputs_with_correlation"]


def two_inputs_with_correlation(
    width: int, c0: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    r"""Two inputs of mean square 1 (:math:`q_0 = 1`) whose correlation is exactly ``c0``.

    With :math:`g, n \sim N(0, I_N)`, the noise is first made orthogonal to :math:`g`
    (:math:`n \leftarrow n - \frac{n\cdot g}{g\cdot g} g`), both are scaled to mean square 1, and

    .. math:: x^{(1)} = g, \qquad x^{(2)} = c_0\, g + \sqrt{1 - c_0^2}\; n,

    so :math:`\frac{1}{N} x^{(1)}\cdot x^{(2)} = c_0` and both have :math:`\frac1N\|x\|^2 = 1`.
    Drawing :math:`x^{(2)} = c_0 g + \sqrt{1-c_0^2}\, n` without the projection only gives
    :math:`c_0` in expectation, off by :math:`O(1/\sqrt N)`.

    Args:
        width: the input dimension N.
        c0: the correlation, in (−1, 1).
        generator: the random generator (float64 draws).

    Returns:
        A float64 tensor ``(2, width)``: the two inputs as rows.

    Example:
        >>> x = two_inputs_with_correlation(1000, 0.5, torch.Generator().manual_seed(0))
        >>> round(float((x[0] * x[1]).mean()), 6)
        0.5
    """
    x = torch.randn(width, generator=generator, dtype=torch.float64)
    noise = torch.randn(width, generator=generator, dtype=torch.float64)
    noise = noise - (noise @ x) / (x @ x) * x
    x, noise = (v / v.square().mean().sqrt() for v in (x, noise))
    return torch.stack([x, c0 * x + math.sqrt(1 - c0**2) * noise])
