"""The work of the sample-variance study, and the names of its units.

* ``finite-width-<width>`` — per width (and the histogram width), ``n_networks`` Kaiming nets
  of depth ``depth`` on ``n_samples`` Gaussian inputs: the ratio r_l of seed eq. 9, the squared
  sample mean and the sample variance per layer (summed over units), the fraction of units dead
  or always on at the first and last layer, and, at the histogram width, three units of every
  net at the histogram layers (``engine.forward_statistics``);
* ``gradients-<scheme>`` — Kaiming, scale+bias and Kaiming + BatchNorm nets of width
  ``gradient_width`` under the random linear loss: ⟨(∂L/∂x^l)²⟩ and the pre-BN per-feature
  sample std per layer (``engine.activation_gradient_profile``), and the ratio before and after
  every ReLU with the sample-variance share of every linear output;
* ``gradients-scale_bias-width-<width>`` — the scale+bias nets again at each trend width.

Every reader reaches a unit through :class:`Key` or the key functions below, and reads it
through its declared view (:func:`unit_views`): :class:`FiniteWidth` (the histogram width's unit
also declares its kept units, :func:`histogram_view`) and :class:`Gradients`.

The negative controls of the claims run the same unit functions with a counter-setting:
:func:`finite_width_result` packages a :class:`~relulab.engine.forward.ForwardStatistics` of
any inputs, :func:`model_statistics` measures it on any :class:`~relulab.engine.BatchedMLP`
(a linear activation, BatchNorm), and :func:`gradient_result` runs the gradient nets of any
scheme, width or activation.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, make_dataclass
from enum import StrEnum

import numpy as np
import torch

from relulab.engine import BatchedMLP, MLPSpec, scale_init_batched_
from relulab.engine.forward import (
    ForwardStatistics,
    activation_gradient_profile,
    forward_statistics,
)
from relulab.experiments.base import Unit
from relulab.experiments.context import ProgressCallback, RunContext
from relulab.experiments.sample_variance.config import SCHEMES, SampleVarianceConfig
from relulab.nn.statistics import (
    BATCHED_SAMPLE_DIMS,
    mean_variance_ratio,
    sample_moments,
    sample_variance_fraction,
    squared_mean_and_variance,
    unit_states,
)
from relulab.records import UnitView, array, curve, final
from relulab.store import UnitResult

__all__ = [
    "FiniteWidth",
    "Gradients",
    "Key",
    "estimate_bytes",
    "finite_width",
    "finite_width_result",
    "finite_widths",
    "gradient_result",
    "gradients",
    "histogram_view",
    "kept_layers",
    "model_statistics",
    "plan",
    "scale_bias_at",
    "unit_keys",
    "unit_views",
]


class Key(StrEnum):
    """The study's fixed unit names: the gradient nets of each scheme."""

    GRADIENTS_KAIMING = "gradients-kaiming"
    GRADIENTS_SCALE_BIAS = "gradients-scale_bias"
    GRADIENTS_BATCHNORM = "gradients-batchnorm"


_GRADIENTS = {
    "kaiming": Key.GRADIENTS_KAIMING,
    "scale_bias": Key.GRADIENTS_SCALE_BIAS,
    "batchnorm": Key.GRADIENTS_BATCHNORM,
}


def gradients(scheme: str) -> Key:
    """The gradient unit of ``scheme`` (one of :data:`SCHEMES`) at ``gradient_width``."""
    return _GRADIENTS[scheme]


def finite_width(width: int) -> str:
    """The finite-width unit of ``width``."""
    return f"finite-width-{width}"


def _trend(width: int) -> str:
    return f"gradients-scale_bias-width-{width}"


def scale_bias_at(config: SampleVarianceConfig, width: int) -> str:
    """The scale+bias gradient unit at ``width``: the main one at ``gradient_width``, else the
    trend unit of that width."""
    return Key.GRADIENTS_SCALE_BIAS if width == config.gradient_width else _trend(width)


def finite_widths(config: SampleVarianceConfig) -> list[int]:
    """The widths of the finite-width units: ``widths`` and the histogram width."""
    extra = [] if config.histogram_width in config.widths else [config.histogram_width]
    return [*config.widths, *extra]


def unit_keys(config: SampleVarianceConfig) -> list[str]:
    """Every unit name a reader of this study may use."""
    return (
        [finite_width(width) for width in finite_widths(config)]
        + [gradients(scheme).value for scheme in SCHEMES]
        + [_trend(w) for w in config.trend_widths if w != config.gradient_width]
    )


