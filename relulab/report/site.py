"""The reproduction as a site: one ``report.html`` per run and the ``index.html`` scorecard.

Both are single self-contained files (figures inlined, CSS and the little JavaScript inline, no
network access) that work from ``file://``. A report links back to ``../index.html`` when its
run directory sits in a reproduce directory that has one, and to the experiment's docs page
``docs/experiments/NAME.md`` when the run directory sits inside the relulab checkout that holds
that page (a relative link stays valid as long as the checkout moves as a whole); elsewhere the
page names the docs path in words. The experiment module's docstring is embedded as the
report's "About" section, so the description always matches the code that produced the numbers.

Every claim is headed by its standing (:mod:`relulab.records.standing`): ``holds`` only when it
holds in every reading that tests it, ``depends`` (naming what flips it) when a reading — a
robustness reading of the settings the seed left unsaid, or the claim without a choice made
after looking at data — gives another verdict. Given the finished ``relulab robustness`` runs of
its experiments (``--robustness DIR``), a page weighs their readings in and links the claim's
row on the experiment's ``robustness.html``; without one the standing says "robustness not
measured". The count lines count standings (``9 hold · 3 depend · 1 fails``); checks are shown
in their own table and never counted. A report also shows the registration its claims were
judged under and, for a re-judged run, the verdicts under each earlier registration.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from relulab.records.claims import ClaimRecord
from relulab.records.robustness import RobustnessRun
from relulab.records.standing import HEADLINES, Standing, count_line, headline_counts, standing
from relulab.records.summary import SummaryRecord
from relulab.report import scorecard
from relulab.report.render import embedded_figures, render_docstring, write_page

__all__ = [
    "INDEX_FILENAME",
    "REPORT_FILENAME",
    "claim_robustness",
    "docs_page",
    "robustness_href",
    "write_index",
    "write_run_report",
]

REPORT_FILENAME = "report.html"
INDEX_FILENAME = "index.html"
DOCS_DIRECTORY = PurePosixPath("docs/experiments")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def _checkout_root() -> Path | None:
    """The relulab source checkout this package runs from, if it is one (editable install)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "relulab").is_dir() else None


def docs_page(out_dir: Path, experiment: str, root: Path | None = None) -> dict[str, Any]:
    """Where the experiment's docs page is: ``path`` (in the repository) and ``href`` (relative
    to ``out_dir``, or ``None`` when no link would stay valid).

    Args:
        out_dir: the run directory the report is written to.
        experiment: the experiment's name.
        root: the repository checkout holding ``docs/experiments`` (default: the one this
            package runs from, if any).
    """
    path = str(DOCS_DIRECTORY / f"{experiment}.md")
    root = root if root is not None else _checkout_root()
    if root is None or not _SAFE_NAME.match(experiment):
        return {"path": path, "href": None}
    page = (root / path).resolve()
    run_dir = Path(out_dir).resolve()
    if not page.is_file() or not run_dir.is_relative_to(root.resolve()):
        return {"path": path, "href": None}
    return {"path": path, "href": PurePosixPath(os.path.relpath(page, run_dir)).as_posix()}


def _standing_view(
    standing: Standing, run: RobustnessRun | None, claim_id: str, from_dir: Path
) -> dict[str, Any]:
    """The standing column's cell: headline, its colour, what flips it, k/n and the link to the
    claim's row on the robustness page (when a record speaks for it)."""
    page = robustness_href(run, from_dir) if standing.measured else None
    return {
        "verdict": standing.verdict,
        "class": scorecard.STANDING_CLASS[standing.verdict],
        "flipped_by": list(standing.flipped_by),
        "holds": standing.holds,
        "n": standing.readings,
        "measured": standing.measured,
        "why_unmeasured": standing.why_unmeasured,
        "text": standing.text(),
        "href": f"{page}#{scorecard.anchor('claim', claim_id)}" if page else None,
    }


