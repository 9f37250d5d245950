"""The scorecard: every claim is an empirical test of a seed 004 statement on the simulated
networks, with the seed location in ``source`` and, where it is stochastic, a CI over seeds.

Each claim has a builder that takes the per-seed measurements (so a test can feed it a
counter-example) and :func:`analyse` wires them to the stored runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from relulab.analysis import Estimate, mean_ci
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import Claim, above, below, inside, judged, ordered
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig

__all__ = [
    "aligned_claim",
    "analyse",
    "every_c_claim",
    "parted_claim",
]

SEED = "seed 004"


def _ci(values) -> Estimate:
    values = np.asarray(values, dtype=np.float64).ravel()
    return mean_ci(values[np.isfinite(values)])


def aligned_claim(claim_id, statement, gaps, config, source, figure, scale, extra="") -> Claim:
    """The ReLU loss follows the linear loss: mean alignment gap below the tolerance."""
    return below(
        claim_id,
        statement,
        quantity="largest |Δ ln L| ReLU vs linear over the early window, best shift",
        measured=_ci(gaps),
        bound=config.alignment_tolerance,
        source=source,
        note="alignment measure and tolerance [I]",
        detail=f"per seed: {np.round(gaps, 3).tolist()}{extra}",
        scale=scale,
        figure=figure,
    )


def parted_claim(claim_id, statement, gaps, config, source, figure, scale, extra="") -> Claim:
    """The ReLU loss parts from the linear loss: mean alignment gap above the tolerance."""
    return above(
        claim_id,
        statement,
        quantity="largest |Δ ln L| ReLU vs linear over the early window, best shift",
        measured=_ci(gaps),
        bound=config.alignment_tolerance,
        source=source,
        note="alignment measure and tolerance [I]",
        detail=f"per seed: {np.round(gaps, 3).tolist()}{extra}",
        scale=scale,
        figure=figure,
    )


def every_c_claim(gaps: Mapping[float, np.ndarray], config, scale) -> Claim:
    """Stage-like, linear-aligned learning for every c > 0 (fig. 10 left): every c > 0 holds
    the alignment tolerance; fails if any c > 0 clearly exceeds it."""
    estimates = {c: _ci(g) for c, g in gaps.items() if c > 0}
    worst = max(estimates, key=lambda c: estimates[c].value)
    if all(e.high < config.alignment_tolerance for e in estimates.values()):
        holds: bool | None = True
    elif any(e.low > config.alignment_tolerance for e in estimates.values()):
        holds = False
    else:
        holds = None
    return judged(
        "c-sweep-aligned-for-every-c",
        "Loss curves display linear-aligned, stage-like learning in all cases where c > 0.",
        expected=f"alignment gap < {config.alignment_tolerance} (CI) for every c > 0",
        measured=estimates[worst],
        holds=holds,
        source=f"{SEED} appendix C.4, Fig. 10 (left)",
        note="alignment measure and tolerance [I]; c values [I]",
        detail="; ".join(f"c={c:g}: {e.describe()}" for c, e in estimates.items()),
        scale=scale,
        figure="c_sweep.png",
    )


def linear_units_rise_claim(peaks: Mapping[float, np.ndarray], scale) -> Claim:
    """Peak always-on fraction higher for every c > 0 than for c = 0 (paired by seed)."""
    differences = {c: _ci(p - peaks[0.0]) for c, p in peaks.items() if c > 0}
    smallest = min(differences, key=lambda c: differences[c].value)
    return above(
        "c-sweep-linear-units-rise",
        "The fraction of effectively linear units shoots up early whenever c > 0, not for c = 0.",
        quantity=f"peak always-on fraction, c = {smallest:g} minus c = 0 (smallest over c > 0)",
        measured=differences[smallest],
        bound=0.0,
        source=f"{SEED} appendix C.4, Fig. 10 (left-centre)",
        detail="; ".join(f"c={c:g}: {e.describe()}" for c, e in differences.items()),
        scale=scale,
        figure="c_sweep.png",
    )


def bias_mode_first_claim(mech: measure.Mechanism, scale) -> Claim:
    """T½ of the bias mode over the earliest other mode's T½ < 1."""
    t = mech.half_times_relu
    others = np.delete(t, mech.bias_mode, axis=1)
    ratio = t[:, mech.bias_mode] / np.nanmin(others, axis=1)
    return below(
        "bias-mode-learned-first",
        "The bias mode (top singular value s0 = √(c² + 1/P)·‖ȳ‖) is learned first.",
        quantity="T½(bias mode) / earliest T½ of the other modes, bias-ReLU, hierarchy",
        measured=_ci(ratio),
        bound=1.0,
        source=f"{SEED} §5.2, Prop. 1, eq. 5; Fig. 3D",
        note="T½: a_α reaches half of s_α/d_α [I]",
        detail=f"bias-mode T½ {np.round(t[:, mech.bias_mode]).tolist()}",
        scale=scale,
        figure="modes.png",
    )


