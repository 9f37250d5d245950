"""Measurements on the stored runs: one number (or array) per network, paired across the ReLU
and the linear unit of a task by position (both units list the same conditions in the same
order, and network k of a variant starts from the same weights in both).

Everything here reads the units through their views (:mod:`.units`) and calls the library —
:mod:`relulab.theory.deep_linear` for the modes and closed forms, :mod:`relulab.analysis` for
the alignment measure — and returns NumPy arrays; the claims are built in :mod:`.claims`.
The readings of what the networks learned (§6: reliance on x3, the parallel task's
representations) live in :mod:`.readouts`, the alignment rows and eq. 14's slow-down in
:mod:`.rescaling`; both are re-exported here. The small pure functions
(:func:`bias_mode_ratio`, :func:`delay_ratio`, :func:`plateau_step`,
:func:`mean_target_deviation`, :func:`alignment_table`, :func:`decline_after_plateau`) are what
the claims judge, so the controls in
``tests/experiments/early_linearization/test_early_linearization.py`` can feed them closed-form
data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from relulab.analysis import early_window, interpolated_crossing, running_mean, where
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.readouts import (
    Parallel,
    conflict_points,
    cube_function,
    forward,
    linear_feature_reliance,
    linear_task_loss,
    parallel,
    xor_x3_ratio,
)
from relulab.experiments.early_linearization.rescaling import (
    alignment_gaps,
    alignment_table,
    alignments,
    eq14_rescale,
    linear_windows,
    rescale_bound,
)
from relulab.experiments.early_linearization.scoring import diverged
from relulab.experiments.early_linearization.units import (
    Family,
    Stored,
    Training,
    Trajectory,
    as_view,
    augmented_task,
    pair,
    width_pair,
)
from relulab.records.units import UnitResult
from relulab.theory.deep_linear import (
    LinearModes,
    aligned_modes,
    function_mode_strengths,
    gated_linear_prediction,
    learning_time_constant,
    mode_components,
    mode_loss,
    mode_strength_unbalanced,
    relu_hitting_delay,
)

__all__ = [
    "Mechanism",
    "Parallel",
    "alignment_gaps",
    "alignment_table",
    "alignments",
    "bias_mode_ratio",
    "c_sweep",
    "conflict_points",
    "cube_function",
    "decline_after_plateau",
    "delay_ratio",
    "delta_gaps",
    "eq14_rescale",
    "exact_alignments",
    "forward",
    "gating_at_peak",
    "linear_feature_reliance",
    "linear_task_loss",
    "linear_windows",
    "linearization_index",
    "hierarchy_mechanism",
    "hierarchy_modes",
    "map_gaps",
    "mean_target_deviation",
    "mechanism",
    "mode_half_times",
    "parallel",
    "peak_always_on",
    "plateau_step",
    "rescale_bound",
    "width_gaps",
    "xor_x3_ratio",
]


def hierarchy_modes(config: EarlyLinearizationConfig, c: float) -> tuple[np.ndarray, LinearModes]:
    """Augmented hierarchy inputs ``X̃ (P, P+1)`` and the data's modes (seed 004 eq. 4)."""
    X, Y = augmented_task("hierarchy", config, c)
    return X, aligned_modes(X.T, Y.T)


def mode_trajectories(
    unit: Stored, i: int, X: np.ndarray, modes: LinearModes, relu: bool
) -> np.ndarray:
    """Function mode strengths :math:`a_\\alpha(t)` ``(T, m)`` of network ``i`` from its outputs
    (equal to :math:`U^\\top W^2\\tilde W^1 V` for a linear network)."""
    unit = as_view(unit, Trajectory)
    _, outputs = forward(unit.param_0[i], unit.param_1[i], X, relu)
    return function_mode_strengths(outputs, X.T, modes)


def mode_half_times(steps: np.ndarray, strengths: np.ndarray, modes: LinearModes) -> np.ndarray:
    """Per mode, the interpolated step at which :math:`a_\\alpha` first reaches half its
    asymptote :math:`s_\\alpha/d_\\alpha` (NaN if never)."""
    half = 0.5 * modes.asymptotes
    return np.array(
        [interpolated_crossing(steps, -strengths[:, a], -half[a]) for a in range(modes.n_modes)]
    )


