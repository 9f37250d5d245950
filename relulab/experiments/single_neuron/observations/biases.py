"""Seed 001, Observations 0 and 1: large |b1| and large |b2| at initialisation.

Observation 0 (b2 = 0): b1 > 1 starts hyperactive and sticks near 0.02, b1 < −1 starts dead and
sticks near 0.1. Observation 1 (b1 = 0): b2 = −1.1 converges, b2 = −1.2 sticks near 0.02 as the
least-squares line, because the kink x_t = −b1/w1 drifts left past −1; raising the target's
bias does the same.
"""

from __future__ import annotations

import numpy as np

from relulab.analysis import first_match
from relulab.engine import STATE_CODES
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, AllOf, Below, Inside
from relulab.experiments.single_neuron.config import OUTCOMES, SOURCE, SingleNeuronConfig, scale
from relulab.experiments.single_neuron.observations.plateaus import (
    DEAD,
    HYPERACTIVE,
    converges_criterion,
    converges_reading,
    stuck_criterion,
    stuck_reading,
)
from relulab.experiments.single_neuron.readings import (
    STATE_NAMES,
    bracket,
    fmt,
    kinks,
    level,
    margins,
    outcomes,
)
from relulab.experiments.single_neuron.units import Key

__all__ = [
    "B1_DEAD",
    "B1_HYPERACTIVE",
    "B2_BOUNDARY",
    "B2_CONVERGES",
    "B2_STICKS",
    "KINK",
    "LEAST_SQUARES",
    "TEACHER_BIAS",
    "b2_region",
]

OBSERVATION_0 = f"{SOURCE}, Observation 0"
OBSERVATION_1 = f"{SOURCE}, Observation 1"
SEED_B2 = (-1.1, -1.2)  # converges, sticks (Observation 1) [S]


def b2_region(results: Results, config: SingleNeuronConfig, parameterisation: str = "standard"):
    """The transition region of the fine b2 sweep (b1 = 0)."""
    return bracket(results[Key.B2_BOUNDARY], "b2", True, parameterisation, config.converge_tol)


# ---------------------------------------------------------------------------------------------
# b1-hyperactive-plateau, b1-dead-plateau
# ---------------------------------------------------------------------------------------------
def _b1_label(condition: dict) -> str:
    return f"b1={condition['b1']:g}"


def _b1_hyperactive(results: Results, config: SingleNeuronConfig) -> Reading:
    b1s = results[Key.B1_SWEEP]
    chosen = [i for i, c in enumerate(b1s.conditions) if c["b1"] > 1]
    return stuck_reading(HYPERACTIVE, b1s, chosen, _b1_label, config)


def _b1_dead(results: Results, config: SingleNeuronConfig) -> Reading:
    b1s = results[Key.B1_SWEEP]
    chosen = [i for i, c in enumerate(b1s.conditions) if c["b1"] < -1]
    return stuck_reading(DEAD, b1s, chosen, _b1_label, config)


B1_HYPERACTIVE = ClaimSpec(
    "b1-hyperactive-plateau",
    "With b2 = 0 and b1 > 1 the neuron starts hyperactive "
    "and the loss gets stuck around 0.02 (linear regression of ReLU).",
    source=OBSERVATION_0,
    criterion=stuck_criterion(HYPERACTIVE),
    measure=_b1_hyperactive,
    scope="b2 = 0, b1 > 1, Adam lr 0.01; the level the loss ends at ('gets stuck')",
    note="'around': within plateau_rtol of the exact plateau [I]",
    figure="loss_curves.png",
)

B1_DEAD = ClaimSpec(
    "b1-dead-plateau",
    "With b2 = 0 and b1 < −1 the neuron starts dead and the loss "
    "gets stuck around 0.1 (a constant fit of ReLU).",
    source=OBSERVATION_0,
    criterion=stuck_criterion(DEAD),
    measure=_b1_dead,
    scope="b2 = 0, b1 < −1, Adam lr 0.01; the level the loss ends at ('gets stuck')",
    note="'around': within plateau_rtol of the exact plateau [I]",
    figure="loss_curves.png",
)


# ---------------------------------------------------------------------------------------------
# b2-minus-1.1-converges, b2-minus-1.2-sticks
# ---------------------------------------------------------------------------------------------
def _b2_converges(results: Results, config: SingleNeuronConfig) -> Reading:
    region = b2_region(results, config)
    return converges_reading(results[Key.B2_SWEEP], {"b2": -1.1}, region, SEED_B2, config)


