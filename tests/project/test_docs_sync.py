"""The README's scorecard and robustness tables and each docs page's robustness section are
generated from the committed records (``results/robustness/quick/*/robustness.json``,
``results/robustness/paper/*/robustness.json`` where the paper preset was affordable, and the
paper runs' ``results/paper/*/summary.json``) and say what those say: a record added, or a
criterion re-registered, without running the sync command fails here."""

import json
from pathlib import Path

import pytest

from relulab.docs_sync import (
    BEGIN,
    END,
    SCORECARD_BEGIN,
    SCORECARD_END,
    SYNC_COMMAND,
    MarkerError,
    expected_scorecard,
    expected_sections,
    load_records,
    main,
    marked_section,
    replace_section,
    sync,
)
from relulab.experiments import REGISTRY
from relulab.report.robustness import (
    robustness_markdown,
    robustness_missing_markdown,
    robustness_readme_rows,
)

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "experiments").glob("*.md"))
FILES = [ROOT / "README.md", *PAGES]
HEADING = "## Robustness to the inferred settings"


def test_every_experiment_has_a_docs_page():
    assert sorted(p.stem for p in PAGES) == sorted(REGISTRY)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_one_marker_pair(path):
    check_one_marker_pair(path)


def check_one_marker_pair(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert text.index(BEGIN) < text.index(END)
    if path.name != "README.md":
        assert text.count(HEADING) == 1
        assert text.index(HEADING) < text.index(BEGIN)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_marked_section_matches_the_committed_records(path):
    check_marked_section(path, ROOT)


def check_marked_section(path: Path, root: Path) -> None:
    expected = expected_sections(root)[path]
    found = marked_section(path.read_text(encoding="utf-8"), str(path))
    assert found == expected, (
        f"{path.relative_to(root)} is out of step with results/robustness/quick: run "
        f"`{SYNC_COMMAND}`"
    )


def test_the_readme_scorecard_matches_the_committed_records():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = marked_section(readme, "README.md", SCORECARD_BEGIN, SCORECARD_END)
    assert found == expected_scorecard(ROOT), (
        f"README.md's scorecard is out of step with results/: run `{SYNC_COMMAND}`"
    )


def test_the_readme_table_is_outside_code_blocks():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    before = text[: text.index(BEGIN)]
    assert before.count("```") % 2 == 0


NOT_YET_REMEASURED: set[str] = set()


def test_records_committed_and_missing_pages():
    records = load_records(ROOT / "results" / "robustness" / "quick")
    paper = load_records(ROOT / "results" / "robustness" / "paper")
    # issue 32: every experiment at quick; issue 42 removed the records made before
    # registrations (they speak for no claim), and these are not yet re-measured under today's
    # registration — docs/robustness.md's status names them and what they cost
    assert set(records) | NOT_YET_REMEASURED == set(REGISTRY)
    assert not set(records) & NOT_YET_REMEASURED
    status = (ROOT / "docs" / "robustness.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in status for name in NOT_YET_REMEASURED)
    assert {"anisotropy", "early-linearization"} <= set(paper) <= set(records)
    sections = expected_sections(ROOT)
    for page in PAGES:
        if page.stem in records:
            expected = robustness_markdown(records[page.stem].to_dict())
            if page.stem in paper:
                expected += "\n\n" + robustness_markdown(paper[page.stem].to_dict())
            assert sections[page] == expected
            assert f"results/robustness/quick/{page.stem}/robustness.html" in sections[page]
        else:
            assert sections[page] == (
                f"Not yet committed: run `relulab robustness {page.stem} --preset quick`."
            )


# ---------------------------------------------------------------------------------------------
# The generator on a hand-made record.
# ---------------------------------------------------------------------------------------------
READINGS = ["preset", "tol=0.05", "tol=0.2", "levels=0.0+1.0"]


def _claim(claim_id, verdicts, flipped_by=(), standing=None):
    by_reading = dict(zip(READINGS, verdicts, strict=True))
    tested = [v for v in verdicts if v != "not tested"]
    return {
        "id": claim_id,
        "statement": "",
        "beyond_seed": False,
        "preset": verdicts[0],
        "verdicts": by_reading,
        "holds": tested.count("holds"),
        "tested": len(tested),
        "standing": standing,
        "flipped_by": list(flipped_by),
    }


RECORD = {
    "experiment": "toy",
    "preset": "quick",
    "readings": [
        {"name": "preset", "fields": [], "settings": {}, "finished": True, "judged_on": None},
        {"name": "tol=0.05", "fields": ["tol"], "finished": True, "judged_on": "preset"},
        {"name": "tol=0.2", "fields": ["tol"], "finished": True, "judged_on": "preset"},
        {"name": "levels=0.0+1.0", "fields": ["levels"], "finished": True, "judged_on": None},
    ],
    "claims": [
        _claim("steady", ["holds"] * 4, standing="robust holds"),
        _claim(
            "fragile",
            ["holds", "fails", "holds", "inconclusive"],
            ["levels", "tol"],
            "depends",
        ),
        _claim(
            "partly",
            ["holds", "holds", "not tested", "holds"],
            standing="robust holds",
        ),
        _claim("broken", ["fails"] * 4, standing="robust fails"),
    ],
    "fields": {
        "tol": {"value": 0.1, "provenance": "inferred", "alternatives": [0.05, 0.2]},
        "levels": {"value": [-1.0, 1.0], "provenance": "inferred", "alternatives": [[0.0, 1.0]]},
    },
}


def test_markdown_of_a_hand_made_record():
    lines = robustness_markdown(RECORD).splitlines()
    assert lines[0] == (
        "At the quick preset, 4 readings (the preset and each declared alternative of an "
        "inferred setting, one at a time; 2 judged on the preset's stored units), 4 claims: "
        "2 robust holds, 1 robust fails, 0 robust inconclusive, 1 depends on a reading."
    )
    assert "../../results/robustness/quick/toy/robustness.html" in lines[1]
    assert (
        "| `fragile` | holds | 2 of 4 | depends | `tol=0.05` → fails; "
        "`levels=0.0+1.0` → inconclusive |"
    ) in lines
    assert "| `broken` | fails | 0 of 4 | robust fails | — |" in lines
    assert not any(line.startswith(("| `steady`", "| `partly`")) for line in lines)
    assert "Robust holds (in every reading that tests them): `steady`, `partly`." in lines
    assert "| `tol` | `0.1` | `0.05`; `0.2` | `fragile` |" in lines
    assert "| `levels` | `-1.0,1.0` | `0.0,1.0` | `fragile` |" in lines
    assert robustness_markdown(RECORD) == robustness_markdown(json.loads(json.dumps(RECORD)))


def test_markdown_counts_checks_apart_from_claims():
    """A check (an identity of the setup) is never counted as a claim, nor listed among the
    robust holds: the count line and the lists read the claims alone (issue 42)."""
    check = {**_claim("identity", ["holds"] * 4, standing="robust holds"), "kind": "check"}
    record = {**RECORD, "claims": [*RECORD["claims"], check]}
    lines = robustness_markdown(record).splitlines()
    assert ", 4 claims: 2 robust holds, 1 robust fails" in lines[0]
    assert "Robust holds (in every reading that tests them): `steady`, `partly`." in lines
    assert "Checks, not counted as claims: `identity` robust holds." in lines


def test_markdown_not_tested_readings_and_pairs():
    record = json.loads(json.dumps(RECORD))
    record["claims"].append(
        _claim("skipped", ["holds", "not tested", "fails", "holds"], ["tol"], "depends")
    )
    record["readings"].append(
        {"name": "levels=0.0+1.0,tol=0.2", "fields": ["levels", "tol"], "judged_on": None}
    )
    for claim in record["claims"]:
        claim["verdicts"]["levels=0.0+1.0,tol=0.2"] = "not tested"
    text = robustness_markdown(record)
    assert "5 readings (the preset and each declared alternative of an inferred setting" in text
    assert "one at a time, and 1 pair of alternatives;" in text
    assert "| `skipped` | holds | 2 of 3 (2 not tested) | depends | `tol=0.2` → fails |" in text
    assert "| `tol` | `0.1` | `0.05`; `0.2` | `fragile`, `skipped` |" in text


def test_readme_rows_of_a_hand_made_record():
    other = {**RECORD, "experiment": "alpha", "claims": RECORD["claims"][:1]}
    table = robustness_readme_rows([RECORD, other], missing=["zeta", "beta"]).splitlines()
    assert table[0].startswith("| experiment | readings | robust holds | robust fails |")
    assert table[2].startswith("| `alpha` | 4 (2 run, 2 judged) | 1 | 0 | 0 | 0 |")
    assert table[3] == (
        "| `toy` | 4 (2 run, 2 judged) | 2 | 1 | 0 | 1: `levels` (1 claim), `tol` (1 claim) "
        "| [robustness.html](results/robustness/quick/toy/robustness.html) |"
    )
    assert table[-1] == "Not yet committed: `beta`, `zeta`."


def test_missing_record_text():
    assert robustness_missing_markdown("prepost-ln") == (
        "Not yet committed: run `relulab robustness prepost-ln --preset quick`."
    )


# ---------------------------------------------------------------------------------------------
# The sync command.
# ---------------------------------------------------------------------------------------------
def _tree(tmp_path, page_text):
    (tmp_path / "docs" / "experiments").mkdir(parents=True)
    (tmp_path / "results" / "robustness" / "quick" / "toy").mkdir(parents=True)
    (tmp_path / "results" / "robustness" / "quick" / "toy" / "robustness.json").write_text(
        json.dumps(RECORD), encoding="utf-8"
    )
    (tmp_path / "README.md").write_text(
        f"# r\n\n{BEGIN}\n{END}\n\n{SCORECARD_BEGIN}\n{SCORECARD_END}\n\ntail\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "experiments" / "toy.md").write_text(page_text, encoding="utf-8")
    (tmp_path / "docs" / "experiments" / "other.md").write_text(
        f"# other\n{BEGIN}\nstale\n{END}\n", encoding="utf-8"
    )
    return tmp_path


def test_sync_rewrites_only_the_marked_sections(tmp_path, capsys):
    root = _tree(tmp_path, f"# toy\n\nbefore\n{BEGIN}\nold text\n{END}\nafter\n")
    assert main(["--root", str(root), "--check"]) == 1
    assert (
        "old text" in (root / "docs" / "experiments" / "toy.md").read_text()
    )  # check writes nothing
    assert main(["--root", str(root)]) == 0
    page = (root / "docs" / "experiments" / "toy.md").read_text()
    assert page.startswith(f"# toy\n\nbefore\n{BEGIN}\n\nAt the quick preset, 4 readings")
    assert page.endswith(f"`fragile` |\n\n{END}\nafter\n")
    other = (root / "docs" / "experiments" / "other.md").read_text()
    assert other == (
        f"# other\n{BEGIN}\n\nNot yet committed: run `relulab robustness other --preset quick`."
        f"\n\n{END}\n"
    )
    readme = (root / "README.md").read_text()
    assert f"Not yet committed: `other`.\n\n{END}\n\n{SCORECARD_BEGIN}\n\n| experiment" in readme
    assert readme.endswith(f"`python -m relulab.docs_sync`.\n\n{SCORECARD_END}\n\ntail\n")
    assert sync(root) == [] and main(["--root", str(root), "--check"]) == 0  # idempotent
    capsys.readouterr()


def test_sync_adds_the_paper_record_after_the_quick_one(tmp_path, capsys):
    root = _tree(tmp_path, f"# toy\n{BEGIN}\n{END}\n")
    paper = dict(RECORD, preset="paper")
    (root / "results" / "robustness" / "paper" / "toy").mkdir(parents=True)
    (root / "results" / "robustness" / "paper" / "toy" / "robustness.json").write_text(
        json.dumps(paper), encoding="utf-8"
    )
    assert main(["--root", str(root)]) == 0
    page = marked_section((root / "docs" / "experiments" / "toy.md").read_text())
    assert page == robustness_markdown(RECORD) + "\n\n" + robustness_markdown(paper)
    # the records are read back through RobustnessRecord: its JSON keeps what the pages show
    assert "results/robustness/paper/toy/robustness.html" in page
    other = marked_section((root / "docs" / "experiments" / "other.md").read_text())
    assert "paper" not in other  # no paper record: the quick section only
    readme = marked_section((root / "README.md").read_text())
    quick_rows, paper_rows = readme.split("At the paper preset")
    assert "results/robustness/quick/toy/robustness.html" in quick_rows
    assert "results/robustness/paper/toy/robustness.html" in paper_rows
    assert paper_rows.endswith("Not run at the paper preset: `other`.")
    capsys.readouterr()


def test_a_paper_record_without_a_page_is_refused(tmp_path):
    root = _tree(tmp_path, f"# toy\n{BEGIN}\n{END}\n")
    orphan = root / "results" / "robustness" / "paper" / "ghost"
    orphan.mkdir(parents=True)
    (orphan / "robustness.json").write_text(
        json.dumps(dict(RECORD, experiment="ghost", preset="paper")), encoding="utf-8"
    )
    with pytest.raises(ValueError, match="ghost"):
        expected_sections(root)


@pytest.mark.parametrize(
    "page",
    ["# toy\nno markers\n", f"{BEGIN}\n{END}\n{BEGIN}\n{END}\n", f"{END}\n{BEGIN}\n"],
    ids=["missing", "duplicated", "reversed"],
)
def test_sync_refuses_bad_markers_and_writes_nothing(tmp_path, page, capsys):
    root = _tree(tmp_path, page)
    before = {p: p.read_text() for p in root.rglob("*.md")}
    with pytest.raises(MarkerError, match="toy.md"):
        sync(root)
    assert main(["--root", str(root)]) == 2
    assert "toy.md" in capsys.readouterr().err
    assert {p: p.read_text() for p in root.rglob("*.md")} == before


def test_replace_section_keeps_the_outside():
    text = f"a\n{BEGIN}\nold\n{END}\nb"
    assert replace_section(text, "new") == f"a\n{BEGIN}\n\nnew\n\n{END}\nb"
    assert marked_section(replace_section(text, "new")) == "new"
    with pytest.raises(MarkerError):
        replace_section("no markers", "new")


def test_quick_cell_tells_changed_registrations_from_claims_the_record_lacks():
    """A claim the record holds under another registration and a registered claim the record
    does not hold at all (added since, or judged only on other data: linearization-images'
    CIFAR claims at the MNIST quick preset) are both left out of the count, each named for what
    it is."""
    from relulab.records.robustness import ClaimRobustness, RobustnessRecord
    from relulab.report.readme import ScorecardRow, quick_cell

    def row(claim_id, registration):
        verdicts = {"preset": "holds"}
        return ClaimRobustness(
            claim_id,
            preset="holds",
            verdicts=verdicts,
            holds=1,
            tested=1,
            standing="robust holds",
            registration=registration,
        )

    record = RobustnessRecord("t", "quick", (), (row("kept", "h1"), row("moved", "old")))
    registered = {"kept": "h1", "moved": "new", "other-data": "h3"}
    text, checks = quick_cell(ScorecardRow("t", record, registered))
    assert text == (
        "1 holds · 1 registered anew since the record (not counted) · 1 not in the record "
        "(not counted)"
    )
    assert checks == "—"


def test_paper_cell_leaves_out_claims_registered_anew_since_the_run():
    """A paper run judged under an earlier registration (issue 45 changed criteria the committed
    runs predate) counts only the claims whose own registration is still today's; the others are
    named, never counted under criteria that no longer stand."""
    from relulab.records.claims import ClaimRecord
    from relulab.records.registration import Registration
    from relulab.records.summary import RegistrationRecord, SummaryRecord
    from relulab.report.readme import ScorecardRow, paper_cell

    def claim(claim_id, registration):
        return ClaimRecord(claim_id, "", "", 1.0, True, verdict="holds", registration=registration)

    def run(whole):
        return SummaryRecord(
            "t", "", "", "paper", {}, {}, {}, (claim("kept", "h1"), claim("moved", "old")),
            {}, {}, {}, "", "cpu", registration=RegistrationRecord(whole, "registered"),
        )  # fmt: skip

    today = Registration(
        "t", "paper", {}, {}, ({"id": "kept", "hash": "h1"}, {"id": "moved", "hash": "new"}), "now"
    )
    earlier = ScorecardRow("t", None, {}, {"t": run("then")}, paper_registered={"paper": today})
    assert paper_cell(earlier)[0] == (
        "1 holds · robustness not measured · 1 registered anew since the run (not counted)"
    )
    current = ScorecardRow("t", None, {}, {"t": run("now")}, paper_registered={"paper": today})
    assert paper_cell(current)[0] == "2 hold · robustness not measured"