def theory_claim(mech: measure.Mechanism, scale) -> Claim:
    error = np.nanmean(mech.theory_rel_error, axis=1)
    return below(
        "linear-theory-matches-linear-networks",
        "The exact deep-linear solutions (eq. 7) describe the simulated linear networks.",
        quantity="|T½(simulated)/T½(closed form) − 1|, mean over modes, linear nets",
        measured=_ci(error),
        bound=0.1,
        source=f"{SEED} appendix B, eq. 7/22; Fig. 2B",
        note="closed form from each net's initial weights, decoupled modes [D]; 10 % [I]",
        detail=f"per mode (mean over seeds): {np.round(np.nanmean(mech.theory_rel_error, 0), 3)}",
        scale=scale,
        figure="modes.png",
    )


def mechanism_claims(mech: measure.Mechanism, config, scale) -> list[Claim]:
    source = f"{SEED} §5.3"
    return [
        above(
            "bias-grows-faster-than-weights",
            "In the beginning of training the biases grow faster than the weights.",
            quantity="(‖b(t*)‖/‖b(0)‖) / (‖W1(t*)‖/‖W1(0)‖), bias-ReLU hierarchy",
            measured=_ci(mech.growth_ratio),
            bound=1.0,
            source=f"{source}, Fig. 3A",
            note="'early' read as up to t* [I]",
            scale=scale,
            figure="mechanism.png",
        ),
        above(
            "most-units-always-on-early",
            "Early in training most units are driven to be always active (linear regime).",
            quantity="peak always-on fraction (at t*)",
            measured=_ci(mech.peak_on),
            bound=config.majority,
            source=f"{source}, Fig. 3C",
            note="'most' = more than half [D]",
            detail=f"t* per seed: {mech.t_star.tolist()}",
            scale=scale,
            figure="mechanism.png",
        ),
        above(
            "units-drift-back",
            "With further training units slowly drift back towards the non-linear regime.",
            quantity="always-on fraction at t* minus at the end",
            measured=_ci(mech.peak_on - mech.final_on),
            bound=0.0,
            source=f"{source}, Fig. 3C",
            scale=scale,
            figure="mechanism.png",
        ),
        below(
            "early-function-is-mean-target",
            "The early bias-driven network function equals the mean target ȳ for every input.",
            quantity="max_i ‖ŷ_i − ȳ‖/‖ȳ‖ where the loss is closest to that of ŷ ≡ ȳ",
            measured=_ci(mech.mean_function_gap),
            bound=config.alignment_tolerance,
            source=f"{SEED} §5.2, Fig. 3D",
            note="tolerance [I]",
            detail="spread of the items' outputs about their mean, /‖ȳ‖: "
            f"{np.round(mech.item_spread, 3).tolist()}",
            scale=scale,
            figure="mechanism.png",
        ),
        above(
            "kinks-go-negative",
            "The vast majority of kink values −b_j/‖w_j‖ rapidly grow negative early in learning.",
            quantity="share of units with a negative kink at t*",
            measured=_ci(mech.negative_kinks),
            bound=config.vast_majority,
            source=f"{SEED} §5.3, eq. 12; appendix C.6, Fig. 12",
            note="'vast majority' = 80 % [I]",
            scale=scale,
            figure="mechanism.png",
        ),
    ]


def gated_claim(mech: measure.Mechanism, config, scale) -> Claim:
    return below(
        "gated-linear-model-matches",
        "From t* on, the gated linear model W2 G W̃1 with the closed-form mode dynamics matches "
        "the ReLU network (almost) exactly.",
        quantity="largest |Δ ln L| gated model vs simulation after t*",
        measured=_ci(mech.gated_gap),
        bound=config.alignment_tolerance,
        source=f"{SEED} §5.4, eq. 15; Fig. 4",
        note=f"until L < {config.loss_floor:g}·L(0); unbalanced closed form [D]; tolerance [I]",
        scale=scale,
        figure="gated.png",
    )


