r"""The one registry of named initialisation schemes, read by every user of a scheme name.

:data:`SCHEMES` maps a name to a :class:`Scheme`: how it fills one layer's weight (and its bias
rule), the weight variance times fan-in it implies (for :func:`relulab.init.analytic_relu_shift`),
or — for the data-dependent schemes — the model-level function that needs data. Readers:
the engine's batched draw (:func:`relulab.engine.init_weight_stack`), :func:`init_model_` and
:func:`apply_init_` on any ``nn.Module``, :func:`relulab.init.analytic_relu_shift` and the
``relulab diagnose`` command.

Per-tensor schemes (:math:`n_{in}` = the layer's fan-in; the bias rule;
:math:`\mathrm{Var}(W)\,n_{in}`):

* ``torch_default``: weights and biases :math:`U(\pm 1/\sqrt{n_{in}})`, what ``nn.Linear`` and
  ``nn.Conv`` reset to — *not* He init; bias drawn; 1/3.
* ``kaiming_normal``: :math:`N(0, 2/n_{in})` (He et al. 2015); bias 0; 2.
* ``kaiming_uniform``: :math:`U(\pm\sqrt{6/n_{in}})` (He et al. 2015); bias 0; 2.
* ``lecun_normal``: :math:`N(0, 1/n_{in})` (LeCun et al. 1998); bias 0; 1.
* ``normal``: :math:`N(0, 1)`, so a ``scale`` is the std σ (seed ``004_…`` appendix E:
  σ² = 2e-4); bias 0.
* ``orthogonal``: orthonormal rows or columns (Saxe et al. 2014); bias 0.
* ``rai``: random asymmetric initialisation (Lu et al. 2020); weights and bias drawn together.
* ``raai``: anti-correlated rows ``[w, b]`` then RAI's Beta entry (seed ``003_…`` §3); drawn.
* ``correlated``: rows :math:`N(0, (\sigma_w^2/N)(aI + (b/N)J))`, ``k`` read by a
  ``parameterisation`` (seed ``003_…`` §2: ACI, and positively correlated controls); bias
  :math:`N(0, \sigma_b^2)`, drawn (0 by default). Defaults: :math:`\sigma_w^2 = 2`, uncorrelated.

Data-dependent schemes (:mod:`relulab.init.model`): ``scale`` (seed ``002_…`` §5.1, eq. 13),
``scale_bias`` (eqs. 14 then 13), ``lsuv`` (Mishkin & Matas 2015).

Which weights a model-level initialiser sets — Linear, Conv, ConvTranspose, HuggingFace
``Conv1D``, ``nn.MultiheadAttention`` — and which it lists as untouched:
:mod:`relulab.init.layers` (``docs/init.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import torch
from torch import Tensor, nn

from relulab.init.correlated import correlated_
from relulab.init.data import Data
from relulab.init.layers import Selector, select_blocks
from relulab.init.model import (
    InitReport,
    lsuv_,
    prepare_bias_free,
    scale_,
    scale_bias_,
)
from relulab.init.rai import raai_, rai_
from relulab.init.report import block_report, complete_report
from relulab.init.tensor import (
    BiasFree,
    Draw,
    kaiming_normal_,
    kaiming_uniform_,
    lecun_normal_,
    normal_,
    orthogonal_,
    torch_default_,
)

__all__ = [
    "FAN_IN_VARIANCE",
    "INIT_SCHEMES",
    "MODEL_INITS",
    "SCHEMES",
    "RAI_BIAS_FREE_HINT",
    "Scheme",
    "apply_init_",
    "get_scheme",
    "init_model_",
]

Initialiser = Callable[..., Tensor]
DataDependentInit = Callable[..., InitReport]


@dataclass(frozen=True)
class Scheme:
    """One named initialisation scheme.

    Attributes:
        name: the registry key.
        description: the law of the weights, with its source.
        bias: the bias rule — ``"zero"`` (set to 0), ``"drawn"`` (drawn with the weight by the
            initialiser) or ``"data"`` (set from data).
        initialiser: per-tensor schemes: ``initialiser(weight, generator=..., **options)`` for
            the bias rule ``"zero"``, ``initialiser(weight, bias, generator=..., **options)``
            for ``"drawn"``; ``None`` for data-dependent schemes. The registry's initialisers
            draw in float64 (``draw="float64"``), so the engine's float32 and float64
            networks start from the same numbers.
        fan_in_variance: :math:`\\mathrm{Var}(W)\\,n_{in}`, the pre-activation variance a
            unit-second-moment input gets; ``None`` where it is not a constant.
        apply: data-dependent schemes: ``apply(model, data, generator=..., include=...,
            exclude=...)`` returning an :class:`~relulab.init.InitReport`; ``None`` for
            per-tensor schemes.
        requires_bias: the scheme sets every layer's bias (RAI, RAAI, scale+bias): a layer
            without one makes it :class:`~relulab.init.InitNotApplicableError`.

    Example:
        >>> scheme = SCHEMES["torch_default"]
        >>> scheme.bias, scheme.fan_in_variance, scheme.data_dependent
        ('drawn', 0.3333333333333333, False)
        >>> layer = nn.Linear(4, 2)
        >>> scheme.fill(layer.weight, layer.bias, torch.Generator().manual_seed(0))
    """

    name: str
    description: str
    bias: Literal["zero", "drawn", "data"]
    initialiser: Initialiser | None = None
    fan_in_variance: float | None = None
    apply: DataDependentInit | None = None
    requires_bias: bool = False

    @property
    def data_dependent(self) -> bool:
        """Whether the scheme needs data (then it has ``apply`` and no ``initialiser``)."""
        return self.apply is not None

    @torch.no_grad()
    def fill(
        self,
        weight: Tensor,
        bias: Tensor | None,
        generator: torch.Generator | None = None,
        **options: Any,
    ) -> None:
        """Initialise one layer in place: the weight by the scheme, the bias by its rule.

        Args:
            weight: ``(out, in, *kernel)``.
            bias: ``(out,)`` or ``None``.
            generator: the random generator.
            **options: passed to the initialiser (e.g. ``mode``, ``gain``).
        """
        if self.initialiser is None:
            raise ValueError(f"{self.name!r} is data-dependent: it has no per-layer fill")
        if self.bias == "drawn":
            self.initialiser(weight, bias, generator=generator, **options)
            return
        self.initialiser(weight, generator=generator, **options)
        if bias is not None:
            bias.zero_()


_FLOAT64: Draw = "float64"  # the registry's draw: float32 and float64 networks get the same numbers

_ALL = (
    Scheme(
        "torch_default",
        "weights and biases U(±1/√n_in), what nn.Linear/nn.Conv reset to (not He init)",
        "drawn",
        partial(torch_default_, draw=_FLOAT64),
        1.0 / 3.0,
    ),
    Scheme(
        "kaiming_normal",
        "N(0, 2/n_in) (He et al. 2015), biases 0",
        "zero",
        partial(kaiming_normal_, draw=_FLOAT64),
        2.0,
    ),
    Scheme(
        "kaiming_uniform",
        "U(±√(6/n_in)) (He et al. 2015), biases 0",
        "zero",
        partial(kaiming_uniform_, draw=_FLOAT64),
        2.0,
    ),
    Scheme(
        "lecun_normal",
        "N(0, 1/n_in) (LeCun et al. 1998), biases 0",
        "zero",
        partial(lecun_normal_, draw=_FLOAT64),
        1.0,
    ),
    Scheme(
        "normal",
        "N(0, 1), so a scale is the std σ (seed 004 appendix E: σ² = 2e-4), biases 0",
        "zero",
        partial(normal_, draw=_FLOAT64),
    ),
    Scheme(
        "orthogonal",
        "orthonormal rows or columns (Saxe et al. 2014), biases 0",
        "zero",
        partial(orthogonal_, draw=_FLOAT64),
    ),
    Scheme(
        "rai",
        "random asymmetric init of weights and bias (Lu et al. 2020)",
        "drawn",
        rai_,
        requires_bias=True,
    ),
    Scheme(
        "raai",
        "anti-correlated rows [w, b], then RAI's Beta entry (seed 003 §3)",
        "drawn",
        raai_,
        requires_bias=True,
    ),
    Scheme(
        "correlated",
        "correlated Gaussian rows (σ_w²/N)(aI + (b/N)J), bias N(0, σ_b²) (seed 003 §2, ACI)",
        "drawn",
        correlated_,
    ),
    Scheme(
        "scale",
        "N(0, 1), then unit second moment per layer on data (seed 002 §5.1, eq. 13)",
        "zero",
        apply=scale_,
    ),
    Scheme(
        "scale_bias",
        "scale with biases centring every feature on data (seed 002 §5.1, eqs. 14, 13)",
        "data",
        apply=scale_bias_,
        requires_bias=True,
    ),
    Scheme(
        "lsuv",
        "orthonormal, then unit output variance per layer (Mishkin & Matas 2015)",
        "zero",
        apply=lsuv_,
    ),
)

#: Every scheme by name.
SCHEMES: dict[str, Scheme] = {scheme.name: scheme for scheme in _ALL}

#: The per-tensor schemes (no data needed): what the engine can draw for a weight stack.
INIT_SCHEMES: tuple[str, ...] = tuple(s.name for s in _ALL if not s.data_dependent)

#: Every scheme a model can be initialised with (per-tensor and data-dependent).
MODEL_INITS: tuple[str, ...] = tuple(SCHEMES)

#: :math:`\mathrm{Var}(W)\,n_{in}` of the schemes where it is a constant.
FAN_IN_VARIANCE: dict[str, float] = {
    s.name: s.fan_in_variance for s in _ALL if s.fan_in_variance is not None
}


def get_scheme(name: str) -> Scheme:
    """The registered scheme called ``name``.

    Args:
        name: a key of :data:`SCHEMES`.

    Returns:
        The :class:`Scheme`.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).

    Example:
        >>> get_scheme("kaiming_normal").fan_in_variance
        2.0
    """
    try:
        return SCHEMES[name]
    except KeyError:
        raise ValueError(f"unknown init {name!r}; choose from {', '.join(SCHEMES)}") from None


#: What :func:`init_model_` says of RAI / RAAI on bias-free layers, and what to do instead.
RAI_BIAS_FREE_HINT = (
    ". Pass bias_free='add' to give them a zero bias parameter first, drawn with the weights "
    "(the model gains parameters: build the optimiser afterwards), bias_free='scale' to draw "
    "their weights alone (the Beta entry among the weights), or exclude= to leave them as they "
    "are"
)


@torch.no_grad()
def init_model_(
    model: nn.Module,
    scheme: str,
    generator: torch.Generator | None = None,
    *,
    include: Selector | None = None,
    exclude: Selector | None = None,
    bias_free: BiasFree = "error",
    **kwargs: float,
) -> InitReport:
    """Apply a per-tensor scheme of :data:`SCHEMES` to every layer of ``model``.

    The layers are the blocks of :mod:`relulab.init.layers`: ``nn.Linear``, ``nn.Conv*d``,
    ``nn.ConvTranspose*d`` (as the equivalent convolution ``(out, in/groups, *kernel)``),
    HuggingFace ``Conv1D`` (as its transpose ``(out, in)``) and ``nn.MultiheadAttention``
    (``in_proj`` as three ``(d, d)`` blocks q, k, v, each with its own fans; ``out_proj``). Each
    weight is drawn by the scheme; its bias follows the scheme's bias rule (0, except
    ``torch_default``, ``rai``, ``raai`` and ``correlated``, which draw it). Layers are visited
    in ``model.named_modules()`` order, all from the one ``generator``, in float64 (the
    registry's draw, the engine's too); pass ``draw="torch"`` for torch's own draws. Every
    other parameter (embeddings, normalisation layers, …) is left as it is and listed in
    ``report.untouched``, a tied one under each of its names.

    ``rai`` and ``raai`` draw every layer's bias with its weights. A layer without a bias
    (ResNet's convolutions, the linear layers of Llama or T5) is handled by ``bias_free``, as
    :func:`~relulab.init.scale_bias_` handles it: ``"error"`` (default: raise
    :class:`~relulab.init.InitNotApplicableError` naming them and these options, before
    anything is changed), ``"add"`` (give each a zero bias parameter, then draw it with the
    weights: the model gains parameters, so build the optimiser afterwards) or ``"scale"`` (draw
    their weights alone, the Beta entry among the weights; the others as usual). Other schemes
    set no bias they need, and ignore it.

    Args:
        model: any ``nn.Module`` with such layers.
        scheme: a per-tensor scheme name (:data:`INIT_SCHEMES`); the data-dependent ones need
            :func:`apply_init_` with data.
        generator: the random generator (default: torch's global one).
        include: the layers to set (:data:`relulab.init.layers.Selector`); default all.
        exclude: the layers to leave (e.g. ``exclude="classifier"``); default none. A layer
            whose weight is tied to an embedding is always left to it.
        bias_free: ``"error"``, ``"add"`` or ``"scale"``: RAI / RAAI on bias-free layers.
        **kwargs: options passed to the per-tensor initialiser (e.g. ``mode``, ``gain`` of
            :func:`~relulab.init.kaiming_normal_`).

    Returns:
        An :class:`~relulab.init.InitReport`, one row per layer (``note``: ``bias added`` or
        ``no bias: weights drawn alone``), with the untouched weights.

    Raises:
        InitNotApplicableError: ``rai`` / ``raai`` on a model with bias-free layers (named),
            with ``bias_free="error"``.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> report = init_model_(model, "kaiming_normal", torch.Generator().manual_seed(0))
        >>> [row.layer for row in report]
        ['0', '2']
        >>> resnet_like = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.ReLU())
        >>> [row.note for row in init_model_(resnet_like, "rai", bias_free="add")]
        ['bias added']
    """
    chosen = get_scheme(scheme)
    if chosen.data_dependent:
        raise ValueError(f"{scheme!r} is data-dependent: use apply_init_(model, {scheme!r}, data)")
    prepare = prepare_bias_free(
        bias_free, scheme, RAI_BIAS_FREE_HINT, "no bias: weights drawn alone"
    )
    blocks, left = select_blocks(model, include, exclude)
    notes = prepare(blocks) if chosen.requires_bias else {}
    report = InitReport(scheme=scheme)
    for block in blocks:
        weight = block.read()
        options = {"bias_free": "scale"} if block in notes and block.bias is None else {}
        chosen.fill(weight, block.bias, generator, **kwargs, **options)
        block.store(weight)
        report.append(block_report(block, scheme, note=notes.get(block)))
    return complete_report(report, model, left, blocks)


def apply_init_(
    model: nn.Module,
    scheme: str,
    data: Data | None = None,
    generator: torch.Generator | None = None,
    *,
    include: Selector | None = None,
    exclude: Selector | None = None,
    bias_free: BiasFree = "error",
) -> InitReport:
    """Apply any scheme of :data:`SCHEMES` by name: per-tensor ones by :func:`init_model_`,
    data-dependent ones (``scale``, ``scale_bias``, ``lsuv``) on ``data``.

    Args:
        model: any ``nn.Module`` with layers of :mod:`relulab.init.layers`.
        scheme: a key of :data:`SCHEMES`.
        data: the samples a data-dependent scheme measures (ignored by the others): a tensor,
            a mapping of model arguments, or an iterable of batches.
        generator: the random generator.
        include: the layers to set; default all.
        exclude: the layers to leave; default none.
        bias_free: for the schemes that set every bias (``rai``, ``raai``, ``scale_bias``:
            :attr:`Scheme.requires_bias`), what to do with a layer that has none —
            ``"error"``, ``"add"`` or ``"scale"`` (:func:`init_model_`,
            :func:`~relulab.init.scale_bias_`); the other schemes ignore it.

    Returns:
        An :class:`~relulab.init.InitReport`.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> report = apply_init_(model, "scale_bias", torch.randn(64, 4))
        >>> len(report)
        2
    """
    chosen = get_scheme(scheme)
    apply = chosen.apply  # None: a per-tensor scheme (chosen.data_dependent is False)
    if apply is None:
        return init_model_(
            model, scheme, generator, include=include, exclude=exclude, bias_free=bias_free
        )
    if data is None:
        raise ValueError(f"{scheme!r} is data-dependent: give the data to measure")
    options = {"bias_free": bias_free} if chosen.requires_bias else {}
    return apply(model, data, generator=generator, include=include, exclude=exclude, **options)
