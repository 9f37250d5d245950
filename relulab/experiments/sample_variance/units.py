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

Every reader reaches a unit through :class:`Key` or the key functions below.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import torch

from relulab.engine import BatchedMLP, MLPSpec, scale_init_batched_
from relulab.engine.forward import activation_gradient_profile, forward_statistics
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.sample_variance.config import SCHEMES, SampleVarianceConfig
from relulab.nn.statistics import (
    BATCHED_SAMPLE_DIMS,
    mean_variance_ratio,
    sample_moments,
    sample_variance_fraction,
    squared_mean_and_variance,
    unit_states,
)
from relulab.store import UnitResult

__all__ = [
    "Key",
    "estimate_bytes",
    "finite_width",
    "finite_widths",
    "gradients",
    "plan",
    "scale_bias_at",
    "unit_keys",
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


def _finite_width_unit(config: SampleVarianceConfig, width: int) -> Unit:
    def run(context: RunContext) -> UnitResult:
        histograms = width == config.histogram_width
        keep = sorted({0, config.depth - 1} | {layer - 1 for layer in config.histogram_layers})
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
                keep_layers=keep,
                keep_units=width,
                sampler=config.forward_sampler,
            )
            done(1)
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
                f"units_layer_{layer}": statistics.units[layer - 1][:, :, :3]
                for layer in config.histogram_layers
            }
            if histograms
            else {}
        )
        return UnitResult.forward_only(
            [{"width": width, "seed": s} for s in seeds],
            np.arange(1, config.depth + 1),
            curves,
            final,
            arrays,
        )

    return Unit(finite_width(width), run)


# ---------------------------------------------------------------------------------------------
# Gradient units.
# ---------------------------------------------------------------------------------------------
def _gradient_model(
    scheme: str,
    config: SampleVarianceConfig,
    width: int,
    seeds: list[int],
    context: RunContext,
    x: torch.Tensor,
) -> BatchedMLP:
    spec = MLPSpec(
        (width,) * (config.depth + 1) + (1,),
        bias=scheme == "scale_bias",
        output_bias=False,
        batchnorm=scheme == "batchnorm",
    )
    init = "normal" if scheme == "scale_bias" else "kaiming_normal"
    model = BatchedMLP(
        spec, len(seeds), init=init, seeds=seeds, dtype=context.dtype, device=context.device
    )
    with torch.no_grad():
        readout = model.weights[-1]
        readout.div_(readout.std(dim=(1, 2), keepdim=True))  # the random loss vector w ~ N(0, I)
    if scheme == "scale_bias":
        scale_init_batched_(model, x, with_bias=True, eps=config.scale_eps)
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


def _gradient_unit(
    config: SampleVarianceConfig, scheme: str, width: int, networks: int, name: str
) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x = _inputs(config, width, context).to(context.dtype).to(context.device)
        seeds = _seeds(context, name, networks)
        pieces: dict[str, list[np.ndarray]] = {}
        chunks = [
            seeds[i : i + config.gradient_chunk]
            for i in range(0, len(seeds), config.gradient_chunk)
        ]
        with context.progress(len(chunks), f"gradients, {scheme}, width {width}") as done:
            for chunk in chunks:
                model = _gradient_model(scheme, config, width, chunk, context, x)
                g, s = activation_gradient_profile(model, x)
                readings = {
                    "grad_sq": g.double().cpu().numpy(),
                    "pre_std": s.double().cpu().numpy(),
                    **_layer_readings(model, x),
                }
                for key, value in readings.items():
                    pieces.setdefault(key, []).append(value)
                done(1)
        curves = {key: np.concatenate(value) for key, value in pieces.items()}
        return UnitResult.forward_only(
            [{"scheme": scheme, "width": width, "seed": s} for s in seeds],
            np.arange(1, config.depth + 1),
            curves,
            {k: v[:, -1] for k, v in curves.items()},
        )

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