def delay_claims(mech: measure.Mechanism, config, scale) -> list[Claim]:
    measured = mech.half_times_relu - mech.half_times_linear
    predicted = np.nansum(mech.predicted_delay, axis=1)  # 0 where no unit was dead at init
    ratio = np.nansum(measured, axis=1) / np.where(predicted > 0, predicted, np.nan)
    return [
        above(
            "relu-modes-lag-linear",
            "ReLU modes are learned after the linear network's (a positive hitting-time delay).",
            quantity="T½(ReLU) − T½(linear), mean over modes, same seed",
            measured=_ci(np.nanmean(measured, axis=1)),
            bound=0.0,
            unit="steps",
            source=f"{SEED} §5.4, eq. 14; appendix F.4",
            detail=f"per mode (mean over seeds): {np.round(np.nanmean(measured, 0), 1)}",
            scale=scale,
            figure="modes.png",
        ),
        inside(
            "delay-predicted-by-gating",
            "Eq. 14 predicts the delay from the fraction of units gated off at initialisation.",
            quantity="Σ measured delay / Σ predicted (ḡ = share of units alive at init)",
            measured=_ci(ratio),
            low=1.0 / config.delay_factor,
            high=config.delay_factor,
            source=f"{SEED} §5.4, eq. 14; appendix F.3–F.4",
            note="ḡ = kept fraction, as the derivation uses it; factor 2 [I]",
            detail="predicted per mode (mean over seeds): "
            f"{np.round(np.nanmean(mech.predicted_delay, 0), 1)}",
            scale=scale,
            figure="modes.png",
        ),
    ]


def reliance_claims(bias: np.ndarray, free: np.ndarray, scale) -> list[Claim]:
    source = f"{SEED} §6.1, Fig. 5C"
    return [
        above(
            "xor-linear-bias-relu-uses-linear-feature",
            "ReLU networks with bias terms strongly rely on the linear feature.",
            quantity="share of conflict points classified by x3, bias-ReLU",
            measured=_ci(bias),
            bound=0.5,
            source=source,
            note="conflict points: XOR and x3 disagree [I]",
            scale=scale,
            figure="xor_linear.png",
        ),
        below(
            "xor-linear-bias-free-uses-xor",
            "Bias-free ReLU networks make use of the non-linear (XOR) structure instead.",
            quantity="share of conflict points classified by x3, bias-free ReLU",
            measured=_ci(free),
            bound=0.5,
            source=source,
            note="conflict points: XOR and x3 disagree [I]",
            scale=scale,
            figure="xor_linear.png",
        ),
    ]


def parallel_claims(bias: measure.Parallel, free: measure.Parallel, scale) -> list[Claim]:
    source = f"{SEED} §6.2"
    diff_bias = bias.r2_simple - bias.r2_complex
    diff_free = free.r2_simple - free.r2_complex
    e_bias, e_free = _ci(diff_bias), _ci(diff_free)
    both = [e_bias.low > 0 and e_free.low > 0, e_bias.high < 0 or e_free.high < 0]
    return [
        ordered(
            "parallel-waits-at-linear-loss",
            "Bias-ReLU learns the linear task first and waits at its loss; without bias the "
            "saddle is substantially less pronounced.",
            quantity="steps within ±10 % of the linear-task loss",
            values=[("no bias", _ci(free.waiting)), ("bias", _ci(bias.waiting))],
            source=f"{source}, Fig. 6B",
            note="band ±10 % [I]",
            unit="steps",
            scale=scale,
            figure="parallel.png",
        ),
        ordered(
            "parallel-lower-rank-with-bias",
            "Bias-ReLU networks have a strong low-rank bias: lower effective rank of HᵀH.",
            quantity="effective rank of HᵀH at the end",
            values=[("bias", _ci(bias.rank)), ("no bias", _ci(free.rank))],
            source=f"{source}, Fig. 6C; eq. 1",
            scale=scale,
            figure="parallel.png",
        ),
        ordered(
            "parallel-simple-overrepresented-with-bias",
            "ReLU networks with bias encode the linear task more strongly than bias-free ones.",
            quantity="R² of the hidden representation on the simple feature",
            values=[("no bias", _ci(free.r2_simple)), ("bias", _ci(bias.r2_simple))],
            source=f"{source}, Fig. 6D; appendix D",
            scale=scale,
            figure="parallel.png",
        ),
        judged(
            "parallel-simple-over-complex",
            "Both models represent the linear feature more prominently than the non-linear one.",
            expected="R²(simple) − R²(complex) > 0 (CI) with and without bias",
            measured=e_bias,
            holds=True if both[0] else (False if both[1] else None),
            source=f"{source}, Fig. 6D; appendix D",
            detail=f"bias: {e_bias.describe()}; no bias: {e_free.describe()}",
            scale=scale,
            figure="parallel.png",
        ),
    ]


