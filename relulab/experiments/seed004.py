"""What both seed-004 studies share (``early-linearization`` on toy tasks, ``linearization-images``
on image data): the alignment of a ReLU network's loss with the linear network's as a claim, and
the settings of that measure.

The measure is :func:`relulab.analysis.paired_alignments`: per seed, the largest
:math:`|\\ln L_{ReLU}(t) - \\ln L_{lin}(t - \\delta)|` over the linear network's early window (until
it has made ``window_fraction`` of its drop), after the best single shift
:math:`|\\delta| \\le` ``max_shift`` of the window. A pair is *aligned* when the mean gap over seeds
is below ``alignment_tolerance`` on its 95 % Student-t interval, *parted* when it is above.
Measure and tolerance are inferred [I] (the seed prints no number for "aligned").

* :func:`aligned` / :func:`parted` — the two criteria;
* :func:`alignment_reading` — the per-seed ``(gap, shift, unshifted gap)`` rows as a
  :class:`~relulab.experiments.claims.Reading`;
* :func:`alignment_spec` — a :class:`~relulab.experiments.claims.ClaimSpec` of either kind;
* :func:`alignment_tolerance`, :func:`window_fraction`, :func:`max_shift`, :func:`max_rescale`
  — the config fields,
  declared once with their ranges;
* :func:`finite_mean_ci` — the mean over the finite per-seed values with its t interval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relulab.analysis import Estimate, mean_ci
from relulab.config import setting
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.criteria import Above, Below

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
    "parted",
    "window_fraction",
]

SEED = "seed 004"
ALIGNMENT = "largest |Δ ln L| ReLU vs linear over the early window, best shift"
ALIGNMENT_NOTE = "alignment measure and tolerance [I]"


# ---------------------------------------------------------------------------------------------
# Settings of the alignment measure (both studies declare these fields).
# ---------------------------------------------------------------------------------------------
def alignment_tolerance(note: str) -> Any:
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


def window_fraction() -> Any:
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


def max_rescale() -> Any:
    """``max_rescale``: the largest time rescaling :math:`r` (the ReLU curve may run up to
    :math:`1 + r` times slower or faster than the linear one) — the seed's "small, mode-wise time
    shift" (§5; eq. 14's delay scales with each mode's own time :math:`1/s_\\alpha`)."""
    return setting(
        0.25,
        "inferred",
        at_least=0.0,
        less_than=1.0,
        judging=True,
        alternatives=(0.125, 0.5),
        note="time rescaling t → κt allowed in the alignment, |ln κ| ≤ ln(1 + r) (alternatives: "
        "half and twice, a stricter and a looser reader of the 'slight time shift')",
    )


def max_shift() -> Any:
    """``max_shift``: the largest time shift, as a share of the window."""
    return setting(
        0.25,
        "inferred",
        at_least=0.0,
        less_than=1.0,
        judging=True,
        alternatives=(0.0, 0.5),
        note="time shift allowed in the alignment, as a share of the window (alternatives: "
        "none, the rescaling alone, and twice)",
    )


# ---------------------------------------------------------------------------------------------
# The claims.
# ---------------------------------------------------------------------------------------------
def finite_mean_ci(values) -> Estimate:
    """The mean of the finite values with its Student-t interval (NaN seeds are left out).

    Example:
        >>> finite_mean_ci([1.0, float("nan"), 1.2, 0.8]).n
        3
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    return mean_ci(values[np.isfinite(values)])


def aligned(config: Any) -> Below:
    """The ReLU loss follows the linear loss: mean gap below ``alignment_tolerance``."""
    return Below(ALIGNMENT, config.alignment_tolerance)


def parted(config: Any) -> Above:
    """The ReLU loss parts from the linear loss: mean gap above ``alignment_tolerance``."""
    return Above(ALIGNMENT, config.alignment_tolerance)


def alignment_reading(rows: np.ndarray, scale: str) -> Reading:
    """The mean gap over seeds (95 % t interval) of ``rows`` ``(seeds, 3)`` — per seed the gap,
    the best shift in steps and the unshifted gap (:func:`relulab.analysis.paired_alignments`)
    — with every seed's numbers in the detail.

    Example:
        >>> rows = np.array([[0.05, 10.0, 0.2], [0.07, 12.0, 0.3], [0.06, 8.0, 0.25]])
        >>> alignment_reading(rows, "test").detail.split(";")[0]
        'per seed: [0.05, 0.07, 0.06]'
    """
    gaps = rows[:, 0]
    detail = (
        f"per seed: {np.round(gaps, 3).tolist()}; best shifts (steps) "
        f"{np.round(rows[:, 1]).tolist()}; unshifted gaps {np.round(rows[:, 2], 3).tolist()}"
    )
    if rows.shape[1] > 3 and np.any(rows[:, 3] != 1.0):
        detail += f"; best rescalings κ {np.round(rows[:, 3], 3).tolist()}"
    return Reading(finite_mean_ci(gaps), detail=detail, scale=scale)


def alignment_spec(
    claim_id: str,
    statement: str,
    source: str,
    measure: Callable[[Results, Any], Reading],
    *,
    figure: str,
    part: bool = False,
    scope: str = "",
) -> ClaimSpec:
    """An alignment claim: ``measure`` returns :func:`alignment_reading`; the criterion is
    :func:`aligned`, or :func:`parted` with ``part=True``."""
    return ClaimSpec(
        claim_id,
        statement,
        source=source,
        criterion=parted if part else aligned,
        measure=measure,
        scope=scope,
        note=ALIGNMENT_NOTE,
        figure=figure,
    )
