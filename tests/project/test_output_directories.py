"""Issue 47: what a writing command does with the directory it writes — no write through a link
planted inside it, a lock held from the first byte computed to the last written (taken by a
refused command without a trace), nested locks of one process, and a second writer refused
while the first still computes."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relulab import cli
from relulab.config import config_to_dict
from relulab.experiments import get_experiment
from relulab.runner import check_not_in_use, locked
from relulab.runner import rundir as rundir_module
from relulab.store import RunStore, UnitResult

MODEL = "relulab.nn.examples:deep_mlp"


@pytest.fixture
def run_dir(tmp_path):
    """A finished anisotropy unit with one recorded curve, for ``relulab export``."""
    directory = tmp_path / "run"
    directory.mkdir()
    config = config_to_dict(get_experiment("anisotropy").presets["quick"])
    result = UnitResult(
        [{"i": 0}, {"i": 1}],
        np.arange(3),
        {"singular": np.ones((2, 3))},
        {"sigma1": np.ones(2), "sigma1_over_sigma2": np.ones(2)},
        np.zeros(2, bool),
        np.full(2, -1),
    )
    with RunStore.create_or_resume(
        directory / "runs.sqlite", "anisotropy", "quick", config, {"torch": "x"}
    ) as store:
        store.save_unit("activations", result)
    return directory


def _refused(argv, capsys, message):
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert err.startswith("relulab: error:") and err.count("\n") == 1, err
    assert message in err and out == "", err


@pytest.mark.parametrize("where", ["unit", "network", "reproduce-run"])
def test_export_writes_no_event_file_through_a_link_inside_logdir(run_dir, tmp_path, capsys, where):
    pytest.importorskip("tensorboard")
    logdir, outside = tmp_path / "tb", tmp_path / "outside"
    outside.mkdir()
    source = run_dir
    if where == "unit":
        logdir.mkdir()
        (logdir / "activations").symlink_to(outside, target_is_directory=True)
    elif where == "network":
        (logdir / "activations").mkdir(parents=True)
        (logdir / "activations" / "0000_i=0").symlink_to(outside, target_is_directory=True)
    else:  # a reproduce directory exports each run into LOGDIR/RUN
        source = tmp_path / "reproduce"
        source.mkdir()
        run_dir.rename(source / "anisotropy")
        logdir.mkdir()
        (logdir / "anisotropy").symlink_to(outside, target_is_directory=True)
    _refused(["export", "--tensorboard", str(logdir), str(source)], capsys, "symbolic link")
    assert list(outside.iterdir()) == [], "an event file landed outside LOGDIR"


def test_export_refuses_a_logdir_holding_a_relulab_run(run_dir, capsys):
    pytest.importorskip("tensorboard")
    before = sorted(path.name for path in run_dir.iterdir())
    _refused(["export", "--tensorboard", str(run_dir), str(run_dir)], capsys, "holds a relulab run")
    assert sorted(path.name for path in run_dir.iterdir()) == before


def test_a_lock_refused_work_leaves_no_directory_it_created(tmp_path):
    with pytest.raises(RuntimeError), locked(tmp_path / "a" / "b"):
        assert (tmp_path / "a" / "b" / ".relulab.lock").is_file()
        raise RuntimeError("refused after the lock")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with locked(tmp_path / "kept"):
        (tmp_path / "kept" / "result.txt").write_text("written")
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["result.txt"]


def test_a_process_nests_its_own_lock_and_others_see_it_busy(tmp_path):
    directory = tmp_path / "run"
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from relulab.runner import check_not_in_use\n"
        "check_not_in_use(Path(sys.argv[1]))\n"
    )
    with locked(directory):
        with locked(directory):  # a robustness run's sweep locks the directory it holds
            check_not_in_use(directory)  # the holder is not refused by itself
        assert directory.resolve() in rundir_module._HELD, "the inner release kept the lock"
        other = subprocess.run(
            [sys.executable, "-c", probe, str(directory)], capture_output=True, text=True
        )
        assert other.returncode != 0 and "DirectoryInUseError" in other.stderr
    assert directory.resolve() not in rundir_module._HELD


def test_a_second_diagnose_is_refused_while_the_first_still_probes(tmp_path, monkeypatch):
    """Before issue 47 the lock covered only the write phase: two diagnoses into one --out could
    both exit 0, one report silently replaced."""
    import relulab.cli.diagnose as diagnose_cli

    out = tmp_path / "diag"
    probe = diagnose_cli._probe
    seconds: list[subprocess.CompletedProcess] = []

    def probe_while_another_diagnoses(*args, **kwargs):
        command = [sys.executable, "-m", "relulab", "diagnose", MODEL, "--samples", "8"]
        seconds.append(
            subprocess.run([*command, "--out", str(out)], capture_output=True, text=True)
        )
        return probe(*args, **kwargs)

    monkeypatch.setattr(diagnose_cli, "_probe", probe_while_another_diagnoses)
    assert cli.main(["diagnose", MODEL, "--samples", "8", "--out", str(out)]) == 0
    (second,) = seconds
    assert second.returncode == 2, second.stderr
    assert "is in use by PID" in second.stderr and second.stderr.count("\n") == 1


def test_robustness_holds_its_directory_from_the_first_reading_to_the_record(tmp_path, monkeypatch):
    import relulab.runner.robustness as robustness

    out = tmp_path / "rob"
    held_during: list[bool] = []

    def reading(name, preset, variants, fixed, seed, device, out_dir, *rest):
        held_during.append(Path(out_dir).resolve() in rundir_module._HELD)
        return "record"

    monkeypatch.setattr(robustness, "_run_readings", reading)
    monkeypatch.setattr(robustness, "flipping_fields", lambda record: ["a", "b"])
    monkeypatch.setattr(robustness, "pair_variants", lambda *args: [])
    robustness.run_robustness("anisotropy", "quick", None, True, [], None, "cpu", out, None)
    assert held_during == [True, True], "the lock was released between the two passes"


@pytest.mark.parametrize(
    "call",
    [
        "relulab.store:load",
        "relulab.store:load_sweep",
        "relulab.store:read_sweep_record",
        "relulab.store:has_store",
        "relulab.store:open_run_store",
        "relulab.report.tensorboard:export_tensorboard",
    ],
)
def test_an_empty_path_is_an_error_in_the_python_api_too(call, tmp_path, monkeypatch):
    """``''`` would be the working directory, silently (issue 47 item 5)."""
    import importlib

    module, name = call.split(":")
    function = getattr(importlib.import_module(module), name)
    monkeypatch.chdir(tmp_path)
    arguments = ("", str(tmp_path / "tb")) if name == "export_tensorboard" else ("",)
    with pytest.raises(ValueError, match="must not be empty"):
        result = function(*arguments)
        if hasattr(result, "__enter__"):
            with result:
                pass
    assert list(tmp_path.iterdir()) == []
