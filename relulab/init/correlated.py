r"""Correlated (anti-correlated) Gaussian weights: ACI of seed ``003_…`` (§2, eq. 1).

Each row (the weights into one unit) is :math:`N(0, \Sigma)` with
:math:`\Sigma = (\sigma_w^2/N)\,(a I + (b/N) J)`, :math:`N` the fan-in, :math:`J` the all-ones
matrix; rows are independent. PSD iff :math:`a \ge 0` and :math:`a + b \ge 0`. The seed's single
correlation strength ``k`` was given by a formula lost in conversion; ``parameterisation`` names
the reading that turns ``k`` into :math:`(a, b)` (:func:`relulab.theory.correlated.
covariance_coefficients`): ``"additive"`` (the default, :math:`(1, k)` [I]: ``k = 0``
uncorrelated, ``k < 0`` anti-correlated, ``k = −1`` every row sums to zero), ``"negated"``,
``"pairwise"``, ``"correlation"``, ``"one_plus_k"`` or ``"precision"``
(:math:`\Sigma^{-1} \propto I + (k/N)J`, under which the seed's Table 1 value ``k = 100`` is a
valid anti-correlation).

Exact O(N) per row sampler [D]: with :math:`g \sim N(0, I)` and :math:`\bar g` its mean,
:math:`w = A g` with
:math:`A = (\sigma_w/\sqrt N)\left(\sqrt a\,I + (\sqrt{a+b} - \sqrt a)\,J/N\right)`.
:math:`A` is symmetric and :math:`A A^\top = (\sigma_w^2/N)(a(I - P) + (a+b)P)` with
:math:`P = J/N` (:math:`P^2 = P`), i.e. Σ.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor

from relulab.init.checks import check_fan_in, check_finite_values
from relulab.theory.correlated import check_row_covariance, covariance_coefficients

__all__ = ["correlate_rows", "correlated_"]


def correlate_rows(standard_normal: Tensor, sigma_w2: float, a: float, b: float) -> Tensor:
    r"""Apply the sampler's linear map :math:`A` (module docstring) to every row of
    ``standard_normal`` ``(rows, N)``: rows of i.i.d. :math:`N(0, 1)` become rows with covariance
    :math:`(\sigma_w^2/N)(aI + (b/N)J)`.

    Source: seed ``003_…`` §2, eq. 1 (covariance form [D]).

    Args:
        standard_normal: ``(rows, N)`` tensor, any dtype.
        sigma_w2: :math:`\sigma_w^2`.
        a, b: the covariance coefficients (PSD checked).

    Returns:
        A new tensor of the same shape and dtype.

    Example:
        >>> rows = correlate_rows(torch.randn(4, 10, dtype=torch.float64), 2.0, 1.0, -1.0)
        >>> bool(rows.sum(dim=1).abs().max() < 1e-12)
        True
    """
    check_row_covariance(a, b)
    fan_in = standard_normal.shape[-1]
    row_mean = standard_normal.mean(dim=-1, keepdim=True)
    scale = math.sqrt(sigma_w2 / fan_in)
    return (math.sqrt(a) * standard_normal + (math.sqrt(a + b) - math.sqrt(a)) * row_mean) * scale


def correlated_(
    weight: Tensor,
    bias: Tensor | None = None,
    *,
    sigma_w2: float = 2.0,
    sigma_b2: float = 0.0,
    k: float | None = None,
    a: float = 1.0,
    b: float = 0.0,
    parameterisation: str = "additive",
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Fill ``weight`` (``(fan_out, fan_in, *kernel)``) in place with correlated rows, and
    ``bias`` (if given) with i.i.d. :math:`N(0, \sigma_b^2)` (the mean-field setting of seed
    ``003_…`` §2: the phase diagrams are over :math:`(\sigma_w^2, \sigma_b^2)`).

    Each row is :math:`N(0, (\sigma_w^2/N)(aI + (b/N)J))`, drawn in float64 by
    :func:`correlate_rows`; the bias is drawn after the weight, from the same generator, and is
    set to 0 without a draw when :math:`\sigma_b^2 = 0`. Source: seed ``003_…`` §2, eq. 1.
    The argument convention of :func:`~relulab.init.rai_` and :func:`~relulab.init.raai_`:
    weight and bias, then the scheme's parameters by keyword.

    Args:
        weight: the weight; for convolutions the fan-in is ``in_channels × kernel size`` and a
            row is flattened.
        bias: the bias ``(fan_out,)`` or ``None``.
        sigma_w2: :math:`\sigma_w^2`.
        sigma_b2: :math:`\sigma_b^2`, the variance of the bias.
        k: the seed's correlation strength; if given it sets :math:`(a, b)` by
            ``parameterisation`` (module docstring), otherwise ``a`` and ``b`` are used.
        a, b: the covariance coefficients, when ``k`` is ``None``.
        parameterisation: the reading of ``k`` (default ``"additive"``: :math:`(1, k)`).
        generator: the random generator.

    Returns:
        ``weight``.

    Example:
        >>> layer = torch.nn.Linear(100, 64)
        >>> _ = correlated_(layer.weight, layer.bias, k=-1.0, sigma_b2=0.1)
        >>> bool(layer.weight.sum(dim=1).abs().max() < 1e-5)  # k = −1: every row sums to 0
        True
        >>> w = correlated_(torch.empty(64, 100), sigma_w2=2.0, k=100.0,
        ...                 parameterisation="precision")
    """
    if isinstance(bias, int | float) and not isinstance(bias, bool):
        warnings.warn(
            "correlated_(weight, sigma_w2, …) is deprecated: pass the bias (or None) second "
            "and sigma_w2= by keyword",
            DeprecationWarning,
            stacklevel=2,
        )
        bias, sigma_w2 = None, float(bias)
    _check_layer(weight, bias)
    if not (math.isfinite(sigma_w2) and sigma_w2 > 0):
        raise ValueError(f"sigma_w2 must be a positive number, got {sigma_w2!r}")
    if not (math.isfinite(sigma_b2) and sigma_b2 >= 0):
        raise ValueError(f"sigma_b2 must be a number ≥ 0, got {sigma_b2!r}")
    rows = weight.shape[0]
    fan_in = math.prod(weight.shape[1:])
    if k is not None:
        a, b = covariance_coefficients(k, parameterisation, fan_in)
    check_row_covariance(a, b)
    with torch.no_grad():
        g = torch.randn(rows, fan_in, generator=generator, dtype=torch.float64)
        drawn = correlate_rows(g, sigma_w2, a, b)
        check_finite_values("correlated_", {"weight": drawn})
        weight.copy_(drawn.reshape(weight.shape).to(weight.dtype))
        if bias is not None and sigma_b2 > 0:
            drawn = torch.randn(rows, generator=generator, dtype=torch.float64)
            bias.copy_((drawn * math.sqrt(sigma_b2)).to(bias.dtype))
        elif bias is not None:
            bias.zero_()
    return weight


def _check_layer(weight: Tensor, bias: object) -> None:
    if not isinstance(weight, Tensor) or weight.dim() < 2:
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(
            f"correlated_ needs a weight of at least 2 dimensions (out, in, …), got {shape}"
        )
    check_fan_in(weight, "correlated_")
    if bias is not None and (
        not isinstance(bias, Tensor) or tuple(bias.shape) != (weight.shape[0],)
    ):
        got = tuple(bias.shape) if isinstance(bias, Tensor) else type(bias).__name__
        raise ValueError(
            f"correlated_: the bias must be None or have shape ({weight.shape[0]},) to match "
            f"the weight {tuple(weight.shape)}, got {got}; the scheme's parameters "
            "(sigma_w2=, k=, …) go by keyword"
        )
