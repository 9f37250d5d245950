"""A robustness run's page, ``robustness.html``: each claim's verdict under every plausible
reading of the settings the seed left unsaid.

One row per claim: its verdict at the preset, "holds in k of n readings", its standing (robust
holds / robust fails / depends) and the fields that flip it, then its verdict in every reading,
linking the claim in that reading's report. Below: the readings (which inferred field takes
which alternative, with the field's note). Rendered with the site's templates and filters
(:mod:`relulab.report.render`): self-contained and HTML-escaped like every page.

The same record, as Markdown for the docs (:func:`robustness_markdown`, an experiment's page)
and the README (:func:`robustness_readme_rows`, one row per experiment): generated, so the text
cannot drift from the committed records (``python -m relulab.docs_sync`` rewrites
the marked sections).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from relulab.config import override_text
from relulab.records.robustness import ReadingRecord, RobustnessRecord
from relulab.report import scorecard
from relulab.report.render import write_page
from relulab.report.site import REPORT_FILENAME

__all__ = [
    "STANDING_VERDICT",
    "robustness_markdown",
    "robustness_missing_markdown",
    "robustness_readme_rows",
    "write_robustness_page",
]

STANDING_VERDICT = scorecard.STANDING_VERDICT  # the verdict whose colour a standing is shown in


def _cell(
    out_dir: Path, reading: ReadingRecord, claim_id: str, verdict: str | None
) -> dict[str, Any] | None:
    if verdict is None:
        return None
    directory = reading.judged_on or reading.name  # judged on the preset's units
    report = f"{quote(directory, safe='=,+')}/{REPORT_FILENAME}"
    linked = (out_dir / directory / REPORT_FILENAME).is_file()
    return {
        "verdict": verdict,
        "href": f"{report}#{scorecard.anchor('claim', claim_id)}" if linked else None,
    }


def write_robustness_page(path: Path, record: RobustnessRecord) -> Path:
    """Write ``robustness.html`` from a robustness record.

    Args:
        path: where to write the page (``DIR/robustness.html``); reading directories are
            relative to its folder.
        record: the :class:`~relulab.records.RobustnessRecord`.

    Returns:
        The path of the written page.
    """
    path = Path(path)
    readings = list(record.readings)
    rows = [
        {
            **claim.to_json(),
            "standing_class": STANDING_VERDICT.get(claim.standing, "not tested"),
            "cells": [
                _cell(path.parent, r, claim.id, claim.verdicts.get(r.name)) for r in readings
            ],
        }
        for claim in record.claims
    ]
    return write_page(
        path,
        "robustness.html",
        experiment=record.experiment,
        preset=record.preset,
        readings=readings,
        claims=[r for r in rows if r["kind"] == "claim"],
        checks=[r for r in rows if r["kind"] == "check"],
        summary=record.summary,
        fields=record.fields,
        registration=record.registration,
    )


# ---------------------------------------------------------------------------------------------
# Markdown for the docs and the README.
# ---------------------------------------------------------------------------------------------
_STANDINGS = ("robust holds", "robust fails", "robust inconclusive", "depends")
_UNTESTED = ("not tested", "missing")  # no verdict: left out of n, never a flip


def _standing_counts(claims: list[Mapping[str, Any]]) -> dict[str, int]:
    """Claims per standing: the four standings always (zeros included), then any other; checks
    are not claims and are not counted."""
    found = [str(c.get("standing") or "not tested") for c in claims if _is_claim(c)]
    counts = {s: found.count(s) for s in _STANDINGS}
    counts.update({s: found.count(s) for s in sorted(set(found) - set(_STANDINGS))})
    return counts


def _is_claim(row: Mapping[str, Any]) -> bool:
    return (row.get("kind") or "claim") == "claim"


def _count_phrase(standing: str, n: int) -> str:
    if standing == "depends":
        return f"{n} {'depends' if n == 1 else 'depend'} on a reading"
    return f"{n} {standing}"


def _code(text: Any) -> str:
    """``text`` in backticks, safe in a table cell."""
    return "`" + str(text).replace("|", "\\|") + "`"


def _value(value: Any) -> str:
    """A setting's value as ``--set`` takes it, in backticks."""
    return _code(override_text("", value)[1:])


def _flips(claim: Mapping[str, Any], readings: list[Mapping[str, Any]]) -> list[str]:
    """``reading → verdict`` for each reading whose tested verdict differs from the preset's."""
    preset = claim.get("preset")
    if preset in _UNTESTED:
        return []
    verdicts = claim.get("verdicts") or {}
    flips = []
    for reading in readings:
        verdict = verdicts.get(reading["name"], "not tested")
        if reading.get("fields") and verdict not in _UNTESTED and verdict != preset:
            flips.append(f"{_code(reading['name'])} → {verdict}")
    return flips


def _holds_text(claim: Mapping[str, Any]) -> str:
    tested = int(claim.get("tested") or 0)
    if not tested:
        return "—"
    text = f"{int(claim.get('holds') or 0)} of {tested}"
    untested = sum(v == "not tested" for v in (claim.get("verdicts") or {}).values())
    return f"{text} ({untested} not tested)" if untested else text