def _pair(results: Results, name: str):
    return results[f"{name}-relu"], results[f"{name}-linear"]


def analyse(results: Results, config: EarlyLinearizationConfig) -> Analysis:
    """All claims and metrics from the stored units (see the module docstring)."""
    scale = f"{config.seeds} seeds, hidden {config.hidden}, {config.n_items}-item tree"
    c = config.constant
    hierarchy = _pair(results, "hierarchy")
    xor = _pair(results, "xor")
    xl = _pair(results, "xor-plus-linear")
    full = {
        "hierarchy_bias": measure.alignments(*hierarchy, config, c=c),
        "hierarchy_free": measure.alignments(*hierarchy, config, c=0.0),
        "xor_bias": measure.alignments(*xor, config, c=c),
        "xor_free": measure.alignments(*xor, config, c=0.0),
        "hierarchy_both": measure.alignments(*_pair(results, "hierarchy-both"), config),
        "xor_both": measure.alignments(*_pair(results, "xor-both"), config),
        "xor_linear": measure.alignments(*xl, config, c=c, delta=config.margin_delta),
    }
    gaps = {k: v[:, 0] for k, v in full.items()}
    extra = {
        k: f"; best shifts (steps) {np.round(v[:, 1]).tolist()}; unshifted gaps "
        f"{np.round(v[:, 2], 3).tolist()}"
        for k, v in full.items()
    }
    claims = [
        aligned_claim(
            "hierarchy-aligned-with-bias",
            "With bias terms, ReLU and linear networks are functionally similar on the "
            "hierarchy (loss curves aligned, slight time shift).",
            gaps["hierarchy_bias"],
            config,
            f"{SEED} §4, Fig. 2B",
            "alignment.png",
            scale,
            extra=extra["hierarchy_bias"],
        ),
        parted_claim(
            "hierarchy-part-without-bias",
            "Without bias terms the dynamics of linear and ReLU networks diverge (hierarchy).",
            gaps["hierarchy_free"],
            config,
            f"{SEED} §4, Fig. 2B",
            "alignment.png",
            scale,
            extra=extra["hierarchy_free"],
        ),
        aligned_claim(
            "xor-aligned-with-bias",
            "Even on the non-linear XOR problem, bias-ReLU and bias-linear dynamics are matched "
            "in early training.",
            gaps["xor_bias"],
            config,
            f"{SEED} §4, Fig. 2D",
            "alignment.png",
            scale,
            extra=extra["xor_bias"],
        ),
        parted_claim(
            "xor-part-without-bias",
            "On XOR the correspondence breaks down when bias terms are ablated.",
            gaps["xor_free"],
            config,
            f"{SEED} §4, Fig. 2D",
            "alignment.png",
            scale,
            extra=extra["xor_free"],
        ),
        aligned_claim(
            "both-layer-bias-aligned-hierarchy",
            "With biases in both layers, ReLU and linear dynamics stay aligned on the hierarchy.",
            gaps["hierarchy_both"],
            config,
            f"{SEED} appendix C.3, Fig. 9A",
            "alignment.png",
            scale,
            extra=extra["hierarchy_both"],
        ),
        aligned_claim(
            "both-layer-bias-aligned-xor",
            "With biases in both layers, early dynamics are also aligned on XOR.",
            gaps["xor_both"],
            config,
            f"{SEED} appendix C.3, Fig. 9B",
            "alignment.png",
            scale,
            extra=extra["xor_both"],
        ),
    ]
    mech = measure.mechanism(*hierarchy, config)
    claims += [bias_mode_first_claim(mech, scale), theory_claim(mech, scale)]
    claims += mechanism_claims(mech, config, scale)
    claims.append(gated_claim(mech, config, scale))
    claims += delay_claims(mech, config, scale)
    claims.append(
        aligned_claim(
            "xor-linear-bias-relu-tracks-linear",
            "On XOR + linear feature (Δ = 0.5) bias-ReLU loss curves closely resemble the "
            "linear network's, with a small time shift.",
            gaps["xor_linear"],
            config,
            f"{SEED} §6.1, Fig. 5B",
            "xor_linear.png",
            scale,
            extra=extra["xor_linear"],
        )
    )
    relu_xl = xl[0]
    bias_rel = measure.linear_feature_reliance(relu_xl, True, config.margin_delta, c)
    free_rel = measure.linear_feature_reliance(relu_xl, True, config.margin_delta, 0.0)
    claims += reliance_claims(bias_rel, free_rel, scale)
    par = _pair(results, "parallel")
    par_bias = measure.parallel(par[0], config, c, relu=True)
    par_free = measure.parallel(par[0], config, 0.0, relu=True)
    claims += parallel_claims(par_bias, par_free, scale)
    sweep_gaps, peaks = measure.c_sweep(*hierarchy, config)
    claims += [every_c_claim(sweep_gaps, config, scale), linear_units_rise_claim(peaks, scale)]
    metrics = {f"alignment_gap_{k}": float(np.mean(v)) for k, v in gaps.items()}
    metrics.update({f"alignment_shift_{k}": float(np.mean(v[:, 1])) for k, v in full.items()})
    metrics.update(
        t_star_mean=float(np.mean(mech.t_star)),
        peak_always_on_mean=float(np.mean(mech.peak_on)),
        gated_gap_mean=float(np.nanmean(mech.gated_gap)),
        linear_task_loss=measure.linear_task_loss(config),
        xor_linear_reliance_bias=float(np.mean(bias_rel)),
        xor_linear_reliance_free=float(np.mean(free_rel)),
    )
    for label, values in (("bias", par_bias), ("free", par_free)):
        for field in ("rank", "r2_simple", "r2_complex", "r2_both", "waiting"):
            metrics[f"parallel_{field}_{label}"] = float(np.mean(getattr(values, field)))
    for c_value, g in sweep_gaps.items():
        metrics[f"c_sweep_gap_c{c_value:g}"] = float(np.mean(g))
        metrics[f"c_sweep_peak_on_c{c_value:g}"] = float(np.mean(peaks[c_value]))
    for c_value in config.all_constants:  # beyond the seed: eq. 14 across the c sweep
        if c_value > 0:
            sweep_mech = measure.mechanism(*hierarchy, config, c=c_value)
            measured = sweep_mech.half_times_relu - sweep_mech.half_times_linear
            predicted = np.nansum(sweep_mech.predicted_delay, 1)
            ratio = np.nansum(measured, 1) / np.where(predicted > 0, predicted, np.nan)
            if np.isfinite(ratio).any():
                metrics[f"c_sweep_delay_ratio_c{c_value:g}"] = float(np.nanmean(ratio))
    metrics.update(_delta_metrics(xl, config))
    metrics.update(_map_metrics(_pair(results, "map"), config))
    for width, (bias_gap, free_gap) in width_gaps(results, config).items():
        metrics[f"width_gap_h{width}_bias"] = float(np.mean(bias_gap))
        metrics[f"width_gap_h{width}_free"] = float(np.mean(free_gap))
    return Analysis(claims, {k: v for k, v in metrics.items() if math.isfinite(v)})