def _claim_views(
    claims: Sequence[ClaimRecord],
    seed_document: str,
    figure_names: set[str],
    run: RobustnessRun | None,
    from_dir: Path,
) -> list[dict[str, Any]]:
    """Each claim (or check) as the templates show it: its row of ``summary.json`` with its
    seed, anchors and headline standing."""
    views = []
    record = run.record if run is not None else None
    for claim in claims:
        figure = claim.figure
        views.append(
            {
                **claim.to_json(),
                "verdict": claim.verdict,
                "seed": scorecard.claim_seed({"source": claim.source}, seed_document),
                "anchor": scorecard.anchor("claim", claim.id),
                "figure_anchor": scorecard.anchor("figure", figure)
                if figure in figure_names
                else None,
                "standing": _standing_view(standing(claim, record), run, claim.id, from_dir),
            }
        )
    return views


def _relative_href(target: Path, from_dir: Path) -> str:
    """A link from a page in ``from_dir`` to ``target`` (relative, URL-quoted)."""
    relative = os.path.relpath(Path(target).absolute(), Path(from_dir).absolute())
    return quote(Path(relative).as_posix(), safe="/=,+")


def robustness_href(run: RobustnessRun | None, from_dir: Path) -> str | None:
    """The link from a page in ``from_dir`` to ``run``'s ``robustness.html`` (``None`` when it
    has no page)."""
    return _relative_href(run.page, from_dir) if run and run.page else None


def claim_robustness(
    run: RobustnessRun | None, claim_id: str, from_dir: Path
) -> dict[str, Any] | None:
    """A claim's row of a robustness record as ``scorecard.json`` records it: ``standing``,
    ``holds``, ``n`` (the readings that test it), ``flipped_by`` and ``page`` (relative to
    ``from_dir``); ``None`` when ``run`` does not record the claim."""
    row = run.record.claim(claim_id) if run else None
    if row is None:
        return None
    return {
        "standing": row.standing,
        "holds": row.holds,
        "n": row.tested,
        "flipped_by": list(row.flipped_by),
        "page": robustness_href(run, from_dir),
    }


def count_lines(
    claims: Sequence[tuple[ClaimRecord, Standing]], checks: Sequence[ClaimRecord]
) -> dict[str, Any]:
    """Count lines over claims with their standings: the seed's claims on the seed's data by
    headline standing (``line``), those measured on a stand-in data set apart (``stand_in``:
    their verdicts speak for the mechanism only), the beyond-the-seed claims apart, the checks
    apart; and the headline counts (``scorecard.json``'s ``counts``)."""
    seed = [s for c, s in claims if not c.beyond_seed and not c.stand_in]
    stand_in = [s for c, s in claims if not c.beyond_seed and c.stand_in]
    beyond = [s for c, s in claims if c.beyond_seed]
    return {
        "line": count_line(seed) if seed or not stand_in else "no claims on the seed's data",
        "stand_in": count_line(stand_in) if stand_in else "",
        "beyond": count_line(beyond) if beyond else "",
        "checks": scorecard.check_tally(checks),
        "headline": dict(headline_counts(seed)),
        "overall": scorecard.overall_standing(seed or stand_in),
        "n_seed": len(seed) + len(stand_in),
        "n_beyond": len(beyond),
    }


def counts(summary: SummaryRecord, run: RobustnessRun | None) -> dict[str, Any]:
    """A run's count lines (:func:`count_lines`), its claims weighed with ``run``'s readings."""
    record = run.record if run is not None else None
    return count_lines([(c, standing(c, record)) for c in summary.claims], summary.checks)


def _config_rows(summary: SummaryRecord) -> tuple[list[dict[str, Any]], bool]:
    """Per config field: value, provenance, the seed's value, note; and whether the summary
    carried provenance at all."""
    recorded = summary.config_provenance
    if recorded:
        rows = [{"field": name, **row} for name, row in recorded.items()]
    else:
        rows = [
            {"field": name, "value": value, "provenance": "", "seed_value": None, "note": ""}
            for name, value in summary.config.items()
        ]
    for row in rows:
        row["overridden"] = row["field"] in summary.overrides
    return rows, bool(recorded)


