"""How every claim of the study scores the networks it reads: one divergence policy, and the mean
over seeds with its Student-t interval.

**Divergence** (issue 42's one policy, :class:`relulab.analysis.DivergencePolicy`): a network
diverged when the engine froze it or any recorded loss is non-finite. No cap: at the seed's
rate a stable run's sum loss never rises above its start (P·lr·s ≈ 0.1 % a step), so only a
broken run diverges; none does at any preset. A diverged network is counted, per group, in
every claim that reads it (``Reading.diverged``), and it *ranks last* in every claim: it never
supports the statement, so a mean over networks that include one is NaN, which every criterion
judges ``fails`` (:func:`scored_ci`) — the same network counts the same way in every claim,
never as a sentinel value in one and a dropped seed in another.

**Missing values that are not divergence** (a mode that never reaches half its asymptote
within the horizon, a delay ratio with nothing predicted) are left out of the mean *and said*:
the detail names how many (:func:`scored_ci`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from relulab.analysis import (
    DivergencePolicy,
    Estimate,
    divergence_counts,
    divergence_text,
    mean_ci,
    where,
)
from relulab.analysis.intervals import LEVEL
from relulab.experiments.early_linearization.units import Stored, Training, as_view
from relulab.store import UnitResult

__all__ = ["POLICY", "counts_text", "diverged", "group_counts", "scored_ci"]

POLICY = DivergencePolicy(quantity="training loss")
"""The study's divergence policy: engine flag or a non-finite recorded loss (no cap)."""


def diverged(unit: Stored) -> np.ndarray:
    """Per network of ``unit``, whether it diverged under :data:`POLICY`, ``(S,)``.

    Example:
        >>> curves = {k: np.array([[1, 0.5], [1, np.inf]]) for k in
        ...           ("loss", "always_on_fraction", "dead_fraction")}
        >>> unit = UnitResult([{}, {}], np.arange(2), curves, {}, np.zeros(2, bool), np.full(2, -1))
        >>> diverged(unit).tolist()
        [False, True]
    """
    view = as_view(unit, Training)
    return POLICY.diverged(view.diverged, view.loss)


def group_counts(
    units: Mapping[str, UnitResult], **match
) -> tuple[dict[str, tuple[int, int]], np.ndarray]:
    """Per group ``{label: unit}`` (the networks of each unit matching ``match``): (diverged,
    networks), and per matched position whether any group's network there diverged (the
    units list the same networks in the same order, so position k is one seed's pair).

    Example:
        >>> curves = {k: np.ones((1, 1)) for k in ("loss", "always_on_fraction", "dead_fraction")}
        >>> ok = UnitResult([{"c": 1.0}], np.arange(1), curves, {}, np.zeros(1, bool),
        ...                 np.full(1, -1))
        >>> group_counts({"ReLU": ok, "linear": ok}, c=1.0)[0]
        {'ReLU c=1': (0, 1), 'linear c=1': (0, 1)}
    """
    suffix = " ".join(f"{k}={v:g}" for k, v in match.items() if isinstance(v, float | int))
    counts: dict[str, tuple[int, int]] = {}
    any_diverged = None
    for label, unit in units.items():
        unit = getattr(unit, "result", unit)
        index = list(where(unit.conditions, **match))
        flags = diverged(unit)[index]
        name = f"{label} {suffix}".strip()
        counts |= divergence_counts(flags, {name: range(len(flags))})
        any_diverged = flags if any_diverged is None else any_diverged | flags
    return counts, (np.zeros(0, bool) if any_diverged is None else any_diverged)


def scored_ci(
    values: Iterable[float], diverged_mask: Iterable[bool] | None = None, level: float = LEVEL
) -> tuple[Estimate, str]:
    """The mean over networks with its Student-t interval, under the study's policy: NaN (the
    claim fails) when any network read diverged; otherwise over the finite values, the others
    counted in the returned note.

    Args:
        values: one value per network read.
        diverged_mask: per network, whether it (or its twin in the pair) diverged.
        level: the interval's confidence level.

    Returns:
        ``(estimate, note)``: the note is ``""`` when every network gave a finite value.

    Example:
        >>> scored_ci([1.0, 1.2, 0.8, float("nan")])[1]
        '1 of 4 networks had no value (left out)'
        >>> scored_ci([1.0, 1.2, 0.8], [False, True, False])[0].value
        nan
    """
    values = np.asarray(list(values), dtype=np.float64).ravel()
    mask = (
        np.zeros(len(values), bool)
        if diverged_mask is None
        else np.asarray(list(diverged_mask), bool).ravel()
    )
    if mask.any():
        nan = float("nan")
        note = f"{int(mask.sum())} of {len(values)} networks diverged: ranked last, so no hold"
        return Estimate(nan, nan, nan, len(values), level, "diverged networks read"), note
    finite = np.isfinite(values)
    note = "" if finite.all() else f"{int((~finite).sum())} of {len(values)} networks had no "
    note += "value (left out)" if note else ""
    return mean_ci(values[finite], level=level), note


def counts_text(counts: Mapping[str, tuple[int, int]]) -> str:
    """The divergence counts for a detail (:func:`relulab.analysis.divergence_text`)."""
    return divergence_text(counts) if counts else ""
