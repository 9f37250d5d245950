"""What relulab's remedies benchmark measured for each remedy: the evidence the advice offers
a remedy on, read at runtime from the committed table ``relulab/bench/remedies.json``
(written by ``relulab bench remedies``, :mod:`relulab.bench.remedies`).

The benchmark trains deliberately broken networks, each treated with every candidate remedy of
every finding the advice makes on it, against the untreated network over several seeds, and
compares the held-out loss (a paired ratio, treated over untreated, with its interval). Each
row of the table is one case, finding and remedy with its verdict: ``improved`` (the interval
lies below 1), ``hurt`` (above 1) or ``undecided``.

**The rule** (:meth:`Evidence.offered`): a remedy is offered for a finding when it improved the
held-out loss in at least one case showing that finding and hurt it in none. A remedy that
hurt, or was undecided everywhere, or was never measured, is withheld — the advice lists it as
withheld with its numbers, so the reader sees why.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relulab.probe.remedies import API, REMEDIES, Remedy
from relulab.reading import read_json

__all__ = [
    "TABLE",
    "VERDICTS",
    "Evidence",
    "Measured",
    "evidence_for",
    "load_table",
    "no_remedy_text",
    "one_line",
    "remedies_for",
    "withheld_for",
]

#: The committed benchmark table the advice reads.
TABLE = Path(__file__).resolve().parents[1] / "bench" / "remedies.json"

#: A row's verdict, from its interval.
VERDICTS = ("improved", "hurt", "undecided")


@dataclass(frozen=True)
class Measured:
    """One benchmark row: a remedy's effect on one broken network showing one finding.

    Attributes:
        case: the broken network (:data:`relulab.bench.broken.CASES`: ``shifted_inputs``, …).
        ratio: the held-out loss treated over untreated, the geometric mean over the seeds where
            neither diverged (``None`` when there are none).
        low: the lower bound of its interval.
        high: the upper bound.
        n: the seeds (paired networks) behind it.
        verdict: ``improved``, ``hurt`` or ``undecided``.
        description: the case in words.
        diverged: how many treated and untreated networks diverged.
        superiority: where any diverged, P(the treated network ends better) and its interval,
            which the verdict follows.
    """

    case: str
    ratio: float | None
    low: float | None
    high: float | None
    n: int
    verdict: str
    description: str = ""
    diverged: tuple[int, int] = (0, 0)
    superiority: tuple[float, float, float] | None = None

    def text(self) -> str:
        """``×0.31 [0.25, 0.38] shifted_inputs``: the ratio and its interval, and the case;
        where a network diverged, P(the treated network ends better) and the counts.

        Example:
            >>> Measured("dead_biases", 0.0079, 0.006, 0.01, 8, "improved").text()
            '×0.0079 [0.006, 0.01] dead_biases'
            >>> Measured("nan_weight", None, None, None, 8, "improved", "", (0, 8),
            ...          (1.0, 0.63, 1.0)).text()
            'P(treated ends better) 1 [0.63, 1], untreated diverged 8 of 8, nan_weight'
        """
        if self.superiority is not None:
            value, low, high = self.superiority
            treated, untreated = self.diverged
            counts = f"untreated diverged {untreated} of {self.n}" + (
                f", treated {treated}" if treated else ""
            )
            return (
                f"P(treated ends better) {value:.2g} [{low:.2g}, {high:.2g}], {counts}, {self.case}"
            )
        return f"×{self.ratio:.2g} [{self.low:.2g}, {self.high:.2g}] {self.case}"


@dataclass(frozen=True)
class Evidence:
    """What the benchmark says of one remedy for one finding.

    Attributes:
        finding: the finding.
        how: the remedy (:data:`relulab.probe.remedies.SNIPPETS` key).
        rows: its :class:`Measured` rows, one per case showing the finding.
    """

    finding: str
    how: str
    rows: tuple[Measured, ...] = field(default_factory=tuple)

    @property
    def verdict(self) -> str:
        """``improved`` (in some case, hurt in none), ``hurt`` (in some case), ``undecided``
        (measured, never decided) or ``untested`` (no row)."""
        verdicts = {row.verdict for row in self.rows}
        if not verdicts:
            return "untested"
        if "hurt" in verdicts:
            return "hurt"
        return "improved" if "improved" in verdicts else "undecided"

    @property
    def offered(self) -> bool:
        """Whether the advice offers the remedy for the finding (module docstring)."""
        return self.verdict == "improved"

    @property
    def best(self) -> float:
        """The smallest ratio among the cases it improved (``inf`` when none): the order in
        which offered remedies are given."""
        improved = [row for row in self.rows if row.verdict == "improved"]
        return min(
            (row.ratio if row.ratio is not None else 0.0 for row in improved), default=math.inf
        )

    def short(self) -> str:
        """The best case it improved, in a few words (``held-out loss ×0.31 [0.2, 0.49]
        lr_kills_units``), or its verdict.

        Example:
            >>> evidence_for("units_died", "warmup").short()
            'held-out loss ×0.31 [0.2, 0.49] lr_kills_units'
        """
        improved = [row for row in self.rows if row.verdict == "improved"]
        if not improved:
            return self.verdict
        best = min(improved, key=lambda row: row.ratio if row.ratio is not None else 0.0)
        return f"held-out loss {best.text()}"

    def text(self) -> str:
        """The numbers in a line: per case the held-out loss ratio and its interval, the cases
        it improved first, the others with their verdict.

        Example:
            >>> Evidence("dead_units", "rai").text()
            'not measured by relulab bench remedies'
            >>> print(evidence_for("unstandardised_inputs", "standardise").text())
            ... # doctest: +NORMALIZE_WHITESPACE
            held-out loss vs untreated in relulab bench remedies (n = 8): ×0.17 [0.14, 0.2]
            unscaled_inputs; ×0.72 [0.48, 1.1] shifted_inputs (undecided)
        """
        if not self.rows:
            return "not measured by relulab bench remedies"
        order = sorted(self.rows, key=lambda row: VERDICTS.index(row.verdict))  # improved first
        parts = [
            row.text() + ("" if row.verdict == "improved" else f" ({row.verdict})") for row in order
        ]
        n = "/".join(str(size) for size in dict.fromkeys(row.n for row in order))
        prefix = f"held-out loss vs untreated in relulab bench remedies (n = {n}): "
        return prefix + "; ".join(parts)


@functools.lru_cache(maxsize=4)
def _read(path: str) -> dict[str, Any]:
    file = Path(path)
    if not file.is_file():
        return {}
    return read_json(file, "benchmark table")


def load_table(path: str | Path | None = None) -> dict[str, Any]:
    """The benchmark table (the committed one by default), parsed; empty when absent.

    Args:
        path: another table (a fresh ``relulab bench remedies --out`` file).

    Returns:
        The table: ``settings``, ``cost``, ``cases`` and ``rows``.
    """
    return _read(str(Path(path) if path is not None else TABLE))


def evidence_for(finding: str, how: str, path: str | Path | None = None) -> Evidence:
    """The :class:`Evidence` of remedy ``how`` for ``finding`` in the benchmark table.

    Args:
        finding: a key of :data:`relulab.probe.remedies.FINDINGS`.
        how: a key of :data:`relulab.probe.remedies.SNIPPETS`.
        path: the table (default: the committed one, :data:`TABLE`).

    Returns:
        Its evidence (no rows when the table does not measure it).

    Example:
        >>> evidence_for("unstandardised_inputs", "standardise").verdict
        'improved'
    """
    table = load_table(path)
    descriptions = {case["name"]: case.get("description", "") for case in table.get("cases", [])}
    rows = tuple(
        Measured(
            row["case"],
            row["ratio"],
            row["low"],
            row["high"],
            row["n"],
            row["verdict"],
            descriptions.get(row["case"], ""),
            tuple(row.get("diverged", (0, 0))),
            tuple(row["superiority"]) if "superiority" in row else None,
        )
        for row in table.get("rows", [])
        if row["role"] == "remedy" and row["finding"] == finding and row["remedy"] == how
    )
    return Evidence(finding, how, rows)


def _fitting(finding: str, families: Iterable[str] | None) -> tuple[Remedy, ...]:
    remedies = REMEDIES[finding]
    if families is None:
        return remedies
    wanted = set(families)
    return tuple(remedy for remedy in remedies if wanted & set(remedy.families))


def remedies_for(
    finding: str,
    families: Iterable[str] | None = None,
    *,
    validated: bool = True,
    table: str | Path | None = None,
) -> tuple[Remedy, ...]:
    """The remedies of ``finding`` that fit activations of ``families`` (one of them is in the
    remedy's :attr:`Remedy.families`: ReLU − b only where a rectifier was flagged) and, with
    ``validated``, that the remedies benchmark offers (:mod:`relulab.probe.evidence`), the one
    that lowered the held-out loss most first. The one filter of :func:`advise` and of the
    monitor's warnings.

    Args:
        finding: a key of :data:`REMEDIES`.
        families: the families of the flagged calls (``"rectifier"``, ``"leaky"``,
            ``"smooth"``, ``"other"``); ``None`` for every remedy.
        validated: only the remedies the benchmark measured to help (``False``: every
            candidate, in catalogue order — what the benchmark itself tries).
        table: the benchmark table (default: the committed one).

    Returns:
        The remedies (empty when none fits, or none is offered).

    Example:
        >>> [r.how for r in remedies_for("high_delta", {"smooth"}, validated=False)]
        ['scale_bias']
        >>> [r.how for r in remedies_for("high_delta", validated=False)]
        ['relu_minus_b', 'scale_bias']
        >>> [r.how for r in remedies_for("unstandardised_inputs")]
        ['standardise']
    """
    fitting = _fitting(finding, families)
    if not validated:
        return fitting
    weighed = [(evidence_for(finding, remedy.how, table), remedy) for remedy in fitting]
    offered = sorted(
        ((evidence, remedy) for evidence, remedy in weighed if evidence.offered),
        key=lambda pair: pair[0].best,
    )
    return tuple(remedy for _, remedy in offered)


def withheld_for(
    finding: str, families: Iterable[str] | None = None, table: str | Path | None = None
) -> tuple[tuple[Remedy, Evidence], ...]:
    """The remedies of ``finding`` that fit ``families`` but are not offered: each with the
    benchmark's evidence (hurt, undecided or never measured).

    Args:
        finding: a key of :data:`REMEDIES`.
        families: the families of the flagged calls; ``None`` for every remedy.
        table: the benchmark table (default: the committed one).

    Returns:
        ``(remedy, evidence)`` pairs, in catalogue order.
    """
    weighed = [(r, evidence_for(finding, r.how, table)) for r in _fitting(finding, families)]
    return tuple((remedy, evidence) for remedy, evidence in weighed if not evidence.offered)


def one_line(finding: str, families: Iterable[str] | None = None) -> str:
    """A finding's offered remedies in one line, each with its API, source and measured effect
    (the monitor's alerts), those that fit ``families`` only (:func:`remedies_for`).

    Args:
        finding: a key of :data:`REMEDIES`.
        families: the families of the flagged calls; ``None`` for every remedy.

    Returns:
        ``"remedy (api) [source] {effect}; or …"``, or a line saying none is offered.

    Example:
        >>> "relulab.probe.standardise" in one_line("unstandardised_inputs")
        True
        >>> "ReLUMinusB" in one_line("high_delta", {"smooth"})
        False
    """
    offered = remedies_for(finding, families)
    if not offered:
        return no_remedy_text(finding, families)
    return "; or ".join(
        f"{r.text} ({API[r.how]}) [{r.source}] {{{evidence_for(finding, r.how).text()}}}"
        for r in offered
    )


def no_remedy_text(finding: str, families: Iterable[str] | None = None) -> str:
    """What the advice says of a finding none of whose remedies is offered: which were withheld
    and why, in one line."""
    withheld = withheld_for(finding, families)
    reasons = ", ".join(f"{remedy.how} ({evidence.verdict})" for remedy, evidence in withheld)
    return "no remedy offered: none lowered the held-out loss in relulab bench remedies" + (
        f" (withheld: {reasons})" if reasons else ""
    )
