"""Training dynamics of a single ReLU neuron (seed ``001_…``, Liu 2026; SETUPS.md §1).

Student :math:`f(x) = w_2\\,\\sigma(w_1 x + b_1) + b_2` fits the teacher ``ReLU(x)`` on
``x ∈ [-1, 1]`` with MSE and Adam, starting from ``w1 = w2 = 1`` and chosen biases. Every
condition of every sweep is one network of a batched computation (``relulab.engine``).

Reproduced: the b1 sweep at b2 = 0, the b2 sweep at b1 = 0, the learning-rate sweep at
(b1, b2) = (0, −1), SiLU vs ReLU at b2 = −2, the plateaus against the exact 1/48 and 5/48, the
kink ``x_t = −b1/w1`` and the neuron state over time. Beyond the seed: fine 1-D sweeps that
locate the b2 and learning-rate boundaries, phase maps over (b1, b2) and (b2, lr), and the
reparameterised neuron ``w·(x + b')`` (the seed's open question) on the same grids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from relulab.config import ConfigError
from relulab.engine import STATE_CODES, BatchedAdam, BatchedSingleNeuron, train
from relulab.experiments.base import Analysis, Claim, Experiment, Figure, Results, Unit
from relulab.experiments.context import RunContext
from relulab.report.plotting import plt, save_figure
from relulab.store import UnitResult
from relulab.tasks import scalar_inputs, scalar_teacher
from relulab.theory import (
    best_constant_fit_loss,
    best_linear_fit_loss,
    sample_constant_fit_loss,
    sample_linear_fit_loss,
)

HYPERACTIVE_PLATEAU = best_linear_fit_loss(-1.0, 1.0)  # = 1/48
DEAD_PLATEAU = best_constant_fit_loss(-1.0, 1.0)  # = 5/48
OUTCOMES = {"dead": 0, "balanced": 1, "hyperactive": 2, "converged": 3}
SEED = "001 (Liu, Training dynamics of a single ReLU neuron)"


@dataclass(frozen=True)
class SingleNeuronConfig:
    """Settings; [S] stated by the seed, [I] inferred (SETUPS.md §1) and configurable."""

    seed: int = 0
    dtype: Literal["float32", "float64"] = "float32"  # [I] float32
    n_points: int = 100  # [I] any dense grid of 100…1000 points reproduces the thresholds
    sampling: Literal["grid", "uniform"] = "grid"  # [I] linspace(-1, 1, N)
    lr: float = 0.01  # [S] Adam, default lr 0.01
    betas: tuple[float, float] = (0.9, 0.999)  # [I] Adam defaults
    eps: float = 1e-8  # [I] Adam default
    steps: int = 5000  # [S/I]
    silu_steps: int = 20000  # [S/I]
    record_every: int = 10
    b1_sweep: tuple[float, ...] = (
        -2.0,
        -1.5,
        -1.2,
        -1.0,
        -0.8,
        -0.5,
        0.0,
        0.5,
        0.8,
        1.0,
        1.2,
        1.5,
        2.0,
    )
    b2_sweep: tuple[float, ...] = (0.0, -0.5, -1.0, -1.1, -1.2, -1.5, -2.0)
    lr_sweep: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
    lr_sweep_b2: float = -1.0  # [S]
    silu_b2: float = -2.0  # [I] SETUPS: compare ReLU vs SiLU at b2 = -2
    silu_teacher: Literal["silu", "relu"] = "silu"  # [I] a SiLU student cannot fit ReLU exactly
    boundary_points: int = 61
    b2_boundary_range: tuple[float, float] = (-2.0, -0.5)
    lr_boundary_range: tuple[float, float] = (0.05, 1.0)  # log-spaced
    grid_size: int = 21
    grid_b1_range: tuple[float, float] = (-2.5, 2.5)
    grid_b2_range: tuple[float, float] = (-2.5, 1.0)
    grid_lr_range: tuple[float, float] = (0.001, 1.0)  # log-spaced
    grid_record_every: int = 250
    converge_tol: float = 1e-4  # [I] "the loss goes to zero": final MSE below this
    plateau_rtol: float = 0.05  # [I] "stuck around" a plateau: within 5 % of the exact value

    def validate(self) -> None:
        positive_ints = (
            "n_points",
            "steps",
            "silu_steps",
            "record_every",
            "boundary_points",
            "grid_size",
            "grid_record_every",
        )
        for name in positive_ints:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_points < 2 or self.boundary_points < 2 or self.grid_size < 2:
            raise ConfigError("n_points, boundary_points and grid_size must be at least 2")
        positive_floats = ("lr", "eps", "converge_tol", "plateau_rtol")
        for name in positive_floats:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if (
            any(lr <= 0 for lr in self.lr_sweep)
            or min(self.lr_boundary_range + self.grid_lr_range) <= 0
        ):
            raise ConfigError("learning rates must be positive")
        if not all(0 <= b < 1 for b in self.betas):
            raise ConfigError(f"betas must lie in [0, 1), got {self.betas}")
        for name in (
            "b2_boundary_range",
            "lr_boundary_range",
            "grid_b1_range",
            "grid_b2_range",
            "grid_lr_range",
        ):
            low, high = getattr(self, name)
            if not low < high:
                raise ConfigError(f"{name} must be (low, high) with low < high, got {(low, high)}")


PRESETS = {
    "quick": SingleNeuronConfig(),
    "paper": SingleNeuronConfig(
        n_points=1000, boundary_points=201, grid_size=61, record_every=5, grid_record_every=100
    ),
}


# ---------------------------------------------------------------------------------------------
# Running: each unit is one (or one per activation/parameterisation) batched computation.
# ---------------------------------------------------------------------------------------------
def _condition(config: SingleNeuronConfig, **overrides: Any) -> dict[str, Any]:
    base = {
        "w1": 1.0,
        "b1": 0.0,
        "w2": 1.0,
        "b2": 0.0,
        "lr": config.lr,
        "activation": "relu",
        "teacher": "relu",
        "parameterisation": "standard",
    }
    return {**base, **overrides}


def _train_conditions(
    conditions: list[dict[str, Any]],
    steps: int,
    record_every: int,
    config: SingleNeuronConfig,
    context: RunContext,
    description: str,
) -> UnitResult:
    """Train every condition; one batched problem per (activation, teacher, parameterisation)."""
    x = scalar_inputs(
        config.n_points,
        config.sampling,
        -1.0,
        1.0,
        context.generator("inputs"),
        context.dtype,
        context.device,
    )
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, c in enumerate(conditions):
        groups.setdefault((c["activation"], c["teacher"], c["parameterisation"]), []).append(i)
    parts = []
    with context.progress(steps * len(groups), description) as advance:
        for (activation, teacher, parameterisation), indices in groups.items():
            chosen = [conditions[i] for i in indices]
            problem = BatchedSingleNeuron(
                x,
                scalar_teacher(x, teacher),
                *([c[k] for c in chosen] for k in ("w1", "b1", "w2", "b2")),
                activation=activation,
                parameterisation=parameterisation,
            )
            optimiser = BatchedAdam(
                problem.params, [c["lr"] for c in chosen], config.betas, config.eps
            )
            parts.append((indices, train(problem, optimiser, steps, record_every, advance)))
    return _merge(conditions, parts, {"x": x.cpu().numpy().astype(np.float64)})


def _merge(
    conditions: list[dict[str, Any]],
    parts: list[tuple[list[int], Any]],
    arrays: dict[str, np.ndarray],
) -> UnitResult:
    """Put the per-group training results back in the order of ``conditions``."""
    n_total = len(conditions)
    curves: dict[str, np.ndarray] = {}
    final: dict[str, np.ndarray] = {}
    diverged = np.zeros(n_total, dtype=bool)
    diverged_step = np.full(n_total, -1, dtype=np.int64)
    for indices, result in parts:
        for name, curve in result.curves.items():
            curves.setdefault(name, np.full((n_total, curve.shape[1]), np.nan))[indices] = curve
            final.setdefault(name, np.full(n_total, np.nan))[indices] = result.final[name]
        diverged[indices] = result.diverged
        diverged_step[indices] = result.diverged_step
    return UnitResult(conditions, parts[0][1].steps, curves, final, diverged, diverged_step, arrays)


def _unit(
    name: str,
    description: str,
    make_conditions: Callable[[], list[dict[str, Any]]],
    steps: int,
    record_every: int,
    config: SingleNeuronConfig,
) -> Unit:
    return Unit(
        name,
        lambda context: _train_conditions(
            make_conditions(), steps, record_every, config, context, description
        ),
    )


def _both_parameterisations(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**c, "parameterisation": p} for p in ("standard", "reparam") for c in conditions]


def _log_grid(bounds: tuple[float, float], n: int) -> np.ndarray:
    return np.geomspace(bounds[0], bounds[1], n)


def _lin_grid(bounds: tuple[float, float], n: int) -> np.ndarray:
    return np.linspace(bounds[0], bounds[1], n)


def plan(config: SingleNeuronConfig) -> list[Unit]:
    c = config
    sweeps = [
        ("b1-sweep", "b1 sweep (b2 = 0)", lambda: [_condition(c, b1=v) for v in c.b1_sweep]),
        ("b2-sweep", "b2 sweep (b1 = 0)", lambda: [_condition(c, b2=v) for v in c.b2_sweep]),
        (
            "lr-sweep",
            "lr sweep (b2 = -1)",
            lambda: [_condition(c, b2=c.lr_sweep_b2, lr=v) for v in c.lr_sweep],
        ),
        (
            "b2-boundary",
            "b2 boundary",
            lambda: _both_parameterisations(
                [
                    _condition(c, b2=float(v))
                    for v in _lin_grid(c.b2_boundary_range, c.boundary_points)
                ]
            ),
        ),
        (
            "lr-boundary",
            "lr boundary",
            lambda: _both_parameterisations(
                [
                    _condition(c, b2=c.lr_sweep_b2, lr=float(v))
                    for v in _log_grid(c.lr_boundary_range, c.boundary_points)
                ]
            ),
        ),
    ]
    units = [_unit(name, text, make, c.steps, c.record_every, c) for name, text, make in sweeps]
    units.append(
        _unit(
            "silu-vs-relu",
            "SiLU vs ReLU",
            lambda: [
                _condition(c, b2=c.silu_b2),
                _condition(c, b2=c.silu_b2, activation="silu", teacher=c.silu_teacher),
            ],
            c.silu_steps,
            c.record_every,
            c,
        )
    )
    b1_axis, b2_axis = (
        _lin_grid(c.grid_b1_range, c.grid_size),
        _lin_grid(c.grid_b2_range, c.grid_size),
    )
    lr_axis = _log_grid(c.grid_lr_range, c.grid_size)
    units.append(
        _unit(
            "map-b1-b2",
            "phase map (b1, b2)",
            lambda: _both_parameterisations(
                [_condition(c, b1=float(b1), b2=float(b2)) for b2 in b2_axis for b1 in b1_axis]
            ),
            c.steps,
            c.grid_record_every,
            c,
        )
    )
    units.append(
        _unit(
            "map-b2-lr",
            "phase map (b2, lr)",
            lambda: _both_parameterisations(
                [_condition(c, b2=float(b2), lr=float(lr)) for lr in lr_axis for b2 in b2_axis]
            ),
            c.steps,
            c.grid_record_every,
            c,
        )
    )
    return units


# ---------------------------------------------------------------------------------------------
# Analysis: outcomes, boundaries and the claims scorecard.
# ---------------------------------------------------------------------------------------------
def outcomes(result: UnitResult, converge_tol: float) -> np.ndarray:
    """Per network: converged (final loss < tol), else its final state (dead/balanced/hyper)."""
    state = result.final["state"].astype(int)
    return np.where(result.final["loss"] < converge_tol, OUTCOMES["converged"], state)


def _where(result: UnitResult, **match: Any) -> np.ndarray:
    """Indices of the networks whose condition matches every given value."""

    def matches(condition: dict[str, Any]) -> bool:
        return all(
            np.isclose(condition[k], v) if isinstance(v, float) else condition[k] == v
            for k, v in match.items()
        )

    return np.array([i for i, c in enumerate(result.conditions) if matches(c)], dtype=int)


def _one(result: UnitResult, **match: Any) -> int | None:
    found = _where(result, **match)
    return int(found[0]) if len(found) else None


def locate_boundary(values: np.ndarray, converged: np.ndarray) -> tuple[float, int]:
    """First value (in the given order) where training stops converging, and the transition count.

    Returns the midpoint between the last converging and the first non-converging value (NaN if
    the outcome never changes) and how many times the outcome flips along the sweep.
    """
    flips = np.flatnonzero(converged[1:] != converged[:-1])
    if len(flips) == 0:
        return float("nan"), 0
    first = flips[0]
    return float(0.5 * (values[first] + values[first + 1])), int(len(flips))


def _longest_plateau(
    steps: np.ndarray, loss: np.ndarray, floor: float, window_steps: int = 500, rtol: float = 0.05
) -> int:
    """Longest stretch (steps) with loss above ``floor`` changing < ``rtol`` per window."""
    spacing = int(steps[1] - steps[0])
    lag = max(1, window_steps // spacing)
    log_loss = np.log(np.maximum(loss, 1e-30))
    flat = (np.abs(log_loss[lag:] - log_loss[:-lag]) < np.log1p(rtol)) & (loss[:-lag] > floor)
    best = run = 0
    for is_flat in flat:
        run = run + 1 if is_flat else 0
        best = max(best, run)
    return best * spacing + (window_steps if best else 0)


def _first_below(steps: np.ndarray, loss: np.ndarray, threshold: float) -> float:
    below = np.flatnonzero(loss < threshold)
    return float(steps[below[0]]) if len(below) else float("nan")


def plateau_level(result: UnitResult, i: int, tail: float = 0.1) -> float:
    """The loss level a run is stuck at: the median over the last ``tail`` of its record.

    A single final step is not a plateau: at large learning rates Adam makes occasional spikes
    on a plateau (its second-moment estimate decays while gradients vanish), and the last
    recorded step can land on one.
    """
    loss = result.curves["loss"][i]
    n_tail = max(1, int(round(tail * len(loss))))
    return float(np.median(loss[-n_tail:]))


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _stuck_claim(
    claim_id: str,
    statement: str,
    result: UnitResult,
    indices: Sequence[int],
    label: str,
    plateau: float,
    state: str,
    plateau_text: str,
    config: SingleNeuronConfig,
) -> Claim:
    """The final loss of every chosen network is at ``plateau`` (rtol) in the given state."""
    losses = np.array([plateau_level(result, i) for i in indices])
    states = result.final["state"][list(indices)].astype(int)
    rel = np.abs(losses / plateau - 1)
    ok = (
        bool(len(indices))
        and bool(np.all(rel < config.plateau_rtol))
        and bool(np.all(states == STATE_CODES[state]))
    )
    detail = "; ".join(
        f"{label(i)}: loss {_fmt(plateau_level(result, i))}, "
        f"{_state_name(int(result.final['state'][i]))}"
        for i in indices
    )
    return Claim(
        claim_id,
        statement,
        f"loss level over the last 10 % of training ≈ {plateau_text} = {plateau:.4f} "
        f"(within {config.plateau_rtol:.0%}), "
        f"neuron {state} (seed {SEED})",
        float(np.max(losses)) if len(losses) else float("nan"),
        ok,
        detail,
    )


def _state_name(code: int) -> str:
    return {v: k for k, v in STATE_CODES.items()}[code]


def _converges_claim(
    claim_id: str, statement: str, result: UnitResult, index: int | None, config: SingleNeuronConfig
) -> Claim:
    loss = float(result.final["loss"][index]) if index is not None else float("nan")
    return Claim(
        claim_id,
        statement,
        f"final loss < {config.converge_tol:g}, i.e. the loss goes to zero (seed {SEED})",
        loss,
        bool(loss < config.converge_tol),
    )


def _kink(result: UnitResult) -> np.ndarray:
    """Kink trajectories ``(S, T)``: −b1/w1 (standard) or −b' (reparam)."""
    reparam = np.array([c["parameterisation"] == "reparam" for c in result.conditions])[:, None]
    return np.where(reparam, -result.curves["b1"], -result.curves["b1"] / result.curves["w1"])