def theory_trajectory(
    unit: Stored, i: int, modes: LinearModes, times: np.ndarray, tau: float
) -> np.ndarray:
    """Closed-form :math:`a_\\alpha(t)` from network ``i``'s initial weights
    (:func:`~relulab.theory.deep_linear.mode_strength_unbalanced`, decoupled modes)."""
    unit = as_view(unit, Trajectory)
    _, p0, q0 = mode_components(unit.param_1[i, 0], unit.param_0[i, 0], modes)
    return mode_strength_unbalanced(np.asarray(times)[:, None], modes.s, modes.d, p0, q0, tau)[0]


def exact_alignments(
    relu: Stored, config: EarlyLinearizationConfig, c: float | None = None
) -> np.ndarray:
    """Per bias-ReLU hierarchy network, :func:`alignment_table` of its loss against the exact
    deep-linear solution (eq. 7, :func:`theory_trajectory` from its own initial weights — the
    linear twin's) over that solution's early window (seed fig. 2B: "the good agreement of
    ReLU networks with exact solutions"), ``(n, 4)``."""
    c = config.constant if c is None else c
    relu = as_view(relu, Trajectory)
    X, modes = hierarchy_modes(config, c)
    tau = learning_time_constant(X.shape[0], config.lr)
    index = where(relu.conditions, c=c)
    exact = np.stack(
        [mode_loss(modes, theory_trajectory(relu, i, modes, relu.steps, tau)) for i in index]
    )
    bound = rescale_bound(relu, config, c=c)
    return alignment_table(relu.steps, relu.loss[index], exact, config, max_rescale=bound)


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


def plateau_step(steps: np.ndarray, loss: np.ndarray, start: float, end: float) -> int:
    """The bias-mode plateau: the recording in ``[start, end]`` (from the bias mode's T½ to
    the next mode's) where the loss falls slowest per step — where the bias mode is learned
    and the other modes have not yet risen (seed 004 §5.2, fig. 3D). Outside that range (or
    when it holds no recording) the recording nearest ``start``.

    Example:
        >>> t = np.arange(0.0, 10.0)
        >>> plateau_step(t, np.array([9, 8, 5, 4.9, 4.8, 4.7, 2, 1, 1, 1.0]), 2, 6)
        3
    """
    inside = np.flatnonzero((steps >= start) & (steps <= end) & (np.arange(len(steps)) > 0))
    if inside.size == 0 or not (np.isfinite(start) and np.isfinite(end)):
        return int(np.argmin(np.abs(steps - start))) if np.isfinite(start) else 0
    rate = np.abs(loss[inside] - loss[inside - 1]) / (steps[inside] - steps[inside - 1])
    return int(inside[np.argmin(rate)])


def mean_target_deviation(outputs: np.ndarray, Y: np.ndarray) -> float:
    """``max_i ‖ŷ_i − ȳ‖/‖ȳ‖`` for outputs ``(n_out, P)``: how far the network function is from
    the mean target on its worst input."""
    mean_target = Y.mean(axis=0)
    deviation = np.linalg.norm(outputs.T - mean_target, axis=1) / np.linalg.norm(mean_target)
    return float(np.max(deviation))


def linearization_index(steps: np.ndarray, on: np.ndarray, window_steps: float) -> int:
    """t* as a recording index: the first recording where the *smoothed* always-on fraction
    (:func:`relulab.analysis.running_mean`) reaches its maximum (seed §5.4's argmin{t : f_on(t)
    = max f_on}, read off a running mean so that one noisy recording does not decide it)."""
    return int(np.argmax(running_mean(steps, on, window_steps)))


