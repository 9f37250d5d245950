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
* ``rai_``: random asymmetric initialisation (Lu et al. 2020; SETUPS.md §4). Per layer
  :math:`V \in \mathbb R^{n_{out}\times(n_{in}+1)}`, i.i.d. :math:`N(0, 0.6007^2/n_{in})`; in every
  row one entry, uniformly among the :math:`n_{in}+1` (the last is the bias), is replaced by
  :math:`\xi \sim \mathrm{Beta}(2, 1)`; :math:`W = V_{:, :-1}`, :math:`b = V_{:, -1}`.
* ``raai_``: random asymmetric *anti-correlated* initialisation (seed ``003_…``): the rows of
  :math:`V` (weights and bias into a node) drawn anti-correlated as in :func:`correlated_`, then
  RAI's Beta replacement. Its constants are inferred [I] (Table 1 of the seed lost its headers).

Beta(α, 1) is sampled exactly by inversion, :math:`\xi = U^{1/\alpha}`, so every draw comes from
the given generator.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from relulab.init.correlated import correlated_

__all__ = [
    "FAN_IN_VARIANCE",
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
    """``(fan_in, fan_out)`` of a Linear or Conv weight."""
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


#: Weight variance times fan-in of each scheme: the variance a unit-second-moment input gives the
#: pre-activation (used by :func:`relulab.init.analytic_relu_shift`).
FAN_IN_VARIANCE = {
    "torch_default": 1.0 / 3.0,
    "kaiming_normal": 2.0,
    "kaiming_uniform": 2.0,
    "lecun_normal": 1.0,
}


@torch.no_grad()
def _fill_normal(tensor: Tensor, std: float, generator: torch.Generator | None) -> Tensor:
    draw = torch.randn(tensor.shape, generator=generator, dtype=torch.float64) * std
    return tensor.copy_(draw.to(tensor.dtype))


@torch.no_grad()
def _fill_uniform(tensor: Tensor, bound: float, generator: torch.Generator | None) -> Tensor:
    draw = (torch.rand(tensor.shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    return tensor.copy_(draw.to(tensor.dtype))


def normal_(tensor: Tensor, std: float = 1.0, generator: torch.Generator | None = None) -> Tensor:
    """:math:`N(0, \\text{std}^2)` (seed ``004_…`` uses std² = 2e-4)."""
    return _fill_normal(tensor, std, generator)


def torch_default_(
    weight: Tensor, bias: Tensor | None = None, generator: torch.Generator | None = None
) -> Tensor:
    """The distribution ``nn.Linear``/``nn.Conv`` reset to: weights and biases
    :math:`U(\\pm 1/\\sqrt{n_{in}})` — variance :math:`1/(3 n_{in})`, *not* He init."""
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
    """He normal: :math:`N(0, g^2/n)` with :math:`n` the ``mode`` fan (module docstring)."""
    return _fill_normal(tensor, gain / math.sqrt(_fan(tensor, mode)), generator)


@torch.no_grad()
def kaiming_uniform_(
    tensor: Tensor,
    mode: str = "fan_in",
    gain: float = math.sqrt(2.0),
    generator: torch.Generator | None = None,
) -> Tensor:
    """He uniform: :math:`U(\\pm g\\sqrt{3/n})`, the same variance :math:`g^2/n`."""
    return _fill_uniform(tensor, gain * math.sqrt(3.0 / _fan(tensor, mode)), generator)


def lecun_normal_(tensor: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """LeCun normal: :math:`N(0, 1/n_{in})`."""
    return _fill_normal(tensor, 1.0 / math.sqrt(fans(tensor)[0]), generator)


@torch.no_grad()
def orthogonal_(
    tensor: Tensor, gain: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    """Orthogonal rows or columns (whichever are fewer), scaled by ``gain``."""
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
    """Replace one entry per row of ``gaussian`` ``(fan_out, fan_in + 1)`` by a Beta(α, 1) draw.

    Returns the new matrix and the replaced column of every row.
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
    """Random asymmetric initialisation of one layer's weight and bias (module docstring)."""
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
    """Anti-correlated rows ``[w, b]`` (``correlated_`` with σ_w², ``k`` and its
    ``parameterisation``, over the fan-in + 1 entries), then RAI's Beta replacement.
    Defaults [I]: σ_w² = 0.92 (the seed's Table 1), k = −1 under ``"additive"`` (the zero-sum
    rows; ``k = 100`` under ``"precision"`` is the Table 1 value and nearly the same rows)."""
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
