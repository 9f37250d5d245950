"""The run contract under failures, in-process, on a toy experiment whose units can be made to
fail: a failing unit exits 1 in one line and keeps the finished units; a failed start leaves a
directory any config may reuse; failing outputs exit 1 and ``report`` retries; a resume under
another thread count warns and records it, and one at another relulab commit warns; the
unforeseen is one line; stale lock files do not block. Also the generic config checks and the
machine's bounds."""

import dataclasses
import json
import os
import re
import sys

import numpy as np
import pytest
import torch

from relulab import cli
from relulab.config import ConfigError, apply_overrides, check_fields
from relulab.experiments import REGISTRY
from relulab.experiments.base import Analysis, Experiment, Unit
from relulab.files import TEMP_PREFIX, write_atomic
from relulab.resources import format_bytes
from relulab.runner import LOCK_FILENAME, available_memory_bytes, environment, max_threads
from relulab.store import RunStore, UnitResult

UNITS = ("first", "second", "third")
TRANSIENT: set[str] = set()  # units that fail this time (a full disk, a flaky device)


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    seed: int = 0
    scale: float = 1.0
    fail_unit: str = ""  # this unit raises
    levels: tuple[float, ...] = (1.0, 2.0)


def _unit(config: ToyConfig, name: str) -> Unit:
    def run(context) -> UnitResult:
        if name in TRANSIENT:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        if name == config.fail_unit:
            raise IndexError("index 3 is out of bounds for axis 0 with size 3")
        values = torch.randn(2, generator=context.generator(name), dtype=torch.float64).numpy()
        return UnitResult(
            [{"unit": name, "i": i} for i in range(2)],
            np.arange(2),
            {"value": np.stack([values, values * config.scale])},
            {"value": values * config.scale},
            np.zeros(2, bool),
            np.full(2, -1),
        )

    return Unit(name, run)


def _figures(results, config, out_dir):
    if "figures" in TRANSIENT:
        raise IndexError("index 2 is out of bounds for axis 2 with size 2")
    return []


def _analyse(results, config) -> Analysis:
    return Analysis([], {name: float(r.final["value"].sum()) for name, r in results.items()})


TOY = Experiment(
    name="toy",
    title="toy",
    seed="none",
    summary="units that fail on request",
    config=ToyConfig,
    presets={"quick": ToyConfig()},
    plan=lambda config: [_unit(config, name) for name in UNITS],
    analyse=_analyse,
    figures=_figures,
    estimate_bytes=lambda config: 1000,
)


@pytest.fixture(autouse=True)
def _toy(monkeypatch):
    monkeypatch.setitem(REGISTRY, "toy", TOY)
    yield
    TRANSIENT.clear()


def _run(out, *extra):
    return cli.main(["run", "toy", "--quiet", "--out", str(out), *extra])


def _done(out):
    with RunStore.open(out / "runs.sqlite") as store:
        return store.done_units()


