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

**Claims and checks.** A claim is a seed statement that the experiment's model could fail:
its negative control is a setting of the simulated system under which it does fail
(``counterexample`` says which). A statement the experiment could not fail — an identity of the
setup, or relulab's theory against its own simulation — is declared a *check* (``check=`` says
why): it is run and shown in its own table, never counted.

**Choices made after looking at data.** A point, tolerance, window or criterion chosen after a
result is declared (:class:`PostHoc`, with why); the claim then also records its verdict
without it (``post_hoc`` in its record), and that verdict is one of the readings its headline
standing is judged over (:mod:`relulab.records.standing`).

The JSON shape of a claim is :class:`relulab.records.ClaimRecord`'s, part of the run contract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, cast

from relulab.analysis.intervals import Estimate
from relulab.config import C
from relulab.experiments.criteria import Criterion, Equivalent, Measured, NoneBeyond, Verdict
from relulab.records.claims import VERDICTS, ClaimRecord, PostHocRecord
from relulab.records.units import UnitResult

__all__ = [
    "VERDICTS",
    "Claim",
    "ClaimSpec",
    "Measured",
    "PostHoc",
    "Reading",
    "Results",
    "Verdict",
    "claim",
    "evaluate",
]

Claim = ClaimRecord  # the record a claim (or a check) evaluates to


def _expected(criterion: Criterion, source: str, scope: str, headline: Measured, note: str) -> str:
    parts = [f"{criterion.text()} — {source}"]
    if scope:
        parts.append(f"the seed's scope: {scope}")
    if isinstance(criterion, NoneBeyond):
        parts.append("verdict from one-sided t-tests at every point, Holm-adjusted")
    elif isinstance(criterion, Equivalent):
        parts.append(
            "verdict from equivalence tests at every point: holds if every point is shown "
            "inside (one-sided t-tests, intersection–union), fails if one is shown outside "
            "(Holm), else inconclusive"
        )
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
    check: str = "",
    counterexample: str = "",
    post_hoc: Sequence[PostHocRecord] = (),
    diverged: Mapping[str, tuple[int, int]] | None = None,
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
        check: why the statement is a check, not a claim (non-empty: ``kind`` is ``check``).
        counterexample: the setting of the simulated system under which the claim fails.
        post_hoc: the verdicts without each choice made after looking at data.
        diverged: per group, (networks that diverged, networks) among those the claim read.

    Returns:
        The :class:`Claim` record.

    Example:
        >>> from relulab.experiments.criteria import Above
        >>> claim("x", "x is big.", criterion=Above("x", 1.0), measured=0.5, source="s").verdict
        'fails'
    """
    headline = criterion.headline(measured)
    verdict: Verdict = "not tested" if untested else criterion.judge(measured)
    parts = criterion.describe(measured)
    estimate = headline if isinstance(headline, Estimate) else None  # else: no interval
    return ClaimRecord(
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
        kind="check" if check else "claim",
        why_check=check,
        counterexample=counterexample,
        post_hoc=tuple(post_hoc),
        diverged=dict(diverged or {}),
        n=None if estimate is None else estimate.n,
        ci_low=None if estimate is None else estimate.low,
        ci_high=None if estimate is None else estimate.high,
        ci_level=None if estimate is None else estimate.level,
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
        diverged: per group, (networks that diverged, networks) among those it read
            (:func:`relulab.analysis.divergence_counts`).
    """

    measured: Any
    detail: str = ""
    scale: str = ""
    figure: str = ""
    untested: str = ""
    diverged: Mapping[str, tuple[int, int]] = field(default_factory=dict)


Results = Mapping[str, UnitResult]  # a run's stored units by name
CriterionOf = Criterion | Callable[[C], Criterion]  # a criterion, or one per config


def _criterion_at(criterion: CriterionOf[C], config: C | None) -> Criterion:
    if isinstance(criterion, Criterion):
        return criterion
    # None is judge()'s default, meant for a constant criterion; a function of the config is
    # handed it as before (the types cannot tie the default to the criterion's kind)
    return criterion(cast(C, config))


