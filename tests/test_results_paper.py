"""The committed paper-preset scorecard (`results/paper/`) and the README table that quotes it
agree: the table has one row per run and every row's claim count is the one in the run's
summary (the seed's tested claims, as `scorecard.count_text` counts them), every run is a
paper-preset run listed in scorecard.json, and index.html links every run directory's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from relulab.report.scorecard import seed_claims, verdict

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "paper"
TABLE_HEADER = "| name | paper preset | claims | units' time |"


def _summaries() -> dict[str, dict]:
    return {
        path.parent.name: json.loads(path.read_text())
        for path in sorted(RESULTS.glob("*/summary.json"))
    }


def _readme_rows() -> dict[str, str]:
    """README paper table: run folder (``results/paper/<folder>``, the experiment's name unless
    one experiment has several runs) → its claims cell; a clear failure without it."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    if TABLE_HEADER not in lines:
        pytest.fail(f"README.md has no paper table (header {TABLE_HEADER!r})")
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


def test_the_index_links_every_run_directory():
    index = (RESULTS / "index.html").read_text(encoding="utf-8")
    linked = set(re.findall(r'href="([^"/#]+)/report\.html[#"]', index))
    assert linked == set(_summaries()), "index.html and results/paper's run directories differ"


def test_the_readme_table_has_one_row_per_committed_run():
    assert sorted(_readme_rows()) == sorted(_summaries()), "one row per run, one run per row"
    for folder, summary in _summaries().items():
        assert folder.startswith(summary["experiment"]), folder


@pytest.mark.parametrize("folder", sorted(p.parent.name for p in RESULTS.glob("*/summary.json")))
def test_readme_paper_row_quotes_the_committed_summary(folder):
    summary = json.loads((RESULTS / folder / "summary.json").read_text())
    name = folder
    rows = _readme_rows()
    assert name in rows, f"{folder}: no README paper row for it"
    seed = [verdict(claim) for claim in seed_claims(summary["claims"])]
    count = re.match(r"\**(\d+)/(\d+)", rows[name])
    assert count, f"{name}: the claims cell {rows[name]!r} does not start with held/total"
    held, total = map(int, count.groups())
    tested = len(seed) - seed.count("not tested")
    assert (held, total) == (seed.count("holds"), tested), rows[name]