def delta_gaps(xl, config) -> dict[float, np.ndarray]:
    """Per Δ of the sweep: bias-ReLU vs bias-linear alignment gaps (seed 004 fig. 11)."""
    return {
        d: measure.alignment_gaps(*xl, config, c=config.constant, delta=d)
        for d in config.all_deltas
    }


def _delta_metrics(xl, config) -> dict[float, float]:
    gaps = delta_gaps(xl, config)
    out = {f"xor_linear_gap_delta{d:g}": float(np.mean(g)) for d, g in gaps.items()}
    parted = [d for d, g in gaps.items() if np.mean(g) > config.alignment_tolerance]
    out["xor_linear_parting_delta"] = float(max(parted)) if parted else 0.0
    return out


def map_gaps(pair, config) -> np.ndarray:
    """Mean alignment gap per (σ², c) cell of the beyond-the-seed map, ``(V, C)``."""
    return np.array(
        [
            [
                float(np.mean(measure.alignment_gaps(*pair, config, variance=v, c=c)))
                for c in config.map_constants
            ]
            for v in config.map_variances
        ]
    )


def _map_metrics(pair, config) -> dict[str, float]:
    grid = map_gaps(pair, config)
    return {
        f"map_gap_var{v:g}_c{c:g}": float(grid[a, b])
        for a, v in enumerate(config.map_variances)
        for b, c in enumerate(config.map_constants)
    }


def width_gaps(results: Results, config) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Beyond the seed: (bias, no bias) alignment gaps on the hierarchy per hidden width."""
    out = {}
    for width in sorted({config.hidden, *config.map_widths}):
        name = "hierarchy" if width == config.hidden else f"width{width}"
        pair = _pair(results, name)
        seeds = range(config.map_seeds)
        out[width] = tuple(
            np.array([measure.alignment_gaps(*pair, config, c=c, seed=k)[0] for k in seeds])
            for c in (config.constant, 0.0)
        )
    return out
