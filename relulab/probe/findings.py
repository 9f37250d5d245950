r"""What the advice checks, before it looks for remedies: one check per finding of
:data:`relulab.probe.remedies.FINDINGS` that a probe can make, each returning a
:class:`Flagged` — the calls (or inputs) where it was found, the statistic, its values, the
threshold and, where the values need words, a line of detail.

* ``non_finite`` (:func:`flag_non_finite`) and ``unstandardised_inputs`` (:func:`flag_inputs`)
  read what comes before the activations (:mod:`relulab.probe.upstream`);
* ``high_delta``, ``dead_units``, ``always_on_units`` read each call's statistic against its
  threshold (the dead and always-on ones on rectifier calls only);
* ``sample_variance_decay`` compares each later call's sample-variance share with the first
  call's of the same kind of activation.

``units_died`` needs a history: :mod:`relulab.probe.monitor_advice` makes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relulab.probe.advice import AdviceThresholds
    from relulab.probe.core import LayerProbe, ProbeResult
    from relulab.probe.upstream import InputScale

__all__ = [
    "CHECKS",
    "INPUT_CHECKS",
    "SHARE",
    "STATISTIC_FINDINGS",
    "Flagged",
    "flag_inputs",
    "flag_non_finite",
]

#: The monitor's statistics and the finding each crossing reports.
STATISTIC_FINDINGS: dict[str, str] = {
    "dead_fraction": "dead_units",
    "always_on_fraction": "always_on_units",
    "delta_relative": "high_delta",
}

#: The sample-variance share, the statistic of ``sample_variance_decay``.
SHARE = "sample_variance_fraction"


@dataclass(frozen=True)
class Flagged:
    """What a check found: the calls (or inputs), the statistic, its values, the threshold,
    the flagged calls' families (``None``: any) and, where the values need words, a line of
    detail (:func:`advice_for` turns it into advice)."""

    layers: tuple[str, ...]
    statistic: str
    measured: dict[str, float]
    threshold: float
    families: frozenset[str] | None = None
    detail: str = ""


def _finite(layer: LayerProbe, metric: str) -> float | None:
    value = layer.metrics.get(metric)
    return value if value is not None and math.isfinite(value) else None


#: A finder: from the calls and a threshold, the values that cross it by call, and the
#: reference values they are compared with (a decay's first calls), by call.
Finder = Callable[[list["LayerProbe"], float], tuple[dict[str, float], dict[str, float]]]


def _at_or_above(metric: str, families: Sequence[str] | None = None) -> Finder:
    """A finder: the calls (of ``families``) whose ``metric`` is at or above the threshold."""

    def find(layers: list[LayerProbe], threshold: float) -> tuple[dict, dict]:
        chosen = [layer for layer in layers if families is None or layer.family in families]
        values = {layer.name: _finite(layer, metric) for layer in chosen}
        return {name: v for name, v in values.items() if v is not None and v >= threshold}, {}

    return find


def _decayed(layers: list[LayerProbe], threshold: float) -> tuple[dict, dict]:
    """Per kind of activation (``ReLU``, ``GELUActivation``, …: a transformer's pooler is not
    the next layer of its MLPs), the later calls whose sample-variance share is below both the
    threshold and the first call's, and those first calls (the references)."""
    below: dict[str, float] = {}
    references: dict[str, float] = {}
    for kind in dict.fromkeys(layer.kind for layer in layers):
        shares = [(layer.name, _finite(layer, SHARE)) for layer in layers if layer.kind == kind]
        shares = [(name, value) for name, value in shares if value is not None]
        if len(shares) < 2:
            continue
        (first, reference), later = shares[0], shares[1:]
        decayed = {name: value for name, value in later if value < min(threshold, reference)}
        if decayed:
            below.update(decayed)
            references[first] = reference
    return below, references


_FINDERS: dict[str, tuple[str, Finder]] = {
    "high_delta": ("delta_relative", _at_or_above("delta_relative")),
    "dead_units": ("dead_fraction", _at_or_above("dead_fraction", ("rectifier",))),
    "always_on_units": ("always_on_fraction", _at_or_above("always_on_fraction", ("rectifier",))),
    "sample_variance_decay": (SHARE, _decayed),
}


