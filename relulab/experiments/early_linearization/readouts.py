"""Measurements of what the networks learned (seed 004 §6): the function on XOR + a linear
feature — the conflict points and the reliance on x3 (§6.1, Fig. 5) — and the representations of
the parallel task — waiting at the linear-task loss, effective rank, variance explained (§6.2,
Fig. 6, appendix D). :mod:`.measure` re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relulab.analysis import variance_explained, where
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.scoring import diverged
from relulab.experiments.early_linearization.units import (
    FinalWeights,
    Stored,
    as_view,
    augmented_task,
)
from relulab.nn.statistics import effective_rank
from relulab.tasks import PARALLEL_COMPLEX, PARALLEL_SIMPLE, xor_linear_task
from relulab.theory.deep_linear import least_squares_loss

__all__ = [
    "Parallel",
    "conflict_points",
    "cube_function",
    "forward",
    "linear_feature_reliance",
    "linear_task_loss",
    "parallel",
    "xor_x3_ratio",
]


def forward(
    W1: np.ndarray, W2: np.ndarray, X: np.ndarray, relu: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Hidden activations ``(..., N, P)`` and outputs ``(..., n_out, P)`` of two-layer nets with
    augmented first layer ``W1 (..., N, d+1)`` on augmented inputs ``X (P, d+1)``."""
    Z = np.asarray(W1, np.float64) @ X.T
    H = np.maximum(Z, 0.0) if relu else Z
    return H, np.asarray(W2, np.float64) @ H


def conflict_points(
    delta: float, levels: tuple[float, float] = (-1.0, 1.0)
) -> tuple[np.ndarray, np.ndarray]:
    """XOR + linear inputs whose third coordinate contradicts the XOR class, built from the task
    (:func:`relulab.tasks.xor_linear_task` with these XOR ``levels``): every training point with
    its x3 flipped (class-0 XOR coordinates with x3 = +Δ, class-1 with x3 = −Δ), and the class
    x3 points to.

    Example:
        >>> points, x3_class = conflict_points(0.5, (0.0, 1.0))
        >>> points[:, 2].tolist(), x3_class.tolist()
        ([0.5, 0.5, -0.5, -0.5], [1, 1, 0, 0])
    """
    X, Y = xor_linear_task(delta, levels=levels)
    points = X.copy()
    points[:, 2] = -points[:, 2]
    return points, 1 - np.argmax(Y, axis=1)


def linear_feature_reliance(
    unit: Stored,
    relu: bool,
    delta: float,
    c: float,
    levels: tuple[float, float] = (-1.0, 1.0),
) -> np.ndarray:
    """Per network with (Δ, c): share of the 4 conflict points (:func:`conflict_points` of the
    task the unit was trained on, XOR ``levels``) classified by x3 (argmax)."""
    points, x3_class = conflict_points(delta, levels)
    X = np.hstack([points, np.full((4, 1), c)])
    unit = as_view(unit, FinalWeights)
    index = where(unit.conditions, delta=delta, c=c)
    _, outputs = forward(unit.param_0[index], unit.param_1[index], X, relu)
    return np.mean(np.argmax(outputs, axis=1) == x3_class, axis=1)


def xor_x3_ratio(levels: tuple[float, ...], delta: float) -> float:
    """The XOR : x3 scale of the XOR + linear task: the XOR coordinates' span over the third
    coordinate's, :math:`(hi - lo)/(2\\Delta)` (1 for {0, 1}² with Δ = ½, 2 for ±1 with Δ = ½).

    Example:
        >>> xor_x3_ratio((-1.0, 1.0), 0.5)
        2.0
    """
    return float(levels[1] - levels[0]) / (2.0 * delta) if delta > 0 else float("inf")


def cube_function(
    W1: np.ndarray,
    W2: np.ndarray,
    c: float,
    delta: float,
    relu: bool,
    n: int = 41,
    levels: tuple[float, ...] = (-1.0, 1.0),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class-1 minus class-0 output on an (x1, x3) grid of the box [lo, hi]² × [−Δ', Δ'] with
    Δ' = max(Δ, (hi − lo)/2), averaged over x2 (seed 004 fig. 5C)."""
    lo, hi = levels
    half = max(delta, 0.5 * (hi - lo))
    x1, x2, x3 = np.linspace(lo, hi, n), np.linspace(lo, hi, n), np.linspace(-half, half, n)
    grid = np.stack(np.meshgrid(x1, x2, x3, indexing="ij"), axis=-1).reshape(-1, 3)
    X = np.hstack([grid, np.full((grid.shape[0], 1), c)])
    _, out = forward(W1, W2, X, relu)
    diff = (out[1] - out[0]).reshape(n, n, n).mean(axis=1)  # average over x2
    return x1, x3, diff


@dataclass
class Parallel:
    """Per network of the parallel task (seed 004 §6.2, fig. 6, appendix D)."""

    waiting: np.ndarray  # steps spent within ±near_loss of the linear-task loss
    rank: np.ndarray  # effective rank of HᵀH at the end
    centred_rank: np.ndarray  # the same with H centred over the inputs (no bias offset)
    r2_simple: np.ndarray
    r2_complex: np.ndarray
    r2_both: np.ndarray
    final_loss: np.ndarray
    diverged: np.ndarray  # per network, under the study's policy (:mod:`.scoring`)


def linear_task_loss(config: EarlyLinearizationConfig) -> float:
    """Loss of solving only the linear task on the parallel task: the best affine fit [D]."""
    X, Y = augmented_task("parallel", config, config.constant)
    return least_squares_loss(X.T, Y.T)


def _centred_gram(representation: np.ndarray) -> np.ndarray:
    """Gram matrix of a ``(P, N)`` representation centred over the P inputs."""
    centred = representation - representation.mean(axis=0)
    return centred @ centred.T


def parallel(unit: Stored, config: EarlyLinearizationConfig, c: float, relu: bool) -> Parallel:
    level = linear_task_loss(config)
    unit = as_view(unit, FinalWeights)
    X, _ = augmented_task("parallel", config, c)
    index = where(unit.conditions, c=c)
    dt = np.diff(unit.steps, prepend=0)
    loss = unit.loss[index]
    waiting = np.sum((np.abs(loss / level - 1.0) < config.near_loss) * dt, axis=1)
    H, _ = forward(unit.param_0[index], unit.param_1[index], X, relu)
    reps = np.swapaxes(H, 1, 2)  # (S, P, N)
    both = np.column_stack([PARALLEL_SIMPLE, PARALLEL_COMPLEX])
    return Parallel(
        waiting=waiting.astype(float),
        rank=np.array([effective_rank(r @ r.T) for r in reps]),
        centred_rank=np.array([effective_rank(_centred_gram(r)) for r in reps]),
        r2_simple=np.array([variance_explained(r, PARALLEL_SIMPLE) for r in reps]),
        r2_complex=np.array([variance_explained(r, PARALLEL_COMPLEX) for r in reps]),
        r2_both=np.array([variance_explained(r, both) for r in reps]),
        final_loss=loss[:, -1],
        diverged=diverged(unit)[index],
    )