def test_a_failing_unit_exits_1_in_one_line_keeps_finished_units_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    TRANSIENT.add("second")
    assert _run(out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "unit 'second' failed (RuntimeError: CUDA error" in err and "1 finished unit(s)" in err
    assert _done(out) == {"first"} and not (out / "summary.json").exists()
    assert not (out / LOCK_FILENAME).exists(), "the lock is released on failure"
    TRANSIENT.clear()
    assert _run(out) == 0, "the same command resumes"
    assert _done(out) == set(UNITS)
    fresh = tmp_path / "fresh"
    assert _run(fresh) == 0
    resumed, uninterrupted = (json.loads((d / "summary.json").read_text()) for d in (out, fresh))
    assert resumed["metrics"] == uninterrupted["metrics"]


def test_after_a_failed_start_the_corrected_command_reuses_the_directory(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(out, "--set", "fail_unit=first") == 1
    assert "no unit had finished" in capsys.readouterr().err
    assert _run(out, "--set", "scale=2") == 0, "a store with no finished unit is not a run"
    assert _done(out) == set(UNITS)


def test_failing_outputs_exit_1_and_report_retries(tmp_path, capsys):
    out = tmp_path / "run"
    TRANSIENT.add("figures")
    assert _run(out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "building its outputs failed (IndexError" in err
    assert f"relulab report {out}" in err
    assert _done(out) == set(UNITS) and not (out / "summary.json").exists()
    TRANSIENT.clear()
    assert cli.main(["report", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["experiment"] == "toy"


def test_resume_under_another_thread_count_warns_and_records_it(tmp_path, capsys, monkeypatch):
    out, fresh = tmp_path / "run", tmp_path / "fresh"
    TRANSIENT.add("third")
    assert _run(out) == 1
    capsys.readouterr()
    TRANSIENT.clear()
    monkeypatch.setattr(torch, "get_num_threads", lambda: 7)
    assert _run(out) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("relulab: warning:")
    assert "ran with 1 torch thread(s), this run uses 7" in err
    units = json.loads((out / "summary.json").read_text())["units"]
    assert {name: u["threads"] for name, u in units.items()} == {
        "first": 1,
        "second": 1,
        "third": 7,
    }
    assert _run(fresh) == 0
    assert capsys.readouterr().err == "", "a fresh run has nothing to warn about"


def test_resume_at_another_relulab_commit_warns(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    monkeypatch.setattr(environment, "_source_commit", lambda: "a" * 40)
    TRANSIENT.add("third")
    assert _run(out) == 1
    capsys.readouterr()
    TRANSIENT.clear()
    monkeypatch.setattr(environment, "_source_commit", lambda: "b" * 40 + "+dirty")
    assert _run(out) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("relulab: warning:")
    assert f"ran at relulab commit {'a' * 40}, this run is at {'b' * 40}+dirty" in err


def test_the_unforeseen_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RunStore, "create_or_resume", disk_full)
    assert _run(tmp_path / "run") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "RELULAB_DEBUG" in err
    monkeypatch.setenv("RELULAB_DEBUG", "1")
    with pytest.raises(OSError):
        _run(tmp_path / "run")


def test_stale_lock_and_temporaries_of_a_dead_process_do_not_block(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_FILENAME).write_text("999999999\n")  # its writer died long ago
    (out / f"{TEMP_PREFIX}999999999-summary.json").write_text("{half")
    assert _run(out) == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "runs.sqlite", "summary.json"]


def test_summary_json_exists_exactly_when_the_outputs_are_complete(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert _run(out) == 0
    assert (out / "summary.json").exists()

    def broken_report(*args, **kwargs):
        raise RuntimeError("template missing")

    outputs_module = sys.modules["relulab.runner.outputs"]
    monkeypatch.setattr(outputs_module, "write_run_report", broken_report)
    assert cli.main(["report", str(out)]) == 1
    assert not (out / "summary.json").exists(), "a stale summary would claim complete outputs"


def test_write_atomic_leaves_no_temporary_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    target.write_text("old")

    def failing_replace(*args):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == [target.name]


# -- generic config checks -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Fields:
    seed: int = 0
    init_seed: int = 1
    size: int = 10
    rate: float = 0.5
    sweep: tuple[float, ...] = (1.0, 2.0)
    pair: tuple[float, float] = (0.0, 0.0)  # fixed length: not a sweep, repeats allowed
    repeats: tuple[int, ...] = dataclasses.field(default=(1, 1), metadata={"sweep": False})
    big: float = dataclasses.field(default=1e20, metadata={"max_abs": 1e30})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seed": -1}, "seed must be an integer in [0, 2**63)"),
        ({"seed": 2**63}, "seed must be an integer in [0, 2**63)"),
        ({"init_seed": -5}, "init_seed must be an integer"),
        ({"size": 2**31}, "out of range"),
        ({"size": -(2**31)}, "out of range"),
        ({"rate": float("nan")}, "must be finite"),
        ({"rate": 1e13}, "out of range"),
        ({"sweep": ()}, "needs at least one value"),
        ({"sweep": (1.0, 2.0, 1.0)}, "distinct values, got 1.0 twice"),
        ({"sweep": (1.0, 1e300)}, "out of range"),
        ({"big": 1e31}, "out of range"),
    ],
)
def test_generic_field_checks(change, message):
    check_fields(Fields())
    check_fields(Fields(seed=2**63 - 1, size=2**31 - 1))
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_fields(dataclasses.replace(Fields(), **change))


def test_a_key_set_twice_is_refused():
    assert apply_overrides(Fields(), ["size=3"]).size == 3
    with pytest.raises(ConfigError, match="size is set twice"):
        apply_overrides(Fields(), ["size=3", " size=4"])


def test_every_preset_passes_the_generic_checks():
    for experiment in REGISTRY.values():
        check_presets_pass_generic_checks(experiment)


def check_presets_pass_generic_checks(experiment) -> None:
    for config in experiment.presets.values():
        check_fields(config)
        if experiment.estimate_bytes is not None:
            assert 0 < experiment.estimate_bytes(config) < 64 * 2**30


def test_machine_bounds():
    assert max_threads() == (os.cpu_count() or 1)
    available = available_memory_bytes(torch.device("cpu"))
    assert available is None or available > 0
    assert format_bytes(1536) == "1.5 KiB" and format_bytes(3 * 2**40) == "3 TiB"


def test_reproduce_records_a_failing_experiment_and_report_rebuilds_the_directory(tmp_path, capsys):
    out = tmp_path / "reproduce"
    TRANSIENT.add("second")
    assert cli.main(["reproduce", "--only", "toy", "--quiet", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "toy failed: toy: unit 'second' failed" in err
    scorecard = json.loads((out / "scorecard.json").read_text())
    assert "unit 'second' failed" in scorecard["experiments"][0]["error"]
    TRANSIENT.clear()
    assert cli.main(["reproduce", "--only", "toy", "--quiet", "--out", str(out)]) == 0
    assert json.loads((out / "scorecard.json").read_text())["experiments"][0]["error"] is None
    (out / "index.html").unlink()
    assert cli.main(["report", str(out)]) == 0
    assert (out / "index.html").exists()
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "scorecard.json", "toy"]
