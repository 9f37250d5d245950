"""Seed 004 appendix C.4, Fig. 10: the bias magnitude c. Linear-aligned, stage-like learning for
every c > 0 (left) and always-on units shooting up whenever c > 0 (left-centre), on the
hierarchy's c sweep."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, AllOf, Below, Measured
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.units import Family, Key, pair
from relulab.experiments.seed004 import ALIGNMENT_NOTE, SEED, finite_mean_ci

__all__ = ["ALIGNED_FOR_EVERY_C", "EveryC", "LINEAR_UNITS_RISE", "c_label"]

Config = EarlyLinearizationConfig
SOURCE = f"{SEED} appendix C.4, Fig. 10"


def c_label(c: float) -> str:
    """The name of one c of the sweep, as parts and details print it.

    Example:
        >>> c_label(0.1)
        'c=0.1'
    """
    return f"c={c:g}"


@dataclass(frozen=True)
class EveryC(AllOf):
    """:class:`~relulab.experiments.criteria.AllOf` over the c > 0 of the sweep, each c on its
    own 95 % interval (as before issue 28; no family correction — issue 30). The headline is
    the largest gap (the c least favourable to the claim): a display choice, the verdict is
    AllOf's."""

    def headline(self, measured: Mapping[str, Any]) -> Measured:
        worst = max(self.parts, key=lambda name: float(measured[name]))
        return self.parts[worst].headline(measured[worst])


# --- c-sweep-aligned-for-every-c ---------------------------------------------------------------
def _every_c_criterion(config: Config) -> EveryC:
    return EveryC(
        {
            c_label(c): Below(f"alignment gap at {c_label(c)}", config.alignment_tolerance)
            for c in config.all_constants
            if c > 0
        }
    )


def _aligned_for_every_c(results: Results, config: Config) -> Reading:
    gaps, _ = measure.c_sweep(*pair(results, Family.HIERARCHY), config)
    return Reading(
        {c_label(c): finite_mean_ci(g) for c, g in gaps.items() if c > 0}, scale=scale(config)
    )


ALIGNED_FOR_EVERY_C = ClaimSpec(
    "c-sweep-aligned-for-every-c",
    "Loss curves display linear-aligned, stage-like learning in all cases where c > 0.",
    source=f"{SOURCE} (left)",
    criterion=_every_c_criterion,
    measure=_aligned_for_every_c,
    scope="early in training, for every c > 0 of the sweep",
    note=f"{ALIGNMENT_NOTE}; c values [I]",
    figure="c_sweep.png",
)


# --- c-sweep-linear-units-rise -----------------------------------------------------------------
def _linear_units_rise(results: Results, config: Config) -> Reading:
    peaks = measure.peak_always_on(results[Key.HIERARCHY_RELU], config)
    differences = {c: finite_mean_ci(p - peaks[0.0]) for c, p in peaks.items() if c > 0}
    smallest = min(differences, key=lambda c: differences[c].value)
    detail = "; ".join(f"{c_label(c)}: {e.describe()}" for c, e in differences.items())
    return Reading(
        differences[smallest],
        detail=f"smallest at {c_label(smallest)}; {detail}",
        scale=scale(config),
    )


LINEAR_UNITS_RISE = ClaimSpec(
    "c-sweep-linear-units-rise",
    "The fraction of effectively linear units shoots up early whenever c > 0, not for c = 0.",
    source=f"{SOURCE} (left-centre)",
    criterion=Above(
        "peak always-on fraction at c minus at c = 0 (paired by seed), at the c > 0 where it "
        "is smallest",
        0.0,
    ),
    measure=_linear_units_rise,
    scope="early in training (the peak of the always-on share), for every c > 0",
    figure="c_sweep.png",
)
