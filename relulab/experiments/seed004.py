"""What both seed-004 studies share (``early-linearization`` on toy tasks, ``linearization-images``
on image data): the alignment of a ReLU network's loss with the linear network's as a claim, and
the settings of that measure — **one scoring convention** for both studies (issue 45).

The measure is :func:`relulab.analysis.paired_alignments` on a **log scale**: per seed, the
largest :math:`|\\ln L_{ReLU}(t) - \\ln L_{lin}(t/\\kappa)|` over the reference's early window
(until it has made ``window_fraction`` of its drop), after the best **time rescaling**
:math:`1 \\le \\kappa \\le 1 +` ``max_rescale`` and **no additive shift**:

* the rescaling is the seed's "small, mode-wise time shift determined by the fraction of dead
  and non-linear units" (§5; eq. 14's delay scales with each mode's own :math:`1/s_\\alpha`), which
  one shift for all modes does not follow (the one-shift gap, :func:`shifted_alignments`, is a
  metric in both studies);
* it is one-sided, :math:`\\kappa \\ge 1`: "dead neurons always increase the hitting time"
  (§5.4) and "will always slow down learning" (F.4) — a ReLU curve ahead of the linear one has
  left the linear dynamics, it is not the seed's time shift.

A pair is *aligned* when the mean gap over seeds is below ``alignment_tolerance`` on its 95 %
Student-t interval. "Without bias they part" is a **paired contrast** in both studies
(:func:`parts`): the bias-free pair's gap exceeds the bias pair's, seed by seed, both measured
over the *bias pair's* window ("in contrast", §3; "the connection breaks down", §4 — the
stretch of training where the bias pair is aligned), and the bias-free pair is parted (gap above
the tolerance). Measure and tolerance are inferred [I] (the seed prints no number for
"aligned").

* :func:`aligned` / :func:`parts` — the two criteria;
* :func:`rescaled_alignments` — the claims' measure; :func:`shifted_alignments` — the one-shift
  gap (a metric);
* :func:`alignment_reading` — the per-seed ``(gap, shift, unshifted gap, κ)`` rows as a
  :class:`~relulab.experiments.claims.Reading`;
* :func:`alignment_spec` — a :class:`~relulab.experiments.claims.ClaimSpec` of either kind;
* :func:`alignment_tolerance`, :func:`window_fraction`, :func:`max_shift`, :func:`max_rescale`
  — the config fields, declared once with their ranges;
* :func:`finite_mean_ci` — the mean over the finite per-seed values with its t interval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from relulab.analysis import Estimate, mean_ci, paired_alignments
from relulab.config import StudyConfig, setting
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.criteria import Above, AllOf, Below

__all__ = [
    "ALIGNMENT",
    "ALIGNMENT_NOTE",
    "SEED",
    "aligned",
    "alignment_reading",
    "alignment_spec",
    "alignment_tolerance",
    "finite_mean_ci",
    "max_rescale",
    "max_shift",
    "parts",
    "rescaled_alignments",
    "shifted_alignments",
    "window_fraction",
]

SEED = "seed 004"
ALIGNMENT = (
    "largest |Δ ln L| ReLU vs linear over the early window, best rescaling t → κt, 1 ≤ κ ≤ "
    "1 + max_rescale"
)
ALIGNMENT_NOTE = "alignment measure and tolerance [I]; κ ≥ 1 (F.4), no additive shift"
CONTRAST = "gap(no bias) − gap(bias), paired by seed, over the bias pair's window"


class AlignmentSettings(Protocol):
    """The fields of the alignment measure that both studies' configs declare (read-only:
    the configs are frozen dataclasses)."""

    @property
    def alignment_tolerance(self) -> float: ...
    @property
    def window_fraction(self) -> float: ...
    @property
    def max_rescale(self) -> float: ...
    @property
    def max_shift(self) -> float: ...


class AlignmentConfig(StudyConfig, AlignmentSettings, Protocol):
    """A study config with the alignment measure's fields (both seed-004 studies' configs)."""


A = TypeVar("A", bound=AlignmentConfig)


# ---------------------------------------------------------------------------------------------
# Settings of the alignment measure (both studies declare these fields).
# ---------------------------------------------------------------------------------------------
def alignment_tolerance(note: str) -> float:  # a field, typed as its value (dataclasses.field)
    """``alignment_tolerance``: the largest mean gap still called aligned (0.1 ≈ 10 % in loss;
    alternatives: half and twice, a stricter and a looser reader of "almost perfect match")."""
    return setting(
        0.1,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(0.05, 0.2),
        note=f"{note} (alternatives: half and twice)",
    )


def window_fraction() -> float:
    """``window_fraction``: the early window ends when the linear net made this share of its
    drop."""
    return setting(
        0.95,
        "inferred",
        greater_than=0.0,
        less_than=1.0,
        judging=True,
        alternatives=(0.9, 0.99),
        note="early window: until the linear net made this share of its drop (alternatives: "
        "a shorter and a longer 'early')",
    )


def max_rescale() -> float:
    """``max_rescale``: the largest time rescaling :math:`r` (the ReLU curve may run up to
    :math:`1 + r` times slower than the linear one, never faster) — the seed's "small, mode-wise
    time shift" (§5; eq. 14's delay scales with each mode's own time :math:`1/s_\\alpha`)."""
    return setting(
        0.25,
        "inferred",
        at_least=0.0,
        less_than=1.0,
        judging=True,
        alternatives=(0.125, 0.5),
        note="time rescaling t → κt allowed in the alignment, 1 ≤ κ ≤ 1 + r (alternatives: "
        "half and twice, a stricter and a looser reader of the 'slight time shift')",
    )


