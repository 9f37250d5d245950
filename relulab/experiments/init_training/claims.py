"""The ``init-training`` scorecard: seed 002's §3.3 (ratios at initialisation) and §5 (training)
statements as claims, one measure function and one :class:`ClaimSpec` per claim, plus the
metrics. Every number comes from :mod:`relulab.experiments.init_training.readings`.

The §5 claims are declared once per task and optimiser (``scale-bias-faster-cifar10-sgd`` …):
the seed says "in all cases", and Fig. 4 has one panel per task and optimiser. A run measures
the claims of the tasks, optimisers and inits its config runs (:func:`applicable`): all of them
at ``quick`` and ``paper``.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import ClaimSpec, Reading, evaluate
from relulab.experiments.criteria import Above, Below, Inside
from relulab.experiments.init_training.config import (
    LAYERS,
    OPTIMISERS,
    SOURCE,
    TASKS,
    InitTrainingConfig,
    scale,
)
from relulab.experiments.init_training.readings import (
    at_init_ratios,
    excess_over_mlp,
    fall_from_peak,
    last_layer_ratio,
    mlp_theory_ratio,
    paired_difference,
    peak_layer,
    ratio_gap,
    rise,
    training_summary,
)

__all__ = [
    "ABOVE_MLP_TO_12",
    "BATCHNORM_FASTER",
    "CLAIMS",
    "FASTER",
    "LAST_ABOVE_MLP",
    "LOWER_LATE",
    "RATIOS_CONVERGE",
    "RISES",
    "UNET_FALLS",
    "UNET_PEAK",
    "analyse",
    "applicable",
    "metrics",
]

AT_INIT_SCOPE = (
    "at initialisation (Kaiming, biases 0, 30 networks), the seed's network at width 1 on its "
    "data set's training images"
)


def _profile(r: np.ndarray) -> str:
    return ", ".join(f"{v:.2f}" for v in r.mean(axis=0))


def _at_init_scale(config: InitTrainingConfig, task: str, r: np.ndarray) -> str:
    return scale(config, task, f", {len(r)} Kaiming nets")


def _checked(r: np.ndarray, task: str) -> np.ndarray:
    if r.shape[1] != LAYERS[task]:
        raise ValueError(f"{task}: expected {LAYERS[task]} layers, the unit has {r.shape[1]}")
    return r


# ---------------------------------------------------------------------------------------------
# §3.3 at initialisation: ALL-CNN-C on CIFAR-10 (Fig. 2 middle).
# ---------------------------------------------------------------------------------------------
def _rises(results: Results, config: InitTrainingConfig) -> Reading:
    r = _checked(at_init_ratios(results, "cifar10"), "cifar10")
    k, worst = rise(r)
    return Reading(
        worst,
        detail=f"least certain step: layer {k + 1} → {k + 2}; mean r per layer: {_profile(r)}",
        scale=_at_init_scale(config, "cifar10", r),
    )


RISES = ClaimSpec(
    "allcnn-ratio-rises",
    "In ALL-CNN-C the empirical sample mean/std ratio increases in all layers.",
    source=f"{SOURCE} §3.3, Fig. 2 (middle)",
    criterion=Above("r_{l+1} − r_l at the least certain layer step (paired over networks)", 0.0),
    measure=_rises,
    scope=AT_INIT_SCOPE + " (CIFAR-10), every one of the 9 layer steps",
    figure="ratios_at_init.png",
)


def _last_above_mlp(results: Results, config: InitTrainingConfig) -> Reading:
    r = _checked(at_init_ratios(results, "cifar10"), "cifar10")
    theory = mlp_theory_ratio(r.shape[1])
    return Reading(
        last_layer_ratio(r),
        detail=f"wide-MLP m/v at layer {r.shape[1]}: {theory[-1]:.3f}",
        scale=_at_init_scale(config, "cifar10", r),
    )


LAST_ABOVE_MLP = ClaimSpec(
    "allcnn-last-above-mlp",
    "The last layer (after global pooling) has a higher ratio than a wide MLP would.",
    source=f"{SOURCE} §3.3, Fig. 2 (middle)",
    criterion=Above(
        f"r at layer {LAYERS['cifar10']} (the output after global pooling)",
        float(mlp_theory_ratio(LAYERS["cifar10"])[-1]),
    ),
    measure=_last_above_mlp,
    scope=AT_INIT_SCOPE + " (CIFAR-10), the last layer",
    note="wide-MLP value at the same layer index [D]",
    figure="ratios_at_init.png",
)


# ---------------------------------------------------------------------------------------------
# §3.3 at initialisation: the UNet on ISBI 2012 (Fig. 2 right).
# ---------------------------------------------------------------------------------------------
def _unet_peak(results: Results, config: InitTrainingConfig) -> Reading:
    r = _checked(at_init_ratios(results, "isbi2012"), "isbi2012")
    return Reading(
        float(peak_layer(r)),
        detail=f"mean r per layer: {_profile(r)}",
        scale=_at_init_scale(config, "isbi2012", r),
    )


UNET_PEAK = ClaimSpec(
    "unet-ratio-peaks-near-12",
    "In the UNet the ratio increases up to around layer 12.",
    source=f"{SOURCE} §3.3, Fig. 2 (right)",
    criterion=lambda c: Inside(
        "layer of the largest network-mean ratio",
        c.peak_layer - c.peak_tolerance,
        c.peak_layer + c.peak_tolerance,
    ),
    measure=_unet_peak,
    scope=AT_INIT_SCOPE + " (ISBI 2012 slices)",
    note="'around' = ± peak_tolerance layers [I]",
    figure="ratios_at_init.png",
)


def _unet_falls(results: Results, config: InitTrainingConfig) -> Reading:
    r = _checked(at_init_ratios(results, "isbi2012"), "isbi2012")
    return Reading(
        fall_from_peak(r),
        detail=f"peak at layer {peak_layer(r)}",
        scale=_at_init_scale(config, "isbi2012", r),
    )


UNET_FALLS = ClaimSpec(
    "unet-ratio-falls",
    "After its peak the UNet ratio decreases significantly (skip connections).",
    source=f"{SOURCE} §3.3, Fig. 2 (right)",
    criterion=lambda c: Below(
        "r at the last layer / r at the peak layer (per network)", c.fall_fraction
    ),
    measure=_unet_falls,
    scope=AT_INIT_SCOPE + " (ISBI 2012 slices), from the peak to the last layer",
    note="'significantly' = below fall_fraction of the peak [I]",
    figure="ratios_at_init.png",
)


def _above_mlp_to_12(results: Results, config: InitTrainingConfig) -> Reading:
    r = _checked(at_init_ratios(results, "isbi2012"), "isbi2012")
    k, worst = excess_over_mlp(r, config.peak_layer)
    theory = mlp_theory_ratio(r.shape[1])
    return Reading(
        worst,
        detail=f"least certain layer {k + 1}: wide-MLP {theory[k]:.3f}",
        scale=_at_init_scale(config, "isbi2012", r),
    )


ABOVE_MLP_TO_12 = ClaimSpec(
    "unet-above-mlp-to-12",
    "Up to layer 12 the UNet's ratio is higher than the wide-MLP prediction (max pooling).",
    source=f"{SOURCE} §3.3, Fig. 2 (right)",
    criterion=lambda c: Above(
        f"r_l − wide-MLP m/v, least certain layer of 1…{min(c.peak_layer, LAYERS['isbi2012'])}",
        0.0,
    ),
    measure=_above_mlp_to_12,
    scope=AT_INIT_SCOPE + " (ISBI 2012 slices), layers 1 to 12 ('up to layer 12')",
    figure="ratios_at_init.png",
)


# ---------------------------------------------------------------------------------------------
# §5 training (Fig. 4): one claim of each kind per task and optimiser.
# ---------------------------------------------------------------------------------------------
def _training_scale(config: InitTrainingConfig, task: str, optimiser: str) -> str:
    extra = f", {optimiser}, {config.steps} steps, {config.n_seeds} seeds"
    return scale(config, task, extra)


def _best_lrs(summary: dict) -> str:
    return f"best lr: scale {summary['scale']['lr']:g}, scale+bias {summary['scale_bias']['lr']:g}"


def _faster(results: Results, config: InitTrainingConfig, task: str, optimiser: str) -> Reading:
    summary = training_summary(results, config, task, optimiser)
    return Reading(
        paired_difference(summary["scale"]["speed"], summary["scale_bias"]["speed"]),
        detail=_best_lrs(summary),
        scale=_training_scale(config, task, optimiser),
    )


def _faster_spec(task: str, optimiser: str) -> ClaimSpec:
    return ClaimSpec(
        f"scale-bias-faster-{task}-{optimiser}",
        "Initialising the biases (scale+bias) trains faster than scale alone.",
        source=f"{SOURCE} §5.3, Fig. 4",
        criterion=Above("mean ln-loss over the run: scale − scale+bias (paired by seed)", 0.0),
        measure=partial(_faster, task=task, optimiser=optimiser),
        scope=f"{task}, {optimiser}: over the whole run, each init at its fastest-converging lr "
        "(§5.2), 3 seeds; 'in all cases' = every task and optimiser",
        note="speed = mean ln-loss over the recorded steps [I]",
        figure="training_loss.png",
    )


def _lower_late(results: Results, config: InitTrainingConfig, task: str, optimiser: str) -> Reading:
    summary = training_summary(results, config, task, optimiser)
    return Reading(
        paired_difference(summary["scale"]["late"], summary["scale_bias"]["late"]),
        detail=_best_lrs(summary),
        scale=_training_scale(config, task, optimiser),
    )


def _lower_late_spec(task: str, optimiser: str) -> ClaimSpec:
    return ClaimSpec(
        f"scale-bias-lower-late-{task}-{optimiser}",
        "scale+bias's loss stays lower than scale's well after the ratios have converged.",
        source=f"{SOURCE} §5.3, Fig. 4",
        criterion=lambda c: Above(
            f"late loss (last {c.late_fraction:.0%} of steps): scale − scale+bias", 0.0
        ),
        measure=partial(_lower_late, task=task, optimiser=optimiser),
        scope=f"{task}, {optimiser}: 'well after 10k iterations'",
        note="the seed looks past 10k iterations; this run ends at the last step [I]",
        figure="training_loss.png",
    )


def _converge(results: Results, config: InitTrainingConfig, task: str, optimiser: str) -> Reading:
    summary = training_summary(results, config, task, optimiser)
    largest, relative = ratio_gap(summary["scale"]["ratios"], summary["scale_bias"]["ratios"])
    return Reading(
        largest,
        detail="per layer: " + ", ".join(f"{v:.2f}" for v in relative),
        scale=_training_scale(config, task, optimiser),
    )


def _converge_spec(task: str, optimiser: str) -> ClaimSpec:
    return ClaimSpec(
        f"ratios-converge-{task}-{optimiser}",
        "The two inits' per-layer ratios converge to similar values after a few thousand "
        "iterations.",
        source=f"{SOURCE} §5.3",
        criterion=lambda c: Below(
            "largest per-layer |r_scale − r_scale+bias| / mean at the last step",
            c.ratio_tolerance,
        ),
        measure=partial(_converge, task=task, optimiser=optimiser),
        scope=f"{task}, {optimiser}: 'after a few thousand iterations of sgd', in all layers",
        note="tolerance [I]; seed-mean ratios at each init's best lr",
        figure="ratio_trajectories.png",
    )


def _batchnorm(results: Results, config: InitTrainingConfig, task: str, optimiser: str) -> Reading:
    summary = training_summary(results, config, task, optimiser)
    return Reading(
        paired_difference(summary["scale"]["speed"], summary["batchnorm"]["speed"]),
        detail=f"best lr: BatchNorm {summary['batchnorm']['lr']:g}",
        scale=_training_scale(config, task, optimiser),
    )


def _batchnorm_spec(task: str, optimiser: str) -> ClaimSpec:
    return ClaimSpec(
        f"batchnorm-faster-than-scale-{task}-{optimiser}",
        "BatchNorm, which preserves the sample variance by construction (§4), trains faster "
        "than the total-variance-preserving scale init.",
        source=f"{SOURCE} §4 and §5.3, Fig. 4",
        criterion=Above("mean ln-loss over the run: scale − BatchNorm (paired by seed)", 0.0),
        measure=partial(_batchnorm, task=task, optimiser=optimiser),
        note="the seed plots BatchNorm beside both inits without ranking it: inferred [I]",
        figure="training_loss.png",
        beyond_seed=True,
    )


PAIRS = [(task, optimiser) for task in TASKS for optimiser in OPTIMISERS]
FASTER = {pair: _faster_spec(*pair) for pair in PAIRS}
LOWER_LATE = {pair: _lower_late_spec(*pair) for pair in PAIRS}
RATIOS_CONVERGE = {pair: _converge_spec(*pair) for pair in PAIRS}
BATCHNORM_FASTER = {pair: _batchnorm_spec(*pair) for pair in PAIRS}

AT_INIT = {"cifar10": (RISES, LAST_ABOVE_MLP), "isbi2012": (UNET_PEAK, UNET_FALLS, ABOVE_MLP_TO_12)}


def _training(task: str, optimiser: str, inits: tuple[str, ...]) -> tuple[ClaimSpec, ...]:
    pair = (task, optimiser)
    specs = (FASTER[pair], LOWER_LATE[pair], RATIOS_CONVERGE[pair])
    return specs + ((BATCHNORM_FASTER[pair],) if "batchnorm" in inits else ())


CLAIMS = (
    *AT_INIT["cifar10"],
    *AT_INIT["isbi2012"],
    *(spec for pair in PAIRS for spec in _training(*pair, ("batchnorm",))),
)


def applicable(config: InitTrainingConfig) -> tuple[ClaimSpec, ...]:
    """The claims a run with ``config`` measures, in scorecard order: the at-init claims of its
    tasks (ALL-CNN-C's first), then, if it trains, per task and optimiser in the config's order
    the §5 claims (BatchNorm's only where ``inits`` has it). Every claim at the presets."""
    specs = [spec for task in TASKS if task in config.tasks for spec in AT_INIT[task]]
    if config.train:
        specs += [
            spec
            for task in config.tasks
            for optimiser in config.optimisers
            for spec in _training(task, optimiser, config.inits)
        ]
    return tuple(specs)


def _training_metrics(summary: dict, task: str, optimiser: str) -> dict[str, float]:
    metrics = {}
    for init, runs in summary.items():
        prefix = f"{task}_{optimiser}_{init}"
        metrics[f"{prefix}_best_lr"] = float(runs["lr"])
        metrics[f"{prefix}_mean_log_loss"] = float(np.mean(runs["speed"]))
        metrics[f"{prefix}_late_loss"] = float(np.mean(runs["late"]))
        metrics[f"{prefix}_steps_to_level"] = (
            float(np.nanmean(runs["time_to_level"]))
            if np.isfinite(runs["time_to_level"]).any()
            else float("nan")
        )
    return metrics


def metrics(results: Results, config: InitTrainingConfig) -> dict[str, float]:
    """The numbers behind the claims: the network-mean ratio at every layer at init, and per
    task, optimiser and init the best lr, mean ln-loss, late loss and steps to the loss level."""
    values: dict[str, float] = {}
    for task in config.tasks:
        for layer, value in enumerate(at_init_ratios(results, task).mean(axis=0), start=1):
            values[f"{task}_init_ratio_layer_{layer}"] = float(value)
    if config.train:
        for task in config.tasks:
            for optimiser in config.optimisers:
                summary = training_summary(results, config, task, optimiser)
                values.update(_training_metrics(summary, task, optimiser))
    return values


def analyse(results: Results, config: InitTrainingConfig) -> Analysis:
    """Claims and metrics from the stored results: the CLAIMS tuple, or the part of it that a
    config running fewer tasks, optimisers or inits measures (:func:`applicable`)."""
    return Analysis(evaluate(applicable(config), results, config), metrics(results, config))
