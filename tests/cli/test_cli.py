"""The run contract through the CLI: files written, error paths, resume, report, escaping."""

import json
import math
import re
import subprocess
import sys

import pytest

from relulab import cli
from relulab.cli.common import EXIT_INTERRUPTED
from relulab.experiments import single_neuron
from relulab.experiments.single_neuron import units as single_neuron_units
from relulab.records.summary import SummaryRecord
from relulab.report import write_run_report
from relulab.store import RunStore

TINY = [
    f"--set={kv}"
    for kv in (
        "steps=300",
        "silu_steps=300",
        "grid_size=3",
        "boundary_points=3",
        "n_points=20",
        "record_every=50",
        "grid_record_every=100",
    )
]
CONTRACT_FILES = {
    "summary.json",
    "report.html",
    "runs.sqlite",
    "loss_curves.png",
    "fits.png",
    "kinks.png",
    "phase_maps.png",
    "loss_maps.png",
}


def _run(out, *extra):
    return cli.main(["run", "single-neuron", "--quiet", "--out", str(out), *TINY, *extra])


def test_run_writes_the_contract_files(tmp_path):
    out = tmp_path / "run"
    assert _run(out) == 0
    assert CONTRACT_FILES <= {p.name for p in out.iterdir()}
    summary = json.loads((out / "summary.json").read_text())
    assert {"experiment", "preset", "config", "claims", "metrics"} <= set(summary)
    assert summary["experiment"] == "single-neuron" and summary["preset"] == "quick"
    assert summary["config"]["steps"] == 300
    assert {"torch", "numpy", "python"} <= set(summary["versions"])
    commit = summary["versions"].get("relulab_commit")  # absent unless a checkout tracks relulab
    assert commit is None or re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", commit)
    assert summary["claims"], "the single-neuron lab declares claims"
    for claim in summary["claims"]:
        assert set(claim) >= {"id", "statement", "expected", "measured", "passed"}
        assert isinstance(claim["measured"], float) and math.isfinite(claim["measured"])
        assert isinstance(claim["passed"], bool)
        assert "seed 001" in claim["expected"]
    assert all(v is None or isinstance(v, float) for v in summary["metrics"].values())
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 5 and "Claims scorecard" in html


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "no-such-experiment"], "unknown experiment"),
        (["run", "single-neuron", "--set", "steps=many"], "expected an integer"),
        (["run", "single-neuron", "--set", "wibble=1"], "unknown config key"),
        (["run", "single-neuron", "--set", "steps=0"], "must be positive"),
        (["run", "single-neuron", "--preset", "huge"], "unknown preset"),
        (["run", "single-neuron", "--device", "tpu"], "device"),
        (["run", "single-neuron", "--threads", "0"], "argument --threads: must lie in [1,"),
        (["run", "single-neuron", "--frobnicate"], "unrecognized arguments"),
        (["reproduce", "--only", "nope"], "unknown experiment"),
    ],
)
def test_bad_requests_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as raised:
        raise SystemExit(cli.main([*args, "--out", str(out)]))
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("relulab: error:")
    assert not out.exists()


def test_foreign_directory_is_refused_untouched(tmp_path, capsys):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("keep me")
    assert _run(out) == 2
    assert [p.name for p in out.iterdir()] == ["chapter1.tex"]
    assert "not empty and holds no relulab run" in capsys.readouterr().err


def test_interrupted_run_resumes_without_redoing_finished_units(tmp_path, monkeypatch):
    out = tmp_path / "run"
    original_save = RunStore.save_unit
    saved = []

    def save_then_interrupt(self, name, result, threads=None):
        if len(saved) == 2:
            raise KeyboardInterrupt  # the user hits Ctrl-C while the third unit finishes
        original_save(self, name, result, threads)
        saved.append(name)

    monkeypatch.setattr(RunStore, "save_unit", save_then_interrupt)
    assert _run(out) == EXIT_INTERRUPTED
    assert not (out / "summary.json").exists()
    with RunStore.open(out / "runs.sqlite") as store:
        assert store.done_units() == set(saved)
    monkeypatch.setattr(RunStore, "save_unit", original_save)

    trained = []
    real_train = single_neuron_units.train_conditions

    def counting_train(conditions, *args, **kwargs):
        trained.append(len(conditions))
        return real_train(conditions, *args, **kwargs)

    monkeypatch.setattr(single_neuron_units, "train_conditions", counting_train)
    assert _run(out) == 0
    n_units = len(single_neuron.plan(single_neuron.PRESETS["quick"]))
    assert len(trained) == n_units - 2, "finished units are not trained again"

    fresh = tmp_path / "fresh"
    assert _run(fresh) == 0
    resumed = json.loads((out / "summary.json").read_text())
    uninterrupted = json.loads((fresh / "summary.json").read_text())
    assert resumed["claims"] == uninterrupted["claims"]
    assert resumed["metrics"] == uninterrupted["metrics"]


def test_same_seed_same_results_and_seed_matters(tmp_path):
    runs = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        assert _run(tmp_path / name, "--set=sampling=uniform", "--seed", str(seed)) == 0
        runs[name] = json.loads((tmp_path / name / "summary.json").read_text())["metrics"]
    assert runs["a"] == runs["b"]
    assert runs["a"]["plateau_dead_sample"] != runs["c"]["plateau_dead_sample"]


def test_report_command_rebuilds_outputs(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(out) == 0
    before = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()
    (out / "report.html").unlink()
    assert cli.main(["report", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text()) == before
    assert (out / "report.html").exists()
    assert cli.main(["report", str(tmp_path / "empty")]) == 2


def test_report_escapes_every_user_string(tmp_path):
    evil = "<script>alert('x')</script>"
    summary = {
        "experiment": evil,
        "title": evil,
        "seed_document": "001",
        "preset": "quick",
        "config": {"name": evil},
        "versions": {"torch": evil},
        "created": "now",
        "device": "cpu",
        "claims": [
            {
                "id": evil,
                "statement": evil,
                "expected": evil,
                "measured": 1.0,
                "passed": True,
                "detail": evil,
            }
        ],
        "metrics": {evil: 1.0},
        "units": {evil: {"networks": 1, "wall_s": 0.1, "diverged": 0}},
    }
    html = write_run_report(tmp_path, SummaryRecord.from_dict(summary)).read_text()
    assert "<script>alert" not in html  # the page's own <script> is the lightbox
    assert "&lt;script&gt;" in html


def test_console_script_runs():
    done = subprocess.run(
        [sys.executable, "-m", "relulab.cli", "list"], capture_output=True, text=True, check=True
    )
    assert "single-neuron" in done.stdout


def test_library_warnings_reach_stderr_as_one_relulab_line(monkeypatch, capsys):
    """Issue 33: numpy's and scipy's warnings during a successful command are printed as
    ``relulab: warning: …`` lines (one each), never raw multi-line warning output."""
    import warnings

    import numpy as np

    def noisy(args):
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            np.mean(np.array([]))  # RuntimeWarning: Mean of empty slice (and a second one)
        return 0

    monkeypatch.setitem(cli._COMMANDS, "theory", noisy)
    monkeypatch.delenv("RELULAB_DEBUG", raising=False)
    before = warnings.showwarning
    assert cli.main(["theory", "sample-variance"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines and all(line.startswith("relulab: warning: RuntimeWarning: ") for line in lines)
    assert "Mean of empty slice" in err and "warnings.warn" not in err
    assert warnings.showwarning is before  # restored for whoever called main()