def decline_after_plateau(steps: np.ndarray, on: np.ndarray, j: int, window_steps: float) -> float:
    """How far the always-on share falls over the rest of training after its plateau (seed 004
    Fig. 3C: "with further training … neurons slowly drift back"): minus the least-squares slope
    of the raw share over the recordings from ``steps[j] + window_steps/2`` (past the running
    mean that chose t* = ``steps[j]``) to the end, times that span. On a share that stays flat
    with noise its expectation is 0, whatever the noise; 0 when fewer than 3 recordings are
    left (no further training after the plateau).

    Example:
        >>> t = np.arange(0.0, 11.0)
        >>> round(decline_after_plateau(t, np.r_[0.2, 0.8, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55,
        ...                                         0.5, 0.45, 0.4], 1, 2.0), 3)
        0.4
    """
    keep = steps >= steps[j] + window_steps / 2
    if keep.sum() < 3:
        return 0.0
    slope = np.polyfit(steps[keep], on[keep], 1)[0]
    return float(-slope * (steps[keep][-1] - steps[keep][0]))


@dataclass
class Mechanism:
    """Per bias-ReLU hierarchy network (seed 004 §5.3–5.4, fig. 3, 4, 12); NaN throughout for a
    network that diverged (:mod:`.scoring`).

    Attributes:
        t_star: linearization time, first step where the smoothed always-on fraction peaks.
        peak_on: smoothed always-on fraction at :math:`t^\\ast`.
        final_on: smoothed always-on fraction at the end.
        raw_peak_on: the raw always-on fraction's maximum (the old reading, a metric).
        drift: the always-on share's decline after the plateau (:func:`decline_after_plateau`).
        growth_ratio: (‖b(t*)‖/‖b(0)‖) / (‖W1(t*)‖/‖W1(0)‖).
        negative_kinks: share of **live** units (active on some input at t*) with kink
            :math:`-b_j/\\lVert w_j\\rVert < 0` at t*.
        all_negative_kinks: the same share over all units (dead ones included; a metric).
        dead_at_t_star: share of units dead (inactive on every input) at t*.
        mean_function_gap: max over inputs of ‖ŷ_i − ȳ‖/‖ȳ‖ on the bias-mode plateau
            (:func:`plateau_step`).
        gated_window_gap: largest |Δ ln L| between the gated linear model from t* and the
            simulation over the gated model's early window (until it has made
            ``window_fraction`` of its drop from t*): the alignment claims' log scale and window.
        gated_gap: the same down to ``loss_floor``·L(0) instead (a metric).
        gated_linear_gap: largest |L_gated − L_sim| / L(0) from t* on (fig. 4's plotting scale,
            a metric).
        negative_bias_rising: among the units alive at init with a negative initial bias, the
            share whose bias rose by t* (appendix F.2's upward drift).
        bias_rise_gap: mean rise of the bias up to t* of those units minus that of the live
            units with a positive initial bias (F.2: they drift upward "slower").
        item_spread: on the plateau, max_i ‖ŷ_i − mean_j ŷ_j‖/‖ȳ‖.
        plateau_step: the recorded step of the bias-mode plateau (:func:`plateau_step`).
        half_times_relu, half_times_linear: per mode (T½ of :func:`mode_half_times`).
        predicted_delay: per mode, seed eq. 14 with the kept fraction 1 − dead(0).
        predicted_delay_on: per mode, eq. 14 with ḡ = f_on(t*) (a metric).
        theory_rel_error: per mode |T½(linear sim)/T½(theory) − 1|.
        diverged_relu, diverged_linear: per network, whether it (its linear twin) diverged.
    """

    t_star: np.ndarray
    peak_on: np.ndarray
    final_on: np.ndarray
    raw_peak_on: np.ndarray
    drift: np.ndarray
    growth_ratio: np.ndarray
    negative_kinks: np.ndarray
    all_negative_kinks: np.ndarray
    dead_at_t_star: np.ndarray
    mean_function_gap: np.ndarray
    gated_window_gap: np.ndarray
    gated_gap: np.ndarray
    gated_linear_gap: np.ndarray
    negative_bias_rising: np.ndarray
    bias_rise_gap: np.ndarray
    item_spread: np.ndarray
    plateau_step: np.ndarray
    half_times_relu: np.ndarray
    half_times_linear: np.ndarray
    predicted_delay: np.ndarray
    predicted_delay_on: np.ndarray
    theory_rel_error: np.ndarray
    diverged_relu: np.ndarray
    diverged_linear: np.ndarray
    bias_mode: int


