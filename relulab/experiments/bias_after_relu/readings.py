"""Readings of the stored bias-after-relu units, shared by the claims, the metrics and the
figures: per-student speed and roughness of the loss curves, and per-network tables arranged
by seed and shift (the paired design: one seed's weights at every b).

Divergence (:data:`DIVERGENCE`, the one policy of :mod:`relulab.analysis.divergence`): a student
whose loss turned non-finite (the engine froze it) is diverged in every reading — its speed, its
roughness and its final loss are ``+inf`` (:func:`~relulab.analysis.ranked_last`: it ranks last,
behind every student that trained), never a sentinel loss in one claim and a dropped student in
another. LayerNorm bounds the student's and the teacher's outputs (mean square 1 per sample), so
the MSE of a student that has not diverged is at most 4: no cap is needed beyond finiteness.
"""

from __future__ import annotations

import numpy as np

from relulab.analysis import where
from relulab.analysis.divergence import DivergencePolicy, divergence_counts, ranked_last
from relulab.experiments.bias_after_relu.units import InitDeltas, Training

__all__ = [
    "DIVERGENCE",
    "argmin_shift",
    "diverged_by_shift",
    "init_table",
    "per_student",
    "roughness",
    "seed_by_shift",
    "zero_mean_deltas",
]

DIVERGENCE = DivergencePolicy(quantity="training loss")


def roughness(log_loss: np.ndarray) -> np.ndarray:
    """Excess variation of each row of log10 loss: its total variation minus its net change
    (0 for a monotone curve).

    Example:
        >>> roughness(np.array([[0.0, -1.0, -2.0], [0.0, -1.0, 0.0]])).tolist()
        [0.0, 2.0]
    """
    return np.abs(np.diff(log_loss, axis=1)).sum(axis=1) - np.abs(log_loss[:, -1] - log_loss[:, 0])


def per_student(students: Training, records: int | None = None) -> dict[str, np.ndarray]:
    """Δ, final loss, speed (mean log10 loss over training) and roughness per student, over the
    first ``records`` records (all by default: a shorter prefix shows the trend with length),
    and whether each diverged (:data:`DIVERGENCE`, over the whole run): a diverged student's
    final loss, speed and roughness are ``+inf`` in every prefix (it ranks last).

    Example:
        >>> from relulab.store import UnitResult
        >>> unit = UnitResult(
        ...     [{"b": 0.0, "seed": 0}, {"b": 0.1, "seed": 0}], np.arange(3),
        ...     {"loss": np.array([[1.0, 0.1, 0.01], [1.0, np.nan, np.nan]])},
        ...     {"loss": np.array([0.01, np.nan]), "delta_init": np.array([0.3, 0.2])},
        ...     np.array([False, True]), np.array([-1, 1]))
        >>> values = per_student(Training.read(unit))
        >>> values["mean_log_loss"].tolist(), values["diverged"].tolist()
        ([-1.0, inf], [False, True])
    """
    diverged = DIVERGENCE.diverged(students.diverged, students.loss)
    with np.errstate(invalid="ignore"):
        log_loss = np.log10(np.maximum(students.loss[:, :records], 1e-30))
    return {
        "delta": students.delta_init,
        "final_loss": ranked_last(students.loss[:, :records][:, -1], diverged),
        "mean_log_loss": ranked_last(log_loss.mean(axis=1), diverged),
        "roughness": ranked_last(roughness(log_loss), diverged),
        "diverged": diverged,
        "b": np.array([c["b"] for c in students.conditions]),
        "seed": np.array([c["seed"] for c in students.conditions]),
    }


def diverged_by_shift(
    values: dict[str, np.ndarray], shifts: tuple[float, ...]
) -> dict[str, tuple[int, int]]:
    """Per b of the sweep: (students that diverged, students), from :func:`per_student`'s
    readings (for a claim's ``Reading(diverged=...)``).

    Example:
        >>> values = {"b": np.array([0.0, 0.0, 0.5]), "diverged": np.array([False, True, False])}
        >>> diverged_by_shift(values, (0.0, 0.5))
        {'b=0': (1, 2), 'b=0.5': (0, 1)}
    """
    groups = {f"b={b:g}": np.flatnonzero(np.isclose(values["b"], b)) for b in shifts}
    return divergence_counts(values["diverged"], groups)


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


def init_table(init: InitDeltas, variant: str, shifts: np.ndarray) -> np.ndarray:
    """Δ at init of one variant of the init unit as ``(init_seeds, len(shifts))``."""
    idx = where(init.conditions, variant=variant)
    b = np.array([init.conditions[i]["b"] for i in idx])
    seed = np.array([init.conditions[i]["seed"] for i in idx])
    return seed_by_shift(init.delta_init[idx], b, seed, shifts)


def zero_mean_deltas(init: InitDeltas) -> np.ndarray:
    """Δ at init of the zero-mean-activation controls of the init unit."""
    return init.delta_init[where(init.conditions, variant="zero-mean")]
