"""The scorecard: seed 004's statements on image data (fig. 1, 7, 8), each a
:class:`~relulab.experiments.claims.ClaimSpec` with its seed figure in ``source``, a 95 % interval
over seeds and the scale it was measured at.

The alignment claims share their criterion and settings with the toy-task study
(:mod:`relulab.experiments.seed004`: :func:`relulab.analysis.paired_alignments` on the
full-data training loss, ReLU against the linear network of the same seed and variant, best
time shift and rescaling, Student-t interval of the mean gap); their window is the images' own
"early in training": it ends when the ReLU network has made ``window_fraction`` of its drop over
the first ``early_steps`` SGD steps (:func:`early_windows`), not when the linear network has made
that share of its whole drop (on images that spans its slow creep over the whole horizon).
The rank and test-error claims compare ReLU networks with and without
the constant pixel at the point each stopped (mean difference with Welch's interval; networks
that never reached the stopping loss are left out and counted in the detail).

:data:`CLAIMS` holds every data family's specs — MNIST's (fig. 1, 7; also run on Fashion-MNIST,
under ids that name it) and CIFAR-10's (fig. 8); :meth:`Claims.at` gives those a run measures:
its data family's, on the preprocessings it ran.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from relulab.analysis import (
    Estimate,
    early_window,
    first_below,
    mean_difference_ci,
    paired_alignments,
)
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import ClaimSpec, Reading, evaluate
from relulab.experiments.criteria import Below
from relulab.experiments.linearization_images.config import LinearizationImagesConfig, scale
from relulab.experiments.linearization_images.units import ACTIVATIONS, pair, unit_name
from relulab.experiments.seed004 import SEED, alignment_reading, alignment_spec
from relulab.store import UnitResult

__all__ = [
    "CLAIMS",
    "Claims",
    "alignments",
    "analyse",
    "at_stop",
    "early_windows",
    "lower_with_bias",
    "metrics",
    "parting_steps",
]

Config = LinearizationImagesConfig
EARLY = (
    "early in training ('aligned in early training', §3): until the ReLU network has made "
    "window_fraction of its drop over the first early_steps SGD steps (the seed's first epoch)"
)
STOP_NOTE = (
    "at each network's own stop (mean per-sample loss first ≤ stop_loss; a substitute "
    "stop loss where the run sets one, said in the scale)"
)


def early_windows(relu: UnitResult, config: Config) -> np.ndarray:
    r"""Per seed the end of the ReLU network's early phase: the first recorded step at which
    its loss has made ``window_fraction`` of its drop over the first ``early_steps`` steps
    (:func:`relulab.analysis.early_window` on that stretch of its curve).

    .. math:: t_w = \min\{t \le t_e : L(t) \le L(t_e) + (1 - f)\,(L(0) - L(t_e))\}

    Args:
        relu: the ReLU unit.
        config: ``early_steps`` (:math:`t_e`) and ``window_fraction`` (:math:`f`).

    Returns:
        ``(seeds,)`` steps.

    Example:
        >>> steps = np.arange(0.0, 2000.0, 5.0)
        >>> loss = np.stack([0.2 + 0.3 * np.exp(-steps / 50)])
        >>> unit = UnitResult([{}], steps, {"full_loss": loss}, {}, np.zeros(1, bool),
        ...                   np.full(1, -1), {})
        >>> early_windows(unit, Config(real_data=False)).tolist()
        [150.0]
    """
    inside = relu.steps <= config.early_steps
    steps = relu.steps[inside]
    curves = relu.curves["full_loss"]
    return np.array([early_window(steps, row[inside], config.window_fraction) for row in curves])


def alignments(relu: UnitResult, linear: UnitResult, config: Config) -> np.ndarray:
    """Per seed ``(gap, shift, unshifted gap, rescaling κ)`` of
    :func:`relulab.analysis.paired_alignments`: the ReLU network's full-data loss against the
    linear network's of the same seed over the ReLU network's early window
    (:func:`early_windows`), after the best shift (up to ``max_shift`` of the window) and time
    rescaling (up to ``max_rescale``: the seed's "mode-wise time shift", §5), ``(seeds, 4)``."""
    return paired_alignments(
        linear.steps,
        relu.curves["full_loss"],
        linear.curves["full_loss"],
        config.window_fraction,
        config.max_shift,
        max_rescale=config.max_rescale,
        window_ends=early_windows(relu, config),
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


# ---------------------------------------------------------------------------------------------
# Alignment (fig. 1A, 7, 8): one measure per preprocessing and bias variant.
# ---------------------------------------------------------------------------------------------
def _alignment(results: Results, config: Config, norm: str, bias: bool) -> Reading:
    relu, linear = pair(results, norm, bias)
    reading = alignment_reading(alignments(relu, linear, config), scale(config))
    windows = np.round(early_windows(relu, config)).tolist()
    return dataclasses.replace(reading, detail=f"{reading.detail}; windows (steps) {windows}")


def _pixel_mean_bias(results: Results, config: Config) -> Reading:
    return _alignment(results, config, "pixel_mean", True)


def _pixel_mean_free(results: Results, config: Config) -> Reading:
    return _alignment(results, config, "pixel_mean", False)


def _standard_bias(results: Results, config: Config) -> Reading:
    return _alignment(results, config, "standard", True)


def _standard_free(results: Results, config: Config) -> Reading:
    return _alignment(results, config, "standard", False)


MNIST_ALIGNED = alignment_spec(
    "mnist-aligned-with-bias",
    "On MNIST with bias terms, loss curves of linear and ReLU networks are aligned in early "
    "training.",
    f"{SEED} §3, Fig. 1A",
    _pixel_mean_bias,
    figure="alignment.png",
    scope=EARLY,
)
MNIST_PARTS = alignment_spec(
    "mnist-part-without-bias",
    "On MNIST without bias terms, the loss curves of ReLU and linear networks diverge quickly.",
    f"{SEED} §3, Fig. 1A",
    _pixel_mean_free,
    figure="alignment.png",
    part=True,
    scope=EARLY,
)
MNIST_STANDARD_ALIGNED = alignment_spec(
    "mnist-standard-aligned-with-bias",
    "With standard preprocessing, early dynamics of linear and ReLU networks align (with bias).",
    f"{SEED} appendix C.1, Fig. 7",
    _standard_bias,
    figure="alignment.png",
    scope=EARLY,
)
MNIST_STANDARD_ALIGNED_FREE = alignment_spec(
    "mnist-standard-aligned-without-bias",
    "With standard preprocessing, early dynamics align independently of bias terms (without bias).",
    f"{SEED} appendix C.1, Fig. 7",
    _standard_free,
    figure="alignment.png",
    scope=EARLY,
)
CIFAR_ALIGNED = alignment_spec(
    "cifar-aligned-with-bias",
    "On CIFAR-10 with pixel-wise mean subtraction, loss curves are closely aligned early when "
    "the hidden layer has bias terms.",
    f"{SEED} appendix C.2, Fig. 8A",
    _pixel_mean_bias,
    figure="alignment.png",
    scope=EARLY,
)
CIFAR_STANDARD_ALIGNED = alignment_spec(
    "cifar-standard-aligned-with-bias",
    "On CIFAR-10 with standard preprocessing, ReLU and linear networks with bias terms align "
    "early.",
    f"{SEED} appendix C.2, Fig. 8B",
    _standard_bias,
    figure="alignment.png",
    scope=EARLY,
)
CIFAR_STANDARD_PARTS = alignment_spec(
    "cifar-standard-part-without-bias",
    "On CIFAR-10 with standard preprocessing, biases still drive early alignment: without them "
    "the curves part.",
    f"{SEED} appendix C.2, Fig. 8B",
    _standard_free,
    figure="alignment.png",
    part=True,
    scope=EARLY,
)


# ---------------------------------------------------------------------------------------------
# Rank and test error at the stop (fig. 1B, 1C).
# ---------------------------------------------------------------------------------------------
def lower_with_bias(bias: np.ndarray, free: np.ndarray, scale_text: str = "") -> Reading:
    """The mean difference (with − without the constant pixel, Welch interval) over the ReLU
    networks that stopped; with fewer than two per group the interval is unbounded (the claim
    is inconclusive), and with none in a group there is nothing to compare (not tested).

    Example:
        >>> lower_with_bias(np.array([1.0, 1.1, 0.9]), np.array([2.0, 2.1, 1.9])).measured.value
        -1.0
    """
    bias, free = np.asarray(bias, np.float64), np.asarray(free, np.float64)
    kept_bias, kept_free = bias[np.isfinite(bias)], free[np.isfinite(free)]
    detail = (
        f"with bias {np.round(kept_bias, 4).tolist()}; without {np.round(kept_free, 4).tolist()}; "
        f"stopped {kept_bias.size}/{bias.size} and {kept_free.size}/{free.size}"
    )
    if not (kept_bias.size and kept_free.size):
        return Reading(
            Estimate(math.nan, -math.inf, math.inf, 0),
            detail=detail,
            scale=scale_text,
            untested="no ReLU network of a group reached the stopping loss: nothing to compare",
        )
    return Reading(mean_difference_ci(kept_bias, kept_free), detail=detail, scale=scale_text)


def _relu_at_stop(results: Results, name: str, bias: bool) -> np.ndarray:
    relu, _ = pair(results, "pixel_mean", bias)
    return at_stop(relu, name)


def _rank(results: Results, config: Config) -> Reading:
    bias, free = (_relu_at_stop(results, "rank_at_stop", b) for b in (True, False))
    return lower_with_bias(bias, free, scale(config))


def _test_error(results: Results, config: Config) -> Reading:
    bias, free = (_relu_at_stop(results, "validation_error", b) for b in (True, False))
    return lower_with_bias(bias, free, scale(config))


def _difference(quantity: str) -> Below:
    return Below(f"{quantity}, ReLU with bias − ReLU without (mean difference)", 0.0)


MNIST_LOWER_RANK = ClaimSpec(
    "mnist-lower-rank-with-bias",
    "At loss 0.025, ReLU networks with bias (early linear phase) have a lower effective rank "
    "of HᵀH than without.",
    source=f"{SEED} §3, Fig. 1B",
    criterion=_difference("effective rank of HᵀH (held-out images)"),
    measure=_rank,
    scope="at each network's stop: its mean per-sample training loss first ≤ 0.025",
    note=STOP_NOTE,
    figure="rank_error.png",
)
MNIST_LOWER_TEST_ERROR = ClaimSpec(
    "mnist-lower-test-error-with-bias",
    "ReLU networks with an early linear phase (bias) have lower test error.",
    source=f"{SEED} §3, Fig. 1C",
    criterion=_difference("test error at the stop (held-out images)"),
    measure=_test_error,
    scope="at each network's stop: its mean per-sample training loss first ≤ 0.025",
    note=STOP_NOTE,
    figure="rank_error.png",
)


# ---------------------------------------------------------------------------------------------
# The specs, and those a run measures.
# ---------------------------------------------------------------------------------------------
class Claims(tuple):
    """The study's specs: every data family's (each has its controls in the tests).
    :meth:`at` gives those a run with a config measures."""

    def at(self, config: Config) -> tuple[ClaimSpec, ...]:
        """The specs of the run's data family (MNIST's for MNIST and Fashion-MNIST, named for
        the data; CIFAR-10's) on the preprocessings it ran, in scorecard order."""
        family = "mnist" if config.mnist_format else "cifar"
        return tuple(
            dataclasses.replace(spec, id=config.dataset + spec.id.removeprefix("mnist"))
            if family == "mnist"
            else spec
            for spec in self
            if spec.id.startswith(f"{family}-") and _PREPROCESSING[spec.id] in config.normalizations
        )


CLAIMS = Claims(
    (
        MNIST_ALIGNED,
        MNIST_PARTS,
        MNIST_STANDARD_ALIGNED,
        MNIST_STANDARD_ALIGNED_FREE,
        MNIST_LOWER_RANK,
        MNIST_LOWER_TEST_ERROR,
        CIFAR_ALIGNED,
        CIFAR_STANDARD_ALIGNED,
        CIFAR_STANDARD_PARTS,
    )
)
_PREPROCESSING = {  # the preprocessing whose units a claim reads
    spec.id: "standard" if "standard" in spec.id else "pixel_mean" for spec in CLAIMS
}


# ---------------------------------------------------------------------------------------------
# Metrics and the analysis.
# ---------------------------------------------------------------------------------------------
def _mean(values) -> float:
    """Mean over the finite values (NaN when there are none)."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def _unit_metrics(unit: UnitResult, key: str) -> dict[str, float]:
    stopped = np.asarray(unit.arrays["stopped_step"])
    return {
        f"stopped_share_{key}": float(np.mean(stopped >= 0)),
        f"stop_step_{key}": _mean(np.where(stopped >= 0, stopped, np.nan)),
        f"rank_at_stop_{key}": _mean(at_stop(unit, "rank_at_stop")),
        f"test_error_at_stop_{key}": _mean(at_stop(unit, "validation_error")),
        f"test_error_end_{key}": float(np.mean(unit.final["validation_error"])),
    }


def metrics(results: Results, config: Config) -> dict[str, float]:
    """Per preprocessing and bias variant: the alignment gap with its best rescaling and the
    early window it was measured over, the (unshifted) parting step, and per activation the
    stopped share, stop step, rank and test error (finite values only)."""
    values: dict[str, float] = {}
    for norm in config.normalizations:
        for bias in (True, False):
            variant = f"{norm}_{'bias' if bias else 'nobias'}"
            relu, linear = pair(results, norm, bias)
            rows = alignments(relu, linear, config)
            values[f"alignment_gap_{variant}"] = _mean(rows[:, 0])
            values[f"alignment_rescale_{variant}"] = _mean(rows[:, 3])
            values[f"early_window_{variant}"] = _mean(early_windows(relu, config))
            parting = parting_steps(relu, linear, config.alignment_tolerance)
            values[f"parting_step_{variant}"] = _mean(parting)
            for act in ACTIVATIONS:
                values.update(
                    _unit_metrics(results[unit_name(norm, bias, act)], f"{variant}_{act}")
                )
    return {k: v for k, v in values.items() if math.isfinite(v)}


def analyse(results: Results, config: Config) -> Analysis:
    """The claims of :data:`CLAIMS` this run measures (:meth:`Claims.at`) and the metrics."""
    return Analysis(evaluate(CLAIMS.at(config), results, config), metrics(results, config))