def _registration_view(summary: SummaryRecord, changed_in: str) -> dict[str, Any] | None:
    """The registration section: the hash and status the claims were judged under, and per
    earlier registration the verdicts then beside those now, with the commit of the change."""
    if summary.registration is None:
        return None
    now = summary.verdicts()
    earlier = []
    for previous in summary.previous_registrations:
        changed: dict[str, tuple[str, str]] = {
            k: (v, now.get(k, "gone")) for k, v in previous.verdicts.items()
        }
        changed.update({k: ("new", v) for k, v in now.items() if k not in previous.verdicts})
        earlier.append(
            {
                "hash": previous.hash or "(before registration)",
                "commit": previous.commit,
                "rows": [(k, old, new) for k, (old, new) in changed.items()],
                "moved": sum(old != new for old, new in changed.values()),
            }
        )
    return {"record": summary.registration, "previous": earlier, "changed_in": changed_in}


def write_run_report(
    out_dir: Path,
    summary: SummaryRecord,
    about: str = "",
    docs_root: Path | None = None,
    robustness: RobustnessRun | None = None,
    changed_in: str = "",
) -> Path:
    """Write ``report.html``: the claims with their headline standing first, then the checks,
    the registration, about, figures, config with provenance, metrics, work units and versions.

    Args:
        out_dir: the run directory (holds the figures' PNG files the summary names).
        summary: the run's summary.
        about: the experiment's description (its module docstring).
        docs_root: the checkout holding ``docs/experiments`` (default: this package's).
        robustness: the experiment's robustness run, weighed into each claim's standing and
            linked (default: none; the standings say "robustness not measured").
        changed_in: the commit that gave the registry file the summary's registration (shown
            beside earlier registrations' verdicts; ``""``: unknown).

    Returns:
        The path of the written report.
    """
    out_dir = Path(out_dir)
    embedded = embedded_figures(out_dir, summary.figures)
    names = {f["filename"] for f in embedded}
    claims = _claim_views(summary.claims, summary.seed_document, names, robustness, out_dir)
    checks = _claim_views(summary.checks, summary.seed_document, names, None, out_dir)
    for figure in embedded:
        figure["anchor"] = scorecard.anchor("figure", figure["filename"])
        figure["claims"] = [c for c in claims + checks if c.get("figure") == figure["filename"]]
    config_rows, has_provenance = _config_rows(summary)
    return write_page(
        out_dir / REPORT_FILENAME,
        "run.html",
        summary=summary,
        claims=claims,
        checks=checks,
        counts=counts(summary, robustness),
        registration=_registration_view(summary, changed_in),
        figures=embedded,
        config_rows=config_rows,
        has_provenance=has_provenance,
        about=render_docstring(about),
        index_href=_index_href(out_dir),
        docs=docs_page(out_dir, summary.experiment, docs_root),
        wall_s=summary.wall_s,
        robustness_href=robustness_href(robustness, out_dir),
    )


def _index_href(out_dir: Path) -> str | None:
    """``../index.html`` when the run sits in a reproduce directory that has an index."""
    return f"../{INDEX_FILENAME}" if (out_dir.parent / INDEX_FILENAME).is_file() else None


@dataclass(frozen=True)
class IndexEntry:
    """One experiment of the index: its name, title, the link to its report (relative to the
    index: the run's folder, which need not be the experiment's name), and its summary once
    finished or the error that ended it (neither: not finished yet)."""

    name: str
    title: str
    link: str
    summary: SummaryRecord | None = None
    error: str | None = None


