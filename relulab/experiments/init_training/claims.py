"""Claims and metrics of ``init-training``, computed from the stored units only.

Readings, each fixed before looking at results:

* **ratio profile at init** (seed §3.3, Fig. 2 middle/right): per copy the ratio r_l of seed
  eq. 9 at every Linear/Conv layer; increments r_{l+1} − r_l are paired per network. The
  wide-MLP curve is :func:`relulab.theory.sample_statistics` with layer 1 = the seed's layer 0.
* **fastest-converging learning rate** (§5.2): per init, the lr with the lowest mean over seeds
  of the run's mean ln-loss (``lr_selection = mean_log_loss``) or of the late loss; a run that
  diverged counts as infinitely slow.
* **training speed** (§5.3, Fig. 4): per seed the mean ln-loss over the recorded steps (an area
  under the log-loss curve: lower = faster), at each init's best lr; differences are paired by
  seed index (same data stream, same N(0, 1) draw for scale and scale+bias).
* **late loss**: the mean loss over the last ``late_fraction`` of the recorded steps.
* **ratios after training**: per layer, the seed-mean ratio at the last recorded step.
* **time to loss level**: the first recorded step with loss < ``loss_level`` × the label entropy.
"""

from __future__ import annotations

import math

import numpy as np

from relulab.analysis import Estimate, first_below, mean_ci
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import Claim, above, below, inside
from relulab.experiments.init_training.config import ARCHITECTURE, InitTrainingConfig
from relulab.theory import sample_statistics

__all__ = [
    "analyse",
    "best_lr_runs",
    "mlp_theory_ratio",
    "ratio_claims",
    "training_claims",
    "weakest",
]

SEED = "seed 002"


def mlp_theory_ratio(layers: int) -> np.ndarray:
    """The wide-MLP m/v per layer, layer 1 first (the seed's layer 0: ρ = 0)."""
    return sample_statistics(layers).mean_to_std_ratio


def weakest(estimates: list[Estimate]) -> tuple[int, Estimate]:
    """The estimate that most threatens "every one is above 0": one wholly below 0 if any,
    else the one with the lowest lower bound."""
    for index, estimate in enumerate(estimates):
        if estimate.high < 0:
            return index, estimate
    index = int(np.argmin([e.low for e in estimates]))
    return index, estimates[index]


def _scale(config: InitTrainingConfig, task: str, extra: str = "") -> str:
    width = config.allcnn_width if task == "cifar10" else config.unet_width
    data = "real data" if config.data_dir else "the bundled stand-in (not the seed's data)"
    return f"{ARCHITECTURE[task]} width ×{width:g} on {task}, {data}{extra}"


# ---------------------------------------------------------------------------------------------
# At initialisation.
# ---------------------------------------------------------------------------------------------
def ratio_claims(ratios: dict[str, np.ndarray], config: InitTrainingConfig) -> list[Claim]:
    """Claims on the at-init ratio profiles ``{task: (networks, layers)}``."""
    claims: list[Claim] = []
    if "cifar10" in ratios:
        claims += _allcnn_claims(ratios["cifar10"], config)
    if "isbi2012" in ratios:
        claims += _unet_claims(ratios["isbi2012"], config)
    return claims


def _allcnn_claims(r: np.ndarray, config: InitTrainingConfig) -> list[Claim]:
    scale = _scale(config, "cifar10", f", {len(r)} Kaiming nets")
    steps = [mean_ci(r[:, k + 1] - r[:, k]) for k in range(r.shape[1] - 1)]
    k, worst = weakest(steps)
    theory = mlp_theory_ratio(r.shape[1])
    last = mean_ci(r[:, -1])
    profile = ", ".join(f"{v:.2f}" for v in r.mean(axis=0))
    return [
        above(
            "allcnn-ratio-rises",
            "In ALL-CNN-C the empirical sample mean/std ratio increases in all layers.",
            quantity="r_{l+1} − r_l at the least certain layer step (paired over networks)",
            measured=worst,
            bound=0.0,
            source=f"{SEED} §3.3, Fig. 2 (middle)",
            detail=f"least certain step: layer {k + 1} → {k + 2}; mean r per layer: {profile}",
            scale=scale,
            figure="ratios_at_init.png",
        ),
        above(
            "allcnn-last-above-mlp",
            "The last layer (after global pooling) has a higher ratio than a wide MLP would.",
            quantity=f"r at layer {r.shape[1]} (the output after global pooling)",
            measured=last,
            bound=float(theory[-1]),
            source=f"{SEED} §3.3, Fig. 2 (middle)",
            note="wide-MLP value at the same layer index [D]",
            detail=f"wide-MLP m/v at layer {r.shape[1]}: {theory[-1]:.3f}",
            scale=scale,
            figure="ratios_at_init.png",
        ),
    ]


