"""Seed 001, Observations 0 and 1: large |b1| and large |b2| at initialisation.

Observation 0 (b2 = 0): b1 > 1 starts hyperactive and sticks near 0.02, b1 < −1 starts dead and
sticks near 0.1. Observation 1 (b1 = 0): b2 = −1.1 converges, b2 = −1.2 sticks near 0.02 as the
least-squares line, because the kink x_t = −b1/w1 drifts left past −1; raising the target's
bias does the same.

Two of these are checks, not claims (``check=``): a dead ReLU neuron has no gradient but b2's,
so it stays dead on the constant fit (:data:`B1_DEAD`), and a run stopped in the hyperactive
state is the least-squares line (:data:`LEAST_SQUARES`) — both by construction. Every claim
names the setting of the simulated system under which it fails (``counterexample=``).
"""

from __future__ import annotations

import numpy as np

from relulab.analysis import Estimate, first_match
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
    reached_zero_post_hoc,
    stuck_criterion,
    stuck_reading,
)
from relulab.experiments.single_neuron.readings import (
    STATE_NAMES,
    bracket,
    diverged_counts,
    diverged_detail,
    fmt,
    halves_divergence,
    kinks,
    loss_levels,
    margins,
    outcomes,
)
from relulab.experiments.single_neuron.units import Key, neurons

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


def b2_region(
    results: Results, config: SingleNeuronConfig, parameterisation: str = "standard"
) -> Estimate:
    """The transition region of the fine b2 sweep (b1 = 0)."""
    unit = neurons(results, Key.B2_BOUNDARY)
    return bracket(unit, "b2", True, parameterisation, config.converge_tol)


# ---------------------------------------------------------------------------------------------
# b1-hyperactive-plateau, b1-dead-plateau
# ---------------------------------------------------------------------------------------------
def _b1_label(condition: dict) -> str:
    return f"b1={condition['b1']:g}"


def _b1_hyperactive(results: Results, config: SingleNeuronConfig) -> Reading:
    b1s = neurons(results, Key.B1_SWEEP)
    chosen = [i for i, c in enumerate(b1s.conditions) if c["b1"] > 1]
    return stuck_reading(HYPERACTIVE, b1s, chosen, _b1_label, config, Key.B1_SWEEP)


def _b1_dead(results: Results, config: SingleNeuronConfig) -> Reading:
    b1s = neurons(results, Key.B1_SWEEP)
    chosen = [i for i, c in enumerate(b1s.conditions) if c["b1"] < -1]
    return stuck_reading(DEAD, b1s, chosen, _b1_label, config, Key.B1_SWEEP)


B1_HYPERACTIVE: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "b1-hyperactive-plateau",
    "With b2 = 0 and b1 > 1 the neuron starts hyperactive "
    "and the loss gets stuck around 0.02 (linear regression of ReLU).",
    source=OBSERVATION_0,
    criterion=stuck_criterion(HYPERACTIVE),
    measure=_b1_hyperactive,
    scope="b2 = 0, b1 > 1, Adam lr 0.01; the level the loss ends at ('gets stuck')",
    note="'around': within plateau_rtol of the exact plateau [I]",
    figure="loss_curves.png",
    counterexample="Adam's lr raised to 0.1 (b2 = 0): the neuron started hyperactive at b1 = 1.2 "
    "and 1.5 leaves that state and converges to the teacher",
)

B1_DEAD: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "b1-dead-plateau",
    "With b2 = 0 and b1 < −1 the neuron starts dead and the loss "
    "gets stuck around 0.1 (a constant fit of ReLU).",
    source=OBSERVATION_0,
    criterion=stuck_criterion(DEAD),
    measure=_b1_dead,
    scope="b2 = 0, b1 < −1, Adam lr 0.01; the level the loss ends at ('gets stuck')",
    note="'around': within plateau_rtol of the exact plateau [I]",
    figure="loss_curves.png",
    check="an identity of the setup: with w1 = 1 and b1 < −1 the pre-activation w1·x + b1 is "
    "negative on every x in [−1, 1], where ReLU and its derivative are 0, so the gradients in "
    "w1, b1 and w2 are exactly 0 and Adam never moves them: the neuron stays dead and only b2 "
    "trains, to the targets' mean — the constant fit, whose loss is ReLU's variance on the "
    "inputs (5/48 in the continuum). No setting of this ReLU setup can make it fail",
)


