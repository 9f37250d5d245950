"""The committed paper-preset scorecard (`results/paper/`) and the README table that describes
it agree: the table has one row per run and every row names the commit and the machine the run's
summary records (its claim counts are in the generated scorecard above it, which
tests/project/test_docs_sync.py keeps in step), every run is a paper-preset run listed in
scorecard.json, and index.html links every run directory's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "paper"
TABLE_HEADER = "| name | paper preset | made | units' time |"


def _summaries() -> dict[str, dict]:
    return {
        path.parent.name: json.loads(path.read_text())
        for path in sorted(RESULTS.glob("*/summary.json"))
    }


def _readme_rows() -> dict[str, str]:
    """README paper table: run folder (``results/paper/<folder>``, the experiment's name unless
    one experiment has several runs) → its "made" cell; a clear failure without it."""
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
        assert summary["preset"] == "paper" or summary["preset"].startswith("paper-"), folder
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
    """The row says which commit made the run and on what: the summary's clean commit (a run
    from a dirty tree is not committed here) and its device."""
    summary = json.loads((RESULTS / folder / "summary.json").read_text())
    rows = _readme_rows()
    assert folder in rows, f"{folder}: no README paper row for it"
    commit = summary["versions"]["relulab_commit"]
    assert not commit.endswith("+dirty"), folder
    assert commit[:7] in rows[folder], rows[folder]
    machine = "GPU" if summary["device"].startswith("cuda") else "CPU"
    assert machine in rows[folder], rows[folder]
