"""Issue 35: off a terminal (a log, CI), ``relulab run``/``sweep``/``reproduce`` write a line per
finished unit on stderr — experiment, unit, its seconds, units done/total — and long units a line
at most every ``LINE_INTERVAL_S`` seconds; ``--quiet`` silences both."""

from __future__ import annotations

import re

import pytest
import torch

from relulab import cli, progress
from relulab.experiments import REGISTRY
from relulab.experiments.context import RunContext
from tests.runner import parallel_toy

UNIT_LINE = re.compile(
    r"relulab: (?P<run>[\w=. -]+): unit '(?P<unit>[\w-]+)' (?P<outcome>done|failed)"
    r"(?: in [\d.]+ s)? \((?P<done>\d+)/(?P<total>\d+) units, [\d.]+ s elapsed\)"
)
TINY_ANISOTROPY = ["--set=D=12", "--set=n_samples=40", "--set=slopes=5", "--set=spectrum_points=5"]


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(REGISTRY, parallel_toy.EXPERIMENT.name, parallel_toy.EXPERIMENT)


def _unit_lines(err: str) -> list[re.Match]:
    return [m for m in map(UNIT_LINE.fullmatch, err.splitlines()) if m is not None]


def test_run_off_a_terminal_writes_a_line_per_finished_unit(tmp_path, toy, capsys):
    assert cli.main(["run", "parallel-toy", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    lines = _unit_lines(err)
    assert len(lines) == len(err.splitlines()) == 3, err
    assert [m["unit"] for m in lines] == list(parallel_toy.UNITS)
    assert {m["run"] for m in lines} == {"parallel-toy"}
    assert [(int(m["done"]), int(m["total"])) for m in lines] == [(1, 3), (2, 3), (3, 3)]
    assert all(m["outcome"] == "done" for m in lines)


def test_quiet_silences_the_lines(tmp_path, toy, capsys):
    assert cli.main(["run", "parallel-toy", "--quiet", "--out", str(tmp_path / "run")]) == 0
    assert capsys.readouterr().err == ""


def test_a_failed_unit_has_its_line_before_the_error(tmp_path, toy, capsys):
    argv = ["run", "parallel-toy", "--set", "fail_unit=second", "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert [(m["unit"], m["outcome"]) for m in _unit_lines("\n".join(err))] == [
        ("first", "done"),
        ("second", "failed"),
    ]
    assert "unit 'second' failed (IndexError" in err[-1]


def test_a_sweep_names_the_point_of_each_unit(tmp_path, toy, capsys):
    argv = ["sweep", "parallel-toy", "--grid", "scale=1,2", "--out", str(tmp_path / "sweep")]
    assert cli.main(argv) == 0
    lines = _unit_lines(capsys.readouterr().err)
    assert len(lines) == 6 and [int(m["done"]) for m in lines] == list(range(1, 7))
    assert {m["run"] for m in lines} == {"parallel-toy scale=1.0", "parallel-toy scale=2.0"}
    assert {int(m["total"]) for m in lines} == {6}


def test_a_real_experiment_writes_unit_and_step_lines(tmp_path, capsys, monkeypatch):
    """anisotropy at the smallest sizes that validate; every step line at once (interval 0)."""
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    argv = ["run", "anisotropy", "--set=d=4", *TINY_ANISOTROPY, "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    units = _unit_lines(err)
    assert [m["unit"] for m in units] == ["activations", "leaky-sweep"]
    assert {m["run"] for m in units} == {"anisotropy"}
    steps = [line for line in err.splitlines() if re.search(r": \d+/\d+ steps \(\d+%\)", line)]
    assert steps and all(line.startswith("relulab: ") for line in steps)
    assert any(line.startswith("relulab: leaky-sweep: 30/30 steps (100%)") for line in steps)


def test_step_lines_come_at_most_once_per_interval(capsys, monkeypatch):
    context = RunContext(torch.device("cpu"), torch.float64, seed=0)
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 3600.0)
    with context.progress(10, "slow work") as advance:
        for _ in range(10):
            advance(1)
    assert capsys.readouterr().err == "", "no line before the first interval has passed"
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    with context.progress(4, "slow work") as advance:
        advance(1)
        advance(3)
    assert capsys.readouterr().err.splitlines() == [
        "relulab: slow work: 1/4 steps (25%), 0.0 s elapsed",
        "relulab: slow work: 4/4 steps (100%), 0.0 s elapsed",
    ]
    quiet = RunContext(torch.device("cpu"), torch.float64, seed=0, quiet=True)
    with quiet.progress(4, "slow work") as advance:
        advance(4)
    assert capsys.readouterr().err == ""


def test_reproduce_writes_the_lines_too(tmp_path, toy, capsys):
    argv = ["reproduce", "--only", "parallel-toy", "--out", str(tmp_path / "reproduce")]
    assert cli.main(argv) == 0
    lines = _unit_lines(capsys.readouterr().err)
    assert [(m["run"], m["unit"]) for m in lines] == [
        ("parallel-toy", u) for u in parallel_toy.UNITS
    ]
