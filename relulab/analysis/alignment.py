r"""How closely two training curves follow each other, and how much of a representation a set of
features explains (seed ``004_…`` §4, fig. 2B/2D and appendix D).

* :func:`early_window` — the end of a reference run's early phase: the first recorded step at
  which its loss has made a given share of its total drop;
* :func:`loss_alignment` — the largest gap in log-loss between two runs over a window, after
  the best time shift and time rescaling within bounds: :math:`\min_{\delta,\kappa} \max_t
  |\ln L(t) - \ln L_{ref}((t - \delta)/\kappa)|`, with the :math:`\delta` and
  :math:`\kappa` that attain it;
* :func:`paired_alignments` — :func:`loss_alignment` of each run against its paired reference
  (same seed) over the reference's own early window, as an ``(n, 4)`` table;
* :func:`variance_explained` — the share of a representation's variance across inputs that a
  least-squares fit from features explains (seed 004 appendix D).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LossAlignment",
    "early_window",
    "loss_alignment",
    "paired_alignments",
    "variance_explained",
]


def early_window(steps: np.ndarray, reference: np.ndarray, fraction: float = 0.95) -> float:
    r"""First recorded step at which ``reference`` has made ``fraction`` of its total drop.

    .. math:: \min\{t : L(t) \le L(T) + (1 - \text{fraction})\,(L(0) - L(T))\}

    Args:
        steps: recording steps ``(T,)``.
        reference: the reference run's loss ``(T,)`` (e.g. the linear network's).
        fraction: the share of the drop, in (0, 1).

    Returns:
        The step (the last step if the curve never drops).

    Example:
        >>> early_window(np.arange(5), np.array([1.0, 0.5, 0.2, 0.05, 0.0]), 0.9)
        3.0
    """
    reference = np.asarray(reference, dtype=np.float64)
    level = reference[-1] + (1.0 - fraction) * (reference[0] - reference[-1])
    below = np.flatnonzero(reference <= level)
    return float(steps[below[0]] if below.size and reference[0] > reference[-1] else steps[-1])


@dataclass(frozen=True)
class LossAlignment:
    """Result of :func:`loss_alignment`.

    Attributes:
        gap: the largest :math:`|\\ln L - \\ln L_{ref}|` over the window after the best shift
            and rescaling.
        shift: the best shift :math:`\\delta` in steps (positive: the run lags the reference).
        unshifted: the same gap with :math:`\\delta = 0` and :math:`\\kappa = 1`.
        rescale: the best time rescaling :math:`\\kappa` (above 1: the run is slower than the
            reference by that factor; 1 when no rescaling was allowed).
    """

    gap: float
    shift: float
    unshifted: float
    rescale: float = 1.0


def loss_alignment(
    steps: np.ndarray,
    loss: np.ndarray,
    reference: np.ndarray,
    window_end: float,
    max_shift: float = 0.0,
    n_shifts: int = 81,
    max_rescale: float = 0.0,
    n_rescales: int = 41,
    slower_only: bool = False,
) -> LossAlignment:
    r"""Alignment of a run's loss with a reference run's over the early window.

    .. math::
        g = \min_{|\delta| \le \delta_{max},\ |\ln\kappa| \le \ln(1 + r)}\ \max_{t \le t_w}
        \bigl|\ln L(t) - \ln L_{ref}\bigl((t - \delta)/\kappa\bigr)\bigr|,

    the reference interpolated linearly in log-loss between recordings and held at its first
    value before step 0; ``t`` runs over the recorded steps up to ``window_end``. The seed's
    "closely aligned (with a slight time shift)" reads as a small :math:`g` (seed 004 §4, fig.
    2B, 2D). Its mechanism is a *mode-wise* shift — each mode of the ReLU net lags the linear
    net's by a share of that mode's own learning time (§5, eq. 14: the delay scales with
    :math:`1/s_\alpha`) — which a time rescaling :math:`t \to \kappa t` captures and one additive
    shift for all modes does not. With ``max_rescale = 0`` only the shift is searched; with
    ``max_shift = 0`` only the rescaling.

    Args:
        steps: recording steps ``(T,)``, ascending.
        loss: the run's loss ``(T,)``, positive.
        reference: the reference's loss ``(T,)``, positive.
        window_end: last step of the window (e.g. :func:`early_window`).
        max_shift: :math:`\delta_{max}` in steps.
        n_shifts: shifts tried on an even grid over :math:`[-\delta_{max}, \delta_{max}]`.
        max_rescale: :math:`r`: rescalings :math:`\kappa \in [1/(1+r), 1+r]` are tried.
        n_rescales: rescalings tried, evenly spaced in :math:`\ln\kappa`.
        slower_only: try only :math:`\kappa \in [1, 1+r]` (the run no faster than the
            reference; ``n_rescales // 2 + 1`` of them).

    Returns:
        :class:`LossAlignment`.

    Example:
        >>> t = np.arange(0.0, 100.0)
        >>> ref = np.exp(-t / 10)
        >>> late = np.exp(-np.maximum(t - 5, 0) / 10)
        >>> a = loss_alignment(t, late, ref, window_end=60, max_shift=10, n_shifts=21)
        >>> round(a.gap, 9), a.shift, round(a.unshifted, 3)
        (0.0, 5.0, 0.5)
        >>> slow = np.exp(-t / 12)
        >>> b = loss_alignment(t, slow, ref, window_end=60, max_rescale=0.44, n_rescales=41)
        >>> round(b.gap, 9), round(b.rescale, 6)
        (0.0, 1.2)
    """
    steps = np.asarray(steps, dtype=np.float64)
    log_loss = np.log(np.maximum(np.asarray(loss, dtype=np.float64), np.finfo(float).tiny))
    log_ref = np.log(np.maximum(np.asarray(reference, dtype=np.float64), np.finfo(float).tiny))
    inside = steps <= window_end
    shifts = np.linspace(-max_shift, max_shift, n_shifts) if max_shift > 0 else np.zeros(1)
    rescales = _rescale_grid(max_rescale, n_rescales, slower_only)
    gaps = np.array(
        [
            [
                np.max(
                    np.abs(log_loss[inside] - np.interp((steps[inside] - d) / k, steps, log_ref))
                )
                for d in shifts
            ]
            for k in rescales
        ]
    )
    best_k, best_d = np.unravel_index(
        int(np.argmin(np.where(np.isfinite(gaps), gaps, np.inf))), gaps.shape
    )
    unshifted = float(np.max(np.abs(log_loss[inside] - log_ref[inside])))
    return LossAlignment(
        float(gaps[best_k, best_d]), float(shifts[best_d]), unshifted, float(rescales[best_k])
    )


def _rescale_grid(max_rescale: float, n_rescales: int, slower_only: bool = False) -> np.ndarray:
    r"""Rescalings :math:`\kappa` evenly spaced in :math:`\ln\kappa` over
    :math:`[1/(1+r), 1+r]` (``slower_only``: over :math:`[1, 1+r]`), with :math:`\kappa = 1`
    exactly on the grid.

    Example:
        >>> _rescale_grid(0.21, 5, slower_only=True).round(3).tolist()
        [1.0, 1.1, 1.21]
    """
    if max_rescale <= 0:
        return np.ones(1)
    half = max(n_rescales // 2, 1)
    low = 0.0 if slower_only else -1.0
    return np.exp(
        np.linspace(low, 1.0, half + 1 if slower_only else 2 * half + 1) * np.log1p(max_rescale)
    )


def paired_alignments(
    steps: np.ndarray,
    losses: np.ndarray,
    references: np.ndarray,
    window_fraction: float = 0.95,
    max_shift: float = 0.0,
    max_rescale: float = 0.0,
    window_ends: np.ndarray | None = None,
    slower_only: bool = False,
) -> np.ndarray:
    r"""Alignment of each run with its paired reference run (e.g. the ReLU and linear network
    of one seed), each over the reference's early window.

    For pair ``i``: :math:`t_w` = :func:`early_window` of ``references[i]`` at
    ``window_fraction`` (or ``window_ends[i]`` when given), then :func:`loss_alignment` of
    ``losses[i]`` against ``references[i]`` up to :math:`t_w` with shifts up to ``max_shift`` ·
    :math:`t_w` and rescalings up to ``max_rescale`` — the alignment measure of seed ``004_…``
    (§4, fig. 1A, 2B, 2D) as relulab reads it.

    Args:
        steps: recording steps ``(T,)``, shared by every run.
        losses: the runs' losses ``(n, T)``.
        references: the paired references' losses ``(n, T)``.
        window_fraction: share of the reference's drop that ends its early window.
        max_shift: largest time shift as a share of the window.
        max_rescale: :math:`r` of :func:`loss_alignment` (0: no rescaling).
        window_ends: per pair the window's last step ``(n,)``, replacing the reference's early
            window (e.g. a window tied to the run's own first drop).
        slower_only: rescalings :math:`\kappa \ge 1` only (:func:`loss_alignment`).

    Returns:
        ``(n, 4)``: per pair the gap, the best shift (steps), the unshifted gap and the best
        rescaling :math:`\kappa`.

    Raises:
        ValueError: ``losses`` and ``references`` hold different numbers of runs (rows), so
            they cannot be paired, or ``window_ends`` another number.

    Example:
        >>> t = np.arange(0.0, 100.0)
        >>> ref = np.exp(-t / 10)
        >>> rows = paired_alignments(t, np.stack([ref, ref ** 2]), np.stack([ref, ref]))
        >>> rows[:, 0].round(3).tolist()
        [0.0, 3.0]
    """
    losses, references = np.asarray(losses), np.asarray(references)
    ends: Sequence[float] | np.ndarray = (
        [early_window(steps, r, window_fraction) for r in references]
        if window_ends is None
        else window_ends
    )
    rows = []
    for loss, reference, window in zip(losses, references, ends, strict=True):
        result = loss_alignment(
            steps,
            loss,
            reference,
            float(window),
            max_shift * float(window),
            max_rescale=max_rescale,
            slower_only=slower_only,
        )
        rows.append((result.gap, result.shift, result.unshifted, result.rescale))
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def variance_explained(representation: np.ndarray, features: np.ndarray) -> float:
    r"""Share of a representation's variance across inputs explained by features (seed 004
    appendix D, after Lampinen et al. 2024).

    With :math:`\tilde Y` the representation ``(P, units)`` and :math:`\tilde X` the features
    ``(P, q)``, both centred over the P inputs (the fit's intercept),

    .. math::
        R^2 = 1 - \frac{\lVert\tilde Y - \tilde X\hat W\rVert_F^2}{\lVert\tilde Y\rVert_F^2},
        \qquad \hat W = \arg\min_W \lVert\tilde Y - \tilde X W\rVert_F^2 .

    This regresses the representation *on* the features — the direction appendix D uses —
    unlike :func:`relulab.nn.statistics.r_squared`, which predicts features from a
    representation.

    Args:
        representation: ``(P, units)``.
        features: ``(P,)`` or ``(P, q)``.

    Returns:
        :math:`R^2` in [0, 1]; NaN for a representation that does not vary across inputs.

    Example:
        >>> s = np.array([1.0, 1, 0, 0])
        >>> H = np.outer(s, [2.0, -1.0]) + 3.0
        >>> round(variance_explained(H, s), 12)
        1.0
    """
    Y = np.asarray(representation, dtype=np.float64)
    X = np.asarray(features, dtype=np.float64).reshape(Y.shape[0], -1)
    Y = Y - Y.mean(axis=0)
    X = X - X.mean(axis=0)
    total = float(np.sum(Y * Y))
    if total <= 0:
        return float("nan")
    coef, *_ = np.linalg.lstsq(X, Y, rcond=None)
    residual = Y - X @ coef
    return 1.0 - float(np.sum(residual * residual)) / total
