"""The early-linearization scorecard: every claim an empirical test of a seed 004 statement on
the simulated networks, declared as a :class:`~relulab.experiments.claims.ClaimSpec` with its
seed location in ``source``, the setting under which it fails (``counterexample``) and, where
stochastic, a 95 % Student-t interval over seeds. Five statements the experiment could not fail
are *checks* (``check=``: the linear theory against the linear networks, the bias mode first,
the ReLU lag, both-layer alignment on XOR, simple over complex): run and shown, never counted.

The specs live in one module per part of the seed (:mod:`.sections`): §4 and C.3
(:mod:`.sections.alignment`), §5 (:mod:`.sections.mechanism`), §6 (:mod:`.sections.consequences`)
and C.4 (:mod:`.sections.bias_magnitude`). :data:`CLAIMS` lists them in scorecard order;
:func:`metrics` adds the numbers behind them and, beyond the seed, the Δ sweep, the (σ², c) map,
the widths and eq. 14 across the c sweep.
"""

from __future__ import annotations

import math

import numpy as np

from relulab.analysis import where
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import evaluate
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.sections import (
    alignment,
    bias_magnitude,
    consequences,
    mechanism,
)
from relulab.experiments.early_linearization.sections.alignment import alignment_rows
from relulab.experiments.early_linearization.units import UNCENTRED, Family, Key, Training, pair

__all__ = ["CLAIMS", "analyse", "metrics"]

CLAIMS = (
    alignment.HIERARCHY_ALIGNED,
    alignment.HIERARCHY_PARTS,
    alignment.HIERARCHY_EXACT,
    alignment.XOR_ALIGNED,
    alignment.XOR_PARTS,
    alignment.BOTH_LAYERS_HIERARCHY,
    alignment.BOTH_LAYERS_XOR,
    mechanism.BIAS_MODE_FIRST,
    mechanism.LINEAR_THEORY,
    mechanism.BIAS_GROWS,
    mechanism.BIAS_DRIFT_UP,
    mechanism.MOST_ALWAYS_ON,
    mechanism.DRIFT_BACK,
    mechanism.MEAN_TARGET,
    mechanism.KINKS_NEGATIVE,
    mechanism.FEW_DEAD,
    mechanism.GATED_MODEL,
    mechanism.MODES_LAG,
    mechanism.DELAY_PREDICTED,
    consequences.TRACKS_LINEAR,
    consequences.BIAS_RELU_USES_LINEAR,
    consequences.BIAS_FREE_USES_XOR,
    alignment.PARALLEL_ALIGNED,
    consequences.WAITS_AT_LINEAR_LOSS,
    consequences.LOWER_RANK,
    consequences.SIMPLE_OVERREPRESENTED,
    consequences.LESS_EXPLAINED_WITHOUT_BIAS,
    consequences.SIMPLE_OVER_COMPLEX,
    bias_magnitude.ALIGNED_FOR_EVERY_C,
    bias_magnitude.LINEAR_UNITS_RISE,
    bias_magnitude.GATING_SMALL,
)

Config = EarlyLinearizationConfig


