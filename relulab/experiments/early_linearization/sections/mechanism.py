"""Seed 004 §5: the mechanism on the bias-ReLU hierarchy networks — the bias mode learned first,
the exact linear dynamics, biases outgrowing weights, units driven always-on and drifting back,
the early mean-target function, negative kinks, the gated linear model from t*, and the
hitting-time delays (:class:`.measure.Mechanism`, one row per network).

Every reading counts the networks it read under the study's divergence policy (:mod:`..scoring`):
a network whose ReLU run (or, where the claim reads it, its linear twin) diverged ranks last."""

from __future__ import annotations

import numpy as np

from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, AllOf, Below, Inside
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.scoring import counts_text, group_counts, scored_ci
from relulab.experiments.early_linearization.units import Family, pair
from relulab.experiments.seed004 import SEED

__all__ = [
    "BIAS_DRIFT_UP",
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


WEAK_BIAS = "a hidden bias too weak to push the units on (c = 0.01)"


def _reading(
    results: Results,
    config: Config,
    mech: measure.Mechanism,
    values: np.ndarray,
    detail: str = "",
    twins: bool = False,
) -> Reading:
    """The mean over the bias-ReLU hierarchy networks of ``values`` (one per network, from
    ``mech``) under the divergence policy; ``twins``: the claim also reads each network's
    linear twin (counted, and a diverged twin ranks the pair last)."""
    relu, linear = pair(results, Family.HIERARCHY)
    units = {"ReLU": relu, "linear": linear} if twins else {"ReLU": relu}
    counts, _ = group_counts(units, c=config.constant)
    mask = mech.diverged_relu | (mech.diverged_linear if twins else False)
    estimate, note = scored_ci(values, mask)
    detail = "; ".join(filter(None, [detail, note, counts_text(counts)]))
    return Reading(estimate, detail=detail, scale=scale(config), diverged=counts)


# --- bias-mode-learned-first -------------------------------------------------------------------
def _bias_mode_first(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    ratio = measure.bias_mode_ratio(mech.half_times_relu, mech.bias_mode)
    half = np.round(mech.half_times_relu[:, mech.bias_mode]).tolist()
    return _reading(results, config, mech, ratio, f"bias-mode T½ {half}")


BIAS_MODE_FIRST: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "bias-mode-learned-first",
    "The bias mode (top singular value s0 = √(c² + 1/P)·‖ȳ‖) is learned first.",
    source=f"{SEED} §5.2, Prop. 1, eq. 5; Fig. 3D",
    criterion=Below("T½(bias mode) / earliest T½ of the other modes, bias-ReLU, hierarchy", 1.0),
    measure=_bias_mode_first,
    note="T½: a_α reaches half of s_α/d_α [I]",
    figure="modes.png",
    check="no setting the study's units can run makes it fail: on the one-hot hierarchy ȳ's "
    "mode is the top singular mode of Σ̃yx at every c (Prop. 1: s0 = √(c² + 1/P)‖ȳ‖ ≥ ‖ȳ‖/√P "
    "= 0.66 against 0.43 next, and with 8 items too), and the ReLU networks learn it first even "
    "where they do not linearise (ratio 0.71 at c = 0.01, 0.68 at 0.1, 0.08 at 3, 0.24 at "
    "σ² = 0.02, 0.20 with 8 items, 0.27 at width 256). It fails only on targets with a small "
    "mean (y − 0.9ȳ: ratio 1.5), a data set no task of the study has",
)


# --- linear-theory-matches-linear-networks -----------------------------------------------------
def _linear_theory(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    per_mode = np.round(np.nanmean(mech.theory_rel_error, 0), 3)
    error = np.nanmean(mech.theory_rel_error, axis=1)
    detail = f"per mode (mean over seeds): {per_mode}"
    return _reading(results, config, mech, error, detail, twins=True)


LINEAR_THEORY: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "linear-theory-matches-linear-networks",
    "The exact deep-linear solutions (eq. 7) describe the simulated linear networks.",
    source=f"{SEED} appendix B, eq. 7/22; Fig. 2B",
    criterion=Below("|T½(simulated)/T½(closed form) − 1|, mean over modes, linear nets", 0.1),
    measure=_linear_theory,
    note="closed form from each net's initial weights, decoupled modes [D]; 10 % [I]",
    figure="modes.png",
    check="relulab's theory against its own simulation of the same model: eq. 7 "
    "(relulab.theory.deep_linear, unbalanced form from each network's own initial weights) is "
    "the gradient flow of exactly the linear network the engine trains; what is left is the GD "
    "step (P·lr·s ≈ 0.1 %) and the modes' coupling at a finite initialisation — a test of the "
    "code, not of the seed",
)


# --- bias-grows-faster-than-weights ------------------------------------------------------------
def _bias_grows(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    return _reading(results, config, mech, mech.growth_ratio)


BIAS_GROWS: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "bias-grows-faster-than-weights",
    "In the beginning of training the biases grow faster than the weights.",
    source=f"{SEED} §5.3, Fig. 3A",
    criterion=Above("(‖b(t*)‖/‖b(0)‖) / (‖W1(t*)‖/‖W1(0)‖), bias-ReLU hierarchy", 1.0),
    measure=_bias_grows,
    scope="in the beginning of training (read as up to the linearization time t*)",
    note="'early' read as up to t* [I]",
    figure="mechanism.png",
    counterexample="a weak hidden bias (c = 0.1): its gradient scales with c, so the weights "
    "outgrow it (ratio ≈ 0.35)",
)


# --- most-units-always-on-early ----------------------------------------------------------------
def _most_always_on(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    raw = np.round(mech.raw_peak_on, 3).tolist()
    detail = f"t* per seed: {mech.t_star.tolist()}; raw (unsmoothed) peaks: {raw}"
    return _reading(results, config, mech, mech.peak_on, detail)


MOST_ALWAYS_ON: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
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
    counterexample=WEAK_BIAS + ": hardly any unit is driven always-on (peak ≈ 0.06)",
)


# --- units-drift-back --------------------------------------------------------------------------
def _drift_back(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    ends = np.round(mech.final_on, 3).tolist()
    plateau = np.round(mech.peak_on - mech.final_on, 3).tolist()
    detail = (
        f"end of the running mean per seed: {ends}; plateau − end (the old reading, ≥ 0 by "
        f"construction): {plateau}"
    )
    return _reading(results, config, mech, mech.drift, detail)


DRIFT_BACK: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "units-drift-back",
    "With further training units slowly drift back towards the non-linear regime.",
    source=f"{SEED} §5.3, Fig. 3C",
    criterion=Above(
        "decline of the always-on share after its plateau: −(least-squares slope from t* + half "
        "the running-mean window to the end) × that span",
        0.0,
    ),
    measure=_drift_back,
    scope="with further training: after t*, to the end of the horizon",
    note="trend window from t* + smooth_steps/2 [I]; 0 for a seed with < 3 recordings left",
    figure="mechanism.png",
    counterexample="a strong hidden bias (c = 3): the always-on share stays on its plateau "
    "(decline ≈ 0); and drift-free noise after a rise holds in ≈ 2.5 % of replications",
)


# --- early-function-is-mean-target -------------------------------------------------------------
def _mean_target(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    spread = np.round(mech.item_spread, 3).tolist()
    detail = "on the bias-mode plateau; spread of the items' outputs about their mean, /‖ȳ‖: "
    detail += f"{spread}"
    return _reading(results, config, mech, mech.mean_function_gap, detail)


MEAN_TARGET: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
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
    counterexample=WEAK_BIAS + ": the items separate before ȳ is reached (gap ≈ 0.43)",
)


# --- kinks-go-negative -------------------------------------------------------------------------
def _kinks(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    every = np.round(mech.all_negative_kinks, 3).tolist()
    return _reading(results, config, mech, mech.negative_kinks, f"over all units: {every}")


KINKS_NEGATIVE: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
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
    counterexample=WEAK_BIAS + ": the biases barely move and the kinks keep their random signs "
    "(≈ 0.43 negative)",
)


# --- few-units-dead ----------------------------------------------------------------------------
def _few_dead(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    return _reading(results, config, mech, mech.dead_at_t_star)


FEW_DEAD: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "few-units-dead",
    "Only a small subset of units become dead (inactive on every input) while the majority "
    "enter the linear regime.",
    source=f"{SEED} §5.3 ('apart from a small subset of neurons that become dead neurons')",
    criterion=lambda c: Below("share of units dead at t*", c.small_subset),
    measure=_few_dead,
    scope="early in learning (read at t*)",
    note="'small subset' = at most a quarter [I]",
    figure="mechanism.png",
    counterexample="a strong hidden bias (c = 3): F.4's units dead at init are 1 − ḡ(3) = 0.37, "
    "and at t* ≈ 0.56 are dead",
)


# --- biases-drift-upward -----------------------------------------------------------------------
def _drift_up(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    gaps = scored_ci(mech.bias_rise_gap, mech.diverged_relu)[0]
    rising = _reading(results, config, mech, mech.negative_bias_rising)
    detail = f"per seed: {np.round(mech.negative_bias_rising, 3).tolist()}; {rising.detail}"
    measured = {"drift upward": rising.measured, "slower": gaps}
    return Reading(measured, detail=detail, scale=rising.scale, diverged=rising.diverged)


BIAS_DRIFT_UP: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "biases-drift-upward",
    "Many units with slightly negative initial bias still drift upward, slower than those "
    "with a positive one.",
    source=f"{SEED} appendix F.2 ('many units with slightly negative initial b_j still drift "
    "upward (slower), consistent with our experiments')",
    criterion=lambda c: AllOf(
        {
            "drift upward": Above(
                "share of the units alive at init with b_j(0) < 0 whose bias rose by t*",
                c.majority,
            ),
            "slower": Below(
                "mean rise of b_j up to t*: b_j(0) < 0 minus b_j(0) > 0 (live units)", 0.0
            ),
        }
    ),
    measure=_drift_up,
    scope="early in training: from initialisation to t*; the units alive at init (F.2's "
    "gradient 'will occur for all active neurons', the dead get none)",
    note="'many' = more than half [D]; live units, read at t* [I]",
    figure="mechanism.png",
    counterexample="a hidden bias too weak to move (c = 0.01): its gradient carries c², the "
    "biases barely move and the always-on share peaks at initialisation in most networks, so "
    "nothing has drifted by t* (share ≈ 0.16)",
)


# --- gated-linear-model-matches ----------------------------------------------------------------
def _gated(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    linear = np.round(mech.gated_linear_gap, 3).tolist()
    floor = np.round(mech.gated_gap, 3).tolist()
    detail = (
        f"per seed, metrics: |L_gated − L_sim|/L(0) from t* on (fig. 4's plotting scale, the "
        f"criterion before issue 45) {linear}; |Δ ln L| down to the loss floor {floor}"
    )
    return _reading(results, config, mech, mech.gated_window_gap, detail)


GATED_MODEL: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "gated-linear-model-matches",
    "From t* on, the gated linear model W2 G W̃1 with the closed-form mode dynamics matches the "
    "ReLU network (almost) exactly.",
    source=f"{SEED} §5.4, eq. 15; Fig. 4",
    criterion=lambda c: Below(
        "largest |Δ ln L| gated vs simulated from t* over the gated model's early window (the "
        "alignment claims' log scale and window, no time shift)",
        c.alignment_tolerance,
    ),
    measure=_gated,
    scope="from the linearization time t* (smoothed) on, over the gated model's early window",
    note="unbalanced closed form [D]; tolerance, window and running-mean window [I]",
    figure="gated.png",
    counterexample="a weak hidden bias (c = 0.1): few units are always on at t* (≈ 0.1), the "
    "gated model drops the rest and misses the ReLU loss",
)


# --- relu-modes-lag-linear ---------------------------------------------------------------------
def _modes_lag(results: Results, config: Config) -> Reading:
    mech = measure.hierarchy_mechanism(results, config)
    delay = mech.half_times_relu - mech.half_times_linear
    per_mode = np.round(np.nanmean(delay, 0), 1)
    detail = f"per mode (mean over seeds): {per_mode}"
    return _reading(results, config, mech, np.nanmean(delay, axis=1), detail, twins=True)


MODES_LAG: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "relu-modes-lag-linear",
    "ReLU modes are learned after the linear network's (a positive hitting-time delay).",
    source=f"{SEED} §5.4, eq. 14; appendix F.4",
    criterion=Above("T½(ReLU) − T½(linear), mean over modes, same seed", 0.0, unit="steps"),
    measure=_modes_lag,
    unit="steps",
    figure="modes.png",
    check="guaranteed by the setup: the ReLU network starts from its linear twin's weights with "
    "each unit's output gated by σ′(z) ∈ {0, 1}, so every mode starts at a0·(share passing) ≤ a0 "
    "and the seed proves the sign (F.4: 'dead neurons will always slow down learning'); no "
    "setting the study's units can run reverses it: at 1/10 of the seed's steps the mean delay "
    "is 43 [−5, 92] steps at c = 0.01 (37 [19, 56] at 16 seeds), 61, 138 and 145 at c = 0.1, "
    "1 and 3, and positive at σ² = 0.02, with 8 items and at width 256",
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
    return _reading(results, config, mech, ratio, detail, twins=True)


DELAY_PREDICTED: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
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
    counterexample="the seed's own setting (c = 1): the measured delays are ≈ 2.7× eq. 14's "
    "(and ≈ 5× with 8 items)",
)
