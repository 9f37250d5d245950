"""Crash safety of the run contract with real processes: ``kill -9`` a ``relulab run`` at every
named fault point in turn (store creation, inside and after each unit's transaction, between the
outputs), resuming the same directory each time; then the final summary and the stored unit
payloads equal an uninterrupted run's. And a second run into a directory whose writer is alive
is refused with its PID, while a dead writer's lock never blocks."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relulab
from relulab import cli
from relulab.faults import FAULT_ENV, FAULT_SIGNAL_ENV
from relulab.runner import LOCK_FILENAME
from relulab.store import RunStore

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

ARGS = [
    "run",
    "anisotropy",
    "--quiet",
    "--threads",
    "1",
    "--set=d=6",
    "--set=D=12",
    "--set=n_samples=40",
    "--set=slopes=5",
    "--set=spectrum_points=5",
]
UNITS = ("activations", "leaky-sweep")
KILL_POINTS = (
    "store-build",  # the new store's tables exist, its transaction is open
    "store-replace",  # the new store is complete under its temporary name
    "unit-save:activations",  # the first unit's rows are inserted, not committed
    "unit-saved:activations",
    "unit-save:leaky-sweep",
    "outputs-figures",  # the figures are written, the report is not
    "outputs-report",  # report.html is written, summary.json is not
)


def _environment(**extra: str) -> dict[str, str]:
    source = str(Path(relulab.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def _command(out: Path) -> list[str]:
    return [sys.executable, "-m", "relulab", *ARGS, "--out", str(out)]


def _killed_at(out: Path, point: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command(out),
        env=_environment(**{FAULT_ENV: point}),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _payloads(out: Path) -> dict[str, tuple]:
    with RunStore.open(out / "runs.sqlite") as store:
        checksums = store.unit_checksums()
        units = {name: store.unit(name) for name in store.done_units()}
    return {
        name: (
            checksums[name],
            unit.conditions,
            {k: v.tolist() for k, v in unit.curves.items()},
            {k: v.tolist() for k, v in unit.final.items()},
        )
        for name, unit in units.items()
    }


def test_kill_9_at_every_point_then_resume_equals_an_uninterrupted_run(tmp_path):
    reference = tmp_path / "reference"
    assert cli.main([*ARGS, "--out", str(reference)]) == 0

    out = tmp_path / "killed"
    for point in KILL_POINTS:
        done = _killed_at(out, point)
        assert done.returncode == -signal.SIGKILL, (point, done.returncode, done.stderr)
        assert not (out / "summary.json").exists(), f"{point}: summary.json means complete"
        if (out / "runs.sqlite").exists():
            with RunStore.open(out / "runs.sqlite") as store:  # never half-created
                assert store.done_units() <= set(UNITS)

    assert cli.main([*ARGS, "--out", str(out)]) == 0
    resumed = json.loads((out / "summary.json").read_text())
    uninterrupted = json.loads((reference / "summary.json").read_text())
    assert resumed["claims"] == uninterrupted["claims"]
    assert resumed["metrics"] == uninterrupted["metrics"]
    assert _payloads(out) == _payloads(reference)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in reference.iterdir())


def test_a_live_writer_blocks_a_second_run_and_a_dead_one_does_not(tmp_path, capsys):
    out = tmp_path / "run"
    writer = subprocess.Popen(
        _command(out),
        env=_environment(**{FAULT_ENV: "unit-saved:activations", FAULT_SIGNAL_ENV: "STOP"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _, status = os.waitpid(writer.pid, os.WUNTRACED)  # frozen, holding the lock
        assert os.WIFSTOPPED(status)
        assert cli.main([*ARGS, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"in use by PID {writer.pid}" in err and err.count("\n") == 1
        assert cli.main(["report", str(out)]) == 2
        assert "in use by PID" in capsys.readouterr().err
    finally:
        writer.kill()
        writer.wait()
    assert (out / LOCK_FILENAME).exists(), "the dead writer's lock file is still there"
    assert cli.main([*ARGS, "--out", str(out)]) == 0, "and does not block"
    assert not (out / LOCK_FILENAME).exists()
    with RunStore.open(out / "runs.sqlite") as store:
        assert store.done_units() == set(UNITS)
        assert np.isfinite(store.unit("leaky-sweep").final["sigma1"]).all()