def _alignment_metrics(results: Results, config: Config) -> dict[str, float]:
    """Per alignment pair: the claims' gap (best rescaling) and the fitted κ beside eq. 14's κ
    for the variant (:func:`.measure.eq14_rescale`, its own measurement), and the
    additive-shift gap (one shift for all modes, no rescaling) with its shift — the old
    measure, a metric."""
    c, d = config.constant, config.margin_delta
    pairs = {
        "hierarchy_bias": (Family.HIERARCHY, {"c": c}),
        "hierarchy_free": (Family.HIERARCHY, {"c": 0.0}),
        "xor_bias": (Family.XOR, {"c": c}),
        "xor_free": (Family.XOR, {"c": 0.0}),
        "xor_uncentred_bias": (Family.XOR_UNCENTRED, {"c": c}),
        "xor_uncentred_free": (Family.XOR_UNCENTRED, {"c": 0.0}),
        "hierarchy_both": (Family.HIERARCHY_BOTH, {}),
        "xor_both": (Family.XOR_BOTH, {}),
        "xor_linear": (Family.XOR_PLUS_LINEAR, {"c": c, "delta": d}),
        "xor_linear_uncentred": (Family.XOR_PLUS_LINEAR_UNCENTRED, {"c": c}),
        "parallel_bias": (Family.PARALLEL, {"c": c}),
    }
    values = {}
    for name, (family, match) in pairs.items():
        rows = alignment_rows(results, config, family, additive=False, window_ends=None, **match)
        shifted = alignment_rows(results, config, family, additive=True, window_ends=None, **match)
        values[f"alignment_gap_{name}"] = float(np.mean(rows[:, 0]))
        values[f"alignment_rescale_{name}"] = float(np.mean(rows[:, 3]))
        if match.get("c", c) > 0:
            relu = pair(results, family)[0]
            values[f"eq14_rescale_{name}"] = measure.eq14_rescale(relu, config, **match)  # NaN: n/a
        values[f"alignment_shift_gap_{name}"] = float(np.mean(shifted[:, 0]))
        values[f"alignment_shift_{name}"] = float(np.mean(shifted[:, 1]))
    return values


def _reliance_metrics(results: Results, config: Config) -> dict[str, float]:
    """The share of conflict points classified by x3 (bias and bias-free ReLU) at every Δ of
    the sweep — the XOR : x3 scale ratio (hi − lo)/(2Δ) — and in the uncentred encoding."""
    values = {}
    for delta in config.all_deltas:
        ratio = measure.xor_x3_ratio(config.xor_levels, delta)
        values[f"xor_x3_ratio_delta{delta:g}"] = ratio
        for label, c in (("bias", config.constant), ("free", 0.0)):
            share = consequences.reliance(results, config, c, delta)
            values[f"xor_linear_reliance_{label}_delta{delta:g}"] = float(np.mean(share))
    key = Key.XOR_PLUS_LINEAR_UNCENTRED_RELU
    values["xor_x3_ratio_uncentred"] = measure.xor_x3_ratio(UNCENTRED, config.margin_delta)
    for label, c in (("bias", config.constant), ("free", 0.0)):
        share = consequences.reliance(results, config, c, key=key)
        values[f"xor_linear_reliance_{label}_uncentred"] = float(np.mean(share))
    return values


def _mechanism_metrics(results: Results, config: Config) -> dict[str, float]:
    """t* (smoothed), the always-on peaks, the gated log gap, eq. 14 at ḡ = f_on(t*), the
    dead share at init and at t*, the linear-task loss and the reliance on x3."""
    mech = measure.hierarchy_mechanism(results, config)
    on_ratio = measure.delay_ratio(
        mech.half_times_relu, mech.half_times_linear, mech.predicted_delay_on
    )
    relu = Training.read(results[Key.HIERARCHY_RELU])
    dead0 = relu.dead_fraction[where(relu.conditions, c=config.constant), 0]
    return {
        "t_star_mean": float(np.mean(mech.t_star)),
        "peak_always_on_mean": float(np.mean(mech.peak_on)),
        "raw_peak_always_on_mean": float(np.mean(mech.raw_peak_on)),
        "gated_window_gap_mean": float(np.nanmean(mech.gated_window_gap)),
        "gated_gap_mean": float(np.nanmean(mech.gated_gap)),
        "gated_linear_gap_mean": float(np.nanmean(mech.gated_linear_gap)),
        "delay_ratio_f_on_mean": float(np.nanmean(on_ratio)),
        "dead_at_init_mean": float(np.mean(dead0)),
        "dead_at_t_star_mean": float(np.mean(mech.dead_at_t_star)),
        "negative_bias_rising_mean": float(np.nanmean(mech.negative_bias_rising)),
        "bias_rise_gap_mean": float(np.nanmean(mech.bias_rise_gap)),
        "drift_after_plateau_mean": float(np.mean(mech.drift)),
        "plateau_minus_end_mean": float(np.mean(mech.peak_on - mech.final_on)),
        "negative_kinks_all_units_mean": float(np.mean(mech.all_negative_kinks)),
        "linear_task_loss": measure.linear_task_loss(config),
        "xor_linear_reliance_bias": float(
            np.mean(consequences.reliance(results, config, config.constant))
        ),
        "xor_linear_reliance_free": float(np.mean(consequences.reliance(results, config, 0.0))),
    }


