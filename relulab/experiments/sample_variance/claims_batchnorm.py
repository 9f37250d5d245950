"""The sample-variance claims of seed 002 §4: BatchNorm removes the sample-variance decay and
makes gradients grow towards the input; scale+bias initialisation does the same, Kaiming keeps
them flat (Fig. 3). Part of :mod:`relulab.experiments.sample_variance.claims`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relulab.analysis import mean_ci
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, PostHoc, Reading
from relulab.experiments.criteria import (
    Within,
)
from relulab.experiments.sample_variance import readings as rd
from relulab.experiments.sample_variance.config import (
    PAPER_WIDTH,
    SEED,
    SampleVarianceConfig,
    scale_gradients,
)
from relulab.theory import batchnorm_gradient_slope, batchnorm_sample_std

__all__ = [
    "BATCHNORM_REMOVES_DECAY",
    "BATCHNORM_SIGMA_S",
    "BATCHNORM_SLOPE",
    "KAIMING_FLAT",
    "SCALE_BIAS_SLOPE",
]

FIG3 = "the seed's Fig. 3 setting: 30 MLPs of depth 50 and width 3000, random linear loss"
BATCHNORM_SHARE = 1 - 1 / np.pi  # one Kaiming layer + ReLU of a centred, unit-variance input


# ---------------------------------------------------------------------------------------------
# §4: BatchNorm removes the decay and makes gradients grow.
# ---------------------------------------------------------------------------------------------
def _batchnorm_share(results: Results, config: SampleVarianceConfig) -> Reading:
    bn = rd.gradient_unit(results, "batchnorm").linear_share
    kaiming = rd.gradient_unit(results, "kaiming").linear_share
    half = config.depth // 2 - 1
    return Reading(
        mean_ci(bn[:, -1]),
        detail=f"BatchNorm share at layers 2, {config.depth // 2}, {config.depth}: "
        f"{bn[:, 1].mean():.3f}, {bn[:, half].mean():.3f}, {bn[:, -1].mean():.3f}; Kaiming "
        f"without it: {kaiming[:, 1].mean():.3f}, {kaiming[:, half].mean():.3f}, "
        f"{kaiming[:, -1].mean():.3f}",
        scale=scale_gradients(config),
    )


BATCHNORM_REMOVES_DECAY: ClaimSpec[SampleVarianceConfig] = ClaimSpec(
    "batchnorm-removes-decay",
    "BatchNorm eliminates the sample variance decay: every layer starts from zero sample "
    "mean and fixed sample variance.",
    source=f"{SEED} §4 ('eliminates sample variance decay'; σ_s = √(1 − K(0)))",
    criterion=lambda c: Within(
        f"share v²/(m² + v²) of the linear output before BatchNorm at layer {c.depth}, mean over "
        "networks",
        BATCHNORM_SHARE,
        c.share_tolerance,
    ),
    measure=_batchnorm_share,
    scope="wide ReLU nets at initialisation, 'in the large batch limit at least'",
    note="tolerance [I]; target 1 − K(0) = 1 − 1/π, one layer of decay [D]",
    figure="layer_steps.png",
    check="an identity of the setup: BatchNorm with batch statistics over the very inputs the "
    "share is read on sets every feature's sample mean to 0 and variance to 1 before each ReLU "
    "(seed §4: 'by construction'), so each linear output is one ReLU layer from a centred input "
    "at every depth; its share is that one layer's, and the target 1 − K(0) is relulab's theory "
    "of that layer against its own simulation",
)


def _sigma_s(results: Results, config: SampleVarianceConfig) -> Reading:
    pre_std = rd.gradient_unit(results, "batchnorm").pre_std
    estimate = mean_ci(pre_std[:, 1:].mean(axis=1))
    return Reading(
        estimate, detail=f"1/measured = {1 / float(estimate):.3f}", scale=scale_gradients(config)
    )


BATCHNORM_SIGMA_S: ClaimSpec[SampleVarianceConfig] = ClaimSpec(
    "batchnorm-sigma-s",
    "With BatchNorm, one Kaiming layer + ReLU leaves a sample std of "
    "σ_s = √(1 − K(0)) ≈ 0.826 (rescaled by 1/σ_s ≈ 1.21).",
    source=f"{SEED} §4",
    criterion=lambda c: Within(
        "measured pre-BN per-feature sample std, layers ≥ 2, mean over networks",
        batchnorm_sample_std(),
        c.sigma_s_rtol,
        relative=True,
    ),
    measure=_sigma_s,
    scope="a wide ReLU net, large batch (the seed's 'informal argument')",
    note="tolerance [I]",
    check="relulab's theory against its own simulation: with Kaiming weights the expected "
    "per-feature sample variance of W·ReLU(z) for standardised features z is 2·Var ReLU(z) = "
    "1 − 1/π when z is Gaussian, as BatchNorm'd wide pre-activations are; the seed's informal "
    "argument is this arithmetic, and the simulation repeats it",
)


def _slope_reading(
    scheme: str, detail: Callable[[Results, SampleVarianceConfig], str] | None = None
) -> Callable[[Results, SampleVarianceConfig], Reading]:
    """The measure of a slope claim: the mean fitted slope of ``scheme``'s gradient nets."""

    def measure(results: Results, config: SampleVarianceConfig) -> Reading:
        slope = rd.slope_estimate(rd.gradient_unit(results, scheme).grad_sq, config.depth)
        text = detail(results, config) if detail else ""
        return Reading(slope, detail=text, scale=scale_gradients(config))

    return measure


