"""The advice of a :class:`relulab.probe.Monitor` (:meth:`~relulab.probe.Monitor.advice`):
what :func:`relulab.probe.advise` says of a probe, from what a monitor has — its batch's inputs,
the non-finite layers and parameters, its history (units that died during training, with the
steps and the learning rate) and its last measurement's threshold crossings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from relulab.probe.advice import (
    STATISTIC_FINDINGS,
    AdviceList,
    AdviceThresholds,
    Flagged,
    Thresholds,
    advice_for,
    flag_inputs,
    flag_non_finite,
)
from relulab.probe.measurement import Measured
from relulab.probe.upstream import InputScale, deaths_text, units_died

__all__ = ["monitor_advice"]


def _crossing_flags(
    last: Measured, died: set[str], thresholds: Thresholds
) -> list[tuple[str, Flagged]]:
    """The last measurement's crossings, by finding, the layers that died left out."""
    by_statistic: dict[str, dict[str, float]] = {}
    for layer, stats in last.statistics.items():
        for statistic, value, _ in thresholds.crossed(stats):
            if not (statistic == "dead_fraction" and layer in died):
                by_statistic.setdefault(statistic, {})[layer] = value
    found = []
    for statistic, values in by_statistic.items():
        families = frozenset(last.families[layer] for layer in values)
        threshold = getattr(thresholds, statistic)
        flagged = Flagged(tuple(values), statistic, values, threshold, families)
        found.append((STATISTIC_FINDINGS[statistic], flagged))
    return found


def monitor_advice(
    last: Measured | None,
    history: pd.DataFrame,
    learning_rates: Mapping[int, float],
    inputs: Sequence[InputScale],
    parameters: Mapping[str, tuple[int, int]],
    thresholds: Thresholds,
    validated: bool = True,
) -> AdviceList:
    """The advice of a monitor, in the order of :data:`relulab.probe.remedies.FINDINGS`.

    Args:
        last: the last measurement (``None``: nothing measured yet).
        history: the monitor's history.
        learning_rates: the learning rate at each measured step.
        inputs: the batch's inputs (:func:`relulab.probe.upstream.summarise_inputs`).
        parameters: the parameters holding NaN or ±inf.
        thresholds: the monitor's thresholds.
        validated: offer only the remedies the benchmark supports (``False``: every
            candidate).

    Returns:
        An :class:`~relulab.probe.AdviceList`.
    """
    found = AdviceList()
    if last is None:
        return found
    flags = [
        ("non_finite", flag_non_finite(last.non_finite, parameters, inputs)),
        ("unstandardised_inputs", flag_inputs(inputs, AdviceThresholds())),
    ]
    deaths = {}
    limit = thresholds.dead_fraction
    if limit is not None:
        deaths = units_died(history, learning_rates, limit)
        deaths = {layer: death for layer, death in deaths.items() if layer in last.statistics}
    if deaths and limit is not None:  # (deaths are only found with a limit)
        detail = "units died during training, " + deaths_text(deaths.values())
        values = {layer: death.value_after for layer, death in deaths.items()}
        families = frozenset(last.families[layer] for layer in deaths)
        died = Flagged(tuple(deaths), "dead_fraction", values, limit, families, detail)
        flags.append(("units_died", died))
    flags += _crossing_flags(last, set(deaths), thresholds)
    for finding, flagged in flags:
        if flagged is None:
            continue
        advice, withheld = advice_for(finding, flagged, validated)
        found.extend(advice)
        found.withheld.extend(withheld)
    return found