def _b2_sticks(results: Results, config: SingleNeuronConfig) -> Reading:
    b2s = results[Key.B2_SWEEP]
    stuck = first_match(b2s.conditions, b2=-1.2)
    chosen = [stuck] if stuck is not None else []
    return stuck_reading(HYPERACTIVE, b2s, chosen, lambda _: "b2=-1.2", config)


B2_CONVERGES = ClaimSpec(
    "b2-minus-1.1-converges",
    "With b1 = 0, b2 = −1.1 the loss goes to zero.",
    source=OBSERVATION_1,
    criterion=converges_criterion,
    measure=_b2_converges,
    scope="b1 = 0, Adam lr 0.01; the end of training",
    note="i.e. the loss goes to zero; threshold [I]; read as the stuck claims read it",
    figure="loss_curves.png",
)

B2_STICKS = ClaimSpec(
    "b2-minus-1.2-sticks",
    "With b1 = 0, b2 = −1.2 the loss gets stuck around 0.02 and the neuron ends hyperactive.",
    source=OBSERVATION_1,
    criterion=stuck_criterion(HYPERACTIVE),
    measure=_b2_sticks,
    scope="b1 = 0, Adam lr 0.01; the level the loss ends at ('gets stuck')",
    note="'around': within plateau_rtol of the exact plateau [I]",
    figure="loss_curves.png",
)


# ---------------------------------------------------------------------------------------------
# b2-boundary-between-seed-points
# ---------------------------------------------------------------------------------------------
def _b2_boundary(results: Results, config: SingleNeuronConfig) -> Reading:
    region = b2_region(results, config)
    return Reading(
        region,
        detail=margins(*SEED_B2, region),
        scale=scale(config, f"fine sweep of {config.boundary_points} points"),
    )


B2_BOUNDARY = ClaimSpec(
    "b2-boundary-between-seed-points",
    "The b2 below which the loss stops going to zero lies between −1.2 and −1.1.",
    source=f"{OBSERVATION_1} (−1.1 converges, −1.2 gets stuck)",
    criterion=Inside("transition region of the fine b2 sweep (b1 = 0)", -1.2, -1.1),
    measure=_b2_boundary,
    scope="b1 = 0, Adam lr 0.01",
    note="interval: the grid points from the first to the last change of outcome; beyond the "
    "seed: the seed gives two points, not a located boundary",
    figure="phase_maps.png",
    beyond_seed=True,
)


# ---------------------------------------------------------------------------------------------
# kink-drifts-left
# ---------------------------------------------------------------------------------------------
def _kink_drift(results: Results, config: SingleNeuronConfig) -> Reading:
    b2s = results[Key.B2_SWEEP]
    stuck, fine = first_match(b2s.conditions, b2=-1.2), first_match(b2s.conditions, b2=-1.1)
    if stuck is None or fine is None:
        nan = float("nan")
        return Reading(
            {"b2 = -1.2": nan, "b2 = -1.1": nan, "start": nan},
            detail="not measured: b2_sweep must contain -1.1 and -1.2",
            scale=scale(config),
        )
    trajectories = kinks(b2s)
    start, lowest = trajectories[stuck, 0], trajectories[stuck].min()
    lowest_fine = trajectories[fine].min()
    crossed = np.flatnonzero(trajectories[stuck] < -1)
    return Reading(
        {"b2 = -1.2": float(lowest), "b2 = -1.1": float(lowest_fine), "start": float(abs(start))},
        detail=f"b2=-1.2: kink starts at {fmt(start)}, reaches {fmt(lowest)}"
        + (f", passes −1 at step {int(b2s.steps[crossed[0]])}" if len(crossed) else "")
        + f"; b2=-1.1: lowest kink {fmt(lowest_fine)}",
        scale=scale(config),
    )


KINK = ClaimSpec(
    "kink-drifts-left",
    "The kink x_t = −b1/w1 starts at 0 and moves left during training; for b2 = −1.2 "
    "it passes −1 (balanced → hyperactive), for b2 = −1.1 it does not.",
    source=OBSERVATION_1,
    criterion=AllOf(
        {
            "b2 = -1.2": Below("lowest kink for b2 = −1.2", -1.0),
            "b2 = -1.1": Above("lowest kink for b2 = −1.1", -1.0),
            "start": Below("|kink at the first record| for b2 = −1.2", 1e-6),
        }
    ),
    measure=_kink_drift,
    scope="b1 = 0, Adam lr 0.01; during training",
    figure="kinks.png",
)