def _gated_gaps(
    relu: Trajectory,
    i: int,
    j: int,
    X: np.ndarray,
    modes: LinearModes,
    tau: float,
    config: EarlyLinearizationConfig,
) -> tuple[float, float, float]:
    """The gated linear model from recording ``j`` against network ``i``: the largest log gap
    over the model's early window (the claim), down to the loss floor, and on the linear scale
    over L(0) (metrics)."""
    W1, W2 = relu.param_0[i, j], relu.param_1[i, j]
    gate = np.all(W1.astype(np.float64) @ X.T > 0, axis=1)
    times = relu.steps[j:] - relu.steps[j]
    prediction = gated_linear_prediction(W2, W1, gate, modes, times, tau, method="unbalanced")
    simulated = relu.loss[i, j:]
    linear_gap = float(np.max(np.abs(prediction.loss - simulated)) / relu.loss[i, 0])
    log_gap = np.abs(np.log(np.maximum(prediction.loss, 1e-300)) - np.log(simulated))
    inside = times <= early_window(times, prediction.loss, config.window_fraction)
    window_gap = float(np.max(log_gap[inside]))
    keep = simulated > config.loss_floor * relu.loss[i, 0]
    floor_gap = float(np.max(log_gap[keep])) if keep.any() else float("nan")
    return window_gap, floor_gap, linear_gap


def _bias_drift(bias: np.ndarray, alive: np.ndarray, j: int) -> tuple[float, float]:
    """F.2's upward drift from the hidden biases ``(T, N)``: among the units ``alive`` at init
    with a negative initial bias, the share whose bias rose by recording ``j``; and their mean
    rise minus that of the live units with a positive initial bias.

    Example:
        >>> b = np.array([[-0.1, -0.2, 0.1, 0.2], [-0.05, -0.3, 0.3, 0.4]])
        >>> rising, gap = _bias_drift(b, np.ones(4, bool), 1)
        >>> rising, round(gap, 3)
        (0.5, -0.225)
    """
    rise = bias[j] - bias[0]
    negative, positive = alive & (bias[0] < 0), alive & (bias[0] > 0)
    if not (negative.any() and positive.any()):
        return float("nan"), float("nan")
    gap = float(np.mean(rise[negative]) - np.mean(rise[positive]))
    return float(np.mean(rise[negative] > 0)), gap


def _unit_row(
    relu: Trajectory, i: int, c: float, j: int, k: int, X: np.ndarray, Y: np.ndarray
) -> dict:
    """Norm growth, kinks and dead units at t* (recording ``j``) and the function on the
    bias-mode plateau (recording ``k``) of bias-ReLU network ``i``."""
    W1 = relu.param_0[i].astype(np.float64)
    bias, weights = c * W1[:, :, -1], W1[:, :, :-1]
    growth_b = np.linalg.norm(bias[j]) / np.linalg.norm(bias[0])
    growth_w = np.linalg.norm(weights[j]) / np.linalg.norm(weights[0])
    kinks = -bias[j] / np.linalg.norm(weights[j], axis=1)
    live = np.any(W1[j] @ X.T > 0, axis=1)
    rising, rise_gap = _bias_drift(bias, np.any(W1[0] @ X.T > 0, axis=1), j)
    _, outputs = forward(W1[k], relu.param_1[i, k], X, relu=True)
    mean_target = Y.mean(axis=0)
    spread = outputs.T - outputs.mean(axis=1)
    return {
        "growth_ratio": growth_b / growth_w,
        "negative_kinks": float(np.mean(kinks[live] < 0)) if live.any() else float("nan"),
        "all_negative_kinks": float(np.mean(kinks < 0)),
        "dead_at_t_star": float(np.mean(~live)),
        "mean_function_gap": mean_target_deviation(outputs, Y),
        "item_spread": float(np.max(np.linalg.norm(spread, axis=1)) / np.linalg.norm(mean_target)),
        "negative_bias_rising": rising,
        "bias_rise_gap": rise_gap,
    }


