"""Measurements on the stored runs: one number (or array) per network, paired across the ReLU
and the linear unit of a task by position (both units list the same conditions in the same
order, and network k of a variant starts from the same weights in both).

Everything here reads :class:`relulab.store.UnitResult` s and calls the library —
:mod:`relulab.theory.deep_linear` for the modes and closed forms, :mod:`relulab.analysis` for
the alignment measure — and returns NumPy arrays; the claims are built in :mod:`.claims`.
The small pure functions (:func:`bias_mode_ratio`, :func:`delay_ratio`,
:func:`mean_target_step`, :func:`mean_target_deviation`) are what the claims judge, so the
controls in ``tests/test_early_linearization.py`` can feed them closed-form data.
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
from relulab.experiments.early_linearization.units import (
    Family,
    augmented_task,
    pair,
    width_pair,
)
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
    "Mechanism",
    "Parallel",
    "alignment_gaps",
    "alignments",
    "bias_mode_ratio",
    "c_sweep",
    "delay_ratio",
    "delta_gaps",
    "forward",
    "hierarchy_mechanism",
    "hierarchy_modes",
    "map_gaps",
    "mean_target_deviation",
    "mean_target_step",
    "mechanism",
    "mode_half_times",
    "parallel",
    "peak_always_on",
    "width_gaps",
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


def bias_mode_ratio(half_times: np.ndarray, bias_mode: int) -> np.ndarray:
    """Per network, T½ of the bias mode over the earliest T½ of the other modes (< 1: the bias
    mode is learned first), from half-times ``(networks, modes)``."""
    others = np.delete(half_times, bias_mode, axis=1)
    return half_times[:, bias_mode] / np.nanmin(others, axis=1)


def delay_ratio(
    half_relu: np.ndarray, half_linear: np.ndarray, predicted: np.ndarray
) -> np.ndarray:
    """Per network, the summed measured delay T½(ReLU) − T½(linear) over the summed predicted
    delay (seed eq. 14), all ``(networks, modes)``; NaN where nothing is predicted (no unit
    dead at initialisation)."""
    measured = np.nansum(half_relu - half_linear, axis=1)
    total = np.nansum(predicted, axis=1)
    return measured / np.where(total > 0, total, np.nan)


def mean_target_step(loss: np.ndarray, Y: np.ndarray) -> int:
    """The recording whose loss is closest to the loss of predicting the mean target ȳ for
    every input, ``½ Σ_i ‖y_i − ȳ‖²`` (``Y`` sample-major)."""
    mean_loss = 0.5 * float(np.sum((Y - Y.mean(axis=0)) ** 2))
    return int(np.argmin(np.abs(loss - mean_loss)))


def mean_target_deviation(outputs: np.ndarray, Y: np.ndarray) -> float:
    """``max_i ‖ŷ_i − ȳ‖/‖ȳ‖`` for outputs ``(n_out, P)``: how far the network function is from
    the mean target on its worst input."""
    mean_target = Y.mean(axis=0)
    deviation = np.linalg.norm(outputs.T - mean_target, axis=1) / np.linalg.norm(mean_target)
    return float(np.max(deviation))


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


def _unit_row(relu: UnitResult, i: int, c: float, X: np.ndarray, Y: np.ndarray) -> dict:
    """Norm growth, kinks, the mean-target reading and t* of bias-ReLU network ``i``."""
    on = relu.curves["always_on_fraction"][i]
    j = int(np.argmax(on))
    W1 = relu.arrays["param_0"][i].astype(np.float64)
    bias, weights = c * W1[:, :, -1], W1[:, :, :-1]
    growth_b = np.linalg.norm(bias[j]) / np.linalg.norm(bias[0])
    growth_w = np.linalg.norm(weights[j]) / np.linalg.norm(weights[0])
    kinks = -bias[j] / np.linalg.norm(weights[j], axis=1)
    k = mean_target_step(relu.curves["loss"][i], Y)
    _, outputs = forward(W1[k], relu.arrays["param_1"][i, k], X, relu=True)
    mean_target = Y.mean(axis=0)
    spread = outputs.T - outputs.mean(axis=1)
    return {
        "t_star": relu.steps[j],
        "peak_on": on[j],
        "final_on": on[-1],
        "growth_ratio": growth_b / growth_w,
        "negative_kinks": float(np.mean(kinks < 0)),
        "mean_function_gap": mean_target_deviation(outputs, Y),
        "item_spread": float(np.max(np.linalg.norm(spread, axis=1)) / np.linalg.norm(mean_target)),
    }


def _mode_row(relu, linear, i, X, modes, tau, fine) -> dict:
    """Mode half-times of ReLU and linear network ``i``, eq. 14's delays, and the closed form's
    error on the linear network."""
    t_relu = mode_half_times(relu.steps, mode_trajectories(relu, i, X, modes, relu=True), modes)
    t_lin = mode_half_times(linear.steps, mode_trajectories(linear, i, X, modes, relu=False), modes)
    t_theory = mode_half_times(fine, theory_trajectory(linear, i, modes, fine, tau), modes)
    _, p0, _ = mode_components(
        linear.arrays["param_1"][i, 0], linear.arrays["param_0"][i, 0], modes
    )
    kept = 1.0 - relu.curves["dead_fraction"][i, 0]
    return {
        "half_times_relu": t_relu,
        "half_times_linear": t_lin,
        "predicted_delay": relu_hitting_delay(modes.s, modes.d, p0, tau, kept),
        "theory_rel_error": np.abs(t_lin / t_theory - 1.0),
    }


def mechanism(
    relu: UnitResult, linear: UnitResult, config: EarlyLinearizationConfig, c: float | None = None
) -> Mechanism:
    """The §5.3–5.4 measurements on every bias-ReLU hierarchy network with input constant ``c``
    (default ``config.constant``; any c > 0 of the sweep)."""
    c = config.constant if c is None else c
    X, modes = hierarchy_modes(config, c)
    Y = augmented_task("hierarchy", config, c)[1]
    tau = learning_time_constant(X.shape[0], config.lr)
    fine = np.linspace(0.0, float(relu.steps[-1]), 4001)
    rows: dict[str, list] = {k: [] for k in Mechanism.__dataclass_fields__ if k != "bias_mode"}
    for i in where(relu.conditions, c=c):
        row = _unit_row(relu, i, c, X, Y) | _mode_row(relu, linear, i, X, modes, tau, fine)
        j = int(np.argmax(relu.curves["always_on_fraction"][i]))
        row["gated_gap"] = _gated_gap(relu, i, j, X, modes, tau, config)
        for key, value in row.items():
            rows[key].append(value)
    return Mechanism(**{k: np.array(v) for k, v in rows.items()}, bias_mode=bias_mode_index(modes))


def peak_always_on(relu: UnitResult, config: EarlyLinearizationConfig) -> dict[float, np.ndarray]:
    """Per c of the sweep, the peak always-on fraction of every ReLU network (its value at
    t*), in seed order."""
    return {
        c: relu.curves["always_on_fraction"][where(relu.conditions, c=c)].max(axis=1)
        for c in config.all_constants
    }


def c_sweep(relu: UnitResult, linear: UnitResult, config: EarlyLinearizationConfig):
    """Per c of the sweep: alignment gaps and peak always-on fractions, one per seed."""
    gaps = {c: alignment_gaps(relu, linear, config, c=c) for c in config.all_constants}
    return gaps, peak_always_on(relu, config)


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


def delta_gaps(
    xl: tuple[UnitResult, UnitResult], config: EarlyLinearizationConfig
) -> dict[float, np.ndarray]:
    """Per Δ of the sweep: bias-ReLU vs bias-linear alignment gaps (seed 004 fig. 11)."""
    return {d: alignment_gaps(*xl, config, c=config.constant, delta=d) for d in config.all_deltas}


def map_gaps(
    map_pair: tuple[UnitResult, UnitResult], config: EarlyLinearizationConfig
) -> np.ndarray:
    """Mean alignment gap per (σ², c) cell of the beyond-the-seed map, ``(V, C)``."""
    return np.array(
        [
            [
                float(np.mean(alignment_gaps(*map_pair, config, variance=v, c=c)))
                for c in config.map_constants
            ]
            for v in config.map_variances
        ]
    )


def width_gaps(results, config: EarlyLinearizationConfig) -> dict[int, tuple]:
    """Beyond the seed: (bias, no bias) alignment gaps on the hierarchy per hidden width, over
    the first ``map_seeds`` seeds."""
    out = {}
    for width in sorted({config.hidden, *config.map_widths}):
        units = width_pair(results, config, width)
        seeds = range(config.map_seeds)
        out[width] = tuple(
            np.array([alignment_gaps(*units, config, c=c, seed=k)[0] for k in seeds])
            for c in (config.constant, 0.0)
        )
    return out


def hierarchy_mechanism(results, config: EarlyLinearizationConfig, c: float | None = None):
    """:func:`mechanism` on the hierarchy units of ``results``."""
    return mechanism(*pair(results, Family.HIERARCHY), config, c)
