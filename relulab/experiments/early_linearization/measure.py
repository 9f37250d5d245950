"""Measurements on the stored runs: one number (or array) per network, paired across the ReLU
and the linear unit of a task by position (both units list the same conditions in the same
order, and network k of a variant starts from the same weights in both).

Everything here reads :class:`relulab.store.UnitResult` s and calls the library —
:mod:`relulab.theory.deep_linear` for the modes and closed forms, :mod:`relulab.analysis` for
the alignment measure — and returns NumPy arrays; the claims are built in :mod:`.claims`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relulab.analysis import (
    interpolated_crossing,
    paired_alignments,
    variance_explained,
    where,
)
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.units import augmented_task
from relulab.nn.statistics import effective_rank
from relulab.store import UnitResult
from relulab.tasks import PARALLEL_COMPLEX, PARALLEL_SIMPLE
from relulab.theory.deep_linear import (
    LinearModes,
    aligned_modes,
    function_mode_strengths,
    gated_linear_prediction,
    learning_time_constant,
    least_squares_loss,
    mode_components,
    mode_strength_unbalanced,
    relu_hitting_delay,
)

__all__ = [
    "alignment_gaps",
    "alignments",
    "forward",
    "hierarchy_modes",
    "mode_half_times",
    "Mechanism",
    "mechanism",
]


def forward(W1: np.ndarray, W2: np.ndarray, X: np.ndarray, relu: bool):
    """Hidden activations ``(..., N, P)`` and outputs ``(..., n_out, P)`` of two-layer nets with
    augmented first layer ``W1 (..., N, d+1)`` on augmented inputs ``X (P, d+1)``."""
    Z = np.asarray(W1, np.float64) @ X.T
    H = np.maximum(Z, 0.0) if relu else Z
    return H, np.asarray(W2, np.float64) @ H


def alignments(
    relu: UnitResult, linear: UnitResult, config: EarlyLinearizationConfig, **match
) -> np.ndarray:
    """Per matched network ``(gap, shift, unshifted gap)`` of
    :func:`relulab.analysis.paired_alignments`: the ReLU loss against the linear loss of the
    same seed and variant over the linear net's early window, ``(n, 3)``."""
    index = list(where(relu.conditions, **match))
    return paired_alignments(
        relu.steps,
        relu.curves["loss"][index],
        linear.curves["loss"][index],
        config.window_fraction,
        config.max_shift,
    )


def alignment_gaps(
    relu: UnitResult, linear: UnitResult, config: EarlyLinearizationConfig, **match
) -> np.ndarray:
    """The gaps of :func:`alignments`, one per matched network."""
    return alignments(relu, linear, config, **match)[:, 0]


def hierarchy_modes(config: EarlyLinearizationConfig, c: float) -> tuple[np.ndarray, LinearModes]:
    """Augmented hierarchy inputs ``X̃ (P, P+1)`` and the data's modes (seed 004 eq. 4)."""
    X, Y = augmented_task("hierarchy", config, c)
    return X, aligned_modes(X.T, Y.T)


def mode_trajectories(unit: UnitResult, i: int, X: np.ndarray, modes: LinearModes, relu: bool):
    """Function mode strengths :math:`a_\\alpha(t)` ``(T, m)`` of network ``i`` from its outputs
    (equal to :math:`U^\\top W^2\\tilde W^1 V` for a linear network)."""
    _, outputs = forward(unit.arrays["param_0"][i], unit.arrays["param_1"][i], X, relu)
    return function_mode_strengths(outputs, X.T, modes)


def mode_half_times(steps: np.ndarray, strengths: np.ndarray, modes: LinearModes) -> np.ndarray:
    """Per mode, the interpolated step at which :math:`a_\\alpha` first reaches half its
    asymptote :math:`s_\\alpha/d_\\alpha` (NaN if never)."""
    half = 0.5 * modes.asymptotes
    return np.array(
        [interpolated_crossing(steps, -strengths[:, a], -half[a]) for a in range(modes.n_modes)]
    )


def theory_trajectory(unit: UnitResult, i: int, modes: LinearModes, times, tau: float):
    """Closed-form :math:`a_\\alpha(t)` from network ``i``'s initial weights
    (:func:`~relulab.theory.deep_linear.mode_strength_unbalanced`, decoupled modes)."""
    _, p0, q0 = mode_components(unit.arrays["param_1"][i, 0], unit.arrays["param_0"][i, 0], modes)
    return mode_strength_unbalanced(np.asarray(times)[:, None], modes.s, modes.d, p0, q0, tau)[0]


def bias_mode_index(modes: LinearModes) -> int:
    """The mode whose input direction leans most on the constant coordinate (Prop. 1)."""
    return int(np.argmax(np.abs(modes.V[-1])))


