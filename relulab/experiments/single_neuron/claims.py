"""The single-neuron scorecard: each observation of seed 001 as a claim, plus the metrics.

Readings of the stored runs used here and by the figures: :func:`loss_levels` (the median of
the last 10 % of each loss curve — the one reading of "goes to zero" and "stuck around"),
:func:`outcomes` (converged, or the neuron's final state), :func:`bracket` (a fine sweep's
transition region as an interval) and :func:`kinks` (the kink :math:`x_t = -b_1/w_1`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relulab.analysis import (
    Estimate,
    boundary_bracket,
    first_below,
    first_match,
    locate_boundary,
    longest_plateau,
    plateau_level,
    proportion_ci,
    tail_range,
    where,
)
from relulab.engine import STATE_CODES
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import Claim, above, below, inside, judged
from relulab.experiments.single_neuron.config import (
    DEAD_PLATEAU,
    HYPERACTIVE_PLATEAU,
    OUTCOMES,
    SingleNeuronConfig,
)
from relulab.store import UnitResult
from relulab.theory import sample_constant_fit_loss, sample_linear_fit_loss

__all__ = ["analyse", "bracket", "claims", "kinks", "loss_levels", "metrics", "outcomes"]

SOURCE = "seed 001"
STATE_NAMES = {code: name for name, code in STATE_CODES.items()}


@dataclass(frozen=True)
class Plateau:
    """A loss level a neuron gets stuck at, and the state it is stuck in."""

    state: str
    level: float
    fraction: str


HYPERACTIVE = Plateau("hyperactive", HYPERACTIVE_PLATEAU, "1/48")  # linear fit of ReLU
DEAD = Plateau("dead", DEAD_PLATEAU, "5/48")  # constant fit of ReLU


def loss_levels(result: UnitResult) -> np.ndarray:
    """Per network, the loss level: the median over the last 10 % of the record
    (:func:`relulab.analysis.plateau_level`). Converged and stuck runs are read the same way."""
    return np.array([plateau_level(curve) for curve in result.curves["loss"]])


def outcomes(result: UnitResult, converge_tol: float) -> np.ndarray:
    """Per network: converged (loss level < tol), else its final state (dead/balanced/hyper)."""
    state = result.final["state"].astype(int)
    return np.where(loss_levels(result) < converge_tol, OUTCOMES["converged"], state)


def kinks(result: UnitResult) -> np.ndarray:
    """Kink trajectories ``(S, T)``: −b1/w1 (standard) or −b' (reparam)."""
    reparam = np.array([c["parameterisation"] == "reparam" for c in result.conditions])[:, None]
    return np.where(reparam, -result.curves["b1"], -result.curves["b1"] / result.curves["w1"])


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _level(result: UnitResult, i: int) -> float:
    return plateau_level(result.curves["loss"][i])


def _stuck_at(
    plateau: Plateau,
    result: UnitResult,
    indices: Sequence[int],
    label: Callable[[dict[str, Any]], str],
    config: SingleNeuronConfig,
) -> dict[str, Any]:
    """``judged`` arguments for "every chosen run ends at the plateau, in its state".

    The measured value is the highest loss level (median over the last 10 % of the record).
    """
    losses = np.array([_level(result, i) for i in indices])
    states = result.final["state"][list(indices)].astype(int)
    holds = (
        bool(len(indices))
        and bool(np.all(np.abs(losses / plateau.level - 1) < config.plateau_rtol))
        and bool(np.all(states == STATE_CODES[plateau.state]))
    )
    return {
        "expected": f"loss level over the last 10 % of training within {config.plateau_rtol:.0%} "
        f"of {plateau.fraction} = {plateau.level:.4f} for every run, neuron {plateau.state}; "
        "measured: the highest level",
        "measured": float(np.max(losses)) if len(losses) else float("nan"),
        "holds": holds,
        "detail": "; ".join(
            f"{label(result.conditions[i])}: loss {_fmt(_level(result, i))}, "
            f"{STATE_NAMES[int(result.final['state'][i])]}"
            for i in indices
        ),
    }