@dataclass(frozen=True)
class PostHoc(Generic[C]):
    """A point, tolerance, window or criterion chosen after looking at data, declared.

    Args:
        what: the choice ("the σ_w² = 1.2 point", "the ratio criterion r₂₃/r₁₂ < 1").
        why: why it was made, and when (the commit or the run that prompted it).
        criterion: the criterion without the choice (default: the claim's own).
        measure: the measurement without the choice (default: the claim's own).
        untested: without the choice, why a run with this config cannot decide the claim
            (``""``: it can) — for a choice that is itself a "not tested" rule (default: the
            claim's own reasons).

    Example:
        >>> from relulab.experiments.criteria import Below
        >>> spec = ClaimSpec("x", "x is small.", source="s", criterion=Below("x", 1.0),
        ...     measure=lambda results, config: Reading(0.5),
        ...     post_hoc=(PostHoc("the bound 1", "moved from 0.4 after a run",
        ...                       criterion=Below("x", 0.4)),))
        >>> record = spec.evaluate({}, None)
        >>> record.verdict, record.post_hoc[0].verdict
        ('holds', 'fails')
    """

    what: str
    why: str
    criterion: CriterionOf[C] | None = None
    measure: Callable[[Results, C], Reading] | None = None
    untested: Callable[[C], str] | None = None


@dataclass(frozen=True)
class ClaimSpec(Generic[C]):
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
        check: non-empty when the statement is a *check*, not a claim: why the experiment
            could not fail it (an identity of its setup, relulab's theory against its own
            simulation). Checks are run and shown, never counted.
        counterexample: for a claim, the setting of the simulated system under which it fails
            (what its negative control runs).
        post_hoc: the choices made after looking at data (:class:`PostHoc`).
    """

    id: str
    statement: str
    source: str
    criterion: CriterionOf[C]
    measure: Callable[[Results, C], Reading]
    scope: str = ""
    note: str = ""
    unit: str = ""
    figure: str = ""
    beyond_seed: bool = False
    untested: Callable[[C], str] | None = field(default=None)
    check: str = ""
    counterexample: str = ""
    post_hoc: tuple[PostHoc[C], ...] = ()

    @property
    def kind(self) -> Literal["claim", "check"]:
        return "check" if self.check else "claim"

    def criterion_for(self, config: C | None) -> Criterion:
        """The criterion at this config."""
        return _criterion_at(self.criterion, config)

    def judge(self, measured: Any, config: C | None = None) -> Verdict:
        """The criterion's verdict on a measurement: what a control test calls."""
        return self.criterion_for(config).judge(measured)

    def _without(
        self, choice: PostHoc[C], results: Results, config: C, reading: Reading, untested: str
    ) -> PostHocRecord:
        """The verdict without one post-hoc choice."""
        criterion = _criterion_at(choice.criterion or self.criterion, config)
        other = choice.measure(results, config) if choice.measure else reading
        if choice.untested is not None:  # the choice is a "not tested" rule: replace it
            untested = choice.untested(config)
            untested = (other.untested if choice.measure else "") or untested
        else:
            untested = other.untested or untested
        verdict: Verdict = "not tested" if untested else criterion.judge(other.measured)
        own = other.detail if choice.measure else ""  # the claim's own detail is shown already
        headline = criterion.headline(other.measured)
        interval = headline.describe() if isinstance(headline, Estimate) else ""
        parts = [criterion.describe(other.measured) or interval, own]
        return PostHocRecord(
            choice.what, choice.why, verdict, float(headline), "; ".join(filter(None, parts))
        )

    def evaluate(self, results: Results, config: C) -> Claim:
        """Measure the claim on the stored results and judge it (and without each post-hoc
        choice)."""
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
            check=self.check,
            counterexample=self.counterexample,
            post_hoc=[self._without(p, results, config, reading, untested) for p in self.post_hoc],
            diverged=reading.diverged,
        )

    @property
    def test_name(self) -> str:
        """The stem of this claim's control tests: ``test_<id>`` with ``-`` as ``_``."""
        return "test_" + self.id.replace("-", "_").replace(".", "_")


def evaluate(specs: Sequence[ClaimSpec[C]], results: Results, config: C) -> list[Claim]:
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
