r"""Per-tensor initialisers in the style of ``torch.nn.init``: in place, name ending in ``_``,
a ``generator`` argument, the tensor returned. Weights are ``(fan_out, fan_in, *kernel)``
(``nn.Linear`` and ``nn.Conv*d`` layouts): :math:`n_{in}` = ``in_features`` or
``in_channels × kernel size``, :math:`n_{out}` likewise.

* ``kaiming_normal_`` / ``kaiming_uniform_`` (He et al. 2015), stated explicitly: std
  :math:`g/\sqrt{n}` or bound :math:`g\sqrt{3/n}`, :math:`n` the fan of ``mode``, gain
  :math:`g = \sqrt 2` for ReLU. (``nn.Linear``'s default is *not* this: it is
  :math:`U(\pm 1/\sqrt{n_{in}})`, i.e. gain :math:`1/\sqrt 3`.)
* ``lecun_normal_``: std :math:`1/\sqrt{n_{in}}` (LeCun et al. 1998).
* ``orthogonal_``: rows (or columns) orthonormal, times ``gain`` (Saxe et al. 2014), from the
  QR decomposition of a Gaussian matrix with the sign fix of Mezzadri (2007).
* ``rai_``: random asymmetric initialisation (Lu et al. 2020, *Dying ReLU and initialization*;
  used by seed ``003_…`` §3 and appendix C). Per layer
  :math:`V \in \mathbb R^{n_{out}\times(n_{in}+1)}`, i.i.d. :math:`N(0, 0.6007^2/n_{in})`; in every
  row one entry, uniformly among the :math:`n_{in}+1` (the last is the bias), is replaced by
  :math:`\xi \sim \mathrm{Beta}(2, 1)`; :math:`W = V_{:, :-1}`, :math:`b = V_{:, -1}`.
* ``raai_``: random asymmetric *anti-correlated* initialisation (seed ``003_…``): the rows of
  :math:`V` (weights and bias into a node) drawn anti-correlated as in :func:`correlated_`, then
  RAI's Beta replacement. Its constants are inferred [I] (Table 1 of the seed lost its headers).

Beta(α, 1) is sampled exactly by inversion, :math:`\xi = U^{1/\alpha}`, so every draw comes from
the given generator. Every draw is made in float64 and cast to the tensor's dtype, so float32
and float64 tensors get the same numbers from the same generator — and *different* numbers
from ``torch.nn.init``'s namesakes, which draw in the tensor's dtype.

**Signatures differ from torch's namesakes** (a later change will make them call-compatible):
``kaiming_normal_``/``kaiming_uniform_`` take ``(tensor, mode, gain, generator)`` where torch
takes ``(tensor, a, mode, nonlinearity, generator)`` — the gain is given directly instead of
through ``a`` and ``nonlinearity``; ``normal_`` takes ``(tensor, std, generator)`` where torch
takes ``(tensor, mean, std, generator)``, so a second positional argument is the *std* here and
the *mean* in torch. Pass arguments by keyword to be safe with both.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from relulab.init.correlated import correlated_

__all__ = [
    "fans",
    "normal_",
    "torch_default_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "lecun_normal_",
    "orthogonal_",
    "raai_",
    "rai_",
    "rai_matrix",
]

RAI_STD = 0.6007  # Lu et al. 2020


def fans(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a Linear or Conv weight ``(out, in, *kernel)``: in and out
    features times the kernel size (as torch's ``_calculate_fan_in_and_fan_out``).

    Args:
        tensor: a weight of at least 2 dimensions.

    Returns:
        ``(fan_in, fan_out)``.

    Example:
        >>> fans(torch.empty(16, 8, 3, 3))
        (72, 144)
    """
    if tensor.dim() < 2:
        raise ValueError(
            f"fan-in/out need a weight of ≥ 2 dimensions, got shape {tuple(tensor.shape)}"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


@torch.no_grad()
def _fill_normal(tensor: Tensor, std: float, generator: torch.Generator | None) -> Tensor:
    draw = torch.randn(tensor.shape, generator=generator, dtype=torch.float64) * std
    return tensor.copy_(draw.to(tensor.dtype))


@torch.no_grad()
def _fill_uniform(tensor: Tensor, bound: float, generator: torch.Generator | None) -> Tensor:
    draw = (torch.rand(tensor.shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    return tensor.copy_(draw.to(tensor.dtype))


def normal_(tensor: Tensor, std: float = 1.0, generator: torch.Generator | None = None) -> Tensor:
    r"""Fill ``tensor`` with :math:`N(0, \text{std}^2)` draws (seed ``004_…`` appendix E uses
    std² = 2e-4: small initial weights).

    Differs from ``torch.nn.init.normal_(tensor, mean=0.0, std=1.0, generator=None)``: no
    ``mean`` (always 0), so the second positional argument is the std; drawn in float64.

    Args:
        tensor: the tensor to fill in place.
        std: the standard deviation.
        generator: the random generator (default: torch's global one).

    Returns:
        ``tensor``.

    Example:
        >>> w = normal_(torch.empty(3, 5), std=0.01, generator=torch.Generator().manual_seed(0))
        >>> bool(w.abs().max() < 0.1)
        True
    """
    return _fill_normal(tensor, std, generator)


def torch_default_(
    weight: Tensor, bias: Tensor | None = None, generator: torch.Generator | None = None
) -> Tensor:
    r"""The distribution ``nn.Linear``/``nn.Conv`` reset to: weights and biases
    :math:`U(\pm 1/\sqrt{n_{in}})` — variance :math:`1/(3 n_{in})`, *not* He init (torch's
    ``reset_parameters`` calls ``kaiming_uniform_(a=√5)``, which is this bound). No torch
    namesake.

    Args:
        weight: the weight ``(out, in, *kernel)``, filled in place.
        bias: the bias ``(out,)``, filled in place after the weight, or ``None``.
        generator: the random generator.

    Returns:
        ``weight``.

    Example:
        >>> layer = torch.nn.Linear(100, 3)
        >>> _ = torch_default_(layer.weight, layer.bias, torch.Generator().manual_seed(0))
        >>> bool(layer.weight.abs().max() <= 0.1)
        True
    """
    bound = 1 / math.sqrt(fans(weight)[0])
    _fill_uniform(weight, bound, generator)
    if bias is not None:
        _fill_uniform(bias, bound, generator)
    return weight


def kaiming_normal_(
    tensor: Tensor,
    mode: str = "fan_in",
    gain: float = math.sqrt(2.0),
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""He normal (He et al. 2015): :math:`N(0, g^2/n)`, :math:`n` the fan of ``mode``; with
    the default :math:`g = \sqrt 2` every ReLU layer keeps the second moment of its input.

    Differs from ``torch.nn.init.kaiming_normal_(tensor, a=0, mode="fan_in",
    nonlinearity="leaky_relu", generator=None)``: the gain is passed directly (torch's
    :math:`\sqrt{2/(1+a^2)}` for ``a``, ``nonlinearity``), so the second positional argument is
    ``mode`` here and ``a`` in torch; drawn in float64.

    Args:
        tensor: the weight ``(out, in, *kernel)``, filled in place.
        mode: ``"fan_in"`` (preserve forward variance) or ``"fan_out"`` (backward).
        gain: :math:`g`.
        generator: the random generator.

    Returns:
        ``tensor``.

    Example:
        >>> w = kaiming_normal_(torch.empty(400, 300), generator=torch.Generator().manual_seed(0))
        >>> round(float(w.var() * 300), 1)
        2.0
    """
    return _fill_normal(tensor, gain / math.sqrt(_fan(tensor, mode)), generator)


@torch.no_grad()
def kaiming_uniform_(
    tensor: Tensor,
    mode: str = "fan_in",
    gain: float = math.sqrt(2.0),
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""He uniform (He et al. 2015): :math:`U(\pm g\sqrt{3/n})`, the same variance
    :math:`g^2/n` as :func:`kaiming_normal_`.

    Differs from ``torch.nn.init.kaiming_uniform_(tensor, a=0, mode="fan_in",
    nonlinearity="leaky_relu", generator=None)`` as :func:`kaiming_normal_` does.

    Args:
        tensor: the weight, filled in place.
        mode: ``"fan_in"`` or ``"fan_out"``.
        gain: :math:`g`.
        generator: the random generator.

    Returns:
        ``tensor``.

    Example:
        >>> w = kaiming_uniform_(torch.empty(8, 6), generator=torch.Generator().manual_seed(0))
        >>> bool(w.abs().max() <= 1.0)  # bound √2·√(3/6) = 1
        True
    """
    return _fill_uniform(tensor, gain * math.sqrt(3.0 / _fan(tensor, mode)), generator)


def lecun_normal_(tensor: Tensor, generator: torch.Generator | None = None) -> Tensor:
    r"""LeCun normal (LeCun et al. 1998): :math:`N(0, 1/n_{in})`, untruncated. torch has no
    namesake; JAX/Flax's ``lecun_normal`` is a *truncated* normal of the same variance.

    Args:
        tensor: the weight, filled in place.
        generator: the random generator.

    Returns:
        ``tensor``.

    Example:
        >>> w = lecun_normal_(torch.empty(400, 300), generator=torch.Generator().manual_seed(0))
        >>> round(float(w.var() * 300), 1)
        1.0
    """
    return _fill_normal(tensor, 1.0 / math.sqrt(fans(tensor)[0]), generator)


@torch.no_grad()
def orthogonal_(
    tensor: Tensor, gain: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    r"""Orthogonal rows or columns (whichever are fewer), times ``gain`` (Saxe et al. 2014): the
    Q factor of the QR decomposition of a Gaussian matrix with the sign fix of Mezzadri (2007),
    so Q is Haar-distributed. The signature is ``torch.nn.init.orthogonal_``'s; the numbers
    differ (float64 draw).

    Args:
        tensor: at least 2-D; flattened to ``(out, rest)``.
        gain: the scale.
        generator: the random generator.

    Returns:
        ``tensor``.

    Example:
        >>> w = orthogonal_(torch.empty(3, 5, dtype=torch.float64))
        >>> torch.allclose(w @ w.T, torch.eye(3, dtype=torch.float64))
        True
    """
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = torch.randn(max(rows, cols), min(rows, cols), generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(flat)
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # Haar-distributed (Mezzadri 2007)
    if rows < cols:
        q = q.T
    return tensor.copy_((gain * q).reshape(tensor.shape).to(tensor.dtype))


def rai_matrix(
    fan_out: int,
    fan_in: int,
    gaussian: Tensor,
    generator: torch.Generator | None,
    alpha: float = 2.0,
) -> tuple[Tensor, Tensor]:
    r"""RAI's asymmetric entry (Lu et al. 2020): in every row of ``gaussian``
    ``(fan_out, fan_in + 1)`` replace one entry, uniformly chosen, by :math:`\xi \sim
    \mathrm{Beta}(\alpha, 1)` drawn as :math:`U^{1/\alpha}`.

    Args:
        fan_out: rows.
        fan_in: columns minus one (the last column is the bias).
        gaussian: the matrix before replacement (not modified).
        generator: the random generator.
        alpha: :math:`\alpha`.

    Returns:
        The new matrix and the replaced column of every row.

    Example:
        >>> m, cols = rai_matrix(4, 3, torch.zeros(4, 4, dtype=torch.float64), None)
        >>> bool((m[torch.arange(4), cols] > 0).all())
        True
    """
    positions = torch.randint(0, fan_in + 1, (fan_out,), generator=generator)
    beta = torch.rand(fan_out, generator=generator, dtype=torch.float64) ** (1.0 / alpha)
    matrix = gaussian.clone()
    matrix[torch.arange(fan_out), positions] = beta
    return matrix, positions


@torch.no_grad()
def _assign_rai(weight: Tensor, bias: Tensor | None, matrix: Tensor) -> None:
    if bias is None:
        raise ValueError("RAI/RAAI set the bias too: the layer needs one (bias=True)")
    weight.copy_(matrix[:, :-1].reshape(weight.shape).to(weight.dtype))
    bias.copy_(matrix[:, -1].to(bias.dtype))


def rai_(
    weight: Tensor,
    bias: Tensor | None,
    generator: torch.Generator | None = None,
    std: float = RAI_STD,
    alpha: float = 2.0,
) -> Tensor:
    r"""Random asymmetric initialisation (Lu et al. 2020) of one layer's weight and bias:
    :math:`V \sim N(0, \text{std}^2/n_{in})` of shape :math:`n_{out} \times (n_{in}+1)`, one
    entry per row replaced by :math:`\mathrm{Beta}(\alpha, 1)` (:func:`rai_matrix`);
    :math:`W = V_{:, :-1}`, :math:`b = V_{:, -1}`. No torch namesake.

    Args:
        weight: the weight ``(out, in, *kernel)``, filled in place.
        bias: the bias, filled in place (required).
        generator: the random generator.
        std: 0.6007, Lu et al.'s constant.
        alpha: the Beta parameter (2).

    Returns:
        ``weight``.

    Example:
        >>> layer = torch.nn.Linear(10, 4)
        >>> _ = rai_(layer.weight, layer.bias, torch.Generator().manual_seed(0))
        >>> bool((torch.cat([layer.weight, layer.bias[:, None]], 1) > 0.0).any(dim=1).all())
        True
    """
    fan_in, _ = fans(weight)
    fan_out = weight.shape[0]
    gaussian = torch.randn(fan_out, fan_in + 1, generator=generator, dtype=torch.float64)
    matrix, _ = rai_matrix(fan_out, fan_in, gaussian * (std / math.sqrt(fan_in)), generator, alpha)
    _assign_rai(weight, bias, matrix)
    return weight


def raai_(
    weight: Tensor,
    bias: Tensor | None,
    generator: torch.Generator | None = None,
    sigma_w2: float = 0.92,
    k: float = -1.0,
    alpha: float = 2.0,
    parameterisation: str = "additive",
) -> Tensor:
    r"""Random asymmetric anti-correlated initialisation (seed ``003_…`` §3): the rows
    ``[w, b]`` into every node drawn anti-correlated by :func:`~relulab.init.correlated_`
    (:math:`\sigma_w^2`, ``k``), then RAI's Beta replacement (:func:`rai_matrix`). No torch
    namesake.

    Defaults [I]: :math:`\sigma_w^2 = 0.92`, the seed's Table 1 read with columns σ_w², σ_b²,
    chaotic phase, dead-node probability (its headers were lost); ``k = −1`` under the
    ``"additive"`` reading (rows summing to zero before the replacement; ``k = 100`` under
    ``"precision"`` is the Table 1 value and nearly the same rows).

    Args:
        weight: the weight ``(out, in, *kernel)``, filled in place.
        bias: the bias, filled in place (required).
        generator: the random generator.
        sigma_w2: :math:`\sigma_w^2`.
        k: the correlation strength, read by ``parameterisation``.
        alpha: the Beta parameter.
        parameterisation: the reading of ``k`` (see :mod:`relulab.theory.correlated`).

    Returns:
        ``weight``.

    Example:
        >>> layer = torch.nn.Linear(10, 4)
        >>> _ = raai_(layer.weight, layer.bias, torch.Generator().manual_seed(0))
        >>> layer.weight.shape
        torch.Size([4, 10])
    """
    fan_in, _ = fans(weight)
    fan_out = weight.shape[0]
    rows = correlated_(
        torch.empty(fan_out, fan_in + 1, dtype=torch.float64),
        sigma_w2,
        k=k,
        generator=generator,
        parameterisation=parameterisation,
    )
    matrix, _ = rai_matrix(fan_out, fan_in, rows, generator, alpha)
    _assign_rai(weight, bias, matrix)
    return weight