def _kink_drift(b2s: UnitResult) -> dict[str, Any]:
    """``judged`` arguments for "the kink starts at 0 and passes −1 for b2 = −1.2, not −1.1"."""
    expected = "lowest kink < −1 for b2 = −1.2 and > −1 for b2 = −1.1 (starting at 0)"
    stuck, fine = first_match(b2s.conditions, b2=-1.2), first_match(b2s.conditions, b2=-1.1)
    if stuck is None or fine is None:
        return {
            "expected": expected,
            "measured": float("nan"),
            "holds": False,
            "detail": "not measured: b2_sweep must contain -1.1 and -1.2",
        }
    trajectories = kinks(b2s)
    start = trajectories[stuck, 0]
    lowest, lowest_fine = trajectories[stuck].min(), trajectories[fine].min()
    crossed = np.flatnonzero(trajectories[stuck] < -1)
    return {
        "expected": expected,
        "measured": float(lowest),
        "holds": bool(abs(start) < 1e-6 and lowest < -1 and lowest_fine > -1),
        "detail": f"b2=-1.2: kink starts at {_fmt(start)}, reaches {_fmt(lowest)}"
        + (f", passes −1 at step {int(b2s.steps[crossed[0]])}" if len(crossed) else "")
        + f"; b2=-1.1: lowest kink {_fmt(lowest_fine)}",
    }


def _stuck_deviations(results: Results, config: SingleNeuronConfig) -> tuple[list[float], dict]:
    """Relative deviation of every stuck run's level from the exact fit on the same inputs."""
    x = results["b1-sweep"].arrays["x"]
    teacher = np.maximum(x, 0.0)
    exact = {
        STATE_CODES["hyperactive"]: sample_linear_fit_loss(x, teacher),
        STATE_CODES["dead"]: sample_constant_fit_loss(x, teacher),
    }
    deviations = []
    for name in ("b1-sweep", "b2-sweep", "lr-sweep"):
        result = results[name]
        for i in range(result.n_networks):
            state = int(result.final["state"][i])
            level = _level(result, i)
            if state in exact and level >= config.converge_tol:
                deviations.append(abs(level / exact[state] - 1))
    return deviations, exact


def _scale(config: SingleNeuronConfig, extra: str = "") -> str:
    """The scale a single-neuron verdict was measured at (the seed states none of these)."""
    base = f"N = {config.n_points} inputs ({config.sampling}), {config.steps} steps, {config.dtype}"
    return f"{base}; {extra}" if extra else base


def bracket(
    result: UnitResult, key: str, descending: bool, parameterisation: str, converge_tol: float
) -> Estimate:
    """A fine sweep's transition region (converged ↔ not) as an interval: the grid points from
    the first to the last change of outcome (:func:`relulab.analysis.boundary_bracket`), the
    sweep read from its converging side; the value is the midpoint of the first change.

    Args:
        result: a fine sweep (``b2-boundary`` or ``lr-boundary``).
        key: the swept setting, ``"b2"`` or ``"lr"``.
        descending: read the sweep from large to small values (b2 converges at the top).
        parameterisation: ``"standard"`` or ``"reparam"``.
        converge_tol: the loss level below which a run has converged.

    Returns:
        An :class:`~relulab.analysis.Estimate` with level 1 (a grid bracket, not a confidence
        interval) and ``n`` the number of grid points; NaN if the outcome never changes.
    """
    idx = where(result.conditions, parameterisation=parameterisation)
    swept = np.array([result.conditions[i][key] for i in idx])
    converged = outcomes(result, converge_tol)[idx] == OUTCOMES["converged"]
    order = np.argsort(-swept if descending else swept)
    midpoint, low, high, _ = boundary_bracket(swept[order], converged[order])
    return Estimate(midpoint, low, high, len(idx), 1.0, "grid bracket of the transition region")


def _margins(point_in: float, point_out: float, region: Estimate) -> str:
    """Where the seed's two points lie relative to a located transition region."""

    def where_is(point: float) -> str:
        if point in (region.low, region.high):
            return f"{point:g} is its end point"
        if region.low <= point <= region.high:
            return f"{point:g} lies inside it"
        gap = region.low - point if point < region.low else point - region.high
        return f"{point:g} lies {gap:.3g} {'below' if point < region.low else 'above'} it"

    return (
        f"transition region [{_fmt(region.low)}, {_fmt(region.high)}] "
        f"(first change at {_fmt(region.value)}); {where_is(point_in)}, {where_is(point_out)}"
    )


