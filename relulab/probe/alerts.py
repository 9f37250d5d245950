r"""What :class:`relulab.probe.Monitor` says when a measurement crosses a threshold or is not
finite: one :class:`Alert` per layer and statistic (the first time it crosses), and **one
line** per measurement that has a new one — how many layers are flagged, by what, the worst
values, and what to try for each statistic.

The remedies are those :func:`relulab.probe.advice.advise` gives, filtered the same way by the
activation family of the flagged layers (:func:`relulab.probe.advice.remedies_for`): a Tanh
with a high Δ is not told to become ReLU − b.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from relulab.probe.advice import API, STATISTIC_FINDINGS, Thresholds, one_line, remedies_for
from relulab.probe.measurement import Measured

__all__ = [
    "ADVICE",
    "NON_FINITE",
    "NON_FINITE_ADVICE",
    "Alert",
    "MonitorWarning",
    "review",
]

#: What to try when a threshold is crossed, each naming its source: the remedies of
#: :data:`relulab.probe.advice.REMEDIES` in one line (defined once, there), for every family.
ADVICE: dict[str, str] = {
    statistic: one_line(finding) for statistic, finding in STATISTIC_FINDINGS.items()
}

#: The name an :class:`Alert` gives a layer whose activations were not finite.
NON_FINITE = "non_finite"

#: What to try when activations are not finite.
NON_FINITE_ADVICE = (
    "a weight, an input or an earlier activation is NaN or infinite — usually a diverged step: "
    "lower the learning rate, clip the gradients (torch.nn.utils.clip_grad_norm_), check the "
    "data and the loss for NaN"
)

#: How many layers a summary names per statistic, the worst first.
SHOWN = 4


class MonitorWarning(UserWarning):
    """A measurement of a :class:`~relulab.probe.Monitor` crossed one of its
    :class:`~relulab.probe.Thresholds` somewhere new, or was not finite: one per measurement."""


@dataclass(frozen=True)
class Alert:
    """One layer's first crossing of one threshold: where, when, how far, and what to try.

    Attributes:
        step: the measurement's step.
        layer: the activation call.
        statistic: the statistic that crossed (or :data:`NON_FINITE`).
        value: its value (NaN for a non-finite layer).
        threshold: the threshold (NaN for a non-finite layer).
        advice: what to try, for this layer's activation family.

    Example:
        >>> Alert(50, "fc#0", "dead_fraction", 0.25, 0.1, "try X").message()
        'relulab monitor, step 50, fc#0: dead_fraction = 0.25 (>= 0.1). Try: try X'
    """

    step: int
    layer: str
    statistic: str
    value: float
    threshold: float
    advice: str

    def message(self) -> str:
        """The alert in one line."""
        where = f"relulab monitor, step {self.step}, {self.layer}"
        if self.statistic == NON_FINITE:
            return f"{where}: non-finite activations, statistics NaN. Try: {self.advice}"
        return (
            f"{where}: {self.statistic} = {self.value:.3g} (>= {self.threshold:g}). "
            f"Try: {self.advice}"
        )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _worst(values: Mapping[str, float]) -> str:
    order = sorted(values, key=values.__getitem__, reverse=True)
    shown = ", ".join(f"{values[name]:.3g} ({name})" for name in order[:SHOWN])
    more = f", … {len(order) - SHOWN} more" if len(order) > SHOWN else ""
    return shown + more


def _remedies(finding: str, families: set[str]) -> str:
    """The remedies of ``finding`` that fit ``families``, short: each one's API and the seed
    section it comes from (an :class:`Alert` has them in full)."""
    return "; or ".join(
        f"{API[r.how]} [{r.source.split(' (')[0]}]" for r in remedies_for(finding, families)
    )


def _crossings(
    measured: Measured, thresholds: Thresholds | None
) -> dict[str, dict[str, tuple[float, float]]]:
    """``{statistic: {layer: (value, threshold)}}`` of every crossing, in call order."""
    found: dict[str, dict[str, tuple[float, float]]] = {}
    if thresholds is None:
        return found
    for layer, stats in measured.statistics.items():
        for name, value, threshold in thresholds.crossed(stats):
            found.setdefault(name, {})[layer] = (value, threshold)
    return found


def _line(
    step: int,
    measured: Measured,
    crossings: dict[str, dict[str, tuple[float, float]]],
    new: int,
) -> str:
    """The summary of one measurement (module docstring)."""
    flagged = {layer for layers in crossings.values() for layer in layers}
    flagged |= set(measured.non_finite)
    total = len(measured.statistics)
    parts = [
        f"relulab monitor, step {step}: {len(flagged)} of {_plural(total, 'layer')} flagged "
        f"({new} new)"
    ]
    tries = []
    if measured.non_finite:
        parts.append(
            f"non-finite activations (NaN or ±inf) at {_plural(len(measured.non_finite), 'layer')}"
            f", from {measured.non_finite[0]} on: their statistics are NaN"
        )
        tries.append(f"for the non-finite layers: {NON_FINITE_ADVICE}")
    for statistic, layers in crossings.items():
        threshold = next(iter(layers.values()))[1]
        values = {layer: value for layer, (value, _) in layers.items()}
        parts.append(
            f"{statistic} ≥ {threshold:g} at {_plural(len(layers), 'layer')}: {_worst(values)}"
        )
        families = {measured.families[layer] for layer in layers}
        tries.append(f"for {statistic}: {_remedies(STATISTIC_FINDINGS[statistic], families)}")
    return ". ".join(parts) + ". Try " + " — ".join(tries) + " (in full: monitor.alerts)"


def review(
    step: int,
    measured: Measured,
    thresholds: Thresholds | None,
    warned: set[tuple[str, str]],
) -> tuple[list[Alert], str | None]:
    """The new alerts of a measurement and, if there is one, its one-line summary.

    A layer's crossing of a threshold (or its activations turning non-finite) is *new* the
    first time it happens in the monitor's life; ``warned`` holds the ``(layer, statistic)``
    pairs seen so far and gains the new ones. The summary names every layer flagged at this
    step, new or not, so that the line alone says where the network stands.

    Args:
        step: the measurement's step.
        measured: what it found.
        thresholds: when a statistic is flagged (``None``: only non-finite layers are).
        warned: the pairs already alerted (updated in place).

    Returns:
        ``(alerts, line)``: the new :class:`Alert` s, and the summary, or ``None`` when
        nothing is new.

    Example:
        >>> found = Measured({"1#0": {"dead_fraction": 0.5}, "3#0": {"dead_fraction": 0.0}},
        ...                  {"1#0": "rectifier", "3#0": "rectifier"})
        >>> alerts, line = review(7, found, Thresholds(), set())
        >>> [(a.layer, a.statistic) for a in alerts]
        [('1#0', 'dead_fraction')]
        >>> for part in line.split(". ")[:2]:
        ...     print(part)
        relulab monitor, step 7: 1 of 2 layers flagged (1 new)
        dead_fraction ≥ 0.1 at 1 layer: 0.5 (1#0)
    """
    crossings = _crossings(measured, thresholds)
    alerts = [
        Alert(step, layer, NON_FINITE, math.nan, math.nan, NON_FINITE_ADVICE)
        for layer in measured.non_finite
        if (layer, NON_FINITE) not in warned
    ]
    for statistic, layers in crossings.items():
        finding = STATISTIC_FINDINGS[statistic]
        alerts += [
            Alert(
                step,
                layer,
                statistic,
                value,
                threshold,
                one_line(finding, {measured.families[layer]}),
            )
            for layer, (value, threshold) in layers.items()
            if (layer, statistic) not in warned
        ]
    warned.update((alert.layer, alert.statistic) for alert in alerts)
    if not alerts:
        return [], None
    return alerts, _line(step, measured, crossings, len({a.layer for a in alerts}))
