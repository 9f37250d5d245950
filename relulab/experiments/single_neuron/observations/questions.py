"""Seed 001, Questions/Ideas, Question 1 — beyond the seed: the seed asks whether the
reparameterisation :math:`w\\,x + b \\to w\\,(x + b')`, where b' places the kink directly, would
control the neuron's activity better; relulab answers on the fine b2 sweep."""

from __future__ import annotations

from relulab.analysis import Estimate
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above
from relulab.experiments.single_neuron.config import SOURCE, SingleNeuronConfig, scale
from relulab.experiments.single_neuron.observations.biases import b2_region
from relulab.experiments.single_neuron.observations.learning_rate import lr_region
from relulab.experiments.single_neuron.readings import diverged_detail, fmt, halves_divergence
from relulab.experiments.single_neuron.units import Key, neurons

__all__ = ["REPARAM", "b2_reparam_gap"]


def b2_reparam_gap(standard: Estimate, reparam: Estimate) -> float:
    """How far below the standard neuron's b2 transition region the reparameterised one's
    ends (positive: the reparameterised neuron converges from every b2 the standard one does
    and from lower ones)."""
    return float(standard.low - reparam.high)


def _reparam(results: Results, config: SingleNeuronConfig) -> Reading:
    b2s = b2_region(results, config), b2_region(results, config, "reparam")
    lrs = lr_region(results, config), lr_region(results, config, "reparam")
    counts = halves_divergence(neurons(results, Key.B2_BOUNDARY), Key.B2_BOUNDARY)
    return Reading(
        b2_reparam_gap(*b2s),
        detail=f"b2 regions: standard [{fmt(b2s[0].low)}, {fmt(b2s[0].high)}], "
        f"reparam [{fmt(b2s[1].low)}, {fmt(b2s[1].high)}]; lr regions: standard "
        f"[{fmt(lrs[0].low)}, {fmt(lrs[0].high)}], reparam [{fmt(lrs[1].low)}, {fmt(lrs[1].high)}]"
        "; " + diverged_detail(counts),
        scale=scale(config, f"fine sweep of {config.boundary_points} points"),
        diverged=counts,
    )


REPARAM: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "reparam-converges-from-lower-b2",
    "With the reparameterisation w·(x + b'), where b' sets the kink directly, the "
    "neuron converges from output biases b2 where the standard neuron gets stuck.",
    source=f"{SOURCE}, Questions/Ideas, Question 1 (analytic bias; w(x + b'))",
    criterion=Above(
        "gap between the standard neuron's b2 transition region and the reparameterised one's "
        "(standard low end − reparameterised high end)",
        0.0,
    ),
    measure=_reparam,
    scope="b1 = 0 (b' = 0), Adam lr 0.01",
    note="beyond the seed: the seed asks, it does not answer",
    figure="phase_maps.png",
    beyond_seed=True,
    counterexample="the student's w1 started at 2: the standard neuron's kink −b1/w1 moves at "
    "half b1's rate and it converges from b2 as low as the reparameterised one does (≈ −1.6): "
    "no gap",
)
