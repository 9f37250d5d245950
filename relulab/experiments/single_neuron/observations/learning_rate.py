"""Seed 001, Observation 2: too large a learning rate kills the neuron (the Takeaway's
irreversibility is :mod:`~relulab.experiments.single_neuron.observations.irreversibility`).

At b1 = 0, b2 = −1: lr 0.2 optimises the loss to zero — read, as every "the loss can go to zero"
of the seed, as the loss *reaching* zero (issue 43: the seed states no horizon, and at 20 000
steps the converged lr 0.2 neuron is thrown off later by Adam's normalised steps; where a run
ends is in the detail) — and lr 0.4 ends dead on the constant fit (≈ 0.1) after the loss first
fell quickly ("the loss may decrease quickly, but at the cost of killing some neurons").

"Once a neuron leaves the balanced state, it is very hard to return": judged on the seed's
learning rates (0.01–0.4), counting the neurons that were outside the balanced state — that left
it, or started hyperactive (issue 43; one that starts dead cannot move and is left out) — and
came back for good, as a share with its Clopper–Pearson interval (issue 43; issue 29 read it as
an exact count). Every choice made after a result is declared post hoc, and the record carries
the verdict without each.
"""

from __future__ import annotations

import numpy as np

from relulab.analysis import Estimate, first_match
from relulab.engine import STATE_CODES
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, PostHoc, Reading
from relulab.experiments.criteria import AllOf, Below, Inside
from relulab.experiments.single_neuron.config import (
    DEAD_PLATEAU,
    SOURCE,
    SingleNeuronConfig,
    scale,
)
from relulab.experiments.single_neuron.observations.plateaus import (
    DEAD,
    converges_criterion,
    converges_reading,
    reached_zero_post_hoc,
    stuck_criterion,
    stuck_reading,
)
from relulab.experiments.single_neuron.readings import (
    bracket,
    diverged_counts,
    diverged_detail,
    fmt,
    halves_divergence,
    level,
    margins,
)
from relulab.experiments.single_neuron.units import Key, neurons

__all__ = [
    "FALLS_THEN_DIES",
    "LR_BOUNDARY",
    "LR_CONVERGES",
    "LR_KILLS",
    "lr_region",
]

OBSERVATION_2 = f"{SOURCE}, Observation 2"
SEED_LR = (0.2, 0.4)  # converges, kills (Observation 2) [S]


def lr_region(
    results: Results,
    config: SingleNeuronConfig,
    parameterisation: str = "standard",
    reached: bool = True,
) -> Estimate:
    """The transition region of the fine lr sweep (b1 = 0, b2 = −1): where the outcome "the loss
    reached zero" changes (``reached``; else "the loss ends at zero", the reading before issue
    43, under which runs that converge and are thrown off later count as not converged)."""
    unit = neurons(results, Key.LR_BOUNDARY)
    return bracket(unit, "lr", False, parameterisation, config.converge_tol, reached)


# ---------------------------------------------------------------------------------------------
# lr-0.2-converges, lr-0.4-kills, lr-boundary-between-seed-points
# ---------------------------------------------------------------------------------------------
def _lr_converges(results: Results, config: SingleNeuronConfig) -> Reading:
    region = lr_region(results, config)
    lrs = neurons(results, Key.LR_SWEEP)
    return converges_reading(lrs, {"lr": 0.2}, region, SEED_LR, config, Key.LR_SWEEP)


def _lr_converges_at_end(results: Results, config: SingleNeuronConfig) -> Reading:
    """The reading before issue 43: the loss level at the end of training."""
    region = lr_region(results, config, reached=False)
    lrs = neurons(results, Key.LR_SWEEP)
    return converges_reading(lrs, {"lr": 0.2}, region, SEED_LR, config, Key.LR_SWEEP, reached=False)


def _lr_kills(results: Results, config: SingleNeuronConfig) -> Reading:
    lrs = neurons(results, Key.LR_SWEEP)
    dies = first_match(lrs.conditions, lr=0.4)
    chosen = [dies] if dies is not None else []
    return stuck_reading(DEAD, lrs, chosen, lambda _: "lr=0.4", config, Key.LR_SWEEP)