def _converges(
    claim_id: str,
    statement: str,
    result: UnitResult,
    match: dict[str, float],
    region: Estimate,
    seed_points: tuple[float, float],
    config: SingleNeuronConfig,
    source: str,
) -> Claim:
    """``below``: the run's loss level (median of the last 10 %, as for the stuck claims) < tol."""
    i = first_match(result.conditions, **match)
    loss = result.curves["loss"][i] if i is not None else np.array([np.nan])
    low, high = tail_range(loss)
    return below(
        claim_id,
        statement,
        quantity="loss level (median over the last 10 % of training)",
        measured=plateau_level(loss),
        bound=config.converge_tol,
        source=source,
        note="i.e. the loss goes to zero; threshold [I]; read as the stuck claims read it",
        detail=f"final loss {_fmt(loss[-1])}, range over the last 10 % [{_fmt(low)}, "
        f"{_fmt(high)}]; fine sweep: " + _margins(*seed_points, region),
        scale=_scale(config),
    )


def _left_and_returned(states: np.ndarray) -> tuple[bool, bool]:
    """Did a run leave the balanced state (balanced at a record, dead or hyperactive at a later
    one), and was it balanced again at any record after that?"""
    balanced = states == STATE_CODES["balanced"]
    first = np.flatnonzero(balanced)
    if not len(first):
        return False, False
    left = np.flatnonzero(~balanced[first[0] :])
    if not len(left):
        return False, False
    return True, bool(balanced[first[0] + left[0] :].any())


def _irreversibility(results: Results) -> tuple[Estimate, str]:
    """Fraction of standard ReLU runs (every unit) that return to balanced after leaving it."""
    counts: dict[str, list[int]] = {}
    for name, result in results.items():
        for i, condition in enumerate(result.conditions):
            if condition["activation"] != "relu":
                continue
            key = condition["parameterisation"]
            left, returned = _left_and_returned(result.curves["state"][i].astype(int))
            tally = counts.setdefault(f"{key}:{name}", [0, 0])
            tally[0] += left
            tally[1] += returned
    standard = [v for k, v in counts.items() if k.startswith("standard:")]
    left, returned = (sum(v[j] for v in standard) for j in (0, 1))
    reparam = [v for k, v in counts.items() if k.startswith("reparam:")]
    detail = "standard neuron, returned/left per unit: " + ", ".join(
        f"{k.split(':')[1]} {v[1]}/{v[0]}" for k, v in counts.items() if k.startswith("standard")
    )
    detail += (
        f"; reparameterised neuron (not the seed's): {sum(v[1] for v in reparam)}"
        f"/{sum(v[0] for v in reparam)}"
    )
    return proportion_ci(returned, left), detail


def _falls_then_dies(
    early: UnitResult, full: UnitResult, config: SingleNeuronConfig
) -> dict[str, Any]:
    """``judged`` arguments for "at lr 0.4 the loss first falls fast, then the neuron dies"."""
    expected = (
        "at lr 0.4 the neuron is dead from some step t_d to the end of the record (and at the "
        f"end of the {config.steps}-step run), and before t_d the loss fell below both the level "
        f"it ends stuck at and the default lr {config.lr:g}'s loss at t_d; measured: the lowest "
        "loss before t_d"
    )
    fast, default = (
        first_match(early.conditions, lr=0.4),
        first_match(early.conditions, lr=config.lr),
    )
    full_i = first_match(full.conditions, lr=0.4)
    if fast is None or default is None or full_i is None:
        return {
            "expected": expected,
            "measured": float("nan"),
            "holds": False,
            "detail": "not measured: lr 0.4 or the default lr missing",
        }
    states, loss = early.curves["state"][fast].astype(int), early.curves["loss"][fast]
    alive = np.flatnonzero(states != STATE_CODES["dead"])
    t_d = int(alive[-1]) + 1 if len(alive) else 0
    if t_d >= len(states):
        return {
            "expected": expected,
            "measured": float(loss.min()),
            "holds": False,
            "detail": f"the neuron is not dead at step {int(early.steps[-1])}; lowest loss "
            f"{_fmt(loss.min())}",
        }
    if t_d == 0:
        return {
            "expected": expected,
            "measured": float(loss[0]),
            "holds": False,
            "detail": "the neuron is dead from the first record on",
        }
    lowest = float(loss[:t_d].min())
    reference = float(early.curves["loss"][default][t_d])
    stuck = plateau_level(full.curves["loss"][full_i])
    died = int(full.final["state"][full_i]) == STATE_CODES["dead"]
    return {
        "expected": expected,
        "measured": lowest,
        "holds": bool(died and lowest < min(reference, stuck)),
        "detail": f"loss {_fmt(loss[0])} at step 0, lowest {_fmt(lowest)} at step "
        f"{int(early.steps[int(np.argmin(loss[:t_d]))])}, dead from step "
        f"{int(early.steps[t_d])} on (ends stuck at {_fmt(stuck)}; 5/48 = {DEAD_PLATEAU:.4g}); "
        f"lr {config.lr:g} at step {int(early.steps[t_d])}: {_fmt(reference)}; "
        f"dead at the end of the full run: {died}",
    }