def _entry_view(
    out_dir: Path, entry: IndexEntry, robustness: Mapping[str, RobustnessRun] | None
) -> dict[str, Any]:
    summary = entry.summary
    run_dir = out_dir / Path(*PurePosixPath(entry.link).parent.parts)
    view: dict[str, Any] = {
        "name": entry.name,
        "title": entry.title or entry.name,
        "error": entry.error,
        "link": entry.link if summary and (out_dir / entry.link).is_file() else None,
        "claims": [],
        "checks": [],
        "finished": summary is not None,
        "seed": "",
        "preset": "",
    }
    if summary is None:
        return view
    run = (robustness or {}).get(entry.name)
    figure_names = {
        c.figure for c in summary.all_claims if c.figure and (run_dir / c.figure).is_file()
    }
    claims = _claim_views(summary.claims, summary.seed_document, figure_names, run, out_dir)
    checks = _claim_views(summary.checks, summary.seed_document, figure_names, None, out_dir)
    for claim in claims + checks:
        if view["link"]:
            claim["detail_href"] = f"{view['link']}#{claim['anchor']}"
            if claim["figure_anchor"]:
                claim["figure_href"] = f"{view['link']}#{claim['figure_anchor']}"
    view.update(
        claims=claims,
        checks=checks,
        counts=counts(summary, run),
        robustness_href=robustness_href(run, out_dir),
        seed=scorecard.claim_seed({}, summary.seed_document),
        seed_document=summary.seed_document,
        preset=summary.preset,
        overrides=summary.overrides,
        device=summary.device,
        created=summary.created,
        wall_s=summary.wall_s,
        versions=summary.versions,
        registration=summary.registration,
    )
    return view


def _merged_versions(views: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Each library's version across the runs (``a / b`` where runs differ)."""
    seen: dict[str, list[str]] = {}
    for view in views:
        for package, version in (view.get("versions") or {}).items():
            if package == "device":  # shown in its own row
                continue
            values = seen.setdefault(package, [])
            if str(version) not in values:
                values.append(str(version))
    return [(package, " / ".join(values)) for package, values in seen.items()]


def index_counts(
    entries: Sequence[IndexEntry], robustness: Mapping[str, RobustnessRun] | None
) -> dict[str, Any]:
    """The whole scorecard's count lines (:func:`count_lines` over every finished
    experiment)."""
    claims: list[tuple[ClaimRecord, Standing]] = []
    checks: list[ClaimRecord] = []
    for entry in entries:
        if entry.summary is None:
            continue
        run = (robustness or {}).get(entry.name)
        record = run.record if run is not None else None
        claims += [(c, standing(c, record)) for c in entry.summary.claims]
        checks += entry.summary.checks
    return count_lines(claims, checks)


def write_index(
    out_dir: Path,
    entries: Sequence[IndexEntry],
    preset: str,
    robustness: Mapping[str, RobustnessRun] | None = None,
) -> Path:
    """Write ``index.html``: the scorecard of every experiment, linking each run's report.

    Args:
        out_dir: the reproduce directory.
        entries: one :class:`IndexEntry` per experiment.
        preset: the preset the runs were started from.
        robustness: experiment → its robustness run, weighed into each claim's headline
            standing and linked; ``None``: every standing says "robustness not measured".

    Returns:
        The path of the written index.
    """
    out_dir = Path(out_dir)
    views = [_entry_view(out_dir, entry, robustness) for entry in entries]
    claims = [c for view in views for c in view["claims"]]
    created = sorted(v["created"] for v in views if v.get("created"))
    headlines = Counter(c["standing"]["verdict"] for c in claims)
    return write_page(
        out_dir / INDEX_FILENAME,
        "index.html",
        preset=preset,
        experiments=views,
        n_claims=len(claims),
        counts=index_counts(entries, robustness),
        seeds=sorted({c["seed"] for c in claims if c["seed"]}),
        presets=sorted({v["preset"] for v in views if v["preset"]}),
        standings=[(h, headlines[h]) for h in HEADLINES],
        versions=_merged_versions(views),
        devices=sorted({v["device"] for v in views if v.get("device")}),
        created=(created[0], created[-1]) if created else None,
        wall_s=sum(v["wall_s"] for v in views if v.get("wall_s") is not None),
        generated=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