def _on_row(relu: Trajectory, i: int, config: EarlyLinearizationConfig) -> dict:
    """t*, the smoothed always-on share at t* and at the end, the raw peak, the drift after."""
    on = relu.always_on_fraction[i]
    smooth = running_mean(relu.steps, on, config.smooth_steps)
    j = int(np.argmax(smooth))
    return {
        "t_star": relu.steps[j],
        "peak_on": smooth[j],
        "final_on": smooth[-1],
        "raw_peak_on": float(np.max(on)),
        "drift": decline_after_plateau(relu.steps, on, j, config.smooth_steps),
        "j": j,
    }


def _mode_row(
    relu: Trajectory,
    linear: Trajectory,
    i: int,
    X: np.ndarray,
    modes: LinearModes,
    tau: float,
    fine: np.ndarray,
    on_at_t_star: float,
) -> dict:
    """Mode half-times of ReLU and linear network ``i``, eq. 14's delays, and the closed form's
    error on the linear network."""
    t_relu = mode_half_times(relu.steps, mode_trajectories(relu, i, X, modes, relu=True), modes)
    t_lin = mode_half_times(linear.steps, mode_trajectories(linear, i, X, modes, relu=False), modes)
    t_theory = mode_half_times(fine, theory_trajectory(linear, i, modes, fine, tau), modes)
    _, p0, _ = mode_components(linear.param_1[i, 0], linear.param_0[i, 0], modes)
    kept = 1.0 - relu.dead_fraction[i, 0]
    return {
        "half_times_relu": t_relu,
        "half_times_linear": t_lin,
        "predicted_delay": relu_hitting_delay(modes.s, modes.d, p0, tau, kept),
        "predicted_delay_on": relu_hitting_delay(
            modes.s, modes.d, p0, tau, max(on_at_t_star, 1e-6)
        ),
        "theory_rel_error": np.abs(t_lin / t_theory - 1.0),
    }


def _network_row(
    relu: Trajectory,
    linear: Trajectory,
    i: int,
    c: float,
    config: EarlyLinearizationConfig,
    setting: tuple[np.ndarray, np.ndarray, LinearModes, float, np.ndarray, int],
) -> dict:
    """Every :class:`Mechanism` field of network ``i`` (``setting``: the data, modes and
    grids shared by the networks)."""
    X, Y, modes, tau, fine, bias = setting
    row = _on_row(relu, i, config)
    j = row.pop("j")
    row |= _mode_row(relu, linear, i, X, modes, tau, fine, row["peak_on"])
    half = row["half_times_relu"]
    others = np.delete(half, bias)
    k = plateau_step(relu.steps, relu.loss[i], half[bias], np.nanmin(others))
    row |= _unit_row(relu, i, c, j, k, X, Y)
    row["plateau_step"] = relu.steps[k]
    gaps = _gated_gaps(relu, i, j, X, modes, tau, config)
    row["gated_window_gap"], row["gated_gap"], row["gated_linear_gap"] = gaps
    return row


def _blank_row(modes: LinearModes) -> dict:
    """A row of NaN for a mechanism whose every network diverged."""
    per_mode = ("half_times_relu", "half_times_linear", "predicted_delay", "predicted_delay_on")
    names = [f for f in Mechanism.__dataclass_fields__ if not f.startswith(("diverged", "bias"))]
    return {
        name: np.full(modes.n_modes, np.nan) if name in per_mode + ("theory_rel_error",) else np.nan
        for name in names
    }


