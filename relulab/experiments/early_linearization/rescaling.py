"""The alignment of a ReLU loss with its linear twin's (seed 004 §4, fig. 2B/2D) as the claims
read it, and the slow-down eq. 14 predicts for it.

The measure is the one both seed-004 studies share (:mod:`relulab.experiments.seed004`): the
largest log gap over the linear network's early window after the best time rescaling
:math:`1 \\le \\kappa \\le 1 + r`, no additive shift. The bound :math:`r` is a reading
(``rescale_bound``): ``max_rescale`` (0.25), or **eq. 14's own slow-down** of the variant
(:func:`eq14_rescale`) — the seed's "small, mode-wise time shift" taken at the size §5.4
derives for it.

* :func:`eq14_rescale` — eq. 14's κ of a variant: per mode the ratio of eq. 13's hitting times
  from :math:`a_0\\bar g` and from :math:`a_0` (appendix F.4: a ReLU mode starts at
  :math:`a_0\\bar g`, :math:`\\bar g` the share of units alive at initialisation), mean over the
  task's modes;
* :func:`rescale_bound` — the claims' :math:`r` under the config's reading;
* :func:`alignment_table`, :func:`alignments`, :func:`alignment_gaps` — the per-pair rows
  ``(gap, shift, unshifted gap, κ)``; :func:`linear_windows` — the linear networks' early
  windows (the parts claims judge both pairs of a seed over its bias pair's window).
"""

from __future__ import annotations

import math

import numpy as np

from relulab.analysis import early_window, where
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.units import Stored, Training, as_view, augmented_task
from relulab.experiments.seed004 import rescaled_alignments, shifted_alignments
from relulab.theory.deep_linear import aligned_modes, hitting_time, learning_time_constant

__all__ = [
    "alignment_gaps",
    "alignment_table",
    "alignments",
    "eq14_rescale",
    "eq14_ratios",
    "linear_windows",
    "rescale_bound",
]

Config = EarlyLinearizationConfig


def eq14_ratios(X: np.ndarray, Y: np.ndarray, kept: float, a0: float, lr: float) -> np.ndarray:
    """Per mode of the data ``(X̃, Y)`` (sample-major, constant included) with ``s > 0``, the
    ratio of eq. 13's hitting times to half the mode's asymptote from :math:`a_0\\bar g` and
    from :math:`a_0` — eq. 14's delay as a slow-down, :math:`1 + \\Delta\\hat t/\\hat t_{lin}`
    (NaN where the mode starts above half its asymptote).

    Raises:
        ValueError: the data's Σyx and Σx are not simultaneously diagonal (eq. 13's modes do
            not apply; :func:`~relulab.theory.deep_linear.aligned_modes`).

    Example:
        >>> X = np.hstack([np.eye(4), np.ones((4, 1))])
        >>> Y = np.array([[1.0, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]])
        >>> np.round(eq14_ratios(X, Y, kept=0.8, a0=0.0064, lr=2e-4), 3).tolist()
        [1.044, 1.042]
    """
    modes = aligned_modes(np.asarray(X).T, np.asarray(Y).T)
    keep = modes.s > 0
    s, d = modes.s[keep], modes.d[keep]
    if not keep.any():
        return np.zeros(0)
    tau = learning_time_constant(len(X), lr)
    half = 0.5 * s / d
    with np.errstate(invalid="ignore"):
        ratio = hitting_time(half, s, d, a0 * kept, tau) / hitting_time(half, s, d, a0, tau)
    return np.where(np.isfinite(ratio), ratio, np.nan)


