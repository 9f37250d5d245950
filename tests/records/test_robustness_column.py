"""A claim's headline standing on the index, the scorecard, the reports and the terminal
(issue 42): ``holds`` only when the claim holds in every reading that tests it — this run, the
claim without each post-hoc choice, and the readings of a robustness record that speaks for it
(same registration) — ``depends`` when a reading flips it, with the count lines counting
standings (``1 holds · 1 depends · robustness not measured for 1``). ``--robustness DIR`` gives
the record; by default the checkout's committed records; ``none`` turns them off; bad input
exits 2 in one line and writes nothing.

On a toy experiment with three claims and a fabricated robustness record, so no training."""

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from relulab import cli
from relulab.experiments import REGISTRY
from relulab.experiments.base import Analysis, Experiment, Unit
from relulab.experiments.claims import ClaimSpec, PostHoc, Reading, evaluate
from relulab.experiments.criteria import Below
from relulab.records import ClaimRecord
from relulab.records.robustness import find_robustness_runs
from relulab.records.standing import count_line, standing
from relulab.records.sweep import SweepPointRecord, SweepRecord
from relulab.registry import registration
from relulab.report.robustness import write_robustness_page
from relulab.runner.robustness import (
    BASELINE,
    ROBUSTNESS_FILENAME,
    ROBUSTNESS_PAGE,
    robustness_record,
)
from relulab.store import UnitResult

RESULTS = Path(__file__).resolve().parents[2] / "results" / "robustness" / "quick"
CLAIMS = ("c-holds", "c-depends", "c-absent")  # c-absent: not in the robustness record


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    seed: int = 0


def _unit(config: ToyConfig, name: str) -> Unit:
    def run(context) -> UnitResult:
        values = torch.randn(2, generator=context.generator(name), dtype=torch.float64).numpy()
        return UnitResult(
            [{"i": i} for i in range(2)],
            np.arange(2),
            {"value": np.stack([values, values])},
            {"value": values},
            np.zeros(2, bool),
            np.full(2, -1),
        )

    return Unit(name, run)


def _spec(name: str, **extra) -> ClaimSpec:
    return ClaimSpec(
        name,
        f"{name} says so.",
        source="§1",
        criterion=Below("x", 1.0),
        measure=lambda results, config: Reading(0.5),
        counterexample="x above 1",
        **extra,
    )


SPECS = tuple(_spec(name) for name in CLAIMS)

TOY = Experiment(
    name="toyclaims",
    title="toy with claims",
    seed="001",
    summary="three claims, no training",
    config=ToyConfig,
    presets={"quick": ToyConfig()},
    plan=lambda config: [_unit(config, "only")],
    analyse=lambda results, config: Analysis(evaluate(SPECS, results, config), {"m": 1.0}),
    figures=lambda results, config, out_dir: [],
    estimate_bytes=lambda config: 1000,
    claims=SPECS,
)


@pytest.fixture(autouse=True)
def _toy(monkeypatch):
    monkeypatch.setitem(REGISTRY, "toyclaims", TOY)
    monkeypatch.setattr("time.strftime", lambda *args: "FIXED")  # the index's "written at"


def _point(name, settings, verdicts, hashes):
    claims = tuple(
        ClaimRecord(k, f"{k} says so.", "", 0.5, v == "holds", verdict=v, registration=hashes[k])
        for k, v in verdicts.items()
    )
    return SweepPointRecord(name, settings, claims, finished=True)


def _record(experiment="toyclaims", preset="quick", stale=()):
    """c-holds holds in both readings; c-depends fails when tol=2; the claims in ``stale``
    were recorded under another registration."""
    registered = registration(TOY, "quick")
    hashes = {c: "0" * 16 if c in stale else registered.claim_hash(c) for c in CLAIMS}
    sweep = SweepRecord(
        experiment,
        preset,
        points=(
            _point(BASELINE, {"tol": 1}, {"c-holds": "holds", "c-depends": "holds"}, hashes),
            _point("tol=2", {"tol": 2}, {"c-holds": "holds", "c-depends": "fails"}, hashes),
        ),
    )
    return robustness_record(sweep)