def _teacher_bias(result: UnitResult, config: SingleNeuronConfig) -> dict[str, Any]:
    """``judged`` arguments for "raising the teacher's bias pushes the neuron to hyperactive"."""
    biases = np.array([c["teacher_bias"] for c in result.conditions])
    order = np.argsort(biases)
    start = result.curves["state"][order, 0].astype(int)
    hyper = outcomes(result, config.converge_tol)[order] == OUTCOMES["hyperactive"]
    from_here = [k for k in range(len(order)) if hyper[k:].all()]
    threshold = float(biases[order][from_here[0]]) if from_here else float("nan")
    holds = bool(
        np.all(start == STATE_CODES["balanced"]) and not hyper[0] and biases[order][0] == 0.0
    ) and bool(from_here)
    names = {v: k for k, v in OUTCOMES.items()}
    outcome = outcomes(result, config.converge_tol)[order]
    return {
        "expected": "every run starts balanced; at teacher bias 0 the neuron does not end "
        "hyperactive; from some bias c on, every larger bias ends hyperactive; measured: c",
        "measured": threshold,
        "holds": holds,
        "detail": "; ".join(
            f"c={biases[j]:g}: {names[int(o)]} (level {_fmt(_level(result, j))})"
            for j, o in zip(order, outcome, strict=True)
        ),
    }


def _least_squares_line(
    result: UnitResult, index: int | None, config: SingleNeuronConfig
) -> dict[str, Any]:
    """``judged`` arguments for "the stuck run is the least-squares line": the neuron ends
    hyperactive and its line (slope w2·w1, intercept w2·b1 + b2) deviates from the
    least-squares line through ReLU on the same inputs by less than ``fit_rtol``."""
    expected = (
        "neuron hyperactive, and slope w2·w1 and intercept w2·b1 + b2 within "
        f"{config.fit_rtol:.0%} of the least-squares line on the same inputs; measured: the "
        "larger relative deviation"
    )
    if index is None:
        return {
            "expected": expected,
            "measured": float("nan"),
            "holds": False,
            "detail": "not measured: b2_sweep must contain -1.2",
        }
    x = result.arrays["x"]
    w1, b1, w2, b2 = (float(result.final[k][index]) for k in ("w1", "b1", "w2", "b2"))
    slope, intercept = w2 * w1, w2 * b1 + b2
    best_slope, best_intercept = np.polyfit(x, np.maximum(x, 0.0), 1)
    deviation = max(abs(slope / best_slope - 1), abs(intercept / best_intercept - 1))
    state = STATE_NAMES[int(result.final["state"][index])]
    detail = (
        f"slope {_fmt(slope)} vs {_fmt(best_slope)}, intercept {_fmt(intercept)} vs "
        f"{_fmt(best_intercept)} (w1 {_fmt(w1)}, b1 {_fmt(b1)}, w2 {_fmt(w2)}, b2 {_fmt(b2)}); "
        f"neuron {state}"
    )
    return {
        "expected": expected,
        "measured": float(deviation),
        "holds": bool(state == "hyperactive" and deviation < config.fit_rtol),
        "detail": detail,
    }


