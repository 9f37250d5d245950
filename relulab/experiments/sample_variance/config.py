"""Settings of the sample-variance study, with their provenance, and its presets.

Provenance: ``stated`` by seed 002 (Luther & Seung), ``inferred`` (the most likely reading;
configurable) or an implementation ``choice``; ``seed_value`` is the paper's where the quick
preset departs from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relulab.config import ConfigError, setting

__all__ = ["PRESETS", "SCHEMES", "SEED", "SampleVarianceConfig", "scale_gradients", "scale_widths"]

SEED = "seed 002"
SCHEMES = ("kaiming", "scale_bias", "batchnorm")
PAPER_WIDTH = 3000  # the seed's widest network (Fig. 2) and its gradient width (Fig. 3)


@dataclass(frozen=True)
class SampleVarianceConfig:
    """Settings with their provenance (:func:`relulab.config.setting`); ``seed_value`` is the
    paper's where the quick preset departs from it."""

    seed: int = setting(0, "choice", note="the run seed: every unit's generator derives from it")
    dtype: Literal["float32", "float64"] = setting("float32", "choice")
    depth: int = setting(50, "stated", at_least=4, note="gradient slopes fit layers 2 … depth − 1")
    n_samples: int = setting(100, "stated", at_least=2, note="i.i.d. N(0, I) inputs")
    n_networks: int = setting(30, "stated", at_least=2, note="networks per width")
    widths: tuple[int, ...] = setting(
        (30, 100, 300, 1000), "stated", seed_value=(30, 100, 300, 1000, 3000), at_least=2
    )
    histogram_width: int = setting(
        1000,
        "inferred",
        at_least=3,
        alternatives=(300, 3000),
        note="Fig. 1's width is not stated ('a wide ReLU MLP'); the figure shows 3 units "
        "(alternatives: the seed's Fig. 2 widths 300 and 3000, its widest — the paper "
        "preset's value)",
    )
    histogram_layers: tuple[int, int] = setting(
        (1, 50), "stated", at_least=1, note="Fig. 1 right; 1-based pre-activation layers"
    )
    gradient_width: int = setting(500, "stated", seed_value=3000, at_least=2, note="Fig. 3 width")
    gradient_networks: int = setting(
        12, "stated", seed_value=30, at_least=2, note="Fig. 3 networks"
    )
    trend_widths: tuple[int, ...] = setting(
        (125, 250),
        "choice",
        at_least=2,
        note="smaller widths at which the scale+bias slope is also measured (its width trend)",
    )
    gradient_chunk: int = setting(
        3, "choice", positive=True, note="networks per batched computation (memory)"
    )
    forward_sampler: Literal["weights", "gram"] = setting(
        "weights",
        "choice",
        note="finite-width units: draw each layer's weights (as the seed does), or 'gram': its "
        "pre-activations from their exact law given its input (same distributions, "
        "≈ width / (2 n_samples) times less arithmetic)",
    )
    scale_eps: float = setting(1e-5, "stated", at_least=0.0)
    slope_tolerance: float = setting(
        0.03,
        "inferred",
        judging=True,
        at_least=0.0,
        alternatives=(0.015, 0.06),
        note="|fitted − predicted| slope allowed (alternatives: half and twice)",
    )
    sigma_s_rtol: float = setting(
        0.02,
        "inferred",
        judging=True,
        at_least=0.0,
        alternatives=(0.01, 0.05),
        note="σ_s against √(1 − K(0)) = 0.826, relative (alternatives: half and 2.5×)",
    )
    decay_factor: float = setting(
        0.5,
        "inferred",
        judging=True,
        alternatives=(0.25, 0.75),
        note="'decayed significantly': below this × its layer-1 value (alternatives: a "
        "stricter reader, a quarter; a looser one, three quarters)",
    )
    total_rtol: float = setting(
        0.02,
        "inferred",
        judging=True,
        at_least=0.0,
        alternatives=(0.01, 0.05),
        note="'preserved': layer-to-layer total second moment within 1 ± this (alternatives: "
        "half and 2.5×)",
    )
    bound_rtol: float = setting(
        0.01,
        "inferred",
        judging=True,
        at_least=0.0,
        alternatives=(0.005, 0.02),
        note="'observed to be an upper bound' (Fig. 2 left): the margin, as a fraction of the "
        "figure's span (the theory at the last layer, r ≈ 8.87) — an excess of the network-mean "
        "r_l over the sample-corrected theory smaller than this is within the bound "
        "(equivalence tests at every width × layer point; the two declared post-hoc readings "
        "take it as a fraction of each point's own value). Alternatives: half and twice (0, "
        "the bound read literally, cannot be shown at a point where the bound is reached)",
    )
    ratio_rtol: float = setting(
        0.05,
        "inferred",
        judging=True,
        at_least=0.0,
        alternatives=(0.02, 0.1),
        note="'keeps the ratio': r after/before a matmul within 1 ± this (alternatives: 2 % "
        "and 10 %)",
    )
    share_tolerance: float = setting(
        0.05,
        "inferred",
        judging=True,
        at_least=0.0,
        alternatives=(0.02, 0.1),
        note="BatchNorm's deep sample-variance share within ± this of 1 − K(0) (alternatives: "
        "0.02 and 0.1)",
    )
    saturation_level: float = setting(
        0.9,
        "inferred",
        judging=True,
        no_alternative="a metric: the flattening layer is reported in a detail and the "
        "metrics, and decides no claim",
        note="r_l has flattened where it reaches this × its last-layer value",
    )

    def validate(self) -> None:
        if not all(layer <= self.depth for layer in self.histogram_layers):
            raise ConfigError(f"histogram_layers must lie in 1..depth, got {self.histogram_layers}")


PRESETS = {
    "quick": SampleVarianceConfig(),
    "paper": SampleVarianceConfig(
        widths=(30, 100, 300, 1000, 3000),
        histogram_width=3000,
        gradient_width=3000,
        gradient_networks=30,
        trend_widths=(500, 1000),
        gradient_chunk=1,
    ),
}


def scale_widths(config: SampleVarianceConfig) -> str:
    """The finite-width units' sizes, against the paper's."""
    seed = "" if max(config.widths) >= PAPER_WIDTH else f" (the paper adds {PAPER_WIDTH})"
    return (
        f"widths {', '.join(map(str, config.widths))}{seed}, {config.n_networks} nets each, "
        f"depth {config.depth}, {config.n_samples} inputs"
    )


def scale_gradients(config: SampleVarianceConfig) -> str:
    """The gradient units' sizes, against the paper's (width 3000, 30 networks)."""
    seed = (
        "the paper's size"
        if (config.gradient_width, config.gradient_networks) == (PAPER_WIDTH, 30)
        else "the paper: width 3000, 30 networks"
    )
    return (
        f"width {config.gradient_width}, {config.gradient_networks} networks, depth "
        f"{config.depth} ({seed})"
    )