def _lr_boundary(results: Results, config: SingleNeuronConfig, reached: bool = True) -> Reading:
    region = lr_region(results, config, reached=reached)
    at_end = lr_region(results, config, reached=False)
    counts = halves_divergence(neurons(results, Key.LR_BOUNDARY), Key.LR_BOUNDARY)
    ends = (
        f"; read at the end of training instead (a run that reached zero and was thrown off "
        f"later counts as not converged): transition region [{fmt(at_end.low)}, "
        f"{fmt(at_end.high)}]"
        if reached
        else ""
    )
    return Reading(
        region,
        detail=margins(*SEED_LR, region) + ends + "; " + diverged_detail(counts),
        scale=scale(config, f"fine sweep of {config.boundary_points} points"),
        diverged=counts,
    )


def _lr_boundary_at_end(results: Results, config: SingleNeuronConfig) -> Reading:
    """The reading before issue 43: the outcome at the end of training."""
    return _lr_boundary(results, config, reached=False)


LR_CONVERGES: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "lr-0.2-converges",
    "With b1 = 0, b2 = −1, learning rate 0.2 optimises the loss to zero.",
    source=f"{OBSERVATION_2} ('When LR = 0.2, the model's loss can be optimized to zero')",
    criterion=converges_criterion,
    measure=_lr_converges,
    scope="b1 = 0, b2 = −1, Adam; during training: the loss reaches zero before the large "
    "learning rate can kill the neuron (the seed states no horizon; whether the converged "
    "neuron is thrown off later, as at steps = 20 000, is in the detail, not judged)",
    note="'can be optimized to zero': the lowest loss level reached, a median over a stretch of "
    "10 % of the record; threshold [I]",
    figure="loss_curves.png",
    counterexample="the student's w2 started at 4 instead of 1 (b1 = 0, b2 = −1, lr 0.2): the "
    "neuron dies before its loss reaches zero and the loss ends at 5/48",
    post_hoc=(reached_zero_post_hoc(_lr_converges_at_end),),
)

LR_KILLS: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "lr-0.4-kills",
    "With b1 = 0, b2 = −1, learning rate 0.4 kills the neuron: the loss only "
    "reaches 0.1 (constant fit).",
    source=OBSERVATION_2,
    criterion=stuck_criterion(DEAD),
    measure=_lr_kills,
    scope="b1 = 0, b2 = −1, Adam; the level the loss ends at",
    note="'around': within plateau_rtol of the exact plateau [I]",
    figure="loss_curves.png",
    counterexample="a smaller initial push, b2 = −0.5 (lr_sweep_b2): at lr 0.4 the neuron "
    "survives and converges",
)

LR_BOUNDARY: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "lr-boundary-between-seed-points",
    "The learning rate above which the neuron dies lies between 0.2 and 0.4.",
    source=f"{OBSERVATION_2} (0.2 converges, 0.4 kills)",
    criterion=Inside(
        "transition region of the fine lr sweep (b1 = 0, b2 = −1) between runs whose loss "
        "reached zero and runs killed before it did",
        0.2,
        0.4,
    ),
    measure=_lr_boundary,
    scope="b1 = 0, b2 = −1, Adam; the outcome read as lr-0.2-converges reads it (the loss "
    "reached zero), so the boundary is Observation 2's — the neuron killed by the first large "
    "steps — whatever the horizon",
    note="interval: the grid points from the first to the last change of outcome; beyond the "
    "seed: the seed gives two points, not a located boundary",
    figure="phase_maps.png",
    beyond_seed=True,
    counterexample="a smaller initial push, b2 = −0.5 (lr_sweep_b2): the neuron survives "
    "beyond lr 0.4 (to ≈ 0.45) and dies from ≈ 0.5, so the transition region lies above 0.4",
    post_hoc=(
        PostHoc(
            "the outcome read as 'the loss reached zero' (the lowest loss level), not 'the loss "
            "ends at zero'",
            "chosen in issue 43 with lr-0.2-converges' reading, after the robustness record "
            "showed this claim inconclusive at steps = 20 000: read at the end, its transition "
            "region ([0.247, 0.333] at quick, [0.129, 0.302] at 20 000 steps) is made of runs "
            "that reached zero and were thrown off later, not of runs the large steps killed",
            measure=_lr_boundary_at_end,
        ),
    ),
)


# ---------------------------------------------------------------------------------------------
# lr-0.4-falls-fast-then-dies
# ---------------------------------------------------------------------------------------------
def death_step(states: np.ndarray) -> int:
    """The first record from which a neuron is dead to the end of the record (0: dead from the
    start; ``len(states)``: not dead at the end).

    Example:
        >>> death_step(np.array([1, 1, 0, 1, 0, 0]))
        4
    """
    alive = np.flatnonzero(states != STATE_CODES["dead"])
    return int(alive[-1]) + 1 if len(alive) else 0


