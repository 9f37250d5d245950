"""``--robustness DIR`` on ``relulab reproduce`` and ``relulab report``: the index, the scorecard
and the experiment report gain a robustness column (each claim's standing and k/n, linking its
row on the robustness page; ``—`` for a claim the record lacks); without the option nothing
changes; bad robustness input exits 2 in one line and writes nothing.

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
from relulab.experiments.claims import claim
from relulab.experiments.criteria import Below
from relulab.report.robustness import write_robustness_page
from relulab.runner.robustness import (
    BASELINE,
    ROBUSTNESS_FILENAME,
    ROBUSTNESS_PAGE,
    find_robustness_runs,
    robustness_record,
)
from relulab.store import UnitResult

RESULTS = Path(__file__).resolve().parents[1] / "results" / "robustness" / "quick"
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


def _analyse(results, config) -> Analysis:
    claims = [
        claim(name, f"{name} says so.", criterion=Below("x", 1.0), measured=0.5, source="§1")
        for name in CLAIMS
    ]
    return Analysis(claims, {"m": 1.0})


TOY = Experiment(
    name="toyclaims",
    title="toy with claims",
    seed="001",
    summary="three claims, no training",
    config=ToyConfig,
    presets={"quick": ToyConfig()},
    plan=lambda config: [_unit(config, "only")],
    analyse=_analyse,
    figures=lambda results, config, out_dir: [],
    estimate_bytes=lambda config: 1000,
)


@pytest.fixture(autouse=True)
def _toy(monkeypatch):
    monkeypatch.setitem(REGISTRY, "toyclaims", TOY)
    monkeypatch.setattr("time.strftime", lambda *args: "FIXED")  # the index's "written at"


def _point(name, settings, verdicts):
    claims = [{"id": k, "verdict": v, "passed": v == "holds"} for k, v in verdicts.items()]
    return {"name": name, "settings": settings, "claims": claims, "finished": True}


def _record(experiment="toyclaims", preset="quick") -> dict:
    """c-holds holds in both readings; c-depends fails when tol=2."""
    return robustness_record(
        {
            "experiment": experiment,
            "preset": preset,
            "points": [
                _point(BASELINE, {"tol": 1}, {"c-holds": "holds", "c-depends": "holds"}),
                _point("tol=2", {"tol": 2}, {"c-holds": "holds", "c-depends": "fails"}),
            ],
        }
    )


def _write_record(directory: Path, record: dict, page: bool = True) -> Path:
    directory.mkdir(parents=True)
    (directory / ROBUSTNESS_FILENAME).write_text(json.dumps(record))
    if page:
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
    assert "<th>Robustness</th>" in html
    rows = _claim_rows(html)
    assert f'href="{page}#claim-c-holds"' in rows["c-holds"]
    assert ">robust holds 2/2</a>" in rows["c-holds"]
    depends = _last_cell(rows["c-depends"])
    assert f'href="{page}#claim-c-depends"' in depends and ">depends 1/2</a>" in depends
    assert "on <code>tol</code>" in depends and 'class="verdict inconclusive"' in depends
    assert _last_cell(rows["c-absent"]) == "<td>—</td>"


# --- the column ---------------------------------------------------------------------------------
def test_reproduce_with_robustness_adds_the_column_to_index_scorecard_and_report(
    tmp_path, robustness_dir
):
    out = tmp_path / "reproduce"
    assert _reproduce(out, "--robustness", str(robustness_dir)) == 0
    _check_column((out / "index.html").read_text(), out, robustness_dir)
    _check_column(
        (out / "toyclaims" / "report.html").read_text(), out / "toyclaims", robustness_dir
    )
    scorecard = json.loads((out / "scorecard.json").read_text())
    claims = {c["id"]: c for c in scorecard["experiments"][0]["claims"]}
    assert claims["c-depends"]["robustness"] == {
        "standing": "depends",
        "holds": 1,
        "n": 2,
        "flipped_by": ["tol"],
        "page": _href(out, robustness_dir / "toyclaims" / ROBUSTNESS_PAGE),
    }
    assert claims["c-holds"]["robustness"]["standing"] == "robust holds"
    assert claims["c-absent"]["robustness"] is None
    assert claims["c-holds"]["verdict"] == "holds"  # the claim's own fields are kept


def test_the_robustness_page_has_an_anchor_per_claim(robustness_dir):
    page = (robustness_dir / "toyclaims" / ROBUSTNESS_PAGE).read_text()
    assert 'id="claim-c-holds"' in page and 'id="claim-c-depends"' in page


def test_report_of_a_run_with_one_robustness_run_adds_the_column(tmp_path, robustness_dir):
    run = tmp_path / "run"
    assert cli.main(["run", "toyclaims", "--quiet", "--out", str(run)]) == 0
    assert "Robustness" not in (run / "report.html").read_text()
    single = robustness_dir / "toyclaims"  # one robustness run rather than a directory of them
    assert cli.main(["report", str(run), "--robustness", str(single)]) == 0
    _check_column((run / "report.html").read_text(), run, robustness_dir)
    # without its page, the standing shows unlinked
    (single / ROBUSTNESS_PAGE).unlink()
    assert cli.main(["report", str(run), "--robustness", str(single)]) == 0
    rows = _claim_rows((run / "report.html").read_text())
    assert "robustness.html" not in rows["c-holds"]
    assert '<span class="verdict holds"' in _last_cell(rows["c-holds"])


def test_report_of_a_reproduce_directory_adds_the_column(tmp_path, robustness_dir):
    out = tmp_path / "reproduce"
    assert _reproduce(out) == 0
    assert cli.main(["report", str(out), "--robustness", str(robustness_dir)]) == 0
    _check_column((out / "index.html").read_text(), out, robustness_dir)
    _check_column(
        (out / "toyclaims" / "report.html").read_text(), out / "toyclaims", robustness_dir
    )
    claims = json.loads((out / "scorecard.json").read_text())["experiments"][0]["claims"]
    assert [c["robustness"] is None for c in claims] == [False, False, True]


def test_without_the_option_the_outputs_are_unchanged(tmp_path, robustness_dir):
    """No column, no field, no link without ``--robustness``; and a rebuild without it after one
    with it gives back the very same bytes."""
    out = tmp_path / "reproduce"
    assert _reproduce(out) == 0
    files = ("index.html", "scorecard.json", "toyclaims/report.html")
    plain = {name: (out / name).read_bytes() for name in files}
    for name, content in plain.items():  # (the report's "About" is this module's docstring)
        assert b"robustness.html" not in content and b"Robustness<" not in content, name
    assert b"robustness" not in plain["index.html"] + plain["scorecard.json"]
    assert (
        b"<thead><tr><th>Claim</th><th>Statement (seed)</th><th>Expected</th><th>Measured</th>"
        b"<th>Verdict</th><th>Evidence</th></tr></thead>\n" in plain["index.html"]
    )
    assert cli.main(["report", str(out), "--robustness", str(robustness_dir)]) == 0
    assert all((out / name).read_bytes() != plain[name] for name in files)
    assert cli.main(["report", str(out)]) == 0
    assert {name: (out / name).read_bytes() for name in files} == plain


def test_the_committed_robustness_runs_are_read_by_experiment():
    runs = find_robustness_runs(RESULTS)
    assert {"anisotropy", "early-linearization"} <= set(runs)
    anisotropy = runs["anisotropy"]
    assert (
        anisotropy.preset == "quick"
        and anisotropy.page == RESULTS / "anisotropy" / "robustness.html"
    )
    assert anisotropy.claims["leaky-crossover-near-0.8"]["flipped_by"] == ["crossover_tolerance"]


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
        _write_record(bad, {}, page=False)
        (bad / ROBUSTNESS_FILENAME).write_text('{"experiment": "toyclaims", "claims": [')
    elif case == "no-standing":
        record = _record()
        record["claims"][0]["standing"] = "sometimes"
        _write_record(bad, record, page=False)
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