def _claims(results: Results, config: SingleNeuronConfig) -> list[Claim]:
    c = config
    b1s, b2s, lrs, silu = (results[k] for k in ("b1-sweep", "b2-sweep", "lr-sweep", "silu-vs-relu"))
    hyper_idx = [i for i, cond in enumerate(b1s.conditions) if cond["b1"] > 1]
    dead_idx = [i for i, cond in enumerate(b1s.conditions) if cond["b1"] < -1]
    claims = [
        _stuck_claim(
            "b1-hyperactive-plateau",
            "With b2 = 0 and b1 > 1 the neuron starts hyperactive "
            "and the loss gets stuck around 0.02 (linear regression of ReLU).",
            b1s,
            hyper_idx,
            lambda i: f"b1={b1s.conditions[i]['b1']:g}",
            HYPERACTIVE_PLATEAU,
            "hyperactive",
            "1/48",
            c,
        ),
        _stuck_claim(
            "b1-dead-plateau",
            "With b2 = 0 and b1 < −1 the neuron starts dead and the loss "
            "gets stuck around 0.1 (a constant fit of ReLU).",
            b1s,
            dead_idx,
            lambda i: f"b1={b1s.conditions[i]['b1']:g}",
            DEAD_PLATEAU,
            "dead",
            "5/48",
            c,
        ),
        _converges_claim(
            "b2-minus-1.1-converges",
            "With b1 = 0, b2 = −1.1 the loss goes to zero.",
            b2s,
            _one(b2s, b2=-1.1),
            c,
        ),
    ]
    stuck = _one(b2s, b2=-1.2)
    claims.append(
        _stuck_claim(
            "b2-minus-1.2-sticks",
            "With b1 = 0, b2 = −1.2 the loss gets stuck around 0.02 and the neuron "
            "ends hyperactive.",
            b2s,
            [stuck] if stuck is not None else [],
            lambda i: "b2=-1.2",
            HYPERACTIVE_PLATEAU,
            "hyperactive",
            "1/48",
            c,
        )
    )
    claims.append(_kink_claim(b2s))
    claims.append(
        _converges_claim(
            "lr-0.2-converges",
            "With b1 = 0, b2 = −1, learning rate 0.2 optimises the loss to zero.",
            lrs,
            _one(lrs, lr=0.2),
            c,
        )
    )
    dies = _one(lrs, lr=0.4)
    claims.append(
        _stuck_claim(
            "lr-0.4-kills",
            "With b1 = 0, b2 = −1, learning rate 0.4 kills the neuron: the loss only "
            "reaches 0.1 (constant fit).",
            lrs,
            [dies] if dies is not None else [],
            lambda i: "lr=0.4",
            DEAD_PLATEAU,
            "dead",
            "5/48",
            c,
        )
    )
    claims.extend(_silu_claims(silu, c))
    claims.append(_exact_plateau_claim(results, c))
    return claims