def _ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` in floating point: +inf over a zero level (a loss cannot fall
    below a level of exactly 0, as a converged run's is), NaN for 0 / 0.

    Example:
        >>> _ratio(0.5, 0.0), _ratio(1.0, 4.0)
        (inf, 0.25)
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(numerator) / np.float64(denominator))


def _falls_then_dies(results: Results, config: SingleNeuronConfig) -> Reading:
    """The lr 0.4 run recorded at every step: the step t_d from which it is dead to the end of
    the record, its lowest loss before t_d against the level it ends stuck at and against the
    default lr's loss at t_d, and its state at the end of the full run. A run dead from the first
    record compares its first loss, one never dead in the record its lowest (as the claim read
    them before issue 28), and fails on t_d."""
    early, full = neurons(results, Key.LR_EARLY), neurons(results, Key.LR_SWEEP)
    fast = first_match(early.conditions, lr=0.4)
    default = first_match(early.conditions, lr=config.lr)
    full_i = first_match(full.conditions, lr=0.4)
    scale_text = scale(config, f"first {config.early_steps} steps recorded at every step")
    if fast is None or default is None or full_i is None:
        parts = ("below its end level", "below the default lr", "dies", "alive")
        measured = dict.fromkeys(parts, float("nan"))
        return Reading(measured, "not measured: lr 0.4 or the default lr missing", scale_text)
    counts = diverged_counts(
        {Key.LR_EARLY: early, Key.LR_SWEEP: full},
        {Key.LR_EARLY: [fast, default], Key.LR_SWEEP: [full_i]},
    )
    loss = early.loss[fast]
    t_d = death_step(early.state[fast].astype(int))
    dies = 0 < t_d < len(loss)
    lowest = float(loss[:t_d].min()) if dies else float(loss.min() if t_d else loss[0])
    reference = float(early.loss[default][t_d]) if dies else float("nan")
    stuck = level(full, full_i)
    alive = float(int(full.end.state[full_i]) != STATE_CODES["dead"])
    if any(d for d, _ in counts.values()):  # a diverged run ranks last: no fall, no death
        lowest = np.inf
    if dies:
        detail = (
            f"loss {fmt(loss[0])} at step 0, lowest {fmt(lowest)} at step "
            f"{int(early.steps[int(np.argmin(loss[:t_d]))])}, dead from step "
            f"{int(early.steps[t_d])} on (ends stuck at {fmt(stuck)}; 5/48 = "
            f"{DEAD_PLATEAU:.4g}); lr {config.lr:g} at step {int(early.steps[t_d])}: "
            f"{fmt(reference)}"
        )
    else:
        when = "from the first record on" if t_d == 0 else f"not by step {int(early.steps[-1])}"
        detail = f"the neuron is dead {when}; lowest loss {fmt(loss.min())}"
    measured = {
        "below its end level": _ratio(lowest, stuck),
        "below the default lr": _ratio(lowest, reference),
        "dies": float(early.steps[t_d]) if dies else (0.0 if t_d == 0 else float("nan")),
        "alive": alive,
    }
    detail = f"{detail}; dead at the end of the full run: {not alive}; " + diverged_detail(counts)
    return Reading(measured, detail, scale_text, diverged=counts)


FALLS_THEN_DIES: ClaimSpec[SingleNeuronConfig] = ClaimSpec(
    "lr-0.4-falls-fast-then-dies",
    "At lr 0.4 the loss first decreases quickly, then the neuron dies.",
    source=f"{OBSERVATION_2} ('the loss may decrease quickly, but at the cost of killing some "
    "neurons')",
    criterion=lambda c: AllOf(
        {
            "below its end level": Below(
                "lowest loss before the neuron dies, relative to the level it ends stuck at", 1.0
            ),
            "below the default lr": Below(
                f"relative to the default lr {c.lr:g}'s loss at the step t_d it dies", 1.0
            ),
            "dies": Inside(
                "step t_d from which the lr 0.4 neuron is dead to the end of the early record",
                1.0,
                float(c.early_steps),
            ),
            "alive": Below("lr 0.4 runs not dead at the end of the full run", 1.0),
        }
    ),
    measure=_falls_then_dies,
    scope="the first steps of training, before the neuron dies; b1 = 0, b2 = −1",
    note="both ratios below 1: the loss fell below both levels before the neuron died",
    figure="loss_curves.png",
    counterexample="a smaller initial push, b2 = −0.5 (lr_sweep_b2): at lr 0.4 the loss falls "
    "fast and the neuron never dies",
)