def _unet_claims(r: np.ndarray, config: InitTrainingConfig) -> list[Claim]:
    scale = _scale(config, "isbi2012", f", {len(r)} Kaiming nets")
    mean = r.mean(axis=0)
    peak = int(np.argmax(mean)) + 1
    theory = mlp_theory_ratio(r.shape[1])
    upto = min(config.peak_layer, r.shape[1])
    excess = [mean_ci(r[:, k] - theory[k]) for k in range(upto)]
    k, worst_excess = weakest(excess)
    fall = mean_ci(r[:, -1] / r[:, peak - 1])
    profile = ", ".join(f"{v:.2f}" for v in mean)
    return [
        inside(
            "unet-ratio-peaks-near-12",
            "In the UNet the ratio increases up to around layer 12.",
            quantity="layer of the largest network-mean ratio",
            measured=float(peak),
            low=config.peak_layer - config.peak_tolerance,
            high=config.peak_layer + config.peak_tolerance,
            source=f"{SEED} §3.3, Fig. 2 (right)",
            note="'around' = ± peak_tolerance layers [I]",
            detail=f"mean r per layer: {profile}",
            scale=scale,
            figure="ratios_at_init.png",
        ),
        below(
            "unet-ratio-falls",
            "After its peak the UNet ratio decreases significantly (skip connections).",
            quantity="r at the last layer / r at the peak layer (per network)",
            measured=fall,
            bound=config.fall_fraction,
            source=f"{SEED} §3.3, Fig. 2 (right)",
            note="'significantly' = below fall_fraction of the peak [I]",
            detail=f"peak at layer {peak}",
            scale=scale,
            figure="ratios_at_init.png",
        ),
        above(
            "unet-above-mlp-to-12",
            "Up to layer 12 the UNet's ratio is higher than the wide-MLP prediction (max pooling).",
            quantity=f"r_l − wide-MLP m/v, least certain layer of 1…{upto}",
            measured=worst_excess,
            bound=0.0,
            source=f"{SEED} §3.3, Fig. 2 (right)",
            detail=f"least certain layer {k + 1}: wide-MLP {theory[k]:.3f}",
            scale=scale,
            figure="ratios_at_init.png",
        ),
    ]