_KINK_STATEMENT = (
    "The kink x_t = −b1/w1 starts at 0 and moves left during training; for b2 = −1.2 "
    "it passes −1 (balanced → hyperactive), for b2 = −1.1 it does not."
)
_KINK_EXPECTED = f"lowest kink < −1 for b2 = −1.2 and > −1 for b2 = −1.1 (seed {SEED}, Obs. 1)"


def _kink_claim(b2s: UnitResult) -> Claim:
    stuck, fine = _one(b2s, b2=-1.2), _one(b2s, b2=-1.1)
    if stuck is None or fine is None:
        return Claim(
            "kink-drifts-left",
            _KINK_STATEMENT,
            _KINK_EXPECTED,
            float("nan"),
            False,
            "not measured: b2_sweep must contain -1.1 and -1.2",
        )
    kinks = _kink(b2s)
    start, lowest, lowest_fine = kinks[stuck, 0], kinks[stuck].min(), kinks[fine].min()
    crossed = np.flatnonzero(kinks[stuck] < -1)
    ok = bool(abs(start) < 1e-6 and lowest < -1 and lowest_fine > -1)
    detail = (
        f"b2=-1.2: kink starts at {_fmt(start)}, reaches {_fmt(lowest)}"
        + (f", passes −1 at step {int(b2s.steps[crossed[0]])}" if len(crossed) else "")
        + f"; b2=-1.1: lowest kink {_fmt(lowest_fine)}"
    )
    return Claim("kink-drifts-left", _KINK_STATEMENT, _KINK_EXPECTED, float(lowest), ok, detail)


