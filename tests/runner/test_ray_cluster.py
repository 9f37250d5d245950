"""``--executor ray`` on a real local Ray cluster that this test starts (``ray start --head
--block`` on 127.0.0.1, a free port, 2 CPUs) and stops: a sweep run as Ray tasks stores exactly
what ``--jobs 1`` stores (claims, metrics, unit payloads), and a unit that keeps failing is
reported after Ray's retries while the other units are stored. Skipped only where Ray is not
installed (``pip install relulab[ray]``; the ``test`` extra includes it)."""

import builtins
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import relulab
from relulab import cli
from relulab.experiments import REGISTRY
from relulab.store import RunStore
from tests.runner import parallel_toy

ray = pytest.importorskip("ray")

SIZES = ["--set=D=12", "--set=n_samples=40", "--set=slopes=5", "--set=spectrum_points=5"]
SWEEP = ["sweep", "anisotropy", "--grid", "d=4,6", "--quiet", "--threads", "1", *SIZES]
POINTS = ("d=4", "d=6")
AUTH_MODE = "RAY_AUTH_MODE"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def cluster():
    """The address of a 2-CPU Ray head on 127.0.0.1 whose workers import this checkout."""
    port = _free_port()
    source = str(Path(relulab.__file__).resolve().parents[1])
    tests = str(Path(__file__).resolve().parents[2])  # holds the tests package (parallel_toy)
    temp = tempfile.mkdtemp(prefix="rl-ray-", dir="/tmp")  # Ray's socket paths must be short
    # Ray ≥ 2.52 turns token authentication on when it finds a token (~/.ray/auth_token) left
    # by an earlier local cluster; this private one on 127.0.0.1 and its driver (this process)
    # run without, whatever the user's home holds.
    saved = os.environ.get(AUTH_MODE)
    # Ray's driver swaps builtins.print for its own (tqdm_ray.safe_print) once it joins a
    # cluster and never puts it back; later tests in this process must see Python's own.
    printer = builtins.print
    os.environ[AUTH_MODE] = "disabled"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join((source, tests))}
    head = subprocess.Popen(
        [
            shutil.which("ray") or "ray",
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--num-cpus=2",
            "--node-ip-address=127.0.0.1",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not _listening(port):
            assert head.poll() is None, "ray start --head failed"
            assert time.monotonic() < deadline, "the Ray head did not come up in 90 s"
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        head.send_signal(signal.SIGTERM)  # --block: the head stops every process it started
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)
        builtins.print = printer
        if saved is None:
            os.environ.pop(AUTH_MODE, None)
        else:
            os.environ[AUTH_MODE] = saved


def _checksums(run_dir: Path) -> dict:
    with RunStore.open(run_dir / "runs.sqlite") as store:
        return store.unit_checksums()


def test_a_sweep_on_a_ray_cluster_equals_jobs_1(tmp_path, cluster):
    serial, on_ray = tmp_path / "serial", tmp_path / "ray"
    assert cli.main([*SWEEP, "--out", str(serial)]) == 0
    assert cli.main([*SWEEP, "--executor", "ray", "--address", cluster, "--out", str(on_ray)]) == 0
    for point in POINTS:
        first, second = (
            json.loads((d / point / "summary.json").read_text()) for d in (serial, on_ray)
        )
        assert first["claims"] == second["claims"]
        assert first["metrics"] == second["metrics"]
        assert _checksums(serial / point) == _checksums(on_ray / point)
        assert {unit["threads"] for unit in second["units"].values()} == {1}
    assert (on_ray / "sweep.html").is_file()


def test_a_unit_that_keeps_failing_on_ray_is_reported_and_the_others_are_kept(
    tmp_path, cluster, monkeypatch, capsys
):
    monkeypatch.setitem(REGISTRY, parallel_toy.EXPERIMENT.name, parallel_toy.EXPERIMENT)
    out = tmp_path / "run"
    argv = ["run", "parallel-toy", "--quiet", "--set", "fail_unit=second", "--out", str(out)]
    assert cli.main([*argv, "--executor", "ray", "--address", cluster]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "unit 'second' failed" in err and "fails on request" in err
    assert set(_checksums(out)) == {"first", "third"}
