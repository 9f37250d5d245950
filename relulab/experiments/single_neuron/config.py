"""Settings of the single-neuron study, its presets and the exact plateaus it is judged against.

Provenance tags: [S] stated by seed 001 (Liu, *Training dynamics of a single ReLU neuron*,
"Problem Setup" and Observations 0–3), [I] inferred (the most likely reading; configurable),
[D] derived. Beyond-the-seed settings (boundaries, phase maps) are implementation choices.
Every single-field range is declared with its setting; no rule ties several fields together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relulab.config import setting
from relulab.theory import best_constant_fit_loss, best_linear_fit_loss

__all__ = [
    "DEAD_PLATEAU",
    "HYPERACTIVE_PLATEAU",
    "OUTCOMES",
    "PRESETS",
    "SOURCE",
    "SingleNeuronConfig",
    "scale",
]

SOURCE = "seed 001"
HYPERACTIVE_PLATEAU = best_linear_fit_loss(-1.0, 1.0)  # = 1/48 [D]
DEAD_PLATEAU = best_constant_fit_loss(-1.0, 1.0)  # = 5/48 [D]
OUTCOMES = {"dead": 0, "balanced": 1, "hyperactive": 2, "converged": 3}


@dataclass(frozen=True)
class SingleNeuronConfig:
    """Settings with their provenance (:func:`relulab.config.setting`): stated by seed 001,
    inferred (configurable), or an implementation choice (the beyond-the-seed sweeps)."""

    seed: int = setting(
        0, "choice", note="grid inputs and a fixed init: the seed matters only for uniform inputs"
    )
    dtype: Literal["float32", "float64"] = setting(
        "float32",
        "inferred",
        alternatives=("float64",),
        note="PyTorch's default precision (alternative: float64, for a reader who takes "
        "Observation 3's 'up to machine precision' to ask for it)",
    )
    n_points: int = setting(
        100,
        "inferred",
        at_least=2,
        alternatives=(1000,),
        note="any dense grid of 100…1000 points reproduces the thresholds (alternative: 1000, "
        "the paper preset's value)",
    )
    sampling: Literal["grid", "uniform"] = setting(
        "grid",
        "inferred",
        alternatives=("uniform",),
        note="linspace(-1, 1, N) (alternative: N uniform draws on [-1, 1], the other reading "
        "of 'the input domain x ∈ [-1, 1]')",
    )
    lr: float = setting(
        0.01, "stated", positive=True, note="Adam, default lr 0.01 ('Problem Setup')"
    )
    betas: tuple[float, float] = setting(
        (0.9, 0.999),
        "inferred",
        at_least=0.0,
        less_than=1.0,
        no_alternative="the seed names Adam and only its lr ('default LR = 0.01'): the other "
        "constants are the framework's defaults, (0.9, 0.999) in PyTorch, JAX and Keras alike",
        note="Adam defaults",
    )
    eps: float = setting(
        1e-8,
        "inferred",
        positive=True,
        no_alternative="the seed sets only Adam's lr: ε is the framework default, 1e-8 in "
        "PyTorch (whose nn.Linear the author's related posts build on) and in Optax",
        note="Adam default",
    )
    steps: int = setting(
        5000,
        "inferred",
        positive=True,
        alternatives=(2000, 20_000),
        note="the seed shows long runs, not their length (alternatives: a shorter 2000 and "
        "the 20 000 of the SiLU runs)",
    )
    silu_steps: int = setting(
        20000,
        "inferred",
        positive=True,
        alternatives=(10_000, 50_000),
        note="long enough for SiLU's saddle (alternatives: half, still past its ≈ 6400-step "
        "convergence, and 2.5×)",
    )
    record_every: int = setting(10, "choice", positive=True)
    b1_sweep: tuple[float, ...] = setting(
        (-2.0, -1.5, -1.2, -1.0, -0.8, -0.5, 0.0, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0),
        "inferred",
        alternatives=((-3.0, -2.0, -1.1, -0.5, 0.0, 0.5, 1.1, 2.0, 3.0),),
        note="the seed states b1 > 1 and b1 < -1; the grid is ours (alternative: a grid "
        "reaching ±3 with points just past the thresholds, ±1.1)",
    )
    b2_sweep: tuple[float, ...] = setting(
        (0.0, -0.5, -1.0, -1.1, -1.2, -1.5, -2.0), "stated", note="-1.1 and -1.2 stated"
    )
    lr_sweep: tuple[float, ...] = setting(
        (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5), "stated", positive=True, note="0.2 and 0.4 stated"
    )
    lr_sweep_b2: float = setting(-1.0, "stated")
    silu_b2: float = setting(
        -2.0,
        "inferred",
        alternatives=(-1.2,),
        note="ReLU vs SiLU at b2 = -2 (Observation 3; alternative: -1.2, the seed's own stuck "
        "ReLU run of Observation 1)",
    )
    silu_teacher: Literal["silu", "relu"] = setting(
        "silu",
        "inferred",
        alternatives=("relu",),
        note="a SiLU student cannot fit ReLU exactly (alternative: the seed's teacher ReLU(x), "
        "kept for SiLU too)",
    )
    boundary_points: int = setting(61, "choice", at_least=2)
    b2_boundary_range: tuple[float, float] = setting((-2.0, -0.5), "choice", increasing=True)
    lr_boundary_range: tuple[float, float] = setting(
        (0.05, 1.0), "choice", positive=True, increasing=True, note="log-spaced"
    )
    grid_size: int = setting(21, "choice", at_least=2)
    grid_b1_range: tuple[float, float] = setting((-2.5, 2.5), "choice", increasing=True)
    grid_b2_range: tuple[float, float] = setting((-2.5, 1.0), "choice", increasing=True)
    grid_lr_range: tuple[float, float] = setting(
        (0.001, 1.0), "choice", positive=True, increasing=True, note="log-spaced"
    )
    grid_record_every: int = setting(
        250,
        "inferred",
        positive=True,
        alternatives=(10,),
        note="the phase maps' recording interval; leaving-balanced-is-irreversible reads the "
        "maps' states at these records and misses excursions shorter than it (alternative: 10, "
        "the quick sweeps' own interval, which sees them)",
    )
    teacher_bias_sweep: tuple[float, ...] = setting(
        (0.0, 0.5, 1.0, 1.5, 2.0, 3.0),
        "inferred",
        alternatives=((0.0, 0.25, 0.5, 1.0, 2.0, 4.0),),
        note="raising the target's bias; values ours (alternative: a doubling grid to 4)",
    )
    early_steps: int = setting(
        200,
        "choice",
        positive=True,
        note="lr 0.01 / 0.2 / 0.4 recorded at every step (Observation 2)",
    )
    converge_tol: float = setting(
        1e-4,
        "inferred",
        judging=True,
        positive=True,
        alternatives=(1e-6, 1e-3),
        note="'the loss goes to zero': level below (alternatives: a stricter 1e-6; a looser "
        "1e-3, still 20× below the lower plateau 1/48)",
    )
    plateau_rtol: float = setting(
        0.05,
        "inferred",
        judging=True,
        positive=True,
        alternatives=(0.02, 0.1),
        note="'stuck around': within 5 % of exact (alternatives: 2 % and 10 %)",
    )
    recovery_bound: float = setting(
        0.05,
        "inferred",
        judging=True,
        positive=True,
        alternatives=(0.01, 0.1),
        note="'very hard to return': fewer than 5 % of leavers return (alternatives: 1 % and 10 %)",
    )
    fit_rtol: float = setting(
        0.01,
        "inferred",
        judging=True,
        positive=True,
        alternatives=(0.005, 0.05),
        note="stuck parameters within 1 % of the least-squares line (alternatives: 0.5 % and 5 %)",
    )


PRESETS = {
    "quick": SingleNeuronConfig(),
    "paper": SingleNeuronConfig(
        n_points=1000, boundary_points=201, grid_size=61, record_every=5, grid_record_every=100
    ),
}


def scale(config: SingleNeuronConfig, extra: str = "") -> str:
    """The scale a single-neuron verdict was measured at (the seed states none of these)."""
    base = f"N = {config.n_points} inputs ({config.sampling}), {config.steps} steps, {config.dtype}"
    return f"{base}; {extra}" if extra else base
