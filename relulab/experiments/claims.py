r"""Claims: an empirical test of one seed statement, with its criterion, measurement and verdict.

A study declares each claim once, as data (:class:`ClaimSpec`): its id, the seed's statement,
where in the seed it comes from (``source``), where the seed says it applies (``scope``), its
:mod:`criterion <relulab.experiments.criteria>` and the function that measures it on the stored
results (returning a :class:`Reading`). The study's ``CLAIMS`` tuple lists the specs in
scorecard order, and :func:`evaluate` turns them into :class:`Claim` records:

>>> from relulab.experiments.criteria import Below
>>> spec = ClaimSpec(
...     "lr-0.2-converges", "lr 0.2 converges.", source="seed 001, Observation 2",
...     criterion=Below("final loss", 1e-3), measure=lambda results, config: Reading(3e-6))
>>> spec.evaluate({}, None).verdict
'holds'

Because the criterion is an object, a claim's positive and negative controls are two calls of
``spec.judge(measured, config)`` in a test (``docs/adding-an-experiment.md``).

**Verdicts.** ``holds``, ``fails``, ``inconclusive`` (the interval straddles the criterion:
more samples are needed) and ``not tested``: the run cannot decide the claim by design (a
stand-in data set, a fraction of the seed's training, a width the claim is not about). A claim
that is not tested keeps its measurement, says why in ``why_not_tested`` and counts neither as
holding nor failing. Claims about relations the seed does not make are flagged
``beyond_seed`` and counted apart from the seed's tally.

The JSON shape of a claim is part of the run contract: ``id``, ``statement``, ``expected``,
``measured``, ``passed`` (true exactly when the verdict is ``holds``), ``detail``, then the
fields added since (``source``, ``verdict``, ``n``, ``ci_low``, ``ci_high``, ``ci_level``,
``unit``, ``scale``, ``figure`` — the PNG that shows the evidence — and, from issue 28,
``scope``, ``beyond_seed`` and ``why_not_tested``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from relulab.analysis.intervals import Estimate
from relulab.experiments.criteria import Criterion, Measured, NoneBeyond, Verdict
from relulab.store import UnitResult

__all__ = [
    "VERDICTS",
    "Claim",
    "ClaimSpec",
    "Measured",
    "Reading",
    "Results",
    "Verdict",
    "claim",
    "evaluate",
]

VERDICTS: tuple[Verdict, ...] = ("holds", "fails", "inconclusive", "not tested")


@dataclass(frozen=True)
class Claim:
    """One statement of a seed, what it leads us to expect, what we measured, and the verdict.

    Build claims with :func:`claim` (or a :class:`ClaimSpec`) rather than by hand: it fills
    ``expected``, ``verdict`` and the interval fields consistently.
    """

    id: str
    statement: str
    expected: str
    measured: float
    passed: bool
    detail: str = ""
    source: str = ""
    verdict: Verdict | Literal[""] = ""
    n: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    unit: str = ""
    scale: str = ""
    figure: str = ""
    scope: str = ""
    beyond_seed: bool = False
    why_not_tested: str = ""

    def __post_init__(self) -> None:
        if not self.verdict:  # a hand-built claim: the verdict is its pass/fail
            object.__setattr__(self, "verdict", "holds" if self.passed else "fails")


def _expected(criterion: Criterion, source: str, scope: str, headline: Measured, note: str) -> str:
    parts = [f"{criterion.text()} — {source}"]
    if scope:
        parts.append(f"the seed's scope: {scope}")
    if isinstance(criterion, NoneBeyond):
        parts.append("verdict from one-sided t-tests at every point, Holm-adjusted")
    elif isinstance(headline, Estimate):
        exact = headline.level >= 1.0 or headline.low == headline.high == headline.value
        parts.append(
            "verdict exact (a deterministic reading: no interval)"
            if exact
            else f"verdict from the {100 * headline.level:.4g}% CI"
        )
    if note:
        parts.append(note)
    return "; ".join(parts)


def claim(
    claim_id: str,
    statement: str,
    *,
    criterion: Criterion,
    measured: Any,
    source: str,
    scope: str = "",
    detail: str = "",
    note: str = "",
    unit: str = "",
    scale: str = "",
    figure: str = "",
    beyond_seed: bool = False,
    untested: str = "",
) -> Claim:
    """A claim: the criterion judges the measurement, and every field is filled from the two.

    Args:
        claim_id: a stable id (kebab-case).
        statement: the seed's statement in words.
        criterion: the test (:mod:`relulab.experiments.criteria`).
        measured: what the criterion judges (a number, an estimate, or the compound shape the
            criterion takes: ``{name: value}`` for :class:`AllOf` / :class:`Every`,
            ``[(name, value), …]`` for :class:`Ordered`).
        source: where in the seed the statement is (section, figure, sentence).
        scope: where the seed says the statement applies ("asymptotically, l ≫ l₀", "early in
            training", "with SGD"), when it bounds it.
        detail: the numbers a reader needs to judge the verdict.
        note: tags on the criterion (``"tolerance [I]"``).
        unit: the measured value's unit.
        scale: the scale the run measured at.
        figure: the PNG that shows the evidence.
        beyond_seed: the relation is relulab's own extension, not the seed's.
        untested: why this run cannot decide the claim (non-empty: verdict ``not tested``).

    Returns:
        The :class:`Claim`.

    Example:
        >>> from relulab.experiments.criteria import Above
        >>> claim("x", "x is big.", criterion=Above("x", 1.0), measured=0.5, source="s").verdict
        'fails'
    """
    headline = criterion.headline(measured)
    verdict: Verdict = "not tested" if untested else criterion.judge(measured)
    parts = criterion.describe(measured)
    interval = (
        {
            "n": headline.n,
            "ci_low": headline.low,
            "ci_high": headline.high,
            "ci_level": headline.level,
        }
        if isinstance(headline, Estimate)
        else {}
    )
    return Claim(
        claim_id,
        statement,
        _expected(criterion, source, scope, headline, note),
        float(headline),
        verdict == "holds",
        "; ".join(filter(None, [parts, detail])),
        source,
        verdict,
        unit=unit,
        scale=scale,
        figure=figure,
        scope=scope,
        beyond_seed=beyond_seed,
        why_not_tested=untested,
        **interval,
    )


@dataclass(frozen=True)
class Reading:
    """What a claim's measurement found on the stored results.

    Args:
        measured: what the claim's criterion judges.
        detail: the numbers behind it, for the reader.
        scale: the scale it was measured at.
        figure: the PNG with the evidence, when it depends on the run (else the spec's).
        untested: why this run cannot decide the claim (the verdict is then ``not tested``).
    """

    measured: Any
    detail: str = ""
    scale: str = ""
    figure: str = ""
    untested: str = ""


Results = Mapping[str, UnitResult]  # a run's stored units by name


@dataclass(frozen=True)
class ClaimSpec:
    """A claim declared as data: what the seed says, where, and how relulab tests it.

    Args:
        id: a stable id (kebab-case); its controls are the tests
            ``test_<id with underscores>_positive`` and ``…_negative``.
        statement: the seed's statement in words.
        source: where in the seed (section, figure, sentence).
        criterion: the criterion, or a function of the config returning it (thresholds that
            are config fields).
        measure: ``measure(results, config) -> Reading``.
        scope: where the seed says the statement applies, when it bounds it.
        note: tags on the criterion (``"tolerance [I]"``).
        unit: the measured value's unit.
        figure: the PNG that shows the evidence.
        beyond_seed: a relation the seed does not make (counted apart from the seed's tally).
        untested: a function of the config giving why a run with it cannot decide the claim
            (``""`` when it can).
    """

    id: str
    statement: str
    source: str
    criterion: Criterion | Callable[[Any], Criterion]
    measure: Callable[[Results, Any], Reading]
    scope: str = ""
    note: str = ""
    unit: str = ""
    figure: str = ""
    beyond_seed: bool = False
    untested: Callable[[Any], str] | None = field(default=None)

    def criterion_for(self, config: Any) -> Criterion:
        """The criterion at this config."""
        if isinstance(self.criterion, Criterion):
            return self.criterion
        return self.criterion(config)

    def judge(self, measured: Any, config: Any = None) -> Verdict:
        """The criterion's verdict on a measurement: what a control test calls."""
        return self.criterion_for(config).judge(measured)

    def evaluate(self, results: Results, config: Any) -> Claim:
        """Measure the claim on the stored results and judge it."""
        reading = self.measure(results, config)
        untested = reading.untested or (self.untested(config) if self.untested else "")
        return claim(
            self.id,
            self.statement,
            criterion=self.criterion_for(config),
            measured=reading.measured,
            source=self.source,
            scope=self.scope,
            detail=reading.detail,
            note=self.note,
            unit=self.unit,
            scale=reading.scale,
            figure=reading.figure or self.figure,
            beyond_seed=self.beyond_seed,
            untested=untested,
        )

    @property
    def test_name(self) -> str:
        """The stem of this claim's control tests: ``test_<id>`` with ``-`` as ``_``."""
        return "test_" + self.id.replace("-", "_").replace(".", "_")


def evaluate(specs: Sequence[ClaimSpec], results: Results, config: Any) -> list[Claim]:
    """Every claim of a study, in order; ids must be unique.

    Example:
        >>> evaluate([], {}, None)
        []
    """
    ids = [spec.id for spec in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"claim ids must be unique, repeated: {', '.join(duplicates)}")
    return [spec.evaluate(results, config) for spec in specs]