# ---------------------------------------------------------------------------------------------
# What each kind of unit stores.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FiniteWidth(UnitView):
    """A finite-width unit: per network and layer (1 … depth) the ratio r_l of seed eq. 9, the
    squared sample mean m² and the sample variance v² (summed over units), and the fraction of
    units dead or always on at the first and the last layer."""

    ratio: np.ndarray = curve()
    mean_sq: np.ndarray = curve()
    sample_var: np.ndarray = curve()
    on_or_off_first: np.ndarray = final()
    on_or_off_last: np.ndarray = final()

    @property
    def share(self) -> np.ndarray:
        """Per network and layer: the sample-variance share v²/(m² + v²)."""
        return self.sample_var / (self.mean_sq + self.sample_var)

    @property
    def total(self) -> np.ndarray:
        """Per network and layer: the total second moment m² + v²."""
        return self.mean_sq + self.sample_var


@dataclass(frozen=True)
class _Histograms(FiniteWidth):
    """The histogram width's unit: also three units of every net at the histogram layers."""

    def units(self, layer: int) -> np.ndarray:
        """The kept pre-activations at ``layer`` (1-based), ``(S, n_samples, 3)``."""
        return getattr(self, _units_field(layer))


def _units_field(layer: int) -> str:
    return f"units_layer_{layer}"


@functools.cache
def histogram_view(layers: tuple[int, ...]) -> type[_Histograms]:
    """The view of the histogram width's unit, whose arrays hold the kept units of ``layers``.

    Example:
        >>> sorted(histogram_view((1, 50)).schema().arrays)
        ['units_layer_1', 'units_layer_50']
    """
    view = make_dataclass(
        f"Histograms{'_'.join(map(str, layers))}",
        [(_units_field(layer), np.ndarray, array()) for layer in layers],
        bases=(_Histograms,),
        frozen=True,
    )
    view.__module__ = __name__
    return view


@dataclass(frozen=True)
class Gradients(UnitView):
    """A gradient unit: per network and hidden layer ⟨(∂L/∂x^l)²⟩, the pre-BN per-feature
    sample std, r of the linear output and of the activation, and the linear output's
    sample-variance share."""

    grad_sq: np.ndarray = curve()
    pre_std: np.ndarray = curve()
    linear_ratio: np.ndarray = curve()
    linear_share: np.ndarray = curve()
    activation_ratio: np.ndarray = curve()


def unit_views(config: SampleVarianceConfig) -> dict[str, type[UnitView]]:
    """Every unit :func:`plan` produces and its view.

    Example:
        >>> from relulab.experiments.sample_variance.config import PRESETS
        >>> views = unit_views(PRESETS["quick"])
        >>> views["gradients-kaiming"].__name__, views["finite-width-30"].__name__
        ('Gradients', 'FiniteWidth')
    """
    views: dict[str, type[UnitView]] = {
        finite_width(w): (
            histogram_view(tuple(config.histogram_layers))
            if w == config.histogram_width
            else FiniteWidth
        )
        for w in finite_widths(config)
    }
    views.update({key: Gradients for key in unit_keys(config) if key not in views})
    return views


# ---------------------------------------------------------------------------------------------
# Finite-width units.
# ---------------------------------------------------------------------------------------------
def _inputs(config: SampleVarianceConfig, width: int, context: RunContext) -> torch.Tensor:
    generator = context.generator(f"inputs-{width}")
    return torch.randn(config.n_samples, width, generator=generator, dtype=torch.float64)


def _seeds(context: RunContext, name: str, n: int) -> list[int]:
    generator = context.generator(name)
    return torch.randint(0, 2**62, (n,), generator=generator).tolist()


def _on_or_off(u: np.ndarray) -> np.ndarray:
    """Per network, the fraction of units dead or always on over the samples, ``(S,)``."""
    fractions = unit_states(torch.from_numpy(u), BATCHED_SAMPLE_DIMS).fractions()
    return (fractions["dead_fraction"] + fractions["always_on_fraction"]).numpy()


def kept_layers(config: SampleVarianceConfig) -> list[int]:
    """The 0-based layers whose units a finite-width unit keeps: the first, the last and the
    histogram layers."""
    return sorted({0, config.depth - 1} | {layer - 1 for layer in config.histogram_layers})


def finite_width_result(
    config: SampleVarianceConfig, width: int, statistics: ForwardStatistics, seeds: Sequence[int]
) -> UnitResult:
    """The stored unit of ``width`` from its networks' statistics (:class:`FiniteWidth`; at
    ``histogram_width`` also three units per net at the histogram layers).

    Args:
        config: the study's settings (depth, histogram width and layers).
        width: the networks' width.
        statistics: what :func:`~relulab.engine.forward.forward_statistics` (or
            :func:`model_statistics`) measured, with the layers of :func:`kept_layers` kept.
        seeds: one per network.

    Returns:
        The :class:`~relulab.store.UnitResult`.
    """
    curves = {
        "ratio": statistics.ratio,
        "mean_sq": statistics.mean_sq,
        "sample_var": statistics.sample_var,
    }
    final = {k: v[:, -1] for k, v in curves.items()}
    final["on_or_off_first"] = _on_or_off(statistics.units[0])
    final["on_or_off_last"] = _on_or_off(statistics.units[config.depth - 1])
    arrays = (
        {
            _units_field(layer): statistics.units[layer - 1][:, :, :3]
            for layer in config.histogram_layers
        }
        if width == config.histogram_width
        else {}
    )
    return UnitResult.forward_only(
        [{"width": width, "seed": s} for s in seeds],
        np.arange(1, config.depth + 1),
        curves,
        final,
        arrays,
    )