def eq14_rescale(relu: Stored, config: Config, **match) -> float:
    """Eq. 14's slow-down κ of the matched ReLU networks behind their linear twins: the mean over
    the task's modes of :func:`eq14_ratios`, with :math:`\\bar g` the mean share of units alive
    at step 0 (1 − dead fraction) and :math:`a_0 = N\\sigma^2/2` (the study's width, the
    networks' σ²). Eq. 14 has no readout bias: on the both-layer variants it is the hidden
    path's κ. 1 where no mode can be learned (nothing to delay); NaN where eq. 13's modes do
    not apply (the uncentred XOR encodings: Σyx and Σx not simultaneously diagonal)."""
    view = as_view(relu, Training)
    index = list(where(view.conditions, **match))
    row = view.conditions[index[0]]
    kept = 1.0 - float(np.mean(view.dead_fraction[index, 0]))
    X, Y = augmented_task(row["task"], config, row["c"], row["delta"])
    a0 = 0.5 * config.hidden * float(row["variance"])
    try:
        ratios = eq14_ratios(X, Y, max(kept, 1e-6), a0, config.lr)
    except ValueError:
        return float("nan")
    finite = ratios[np.isfinite(ratios)]
    return float(np.mean(finite)) if finite.size else 1.0


def rescale_bound(relu: Stored, config: Config, **match) -> float:
    """The claims' rescaling bound :math:`r` (κ ≤ 1 + r) for the matched networks:
    ``max_rescale``, or under ``rescale_bound = "eq14"`` their :func:`eq14_rescale` − 1
    (``max_rescale`` where eq. 14 does not apply: metrics only, no claim reads those data)."""
    kappa = eq14_rescale(relu, config, **match) if config.rescale_bound == "eq14" else math.nan
    return max(kappa - 1.0, 0.0) if math.isfinite(kappa) else config.max_rescale


def alignment_table(
    steps: np.ndarray,
    losses: np.ndarray,
    references: np.ndarray,
    config: Config,
    additive: bool = False,
    window_ends: np.ndarray | None = None,
    max_rescale: float | None = None,
) -> np.ndarray:
    """Per pair ``(gap, shift, unshifted gap, κ)`` for ReLU ``losses`` against linear
    ``references`` ``(n, T)``, over each reference's early window (or ``window_ends``): the
    claims' measure, :func:`~relulab.experiments.seed004.rescaled_alignments` (bound
    ``max_rescale``, default the config's); with ``additive`` the one-shift gap kept as a metric
    (:func:`~relulab.experiments.seed004.shifted_alignments`)."""
    if additive:
        return shifted_alignments(steps, losses, references, config, window_ends)
    return rescaled_alignments(steps, losses, references, config, window_ends, max_rescale)


def linear_windows(linear: Stored, config: Config, **match) -> np.ndarray:
    """Per matched linear network, the end of its early window: the first recorded step at
    which it has made ``window_fraction`` of its drop."""
    view = as_view(linear, Training)
    index = list(where(view.conditions, **match))
    return np.array(
        [early_window(view.steps, row, config.window_fraction) for row in view.loss[index]]
    )


def alignments(
    relu: Stored,
    linear: Stored,
    config: Config,
    *,
    additive: bool = False,
    window_ends: np.ndarray | None = None,
    **match,
) -> np.ndarray:
    """:func:`alignment_table` of the ReLU loss against the linear loss of the same seed and
    variant, for the networks matching ``match``, ``(n, 4)``, under the config's rescaling bound
    (:func:`rescale_bound`); ``window_ends``: per network, in place of the linear windows."""
    relu_view, linear_view = as_view(relu, Training), as_view(linear, Training)
    index = list(where(relu_view.conditions, **match))
    bound = None if additive else rescale_bound(relu_view, config, **match)
    loss, reference = relu_view.loss[index], linear_view.loss[index]
    return alignment_table(relu_view.steps, loss, reference, config, additive, window_ends, bound)


def alignment_gaps(
    relu: Stored,
    linear: Stored,
    config: Config,
    *,
    additive: bool = False,
    **match,
) -> np.ndarray:
    """The gaps of :func:`alignments`, one per matched network."""
    return alignments(relu, linear, config, additive=additive, **match)[:, 0]
