r"""Per-tensor initialisers in the style of ``torch.nn.init``: in place, name ending in ``_``,
a ``generator`` argument, the tensor returned. Weights are ``(fan_out, fan_in, *kernel)``
(``nn.Linear`` and ``nn.Conv*d`` layouts): :math:`n_{in}` = ``in_features`` or
``in_channels × kernel size``, :math:`n_{out}` likewise.

* ``kaiming_normal_`` / ``kaiming_uniform_`` (He et al. 2015), stated explicitly: std
  :math:`g/\sqrt{n}` or bound :math:`g\sqrt{3/n}`, :math:`n` the fan of ``mode``, gain
  :math:`g = \sqrt{2/(1 + a^2)}` for a (leaky) ReLU of negative slope :math:`a` — torch's
  ``calculate_gain(nonlinearity, a)``, :math:`\sqrt 2` by default. (``nn.Linear``'s default
  is *not* this: it is :math:`U(\pm 1/\sqrt{n_{in}})`, i.e. gain :math:`1/\sqrt 3`.)
* ``lecun_normal_``: std :math:`1/\sqrt{n_{in}}` (LeCun et al. 1998).
* ``orthogonal_``: rows (or columns) orthonormal, times ``gain`` (Saxe et al. 2014), from the
  QR decomposition of a Gaussian matrix with the sign fix of Mezzadri (2007).
* RAI and RAAI (``rai_``, ``raai_``, seed ``003_…``'s inits against dead units): in
  :mod:`relulab.init.rai`.

**A drop-in for torch.nn.init.** ``from relulab import init as nn_init`` runs code written for
``torch.nn.init``: every name of ``torch.nn.init.__all__`` is here. Where relulab adds nothing
the function *is* torch's (``calculate_gain``, ``uniform_``, ``trunc_normal_``, ``constant_``,
``ones_``, ``zeros_``, ``eye_``, ``dirac_``, ``xavier_uniform_``, ``xavier_normal_``,
``sparse_``, and torch's private ``_calculate_fan_in_and_fan_out``, which ``reset_parameters``
code calls); so are the deprecated aliases without the underscore (``normal``, ``uniform``, …:
they warn ``FutureWarning`` as in torch and are left out of ``__all__``).

**Signatures and draws.** The functions sharing a name with ``torch.nn.init`` take its
signature — ``normal_(tensor, mean, std, generator)``, ``kaiming_normal_(tensor, a, mode,
nonlinearity, generator)``, ``kaiming_uniform_`` likewise, ``orthogonal_(tensor, gain,
generator)``, same defaults, positionally or by keyword — and, by default (``draw="torch"``),
*are calls to torch's*: the same draws from the same generator or the global one, the same
errors, the same warning for a zero-element tensor. ``draw="float64"`` draws in float64 and
casts instead, so float32 and float64 tensors get the same numbers from the same generator
(but not torch's numbers): the registry (:data:`relulab.init.SCHEMES`), and through it the
engine's batched networks and :func:`~relulab.init.init_model_`, draws that way. ``kaiming_*``
also take ``gain=`` (keyword only) to give the gain directly; with the gain torch would compute
the draws are still torch's. Unlike torch's, a ``mean``, ``std``, ``a`` or ``gain`` that is
NaN or ±inf is a ``ValueError`` (torch fills the tensor with NaN or ±inf without a word;
:mod:`relulab.init.checks`). Schemes of weight *and* bias — :func:`torch_default_`,
:func:`~relulab.init.rai_`, :func:`~relulab.init.raai_` and :func:`~relulab.init.correlated_` —
share one convention: ``(weight, bias, *, scheme parameters…, generator=None)``. RAI, RAAI and
the correlated rows are always drawn in float64.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Literal, cast

import torch
from torch import Tensor

# Re-exported, the same objects: torch's functions where relulab adds nothing
# (TORCH_FUNCTIONS), its deprecated aliases (DEPRECATED_ALIASES: FutureWarning, then torch's
# function; not in __all__) and its private _calculate_fan_in_and_fan_out, which
# reset_parameters code written for torch calls.
from torch.nn.init import (  # noqa: F401
    _calculate_fan_in_and_fan_out,
    calculate_gain,
    constant,
    constant_,
    dirac,
    dirac_,
    eye,
    eye_,
    kaiming_normal,
    kaiming_uniform,
    normal,
    ones_,
    orthogonal,
    sparse,
    sparse_,
    trunc_normal_,
    uniform,
    uniform_,
    xavier_normal,
    xavier_normal_,
    xavier_uniform,
    xavier_uniform_,
    zeros_,
)

from relulab.init.checks import check_finite_numbers

if TYPE_CHECKING:  # torch's stubs type these names as Literals (private aliases, stubs only)
    from torch.nn.init import _FanMode, _NonlinearityType

__all__ = [
    "BIAS_FREE",
    "DEPRECATED_ALIASES",
    "DRAWS",
    "TORCH_FUNCTIONS",
    "BiasFree",
    "InitNotApplicableError",
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "fans",
    "kaiming_normal_",
    "kaiming_uniform_",
    "lecun_normal_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "torch_default_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

#: The functions of ``torch.nn.init`` that are re-exported unchanged (``is`` torch's).
TORCH_FUNCTIONS: tuple[str, ...] = (
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "ones_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
)

#: torch's deprecated names without the underscore, re-exported (torch's objects) but not in
#: ``__all__``: old code keeps running, with torch's ``FutureWarning``.
DEPRECATED_ALIASES: tuple[str, ...] = (
    "constant",
    "dirac",
    "eye",
    "kaiming_normal",
    "kaiming_uniform",
    "normal",
    "orthogonal",
    "sparse",
    "uniform",
    "xavier_normal",
    "xavier_uniform",
)

Draw = Literal["torch", "float64"]

#: How a per-tensor initialiser draws: like ``torch.nn.init`` in the tensor's dtype, or in
#: float64 and cast (the registry's way: float32 and float64 tensors get the same numbers).
DRAWS: tuple[str, ...] = ("torch", "float64")


class InitNotApplicableError(ValueError):
    """An initialiser that cannot apply to this layer or model (e.g. it sets biases and the
    layer has none). ``relulab diagnose`` skips such an init with a note."""


BiasFree = Literal["error", "add", "scale"]

#: What an initialiser that sets biases (``scale_bias_``, ``rai_``, ``raai_``) does with a
#: layer that has none: ``"error"`` (raise :class:`InitNotApplicableError`, the default),
#: ``"add"`` (give it a zero bias parameter first: model-level initialisers only) or
#: ``"scale"`` (set what it can without a bias: scale+bias scales uncentred, RAI / RAAI draw
#: the weights alone).
BIAS_FREE: tuple[str, ...] = ("error", "add", "scale")


def _check_draw(draw: str) -> None:
    if draw not in DRAWS:
        raise ValueError(f"draw must be 'torch' or 'float64', got {draw!r}")


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
    """The fan of ``mode`` (case-insensitive, as torch's)."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _is_empty(tensor: Tensor) -> bool:
    """torch's rule for ``kaiming_*``: a tensor with a zero-size dimension is left as it is,
    with torch's ``UserWarning`` (attributed to the caller of the public function)."""
    if 0 not in tensor.shape:
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
    return True


def _torch_names(mode: str, nonlinearity: str) -> tuple[_FanMode, _NonlinearityType]:
    """``mode`` and ``nonlinearity`` as torch's stubs type them (Literals); torch checks them."""
    return cast("_FanMode", mode), cast("_NonlinearityType", nonlinearity)


def _kaiming_gain(a: float, nonlinearity: str, gain: float | None) -> float:
    """torch's ``calculate_gain(nonlinearity, a)``, or ``gain`` when given directly."""
    if gain is None:
        return calculate_gain(cast("_NonlinearityType", nonlinearity), a)  # torch checks it
    if a != 0 or nonlinearity != "leaky_relu":
        raise ValueError("give the gain either directly (gain=) or through a and nonlinearity")
    return gain


def _kaiming_std(
    tensor: Tensor, a: float, mode: str, nonlinearity: str, gain: float | None
) -> float:
    r""":math:`g/\sqrt{n}`, computed in torch's order (so the same float as torch's)."""
    return _kaiming_gain(a, nonlinearity, gain) / math.sqrt(_fan(tensor, mode))


@torch.no_grad()
def _fill_normal(
    tensor: Tensor, std: float, generator: torch.Generator | None, mean: float = 0.0
) -> Tensor:
    """The float64 draw: :math:`N(\\text{mean}, \\text{std}^2)` in float64, cast."""
    draw = torch.randn(tensor.shape, generator=generator, dtype=torch.float64) * std
    if mean:
        draw = draw + mean
    return tensor.copy_(draw.to(tensor.dtype))


@torch.no_grad()
def _fill_uniform(tensor: Tensor, bound: float, generator: torch.Generator | None) -> Tensor:
    """The float64 draw: :math:`U(\\pm\\text{bound})` in float64, cast."""
    draw = (torch.rand(tensor.shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    return tensor.copy_(draw.to(tensor.dtype))


def normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    generator: torch.Generator | None = None,
    *,
    draw: Draw = "torch",
) -> Tensor:
    r"""Fill ``tensor`` with :math:`N(\text{mean}, \text{std}^2)` draws (seed ``004_…`` appendix
    E uses mean 0, std² = 2e-4: small initial weights).

    The signature and, with ``draw="torch"``, the draws of ``torch.nn.init.normal_`` (a call to
    it).

    Args:
        tensor: the tensor to fill in place.
        mean: the mean.
        std: the standard deviation.
        generator: the random generator (default: torch's global one).
        draw: ``"torch"`` (torch's draws, in the tensor's dtype) or ``"float64"``.

    Returns:
        ``tensor``.

    Example:
        >>> w = normal_(torch.empty(3, 5), std=0.01, generator=torch.Generator().manual_seed(0))
        >>> bool(w.abs().max() < 0.1)
        True
    """
    _check_draw(draw)
    check_finite_numbers("normal_", mean=mean, std=std)
    if draw == "torch":
        return torch.nn.init.normal_(tensor, mean, std, generator)
    return _fill_normal(tensor, std, generator, mean)


def torch_default_(
    weight: Tensor,
    bias: Tensor | None = None,
    *,
    generator: torch.Generator | None = None,
    draw: Draw = "torch",
) -> Tensor:
    r"""The distribution ``nn.Linear``/``nn.Conv`` reset to: weights and biases
    :math:`U(\pm 1/\sqrt{n_{in}})` — variance :math:`1/(3 n_{in})`, *not* He init (torch's
    ``reset_parameters`` calls ``kaiming_uniform_(a=√5)``, which is this bound). No torch
    namesake; with ``draw="torch"`` the draws are those of the layers' ``reset_parameters``
    (``kaiming_uniform_(weight, a=√5)``, then the bias) from the same generator.

    Args:
        weight: the weight ``(out, in, *kernel)``, filled in place.
        bias: the bias ``(out,)``, filled in place after the weight, or ``None``.
        generator: the random generator.
        draw: ``"torch"`` or ``"float64"``.

    Returns:
        ``weight``.

    Example:
        >>> layer = torch.nn.Linear(100, 3)
        >>> _ = torch_default_(layer.weight, layer.bias, generator=torch.Generator().manual_seed(0))
        >>> bool(layer.weight.abs().max() <= 0.1)
        True
    """
    _check_draw(draw)
    fan_in = fans(weight)[0]
    if draw == "torch":
        torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
        if bias is not None:
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            torch.nn.init.uniform_(bias, -bound, bound, generator)
        return weight
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0  # torch's rule for fan-in 0
    _fill_uniform(weight, bound, generator)
    if bias is not None:
        _fill_uniform(bias, bound, generator)
    return weight


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: torch.Generator | None = None,
    *,
    gain: float | None = None,
    draw: Draw = "torch",
) -> Tensor:
    r"""He normal (He et al. 2015): :math:`N(0, g^2/n)`, :math:`n` the fan of ``mode``; with the
    default gain :math:`g = \sqrt{2/(1 + a^2)} = \sqrt 2` every ReLU layer keeps the second
    moment of its input.

    The signature and, with ``draw="torch"``, the draws of ``torch.nn.init.kaiming_normal_``
    (without ``gain=`` it is a call to it); ``gain=`` gives :math:`g` directly instead of
    through ``a`` and ``nonlinearity``. As torch's, a zero-element tensor is left as it is with
    a ``UserWarning``, and a tensor of fewer than 2 dimensions raises ``ValueError``.

    Args:
        tensor: the weight ``(out, in, *kernel)``, filled in place.
        a: the negative slope of the leaky ReLU after this layer (``nonlinearity="leaky_relu"``).
        mode: ``"fan_in"`` (preserve forward variance) or ``"fan_out"`` (backward); any case.
        nonlinearity: as ``torch.nn.init.calculate_gain``: ``"relu"``, ``"leaky_relu"``, …
        generator: the random generator.
        gain: :math:`g` directly (then leave ``a`` and ``nonlinearity`` at their defaults).
        draw: ``"torch"`` or ``"float64"``.

    Returns:
        ``tensor``.

    Example:
        >>> w = kaiming_normal_(torch.empty(400, 300), generator=torch.Generator().manual_seed(0))
        >>> round(float(w.var() * 300), 1)
        2.0
    """
    _check_draw(draw)
    check_finite_numbers("kaiming_normal_", a=a, gain=gain)
    if _is_empty(tensor):
        return tensor
    if draw == "torch" and gain is None:
        return torch.nn.init.kaiming_normal_(
            tensor, a, *_torch_names(mode, nonlinearity), generator
        )
    std = _kaiming_std(tensor, a, mode, nonlinearity, gain)
    if draw == "float64":
        return _fill_normal(tensor, std, generator)
    with torch.no_grad():
        return tensor.normal_(0, std, generator=generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: torch.Generator | None = None,
    *,
    gain: float | None = None,
    draw: Draw = "torch",
) -> Tensor:
    r"""He uniform (He et al. 2015): :math:`U(\pm g\sqrt{3/n})`, the same variance
    :math:`g^2/n` as :func:`kaiming_normal_`.

    The signature and, with ``draw="torch"``, the draws of ``torch.nn.init.kaiming_uniform_``
    (without ``gain=`` it is a call to it); zero-element and 1-D tensors as torch's.

    Args:
        tensor: the weight, filled in place.
        a: the negative slope of the following leaky ReLU.
        mode: ``"fan_in"`` or ``"fan_out"``.
        nonlinearity: as ``torch.nn.init.calculate_gain``.
        generator: the random generator.
        gain: :math:`g` directly.
        draw: ``"torch"`` or ``"float64"``.

    Returns:
        ``tensor``.

    Example:
        >>> w = kaiming_uniform_(torch.empty(8, 6), generator=torch.Generator().manual_seed(0))
        >>> bool(w.abs().max() <= 1.0)  # bound √2·√(3/6) = 1
        True
    """
    _check_draw(draw)
    check_finite_numbers("kaiming_uniform_", a=a, gain=gain)
    if _is_empty(tensor):
        return tensor
    if draw == "torch" and gain is None:
        return torch.nn.init.kaiming_uniform_(
            tensor, a, *_torch_names(mode, nonlinearity), generator
        )
    if draw == "float64":
        g = _kaiming_gain(a, nonlinearity, gain)
        return _fill_uniform(tensor, g * math.sqrt(3.0 / _fan(tensor, mode)), generator)
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, gain)
    with torch.no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def lecun_normal_(
    tensor: Tensor, generator: torch.Generator | None = None, *, draw: Draw = "torch"
) -> Tensor:
    r"""LeCun normal (LeCun et al. 1998): :math:`N(0, 1/n_{in})`, untruncated. torch has no
    namesake (the draw ``"torch"`` is ``tensor.normal_(0, std)``); JAX/Flax's ``lecun_normal``
    is a *truncated* normal of the same variance.

    Args:
        tensor: the weight, filled in place.
        generator: the random generator.
        draw: ``"torch"`` or ``"float64"``.

    Returns:
        ``tensor``.

    Example:
        >>> w = lecun_normal_(torch.empty(400, 300), generator=torch.Generator().manual_seed(0))
        >>> round(float(w.var() * 300), 1)
        1.0
    """
    _check_draw(draw)
    if _is_empty(tensor):
        return tensor
    std = 1.0 / math.sqrt(fans(tensor)[0])
    if draw == "float64":
        return _fill_normal(tensor, std, generator)
    with torch.no_grad():
        return tensor.normal_(0, std, generator=generator)