def _parallel_metrics(results: Results, config: Config) -> dict[str, float]:
    bias, free = consequences.parallel_pair(results, config)
    return {
        f"parallel_{field}_{label}": float(np.mean(getattr(values, field)))
        for label, values in (("bias", bias), ("free", free))
        for field in ("rank", "centred_rank", "r2_simple", "r2_complex", "r2_both", "waiting")
    }


def _c_sweep_metrics(results: Results, config: Config) -> dict[str, float]:
    """Gap and peak always-on share per c; beyond the seed, eq. 14's delay ratio per c > 0."""
    gaps, peaks = measure.c_sweep(*pair(results, Family.HIERARCHY), config)
    gating = measure.gating_at_peak(results[Key.HIERARCHY_RELU], config)
    values = {}
    for c_value, g in gaps.items():
        values[f"c_sweep_gap_c{c_value:g}"] = float(np.mean(g))
        values[f"c_sweep_peak_on_c{c_value:g}"] = float(np.mean(peaks[c_value]))
        values[f"c_sweep_gating_c{c_value:g}"] = float(np.mean(gating[c_value]))
    for c_value in config.all_constants:
        if c_value > 0:
            mech = measure.hierarchy_mechanism(results, config, c=c_value)
            ratio = measure.delay_ratio(
                mech.half_times_relu, mech.half_times_linear, mech.predicted_delay
            )
            if np.isfinite(ratio).any():
                values[f"c_sweep_delay_ratio_c{c_value:g}"] = float(np.nanmean(ratio))
            values[f"c_sweep_dead_at_t_star_c{c_value:g}"] = float(np.mean(mech.dead_at_t_star))
            relu = results[Key.HIERARCHY_RELU]
            values[f"c_sweep_eq14_rescale_c{c_value:g}"] = measure.eq14_rescale(
                relu, config, c=c_value
            )
    return values


def _beyond_seed_metrics(results: Results, config: Config) -> dict[str, float]:
    """The Δ sweep (fig. 11) and, beyond the seed, the (σ², c) map and the hidden widths."""
    gaps = measure.delta_gaps(pair(results, Family.XOR_PLUS_LINEAR), config)
    values = {f"xor_linear_gap_delta{d:g}": float(np.mean(g)) for d, g in gaps.items()}
    parted = [d for d, g in gaps.items() if np.mean(g) > config.alignment_tolerance]
    values["xor_linear_parting_delta"] = float(max(parted)) if parted else 0.0
    grid = measure.map_gaps(pair(results, Family.MAP), config)
    values.update(
        {
            f"map_gap_var{v:g}_c{c:g}": float(grid[a, b])
            for a, v in enumerate(config.map_variances)
            for b, c in enumerate(config.map_constants)
        }
    )
    for width, (bias_gap, free_gap) in measure.width_gaps(results, config).items():
        values[f"width_gap_h{width}_bias"] = float(np.mean(bias_gap))
        values[f"width_gap_h{width}_free"] = float(np.mean(free_gap))
    return values


def metrics(results: Results, config: Config) -> dict[str, float]:
    """The numbers behind the claims and the beyond-the-seed sweeps (finite values only)."""
    values: dict[str, float] = {}
    for part in (
        _alignment_metrics,
        _reliance_metrics,
        _mechanism_metrics,
        _parallel_metrics,
        _c_sweep_metrics,
        _beyond_seed_metrics,
    ):
        values.update(part(results, config))
    return {k: v for k, v in values.items() if math.isfinite(v)}


def analyse(results: Results, config: Config) -> Analysis:
    """Every claim of :data:`CLAIMS` and the metrics, from the stored units."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
