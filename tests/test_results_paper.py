"""The committed paper-preset scorecard (`results/paper/`) and the README table that quotes it
agree: every row's claim count is the one in the run's summary, every run is a paper-preset run,
and the index lists every run directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "paper"
TABLE_HEADER = "| name | paper preset | claims | units' time |"


def _summaries() -> dict[str, dict]:
    return {
        path.parent.name: json.loads(path.read_text())
        for path in sorted(RESULTS.glob("*/summary.json"))
    }


def _readme_rows() -> dict[str, str]:
    """README paper table: experiment name → its claims cell."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(TABLE_HEADER) + 2
    rows = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[2]
    return rows


def test_every_committed_run_is_a_paper_run_listed_in_the_scorecard():
    summaries = _summaries()
    assert summaries, "results/paper holds no run"
    scorecard = json.loads((RESULTS / "scorecard.json").read_text())
    assert scorecard["preset"] == "paper"
    listed = sorted(e["experiment"] for e in scorecard["experiments"])
    assert listed == sorted(s["experiment"] for s in summaries.values())
    for folder, summary in summaries.items():
        assert summary["preset"] == "paper", folder
        assert {"torch", "relulab"} <= set(summary["versions"]), folder
        assert (RESULTS / folder / "report.html").is_file(), folder


@pytest.mark.parametrize("name", sorted(_readme_rows()))
def test_readme_paper_row_quotes_the_committed_summary(name):
    cell = _readme_rows()[name]
    runs = [s for s in _summaries().values() if s["experiment"] == name]
    assert len(runs) == 1, f"{name}: {len(runs)} runs in results/paper"
    verdicts = [claim["verdict"] for claim in runs[0]["claims"]]
    held, total = map(int, re.match(r"\**(\d+)/(\d+)", cell).groups())
    assert (held, total) == (verdicts.count("holds"), len(verdicts)), cell
