r"""What :class:`relulab.probe.Monitor` says when a measurement crosses a threshold or is not
finite: one :class:`Alert` per layer and statistic (the first time it crosses), and **one
line** per measurement that has a new one — how many layers are flagged, by what, the worst
values, and what to try for each statistic, from the input inward:

* non-finite activations first, with the parameters holding NaN or ±inf named and the learning
  rate of the step;
* the monitored batch's inputs (:mod:`relulab.probe.upstream`), at the first measurement:
  shifted (their ratio r ≥ 1) or unscaled (feature scales a decade apart) → standardise;
* a layer whose dead fraction crosses its threshold *after* a measurement below it: its units
  died during training (:func:`relulab.probe.upstream.units_died`) — the line names the two
  steps and the learning rate then, and offers the ``units_died`` remedies (lower the learning
  rate, warm it up) instead of the init-level ones a layer dead from the start gets.

The remedies are those :func:`relulab.probe.advice.advise` gives — filtered the same way by the
activation family of the flagged layers, and offered only where relulab's remedies benchmark
supports them (:func:`relulab.probe.advice.remedies_for`): a Tanh with a high Δ is not told to
become ReLU − b.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from relulab.probe.advice import (
    API,
    INPUT_CHECKS,
    STATISTIC_FINDINGS,
    AdviceThresholds,
    Thresholds,
    no_remedy_text,
    one_line,
    remedies_for,
)
from relulab.probe.measurement import Measured
from relulab.probe.upstream import Death, InputScale, deaths_text

__all__ = [
    "ADVICE",
    "NON_FINITE",
    "NON_FINITE_ADVICE",
    "Alert",
    "Context",
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


def _remedies(finding: str, families: set[str] | None) -> str:
    """The offered remedies of ``finding`` that fit ``families``, short: each one's API, where
    it comes from and its measured effect (an :class:`Alert` has them in full)."""
    offered = remedies_for(finding, families)
    if not offered:
        return no_remedy_text(finding, families)
    return "; or ".join(
        f"{API[r.how]} [{r.source.split(' (')[0]}; {_effect(finding, r.how)}]" for r in offered
    )


def _effect(finding: str, how: str) -> str:
    from relulab.probe.evidence import evidence_for

    return evidence_for(finding, how).short()


@dataclass(frozen=True)
class Context:
    """What the monitor knows beside one measurement.

    Attributes:
        died: the layers whose units died during training at this step
            (:func:`relulab.probe.upstream.units_died`).
        inputs: the monitored batch's inputs (:func:`relulab.probe.upstream.summarise_inputs`).
        parameters: the parameters holding NaN or ±inf (name → (non-finite, size)).
        learning_rate: the learning rate at this step, if known.
        input_thresholds: when the inputs are flagged (``input_ratio``,
            ``input_scale_spread``).
    """

    died: Mapping[str, Death] = field(default_factory=dict)
    inputs: Sequence[InputScale] = ()
    parameters: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    learning_rate: float | None = None
    input_thresholds: AdviceThresholds = field(default_factory=AdviceThresholds)


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


def _input_crossings(context: Context) -> list[tuple[str, InputScale, float, float]]:
    """``(statistic, input, value, threshold)`` of each input statistic at its threshold."""
    found = []
    for statistic, name, attribute, _ in INPUT_CHECKS:
        threshold = getattr(context.input_thresholds, name)
        for scale in context.inputs:
            value = getattr(scale, attribute)
            if threshold is not None and math.isfinite(value) and value >= threshold:
                found.append((statistic, scale, value, threshold))
    return found


def _non_finite_advice(context: Context) -> str:
    """:data:`NON_FINITE_ADVICE` with the parameters holding NaN and the step's learning
    rate."""
    parts = [NON_FINITE_ADVICE]
    if context.parameters:
        named = list(context.parameters.items())
        shown = ", ".join(f"{name} ({bad} of {size})" for name, (bad, size) in named[:6])
        parts.append(f"parameters holding NaN or ±inf: {shown}")
    if context.learning_rate is not None:
        parts.append(f"learning rate {context.learning_rate:.3g} at this step")
    return "; ".join(parts)


def _crossing_advice(statistic: str, layer: str, family: str, context: Context) -> str:
    """What to try for one layer's crossing: a layer whose units died during training gets the
    ``units_died`` remedies, named with its steps and learning rate."""
    if statistic == "dead_fraction" and layer in context.died:
        return f"units died during training ({deaths_text([context.died[layer]])}): " + one_line(
            "units_died", {family}
        )
    return one_line(STATISTIC_FINDINGS[statistic], {family})


def _upstream_parts(
    measured: Measured, context: Context, inputs: list
) -> tuple[list[str], list[str]]:
    """The non-finite and input parts of a summary line, and what to try for each."""
    parts, tries = [], []
    if measured.non_finite:
        parts.append(
            f"non-finite activations (NaN or ±inf) at {_plural(len(measured.non_finite), 'layer')}"
            f", from {measured.non_finite[0]} on: their statistics are NaN"
        )
        tries.append(f"for the non-finite layers: {_non_finite_advice(context)}")
    for statistic, scale, value, threshold in inputs:
        parts.append(f"inputs {scale.name}: {statistic} {value:.3g} ≥ {threshold:g}")
    if inputs:
        tries.append(f"first, for the inputs: {_remedies('unstandardised_inputs', None)}")
    return parts, tries


def _line(
    step: int,
    measured: Measured,
    crossings: dict[str, dict[str, tuple[float, float]]],
    new: int,
    context: Context,
    inputs: list,
) -> str:
    """The summary of one measurement (module docstring)."""
    flagged = {layer for layers in crossings.values() for layer in layers}
    flagged |= set(measured.non_finite)
    total = len(measured.statistics)
    header = (
        f"relulab monitor, step {step}: {len(flagged)} of {_plural(total, 'layer')} flagged "
        f"({new} new)"
    )
    parts, tries = _upstream_parts(measured, context, inputs)
    parts.insert(0, header)
    for statistic, layers in crossings.items():
        threshold = next(iter(layers.values()))[1]
        values = {layer: value for layer, (value, _) in layers.items()}
        parts.append(
            f"{statistic} ≥ {threshold:g} at {_plural(len(layers), 'layer')}: {_worst(values)}"
        )
        died = [layer for layer in layers if statistic == "dead_fraction" and layer in context.died]
        if died:
            deaths = deaths_text(context.died[layer] for layer in died)
            families = {measured.families[layer] for layer in died}
            tries.append(
                f"for the {_plural(len(died), 'layer')} whose units died during training "
                f"({deaths}): {_remedies('units_died', families)}"
            )
        rest = [layer for layer in layers if layer not in died]
        if rest:
            families = {measured.families[layer] for layer in rest}
            tries.append(f"for {statistic}: {_remedies(STATISTIC_FINDINGS[statistic], families)}")
    return ". ".join(parts) + ". Try " + " — ".join(tries) + " (in full: monitor.alerts)"


def review(
    step: int,
    measured: Measured,
    thresholds: Thresholds | None,
    warned: set[tuple[str, str]],
    context: Context | None = None,
) -> tuple[list[Alert], str | None]:
    """The new alerts of a measurement and, if there is one, its one-line summary.

    A layer's crossing of a threshold (or its activations turning non-finite, or an input's
    statistic crossing its own) is *new* the first time it happens in the monitor's life;
    ``warned`` holds the ``(layer, statistic)`` pairs seen so far and gains the new ones. The
    summary names every layer flagged at this step, new or not, so that the line alone says
    where the network stands.

    Args:
        step: the measurement's step.
        measured: what it found.
        thresholds: when a statistic is flagged (``None``: only non-finite layers are).
        warned: the pairs already alerted (updated in place).
        context: the deaths, inputs, non-finite parameters and learning rate
            (:class:`Context`; default: none known).

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
    context = context or Context()
    crossings = _crossings(measured, thresholds)
    inputs = _input_crossings(context) if thresholds is not None else []
    alerts = [
        Alert(step, layer, NON_FINITE, math.nan, math.nan, _non_finite_advice(context))
        for layer in measured.non_finite
        if (layer, NON_FINITE) not in warned
    ]
    alerts += [
        Alert(step, scale.name, statistic, value, threshold, one_line("unstandardised_inputs"))
        for statistic, scale, value, threshold in inputs
        if (scale.name, statistic) not in warned
    ]
    for statistic, layers in crossings.items():
        alerts += [
            Alert(
                step,
                layer,
                statistic,
                value,
                threshold,
                _crossing_advice(statistic, layer, measured.families[layer], context),
            )
            for layer, (value, threshold) in layers.items()
            if (layer, statistic) not in warned
        ]
    warned.update((alert.layer, alert.statistic) for alert in alerts)
    if not alerts:
        return [], None
    new = len({a.layer for a in alerts if a.layer in measured.statistics})  # layers, not inputs
    return alerts, _line(step, measured, crossings, new, context, inputs)
