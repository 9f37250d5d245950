"""A sweep's page, ``sweep.html``: each claim's verdict as a function of the swept settings.

One row per point of the grid (its settings, a link to its ``report.html``), one column per
claim: the verdict with the measured value, linking the claim in the point's report. Below it the
metrics of every point side by side. Rendered with the site's templates and filters
(:mod:`relulab.report.render`), so it is self-contained and HTML-escaped like every page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from relulab.records.standing import count_line, standing
from relulab.records.sweep import SweepPointRecord, SweepRecord
from relulab.report import scorecard
from relulab.report.render import write_page
from relulab.report.site import REPORT_FILENAME

__all__ = ["write_sweep_page"]


def _ordered_union(lists: list[list[str]]) -> list[str]:
    seen: dict[str, None] = {}
    for names in lists:
        seen.update(dict.fromkeys(names))
    return list(seen)


def _point_view(out_dir: Path, point: SweepPointRecord, claim_ids: list[str]) -> dict[str, Any]:
    report = f"{quote(point.name, safe='=,+')}/{REPORT_FILENAME}"
    has_report = point.finished and (out_dir / point.name / REPORT_FILENAME).is_file()
    by_id = {claim.id: claim for claim in point.claims}
    cells: list[dict[str, Any] | None] = []
    for claim_id in claim_ids:
        claim = by_id.get(claim_id)
        if claim is None:
            cells.append(None)
            continue
        row = claim.to_json()
        cells.append(
            {
                "verdict": claim.verdict,
                "measured": scorecard.format_measured(row),
                "interval": scorecard.format_interval(row),
                "href": f"{report}#{scorecard.anchor('claim', claim_id)}" if has_report else None,
            }
        )
    standings = [standing(c) for c in point.claims if not c.beyond_seed]
    return {
        "name": point.name,
        "settings": point.settings,
        "href": report if has_report else None,
        "error": point.error,
        "finished": point.finished,
        "cells": cells,
        "metrics": point.metrics,
        "counts": count_line(standings),
        "overall": scorecard.overall_standing(standings),
    }


def write_sweep_page(path: Path, record: SweepRecord) -> Path:
    """Write ``sweep.html`` from a sweep's record.

    Args:
        path: where to write the page (``DIR/sweep.html``); point directories are relative to
            its folder.
        record: the :class:`~relulab.records.SweepRecord`: the grid (key → value texts), the
            fixed ``--set`` texts and the points with their settings, claims, metrics, error.

    Returns:
        The path of the written page.
    """
    path = Path(path)
    points = record.points
    claim_ids = _ordered_union([[c.id for c in p.claims] for p in points])
    statements = {claim.id: claim.statement for p in points for claim in p.claims}
    beyond = {claim.id for p in points for claim in p.claims if claim.beyond_seed}
    views = [_point_view(path.parent, point, claim_ids) for point in points]
    claims = []
    for position, claim_id in enumerate(claim_ids):
        verdicts = [v["cells"][position]["verdict"] for v in views if v["cells"][position]]
        claims.append(
            {
                "id": claim_id,
                "statement": statements.get(claim_id, ""),
                "holds": verdicts.count("holds"),
                "measured_at": len(verdicts) - verdicts.count("not tested"),
                "not_tested": verdicts.count("not tested"),
                "beyond_seed": claim_id in beyond,
            }
        )
    return write_page(
        path,
        "sweep.html",
        experiment=record.experiment,
        preset=record.preset,
        keys=list(record.grid),
        grid=record.grid,
        fixed=list(record.fixed),
        points=views,
        claims=claims,
        metric_names=_ordered_union([list(v["metrics"]) for v in views]),
        finished=sum(v["finished"] for v in views),
    )