def max_shift() -> float:
    """``max_shift``: the largest additive time shift of the one-shift gap, a metric in both
    studies, as a share of the window."""
    return setting(
        0.25,
        "inferred",
        at_least=0.0,
        less_than=1.0,
        judging=True,
        no_alternative="a metric since issue 45: both studies judge the time rescaling alone "
        "(the seed's 'mode-wise' shift, §5), the one-shift gap decides no claim",
        note="additive time shift of the one-shift gap (a metric), as a share of the window",
    )


# ---------------------------------------------------------------------------------------------
# The measure.
# ---------------------------------------------------------------------------------------------
def rescaled_alignments(
    steps: np.ndarray,
    losses: np.ndarray,
    references: np.ndarray,
    config: AlignmentSettings,
    window_ends: np.ndarray | None = None,
    max_rescale: float | None = None,
) -> np.ndarray:
    """The claims' measure in both studies: per pair ``(gap, 0, unshifted gap, κ)`` of
    :func:`relulab.analysis.paired_alignments` on a log scale, best rescaling
    :math:`1 \\le \\kappa \\le 1 + r` (``r``: ``max_rescale``, default the config's), no shift,
    over ``window_ends`` (default: each reference's early window at ``window_fraction``).

    Example:
        >>> from types import SimpleNamespace
        >>> t = np.arange(0.0, 200.0)
        >>> ref = np.exp(-t / 10)
        >>> config = SimpleNamespace(window_fraction=0.95, max_rescale=0.44)
        >>> rows = rescaled_alignments(t, np.exp(-t / 12)[None], ref[None], config)
        >>> round(float(rows[0, 3]), 2), bool(rows[0, 0] < 1e-9)
        (1.2, True)
        >>> faster = rescaled_alignments(t, np.exp(-t / 8)[None], ref[None], config)
        >>> float(faster[0, 3]), bool(faster[0, 0] > 0.5)
        (1.0, True)
    """
    bound = config.max_rescale if max_rescale is None else max_rescale
    return paired_alignments(
        steps,
        losses,
        references,
        config.window_fraction,
        0.0,
        max_rescale=bound,
        window_ends=window_ends,
        slower_only=True,
    )


