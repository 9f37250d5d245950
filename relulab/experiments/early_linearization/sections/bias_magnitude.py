"""Seed 004 appendix C.4, Fig. 10: the bias magnitude c. Linear-aligned, stage-like learning for
every c > 0 (left), always-on units shooting up whenever c > 0 (left-centre) and few units
gating unless c = 0 (right-centre), on the hierarchy's c sweep. Every c's networks are counted
under the study's divergence policy (:mod:`..scoring`): a diverged network ranks last, so its c
cannot hold."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from relulab.analysis import Estimate, simultaneous_level
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, AllOf, Below, Every
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.scoring import counts_text, group_counts, scored_ci
from relulab.experiments.early_linearization.sections.alignment import NOTE, RESCALED
from relulab.experiments.early_linearization.units import Family, Key, pair
from relulab.experiments.seed004 import SEED

__all__ = ["ALIGNED_FOR_EVERY_C", "GATING_SMALL", "LINEAR_UNITS_RISE", "c_label"]

Config = EarlyLinearizationConfig
SOURCE = f"{SEED} appendix C.4, Fig. 10"


def c_label(c: float) -> str:
    """The name of one c of the sweep, as parts and details print it.

    Example:
        >>> c_label(0.1)
        'c=0.1'
    """
    return f"c={c:g}"


def _per_c(
    values: Mapping[float, np.ndarray], masks: Mapping[float, np.ndarray]
) -> tuple[dict[str, Estimate], str]:
    """Per c > 0 the mean over seeds with its t interval at the simultaneous level of the
    K values of c judged together (:func:`relulab.analysis.simultaneous_level`), under the
    divergence policy (``masks``: per c, which seeds diverged); and the notes."""
    positive = {c: v for c, v in values.items() if c > 0}
    level = simultaneous_level(len(positive))
    scored = {c: scored_ci(v, masks[c], level=level) for c, v in positive.items()}
    notes = "; ".join(f"{c_label(c)}: {note}" for c, (_, note) in scored.items() if note)
    return {c_label(c): estimate for c, (estimate, _) in scored.items()}, notes


def _divergence(units: dict, config: Config) -> tuple[dict[str, tuple[int, int]], dict]:
    """Divergence counts per c of the sweep for ``units`` (label: unit), and per c the seeds
    where any of them diverged."""
    counts: dict[str, tuple[int, int]] = {}
    masks: dict[float, np.ndarray] = {}
    for c in config.all_constants:
        part, masks[c] = group_counts(units, c=c)
        counts |= part
    return counts, masks


# --- c-sweep-aligned-for-every-c ---------------------------------------------------------------
def _every_c_criterion(config: Config) -> Every:
    return Every(Below(RESCALED, config.alignment_tolerance), points_name="c > 0 of the sweep")


def _aligned_for_every_c(results: Results, config: Config) -> Reading:
    relu, linear = pair(results, Family.HIERARCHY)
    gaps, _ = measure.c_sweep(relu, linear, config)
    counts, masks = _divergence({"ReLU": relu, "linear": linear}, config)
    measured, notes = _per_c(gaps, masks)
    detail = "; ".join(filter(None, [notes, counts_text(counts)]))
    return Reading(measured, detail=detail, scale=scale(config), diverged=counts)


ALIGNED_FOR_EVERY_C: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "c-sweep-aligned-for-every-c",
    "Loss curves display linear-aligned, stage-like learning in all cases where c > 0.",
    source=f"{SOURCE} (left)",
    criterion=_every_c_criterion,
    measure=_aligned_for_every_c,
    scope="early in training, for every c > 0 of the sweep",
    note=f"{NOTE}; c values [I]",
    figure="c_sweep.png",
    counterexample="a sweep that reaches a small c (c = 0.01): there the ReLU loss parts from the "
    "linear one (g ≈ 0.24), as it does without bias",
)


# --- c-sweep-linear-units-rise -----------------------------------------------------------------
def _linear_units_rise(results: Results, config: Config) -> Reading:
    relu = results[Key.HIERARCHY_RELU]
    peaks = measure.peak_always_on(relu, config)
    counts, masks = _divergence({"ReLU": relu}, config)
    rises = {
        c: scored_ci(p - peaks[0.0], masks[c] | masks[0.0])[0] for c, p in peaks.items() if c > 0
    }
    detail = "rise over c = 0, paired by seed: " + "; ".join(
        f"{c_label(c)}: {e.describe()}" for c, e in rises.items()
    )
    measured, notes = _per_c(peaks, masks)
    detail = "; ".join(filter(None, [detail, notes, counts_text(counts)]))
    return Reading(measured, detail=detail, scale=scale(config), diverged=counts)


LINEAR_UNITS_RISE: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "c-sweep-linear-units-rise",
    "The fraction of effectively linear units shoots up early whenever c > 0: bias terms drive "
    "networks towards linearity irrespective of c.",
    source=f"{SOURCE} (left-centre: 'irrespective of bias magnitude c unless c = 0')",
    criterion=lambda c: Every(
        Above("peak of the always-on fraction's running mean", c.majority),
        points_name="c > 0 of the sweep",
    ),
    measure=_linear_units_rise,
    scope="early in training (the peak of the always-on share), for every c > 0",
    note="'towards linearity' = most units always on (> ½, as §5.3) [D]; running mean [I]",
    figure="c_sweep.png",
    counterexample="a sweep that reaches a small c (c = 0.01): hardly any unit is driven always-on "
    "there (peak ≈ 0.06, as at c = 0); at the preset's c = 0.1 it is ≈ 0.09",
)


# --- c-sweep-gating-small-unless-c-0 -----------------------------------------------------------
def _gating_criterion(config: Config) -> AllOf:
    return AllOf(
        {
            "c > 0": Every(
                Below("share of units that gate at t* (running means)", config.small_subset),
                points_name="c > 0 of the sweep",
            ),
            "c = 0": Above("share of units that gate at t*, no bias", config.small_subset),
        }
    )


def _gating_small(results: Results, config: Config) -> Reading:
    relu = results[Key.HIERARCHY_RELU]
    gating = measure.gating_at_peak(relu, config)
    counts, masks = _divergence({"ReLU": relu}, config)
    level = simultaneous_level(len(gating))  # every c > 0 and c = 0, judged together
    scored = {c: scored_ci(v, masks[c], level=level) for c, v in gating.items()}
    notes = "; ".join(f"{c_label(c)}: {note}" for c, (_, note) in scored.items() if note)
    positive = {c_label(c): estimate for c, (estimate, _) in scored.items() if c > 0}
    measured = {"c > 0": positive, "c = 0": scored[0.0][0]}
    detail = "; ".join(filter(None, [notes, counts_text(counts)]))
    return Reading(measured, detail=detail, scale=scale(config), diverged=counts)


GATING_SMALL: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "c-sweep-gating-small-unless-c-0",
    "The number of units that perform gating is small unless c = 0.",
    source=f"{SOURCE} (right-centre: 'the number of neurons which perform gating is small "
    "unless c = 0')",
    criterion=_gating_criterion,
    measure=_gating_small,
    scope="early in training (at each network's t*, where its always-on share peaks), for "
    "every c of the sweep",
    note="'small' = at most small_subset, as §5.3's 'small subset' [I]; running means [I]",
    figure="c_sweep.png",
    counterexample="a sweep that reaches a small c (c = 0.01): most units gate there, as at c = 0",
)