@torch.no_grad()
def orthogonal_(
    tensor: Tensor,
    gain: float = 1,
    generator: torch.Generator | None = None,
    *,
    draw: Draw = "torch",
) -> Tensor:
    r"""Orthogonal rows or columns (whichever are fewer), times ``gain`` (Saxe et al. 2014): the
    Q factor of the QR decomposition of a Gaussian matrix with the sign fix of Mezzadri (2007),
    so Q is Haar-distributed. The signature and, with ``draw="torch"``, the draws of
    ``torch.nn.init.orthogonal_`` (a call to it); with either draw a tensor of fewer than 2
    dimensions raises torch's ``ValueError`` and a zero-element one is left as it is.

    Args:
        tensor: at least 2-D; flattened to ``(out, rest)``.
        gain: the scale.
        generator: the random generator.
        draw: ``"torch"`` or ``"float64"``.

    Returns:
        ``tensor``.

    Example:
        >>> w = orthogonal_(torch.empty(3, 5, dtype=torch.float64))
        >>> torch.allclose(w @ w.T, torch.eye(3, dtype=torch.float64))
        True
    """
    _check_draw(draw)
    check_finite_numbers("orthogonal_", gain=gain)
    if draw == "torch":
        return torch.nn.init.orthogonal_(tensor, gain, generator)
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or tensor.is_meta:
        return tensor  # torch's no-op
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = torch.randn(max(rows, cols), min(rows, cols), generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(flat)
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # Haar-distributed (Mezzadri 2007)
    if rows < cols:
        q = q.T
    return tensor.copy_((gain * q).reshape(tensor.shape).to(tensor.dtype))