# ---------------------------------------------------------------------------------------------
# b2-minus-1.1-converges, b2-minus-1.2-sticks
# ---------------------------------------------------------------------------------------------
def _b2_converges(results: Results, config: SingleNeuronConfig) -> Reading:
    region = b2_region(results, config)
    b2s = neurons(results, Key.B2_SWEEP)
    return converges_reading(b2s, {"b2": -1.1}, region, SEED_B2, config, Key.B2_SWEEP)


def _b2_converges_at_end(results: Results, config: SingleNeuronConfig) -> Reading:
    """The reading before issue 43: the loss level at the end of training."""
    region = b2_region(results, config)
    b2s = neurons(results, Key.B2_SWEEP)
    return converges_reading(
        b2s, {"b2": -1.1}, region, SEED_B2, config, Key.B2_SWEEP, reached=False
    )


def _b2_sticks(results: Results, config: SingleNeuronConfig) -> Reading:
    b2s = neurons(results, Key.B2_SWEEP)
    stuck = first_match(b2s.conditions, b2=-1.2)
    chosen = [stuck] if stuck is not None else []
    return stuck_reading(HYPERACTIVE, b2s, chosen, lambda _: "b2=-1.2", config, Key.B2_SWEEP)


B2_CONVERGES: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "b2-minus-1.1-converges",
    "With b1 = 0, b2 = −1.1 the loss goes to zero.",
    source=f"{OBSERVATION_1} ('when b2 = −1.1, the loss can go to zero')",
    criterion=converges_criterion,
    measure=_b2_converges,
    scope="b1 = 0, Adam lr 0.01; during training: the loss reaches zero (the seed states no "
    "horizon; where the run ends is in the detail)",
    note="'can go to zero': the lowest loss level reached, a median over a stretch of 10 % of "
    "the record as the stuck claims read theirs; threshold [I]",
    figure="loss_curves.png",
    counterexample="the student's w1 started at 0.5 instead of 1 (b1 = 0, b2 = −1.1, lr 0.01): "
    "the kink −b1/w1 moves twice as far per step of b1, passes −1 and the neuron ends "
    "hyperactive at 1/48 without having reached zero",
    post_hoc=(reached_zero_post_hoc(_b2_converges_at_end),),
)

B2_STICKS: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "b2-minus-1.2-sticks",
    "With b1 = 0, b2 = −1.2 the loss gets stuck around 0.02 and the neuron ends hyperactive.",
    source=OBSERVATION_1,
    criterion=stuck_criterion(HYPERACTIVE),
    measure=_b2_sticks,
    scope="b1 = 0, Adam lr 0.01; the level the loss ends at ('gets stuck')",
    note="'around': within plateau_rtol of the exact plateau [I]",
    figure="loss_curves.png",
    counterexample="the reparameterised neuron w·(x + b′) (the seed's Question 1) at b2 = −1.2: "
    "its kink −b′ drifts less far, stays inside [−1, 1] and it converges",
)


# ---------------------------------------------------------------------------------------------
# b2-boundary-between-seed-points
# ---------------------------------------------------------------------------------------------
def _b2_boundary(results: Results, config: SingleNeuronConfig) -> Reading:
    region = b2_region(results, config)
    counts = halves_divergence(neurons(results, Key.B2_BOUNDARY), Key.B2_BOUNDARY)
    return Reading(
        region,
        detail=margins(*SEED_B2, region) + "; " + diverged_detail(counts),
        scale=scale(config, f"fine sweep of {config.boundary_points} points"),
        diverged=counts,
    )


B2_BOUNDARY: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
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
    counterexample="the student's w1 started at 0.5: the b2 sweep's outcome changes between "
    "b2 = −0.9 and −0.8, above −1.1",
)


# ---------------------------------------------------------------------------------------------
# kink-drifts-left
# ---------------------------------------------------------------------------------------------
def _kink_drift(results: Results, config: SingleNeuronConfig) -> Reading:
    b2s = neurons(results, Key.B2_SWEEP)
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
    counts = diverged_counts({Key.B2_SWEEP: b2s}, {Key.B2_SWEEP: [stuck, fine]})
    if counts[Key.B2_SWEEP][0]:  # a diverged run's kink is no reading: it ranks last, fails
        lowest, lowest_fine = np.inf, -np.inf
    return Reading(
        {"b2 = -1.2": float(lowest), "b2 = -1.1": float(lowest_fine), "start": float(abs(start))},
        detail=f"b2=-1.2: kink starts at {fmt(start)}, reaches {fmt(lowest)}"
        + (f", passes −1 at step {int(b2s.steps[crossed[0]])}" if len(crossed) else "")
        + f"; b2=-1.1: lowest kink {fmt(lowest_fine)}; "
        + diverged_detail(counts),
        scale=scale(config),
        diverged=counts,
    )