def _silu_claims(silu: UnitResult, config: SingleNeuronConfig) -> list[Claim]:
    relu_i = _one(silu, activation="relu")
    silu_i = _one(silu, activation="silu")
    loss = silu.curves["loss"]
    plateau = _longest_plateau(silu.steps, loss[silu_i], config.converge_tol)
    reach = _first_below(silu.steps, loss[silu_i], config.converge_tol)
    final_silu = float(silu.final["loss"][silu_i])
    return [
        _stuck_claim(
            "relu-stuck-at-b2-minus-2",
            f"ReLU at b2 = {config.silu_b2:g} (b1 = 0) does not "
            "recover: it stays on the hyperactive plateau.",
            silu,
            [relu_i],
            lambda i: "ReLU",
            HYPERACTIVE_PLATEAU,
            "hyperactive",
            "1/48",
            config,
        ),
        Claim(
            "silu-recovers",
            f"SiLU at b2 = {config.silu_b2:g} eventually reaches zero loss "
            "(up to machine precision).",
            f"final loss < {config.converge_tol:g} after {config.silu_steps} steps (seed {SEED}, "
            f"Obs. 3; teacher: {config.silu_teacher} [I])",
            final_silu,
            bool(final_silu < config.converge_tol),
            f"first below {config.converge_tol:g} at step {_fmt(reach)}",
        ),
        Claim(
            "silu-long-saddle",
            "SiLU gets stuck at a saddle point for a very long time before it converges.",
            "a plateau (loss changing < 5 % per 500 steps, above the convergence "
            f"threshold) lasting ≥ 10 % of the {config.silu_steps}-step run (seed {SEED}, Obs. 3; "
            "threshold [I])",
            float(plateau),
            bool(plateau >= 0.1 * config.silu_steps),
            f"longest plateau {plateau} steps; "
            f"reaches {config.converge_tol:g} at step {_fmt(reach)}",
        ),
    ]


