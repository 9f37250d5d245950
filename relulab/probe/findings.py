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
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from relulab.probe.upstream import InputScale

__all__ = [
    "AdviceThresholds",
    "MeasuredCall",
    "MeasuredModel",
    "Thresholds",
    "CHECKS",
    "INPUT_CHECKS",
    "SHARE",
    "STATISTIC_FINDINGS",
    "Flagged",
    "flag_inputs",
    "flag_non_finite",
]


class MeasuredCall(Protocol):
    """What a finding reads of one probed activation call (a :class:`relulab.probe.LayerProbe`
    is one): the findings depend on this contract, not on the probe that makes it."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def metrics(self) -> Mapping[str, float]: ...
    @property
    def non_finite(self) -> bool: ...


class MeasuredModel(Protocol):
    """What the checks read of a probe (a :class:`relulab.probe.ProbeResult` is one)."""

    @property
    def layers(self) -> Sequence[MeasuredCall]: ...
    @property
    def inputs(self) -> Sequence[InputScale]: ...
    @property
    def non_finite_parameters(self) -> Mapping[str, tuple[int, int]]: ...


@dataclass(frozen=True)
class Thresholds:
    """When :class:`Monitor` warns: a layer's statistic at or above the value (``None``: never).

    The defaults are choices: ``dead_fraction`` 0.10 is keras-contrib's ``DeadReluDetector``
    (it warns when at least 10 % of a layer's units are dead); ``always_on_fraction`` 0.5 (half
    the layer linear on the batch) and ``delta_relative`` 1.0 (unit means spread as much as the
    samples vary within a unit) are relulab's. The dead and always-on thresholds apply to
    rectifiers only (ReLU, ReLU−b, ReLU6: a leaky unit that never fires still learns).

    Example:
        >>> Thresholds().crossed({"dead_fraction": 0.25, "delta_relative": 0.1})
        [('dead_fraction', 0.25, 0.1)]
        >>> Thresholds(dead_fraction=None).crossed({"dead_fraction": 0.25})
        []
    """

    dead_fraction: float | None = 0.10
    always_on_fraction: float | None = 0.5
    delta_relative: float | None = 1.0

    def crossed(self, statistics: Mapping[str, float]) -> list[tuple[str, float, float]]:
        """The ``(statistic, value, threshold)`` of each threshold ``statistics`` reaches.

        Args:
            statistics: one layer's statistics, by name.

        Returns:
            A list, in the order of the fields.
        """
        hits = []
        for item in fields(self):
            threshold = getattr(self, item.name)
            value = statistics.get(item.name)
            if threshold is not None and value is not None and value >= threshold:
                hits.append((item.name, value, threshold))
        return hits


_MONITOR = Thresholds()


@dataclass(frozen=True)
class AdviceThresholds:
    """When :func:`advise` reports a finding (``None``: never). Each value is a choice:

    * ``dead_fraction`` ≥ 0.10, ``always_on_fraction`` ≥ 0.5 and ``delta_relative`` ≥ 1.0 are
      :class:`relulab.probe.Thresholds`'s defaults, read from it (``docs/monitor.md``:
      keras-contrib's ``DeadReluDetector`` 10 %; half the layer linear; the unit means
      spreading as much as the samples vary). The dead and always-on thresholds apply to
      rectifiers only (a leaky or smooth unit that never fires still gets gradient).
    * ``sample_variance_fraction`` < 0.5 is relulab's: the squared sample mean exceeds the
      sample variance (r > 1, seed 002 eq. 9) — and the share must have fallen from that of the
      first call of the same kind, so that a finding is a decay with depth, not the inputs' own
      mean.
    * ``input_ratio`` ≥ 1.0: the inputs' squared means outweigh their variances (the same
      r > 1, on the inputs); ``input_scale_spread`` ≥ 10: the feature scales span a decade.

    Example:
        >>> AdviceThresholds().dead_fraction, AdviceThresholds().sample_variance_fraction
        (0.1, 0.5)
    """

    dead_fraction: float | None = _MONITOR.dead_fraction
    always_on_fraction: float | None = _MONITOR.always_on_fraction
    delta_relative: float | None = _MONITOR.delta_relative
    sample_variance_fraction: float | None = 0.5
    input_ratio: float | None = 1.0
    input_scale_spread: float | None = 10.0


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


def _finite(layer: MeasuredCall, metric: str) -> float | None:
    value = layer.metrics.get(metric)
    return value if value is not None and math.isfinite(value) else None


#: A finder: from the calls and a threshold, the values that cross it by call, and the
#: reference values they are compared with (a decay's first calls), by call.
Finder = Callable[[Sequence["MeasuredCall"], float], tuple[dict[str, float], dict[str, float]]]


def _at_or_above(metric: str, families: Sequence[str] | None = None) -> Finder:
    """A finder: the calls (of ``families``) whose ``metric`` is at or above the threshold."""

    def find(layers: Sequence[MeasuredCall], threshold: float) -> tuple[dict, dict]:
        chosen = [layer for layer in layers if families is None or layer.family in families]
        values = {layer.name: _finite(layer, metric) for layer in chosen}
        return {name: v for name, v in values.items() if v is not None and v >= threshold}, {}

    return find


def _decayed(layers: Sequence[MeasuredCall], threshold: float) -> tuple[dict, dict]:
    """Per kind of activation (``ReLU``, ``GELUActivation``, …: a transformer's pooler is not
    the next layer of its MLPs), the later calls whose sample-variance share is below both the
    threshold and the first call's, and those first calls (the references)."""
    below: dict[str, float] = {}
    references: dict[str, float] = {}
    for kind in dict.fromkeys(layer.kind for layer in layers):
        found = [(layer.name, _finite(layer, SHARE)) for layer in layers if layer.kind == kind]
        shares = [(name, value) for name, value in found if value is not None]
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


def _calls_flagged(finding: str, result: MeasuredModel, threshold: float) -> Flagged | None:
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
    parts: list[str] = []
    statistics: list[str] = []
    limits: list[float] = []
    measured: dict[str, float] = {}
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


def _calls_check(finding: str) -> Callable[[MeasuredModel, AdviceThresholds], Flagged | None]:
    field_name = _FINDERS[finding][0]

    def check(result: MeasuredModel, thresholds: AdviceThresholds) -> Flagged | None:
        threshold = getattr(thresholds, field_name)
        return None if threshold is None else _calls_flagged(finding, result, threshold)

    return check


#: Per finding, its check of a probe (the findings a probe can make, in the order of
#: :data:`FINDINGS`; ``units_died`` needs a monitor's history).
CHECKS: dict[str, Callable[[MeasuredModel, AdviceThresholds], Flagged | None]] = {
    "non_finite": lambda r, _: flag_non_finite(
        [layer.name for layer in r.layers if layer.non_finite], r.non_finite_parameters, r.inputs
    ),
    "unstandardised_inputs": lambda r, thresholds: flag_inputs(r.inputs, thresholds),
    **{finding: _calls_check(finding) for finding in _FINDERS},
}