KINK: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
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
    counterexample="the student's w1 started at 0.5: for b2 = −1.1 too the kink passes −1 "
    "(to ≈ −1.5) and the neuron ends hyperactive",
)


# ---------------------------------------------------------------------------------------------
# teacher-bias-pushes-hyperactive
# ---------------------------------------------------------------------------------------------
def _teacher_bias(results: Results, config: SingleNeuronConfig) -> Reading:
    unit = neurons(results, Key.TEACHER_BIAS)
    biases = np.array([c["teacher_bias"] for c in unit.conditions])
    order = np.argsort(biases)
    outcome = outcomes(unit, config.converge_tol)[order]
    hyper = outcome == OUTCOMES["hyperactive"]
    from_here = [k for k in range(len(order)) if hyper[k:].all()]
    start = unit.state[order, 0].astype(int)
    names = {v: k for k, v in OUTCOMES.items()}
    levels = loss_levels(unit)
    counts = diverged_counts({Key.TEACHER_BIAS: unit})
    return Reading(
        {
            "threshold": float(biases[order][from_here[0]]) if from_here else float("nan"),
            "at zero": float(hyper[0]) if biases[order][0] == 0.0 else float("nan"),
            "start": float(np.sum(start != STATE_CODES["balanced"])),
        },
        detail="; ".join(
            [
                f"c={biases[j]:g}: {names[int(o)]} (level {fmt(levels[j])})"
                for j, o in zip(order, outcome, strict=True)
            ]
            + [diverged_detail(counts)]
        ),
        scale=scale(config),
        diverged=counts,
    )


TEACHER_BIAS: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
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
    note="the values of c [I]; the loss depends on b2 − c only, so a target raised by c is "
    "the student started at b2 = −c: this claim re-reads Observation 1's b2 sweep",
    counterexample="Adam lr 0.2 with the student's w1 started at 2: every raised target up to "
    "c = 3 is learnt (the neuron converges), none ends hyperactive",
)


# ---------------------------------------------------------------------------------------------
# stuck-solution-is-least-squares-line
# ---------------------------------------------------------------------------------------------
def _least_squares_line(results: Results, config: SingleNeuronConfig) -> Reading:
    """The b2 = −1.2 run's line (slope w2·w1, intercept w2·b1 + b2) against the least-squares
    line through ReLU on the same inputs, and its final state."""
    unit = neurons(results, Key.B2_SWEEP)
    index = first_match(unit.conditions, b2=-1.2)
    if index is None:
        nan = float("nan")
        return Reading(
            {"deviation": nan, "other state": nan},
            detail="not measured: b2_sweep must contain -1.2",
            scale=scale(config),
        )
    end = unit.end
    w1, b1, w2, b2 = (float(v[index]) for v in (end.w1, end.b1, end.w2, end.b2))
    slope, intercept = w2 * w1, w2 * b1 + b2
    best_slope, best_intercept = np.polyfit(unit.x, np.maximum(unit.x, 0.0), 1)
    deviation = max(abs(slope / best_slope - 1), abs(intercept / best_intercept - 1))
    state = STATE_NAMES[int(end.state[index])]
    counts = diverged_counts({Key.B2_SWEEP: unit}, {Key.B2_SWEEP: [index]})
    if counts[Key.B2_SWEEP][0]:  # a diverged run is no line: it ranks last
        deviation = np.inf
    return Reading(
        {"deviation": float(deviation), "other state": float(state != "hyperactive")},
        detail=f"slope {fmt(slope)} vs {fmt(best_slope)}, intercept {fmt(intercept)} vs "
        f"{fmt(best_intercept)} (w1 {fmt(w1)}, b1 {fmt(b1)}, w2 {fmt(w2)}, b2 {fmt(b2)}); "
        f"neuron {state}; " + diverged_detail(counts),
        scale=scale(config),
        diverged=counts,
    )


LEAST_SQUARES: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
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
    check="an identity of the setup: while the neuron is hyperactive the student is the line "
    "(w2·w1)·x + (w2·b1 + b2), and where it stops the gradients in b2 (the mean residual) and "
    "in w1 (w2 × the mean of residual·x) vanish — the normal equations of least squares — so a "
    "run that ends stuck in the hyperactive state is the least-squares line by construction "
    "(the figure 'large_b2_init' shows the same). Whether the b2 = −1.2 run ends hyperactive is "
    "b2-minus-1.2-sticks, a claim",
)