def _calls_flagged(finding: str, result: ProbeResult, threshold: float) -> Flagged | None:
    statistic, find = _FINDERS[finding]
    flagged, references = find(result.layers, threshold)
    if not flagged:
        return None
    order = tuple(layer.name for layer in result.layers if layer.name in flagged)
    families = frozenset(layer.family for layer in result.layers if layer.name in flagged)
    measured = {**references, **{name: flagged[name] for name in order}}
    return Flagged(order, statistic, measured, threshold, families)


def flag_non_finite(
    calls: Sequence[str],
    parameters: Mapping[str, tuple[int, int]],
    inputs: Sequence[InputScale] = (),
) -> Flagged | None:
    """The ``non_finite`` finding: the calls that saw NaN or ±inf, the parameters and inputs
    holding them (``None`` when there are none).

    Args:
        calls: the non-finite activation calls, in order.
        parameters: name → (non-finite values, size)
            (:func:`relulab.probe.upstream.non_finite_parameters`).
        inputs: the inputs' summaries (those with non-finite values are named).

    Returns:
        A :class:`Flagged`, or ``None``.
    """
    inputs = [found for found in inputs if found.non_finite]
    if not calls and not parameters and not inputs:
        return None
    parts = []
    if parameters:
        named = list(parameters.items())
        shown = ", ".join(f"{name} ({bad} of {size})" for name, (bad, size) in named[:6])
        parts.append(f"parameters holding NaN or ±inf: {shown}")
    if inputs:
        parts.append("inputs: " + ", ".join(f"{i.name} ({i.non_finite} values)" for i in inputs))
    if calls:
        parts.append(f"{len(calls)} call(s) saw them, from {calls[0]} on: statistics NaN")
    measured = dict.fromkeys(calls, math.nan)
    return Flagged(tuple(calls), "non_finite", measured, math.nan, None, "; ".join(parts))


#: The two aspects of the ``unstandardised_inputs`` check: (statistic, the
#: :class:`AdviceThresholds` field, the :class:`~relulab.probe.upstream.InputScale` attribute,
#: its text method).
INPUT_CHECKS = (
    ("input_mean_variance_ratio", "input_ratio", "ratio", "shift_text"),
    ("input_scale_spread", "input_scale_spread", "scale_spread", "scale_text"),
)


def flag_inputs(inputs: Sequence[InputScale], thresholds: AdviceThresholds) -> Flagged | None:
    """The ``unstandardised_inputs`` finding: the inputs whose ratio r or scale spread is at
    or above its threshold (:data:`INPUT_CHECKS`), with their most shifted features or extreme
    scales in words.

    Args:
        inputs: the inputs' summaries (:func:`relulab.probe.upstream.summarise_inputs`).
        thresholds: ``input_ratio`` and ``input_scale_spread`` (``None``: that aspect off).

    Returns:
        A :class:`Flagged` (its threshold the first aspect's that was crossed), or ``None``.
    """
    parts, statistics, limits, measured = [], [], [], {}
    for statistic, name, attribute, text in INPUT_CHECKS:
        limit = getattr(thresholds, name)
        chosen = [
            i
            for i in inputs
            if limit is not None
            and math.isfinite(getattr(i, attribute))
            and getattr(i, attribute) >= limit
        ]
        if chosen:
            statistics.append(statistic)
            limits.append(limit)
            parts.append(
                f"{statistic} ≥ {limit:g} — " + "; ".join(getattr(i, text)() for i in chosen)
            )
            for i in chosen:
                measured.setdefault(i.name, getattr(i, attribute))
    if not parts:
        return None
    return Flagged(
        tuple(measured), ", ".join(statistics), measured, limits[0], None, "; ".join(parts)
    )


def _calls_check(finding: str) -> Callable[[ProbeResult, AdviceThresholds], Flagged | None]:
    field_name = _FINDERS[finding][0]

    def check(result: ProbeResult, thresholds: AdviceThresholds) -> Flagged | None:
        threshold = getattr(thresholds, field_name)
        return None if threshold is None else _calls_flagged(finding, result, threshold)

    return check


#: Per finding, its check of a probe (the findings a probe can make, in the order of
#: :data:`FINDINGS`; ``units_died`` needs a monitor's history).
CHECKS: dict[str, Callable[[ProbeResult, AdviceThresholds], Flagged | None]] = {
    "non_finite": lambda r, _: flag_non_finite(
        [layer.name for layer in r.layers if layer.non_finite], r.non_finite_parameters, r.inputs
    ),
    "unstandardised_inputs": lambda r, thresholds: flag_inputs(r.inputs, thresholds),
    **{finding: _calls_check(finding) for finding in _FINDERS},
}