def claims(results: Results, config: SingleNeuronConfig) -> list[Claim]:
    """Seed 001's Observations 0–3, the located boundaries, irreversibility, the exact
    plateaus and solutions, and the reparameterised neuron, as claims."""
    c = config
    b1s, b2s, lrs, silu = (results[k] for k in ("b1-sweep", "b2-sweep", "lr-sweep", "silu-vs-relu"))
    b1_label = lambda cond: f"b1={cond['b1']:g}"  # noqa: E731
    hyper_idx = [i for i, cond in enumerate(b1s.conditions) if cond["b1"] > 1]
    dead_idx = [i for i, cond in enumerate(b1s.conditions) if cond["b1"] < -1]
    stuck_b2 = first_match(b2s.conditions, b2=-1.2)
    dies = first_match(lrs.conditions, lr=0.4)
    relu_i = first_match(silu.conditions, activation="relu")
    silu_i = first_match(silu.conditions, activation="silu")
    silu_loss = silu.curves["loss"][silu_i]
    saddle = longest_plateau(silu.steps, silu_loss, c.converge_tol)
    reach = first_below(silu.steps, silu_loss, c.converge_tol)
    deviations, exact = _stuck_deviations(results, c)
    b2_region = bracket(results["b2-boundary"], "b2", True, "standard", c.converge_tol)
    lr_region = bracket(results["lr-boundary"], "lr", False, "standard", c.converge_tol)
    b2_reparam = bracket(results["b2-boundary"], "b2", True, "reparam", c.converge_tol)
    lr_reparam = bracket(results["lr-boundary"], "lr", False, "reparam", c.converge_tol)
    returned, returned_detail = _irreversibility(results)
    fine = _scale(c, f"fine sweep of {c.boundary_points} points")
    return [
        judged(
            "b1-hyperactive-plateau",
            "With b2 = 0 and b1 > 1 the neuron starts hyperactive "
            "and the loss gets stuck around 0.02 (linear regression of ReLU).",
            source=f"{SOURCE}, Observation 0",
            scale=_scale(c),
            **_stuck_at(HYPERACTIVE, b1s, hyper_idx, b1_label, c),
        ),
        judged(
            "b1-dead-plateau",
            "With b2 = 0 and b1 < −1 the neuron starts dead and the loss "
            "gets stuck around 0.1 (a constant fit of ReLU).",
            source=f"{SOURCE}, Observation 0",
            scale=_scale(c),
            **_stuck_at(DEAD, b1s, dead_idx, b1_label, c),
        ),
        _converges(
            "b2-minus-1.1-converges",
            "With b1 = 0, b2 = −1.1 the loss goes to zero.",
            b2s,
            {"b2": -1.1},
            b2_region,
            (-1.1, -1.2),
            c,
            f"{SOURCE}, Observation 1",
        ),
        judged(
            "b2-minus-1.2-sticks",
            "With b1 = 0, b2 = −1.2 the loss gets stuck around 0.02 and the neuron "
            "ends hyperactive.",
            source=f"{SOURCE}, Observation 1",
            scale=_scale(c),
            **_stuck_at(
                HYPERACTIVE, b2s, [stuck_b2] if stuck_b2 is not None else [], lambda _: "b2=-1.2", c
            ),
        ),
        inside(
            "b2-boundary-between-seed-points",
            "The b2 below which the loss stops going to zero lies between −1.2 and −1.1.",
            quantity="transition region of the fine b2 sweep (b1 = 0)",
            measured=b2_region,
            low=-1.2,
            high=-1.1,
            source=f"{SOURCE}, Observation 1 (−1.1 converges, −1.2 gets stuck)",
            note="interval: the grid points from the first to the last change of outcome",
            detail=_margins(-1.1, -1.2, b2_region),
            scale=fine,
        ),
        judged(
            "kink-drifts-left",
            "The kink x_t = −b1/w1 starts at 0 and moves left during training; for b2 = −1.2 "
            "it passes −1 (balanced → hyperactive), for b2 = −1.1 it does not.",
            source=f"{SOURCE}, Observation 1",
            scale=_scale(c),
            **_kink_drift(b2s),
        ),
        judged(
            "teacher-bias-pushes-hyperactive",
            "Raising the bias of the target function also moves the neuron from balanced to "
            "hyperactive.",
            source=f"{SOURCE}, Observation 1 ('Conversely, if we increase the bias of the "
            "target function…')",
            note="teacher ReLU(x) + c, student b1 = b2 = 0; the values of c [I]",
            scale=_scale(c),
            **_teacher_bias(results["teacher-bias"], c),
        ),
        judged(
            "stuck-solution-is-least-squares-line",
            "The local minimum for b2 = −1.2 is the linear regression solution: the student's "
            "line equals the least-squares line through ReLU.",
            source=f"{SOURCE}, Observation 1 (figure 'large_b2_init')",
            note="tolerance [I]",
            scale=_scale(c),
            **_least_squares_line(b2s, stuck_b2, c),
        ),
        _converges(
            "lr-0.2-converges",
            "With b1 = 0, b2 = −1, learning rate 0.2 optimises the loss to zero.",
            lrs,
            {"lr": 0.2},
            lr_region,
            (0.2, 0.4),
            c,
            f"{SOURCE}, Observation 2",
        ),
        judged(
            "lr-0.4-kills",
            "With b1 = 0, b2 = −1, learning rate 0.4 kills the neuron: the loss only "
            "reaches 0.1 (constant fit).",
            source=f"{SOURCE}, Observation 2",
            scale=_scale(c),
            **_stuck_at(DEAD, lrs, [dies] if dies is not None else [], lambda _: "lr=0.4", c),
        ),
        inside(
            "lr-boundary-between-seed-points",
            "The learning rate above which the neuron dies lies between 0.2 and 0.4.",
            quantity="transition region of the fine lr sweep (b1 = 0, b2 = −1)",
            measured=lr_region,
            low=0.2,
            high=0.4,
            source=f"{SOURCE}, Observation 2 (0.2 converges, 0.4 kills)",
            note="interval: the grid points from the first to the last change of outcome",
            detail=_margins(0.2, 0.4, lr_region),
            scale=fine,
        ),
        judged(
            "lr-0.4-falls-fast-then-dies",
            "At lr 0.4 the loss first decreases quickly, then the neuron dies.",
            source=f"{SOURCE}, Observation 2 ('the loss may decrease quickly, but at the cost "
            "of killing some neurons')",
            scale=_scale(c, f"first {c.early_steps} steps recorded at every step"),
            **_falls_then_dies(results["lr-early"], lrs, c),
        ),
        below(
            "leaving-balanced-is-irreversible",
            "Once a neuron leaves the balanced state (dead or hyperactive), it does not return.",
            quantity="fraction of runs that are balanced again after leaving the balanced state "
            "(standard ReLU runs of every sweep and map, recorded states)",
            measured=returned,
            bound=c.recovery_bound,
            source=f"{SOURCE}, Takeaway ('Irreversibility') and Observation 2 ('Once dead…')",
            note="'very hard to return' read as fewer than 5 % [I]; Wilson interval",
            detail=returned_detail,
            scale=_scale(c, f"maps recorded every {c.grid_record_every} steps"),
        ),
        judged(
            "relu-stuck-at-b2-minus-2",
            f"ReLU at b2 = {c.silu_b2:g} (b1 = 0) does not "
            "recover: it stays on the hyperactive plateau.",
            source=f"{SOURCE}, Observation 3",
            note=f"the ReLU run beside SiLU at b2 = {c.silu_b2:g} [I]",
            scale=_scale(c),
            **_stuck_at(HYPERACTIVE, silu, [relu_i], lambda _: "ReLU", c),
        ),
        below(
            "silu-recovers",
            f"SiLU at b2 = {c.silu_b2:g} eventually reaches zero loss (up to machine precision).",
            quantity=f"loss level (median over the last 10 % of {c.silu_steps} steps)",
            measured=plateau_level(silu_loss),
            bound=c.converge_tol,
            source=f"{SOURCE}, Observation 3",
            note=f"teacher: {c.silu_teacher} [I]",
            detail=f"first below {c.converge_tol:g} at step {_fmt(reach)}; final loss "
            f"{_fmt(silu_loss[-1])}",
            scale=_scale(c, f"{c.silu_steps} steps"),
        ),
        above(
            "silu-long-saddle",
            "SiLU gets stuck at a saddle point for a very long time before it converges.",
            quantity="longest plateau (loss changing < 5 % per 500 steps, above the "
            "convergence threshold)",
            measured=float(saddle),
            bound=0.1 * c.silu_steps,
            or_equal=True,
            unit="steps",
            source=f"{SOURCE}, Observation 3",
            note=f"10 % of the {c.silu_steps}-step run; threshold [I]",
            detail=f"longest plateau {saddle} steps; "
            f"reaches {c.converge_tol:g} at step {_fmt(reach)}",
            scale=_scale(c, f"{c.silu_steps} steps"),
        ),
        below(
            "plateaus-are-exact-fits",
            "The stuck losses are exactly those of fitting ReLU by "
            "linear regression (hyperactive) and by a constant (dead).",
            quantity="largest relative deviation of a stuck run's loss level (median of the last "
            f"10 %) from the exact least-squares loss on the same {c.n_points} inputs",
            measured=float(max(deviations)) if deviations else float("nan"),
            bound=1e-3,
            source=f"{SOURCE}, Observations 0–2",
            note=f"exact losses {_fmt(exact[STATE_CODES['hyperactive']])} (linear) and "
            f"{_fmt(exact[STATE_CODES['dead']])} (constant); 1/48 and 5/48 in the continuum [D]",
            detail=f"{len(deviations)} stuck runs compared",
            scale=_scale(c),
        ),
        above(
            "reparam-converges-from-lower-b2",
            "With the reparameterisation w·(x + b'), where b' sets the kink directly, the "
            "neuron converges from output biases b2 where the standard neuron gets stuck.",
            quantity="gap between the standard neuron's b2 transition region and the "
            "reparameterised one's (standard low end − reparameterised high end)",
            measured=b2_reparam_gap(b2_region, b2_reparam),
            bound=0.0,
            source=f"{SOURCE}, Questions/Ideas, Question 1 (analytic bias; w(x + b'))",
            note="beyond the seed: the seed asks, it does not answer",
            detail=f"b2 regions: standard [{_fmt(b2_region.low)}, {_fmt(b2_region.high)}], "
            f"reparam [{_fmt(b2_reparam.low)}, {_fmt(b2_reparam.high)}]; lr regions: standard "
            f"[{_fmt(lr_region.low)}, {_fmt(lr_region.high)}], reparam "
            f"[{_fmt(lr_reparam.low)}, {_fmt(lr_reparam.high)}]",
            scale=fine,
        ),
    ]


