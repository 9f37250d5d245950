"""Settings of the single-neuron study, its presets and the exact plateaus it is judged against.

Provenance tags: [S] stated by seed 001 (Liu, *Training dynamics of a single ReLU neuron*,
"Problem Setup" and Observations 0–3), [I] inferred (the most likely reading; configurable),
[D] derived. Beyond-the-seed settings (boundaries, phase maps) carry no tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relulab.config import ConfigError
from relulab.theory import best_constant_fit_loss, best_linear_fit_loss

__all__ = [
    "DEAD_PLATEAU",
    "HYPERACTIVE_PLATEAU",
    "OUTCOMES",
    "PRESETS",
    "SingleNeuronConfig",
]

HYPERACTIVE_PLATEAU = best_linear_fit_loss(-1.0, 1.0)  # = 1/48 [D]
DEAD_PLATEAU = best_constant_fit_loss(-1.0, 1.0)  # = 5/48 [D]
OUTCOMES = {"dead": 0, "balanced": 1, "hyperactive": 2, "converged": 3}


@dataclass(frozen=True)
class SingleNeuronConfig:
    """Settings; [S] stated by seed 001, [I] inferred and configurable."""

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
    silu_b2: float = -2.0  # [I] compare ReLU vs SiLU at b2 = -2 (seed 001, Observation 3)
    silu_teacher: Literal["silu", "relu"] = "silu"  # [I] a SiLU student cannot fit ReLU exactly
    boundary_points: int = 61
    b2_boundary_range: tuple[float, float] = (-2.0, -0.5)
    lr_boundary_range: tuple[float, float] = (0.05, 1.0)  # log-spaced
    grid_size: int = 21
    grid_b1_range: tuple[float, float] = (-2.5, 2.5)
    grid_b2_range: tuple[float, float] = (-2.5, 1.0)
    grid_lr_range: tuple[float, float] = (0.001, 1.0)  # log-spaced
    grid_record_every: int = 250
    teacher_bias_sweep: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)  # [I] values
    early_steps: int = 200  # lr 0.01 / 0.2 / 0.4 recorded at every step (Observation 2)
    converge_tol: float = 1e-4  # [I] "the loss goes to zero": level below this
    plateau_rtol: float = 0.05  # [I] "stuck around" a plateau: within 5 % of the exact value
    recovery_bound: float = 0.05  # [I] "very hard to return": fewer than 5 % of leavers return
    fit_rtol: float = 0.01  # [I] stuck parameters within 1 % of the least-squares line

    def validate(self) -> None:
        positive_ints = (
            "n_points",
            "steps",
            "silu_steps",
            "early_steps",
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
        positive_floats = (
            "lr",
            "eps",
            "converge_tol",
            "plateau_rtol",
            "recovery_bound",
            "fit_rtol",
        )
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
