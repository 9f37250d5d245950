"""The single-neuron scorecard: each observation of seed 001 as a claim, plus the metrics.

Readings of the stored runs used here and by the figures: :func:`outcomes` (converged, or the
neuron's final state) and :func:`kinks` (the kink :math:`x_t = -b_1/w_1` over training).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relulab.analysis import (
    first_below,
    first_match,
    locate_boundary,
    longest_plateau,
    plateau_level,
    where,
)
from relulab.engine import STATE_CODES
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import Claim, above, below, judged
from relulab.experiments.single_neuron.config import (
    DEAD_PLATEAU,
    HYPERACTIVE_PLATEAU,
    OUTCOMES,
    SingleNeuronConfig,
)
from relulab.store import UnitResult
from relulab.theory import sample_constant_fit_loss, sample_linear_fit_loss

__all__ = ["analyse", "kinks", "outcomes"]

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


def outcomes(result: UnitResult, converge_tol: float) -> np.ndarray:
    """Per network: converged (final loss < tol), else its final state (dead/balanced/hyper)."""
    state = result.final["state"].astype(int)
    return np.where(result.final["loss"] < converge_tol, OUTCOMES["converged"], state)


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


def _final_loss(result: UnitResult, index: int | None) -> float:
    return float(result.final["loss"][index]) if index is not None else float("nan")


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


def claims(results: Results, config: SingleNeuronConfig) -> list[Claim]:
    """Seed 001's Observations 0–3 and the exact plateaus, as claims."""
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
    return [
        judged(
            "b1-hyperactive-plateau",
            "With b2 = 0 and b1 > 1 the neuron starts hyperactive "
            "and the loss gets stuck around 0.02 (linear regression of ReLU).",
            source=f"{SOURCE}, Observation 0",
            **_stuck_at(HYPERACTIVE, b1s, hyper_idx, b1_label, c),
        ),
        judged(
            "b1-dead-plateau",
            "With b2 = 0 and b1 < −1 the neuron starts dead and the loss "
            "gets stuck around 0.1 (a constant fit of ReLU).",
            source=f"{SOURCE}, Observation 0",
            **_stuck_at(DEAD, b1s, dead_idx, b1_label, c),
        ),
        below(
            "b2-minus-1.1-converges",
            "With b1 = 0, b2 = −1.1 the loss goes to zero.",
            quantity="final loss",
            measured=_final_loss(b2s, first_match(b2s.conditions, b2=-1.1)),
            bound=c.converge_tol,
            source=f"{SOURCE}, Observation 1",
            note="i.e. the loss goes to zero; threshold [I]",
        ),
        judged(
            "b2-minus-1.2-sticks",
            "With b1 = 0, b2 = −1.2 the loss gets stuck around 0.02 and the neuron "
            "ends hyperactive.",
            source=f"{SOURCE}, Observation 1",
            **_stuck_at(
                HYPERACTIVE, b2s, [stuck_b2] if stuck_b2 is not None else [], lambda _: "b2=-1.2", c
            ),
        ),
        judged(
            "kink-drifts-left",
            "The kink x_t = −b1/w1 starts at 0 and moves left during training; for b2 = −1.2 "
            "it passes −1 (balanced → hyperactive), for b2 = −1.1 it does not.",
            source=f"{SOURCE}, Observation 1",
            **_kink_drift(b2s),
        ),
        below(
            "lr-0.2-converges",
            "With b1 = 0, b2 = −1, learning rate 0.2 optimises the loss to zero.",
            quantity="final loss",
            measured=_final_loss(lrs, first_match(lrs.conditions, lr=0.2)),
            bound=c.converge_tol,
            source=f"{SOURCE}, Observation 2",
            note="i.e. the loss goes to zero; threshold [I]",
        ),
        judged(
            "lr-0.4-kills",
            "With b1 = 0, b2 = −1, learning rate 0.4 kills the neuron: the loss only "
            "reaches 0.1 (constant fit).",
            source=f"{SOURCE}, Observation 2",
            **_stuck_at(DEAD, lrs, [dies] if dies is not None else [], lambda _: "lr=0.4", c),
        ),
        judged(
            "relu-stuck-at-b2-minus-2",
            f"ReLU at b2 = {c.silu_b2:g} (b1 = 0) does not "
            "recover: it stays on the hyperactive plateau.",
            source=f"{SOURCE}, Observation 3",
            note=f"the ReLU run beside SiLU at b2 = {c.silu_b2:g} [I]",
            **_stuck_at(HYPERACTIVE, silu, [relu_i], lambda _: "ReLU", c),
        ),
        below(
            "silu-recovers",
            f"SiLU at b2 = {c.silu_b2:g} eventually reaches zero loss (up to machine precision).",
            quantity=f"final loss after {c.silu_steps} steps",
            measured=float(silu.final["loss"][silu_i]),
            bound=c.converge_tol,
            source=f"{SOURCE}, Observation 3",
            note=f"teacher: {c.silu_teacher} [I]",
            detail=f"first below {c.converge_tol:g} at step {_fmt(reach)}",
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
        ),
    ]


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
            values[f"{key}_boundary_{parameterisation}"] = boundary
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
