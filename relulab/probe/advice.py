r"""Advice: what to try for what a probe measured — from the input inward, each remedy with
its source, the numbers that triggered it and what it did to the held-out loss of a broken
network in relulab's remedies benchmark.

:func:`advise` (:meth:`relulab.probe.ProbeResult.advice`) reads a :class:`ProbeResult` and
returns one :class:`Advice` per finding and offered remedy; a healthy network gets none. The
findings (:data:`relulab.probe.remedies.FINDINGS`) come in the order they are checked, the
simplest fix first:

* **non-finite values** (``non_finite``) — a call saw NaN or ±inf, or a parameter or an input
  holds them (:mod:`relulab.probe.upstream`): find them, named.
* **unstandardised inputs** (``unstandardised_inputs``) — the inputs' sample-mean/variance
  ratio :math:`r = \sqrt{\langle\mu_j^2\rangle/\langle\sigma_j^2\rangle}` over features at
  or above ``input_ratio`` (shifted; the per-feature :math:`|\mu_j|/\sigma_j` shown), or their
  feature scales :math:`\sigma_j` spread by a factor of ``input_scale_spread`` or more
  (unscaled): standardise them.
* **high Δ** (``high_delta``) — ``delta_relative`` :math:`= \Delta/\sqrt{\langle
  \mathrm{Var}_t h_i\rangle_i}` at or above its threshold on any call (seed ``000_…``,
  "Representation collapse").
* **dead units** (``dead_units``) — ``dead_fraction`` at or above its threshold on a rectifier
  call (ReLU, ReLU−b, ReLU6: no gradient ever).
* **always-on units** (``always_on_units``) — ``always_on_fraction`` at or above its threshold
  on a rectifier call: those units are linear on the data.
* **sample-variance decay** (``sample_variance_decay``) — ``sample_variance_fraction``
  :math:`v^2/(m^2+v^2)` below its threshold at a later call and below the share of the first
  call of the same kind of activation (seed ``002_…`` §3).

A fifth kind, units that **died during training** (``units_died``), needs a history: the
:class:`~relulab.probe.Monitor` reports it with the steps and the learning rate.

**Which remedies are offered.** Each finding has candidate remedies
(:data:`relulab.probe.remedies.REMEDIES`), filtered by the flagged calls' activation family
(ReLU − b for rectifiers only). A candidate is *offered* only where relulab's remedies
benchmark (``relulab bench remedies``, its committed table read by
:mod:`relulab.probe.evidence`) measured it to lower the held-out loss of a broken network
showing the finding, and to raise it in none; the advice says by how much. The others are
*withheld* and listed as such (:attr:`AdviceList.withheld`) with their numbers. The statistic
checks of ``tests/probe/test_advice.py`` show that each remedy moves its statistic; only the
benchmark says whether training gains.

The thresholds (:class:`AdviceThresholds`) are those of :class:`relulab.probe.Thresholds`, the
monitor's, where it has one (read from it, so there is one place to change them); the
sample-variance and input thresholds are this module's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from relulab.probe.evidence import (
    evidence_for,
    no_remedy_text,
    one_line,
    remedies_for,
    withheld_for,
)
from relulab.probe.findings import (
    CHECKS,
    INPUT_CHECKS,
    SHARE,
    STATISTIC_FINDINGS,
    AdviceThresholds,
    Flagged,
    MeasuredModel,
    Thresholds,
    flag_inputs,
    flag_non_finite,
)
from relulab.probe.remedies import (
    API,
    FINDINGS,
    REMEDIES,
    SNIPPETS,
    UPSTREAM_FINDINGS,
    Remedy,
)

__all__ = [
    "API",
    "STATISTIC_FINDINGS",
    "Thresholds",
    "no_remedy_text",
    "one_line",
    "remedies_for",
    "withheld_for",
    "ADVICE_COLUMNS",
    "FINDINGS",
    "REMEDIES",
    "SNIPPETS",
    "UPSTREAM_FINDINGS",
    "Advice",
    "AdviceList",
    "Flagged",
    "INPUT_CHECKS",
    "advice_for",
    "flag_inputs",
    "flag_non_finite",
    "AdviceThresholds",
    "Remedy",
    "Withheld",
    "advise",
]


@dataclass(frozen=True)
class Advice:
    """One remedy for one finding, with the numbers that triggered it.

    Attributes:
        layers: the activation calls where it was found, in forward order (the inputs' names
            for an input finding).
        finding: a key of :data:`FINDINGS`.
        statistic: the probe's metric that crossed the threshold.
        measured: per call, that metric's value (for a decay, the first call of each kind's
            too: the references).
        threshold: the threshold crossed (:class:`AdviceThresholds`).
        remedy: what to do.
        how: the name of its code in :data:`SNIPPETS` (:attr:`code`).
        source: where the remedy comes from.
        detail: the measured numbers in words, where the calls and values do not say it all
            (the inputs' most shifted features, the parameters holding NaN).
        evidence: what the remedy did to the held-out loss in relulab's remedies benchmark.

    Example:
        >>> advice = Advice(("1#0",), "dead_units", "dead_fraction", {"1#0": 0.75}, 0.1,
        ...                 "try RAI", "rai", "seed 003 §3")
        >>> advice.measured_text()
        'dead_fraction ≥ 0.1 at 1 call: 0.75 (1#0)'
    """

    layers: tuple[str, ...]
    finding: str
    statistic: str
    measured: dict[str, float] = field(hash=False)
    threshold: float
    remedy: str
    how: str
    source: str
    detail: str = ""
    evidence: str = ""

    @property
    def code(self) -> str:
        """The remedy's code (:data:`SNIPPETS`)."""
        return SNIPPETS[self.how]

    @property
    def description(self) -> str:
        """What the finding means (:data:`FINDINGS`)."""
        return FINDINGS[self.finding]

    def measured_text(self, shown: int = 4) -> str:
        """The triggering numbers in a line: the threshold, the calls, the worst values first
        (highest; lowest for the sample-variance share) with their calls."""
        if self.detail:
            return self.detail
        values = {name: self.measured[name] for name in self.layers}
        order = sorted(values, key=values.__getitem__, reverse=self.statistic != SHARE)
        listed = ", ".join(f"{values[name]:.3g} ({name})" for name in order[:shown])
        more = f", … {len(order) - shown} more" if len(order) > shown else ""
        calls = f"{len(order)} call{'s' if len(order) != 1 else ''}"
        if self.statistic == SHARE:
            references = [name for name in self.measured if name not in values]
            firsts = ", ".join(f"{self.measured[name]:.3g} ({name})" for name in references)
            kinds = "its kind" if len(references) == 1 else "each kind"
            return (
                f"{SHARE} {firsts} at the first call of {kinds}, below {self.threshold:g} "
                f"at {calls}: {listed}{more}"
            )
        return f"{self.statistic} ≥ {self.threshold:g} at {calls}: {listed}{more}"

    def message(self) -> str:
        """The advice in one line: finding, numbers, remedy, its measured effect, source.

        Example:
            >>> Advice(("1#0",), "dead_units", "dead_fraction", {"1#0": 0.75}, 0.1,
            ...        "try RAI", "rai", "seed 003").message()
            'dead units — dead_fraction ≥ 0.1 at 1 call: 0.75 (1#0). Try: try RAI. Source: seed 003'
        """
        title = self.finding.replace("_", " ")
        effect = f" ({self.evidence})" if self.evidence else ""
        return (
            f"{title} — {self.measured_text()}. Try: {self.remedy}{effect}. Source: {self.source}"
        )


@dataclass(frozen=True)
class Withheld:
    """A candidate remedy of a finding that the advice does not offer, and why.

    Attributes:
        finding: the finding.
        layers: where it was found.
        how: the remedy (:data:`SNIPPETS` key).
        verdict: the benchmark's: ``hurt``, ``undecided`` or ``untested``.
        evidence: its numbers (:meth:`relulab.probe.evidence.Evidence.text`).
        measured: what was found, in a line (:meth:`Advice.measured_text`).
    """

    finding: str
    layers: tuple[str, ...]
    how: str
    verdict: str
    evidence: str
    measured: str = ""

    def message(self) -> str:
        """``dead units — …: not offered positive_bias (hurt; …)``."""
        title = self.finding.replace("_", " ")
        found = f" — {self.measured}" if self.measured else ""
        return f"{title}{found}: not offered {self.how} ({self.verdict}; {self.evidence})"


#: The columns of :meth:`AdviceList.to_frame`.
ADVICE_COLUMNS = ("finding", "layers", "statistic", "measured", "remedy", "how", "source")


class AdviceList(list):
    """The :class:`Advice` of a probe, in the order of :data:`FINDINGS` (the inputs and
    non-finite values first); empty when healthy. :attr:`withheld` lists the candidate remedies
    of the findings that the benchmark did not support (:class:`Withheld`)."""

    def __init__(self, items: Iterable[Advice] = (), withheld: Iterable[Withheld] = ()) -> None:
        super().__init__(items)
        self.withheld: list[Withheld] = list(withheld)

    def to_frame(self) -> pd.DataFrame:
        """One row per advice (:data:`ADVICE_COLUMNS`, then ``evidence``): ``layers``
        comma-separated, ``measured`` as :meth:`Advice.measured_text`.

        Example:
            >>> list(AdviceList().to_frame().columns)[:3]
            ['finding', 'layers', 'statistic']
        """
        rows = [
            (
                advice.finding,
                ", ".join(advice.layers),
                advice.statistic,
                advice.measured_text(),
                advice.remedy,
                advice.how,
                advice.source,
                advice.evidence,
            )
            for advice in self
        ]
        return pd.DataFrame(rows, columns=[*ADVICE_COLUMNS, "evidence"])


def advice_for(
    finding: str, flagged: Flagged, validated: bool = True, table: str | Path | None = None
) -> tuple[list[Advice], list[Withheld]]:
    """The advice of one flagged finding (one per offered remedy) and its withheld remedies.

    Args:
        finding: a key of :data:`FINDINGS`.
        flagged: what was found (:class:`Flagged`).
        validated: offer only what the benchmark supports (``False``: every candidate).
        table: the benchmark table (default: the committed one).

    Returns:
        ``(advice, withheld)``.
    """
    offered = remedies_for(finding, flagged.families, validated=validated, table=table)
    text = Advice(
        flagged.layers,
        finding,
        flagged.statistic,
        flagged.measured,
        flagged.threshold,
        "",
        "",
        "",
        flagged.detail,
    ).measured_text()
    advice = [
        Advice(
            flagged.layers,
            finding,
            flagged.statistic,
            flagged.measured,
            flagged.threshold,
            remedy.text,
            remedy.how,
            remedy.source,
            flagged.detail,
            evidence_for(finding, remedy.how, table).text(),
        )
        for remedy in offered
    ]
    withheld = (
        []
        if not validated
        else [
            Withheld(finding, flagged.layers, remedy.how, evidence.verdict, evidence.text(), text)
            for remedy, evidence in withheld_for(finding, flagged.families, table)
        ]
    )
    return advice, withheld


def advise(
    result: MeasuredModel,
    thresholds: AdviceThresholds | None = None,
    *,
    validated: bool = True,
    table: str | Path | None = None,
) -> AdviceList:
    r"""What to try for what ``result`` measured, from the input inward: one :class:`Advice`
    per finding (module docstring) and offered remedy, each with its source, the measured
    numbers and its effect in the remedies benchmark; empty for a healthy network.

    Args:
        result: a probe (:func:`relulab.probe.probe`).
        thresholds: when to report a finding (default :class:`AdviceThresholds`; a field set
            to ``None`` turns that finding off).
        validated: offer only the remedies the benchmark supports (``False``: every
            candidate, as the benchmark tries them).
        table: the benchmark table (default: the committed one).

    Returns:
        An :class:`AdviceList` (a list of :class:`Advice` with ``to_frame()`` and
        ``withheld``).

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> from relulab.probe import probe
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        >>> [(a.finding, a.how) for a in advise(probe(model, torch.randn(64, 8) + 10))][:1]
        [('unstandardised_inputs', 'standardise')]
        >>> advise(probe(model, torch.randn(64, 8)))
        []
    """
    thresholds = thresholds or AdviceThresholds()
    found = AdviceList()
    for finding in FINDINGS:
        flagged = CHECKS[finding](result, thresholds) if finding in CHECKS else None
        if flagged is not None:
            advice, withheld = advice_for(finding, flagged, validated, table)
            found.extend(advice)
            found.withheld.extend(withheld)
    return found