@dataclass
class Mechanism:
    """Per bias-ReLU hierarchy network (seed 004 §5.3–5.4, fig. 3, 4, 12).

    Attributes:
        t_star: linearization time, first step where the always-on fraction peaks.
        peak_on: always-on fraction at :math:`t^\\ast`.
        final_on: always-on fraction at the end.
        growth_ratio: (‖b(t*)‖/‖b(0)‖) / (‖W1(t*)‖/‖W1(0)‖).
        negative_kinks: share of units with kink :math:`-b_j/\\lVert w_j\\rVert < 0` at t*.
        mean_function_gap: max over inputs of ‖ŷ_i − ȳ‖/‖ȳ‖ where the loss is closest to the
            loss of predicting ȳ everywhere.
        gated_gap: largest |Δ ln L| between the gated linear model from t* and the simulation.
        item_spread: at the same step, max_i ‖ŷ_i − mean_j ŷ_j‖/‖ȳ‖ (how much the items'
            outputs differ from each other, whatever their common level).
        half_times_relu, half_times_linear: per mode (T½ of :func:`mode_half_times`).
        predicted_delay: per mode, seed eq. 14 with the kept fraction 1 − dead(0).
        theory_rel_error: per mode |T½(linear sim)/T½(theory) − 1|.
    """

    t_star: np.ndarray
    peak_on: np.ndarray
    final_on: np.ndarray
    growth_ratio: np.ndarray
    negative_kinks: np.ndarray
    mean_function_gap: np.ndarray
    gated_gap: np.ndarray
    item_spread: np.ndarray
    half_times_relu: np.ndarray
    half_times_linear: np.ndarray
    predicted_delay: np.ndarray
    theory_rel_error: np.ndarray
    bias_mode: int


def _gated_gap(relu, i, j, X, modes, tau, config) -> float:
    W1, W2 = relu.arrays["param_0"][i, j], relu.arrays["param_1"][i, j]
    gate = np.all(W1.astype(np.float64) @ X.T > 0, axis=1)
    times = relu.steps[j:] - relu.steps[j]
    prediction = gated_linear_prediction(W2, W1, gate, modes, times, tau, method="unbalanced")
    simulated = relu.curves["loss"][i, j:]
    keep = simulated > config.loss_floor * relu.curves["loss"][i, 0]
    if not keep.any():
        return float("nan")
    gap = np.abs(np.log(np.maximum(prediction.loss[keep], 1e-300)) - np.log(simulated[keep]))
    return float(np.max(gap))


def mechanism(
    relu: UnitResult, linear: UnitResult, config: EarlyLinearizationConfig, c: float | None = None
) -> Mechanism:
    """The §5.3–5.4 measurements on every bias-ReLU hierarchy network with input constant ``c``
    (default ``config.constant``; any c > 0 of the sweep)."""
    c = config.constant if c is None else c
    X, modes = hierarchy_modes(config, c)
    Y = augmented_task("hierarchy", config, c)[1]
    tau = learning_time_constant(X.shape[0], config.lr)
    mean_target = Y.mean(axis=0)
    mean_loss = 0.5 * float(np.sum((Y - mean_target) ** 2))
    fine = np.linspace(0.0, float(relu.steps[-1]), 4001)
    rows: dict[str, list] = {k: [] for k in Mechanism.__dataclass_fields__ if k != "bias_mode"}
    for i in where(relu.conditions, c=c):
        on = relu.curves["always_on_fraction"][i]
        j = int(np.argmax(on))
        W1 = relu.arrays["param_0"][i].astype(np.float64)
        bias, weights = c * W1[:, :, -1], W1[:, :, :-1]
        growth_b = np.linalg.norm(bias[j]) / np.linalg.norm(bias[0])
        growth_w = np.linalg.norm(weights[j]) / np.linalg.norm(weights[0])
        kinks = -bias[j] / np.linalg.norm(weights[j], axis=1)
        loss = relu.curves["loss"][i]
        k = int(np.argmin(np.abs(loss - mean_loss)))
        _, outputs = forward(W1[k], relu.arrays["param_1"][i, k], X, relu=True)
        deviation = np.linalg.norm(outputs.T - mean_target, axis=1) / np.linalg.norm(mean_target)
        a_relu = mode_trajectories(relu, i, X, modes, relu=True)
        a_lin = mode_trajectories(linear, i, X, modes, relu=False)
        t_relu = mode_half_times(relu.steps, a_relu, modes)
        t_lin = mode_half_times(linear.steps, a_lin, modes)
        theory = theory_trajectory(linear, i, modes, fine, tau)
        t_theory = mode_half_times(fine, theory, modes)
        _, p0, _ = mode_components(
            linear.arrays["param_1"][i, 0], linear.arrays["param_0"][i, 0], modes
        )
        kept = 1.0 - relu.curves["dead_fraction"][i, 0]
        rows["t_star"].append(relu.steps[j])
        rows["peak_on"].append(on[j])
        rows["final_on"].append(on[-1])
        rows["growth_ratio"].append(growth_b / growth_w)
        rows["negative_kinks"].append(float(np.mean(kinks < 0)))
        rows["mean_function_gap"].append(float(np.max(deviation)))
        rows["gated_gap"].append(_gated_gap(relu, i, j, X, modes, tau, config))
        spread = outputs.T - outputs.mean(axis=1)
        rows["item_spread"].append(
            float(np.max(np.linalg.norm(spread, axis=1)) / np.linalg.norm(mean_target))
        )
        rows["half_times_relu"].append(t_relu)
        rows["half_times_linear"].append(t_lin)
        rows["predicted_delay"].append(relu_hitting_delay(modes.s, modes.d, p0, tau, kept))
        rows["theory_rel_error"].append(np.abs(t_lin / t_theory - 1.0))
    return Mechanism(**{k: np.array(v) for k, v in rows.items()}, bias_mode=bias_mode_index(modes))