def _write_record(directory: Path, record, page: bool = True) -> Path:
    directory.mkdir(parents=True)
    text = record if isinstance(record, str) else record.to_json()
    (directory / ROBUSTNESS_FILENAME).write_text(text)
    if page and not isinstance(record, str):
        write_robustness_page(directory / ROBUSTNESS_PAGE, record)
    return directory


@pytest.fixture
def robustness_dir(tmp_path) -> Path:
    """The committed layout: ROOT/<experiment>/robustness.json + robustness.html."""
    root = tmp_path / "robustness"
    _write_record(root / "toyclaims", _record())
    return root


def _reproduce(out: Path, *extra: str) -> int:
    return cli.main(["reproduce", "--only", "toyclaims", "--quiet", "--out", str(out), *extra])


def _claim_rows(html: str) -> dict[str, str]:
    rows = re.findall(r'<tr [^>]*class="claim".*?</tr>', html, flags=re.S)
    return {next(c for c in CLAIMS if f"<code>{c}</code>" in row): row for row in rows}


def _last_cell(row: str) -> str:
    return re.findall(r"<td>.*?</td>\n", row, flags=re.S)[-1].strip()


def _href(page_dir: Path, target: Path) -> str:
    return Path(os.path.relpath(target.resolve(), page_dir.resolve())).as_posix()


def _check_column(html: str, page_dir: Path, root: Path) -> None:
    page = _href(page_dir, root / "toyclaims" / ROBUSTNESS_PAGE)
    assert "<th>Standing</th>" in html
    rows = _claim_rows(html)
    assert f'href="{page}#claim-c-holds"' in rows["c-holds"]
    assert ">holds 2/2</a>" in rows["c-holds"]
    depends = _last_cell(rows["c-depends"])
    assert f'href="{page}#claim-c-depends"' in depends and ">depends 1/2</a>" in depends
    assert "on <code>tol</code>" in depends and 'class="verdict depends"' in depends
    absent = _last_cell(rows["c-absent"])
    assert "robustness.html" not in absent and "the robustness record lacks this claim" in absent


# --- the standing -------------------------------------------------------------------------------
def test_reproduce_with_robustness_weighs_it_into_index_scorecard_and_report(
    tmp_path, robustness_dir
):
    out = tmp_path / "reproduce"
    assert _reproduce(out, "--robustness", str(robustness_dir)) == 0
    index = (out / "index.html").read_text()
    _check_column(index, out, robustness_dir)
    assert "1 holds · 1 depends · 1 holds" not in index
    line = "2 hold · 1 depends · robustness not measured for 1"
    assert line in index
    _check_column(
        (out / "toyclaims" / "report.html").read_text(), out / "toyclaims", robustness_dir
    )
    scorecard = json.loads((out / "scorecard.json").read_text())
    assert scorecard["count"] == line and scorecard["counts"] == {"holds": 2, "depends": 1}
    experiment = scorecard["experiments"][0]
    assert experiment["count"] == line
    claims = {c["id"]: c for c in experiment["claims"]}
    assert claims["c-depends"]["robustness"] == {
        "standing": "depends",
        "holds": 1,
        "n": 2,
        "flipped_by": ["tol"],
        "page": _href(out, robustness_dir / "toyclaims" / ROBUSTNESS_PAGE),
    }
    assert claims["c-depends"]["standing"] == {
        "verdict": "depends",
        "readings": 2,
        "holds": 1,
        "flipped_by": ["tol"],
        "measured": True,
        "why_unmeasured": "",
    }
    assert claims["c-holds"]["standing"]["verdict"] == "holds"
    assert claims["c-absent"]["robustness"] is None
    assert claims["c-absent"]["standing"]["measured"] is False
    assert claims["c-holds"]["verdict"] == "holds"  # the claim's own fields are kept


