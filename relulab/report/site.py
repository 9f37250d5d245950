"""The reproduction as a site: one ``report.html`` per run and the ``index.html`` scorecard.

Both are single self-contained files (figures inlined, CSS and the little JavaScript inline, no
network access) that work from ``file://``. A report links back to ``../index.html`` when its
run directory sits in a reproduce directory that has one, and to the experiment's docs page
``docs/experiments/NAME.md`` when the run directory sits inside the relulab checkout that holds
that page (a relative link stays valid as long as the checkout moves as a whole); elsewhere the
page names the docs path in words. The experiment module's docstring is embedded as the
report's "About" section, so the description always matches the code that produced the numbers.

Given the finished ``relulab robustness`` runs of its experiments (``--robustness DIR``), a page
gains a robustness column: each claim's standing over the readings of the settings the seed
left unsaid and "k/n", linking the claim's row on the experiment's ``robustness.html``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from relulab.report import scorecard
from relulab.report.render import embedded_figures, render_docstring, write_page

if TYPE_CHECKING:
    from relulab.runner.robustness import RobustnessRun

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


def _claim_views(
    claims: Sequence[Mapping[str, Any]], seed_document: str, figure_names: set[str]
) -> list[dict[str, Any]]:
    views = []
    for claim in claims:
        figure = claim.get("figure") or ""
        views.append(
            {
                **claim,
                "verdict": scorecard.verdict(claim),
                "seed": scorecard.claim_seed(claim, seed_document),
                "anchor": scorecard.anchor("claim", claim.get("id", "")),
                "figure_anchor": scorecard.anchor("figure", figure)
                if figure in figure_names
                else None,
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
    """A claim's robustness as ``scorecard.json`` records it: ``standing``, ``holds``, ``n``
    (the readings that test it), ``flipped_by`` and ``page`` (relative to ``from_dir``);
    ``None`` when ``run`` does not record the claim."""
    row = run.claims.get(claim_id) if run else None
    if row is None:
        return None
    return {
        "standing": row["standing"],
        "holds": row["holds"],
        "n": row["tested"],
        "flipped_by": list(row.get("flipped_by") or []),
        "page": robustness_href(run, from_dir),
    }


def _robustness_cell(
    run: RobustnessRun | None, claim_id: str, from_dir: Path
) -> dict[str, Any] | None:
    """The robustness column's cell: text, verdict colour, title and link to the claim's row."""
    fields = claim_robustness(run, claim_id, from_dir)
    if fields is None:
        return None
    page, text = fields["page"], scorecard.robustness_text(run.claims[claim_id])
    return {
        **fields,
        "text": text,
        "verdict": scorecard.STANDING_VERDICT[fields["standing"]],
        "title": f"{text}: holds in {fields['holds']} of the {fields['n']} readings that test it",
        "href": f"{page}#{scorecard.anchor('claim', claim_id)}" if page else None,
    }


def _with_robustness(
    claims: Sequence[dict[str, Any]], run: RobustnessRun | None, from_dir: Path
) -> None:
    for claim in claims:
        claim["robustness_cell"] = _robustness_cell(run, claim.get("id", ""), from_dir)


def _config_rows(summary: Mapping[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """Per config field: value, provenance, the seed's value, note; and whether the summary
    carried provenance at all."""
    recorded = summary.get("config_provenance")
    overrides = summary.get("overrides") or {}
    if recorded:
        rows = [{"field": name, **row} for name, row in recorded.items()]
    else:
        rows = [
            {"field": name, "value": value, "provenance": "", "seed_value": None, "note": ""}
            for name, value in (summary.get("config") or {}).items()
        ]
    for row in rows:
        row["overridden"] = row["field"] in overrides
    return rows, bool(recorded)


def _wall_s(summary: Mapping[str, Any]) -> float | None:
    units = summary.get("units") or {}
    times = [u.get("wall_s") for u in units.values() if isinstance(u, Mapping)]
    return float(sum(t for t in times if t is not None)) if times else None


def write_run_report(
    out_dir: Path,
    summary: dict[str, Any],
    figures: Sequence[Any],
    about: str = "",
    docs_root: Path | None = None,
    robustness: RobustnessRun | None = None,
) -> Path:
    """Write ``report.html``: claims first, then about, figures, config with provenance,
    metrics, work units and versions.

    Args:
        out_dir: the run directory (holds the figures' PNG files).
        summary: the run's ``summary.json`` content.
        figures: objects with ``filename`` and ``caption``, in display order.
        about: the experiment's description (its module docstring).
        docs_root: the checkout holding ``docs/experiments`` (default: this package's).
        robustness: the experiment's robustness run, for the robustness column (default:
            none, no column).

    Returns:
        The path of the written report.
    """
    out_dir = Path(out_dir)
    embedded = embedded_figures(out_dir, figures)
    claims = _claim_views(
        summary.get("claims", []),
        summary.get("seed_document", ""),
        {f["filename"] for f in embedded},
    )
    for figure in embedded:
        figure["anchor"] = scorecard.anchor("figure", figure["filename"])
        figure["claims"] = [c for c in claims if c.get("figure") == figure["filename"]]
    if robustness is not None:
        _with_robustness(claims, robustness, out_dir)
    config_rows, has_provenance = _config_rows(summary)
    return write_page(
        out_dir / REPORT_FILENAME,
        "run.html",
        summary=summary,
        claims=claims,
        counts=scorecard.verdict_counts(claims),
        figures=embedded,
        config_rows=config_rows,
        has_provenance=has_provenance,
        about=render_docstring(about),
        index_href=_index_href(out_dir),
        docs=docs_page(out_dir, str(summary.get("experiment", "")), docs_root),
        wall_s=_wall_s(summary),
        robustness=robustness is not None,
        robustness_href=robustness_href(robustness, out_dir),
    )


def _index_href(out_dir: Path) -> str | None:
    """``../index.html`` when the run sits in a reproduce directory that has an index."""
    return f"../{INDEX_FILENAME}" if (out_dir.parent / INDEX_FILENAME).is_file() else None


def _entry_view(
    out_dir: Path, entry: Mapping[str, Any], robustness: Mapping[str, RobustnessRun] | None
) -> dict[str, Any]:
    summary = entry.get("summary")
    link = entry.get("link") or f"{entry['name']}/{REPORT_FILENAME}"
    run_dir = out_dir / Path(*PurePosixPath(link).parent.parts)
    view = {
        "name": entry["name"],
        "title": entry.get("title") or entry["name"],
        "error": entry.get("error"),
        "link": link if summary and (out_dir / link).is_file() else None,
        "claims": [],
        "finished": bool(summary),
        "seed": "",
        "preset": "",
    }
    if not summary:
        return view
    figure_names = {
        c["figure"]
        for c in summary.get("claims", [])
        if c.get("figure") and (run_dir / c["figure"]).is_file()
    }
    claims = _claim_views(summary.get("claims", []), summary.get("seed_document", ""), figure_names)
    for claim in claims:
        if view["link"]:
            claim["detail_href"] = f"{view['link']}#{claim['anchor']}"
            if claim["figure_anchor"]:
                claim["figure_href"] = f"{view['link']}#{claim['figure_anchor']}"
    if robustness is not None:
        run = robustness.get(entry["name"])
        _with_robustness(claims, run, out_dir)
        view["robustness_href"] = robustness_href(run, out_dir)
    view.update(
        claims=claims,
        counts=scorecard.verdict_counts(claims),
        seed=scorecard.claim_seed({}, summary.get("seed_document", "")),
        seed_document=summary.get("seed_document", ""),
        preset=summary.get("preset", ""),
        overrides=summary.get("overrides") or {},
        device=summary.get("device", ""),
        created=summary.get("created", ""),
        wall_s=_wall_s(summary),
        versions=summary.get("versions") or {},
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


def write_index(
    out_dir: Path,
    entries: Sequence[dict[str, Any]],
    preset: str,
    robustness: Mapping[str, RobustnessRun] | None = None,
) -> Path:
    """Write ``index.html``: the scorecard of every experiment, linking each run's report.

    Args:
        out_dir: the reproduce directory.
        entries: per experiment ``name``, ``title``, ``link`` (the report, relative to
            ``out_dir``: the run's folder, which need not be the experiment's name), and a
            ``summary`` or an ``error`` string; neither means the run has not finished yet.
        preset: the preset the runs were started from.
        robustness: experiment → its robustness run: the claims tables gain a robustness
            column (``—`` for a claim no run records); ``None``: no column.

    Returns:
        The path of the written index.
    """
    out_dir = Path(out_dir)
    views = [_entry_view(out_dir, entry, robustness) for entry in entries]
    claims = [c for view in views for c in view["claims"]]
    counts = scorecard.verdict_counts(scorecard.seed_claims(claims))
    beyond = scorecard.beyond_seed(claims)
    created = sorted(v["created"] for v in views if v.get("created"))
    return write_page(
        out_dir / INDEX_FILENAME,
        "index.html",
        preset=preset,
        experiments=views,
        n_claims=len(claims),
        n_seed_claims=len(claims) - len(beyond),
        n_beyond=len(beyond),
        beyond_text=scorecard.tally(beyond),
        counts=counts,
        seeds=sorted({c["seed"] for c in claims if c["seed"]}),
        presets=sorted({v["preset"] for v in views if v["preset"]}),
        verdicts=[(v, scorecard.verdict_counts(claims)[v]) for v in scorecard.VERDICTS],
        versions=_merged_versions(views),
        devices=sorted({v["device"] for v in views if v.get("device")}),
        created=(created[0], created[-1]) if created else None,
        wall_s=sum(v["wall_s"] for v in views if v.get("wall_s") is not None),
        generated=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        robustness=robustness is not None,
    )