# ---------------------------------------------------------------------------------------------
# Training.
# ---------------------------------------------------------------------------------------------
def _mean_log_loss(loss: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.log(loss).mean(axis=-1)
    return np.where(np.isfinite(value), value, np.inf)


def _late_loss(loss: np.ndarray, fraction: float) -> np.ndarray:
    tail = max(1, math.ceil(fraction * loss.shape[-1]))
    value = loss[..., -tail:].mean(axis=-1)
    return np.where(np.isfinite(value), value, np.inf)


def best_lr_runs(result, config: InitTrainingConfig) -> tuple[float, np.ndarray]:
    """The fastest-converging lr of one training unit and its runs' row indices, ordered by
    seed index (module docstring)."""
    loss = result.curves["loss"]
    lrs = np.array([c["lr"] for c in result.conditions])
    score = (
        _mean_log_loss(loss)
        if config.lr_selection == "mean_log_loss"
        else _late_loss(loss, config.late_fraction)
    )
    candidates = sorted(set(lrs.tolist()))
    means = [float(np.mean(score[lrs == lr])) for lr in candidates]
    best = candidates[int(np.argmin(means))]
    rows = np.flatnonzero(lrs == best)
    order = np.argsort([result.conditions[i]["seed_index"] for i in rows])
    return best, rows[order]


def _ratio_curves(result, rows: np.ndarray) -> np.ndarray:
    """``(runs, layers, T)``: every layer's ratio during training."""
    names = sorted((k for k in result.curves if k.startswith("ratio_")), key=lambda k: int(k[6:]))
    return np.stack([result.curves[name][rows] for name in names], axis=1)


def training_summary(results: Results, config: InitTrainingConfig, task: str, optimiser: str):
    """Per init: best lr, per-seed mean ln-loss, late loss, time to level and final ratios."""
    summary = {}
    for init in config.inits:
        result = results[f"train-{task}-{optimiser}-{init}"]
        lr, rows = best_lr_runs(result, config)
        loss = result.curves["loss"][rows]
        level = config.loss_level * float(result.arrays["label_entropy"][0])
        summary[init] = {
            "lr": lr,
            "rows": rows,
            "speed": _mean_log_loss(loss),
            "late": _late_loss(loss, config.late_fraction),
            "time_to_level": np.array([first_below(result.steps, c, level) for c in loss]),
            "level": level,
            "ratios": _ratio_curves(result, rows),
            "steps": result.steps,
            "loss": loss,
        }
    return summary


def _paired(first: np.ndarray, second: np.ndarray) -> Estimate:
    difference = first - second
    if not np.all(np.isfinite(difference)):
        return Estimate(float("nan"), float("nan"), float("nan"), len(difference))
    return mean_ci(difference)


def training_claims(
    summary: dict, config: InitTrainingConfig, task: str, optimiser: str
) -> list[Claim]:
    """The §5 claims for one task and optimiser from :func:`training_summary`."""
    scale_runs, bias_runs = summary["scale"], summary["scale_bias"]
    where = f"{task}-{optimiser}"
    scale = _scale(config, task, f", {optimiser}, {config.steps} steps, {config.n_seeds} seeds")
    lrs = f"best lr: scale {scale_runs['lr']:g}, scale+bias {bias_runs['lr']:g}"
    ratio_scale = np.nanmean(scale_runs["ratios"][:, :, -1], axis=0)
    ratio_bias = np.nanmean(bias_runs["ratios"][:, :, -1], axis=0)
    relative = np.abs(ratio_scale - ratio_bias) / (0.5 * (ratio_scale + ratio_bias))
    claims = [
        above(
            f"scale-bias-faster-{where}",
            "Initialising the biases (scale+bias) trains faster than scale alone.",
            quantity="mean ln-loss over the run: scale − scale+bias (paired by seed)",
            measured=_paired(scale_runs["speed"], bias_runs["speed"]),
            bound=0.0,
            source=f"{SEED} §5.3, Fig. 4",
            note="speed = mean ln-loss over the recorded steps [I]",
            detail=lrs,
            scale=scale,
            figure="training_loss.png",
        ),
        above(
            f"scale-bias-lower-late-{where}",
            "scale+bias's loss stays lower than scale's well after the ratios have converged.",
            quantity=f"late loss (last {config.late_fraction:.0%} of steps): scale − scale+bias",
            measured=_paired(scale_runs["late"], bias_runs["late"]),
            bound=0.0,
            source=f"{SEED} §5.3, Fig. 4",
            note="the seed looks past 10k iterations; this run ends at the last step [I]",
            detail=lrs,
            scale=scale,
            figure="training_loss.png",
        ),
        below(
            f"ratios-converge-{where}",
            "The two inits' per-layer ratios converge to similar values after a few thousand "
            "iterations.",
            quantity="largest per-layer |r_scale − r_scale+bias| / mean at the last step",
            measured=float(np.nanmax(relative)) if np.isfinite(relative).any() else float("nan"),
            bound=config.ratio_tolerance,
            source=f"{SEED} §5.3",
            note="tolerance [I]; seed-mean ratios at each init's best lr",
            detail="per layer: " + ", ".join(f"{v:.2f}" for v in relative),
            scale=scale,
            figure="ratio_trajectories.png",
        ),
    ]
    if "batchnorm" in summary:
        claims.append(
            above(
                f"batchnorm-faster-than-scale-{where}",
                "BatchNorm, which preserves the sample variance by construction (§4), trains "
                "faster than the total-variance-preserving scale init.",
                quantity="mean ln-loss over the run: scale − BatchNorm (paired by seed)",
                measured=_paired(scale_runs["speed"], summary["batchnorm"]["speed"]),
                bound=0.0,
                source=f"{SEED} §4 and §5.3, Fig. 4",
                note="the seed plots BatchNorm beside both inits without ranking it: inferred [I]",
                detail=f"best lr: BatchNorm {summary['batchnorm']['lr']:g}",
                scale=scale,
                figure="training_loss.png",
            )
        )
    return claims


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


def analyse(results: Results, config: InitTrainingConfig) -> Analysis:
    ratios = {task: results[f"ratios-{task}"].curves["ratio"] for task in config.tasks}
    claims = ratio_claims(ratios, config)
    metrics: dict[str, float] = {}
    for task, r in ratios.items():
        for layer, value in enumerate(r.mean(axis=0), start=1):
            metrics[f"{task}_init_ratio_layer_{layer}"] = float(value)
    if config.train:
        for task in config.tasks:
            for optimiser in config.optimisers:
                summary = training_summary(results, config, task, optimiser)
                claims += training_claims(summary, config, task, optimiser)
                metrics.update(_training_metrics(summary, task, optimiser))
    return Analysis(claims, metrics)