def model_statistics(
    model: BatchedMLP, x: torch.Tensor, keep_layers: Sequence[int]
) -> ForwardStatistics:
    r"""What :func:`~relulab.engine.forward.forward_statistics` measures, on the hidden layers'
    linear outputs (before any BatchNorm) of any :class:`~relulab.engine.BatchedMLP`: m², v²
    and r per network and layer, and every unit of the ``keep_layers`` (0-based). The negative
    controls run the finite-width readings through it on networks without the seed's
    mechanism (a linear activation, BatchNorm).

    Args:
        model: the networks (S of them, every hidden layer of one width).
        x: the inputs ``(N, d_in)``.
        keep_layers: the 0-based hidden layers whose units to keep.

    Returns:
        The :class:`~relulab.engine.forward.ForwardStatistics` (no timings).

    Example:
        >>> net = BatchedMLP(MLPSpec((8, 8, 8, 1), bias=False, activation="linear"), 2)
        >>> model_statistics(net, torch.randn(20, 8), [0]).ratio.shape
        (2, 2)
    """
    with torch.no_grad():
        outputs = model.trace(x).linear_outputs
    moments = [
        squared_mean_and_variance(*sample_moments(u.double(), BATCHED_SAMPLE_DIMS)) for u in outputs
    ]
    mean_sq = torch.stack([m2 for m2, _ in moments], 1)
    sample_var = torch.stack([v2 for _, v2 in moments], 1)
    units = {layer: outputs[layer].double().cpu().numpy() for layer in keep_layers}
    return ForwardStatistics(
        mean_sq.cpu().numpy(),
        sample_var.cpu().numpy(),
        mean_variance_ratio(mean_sq, sample_var).cpu().numpy(),
        units=units,
    )


def _finite_width_unit(config: SampleVarianceConfig, width: int) -> Unit:
    def run(context: RunContext) -> UnitResult:
        seeds = _seeds(context, f"nets-{width}", config.n_networks)
        with context.progress(
            1, f"width {width}: {config.n_networks} nets × {config.depth} layers"
        ) as done:
            statistics = forward_statistics(
                config.n_networks,
                width,
                config.depth,
                _inputs(config, width, context),
                seeds,
                context.dtype,
                context.device,
                keep_layers=kept_layers(config),
                keep_units=width,
                sampler=config.forward_sampler,
            )
            done(1)
        return finite_width_result(config, width, statistics, seeds)

    return Unit(finite_width(width), run)


# ---------------------------------------------------------------------------------------------
# Gradient units.
# ---------------------------------------------------------------------------------------------
GRADIENT_SCHEMES = (*SCHEMES, "scale")  # "scale" (§5.1, biases 0): a negative control


def _gradient_model(
    scheme: str,
    config: SampleVarianceConfig,
    width: int,
    seeds: list[int],
    context: RunContext,
    x: torch.Tensor,
    activation: str = "relu",
) -> BatchedMLP:
    data_dependent = scheme in ("scale_bias", "scale")
    spec = MLPSpec(
        (width,) * (config.depth + 1) + (1,),
        activation=activation,
        bias=scheme == "scale_bias",
        output_bias=False,
        batchnorm=scheme == "batchnorm",
    )
    init = "normal" if data_dependent else "kaiming_normal"
    model = BatchedMLP(
        spec, len(seeds), init=init, seeds=seeds, dtype=context.dtype, device=context.device
    )
    with torch.no_grad():
        readout = model.weights[-1]
        readout.div_(readout.std(dim=(1, 2), keepdim=True))  # the random loss vector w ~ N(0, I)
    if data_dependent:
        scale_init_batched_(model, x, with_bias=scheme == "scale_bias", eps=config.scale_eps)
    return model