def shifted_alignments(
    steps: np.ndarray,
    losses: np.ndarray,
    references: np.ndarray,
    config: AlignmentSettings,
    window_ends: np.ndarray | None = None,
) -> np.ndarray:
    """The one-shift gap (a metric in both studies; the alignment measure before issue 30): one
    additive shift :math:`|\\delta| \\le` ``max_shift`` of the window for all modes, no
    rescaling, rows as :func:`rescaled_alignments`."""
    return paired_alignments(
        steps,
        losses,
        references,
        config.window_fraction,
        config.max_shift,
        window_ends=window_ends,
    )


# ---------------------------------------------------------------------------------------------
# The claims.
# ---------------------------------------------------------------------------------------------
def finite_mean_ci(values: ArrayLike) -> Estimate:
    """The mean of the finite values with its Student-t interval (NaN seeds are left out).

    Example:
        >>> finite_mean_ci([1.0, float("nan"), 1.2, 0.8]).n
        3
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    return mean_ci(values[np.isfinite(values)])


def aligned(config: AlignmentSettings) -> Below:
    """The ReLU loss follows the linear loss: mean gap below ``alignment_tolerance``."""
    return Below(ALIGNMENT, config.alignment_tolerance)


def parts(config: AlignmentSettings) -> AllOf:
    """Without bias the ReLU loss parts from the linear loss, in contrast to the bias pair: the
    bias-free pair's gap exceeds the bias pair's, paired by seed, both over the bias pair's
    window (the headline), and the bias-free pair's mean gap is above ``alignment_tolerance``."""
    return AllOf(
        {
            "contrast": Above(CONTRAST, 0.0),
            "no bias": Above(ALIGNMENT + ", no bias", config.alignment_tolerance),
        }
    )


def alignment_reading(rows: np.ndarray, scale: str) -> Reading:
    """The mean gap over seeds (95 % t interval) of ``rows`` ``(seeds, 3 or 4)`` — per seed the
    gap, the best shift in steps, the unshifted gap and the best rescaling κ
    (:func:`relulab.analysis.paired_alignments`) — with every seed's numbers in the detail
    (the shifts only where one was searched).

    Example:
        >>> rows = np.array([[0.05, 0.0, 0.2, 1.1], [0.07, 0.0, 0.3, 1.2], [0.06, 0, 0.25, 1]])
        >>> alignment_reading(rows, "test").detail.split("; ")[1:]
        ['unshifted gaps [0.2, 0.3, 0.25]', 'best rescalings κ [1.1, 1.2, 1.0]']
    """
    gaps = rows[:, 0]
    detail = f"per seed: {np.round(gaps, 3).tolist()}"
    if np.any(rows[:, 1] != 0.0):
        detail += f"; best shifts (steps) {np.round(rows[:, 1]).tolist()}"
    detail += f"; unshifted gaps {np.round(rows[:, 2], 3).tolist()}"
    if rows.shape[1] > 3 and np.any(rows[:, 3] != 1.0):
        detail += f"; best rescalings κ {np.round(rows[:, 3], 3).tolist()}"
    return Reading(finite_mean_ci(gaps), detail=detail, scale=scale)


def alignment_spec(
    claim_id: str,
    statement: str,
    source: str,
    measure: Callable[[Results, A], Reading],
    *,
    figure: str,
    part: bool = False,
    scope: str = "",
) -> ClaimSpec[A]:
    """An alignment claim: ``measure`` returns :func:`alignment_reading` (with ``part=True``
    the contrast and the bias-free gap); the criterion is :func:`aligned`, or :func:`parts`
    with ``part=True``."""
    return ClaimSpec(
        claim_id,
        statement,
        source=source,
        criterion=parts if part else aligned,
        measure=measure,
        scope=scope,
        note=ALIGNMENT_NOTE,
        figure=figure,
    )
