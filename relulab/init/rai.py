r"""The asymmetric initialisers against dead ReLUs: RAI (Lu et al. 2020, *Dying ReLU and
initialization*; used by seed ``003_…`` §3 and appendix C) and RAAI (seed ``003_…``).

* ``rai_``: per layer :math:`V \in \mathbb R^{n_{out}\times(n_{in}+1)}`, i.i.d.
  :math:`N(0, 0.6007^2/n_{in})`; in every row one entry, uniformly among the :math:`n_{in}+1`
  (the last is the bias), is replaced by :math:`\xi \sim \mathrm{Beta}(2, 1)`;
  :math:`W = V_{:, :-1}`, :math:`b = V_{:, -1}`.
* ``raai_``: random asymmetric *anti-correlated* initialisation: the rows of :math:`V` (weights
  and bias into a node) drawn anti-correlated as in :func:`~relulab.init.correlated_`, then
  RAI's Beta replacement. Its constants are inferred [I] (Table 1 of the seed lost its headers).

Beta(α, 1) is sampled exactly by inversion, :math:`\xi = U^{1/\alpha}`, so every draw comes from
the given generator. Both share the convention of weight-and-bias schemes,
``(weight, bias, *, scheme parameters…, generator=None)``, and draw in float64.

**Layers without a bias** (ResNet's convolutions, every linear layer of Llama or T5): both
draw the bias with the weights, so by ``bias_free``, as :func:`~relulab.init.scale_bias_` —
``"error"`` (the default: :class:`~relulab.init.InitNotApplicableError`), ``"scale"`` (what is
left of the scheme without a bias: the weights drawn alone, :math:`V \in \mathbb
R^{n_{out}\times n_{in}}`, the Beta entry then always a weight) or ``"add"`` (a zero bias
parameter first, then the whole scheme; only a model-level initialiser can add a parameter:
:func:`~relulab.init.init_model_` with ``bias_free="add"``).

**Refused** (``ValueError``, nothing written): a weight of fan-in 0 (the scale
:math:`1/\sqrt{n_{in}}` is undefined), and parameters that would make a weight NaN or ±inf
(:mod:`relulab.init.checks`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from relulab.init.checks import check_fan_in, check_finite_values
from relulab.init.correlated import correlated_
from relulab.init.tensor import BIAS_FREE, BiasFree, InitNotApplicableError, fans

__all__ = ["RAI_STD", "raai_", "rai_", "rai_matrix"]

#: Lu et al. 2020's standard deviation constant: :math:`V \sim N(0, 0.6007^2/n_{in})`.
RAI_STD = 0.6007


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


def _with_bias(scheme: str, weight: Tensor, bias: Tensor | None, bias_free: str) -> bool:
    """Whether the bias is drawn with the weight (else ``bias_free="scale"``: weights alone);
    refuses a bad weight or bias, and a missing bias unless ``bias_free`` says what to do."""
    if bias_free not in BIAS_FREE:
        raise ValueError(f"bias_free must be one of {', '.join(BIAS_FREE)}, got {bias_free!r}")
    if not isinstance(weight, Tensor) or weight.dim() < 2:
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"{scheme} needs a weight of ≥ 2 dimensions (out, in, …), got {shape}")
    check_fan_in(weight, scheme)
    if bias is None:
        if bias_free == "error":
            raise InitNotApplicableError(
                f"{scheme} draws the weights and the bias together: the layer needs a bias "
                "(bias=True); pass bias_free='scale' to draw its weights alone, or give a model "
                f"init_model_(model, {scheme.rstrip('_')!r}, bias_free='add')"
            )
        if bias_free == "add":
            raise ValueError(
                f"{scheme}(bias_free='add') cannot add a bias to a tensor: give the layer one, "
                f"or use init_model_(model, {scheme.rstrip('_')!r}, bias_free='add'), which does"
            )
        return False
    if not isinstance(bias, Tensor) or tuple(bias.shape) != (weight.shape[0],):
        shape = tuple(bias.shape) if isinstance(bias, Tensor) else type(bias).__name__
        raise ValueError(
            f"{scheme}: the bias must have shape ({weight.shape[0]},) to match the weight "
            f"{tuple(weight.shape)}, got {shape}"
        )
    return True


@torch.no_grad()
def _assign(scheme: str, weight: Tensor, bias: Tensor | None, matrix: Tensor) -> None:
    """``[W, b]`` (or ``W`` alone without a bias) from the rows of ``matrix``, refused (nothing
    written) if it holds NaN or ±inf (a NaN or infinite scheme parameter)."""
    check_finite_values(scheme, {"the weight and bias": matrix})
    columns = matrix if bias is None else matrix[:, :-1]
    weight.copy_(columns.reshape(weight.shape).to(weight.dtype))
    if bias is not None:
        bias.copy_(matrix[:, -1].to(bias.dtype))


def rai_(
    weight: Tensor,
    bias: Tensor | None,
    *,
    std: float = RAI_STD,
    alpha: float = 2.0,
    generator: torch.Generator | None = None,
    bias_free: BiasFree = "error",
) -> Tensor:
    r"""Random asymmetric initialisation (Lu et al. 2020) of one layer's weight and bias:
    :math:`V \sim N(0, \text{std}^2/n_{in})` of shape :math:`n_{out} \times (n_{in}+1)`, one
    entry per row replaced by :math:`\mathrm{Beta}(\alpha, 1)` (:func:`rai_matrix`);
    :math:`W = V_{:, :-1}`, :math:`b = V_{:, -1}`. No torch namesake; drawn in float64.

    Without a bias, by ``bias_free`` (module docstring): ``"error"`` (default) raises
    :class:`~relulab.init.InitNotApplicableError`; ``"scale"`` draws :math:`V` of shape
    :math:`n_{out} \times n_{in}` and sets :math:`W = V` (the Beta entry is a weight);
    ``"add"`` is for a model (:func:`~relulab.init.init_model_`), a ``ValueError`` here.

    Args:
        weight: the weight ``(out, in, *kernel)``, filled in place.
        bias: the bias ``(out,)``, filled in place, or ``None`` (then see ``bias_free``).
        std: 0.6007, Lu et al.'s constant.
        alpha: the Beta parameter (2).
        generator: the random generator.
        bias_free: ``"error"``, ``"scale"`` or ``"add"``, for ``bias=None``.

    Returns:
        ``weight``.

    Example:
        >>> layer = torch.nn.Linear(10, 4)
        >>> _ = rai_(layer.weight, layer.bias, generator=torch.Generator().manual_seed(0))
        >>> bool((torch.cat([layer.weight, layer.bias[:, None]], 1) > 0.0).any(dim=1).all())
        True
        >>> free = torch.nn.Linear(10, 4, bias=False)
        >>> _ = rai_(free.weight, None, bias_free="scale")
        >>> bool((free.weight > 0).any(dim=1).all())  # every row has its Beta entry
        True
    """
    with_bias = _with_bias("rai_", weight, bias, bias_free)
    fan_in, _ = fans(weight)
    fan_out, columns = weight.shape[0], fan_in + with_bias
    gaussian = torch.randn(fan_out, columns, generator=generator, dtype=torch.float64)
    scaled = gaussian * (std / math.sqrt(fan_in))
    matrix, _ = rai_matrix(fan_out, columns - 1, scaled, generator, alpha)  # any column
    _assign("rai_", weight, bias, matrix)
    return weight


def raai_(
    weight: Tensor,
    bias: Tensor | None,
    *,
    sigma_w2: float = 0.92,
    k: float = -1.0,
    alpha: float = 2.0,
    parameterisation: str = "additive",
    generator: torch.Generator | None = None,
    bias_free: BiasFree = "error",
) -> Tensor:
    r"""Random asymmetric anti-correlated initialisation (seed ``003_…`` §3): the rows
    ``[w, b]`` into every node drawn anti-correlated by :func:`~relulab.init.correlated_`
    (:math:`\sigma_w^2`, ``k``), then RAI's Beta replacement (:func:`rai_matrix`). No torch
    namesake; drawn in float64.

    Defaults [I]: :math:`\sigma_w^2 = 0.92`, the seed's Table 1 read with columns σ_w², σ_b²,
    chaotic phase, dead-node probability (its headers were lost); ``k = −1`` under the
    ``"additive"`` reading (rows summing to zero before the replacement; ``k = 100`` under
    ``"precision"`` is the Table 1 value and nearly the same rows).

    Without a bias, by ``bias_free`` as :func:`rai_`: ``"scale"`` draws the rows ``w`` alone
    (anti-correlated over the weights), then the Beta entry among them.

    Args:
        weight: the weight ``(out, in, *kernel)``, filled in place.
        bias: the bias ``(out,)``, filled in place, or ``None`` (then see ``bias_free``).
        sigma_w2: :math:`\sigma_w^2`.
        k: the correlation strength, read by ``parameterisation``.
        alpha: the Beta parameter.
        parameterisation: the reading of ``k`` (see :mod:`relulab.theory.correlated`).
        generator: the random generator.
        bias_free: ``"error"``, ``"scale"`` or ``"add"``, for ``bias=None``.

    Returns:
        ``weight``.

    Example:
        >>> layer = torch.nn.Linear(10, 4)
        >>> _ = raai_(layer.weight, layer.bias, generator=torch.Generator().manual_seed(0))
        >>> layer.weight.shape
        torch.Size([4, 10])
    """
    with_bias = _with_bias("raai_", weight, bias, bias_free)
    fan_in, _ = fans(weight)
    fan_out, columns = weight.shape[0], fan_in + with_bias
    rows = correlated_(
        torch.empty(fan_out, columns, dtype=torch.float64),
        sigma_w2=sigma_w2,
        k=k,
        parameterisation=parameterisation,
        generator=generator,
    )
    matrix, _ = rai_matrix(fan_out, columns - 1, rows, generator, alpha)
    _assign("raai_", weight, bias, matrix)
    return weight
