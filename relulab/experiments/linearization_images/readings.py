"""Readings of the stored units shared by the claims, the metrics and the figures: the one
divergence policy (:data:`DIVERGENCE`), the images' early window, the paired loss alignments
(with and without the post-hoc window and rescaling), the parting step and the values at each
network's stop.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from relulab.analysis import DivergencePolicy, divergence_counts, early_window, first_below
from relulab.experiments.linearization_images.config import LinearizationImagesConfig
from relulab.experiments.linearization_images.units import Training
from relulab.experiments.seed004 import rescaled_alignments, shifted_alignments

__all__ = [
    "DIVERGENCE",
    "alignments",
    "at_stop",
    "diverged",
    "divergence_by_group",
    "early_windows",
    "parting_steps",
    "shift_only_alignments",
    "whole_run_alignments",
    "whole_run_windows",
]

Config = LinearizationImagesConfig


DIVERGENCE = DivergencePolicy(math.inf, "training loss")
"""The study's one divergence policy: engine-frozen on a non-finite value, or a non-finite
recorded training loss (no finite cap: the seed's small-init, small-lr SGD loss only falls)."""


def diverged(view: Training) -> np.ndarray:
    """Per network, whether it diverged under :data:`DIVERGENCE` (``(S,)`` booleans).

    Example:
        >>> from relulab.records import UnitResult
        >>> steps = np.arange(3.0)
        >>> loss = np.array([[1.0, 0.5, 0.4], [1.0, np.inf, np.inf]])
        >>> result = UnitResult([{}, {}], steps, {"full_loss": loss}, {"validation_error":
        ...     np.zeros(2)}, np.zeros(2, bool), np.full(2, -1), {"stopped_step": np.full(2, -1),
        ...     "rank_at_stop": np.ones(2), "centred_rank_at_stop": np.ones(2)})
        >>> diverged(Training.read(result)).tolist()
        [False, True]
    """
    return DIVERGENCE.diverged(view.diverged, view.full_loss)


def divergence_by_group(groups: Mapping[str, Training]) -> dict[str, tuple[int, int]]:
    """Per group (a unit's networks): (networks that diverged, networks)."""
    return {
        name: divergence_counts(diverged(view), {name: range(view.n_networks)})[name]
        for name, view in groups.items()
    }


def early_windows(relu: Training, config: Config) -> np.ndarray:
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
        >>> from relulab.records import UnitResult
        >>> steps = np.arange(0.0, 2000.0, 5.0)
        >>> loss = np.stack([0.2 + 0.3 * np.exp(-steps / 50)])
        >>> result = UnitResult([{}], steps, {"full_loss": loss}, {"validation_error":
        ...     np.zeros(1)}, np.zeros(1, bool), np.full(1, -1), {"stopped_step": np.full(1, -1),
        ...     "rank_at_stop": np.ones(1), "centred_rank_at_stop": np.ones(1)})
        >>> early_windows(Training.read(result), Config(real_data=False)).tolist()
        [150.0]
    """
    inside = relu.steps <= config.early_steps
    steps = relu.steps[inside]
    return np.array(
        [early_window(steps, row[inside], config.window_fraction) for row in relu.full_loss]
    )


def alignments(
    relu: Training, linear: Training, config: Config, windows: np.ndarray | None = None
) -> np.ndarray:
    """Per seed ``(gap, 0, unshifted gap, rescaling κ)``: the ReLU network's full-data loss
    against the linear network's of the same seed over the ReLU network's early window
    (:func:`early_windows`, or ``windows``), after the best time rescaling
    :math:`1 \\le \\kappa \\le 1 +` ``max_rescale`` and no shift — both seed-004 studies' one
    measure (:func:`relulab.experiments.seed004.rescaled_alignments`), ``(seeds, 4)``."""
    windows = early_windows(relu, config) if windows is None else windows
    return rescaled_alignments(linear.steps, relu.full_loss, linear.full_loss, config, windows)


def whole_run_windows(relu: Training, linear: Training, config: Config) -> np.ndarray:
    """Per seed the toy tasks' window: the first recorded step at which the *linear* network
    has made ``window_fraction`` of its drop over the whole run."""
    return np.array(
        [early_window(linear.steps, row, config.window_fraction) for row in linear.full_loss]
    )


def whole_run_alignments(
    relu: Training, linear: Training, config: Config, windows: np.ndarray | None = None
) -> np.ndarray:
    """:func:`alignments` without the images' early window: over the linear network's own
    early window (:func:`whole_run_windows`, the toy tasks' window), or ``windows``."""
    windows = whole_run_windows(relu, linear, config) if windows is None else windows
    return rescaled_alignments(linear.steps, relu.full_loss, linear.full_loss, config, windows)


def shift_only_alignments(
    relu: Training, linear: Training, config: Config, windows: np.ndarray | None = None
) -> np.ndarray:
    """:func:`alignments` without the time rescaling: the best additive shift alone (up to
    ``max_shift`` of the window; the measure before issue 30, a metric since issue 45)."""
    windows = early_windows(relu, config) if windows is None else windows
    return shifted_alignments(linear.steps, relu.full_loss, linear.full_loss, config, windows)


def parting_steps(relu: Training, linear: Training, tolerance: float) -> np.ndarray:
    """Per seed, the first recorded step at which the ReLU and linear training losses differ
    by more than ``tolerance`` in log (no shift; NaN if never) — a metric beside the alignment
    claims, whose window can span the linear network's slow late decline."""
    gap = np.abs(np.log(relu.full_loss) - np.log(linear.full_loss))
    return np.array([first_below(relu.steps, -row, -tolerance) for row in gap])


def at_stop(view: Training, values: np.ndarray) -> np.ndarray:
    """Per network, ``values`` (one per network: ``view.rank_at_stop``,
    ``view.validation_error``) where it reached its stopping loss, NaN where it never did or
    diverged (:data:`DIVERGENCE`): the networks both claims read at the stop leave out."""
    kept = view.stopped & ~diverged(view)
    return np.where(kept, np.asarray(values, dtype=np.float64), np.nan)


# ---------------------------------------------------------------------------------------------
# Alignment (fig. 1A, 7, 8): one measure per preprocessing and bias variant.