# ---------------------------------------------------------------------------------------------
# teacher-bias-pushes-hyperactive
# ---------------------------------------------------------------------------------------------
def _teacher_bias(results: Results, config: SingleNeuronConfig) -> Reading:
    result = results[Key.TEACHER_BIAS]
    biases = np.array([c["teacher_bias"] for c in result.conditions])
    order = np.argsort(biases)
    outcome = outcomes(result, config.converge_tol)[order]
    hyper = outcome == OUTCOMES["hyperactive"]
    from_here = [k for k in range(len(order)) if hyper[k:].all()]
    start = result.curves["state"][order, 0].astype(int)
    names = {v: k for k, v in OUTCOMES.items()}
    return Reading(
        {
            "threshold": float(biases[order][from_here[0]]) if from_here else float("nan"),
            "at zero": float(hyper[0]) if biases[order][0] == 0.0 else float("nan"),
            "start": float(np.sum(start != STATE_CODES["balanced"])),
        },
        detail="; ".join(
            f"c={biases[j]:g}: {names[int(o)]} (level {fmt(level(result, j))})"
            for j, o in zip(order, outcome, strict=True)
        ),
        scale=scale(config),
    )


TEACHER_BIAS = ClaimSpec(
    "teacher-bias-pushes-hyperactive",
    "Raising the bias of the target function also moves the neuron from balanced to hyperactive.",
    source=f"{OBSERVATION_1} ('Conversely, if we increase the bias of the target function…')",
    criterion=AllOf(
        {
            "threshold": Above(
                "smallest teacher bias c from which every larger bias ends hyperactive", 0.0
            ),
            "at zero": Below("runs at teacher bias 0 (the smallest) that end hyperactive", 1.0),
            "start": Below("runs that do not start balanced", 1.0),
        }
    ),
    measure=_teacher_bias,
    scope="student b1 = b2 = 0 (balanced at initialisation), teacher ReLU(x) + c",
    note="the values of c [I]",
)


# ---------------------------------------------------------------------------------------------
# stuck-solution-is-least-squares-line
# ---------------------------------------------------------------------------------------------
def _least_squares_line(results: Results, config: SingleNeuronConfig) -> Reading:
    """The b2 = −1.2 run's line (slope w2·w1, intercept w2·b1 + b2) against the least-squares
    line through ReLU on the same inputs, and its final state."""
    result = results[Key.B2_SWEEP]
    index = first_match(result.conditions, b2=-1.2)
    if index is None:
        nan = float("nan")
        return Reading(
            {"deviation": nan, "other state": nan},
            detail="not measured: b2_sweep must contain -1.2",
            scale=scale(config),
        )
    x = result.arrays["x"]
    w1, b1, w2, b2 = (float(result.final[k][index]) for k in ("w1", "b1", "w2", "b2"))
    slope, intercept = w2 * w1, w2 * b1 + b2
    best_slope, best_intercept = np.polyfit(x, np.maximum(x, 0.0), 1)
    deviation = max(abs(slope / best_slope - 1), abs(intercept / best_intercept - 1))
    state = STATE_NAMES[int(result.final["state"][index])]
    return Reading(
        {"deviation": float(deviation), "other state": float(state != "hyperactive")},
        detail=f"slope {fmt(slope)} vs {fmt(best_slope)}, intercept {fmt(intercept)} vs "
        f"{fmt(best_intercept)} (w1 {fmt(w1)}, b1 {fmt(b1)}, w2 {fmt(w2)}, b2 {fmt(b2)}); "
        f"neuron {state}",
        scale=scale(config),
    )


LEAST_SQUARES = ClaimSpec(
    "stuck-solution-is-least-squares-line",
    "The local minimum for b2 = −1.2 is the linear regression solution: the student's "
    "line equals the least-squares line through ReLU.",
    source=f"{OBSERVATION_1} (figure 'large_b2_init')",
    criterion=lambda c: AllOf(
        {
            "deviation": Below(
                "larger relative deviation of the slope w2·w1 and intercept w2·b1 + b2 from "
                "the least-squares line on the same inputs",
                c.fit_rtol,
            ),
            "other state": Below("runs whose neuron does not end hyperactive", 1.0),
        }
    ),
    measure=_least_squares_line,
    scope="b1 = 0, b2 = −1.2, Adam lr 0.01; the end of training",
    note="tolerance [I]",
    figure="fits.png",
)