def test_a_record_made_under_another_registration_speaks_for_nothing(tmp_path):
    """A claim whose criterion (or config) changed since the record was made: the record's
    readings are not weighed in, and the standing says why."""
    root = tmp_path / "stale"
    _write_record(root / "toyclaims", _record(stale=("c-depends",)))
    out = tmp_path / "reproduce"
    assert _reproduce(out, "--robustness", str(root)) == 0
    claims = json.loads((out / "scorecard.json").read_text())["experiments"][0]["claims"]
    depends = next(c for c in claims if c["id"] == "c-depends")["standing"]
    assert depends["verdict"] == "holds" and not depends["measured"]
    assert "registration differs" in depends["why_unmeasured"]


def test_a_post_hoc_choice_that_flips_the_verdict_makes_the_claim_depend():
    """Without any record: the claim without its post-hoc choice is one more reading."""
    spec = _spec(
        "tuned",
        post_hoc=(PostHoc("the bound 1", "moved from 0.4 after a run", criterion=Below("x", 0.4)),),
    )
    record = spec.evaluate({}, ToyConfig())
    headline = standing(record)
    assert record.verdict == "holds" and record.post_hoc[0].verdict == "fails"
    assert headline.verdict == "depends" and headline.flipped_by == ("post hoc: the bound 1",)
    assert count_line([headline]) == "0 hold · 1 depends · robustness not measured"


def test_the_robustness_page_has_an_anchor_per_claim(robustness_dir):
    page = (robustness_dir / "toyclaims" / ROBUSTNESS_PAGE).read_text()
    assert 'id="claim-c-holds"' in page and 'id="claim-c-depends"' in page


def test_report_of_a_run_with_one_robustness_run_weighs_it_in(tmp_path, robustness_dir):
    run = tmp_path / "run"
    assert cli.main(["run", "toyclaims", "--quiet", "--out", str(run)]) == 0
    html = (run / "report.html").read_text()
    assert "robustness.html" not in html and "robustness not measured" in html
    single = robustness_dir / "toyclaims"  # one robustness run rather than a directory of them
    assert cli.main(["report", str(run), "--robustness", str(single)]) == 0
    _check_column((run / "report.html").read_text(), run, robustness_dir)
    # without its page, the standing shows unlinked
    (single / ROBUSTNESS_PAGE).unlink()
    assert cli.main(["report", str(run), "--robustness", str(single)]) == 0
    rows = _claim_rows((run / "report.html").read_text())
    assert "robustness.html" not in rows["c-holds"]
    assert '<span class="verdict holds"' in _last_cell(rows["c-holds"])


def test_report_of_a_reproduce_directory_weighs_it_in(tmp_path, robustness_dir):
    out = tmp_path / "reproduce"
    assert _reproduce(out) == 0
    assert cli.main(["report", str(out), "--robustness", str(robustness_dir)]) == 0
    _check_column((out / "index.html").read_text(), out, robustness_dir)
    _check_column(
        (out / "toyclaims" / "report.html").read_text(), out / "toyclaims", robustness_dir
    )
    claims = json.loads((out / "scorecard.json").read_text())["experiments"][0]["claims"]
    assert [c["robustness"] is None for c in claims] == [False, False, True]


def test_without_a_record_the_count_says_robustness_not_measured(tmp_path, robustness_dir):
    """No link and no robustness field without a record (the toy has no committed one);
    a rebuild without it after one with it gives back the very same bytes."""
    out = tmp_path / "reproduce"
    assert _reproduce(out) == 0
    files = ("index.html", "scorecard.json", "toyclaims/report.html")
    plain = {name: (out / name).read_bytes() for name in files}
    for name, content in plain.items():  # (the report's "About" is this module's docstring)
        assert b"robustness.html" not in content, name
    assert b'"robustness":' not in plain["scorecard.json"]
    assert b"3 hold \xc2\xb7 robustness not measured" in plain["index.html"]
    assert cli.main(["report", str(out), "--robustness", str(robustness_dir)]) == 0
    assert all((out / name).read_bytes() != plain[name] for name in files)
    assert cli.main(["report", str(out), "--robustness", "none"]) == 0
    assert {name: (out / name).read_bytes() for name in files} == plain