def _exact_plateau_claim(results: Results, config: SingleNeuronConfig) -> Claim:
    """Stuck losses equal the exact least-squares constant / linear fits on the same inputs."""
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
            level = plateau_level(result, i)
            if state in exact and level >= config.converge_tol:
                deviations.append(abs(level / exact[state] - 1))
    worst = float(max(deviations)) if deviations else float("nan")
    return Claim(
        "plateaus-are-exact-fits",
        "The stuck losses are exactly those of fitting ReLU by "
        "linear regression (hyperactive) and by a constant (dead).",
        f"every stuck run's loss level (median of the last 10 %) within 0.1 % of the exact "
        f"least-squares loss on the same "
        f"{config.n_points} inputs ({_fmt(exact[2])}, {_fmt(exact[0])}; 1/48 and 5/48 in the "
        f"continuum) (seed {SEED}, Obs. 0–2)",
        worst,
        bool(deviations) and worst < 1e-3,
        f"{len(deviations)} stuck runs compared",
    )


def _metrics(results: Results, config: SingleNeuronConfig) -> dict[str, float]:
    x = results["b1-sweep"].arrays["x"]
    metrics = {
        "plateau_hyperactive_exact": HYPERACTIVE_PLATEAU,
        "plateau_dead_exact": DEAD_PLATEAU,
        "plateau_hyperactive_sample": sample_linear_fit_loss(x, np.maximum(x, 0)),
        "plateau_dead_sample": sample_constant_fit_loss(x, np.maximum(x, 0)),
    }
    for unit, key, descending in (("b2-boundary", "b2", True), ("lr-boundary", "lr", False)):
        result = results[unit]
        converged = outcomes(result, config.converge_tol) == OUTCOMES["converged"]
        for parameterisation in ("standard", "reparam"):
            idx = _where(result, parameterisation=parameterisation)
            values = np.array([result.conditions[i][key] for i in idx])
            order = np.argsort(-values if descending else values)
            boundary, flips = locate_boundary(values[order], converged[idx][order])
            metrics[f"{key}_boundary_{parameterisation}"] = boundary
            metrics[f"{key}_boundary_transitions_{parameterisation}"] = float(flips)
            metrics[f"{key}_fine_sweep_converged_fraction_{parameterisation}"] = float(
                converged[idx].mean()
            )
    for unit in ("map-b1-b2", "map-b2-lr"):
        result = results[unit]
        outcome = outcomes(result, config.converge_tol)
        for parameterisation in ("standard", "reparam"):
            idx = _where(result, parameterisation=parameterisation)
            for name, code in OUTCOMES.items():
                metrics[f"{unit}_{parameterisation}_{name}_fraction"] = float(
                    np.mean(outcome[idx] == code)
                )
    silu = results["silu-vs-relu"]
    silu_i = _one(silu, activation="silu")
    metrics["silu_steps_to_converge"] = _first_below(
        silu.steps, silu.curves["loss"][silu_i], config.converge_tol
    )
    metrics["silu_final_loss"] = float(silu.final["loss"][silu_i])
    metrics["diverged_networks"] = float(sum(int(r.diverged.sum()) for r in results.values()))
    return metrics


