"""Seed 001, Observation 3: SiLU eventually recovers, but sits on a saddle for a long time.

The comparison point is inferred: ReLU and SiLU students at b2 = ``silu_b2`` (b1 = 0); the SiLU
student learns a SiLU teacher (a SiLU student cannot fit ReLU exactly, and the seed's "zero loss
up to machine precision" needs an exact fit).
"""

from __future__ import annotations

from relulab.analysis import first_below, first_match, longest_plateau
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, Below
from relulab.experiments.single_neuron.config import SOURCE, SingleNeuronConfig, scale
from relulab.experiments.single_neuron.observations.plateaus import (
    HYPERACTIVE,
    stuck_criterion,
    stuck_reading,
)
from relulab.experiments.single_neuron.readings import (
    diverged_counts,
    diverged_detail,
    fmt,
    loss_levels,
)
from relulab.experiments.single_neuron.units import Key, neurons

__all__ = ["RELU_STUCK", "SILU_RECOVERS", "SILU_SADDLE", "silu_loss"]

OBSERVATION_3 = f"{SOURCE}, Observation 3"


def silu_loss(results: Results):
    """The recorded steps and the SiLU student's loss curve."""
    silu = neurons(results, Key.SILU_VS_RELU)
    return silu.steps, silu.loss[first_match(silu.conditions, activation="silu")]


def _silu_divergence(results: Results) -> tuple[dict[str, tuple[int, int]], bool]:
    """The SiLU student's divergence count, and whether it diverged."""
    silu = neurons(results, Key.SILU_VS_RELU)
    i = first_match(silu.conditions, activation="silu")
    counts = diverged_counts({"silu student": silu}, {"silu student": [i]})
    return counts, bool(counts["silu student"][0])


# ---------------------------------------------------------------------------------------------
# relu-stuck-at-b2-minus-2
# ---------------------------------------------------------------------------------------------
def _relu_stuck(results: Results, config: SingleNeuronConfig) -> Reading:
    silu = neurons(results, Key.SILU_VS_RELU)
    relu = first_match(silu.conditions, activation="relu")
    return stuck_reading(HYPERACTIVE, silu, [relu], lambda _: "ReLU", config, "relu student")


RELU_STUCK = ClaimSpec(
    "relu-stuck-at-b2-minus-2",
    "ReLU at b2 = −2 (b1 = 0) does not recover: it stays on the hyperactive plateau.",
    source=OBSERVATION_3,
    criterion=stuck_criterion(HYPERACTIVE),
    measure=_relu_stuck,
    scope="the ReLU run beside SiLU, b1 = 0, b2 = silu_b2, Adam lr 0.01; the end of training",
    note="the ReLU run beside SiLU at b2 = silu_b2 (−2) [I]",
    figure="loss_curves.png",
    counterexample="Adam lr 0.2 (b1 = 0, b2 = −2): Adam's first large steps carry the neuron "
    "through the hyperactive state and back; it converges",
)


# ---------------------------------------------------------------------------------------------
# silu-recovers
# ---------------------------------------------------------------------------------------------
def _silu_recovers(results: Results, config: SingleNeuronConfig) -> Reading:
    steps, loss = silu_loss(results)
    reach = first_below(steps, loss, config.converge_tol)
    counts, _ = _silu_divergence(results)
    silu = neurons(results, Key.SILU_VS_RELU)
    i = first_match(silu.conditions, activation="silu")
    return Reading(
        float(loss_levels(silu)[i]),
        detail=f"first below {config.converge_tol:g} at step {fmt(reach)}; final loss "
        f"{fmt(loss[-1])}; " + diverged_detail(counts),
        scale=scale(config, f"{config.silu_steps} steps"),
        diverged=counts,
    )


SILU_RECOVERS = ClaimSpec(
    "silu-recovers",
    "SiLU at b2 = −2 eventually reaches zero loss (up to machine precision).",
    source=OBSERVATION_3,
    criterion=lambda c: Below(
        f"loss level (median over the last 10 % of {c.silu_steps} steps)", c.converge_tol
    ),
    measure=_silu_recovers,
    scope="eventually: the end of a long run (silu_steps)",
    note="teacher: silu_teacher (SiLU) [I]; threshold [I]",
    figure="loss_curves.png",
    counterexample="a horizon shorter than the saddle (silu_steps = 2000): the SiLU student is "
    "still on it at the end of the run",
)


# ---------------------------------------------------------------------------------------------
# silu-long-saddle
# ---------------------------------------------------------------------------------------------
def _silu_saddle(results: Results, config: SingleNeuronConfig) -> Reading:
    steps, loss = silu_loss(results)
    saddle = longest_plateau(steps, loss, config.converge_tol)
    reach = first_below(steps, loss, config.converge_tol)
    counts, gone = _silu_divergence(results)
    return Reading(
        0.0 if gone else float(saddle),  # a diverged student ranks last: no saddle read
        detail=f"longest plateau {saddle} steps; reaches {config.converge_tol:g} at step "
        f"{fmt(reach)}; " + diverged_detail(counts),
        scale=scale(config, f"{config.silu_steps} steps"),
        diverged=counts,
    )


SILU_SADDLE = ClaimSpec(
    "silu-long-saddle",
    "SiLU gets stuck at a saddle point for a very long time before it converges.",
    source=OBSERVATION_3,
    criterion=lambda c: Above(
        "longest plateau (loss changing < 5 % per 500 steps, above the convergence threshold)",
        0.1 * c.silu_steps,
        or_equal=True,
        unit="steps",
    ),
    measure=_silu_saddle,
    scope="before SiLU converges",
    note="10 % of the silu_steps-step run; threshold [I]",
    unit="steps",
    figure="loss_curves.png",
    counterexample="SiLU started balanced and unpushed (silu_b2 = 0): it converges without a "
    "saddle",
)
