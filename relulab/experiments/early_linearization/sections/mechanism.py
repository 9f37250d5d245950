"""Seed 004 §5: the mechanism on the bias-ReLU hierarchy networks — the bias mode learned first,
the exact linear dynamics, biases outgrowing weights, units driven always-on and drifting back,
the early mean-target function, negative kinks, the gated linear model from t*, and the
hitting-time delays (:class:`.measure.Mechanism`, one row per network)."""

from __future__ import annotations

import numpy as np

from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, Below, Inside
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.seed004 import SEED, finite_mean_ci

__all__ = [
    "BIAS_GROWS",
    "BIAS_MODE_FIRST",
    "DELAY_PREDICTED",
    "DRIFT_BACK",
    "FEW_DEAD",
    "GATED_MODEL",
    "KINKS_NEGATIVE",
    "LINEAR_THEORY",
    "MEAN_TARGET",
    "MODES_LAG",
    "MOST_ALWAYS_ON",
]

Config = EarlyLinearizationConfig


def _reading(results: Results, config: Config, values, detail: str = "") -> Reading:
    return Reading(finite_mean_ci(values), detail=detail, scale=scale(config))


# --- bias-mode-learned-first -------------------------------------------------------------------
def _bias_mode_first(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    ratio = measure.bias_mode_ratio(mech.half_times_relu, mech.bias_mode)
    half = np.round(mech.half_times_relu[:, mech.bias_mode]).tolist()
    return _reading(results, config, ratio, f"bias-mode T½ {half}")


BIAS_MODE_FIRST = ClaimSpec(
    "bias-mode-learned-first",
    "The bias mode (top singular value s0 = √(c² + 1/P)·‖ȳ‖) is learned first.",
    source=f"{SEED} §5.2, Prop. 1, eq. 5; Fig. 3D",
    criterion=Below("T½(bias mode) / earliest T½ of the other modes, bias-ReLU, hierarchy", 1.0),
    measure=_bias_mode_first,
    note="T½: a_α reaches half of s_α/d_α [I]",
    figure="modes.png",
)


# --- linear-theory-matches-linear-networks -----------------------------------------------------
def _linear_theory(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    per_mode = np.round(np.nanmean(mech.theory_rel_error, 0), 3)
    error = np.nanmean(mech.theory_rel_error, axis=1)
    return _reading(results, config, error, f"per mode (mean over seeds): {per_mode}")


LINEAR_THEORY = ClaimSpec(
    "linear-theory-matches-linear-networks",
    "The exact deep-linear solutions (eq. 7) describe the simulated linear networks.",
    source=f"{SEED} appendix B, eq. 7/22; Fig. 2B",
    criterion=Below("|T½(simulated)/T½(closed form) − 1|, mean over modes, linear nets", 0.1),
    measure=_linear_theory,
    note="closed form from each net's initial weights, decoupled modes [D]; 10 % [I]",
    figure="modes.png",
)


# --- bias-grows-faster-than-weights ------------------------------------------------------------
def _bias_grows(results: Results, config: Config) -> Reading:
    return _reading(results, config, measure.hierarchy_mechanism(results, config).growth_ratio)


BIAS_GROWS = ClaimSpec(
    "bias-grows-faster-than-weights",
    "In the beginning of training the biases grow faster than the weights.",
    source=f"{SEED} §5.3, Fig. 3A",
    criterion=Above("(‖b(t*)‖/‖b(0)‖) / (‖W1(t*)‖/‖W1(0)‖), bias-ReLU hierarchy", 1.0),
    measure=_bias_grows,
    scope="in the beginning of training (read as up to the linearization time t*)",
    note="'early' read as up to t* [I]",
    figure="mechanism.png",
)


# --- most-units-always-on-early ----------------------------------------------------------------
def _most_always_on(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    raw = np.round(mech.raw_peak_on, 3).tolist()
    detail = f"t* per seed: {mech.t_star.tolist()}; raw (unsmoothed) peaks: {raw}"
    return _reading(results, config, mech.peak_on, detail)


MOST_ALWAYS_ON = ClaimSpec(
    "most-units-always-on-early",
    "Early in training most units are driven to be always active (linear regime).",
    source=f"{SEED} §5.3, Fig. 3C",
    criterion=lambda c: Above(
        f"peak of the always-on fraction's running mean over {c.smooth_steps} steps (at t*)",
        c.majority,
    ),
    measure=_most_always_on,
    scope="early in training (at the linearization time t*, where the always-on share peaks)",
    note="'most' = more than half [D]; running-mean window [I]",
    figure="mechanism.png",
)


# --- units-drift-back --------------------------------------------------------------------------
def _drift_back(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    detail = f"end of the running mean per seed: {np.round(mech.final_on, 3).tolist()}"
    return _reading(results, config, mech.peak_on - mech.final_on, detail)


DRIFT_BACK = ClaimSpec(
    "units-drift-back",
    "With further training units slowly drift back towards the non-linear regime.",
    source=f"{SEED} §5.3, Fig. 3C",
    criterion=Above(
        "always-on fraction's running mean: its plateau (at t*) minus its end value", 0.0
    ),
    measure=_drift_back,
    scope="with further training: after t*, to the end of the horizon",
    note="running-mean window [I]",
    figure="mechanism.png",
)


# --- early-function-is-mean-target -------------------------------------------------------------
def _mean_target(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    spread = np.round(mech.item_spread, 3).tolist()
    detail = "on the bias-mode plateau; spread of the items' outputs about their mean, /‖ȳ‖: "
    detail += f"{spread}"
    return _reading(results, config, mech.mean_function_gap, detail)


MEAN_TARGET = ClaimSpec(
    "early-function-is-mean-target",
    "The early bias-driven network function equals the mean target ȳ for every input.",
    source=f"{SEED} §5.2, Fig. 3D",
    criterion=lambda c: Below(
        "max_i ‖ŷ_i − ȳ‖/‖ȳ‖ on the bias-mode plateau (slowest loss decrease between the bias "
        "mode's T½ and the next mode's)",
        c.alignment_tolerance,
    ),
    measure=_mean_target,
    scope="early training: the bias-driven function, before the other modes are learned",
    note="tolerance and plateau timing [I]",
    figure="mechanism.png",
)


# --- kinks-go-negative -------------------------------------------------------------------------
def _kinks(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    every = np.round(mech.all_negative_kinks, 3).tolist()
    return _reading(results, config, mech.negative_kinks, f"over all units: {every}")


KINKS_NEGATIVE = ClaimSpec(
    "kinks-go-negative",
    "The vast majority of kink values −b_j/‖w_j‖ rapidly grow negative early in learning.",
    source=f"{SEED} §5.3, eq. 12; appendix C.6, Fig. 12",
    criterion=lambda c: Above(
        "share of live units (active on some input) with a negative kink at t*", c.vast_majority
    ),
    measure=_kinks,
    scope="early in learning (read at t*), apart from the units dead ('a small subset', §5.3)",
    note="'vast majority' = 80 % [I]",
    figure="mechanism.png",
)


# --- few-units-dead ----------------------------------------------------------------------------
def _few_dead(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    return _reading(results, config, mech.dead_at_t_star)


FEW_DEAD = ClaimSpec(
    "few-units-dead",
    "Only a small subset of units become dead (inactive on every input) while the majority "
    "enter the linear regime.",
    source=f"{SEED} §5.3 ('apart from a small subset of neurons that become dead neurons')",
    criterion=lambda c: Below("share of units dead at t*", c.small_subset),
    measure=_few_dead,
    scope="early in learning (read at t*)",
    note="'small subset' = at most a quarter [I]",
    figure="mechanism.png",
)


# --- gated-linear-model-matches ----------------------------------------------------------------
def _gated(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    log_gap = np.round(mech.gated_gap, 3).tolist()
    detail = f"largest |Δ ln L| down to the loss floor per seed (a metric): {log_gap}"
    return _reading(results, config, mech.gated_linear_gap, detail)


GATED_MODEL = ClaimSpec(
    "gated-linear-model-matches",
    "From t* on, the gated linear model W2 G W̃1 with the closed-form mode dynamics matches the "
    "ReLU network (almost) exactly.",
    source=f"{SEED} §5.4, eq. 15; Fig. 4",
    criterion=lambda c: Below(
        "largest |L_gated − L_sim| / L(0) from t* on (fig. 4's linear scale)",
        c.alignment_tolerance,
    ),
    measure=_gated,
    scope="from the linearization time t* (smoothed) on",
    note="unbalanced closed form [D]; tolerance and running-mean window [I]",
    figure="gated.png",
)


# --- relu-modes-lag-linear ---------------------------------------------------------------------
def _modes_lag(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    delay = mech.half_times_relu - mech.half_times_linear
    per_mode = np.round(np.nanmean(delay, 0), 1)
    detail = f"per mode (mean over seeds): {per_mode}"
    return _reading(results, config, np.nanmean(delay, axis=1), detail)


MODES_LAG = ClaimSpec(
    "relu-modes-lag-linear",
    "ReLU modes are learned after the linear network's (a positive hitting-time delay).",
    source=f"{SEED} §5.4, eq. 14; appendix F.4",
    criterion=Above("T½(ReLU) − T½(linear), mean over modes, same seed", 0.0, unit="steps"),
    measure=_modes_lag,
    unit="steps",
    figure="modes.png",
)


# --- delay-predicted-by-gating -----------------------------------------------------------------
def _delay_predicted(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    ratio = measure.delay_ratio(mech.half_times_relu, mech.half_times_linear, mech.predicted_delay)
    predicted = np.round(np.nanmean(mech.predicted_delay, 0), 1)
    on_ratio = measure.delay_ratio(
        mech.half_times_relu, mech.half_times_linear, mech.predicted_delay_on
    )
    detail = f"predicted per mode (mean over seeds): {predicted}; with ḡ = f_on(t*) instead: "
    detail += f"ratio {np.round(np.nanmean(on_ratio), 2)} (a metric)"
    return _reading(results, config, ratio, detail)


DELAY_PREDICTED = ClaimSpec(
    "delay-predicted-by-gating",
    "Eq. 14 predicts the delay from the fraction of units gated off at initialisation.",
    source=f"{SEED} §5.4, eq. 14; appendix F.3–F.4",
    criterion=lambda c: Inside(
        "Σ measured delay / Σ predicted (ḡ = share of units alive at init)",
        1.0 / c.delay_factor,
        c.delay_factor,
    ),
    measure=_delay_predicted,
    note="ḡ = kept fraction, as the derivation uses it [D]; factor-2 band [I]",
    figure="modes.png",
)