def _slope_criterion(target: float) -> Callable[[SampleVarianceConfig], Within]:
    """The criterion of a slope claim: within ``slope_tolerance`` of ``target``."""

    def criterion(config: SampleVarianceConfig) -> Within:
        quantity = "fitted slope of ln⟨(∂L/∂x^l)²⟩ in l, mean over networks"
        return Within(quantity, target, config.slope_tolerance)

    return criterion


def _scale_bias_detail(results: Results, config: SampleVarianceConfig) -> str:
    trend = rd.scale_bias_trend(results, config)
    text = "slope vs width: " + ", ".join(f"{w}: {e.describe()}" for w, e in trend.items())
    if len(trend) >= 2 and max(trend) < PAPER_WIDTH:
        text += (
            "; extrapolated to the paper's width 3000 by a line in 1/width: "
            f"{rd.extrapolated_slope(trend, PAPER_WIDTH, inverse=True):.3f}, in ln width: "
            f"{rd.extrapolated_slope(trend, PAPER_WIDTH, inverse=False):.3f} (the paper measures "
            "−0.379 there)"
        )
    return text


def _below_paper_width(config: SampleVarianceConfig) -> str:
    """Why a run narrower than the seed's Fig. 3 cannot decide the scale+bias slope."""
    if config.gradient_width >= PAPER_WIDTH:
        return ""
    return (
        f"the seed's −0.379 is the slope at width {PAPER_WIDTH} (Fig. 3), and the scale+bias "
        "slope still steepens with width up to there (the committed paper run: −0.295 at 500, "
        "−0.335 at 1000, −0.375 at 3000; this run's trend is in the detail): at width "
        f"{config.gradient_width} the run cannot decide it — the paper preset does"
    )


BATCHNORM_SLOPE: ClaimSpec[SampleVarianceConfig] = ClaimSpec(
    "batchnorm-gradient-slope",
    "BatchNorm makes gradients grow towards the input: "
    "ln⟨(∂L/∂x^l)²⟩ falls with slope ≈ −0.38 per layer (−0.381 reported).",
    source=f"{SEED} §4, Fig. 3",
    criterion=_slope_criterion(batchnorm_gradient_slope()),
    measure=_slope_reading("batchnorm"),
    scope=FIG3,
    note="tolerance [I]",
    figure="gradients.png",
    counterexample="BatchNorm nets of width 8 (far narrower than the seed's 3000): the slope "
    "steepens to ≈ −0.47, outside −0.383 ± 0.03",
)

SCALE_BIAS_SLOPE: ClaimSpec[SampleVarianceConfig] = ClaimSpec(
    "scale-bias-gradient-slope",
    "Scale+bias initialisation makes gradients grow the same way (−0.379 reported).",
    source=f"{SEED} §4, Fig. 3",
    criterion=_slope_criterion(batchnorm_gradient_slope()),
    measure=_slope_reading("scale_bias", _scale_bias_detail),
    scope=FIG3,
    note="tolerance [I]",
    figure="gradients.png",
    untested=_below_paper_width,
    counterexample="the seed's 'scale' init (§5.1: weights rescaled per layer, biases 0, nothing "
    "centred): gradients stay about flat, nowhere near −0.383",
    post_hoc=(
        PostHoc(
            "not tested below the seed's width 3000",
            "added in 7438ad0 (issue 29) after the quick run had failed at width 500 (−0.286); "
            "it reads the width §4 states, but it was chosen after the result",
            untested=lambda config: "",
        ),
    ),
)

KAIMING_FLAT: ClaimSpec[SampleVarianceConfig] = ClaimSpec(
    "kaiming-gradients-flat",
    "With Kaiming initialisation the scale of gradients stays fixed across layers.",
    source=f"{SEED} §4, Fig. 3",
    criterion=_slope_criterion(0.0),
    measure=_slope_reading("kaiming"),
    scope=FIG3,
    note="tolerance [I]",
    figure="gradients.png",
    counterexample="Kaiming nets of width 16: each network's log-gradient drifts with depth "
    "(slope ≈ +0.12 to +0.16), outside 0 ± 0.03 — He et al.'s preservation holds in "
    "expectation, the per-network slope only at large width",
)