def test_the_committed_robustness_runs_are_read_by_experiment():
    runs = find_robustness_runs(RESULTS)
    assert {"anisotropy", "early-linearization"} <= set(runs)
    anisotropy = runs["anisotropy"]
    assert (
        anisotropy.preset == "quick"
        and anisotropy.page == RESULTS / "anisotropy" / "robustness.html"
    )
    row = anisotropy.record.claim("leaky-crossover-near-0.8")
    assert row is not None and row.flipped_by == ("crossover_tolerance",)


# --- refusals -----------------------------------------------------------------------------------
def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "d"
        for p in sorted(root.rglob("*"))
    }


def _bad(root: Path, case: str) -> Path:
    """A --robustness argument that must be refused."""
    bad = root / "bad" / case
    if case == "missing":
        return bad
    if case == "empty":
        bad.mkdir(parents=True)
        (bad / "notes.txt").write_text("no record here")
    elif case == "corrupt":
        _write_record(bad, '{"experiment": "toyclaims", "claims": [', page=False)
    elif case == "no-standing":
        record = _record().to_dict()
        record["claims"][0]["standing"] = "sometimes"
        _write_record(bad, json.dumps(record), page=False)
    elif case == "other-preset":
        _write_record(bad / "toyclaims", _record(preset="paper"))
    elif case == "other-experiment":
        _write_record(bad / "anisotropy", _record(experiment="anisotropy"))
    elif case == "twice":
        _write_record(bad / "a", _record())
        _write_record(bad / "b", _record())
    return bad


REFUSALS = {
    "missing": "is not a directory",
    "empty": "holds no robustness run",
    "corrupt": "is not a readable robustness record (JSONDecodeError",
    "no-standing": "has no known standing",
    "other-preset": "at preset paper, not at quick",
    "other-experiment": "holds no robustness run of toyclaims (only of anisotropy)",
    "twice": "holds two robustness runs of toyclaims",
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A finished toy run, a finished toy reproduce directory and every bad --robustness."""
    root = tmp_path_factory.mktemp("robustness-column")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(REGISTRY, "toyclaims", TOY)
        assert cli.main(["run", "toyclaims", "--quiet", "--out", str(root / "run")]) == 0
        assert _reproduce(root / "reproduce") == 0
        assert (
            cli.main(
                [
                    "sweep",
                    "toyclaims",
                    "--grid",
                    "seed=1,2",
                    "--quiet",
                    "--out",
                    str(root / "sweep"),
                ]
            )
            == 0
        )
    for case in REFUSALS:
        _bad(root, case)
    return root


@pytest.mark.parametrize("case", list(REFUSALS))
@pytest.mark.parametrize("command", ["reproduce", "report-run", "report-reproduce"])
def test_bad_robustness_input_is_refused_in_one_line_and_writes_nothing(
    workspace, capsys, command, case
):
    argv = {
        "reproduce": ["reproduce", "--only", "toyclaims", "--out", str(workspace / "new")],
        "report-run": ["report", str(workspace / "run")],
        "report-reproduce": ["report", str(workspace / "reproduce")],
    }[command]
    before = _tree(workspace)
    code = cli.main([*argv, "--robustness", str(workspace / "bad" / case)])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("relulab: error: --robustness: ") and err.count("\n") == 1, err
    assert REFUSALS[case] in err and out == ""
    assert _tree(workspace) == before


def test_robustness_on_a_sweep_is_refused(workspace, capsys, robustness_dir):
    before = _tree(workspace)
    assert cli.main(["report", str(workspace / "sweep"), "--robustness", str(robustness_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a sweep" in err
    assert _tree(workspace) == before