def _ratios(tensors: tuple[torch.Tensor, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per network and layer: r (seed eq. 9) and the sample-variance share v²/(m² + v²)."""
    ratio, share = [], []
    for t in tensors:
        m2, v2 = squared_mean_and_variance(*sample_moments(t.double(), BATCHED_SAMPLE_DIMS))
        ratio.append(mean_variance_ratio(m2, v2))
        share.append(sample_variance_fraction(m2, v2))
    return torch.stack(ratio, 1).cpu().numpy(), torch.stack(share, 1).cpu().numpy()


def _layer_readings(model: BatchedMLP, x: torch.Tensor) -> dict[str, np.ndarray]:
    """r of every layer's linear output (before BatchNorm) and of its ReLU output, and the
    sample-variance share of the linear output, each ``(S, depth)``."""
    with torch.no_grad():
        trace = model.trace(x)
    linear_ratio, linear_share = _ratios(trace.linear_outputs)
    activation_ratio, _ = _ratios(trace.activations)
    return {
        "linear_ratio": linear_ratio,
        "linear_share": linear_share,
        "activation_ratio": activation_ratio,
    }


def gradient_result(
    config: SampleVarianceConfig,
    scheme: str,
    width: int,
    seeds: Sequence[int],
    context: RunContext,
    x: torch.Tensor,
    activation: str = "relu",
    done: ProgressCallback | None = None,
) -> UnitResult:
    """The stored gradient unit (:class:`Gradients`) of ``scheme``'s nets of ``width``, one per
    seed, under the random linear loss on ``x``, ``gradient_chunk`` networks at a time.

    Args:
        config: the study's settings (depth, chunk, ``scale_eps``).
        scheme: ``kaiming``, ``scale_bias``, ``batchnorm`` or ``scale`` (§5.1, biases 0: a
            negative control, no unit of :func:`plan`).
        width: every hidden layer's width.
        seeds: one per network.
        context: the run's device and dtype.
        x: the inputs ``(N, width)``.
        activation: the hidden activation (``relu``, the seed's; ``linear`` for a control).
        done: called with 1 after every chunk (progress), if given.

    Returns:
        The :class:`~relulab.store.UnitResult`.
    """
    if scheme not in GRADIENT_SCHEMES:
        raise ValueError(f"scheme must be one of {GRADIENT_SCHEMES}, got {scheme!r}")
    seeds = list(seeds)
    pieces: dict[str, list[np.ndarray]] = {}
    for i in range(0, len(seeds), config.gradient_chunk):
        chunk = seeds[i : i + config.gradient_chunk]
        model = _gradient_model(scheme, config, width, chunk, context, x, activation)
        g, s = activation_gradient_profile(model, x)
        readings = {
            "grad_sq": g.double().cpu().numpy(),
            "pre_std": s.double().cpu().numpy(),
            **_layer_readings(model, x),
        }
        for key, value in readings.items():
            pieces.setdefault(key, []).append(value)
        if done is not None:
            done(1)
    curves = {key: np.concatenate(value) for key, value in pieces.items()}
    return UnitResult.forward_only(
        [{"scheme": scheme, "width": width, "seed": s} for s in seeds],
        np.arange(1, config.depth + 1),
        curves,
        {k: v[:, -1] for k, v in curves.items()},
    )


def _gradient_unit(
    config: SampleVarianceConfig, scheme: str, width: int, networks: int, name: str
) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x = _inputs(config, width, context).to(context.dtype).to(context.device)
        seeds = _seeds(context, name, networks)
        chunks = -(-len(seeds) // config.gradient_chunk)
        with context.progress(chunks, f"gradients, {scheme}, width {width}") as done:
            return gradient_result(config, scheme, width, seeds, context, x, done=done)

    return Unit(name, run)


def plan(config: SampleVarianceConfig) -> list[Unit]:
    """The finite-width units, the gradient units of every scheme, the scale+bias trend."""
    units = [_finite_width_unit(config, width) for width in finite_widths(config)]
    units += [
        _gradient_unit(
            config,
            scheme,
            config.gradient_width,
            config.gradient_networks,
            gradients(scheme).value,
        )
        for scheme in SCHEMES
    ]
    units += [
        _gradient_unit(config, "scale_bias", width, config.gradient_networks, _trend(width))
        for width in config.trend_widths
        if width != config.gradient_width
    ]
    return units


def estimate_bytes(config: SampleVarianceConfig) -> int:
    """Peak memory in bytes of the largest unit or analysis step: a finite-width unit (S weight
    matrices, three S×N×width activations and the float64 pre-activations of the kept layers,
    whose unit states are read), a gradient chunk (weights and gradients of every layer, four
    activations per layer).
    Measured: 290 MiB peak for an estimate of 262 MiB (4 networks of width 4000)."""
    itemsize = 8 if config.dtype == "float64" else 4
    n, depth = config.n_samples, config.depth
    width = max(*config.widths, config.histogram_width)
    kept = 8 * config.n_networks * n * width * (2 + len(config.histogram_layers))  # whole layers
    forward = itemsize * config.n_networks * (width * width + 3 * n * width) + kept
    g = config.gradient_width
    gradients_ = itemsize * config.gradient_chunk * depth * (2 * g * g + 4 * n * g)
    return max(forward, gradients_)
