"""Units on a local process pool (``--jobs 2``) and sweeps, with real worker processes: the
results equal ``--jobs 1``'s bit for bit; a unit that raises is reported in one line while the
others finish and stay stored; ``kill -9`` of the driver mid-sweep loses no finished unit, its
workers exit, and the re-run completes the sweep with the results of an uninterrupted one."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import relulab
from relulab import cli
from relulab.experiments import REGISTRY
from relulab.faults import FAULT_ENV, FAULT_SIGNAL_ENV
from relulab.store import RunStore, load_sweep
from tests.runner import parallel_toy

SIZES = ["--set=D=12", "--set=n_samples=40", "--set=slopes=5", "--set=spectrum_points=5"]
SWEEP = ["sweep", "anisotropy", "--grid", "d=4,6", "--quiet", "--threads", "1", *SIZES]
POINTS = ("d=4", "d=6")


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(REGISTRY, parallel_toy.EXPERIMENT.name, parallel_toy.EXPERIMENT)


def _units(run_dir: Path) -> dict[str, tuple[str, str]]:
    """Per stored unit: its payload checksum and when it was stored."""
    with RunStore.open(run_dir / "runs.sqlite") as store:
        checksums = store.unit_checksums()
        stored = dict(store._db.execute("SELECT name, finished_at FROM units"))
    return {name: (checksums[name], stored[name]) for name in checksums}


def _same_results(a: Path, b: Path) -> None:
    first, second = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    assert first["claims"] == second["claims"]
    assert first["metrics"] == second["metrics"]
    assert {n: c for n, (c, _) in _units(a).items()} == {n: c for n, (c, _) in _units(b).items()}


def _environment(**extra: str) -> dict[str, str]:
    source = str(Path(relulab.__file__).resolve().parents[1])
    tests = str(Path(__file__).resolve().parents[2])  # holds the tests package (parallel_toy)
    path = os.pathsep.join(p for p in (source, tests, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def test_a_sweep_on_two_workers_equals_one_process_and_reads_back_as_one_table(tmp_path):
    serial, pooled = tmp_path / "serial", tmp_path / "pooled"
    assert cli.main([*SWEEP, "--out", str(serial)]) == 0
    assert cli.main([*SWEEP, "--jobs", "2", "--out", str(pooled)]) == 0
    for point in POINTS:
        _same_results(serial / point, pooled / point)
        units = json.loads((pooled / point / "summary.json").read_text())["units"]
        assert {u["threads"] for u in units.values()} == {1}
    record = json.loads((pooled / "sweep.json").read_text())
    assert [p["name"] for p in record["points"]] == list(POINTS)
    assert record["points"][0]["settings"] == {"d": 4} and record["points"][0]["claims"]
    page = (pooled / "sweep.html").read_text()
    assert 'href="d=4/report.html#claim-' in page and "holds at" in page

    frame = load_sweep(pooled)
    assert list(frame.columns[:2]) == ["point", "d"]
    assert sorted(frame["d"].unique()) == [4, 6]
    for point in POINTS:
        alone = relulab.store.load(pooled / point)
        rows = frame[frame["point"] == point].drop(columns=["point", "d"])
        pd.testing.assert_frame_equal(rows.reset_index(drop=True), alone)
    assert cli.main([*SWEEP, "--jobs", "2", "--out", str(pooled)]) == 0, "a re-run resumes"

    # `relulab report` on a sweep rebuilds its page and record from the points (issue 33): a
    # stale record is replaced, no reproduction index appears
    stale = json.loads((serial / "sweep.json").read_text())
    for point in stale["points"]:
        point.update(claims=[], finished=False)
    (serial / "sweep.json").write_text(json.dumps(stale))
    (serial / "sweep.html").unlink()
    assert cli.main(["report", str(serial)]) == 0
    rebuilt = json.loads((serial / "sweep.json").read_text())
    assert all(p["finished"] and p["claims"] for p in rebuilt["points"])
    assert [p["claims"] for p in rebuilt["points"]] == [p["claims"] for p in record["points"]]
    assert (serial / "sweep.html").is_file()
    assert not (serial / "index.html").exists() and not (serial / "scorecard.json").exists()


def test_a_unit_that_raises_is_reported_and_the_others_finish(tmp_path, toy, capsys):
    out, marker = tmp_path / "run", tmp_path / "disk-is-full"
    marker.touch()
    argv = ["run", "parallel-toy", "--quiet", "--set", "fail_unit=first"]
    argv += ["--set", f"fail_while={marker}", "--jobs", "2", "--out", str(out)]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "unit 'first' failed (IndexError: unit first fails on request)" in err
    assert "2 finished unit(s) are kept" in err
    assert set(_units(out)) == {"second", "third"}, "the units after the failing one finished"
    before = _units(out)

    marker.unlink()  # the transient cause is gone: the same command resumes
    assert cli.main(argv) == 0
    after = _units(out)
    assert {name: after[name] for name in before} == before, "finished units are not redone"
    fresh = tmp_path / "fresh"
    assert cli.main(["run", "parallel-toy", "--quiet", "--out", str(fresh)]) == 0
    _same_results(out, fresh)  # --jobs 2, interrupted and resumed = --jobs 1 in one go


def test_a_failing_point_is_reported_and_the_other_points_finish(tmp_path, toy, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "parallel-toy", "--grid", "fail_unit=none,third", "--quiet", "--jobs", "2"]
    assert cli.main([*argv, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sweep point fail_unit=third failed" in err
    assert "unit 'third' failed" in err
    assert (out / "fail_unit=none" / "summary.json").exists()
    assert set(_units(out / "fail_unit=third")) == {"first", "second"}
    record = json.loads((out / "sweep.json").read_text())
    assert [p["finished"] for p in record["points"]] == [True, False]
    assert "unit 'third' failed" in record["points"][1]["error"]
    assert "did not finish" in (out / "sweep.html").read_text()


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the workers may be children of a fork server)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


TOY_SWEEP = ["sweep", "parallel-toy", "--grid", "scale=1,2", "--quiet", "--threads", "1"]
TOY_POINTS = ("scale=1.0", "scale=2.0")
REGISTERING_DRIVER = (
    "import sys; from tests.runner import parallel_toy; from relulab import cli; "
    "from relulab.experiments import REGISTRY; "
    "REGISTRY['parallel-toy'] = parallel_toy.EXPERIMENT; raise SystemExit(cli.main(sys.argv[1:]))"
)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_kill_9_of_the_driver_mid_sweep_loses_no_finished_unit(tmp_path, toy):
    reference, out = tmp_path / "reference", tmp_path / "killed"
    assert cli.main([*TOY_SWEEP, "--out", str(reference)]) == 0

    argv = [*TOY_SWEEP, "--jobs", "2", "--out", str(out)]
    driver = subprocess.Popen(
        [sys.executable, "-c", REGISTERING_DRIVER, *argv],
        env=_environment(**{FAULT_ENV: "unit-saved:second", FAULT_SIGNAL_ENV: "STOP"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _, status = os.waitpid(driver.pid, os.WUNTRACED)  # frozen right after storing a unit
        assert os.WIFSTOPPED(status)
        workers = [pid for pid in _descendants(driver.pid) if _alive(pid)]
        assert workers, "the pool's workers are running"
    finally:
        driver.kill()
        driver.wait()
    stores = [point for point in TOY_POINTS if (out / point / "runs.sqlite").exists()]
    stored = {point: _units(out / point) for point in stores}
    assert any("second" in units for units in stored.values())
    assert not all((out / point / "summary.json").exists() for point in TOY_POINTS)

    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers), "workers outlive their killed driver"

    assert cli.main(argv) == 0, "the same command resumes"
    for point, units in stored.items():
        after = _units(out / point)
        assert {name: after[name] for name in units} == units, "a finished unit was redone"
    for point in TOY_POINTS:
        _same_results(reference / point, out / point)