def _claim_name(claim: Mapping[str, Any]) -> str:
    """The claim's id in code font, marked when it is relulab's own extension."""
    return _code(claim["id"]) + (" (beyond the seed)" if claim.get("beyond_seed") else "")


def _flipped_by(claims: list[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Field → the claims it flips, in claim order."""
    flipped: dict[str, list[str]] = {}
    for claim in claims:
        for field in claim.get("flipped_by") or []:
            flipped.setdefault(str(field), []).append(str(claim["id"]))
    return flipped


def _page_link(record: Mapping[str, Any], prefix: str) -> str:
    preset = quote(str(record.get("preset") or "quick"))
    return f"{prefix}results/robustness/{preset}/{quote(str(record['experiment']))}/robustness.html"


def _readings_text(readings: list[Mapping[str, Any]]) -> str:
    """``12 readings (the preset and …; 10 judged on the preset's stored units)``."""
    pairs = sum(len(r.get("fields") or []) > 1 for r in readings)
    what = "the preset and each declared alternative of an inferred setting, one at a time"
    if pairs:
        what += f", and {pairs} {'pair' if pairs == 1 else 'pairs'} of alternatives"
    judged = sum(r.get("judged_on") is not None for r in readings)
    if judged:
        what += f"; {judged} judged on the preset's stored units"
    unfinished = sum(not r.get("finished", True) for r in readings)
    if unfinished:
        what += f"; {unfinished} not finished"
    return f"{len(readings)} {'reading' if len(readings) == 1 else 'readings'} ({what})"


def robustness_missing_markdown(experiment: str, preset: str = "quick") -> str:
    """The docs section of an experiment without a committed robustness record.

    Example:
        >>> robustness_missing_markdown("anisotropy")
        'Not yet committed: run `relulab robustness anisotropy --preset quick`.'
    """
    return f"Not yet committed: run `relulab robustness {experiment} --preset {preset}`."


def robustness_markdown(record: Mapping[str, Any]) -> str:
    """An experiment's robustness as a short Markdown section for its docs page
    (``docs/experiments/<experiment>.md``), generated from its ``robustness.json``.

    One sentence of counts (readings, claims per standing); a table of every claim that does
    not robustly hold — its verdict at the preset, in how many of the readings that test it it
    holds, its standing and each reading that gives another tested verdict, as ``reading →
    verdict``; the claims that hold in every reading; then each varied inferred setting with
    its preset value, its alternatives and the claims it flips. Links the committed page
    ``../../results/robustness/<preset>/<experiment>/robustness.html``. Deterministic (record
    order, no timestamps), so a test can compare a page with what its record gives.

    Args:
        record: the content of ``robustness.json``
            (:func:`relulab.runner.robustness.write_robustness`): ``experiment``, ``preset``,
            ``readings``, ``claims`` and ``fields``.

    Returns:
        The section's body, without heading and without a trailing newline.

    Example:
        >>> record = {
        ...     "experiment": "t", "preset": "quick",
        ...     "readings": [{"name": "preset", "fields": [], "judged_on": None},
        ...                  {"name": "tol=0.05", "fields": ["tol"], "judged_on": "preset"}],
        ...     "claims": [
        ...         {"id": "a", "preset": "holds", "holds": 2, "tested": 2,
        ...          "verdicts": {"preset": "holds", "tol=0.05": "holds"},
        ...          "standing": "robust holds", "flipped_by": []},
        ...         {"id": "b", "preset": "holds", "holds": 1, "tested": 2,
        ...          "verdicts": {"preset": "holds", "tol=0.05": "fails"},
        ...          "standing": "depends", "flipped_by": ["tol"]}],
        ...     "fields": {"tol": {"value": 0.1, "alternatives": [0.05]}}}
        >>> print(robustness_markdown(record))  # doctest: +NORMALIZE_WHITESPACE
        At the quick preset, 2 readings (the preset and each declared alternative of an
        inferred setting, one at a time; 1 judged on the preset's stored units), 2 claims:
        1 robust holds, 0 robust fails, 0 robust inconclusive, 1 depends on a reading.
        Per claim and reading: [robustness.html](../../results/robustness/quick/t/robustness.html).
        <BLANKLINE>
        | claim | at the preset | holds in | standing | readings that flip it |
        |---|---|---|---|---|
        | `b` | holds | 1 of 2 | depends | `tol=0.05` → fails |
        <BLANKLINE>
        Robust holds (in every reading that tests them): `a`.
        <BLANKLINE>
        Settings and what they flip:
        <BLANKLINE>
        | setting | preset | alternatives | flips |
        |---|---|---|---|
        | `tol` | `0.1` | `0.05` | `b` |
    """
    readings = list(record.get("readings") or [])
    rows_in_record = list(record.get("claims") or [])
    claims = [c for c in rows_in_record if _is_claim(c)]
    checks = [c for c in rows_in_record if not _is_claim(c)]
    counts = _standing_counts(claims)
    lines = [
        f"At the {record.get('preset') or 'quick'} preset, {_readings_text(readings)}, "
        f"{len(claims)} {'claim' if len(claims) == 1 else 'claims'}: "
        + ", ".join(_count_phrase(s, n) for s, n in counts.items())
        + ".",
        f"Per claim and reading: [robustness.html]({_page_link(record, '../../')}).",
    ]
    rows = [c for c in claims if c.get("standing") != "robust holds"]
    if rows:
        lines += [
            "",
            "| claim | at the preset | holds in | standing | readings that flip it |",
            "|---|---|---|---|---|",
        ]
        for c in rows:
            flips = "; ".join(_flips(c, readings)) or "—"
            lines.append(
                f"| {_claim_name(c)} | {c.get('preset')} | {_holds_text(c)} | {c.get('standing')} "
                f"| {flips} |"
            )
    robust = [_claim_name(c) for c in claims if c.get("standing") == "robust holds"]
    lines += [
        "",
        f"Robust holds (in every reading that tests them): {', '.join(robust) or 'none'}.",
    ]
    if checks:
        standings = ", ".join(f"{_claim_name(c)} {c.get('standing')}" for c in checks)
        lines += ["", f"Checks, not counted as claims: {standings}."]
    flipped = _flipped_by(claims)
    fields = {
        name: row
        for name, row in (record.get("fields") or {}).items()
        if (row or {}).get("alternatives")
    }
    if fields:
        lines += [
            "",
            "Settings and what they flip:",
            "",
            "| setting | preset | alternatives | flips |",
            "|---|---|---|---|",
        ]
        for name, row in fields.items():
            alternatives = "; ".join(_value(v) for v in row["alternatives"])
            flips = ", ".join(_code(c) for c in flipped.get(name, [])) or "none"
            lines.append(
                f"| {_code(name)} | {_value(row.get('value'))} | {alternatives} | {flips} |"
            )
    return "\n".join(lines)


def _readings_cell(readings: list[Mapping[str, Any]]) -> str:
    if not readings or any("judged_on" not in r for r in readings):
        return str(len(readings))
    judged = sum(r["judged_on"] is not None for r in readings)
    return f"{len(readings)} ({len(readings) - judged} run, {judged} judged)"


def robustness_readme_rows(
    records: Iterable[Mapping[str, Any]],
    missing: Iterable[str] = (),
    missing_label: str = "Not yet committed",
) -> str:
    """The README's robustness table: one row per committed record (by experiment name) with
    its readings (run and judged on the preset's units, where the record says), its claims per
    standing, the fields that flip a claim (``field (n claims)``, most first) and a link to its
    page; then a line naming the ``missing`` experiments (no record yet).

    Args:
        records: robustness records (the content of ``robustness.json``).
        missing: experiments without a committed record.
        missing_label: the words before the list of ``missing`` experiments.

    Returns:
        Markdown, without a trailing newline.

    Example:
        >>> print(robustness_readme_rows(
        ...     [{"experiment": "toy", "preset": "quick",
        ...       "readings": [{"name": "preset", "judged_on": None},
        ...                    {"name": "tol=0.05", "judged_on": "preset"}],
        ...       "claims": [{"id": "a", "standing": "robust holds"},
        ...                  {"id": "b", "standing": "depends", "flipped_by": ["tol"]}]}],
        ...     missing=["other"]))  # doctest: +NORMALIZE_WHITESPACE
        | experiment | readings | robust holds | robust fails | robust inconclusive | depends \
        | page |
        |---|---|---|---|---|---|---|
        | `toy` | 2 (1 run, 1 judged) | 1 | 0 | 0 | 1: `tol` (1 claim) \
        | [robustness.html](results/robustness/quick/toy/robustness.html) |
        <BLANKLINE>
        Not yet committed: `other`.
    """
    lines = [
        "| experiment | readings | robust holds | robust fails | robust inconclusive | depends "
        "| page |",
        "|---|---|---|---|---|---|---|",
    ]
    for record in sorted(records, key=lambda r: str(r["experiment"])):
        claims = list(record.get("claims") or [])
        counts = _standing_counts(claims)
        flipped = sorted(_flipped_by(claims).items(), key=lambda item: (-len(item[1]), item[0]))
        depends = str(counts["depends"])
        if flipped:
            depends += ": " + ", ".join(
                f"{_code(field)} ({len(ids)} {'claim' if len(ids) == 1 else 'claims'})"
                for field, ids in flipped
            )
        others = [f"{n} {s}" for s, n in counts.items() if s not in _STANDINGS and n]
        if others:
            depends += " (" + ", ".join(others) + ")"
        readings = _readings_cell(list(record.get("readings") or []))
        lines.append(
            f"| {_code(record['experiment'])} | {readings} "
            f"| {counts['robust holds']} | {counts['robust fails']} "
            f"| {counts['robust inconclusive']} | {depends} "
            f"| [robustness.html]({_page_link(record, '')}) |"
        )
    missing = sorted(missing)
    if missing:
        lines += ["", f"{missing_label}: " + ", ".join(_code(m) for m in missing) + "."]
    return "\n".join(lines)
