"""Readings of the stored bias-after-relu units, shared by the claims, the metrics and the
figures: per-student speed and roughness of the loss curves, and per-network tables arranged
by seed and shift (the paired design: one seed's weights at every b)."""

from __future__ import annotations

import numpy as np

from relulab.analysis import where
from relulab.store import UnitResult

__all__ = [
    "argmin_shift",
    "init_table",
    "per_student",
    "roughness",
    "seed_by_shift",
    "zero_mean_deltas",
]


def roughness(log_loss: np.ndarray) -> np.ndarray:
    """Excess variation of each row of log10 loss: its total variation minus its net change
    (0 for a monotone curve).

    Example:
        >>> roughness(np.array([[0.0, -1.0, -2.0], [0.0, -1.0, 0.0]])).tolist()
        [0.0, 2.0]
    """
    return np.abs(np.diff(log_loss, axis=1)).sum(axis=1) - np.abs(log_loss[:, -1] - log_loss[:, 0])


def per_student(result: UnitResult, records: int | None = None) -> dict[str, np.ndarray]:
    """Δ, final loss, speed (mean log10 loss over training) and roughness per student, over the
    first ``records`` records (all by default: a shorter prefix shows the trend with length)."""
    log_loss = np.log10(np.maximum(result.curves["loss"][:, :records], 1e-30))
    return {
        "delta": result.final["delta_init"],
        "final_loss": result.final["loss"] if records is None else 10 ** log_loss[:, -1],
        "mean_log_loss": log_loss.mean(axis=1),
        "roughness": roughness(log_loss),
        "b": np.array([c["b"] for c in result.conditions]),
        "seed": np.array([c["seed"] for c in result.conditions]),
    }


def argmin_shift(values: np.ndarray, shifts: tuple[float, ...]) -> float:
    """The shift at which ``values`` (one per shift) is least."""
    return float(shifts[int(np.argmin(values))])


def seed_by_shift(
    values: np.ndarray, b: np.ndarray, seed: np.ndarray, shifts: np.ndarray | tuple[float, ...]
) -> np.ndarray:
    """Per-network values arranged as ``(seeds, shifts)``: row s holds seed s at every b (the
    paired design: one seed's weights at every shift). Seeds missing a shift are dropped.

    Example:
        >>> seed_by_shift(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.0, 0.1, 0.0, 0.1]),
        ...               np.array([0, 0, 1, 1]), (0.0, 0.1)).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    rows = []
    for s in np.unique(seed):
        row = [values[(seed == s) & np.isclose(b, shift)] for shift in shifts]
        if all(len(cell) == 1 for cell in row):
            rows.append([float(cell[0]) for cell in row])
    return np.array(rows).reshape(-1, len(shifts))


def init_table(init: UnitResult, variant: str, shifts: np.ndarray) -> np.ndarray:
    """Δ at init of one variant of the init unit as ``(init_seeds, len(shifts))``."""
    idx = where(init.conditions, variant=variant)
    b = np.array([init.conditions[i]["b"] for i in idx])
    seed = np.array([init.conditions[i]["seed"] for i in idx])
    return seed_by_shift(init.final["delta_init"][idx], b, seed, shifts)


def zero_mean_deltas(init: UnitResult) -> np.ndarray:
    """Δ at init of the zero-mean-activation controls of the init unit."""
    return init.final["delta_init"][where(init.conditions, variant="zero-mean")]