def analyse(results: Results, config: SingleNeuronConfig) -> Analysis:
    return Analysis(_claims(results, config), _metrics(results, config))


# ---------------------------------------------------------------------------------------------
# Figures.
# ---------------------------------------------------------------------------------------------
def _plateau_lines(ax: plt.Axes) -> None:
    ax.axhline(HYPERACTIVE_PLATEAU, color="k", ls=":", lw=1, label="1/48 (hyperactive)")
    ax.axhline(DEAD_PLATEAU, color="k", ls="--", lw=1, label="5/48 (dead)")


def _loss_panel(
    ax: plt.Axes, result: UnitResult, label: Callable[[dict[str, Any]], str], title: str
) -> None:
    colours = plt.cm.viridis(np.linspace(0, 0.95, result.n_networks))
    for i, condition in enumerate(result.conditions):
        ax.plot(
            result.steps,
            np.maximum(result.curves["loss"][i], 1e-16),
            color=colours[i],
            label=label(condition),
            lw=1.2,
        )
    _plateau_lines(ax)
    ax.set(yscale="log", xlabel="step", ylabel="MSE", title=title, ylim=(1e-14, 10))
    ax.legend(ncol=2)


def _figure_losses(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    _loss_panel(axes[0, 0], results["b1-sweep"], lambda c: f"b1={c['b1']:g}", "b1 sweep (b2 = 0)")
    _loss_panel(axes[0, 1], results["b2-sweep"], lambda c: f"b2={c['b2']:g}", "b2 sweep (b1 = 0)")
    _loss_panel(
        axes[1, 0],
        results["lr-sweep"],
        lambda c: f"lr={c['lr']:g}",
        f"learning-rate sweep (b1 = 0, b2 = {config.lr_sweep_b2:g})",
    )
    _loss_panel(
        axes[1, 1],
        results["silu-vs-relu"],
        lambda c: c["activation"],
        f"SiLU vs ReLU (b2 = {config.silu_b2:g})",
    )
    save_figure(fig, out_dir / "loss_curves.png")
    return Figure(
        "loss_curves.png",
        "Loss per condition (log scale) with the exact plateaus "
        "1/48 (best line) and 5/48 (best constant).",
    )


def _student(result: UnitResult, i: int, t: int, x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2 = (result.curves[k][i, t] for k in ("w1", "b1", "w2", "b2"))
    pre = w1 * (x + b1) if result.conditions[i]["parameterisation"] == "reparam" else w1 * x + b1
    return w2 * np.maximum(pre, 0) + b2


def _figure_fits(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    cases = [
        ("b2-sweep", {"b2": -1.1}, "b2 = −1.1"),
        ("b2-sweep", {"b2": -1.2}, "b2 = −1.2"),
        ("lr-sweep", {"lr": 0.2}, "lr = 0.2"),
        ("lr-sweep", {"lr": 0.4}, "lr = 0.4"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4), sharey=True)
    x = np.linspace(-1, 1, 201)
    for ax, (unit, match, title) in zip(axes, cases, strict=True):
        result = results[unit]
        i = _one(result, **match)
        ax.plot(x, np.maximum(x, 0), "k--", lw=1.5, label="teacher")
        if i is not None:
            for target in (0, 20, 100, 500, config.steps):
                t = int(np.argmin(np.abs(result.steps - target)))
                ax.plot(x, _student(result, i, t, x), lw=1.2, label=f"step {int(result.steps[t])}")
        ax.set(title=title, xlabel="x")
        ax.legend()
    axes[0].set_ylabel("f(x)")
    save_figure(fig, out_dir / "fits.png")
    return Figure(
        "fits.png",
        "Student function at chosen steps: b2 = −1.1 converges, −1.2 ends "
        "as the best line; lr 0.2 converges, lr 0.4 ends as the best constant.",
    )


def _figure_kinks(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for ax, unit, key in ((axes[0], "b2-sweep", "b2"), (axes[1], "lr-sweep", "lr")):
        result = results[unit]
        kinks = _kink(result)
        colours = plt.cm.viridis(np.linspace(0, 0.95, result.n_networks))
        for i, condition in enumerate(result.conditions):
            ax.plot(result.steps, kinks[i], color=colours[i], label=f"{key}={condition[key]:g}")
        for edge in (-1, 1):
            ax.axhline(edge, color="k", ls=":", lw=1)
        ax.set(
            xscale="symlog",
            xlim=(0, result.steps[-1]),
            xlabel="step",
            ylabel="kink x_t",
            ylim=(-3, 3),
            title=f"kink x_t = −b1/w1, {unit.replace('-', ' ')}",
        )
        ax.legend(ncol=2)
    result = results["b2-sweep"]
    image = axes[2].imshow(
        result.curves["state"],
        aspect="auto",
        cmap=plt.colormaps["coolwarm"].resampled(3),
        vmin=-0.5,
        vmax=2.5,
        interpolation="nearest",
        extent=(result.steps[0], result.steps[-1], result.n_networks - 0.5, -0.5),
    )
    axes[2].set(
        yticks=range(result.n_networks),
        xlabel="step",
        title="neuron state, b2 sweep",
        yticklabels=[f"b2={c['b2']:g}" for c in result.conditions],
    )
    axes[2].grid(False)
    bar = fig.colorbar(image, ax=axes[2], ticks=[0, 1, 2])
    bar.ax.set_yticklabels(["dead", "balanced", "hyperactive"])
    save_figure(fig, out_dir / "kinks.png")
    return Figure(
        "kinks.png",
        "Kink trajectories (the neuron is balanced while the kink is inside "
        "[−1, 1]) and the neuron state over time for the b2 sweep.",
    )


def _map_axes(
    result: UnitResult, x_key: str, y_key: str, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    xs = np.unique([result.conditions[i][x_key] for i in idx])
    ys = np.unique([result.conditions[i][y_key] for i in idx])
    return xs, ys


def _map_values(
    result: UnitResult, values: np.ndarray, x_key: str, y_key: str, parameterisation: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = _where(result, parameterisation=parameterisation)
    xs, ys = _map_axes(result, x_key, y_key, idx)
    grid = np.full((len(ys), len(xs)), np.nan)
    for i in idx:
        cond = result.conditions[i]
        grid[np.searchsorted(ys, cond[y_key]), np.searchsorted(xs, cond[x_key])] = values[i]
    return xs, ys, grid


_MAPS = (("map-b1-b2", "b1", "b2"), ("map-b2-lr", "b2", "lr"))


def _map_grid(
    results: Results,
    values_of: Callable[[UnitResult], np.ndarray],
    draw: Callable[[plt.Axes, np.ndarray, np.ndarray, np.ndarray], Any],
    title: str,
    labels: list[str] | None = None,
) -> plt.Figure:
    """2×2 panels: rows (b1, b2) and (b2, lr) maps, columns standard and reparam neurons."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    for row, (unit, x_key, y_key) in enumerate(_MAPS):
        result = results[unit]
        values = values_of(result)
        for col, parameterisation in enumerate(("standard", "reparam")):
            ax = axes[row, col]
            xs, ys, grid = _map_values(result, values, x_key, y_key, parameterisation)
            mesh = draw(ax, xs, ys, grid)
            ax.set(
                xlabel=x_key,
                ylabel=y_key,
                title=f"{title}, {parameterisation} neuron",
                yscale="log" if y_key == "lr" else "linear",
            )
            ax.grid(False)
            bar = fig.colorbar(mesh, ax=ax, ticks=range(len(labels)) if labels else None)
            if labels:
                bar.ax.set_yticklabels(labels)
    return fig


def _draw_outcomes(ax: plt.Axes, xs: np.ndarray, ys: np.ndarray, grid: np.ndarray) -> Any:
    cmap = plt.colormaps["Set2"].resampled(len(OUTCOMES))
    mesh = ax.pcolormesh(xs, ys, grid, cmap=cmap, vmin=-0.5, vmax=3.5, shading="nearest")
    converged = (grid == OUTCOMES["converged"]).astype(float)
    ax.contour(xs, ys, converged, levels=[0.5], colors="k", linewidths=1.2)
    return mesh


def _draw_log_loss(ax: plt.Axes, xs: np.ndarray, ys: np.ndarray, grid: np.ndarray) -> Any:
    return ax.pcolormesh(xs, ys, grid, cmap="magma", vmin=-14, vmax=0, shading="nearest")


def _figure_phase_maps(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig = _map_grid(
        results,
        lambda r: outcomes(r, config.converge_tol).astype(float),
        _draw_outcomes,
        "final outcome",
        labels=list(OUTCOMES),
    )
    save_figure(fig, out_dir / "phase_maps.png")
    return Figure(
        "phase_maps.png",
        f"Final outcome after {config.steps} steps over (b1, b2) and "
        f"(b2, lr): converged (loss < {config.converge_tol:g}) or stuck dead / balanced / "
        "hyperactive; black line: convergence boundary. Left: standard neuron w·x + b; "
        "right: reparameterised w·(x + b').",
    )


def _figure_loss_maps(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig = _map_grid(
        results,
        lambda r: np.log10(np.maximum(r.final["loss"], 1e-16)),
        _draw_log_loss,
        "log10 final loss",
    )
    save_figure(fig, out_dir / "loss_maps.png")
    return Figure("loss_maps.png", "log10 of the final loss over the same grids.")


def figures(results: Results, config: SingleNeuronConfig, out_dir: Path) -> list[Figure]:
    makers = (_figure_losses, _figure_fits, _figure_kinks, _figure_phase_maps, _figure_loss_maps)
    return [make(results, config, out_dir) for make in makers]


EXPERIMENT = Experiment(
    name="single-neuron",
    title="Training dynamics of a single ReLU neuron",
    seed="001",
    summary="b1/b2/lr sweeps, SiLU saddle, exact plateaus, phase maps, reparameterised neuron",
    config=SingleNeuronConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
)