def mechanism(
    relu: Stored, linear: Stored, config: EarlyLinearizationConfig, c: float | None = None
) -> Mechanism:
    """The §5.3–5.4 measurements on every bias-ReLU hierarchy network with input constant ``c``
    (default ``config.constant``; any c > 0 of the sweep). A network whose ReLU or linear run
    diverged is not measured: its row is NaN (it ranks last in every claim, :mod:`.scoring`)."""
    c = config.constant if c is None else c
    relu, linear = as_view(relu, Trajectory), as_view(linear, Trajectory)
    X, modes = hierarchy_modes(config, c)
    Y = augmented_task("hierarchy", config, c)[1]
    tau = learning_time_constant(X.shape[0], config.lr)
    fine = np.linspace(0.0, float(relu.steps[-1]), 4001)
    setting = X, Y, modes, tau, fine, bias_mode_index(modes)
    index = list(where(relu.conditions, c=c))
    broken_relu, broken_linear = diverged(relu)[index], diverged(linear)[index]
    rows = [
        None if bad_r or bad_l else _network_row(relu, linear, i, c, config, setting)
        for i, bad_r, bad_l in zip(index, broken_relu, broken_linear, strict=True)
    ]
    template = next((row for row in rows if row is not None), None) or _blank_row(modes)
    fields = {
        key: np.array([np.full(np.shape(v), np.nan) if row is None else row[key] for row in rows])
        for key, v in template.items()
    }
    return Mechanism(
        **fields,
        diverged_relu=broken_relu,
        diverged_linear=broken_linear,
        bias_mode=setting[-1],
    )


def peak_always_on(relu: Stored, config: EarlyLinearizationConfig) -> dict[float, np.ndarray]:
    """Per c of the sweep, the peak of the smoothed always-on fraction of every ReLU network
    (its value at t*, :func:`linearization_index`), in seed order."""
    relu = as_view(relu, Training)
    on = relu.always_on_fraction
    return {
        c: np.array([running_mean(relu.steps, on[i], config.smooth_steps).max() for i in index])
        for c in config.all_constants
        for index in [where(relu.conditions, c=c)]
    }


def gating_at_peak(relu: Stored, config: EarlyLinearizationConfig) -> dict[float, np.ndarray]:
    """Per c of the sweep, the share of units that gate (active on some inputs, not on all) at
    each ReLU network's t* — where the running mean of its always-on share peaks — read off the
    running means of the always-on and dead shares (seed 004 Fig. 10, right-centre)."""
    relu = as_view(relu, Training)

    def at_peak(i: int) -> float:
        on = running_mean(relu.steps, relu.always_on_fraction[i], config.smooth_steps)
        dead = running_mean(relu.steps, relu.dead_fraction[i], config.smooth_steps)
        j = int(np.argmax(on))
        return float(1.0 - on[j] - dead[j])

    return {
        c: np.array([at_peak(i) for i in where(relu.conditions, c=c)]) for c in config.all_constants
    }


def c_sweep(
    relu: Stored, linear: Stored, config: EarlyLinearizationConfig
) -> tuple[dict[float, np.ndarray], dict[float, np.ndarray]]:
    """Per c of the sweep: alignment gaps and peak always-on fractions, one per seed."""
    gaps = {c: alignment_gaps(relu, linear, config, c=c) for c in config.all_constants}
    return gaps, peak_always_on(relu, config)


def delta_gaps(
    xl: tuple[Stored, Stored], config: EarlyLinearizationConfig
) -> dict[float, np.ndarray]:
    """Per Δ of the sweep: bias-ReLU vs bias-linear alignment gaps (seed 004 fig. 11)."""
    return {d: alignment_gaps(*xl, config, c=config.constant, delta=d) for d in config.all_deltas}


def map_gaps(map_pair: tuple[Stored, Stored], config: EarlyLinearizationConfig) -> np.ndarray:
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


def width_gaps(
    results: Mapping[str, UnitResult], config: EarlyLinearizationConfig
) -> dict[int, tuple]:
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


def hierarchy_mechanism(
    results: Mapping[str, UnitResult], config: EarlyLinearizationConfig, c: float | None = None
) -> Mechanism:
    """:func:`mechanism` on the hierarchy units of ``results``."""
    return mechanism(*pair(results, Family.HIERARCHY), config, c)
