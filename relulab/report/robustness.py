"""A robustness run's page, ``robustness.html``: each claim's verdict under every plausible
reading of the settings the seed left unsaid.

One row per claim: its verdict at the preset, "holds in k of n readings", its standing (robust
holds / robust fails / depends) and the fields that flip it, then its verdict in every reading,
linking the claim in that reading's report. Below: the readings (which inferred field takes
which alternative, with the field's note). Rendered with the site's templates and filters
(:mod:`relulab.report.render`): self-contained and HTML-escaped like every page.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from relulab.report import scorecard
from relulab.report.render import write_page
from relulab.report.site import REPORT_FILENAME

__all__ = ["STANDING_VERDICT", "write_robustness_page"]

STANDING_VERDICT = scorecard.STANDING_VERDICT  # the verdict whose colour a standing is shown in


def _cell(
    out_dir: Path, reading: Mapping[str, Any], claim_id: str, verdict: str | None
) -> dict[str, Any] | None:
    if verdict is None:
        return None
    directory = reading.get("judged_on") or reading["name"]  # judged on the preset's units
    report = f"{quote(directory, safe='=,+')}/{REPORT_FILENAME}"
    linked = (out_dir / directory / REPORT_FILENAME).is_file()
    return {
        "verdict": verdict,
        "href": f"{report}#{scorecard.anchor('claim', claim_id)}" if linked else None,
    }


def write_robustness_page(path: Path, record: Mapping[str, Any]) -> Path:
    """Write ``robustness.html`` from a robustness record (the content of ``robustness.json``,
    :func:`relulab.runner.robustness.robustness_record`).

    Args:
        path: where to write the page (``DIR/robustness.html``); reading directories are
            relative to its folder.
        record: ``experiment``, ``preset``, ``readings``, ``claims``, ``summary`` and
            ``fields`` (field → its provenance row).

    Returns:
        The path of the written page.
    """
    path = Path(path)
    readings = list(record.get("readings") or [])
    rows = []
    for claim in record.get("claims") or []:
        rows.append(
            {
                **claim,
                "standing_class": STANDING_VERDICT.get(claim["standing"], "not tested"),
                "cells": [
                    _cell(path.parent, r, claim["id"], claim["verdicts"].get(r["name"]))
                    for r in readings
                ],
            }
        )
    return write_page(
        path,
        "robustness.html",
        experiment=record.get("experiment", ""),
        preset=record.get("preset", ""),
        readings=readings,
        claims=rows,
        summary=record.get("summary") or {},
        fields=record.get("fields") or {},
    )