def c_sweep(relu: UnitResult, linear: UnitResult, config: EarlyLinearizationConfig):
    """Per c of the sweep: alignment gaps and peak always-on fractions, one per seed."""
    gaps, peaks = {}, {}
    for c in config.all_constants:
        gaps[c] = alignment_gaps(relu, linear, config, c=c)
        peaks[c] = relu.curves["always_on_fraction"][where(relu.conditions, c=c)].max(axis=1)
    return gaps, peaks


def conflict_points(delta: float) -> tuple[np.ndarray, np.ndarray]:
    """XOR + linear inputs whose third coordinate contradicts the XOR class (class-0 XOR
    coordinates with x3 = +Δ and class-1 with x3 = −Δ), and the class x3 points to."""
    xor = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    x3_class = np.array([1, 1, 0, 0])
    third = np.where(x3_class == 1, delta, -delta)
    return np.column_stack([xor, third]), x3_class


def linear_feature_reliance(unit: UnitResult, relu: bool, delta: float, c: float) -> np.ndarray:
    """Per network with (Δ, c): share of the 4 conflict points classified by x3 (argmax)."""
    points, x3_class = conflict_points(delta)
    X = np.hstack([points, np.full((4, 1), c)])
    index = where(unit.conditions, delta=delta, c=c)
    _, outputs = forward(unit.arrays["param_0"][index], unit.arrays["param_1"][index], X, relu)
    return np.mean(np.argmax(outputs, axis=1) == x3_class, axis=1)


def cube_function(W1: np.ndarray, W2: np.ndarray, c: float, delta: float, relu: bool, n=41):
    """Class-1 minus class-0 output on an (x1, x3) grid of the box [0,1]² × [−Δ', Δ'] with
    Δ' = max(Δ, 0.5), averaged over x2 (seed 004 fig. 5C)."""
    half = max(delta, 0.5)
    x1, x2, x3 = np.linspace(0, 1, n), np.linspace(0, 1, n), np.linspace(-half, half, n)
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
    r2_simple: np.ndarray
    r2_complex: np.ndarray
    r2_both: np.ndarray
    final_loss: np.ndarray


def linear_task_loss(config: EarlyLinearizationConfig) -> float:
    """Loss of solving only the linear task on the parallel task: the best affine fit [D]."""
    X, Y = augmented_task("parallel", config, config.constant)
    return least_squares_loss(X.T, Y.T)


def parallel(unit: UnitResult, config: EarlyLinearizationConfig, c: float, relu: bool):
    level = linear_task_loss(config)
    X, _ = augmented_task("parallel", config, c)
    index = where(unit.conditions, c=c)
    dt = np.diff(unit.steps, prepend=0)
    loss = unit.curves["loss"][index]
    waiting = np.sum((np.abs(loss / level - 1.0) < config.near_loss) * dt, axis=1)
    H, _ = forward(unit.arrays["param_0"][index], unit.arrays["param_1"][index], X, relu)
    reps = np.swapaxes(H, 1, 2)  # (S, P, N)
    both = np.column_stack([PARALLEL_SIMPLE, PARALLEL_COMPLEX])
    return Parallel(
        waiting=waiting.astype(float),
        rank=np.array([effective_rank(r @ r.T) for r in reps]),
        r2_simple=np.array([variance_explained(r, PARALLEL_SIMPLE) for r in reps]),
        r2_complex=np.array([variance_explained(r, PARALLEL_COMPLEX) for r in reps]),
        r2_both=np.array([variance_explained(r, both) for r in reps]),
        final_loss=unit.final["loss"][index],
    )