def b2_reparam_gap(standard: Estimate, reparam: Estimate) -> float:
    """How far below the standard neuron's b2 transition region the reparameterised one's
    ends (positive: the reparameterised neuron converges from every b2 the standard one does
    and from lower ones)."""
    return float(standard.low - reparam.high)


def metrics(results: Results, config: SingleNeuronConfig) -> dict[str, float]:
    """Exact plateaus, located boundaries, outcome fractions of the maps, SiLU timing."""
    x = results["b1-sweep"].arrays["x"]
    values = {
        "plateau_hyperactive_exact": HYPERACTIVE_PLATEAU,
        "plateau_dead_exact": DEAD_PLATEAU,
        "plateau_hyperactive_sample": sample_linear_fit_loss(x, np.maximum(x, 0)),
        "plateau_dead_sample": sample_constant_fit_loss(x, np.maximum(x, 0)),
    }
    for unit, key, descending in (("b2-boundary", "b2", True), ("lr-boundary", "lr", False)):
        result = results[unit]
        converged = outcomes(result, config.converge_tol) == OUTCOMES["converged"]
        for parameterisation in ("standard", "reparam"):
            idx = where(result.conditions, parameterisation=parameterisation)
            swept = np.array([result.conditions[i][key] for i in idx])
            order = np.argsort(-swept if descending else swept)
            boundary, flips = locate_boundary(swept[order], converged[idx][order])
            region = bracket(result, key, descending, parameterisation, config.converge_tol)
            values[f"{key}_boundary_{parameterisation}"] = boundary
            values[f"{key}_boundary_region_low_{parameterisation}"] = region.low
            values[f"{key}_boundary_region_high_{parameterisation}"] = region.high
            values[f"{key}_boundary_transitions_{parameterisation}"] = float(flips)
            values[f"{key}_fine_sweep_converged_fraction_{parameterisation}"] = float(
                converged[idx].mean()
            )
    for unit in ("map-b1-b2", "map-b2-lr"):
        result = results[unit]
        outcome = outcomes(result, config.converge_tol)
        for parameterisation in ("standard", "reparam"):
            idx = where(result.conditions, parameterisation=parameterisation)
            for name, code in OUTCOMES.items():
                values[f"{unit}_{parameterisation}_{name}_fraction"] = float(
                    np.mean(outcome[idx] == code)
                )
    silu = results["silu-vs-relu"]
    silu_i = first_match(silu.conditions, activation="silu")
    values["silu_steps_to_converge"] = first_below(
        silu.steps, silu.curves["loss"][silu_i], config.converge_tol
    )
    values["silu_final_loss"] = float(silu.final["loss"][silu_i])
    values["diverged_networks"] = float(sum(int(r.diverged.sum()) for r in results.values()))
    return values


def analyse(results: Results, config: SingleNeuronConfig) -> Analysis:
    return Analysis(claims(results, config), metrics(results, config))
