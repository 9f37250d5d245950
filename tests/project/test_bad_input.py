"""Bad input to every command: exit code 2, exactly one line on stderr, no traceback, nothing
on stdout, and not one file created or changed in the working directory (its whole tree is
hashed before and after). The working directory holds what a user's might: a foreign
directory, a plain file, runs of other configs, damaged, corrupt, tampered, unfinished and
busy stores, bad data files. Refused requests do no training, so the suite is fast."""

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from relulab import cli
from relulab.config import config_to_dict
from relulab.experiments import get_experiment
from relulab.store import RunStore, UnitResult

MODEL = "relulab.nn.examples:deep_mlp"
PROC = os.path.isdir("/proc/self")


def _fake_unit(n: int = 2) -> UnitResult:
    return UnitResult(
        [{"i": i} for i in range(n)],
        np.arange(3),
        {"singular": np.ones((n, 3))},
        {"sigma1": np.ones(n), "sigma1_over_sigma2": np.ones(n)},
        np.zeros(n, bool),
        np.full(n, -1),
    )


def _store(directory: Path, units=("activations", "leaky-sweep"), seed: int = 0) -> Path:
    """An anisotropy run store (quick preset, ``seed``) holding fake results for ``units``."""
    directory.mkdir()
    config = config_to_dict(get_experiment("anisotropy").presets["quick"])
    config["seed"] = seed
    with RunStore.create_or_resume(
        directory / "runs.sqlite", "anisotropy", "quick", config, {"torch": "x"}
    ) as store:
        for name in units:
            store.save_unit(name, _fake_unit())
    return directory / "runs.sqlite"


def _modules(root: Path) -> Path:
    modules = root / "modules"
    modules.mkdir()
    (modules / "r6_syntax_error.py").write_text("def make(:\n")
    (modules / "r6_raises_on_import.py").write_text("raise RuntimeError('broken at import')\n")
    (modules / "r6_factories.py").write_text(
        "from torch import nn\n"
        "def raises():\n    raise RuntimeError('cannot build')\n"
        "def needs_args(width):\n    return nn.Linear(width, 2)\n"
        "not_callable = 3\n"
        "def not_a_module():\n    return 'a string'\n"
        "def no_relu():\n    return nn.Sequential(nn.Linear(64, 4))\n"
        "class Broken(nn.Module):\n"
        "    def forward(self, x):\n        return x.no_such_method()\n"
        "def broken_forward():\n    return nn.Sequential(nn.Linear(64, 4), nn.ReLU(), Broken())\n"
        "import sys\n"
        "class Exits(nn.Module):\n"
        "    def forward(self, x):\n        sys.exit(0)\n"
        "def exits():\n    return nn.Sequential(nn.Linear(64, 4), nn.ReLU(), Exits())\n"
        "import os\n"
        "class ExitsAtOnce(nn.Module):\n"
        "    def forward(self, x):\n"
        "        try:\n            os._exit(0)\n        except Exception:\n            pass\n"
        "def exits_at_once():\n"
        "    return nn.Sequential(nn.Linear(64, 4), nn.ReLU(), ExitsAtOnce())\n"
        "class Interrupts(nn.Module):\n"
        "    def forward(self, x):\n        raise KeyboardInterrupt\n"
        "def interrupts():\n    return nn.Sequential(nn.Linear(64, 4), nn.ReLU(), Interrupts())\n"
    )
    (modules / "r6_exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    return modules


def _data(work: Path) -> None:
    np.save(work / "strings.npy", np.array(["a", "b"]))
    np.save(work / "scalar.npy", np.array(3.0))
    np.save(work / "all_nan.npy", np.full((4, 64), np.nan, np.float32))
    np.save(work / "some_inf.npy", np.array([[1.0] * 63 + [np.inf]] * 4, np.float32))
    np.save(work / "empty.npy", np.zeros((0, 64), np.float32))
    np.save(work / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (work / "corrupt.npy").write_bytes(b"not numpy at all")
    good = work / "good.npy"
    np.save(good, np.zeros((100, 64), np.float32))
    (work / "truncated.npy").write_bytes(good.read_bytes()[:400])
    good.unlink()
    (work / "corrupt.pt").write_bytes(b"not torch at all")
    torch.save({"a": 1}, work / "dict.pt")
    torch.save(torch.zeros(3, dtype=torch.complex64), work / "complex.pt")
    (work / "data.txt").write_text("1 2 3\n")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-input")
    work = root / "work"
    work.mkdir()
    (work / "thesis").mkdir()
    (work / "thesis" / "chapter1.tex").write_text("keep me")
    (work / "afile").write_text("a plain file")
    (work / "figure-dir.png").mkdir()
    _store(work / "run_other", seed=99)
    damaged = _store(work / "damaged")
    with sqlite3.connect(damaged) as connection:
        connection.execute("DROP TABLE networks")
    (work / "corrupt").mkdir()
    (work / "corrupt" / "runs.sqlite").write_bytes(b"precious bytes, not a database")
    (work / "empty_store").mkdir()
    (work / "empty_store" / "runs.sqlite").write_bytes(b"")
    _store(work / "unfinished", units=("activations",))
    tampered = _store(work / "tampered")
    with sqlite3.connect(tampered) as connection:
        connection.execute("UPDATE networks SET final = '{}' WHERE idx = 0")
    _store(work / "busy")
    (work / "lock_is_dir" / ".relulab.lock").mkdir(parents=True)
    (work / "lock_is_link").mkdir()
    (work / "lock_is_link" / ".relulab.lock").symlink_to(work / "outside.txt")
    (work / "reproduce_damaged").mkdir()
    _store(work / "reproduce_damaged" / "anisotropy")
    child = _store(work / "reproduce_damaged" / "broken")
    with sqlite3.connect(child) as connection:
        connection.execute("DROP TABLE unit_arrays")
    (work / "dangling").symlink_to(work / "nowhere")
    (work / "store_is_dir" / "runs.sqlite").mkdir(parents=True)
    (work / "dir.npy").mkdir()
    _data(work)
    modules = _modules(root)
    (work / "sweep_garbage").mkdir()
    (work / "sweep_garbage" / "sweep.json").write_text("{not json")
    (work / "sweep_escapes").mkdir()
    (work / "sweep_escapes" / "sweep.json").write_text(
        json.dumps({"experiment": "anisotropy", "grid": {}, "points": [{"name": "../busy"}]})
    )
    (work / "sweep_half").mkdir()
    _store(work / "sweep_half" / "d=4")
    _store(work / "sweep_half" / "d=6", units=("activations",))
    (work / "sweep_half" / "sweep.json").write_text(
        json.dumps(
            {
                "experiment": "anisotropy",
                "grid": {"d": ["4", "6"]},
                "points": [{"name": "d=4"}, {"name": "d=6"}],
            }
        )
    )
    (work / "reproduce_half").mkdir()
    _store(work / "reproduce_half" / "anisotropy")
    _store(work / "reproduce_half" / "other", units=("activations",))
    (work / "sweep_other").mkdir()
    (work / "sweep_other" / "sweep.json").write_text('{"experiment": "anisotropy", "points": []}')
    _directories_of_each_kind(work)
    with _held_by_another_process(work / "busy"):  # a live writer holds this run directory
        yield work, modules


@contextlib.contextmanager
def _held_by_another_process(directory: Path):
    """``directory``'s lock held by a live child process, as a second writer would hold it
    (this process's own locks nest, :func:`relulab.runner.locked`)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from relulab.runner import locked\n"
            "with locked(Path(sys.argv[1])):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(3600)\n",
            str(directory),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def _directories_of_each_kind(work: Path) -> None:
    """A plain sweep, a robustness run (interrupted: a sweep record with a ``preset`` reading;
    finished: ``robustness.json``) and a diagnose report, for the kind checks of issue 47."""
    (work / "sweep_plain").mkdir()
    (work / "sweep_plain" / "sweep.json").write_text(
        json.dumps(
            {
                "experiment": "anisotropy",
                "preset": "quick",
                "grid": {"d": ["4", "6"]},
                "fixed": [],
                "points": [{"name": "d=4"}, {"name": "d=6"}],
            }
        )
    )
    (work / "robustness_interrupted").mkdir()
    (work / "robustness_interrupted" / "sweep.json").write_text(
        json.dumps(
            {
                "experiment": "anisotropy",
                "preset": "quick",
                "grid": {"d": ["5"]},
                "points": [{"name": "preset"}, {"name": "d=5"}],
            }
        )
    )
    (work / "robustness_done").mkdir()
    (work / "robustness_done" / "robustness.json").write_text("{}")
    (work / "diagnosis").mkdir()
    (work / "diagnosis" / ".relulab-diagnose").write_text("written by relulab diagnose\n")
    (work / "diagnosis" / "probe.csv").write_text("init,mode\n")


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


CASES = {
    # list
    "list-extra-argument": (["list", "extra"], "unrecognized arguments"),
    # run: the request itself
    "run-no-experiment": (["run"], "required"),
    "run-unknown-experiment": (["run", "nope"], "unknown experiment"),
    "run-unknown-preset": (["run", "anisotropy", "--preset", "huge"], "unknown preset"),
    "run-unknown-option": (["run", "anisotropy", "--frobnicate"], "unrecognized arguments"),
    "run-set-without-value": (["run", "anisotropy", "--set", "d"], "expects key=value"),
    "run-unknown-key": (["run", "anisotropy", "--set", "wibble=1"], "unknown config key"),
    "run-wrong-type": (["run", "anisotropy", "--set", "d=many"], "expected an integer"),
    "run-bool-wrong": (["run", "prepost-ln", "--set", "dtype=float16"], "not one of"),
    "run-below-minimum": (["run", "anisotropy", "--set", "d=1"], "d must be at least 2"),
    "run-key-twice": (["run", "anisotropy", "--set", "d=4", "--set", "d=5"], "set twice"),
    "run-seed-negative": (["run", "anisotropy", "--seed", "-1"], "argument --seed"),
    "run-seed-2-63": (["run", "anisotropy", "--seed", str(2**63)], "argument --seed"),
    "run-set-seed-negative": (["run", "anisotropy", "--set", "seed=-1"], "[0, 2**63)"),
    "run-set-seed-2-63": (["run", "anisotropy", "--set", f"seed={2**63}"], "[0, 2**63)"),
    "run-seed-twice": (
        ["run", "anisotropy", "--set", "seed=1", "--seed", "2"],
        "seed is given twice",
    ),
    "run-nan": (["run", "anisotropy", "--set", "crossover_ratio=nan"], "finite"),
    "run-inf": (["run", "anisotropy", "--set", "crossover_ratio=-inf"], "finite"),
    "run-huge-float": (["run", "prepost-ln", "--set", "alphas=1e300"], "out of range"),
    "run-huge-int": (
        ["run", "single-neuron", "--set", "n_points=100000000000000000000"],
        "out of range",
    ),
    "run-width-1e12": (["run", "prepost-ln", "--set", "width=1000000000000"], "out of range"),
    "run-needs-more-memory": (["run", "prepost-ln", "--set", "width=100000000"], "of memory"),
    "run-memory-anisotropy": (["run", "anisotropy", "--set", "n_samples=2000000000"], "memory"),
    "run-memory-sample-variance": (
        ["run", "sample-variance", "--set", "widths=30,2000000000"],
        "of memory",
    ),
    "run-memory-bias-after-relu": (
        ["run", "bias-after-relu", "--set", "hidden=1000000000"],
        "of memory",
    ),
    "run-sweep-repeats": (["run", "prepost-ln", "--set", "alphas=1,1"], "distinct"),
    "run-shifts-0-0-0": (["run", "bias-after-relu", "--set", "shifts=0,0,0"], "distinct"),
    "run-empty-sweep": (["run", "prepost-ln", "--set", "alphas=,"], "comma-separated list"),
    "run-sample-variance-minimum": (
        ["run", "sample-variance", "--set", "histogram_width=2"],
        "histogram_width",
    ),
    "run-sample-variance-shallow": (
        ["run", "sample-variance", "--set", "depth=3", "--set", "histogram_layers=1,2"],
        "depth must be at least 4",
    ),
    "run-threads-0": (["run", "anisotropy", "--threads", "0"], "argument --threads"),
    "run-threads-100000": (["run", "anisotropy", "--threads", "100000"], "argument --threads"),
    "run-threads-text": (["run", "anisotropy", "--threads", "many"], "argument --threads"),
    "run-device-tpu": (["run", "anisotropy", "--device", "tpu"], "device"),
    "run-device-missing": (["run", "anisotropy", "--device", "cuda:7"], "cuda:7"),
    # run: the output directory
    "run-out-empty": (["run", "anisotropy", "--out", ""], "must not be empty"),
    "run-out-file": (["run", "anisotropy", "--out", "afile"], "is not a directory"),
    "run-out-under-file": (["run", "anisotropy", "--out", "afile/x"], "is a file"),
    "run-out-name-too-long": (["run", "anisotropy", "--out", "x" * 300], "over 255 bytes"),
    "run-out-foreign": (["run", "anisotropy", "--out", "thesis"], "holds no relulab run"),
    "run-out-other-config": (["run", "anisotropy", "--out", "run_other"], "different config"),
    "run-out-other-experiment": (
        ["run", "prepost-ln", "--out", "run_other"],
        "holds a run of 'anisotropy'",
    ),
    "run-out-damaged": (["run", "anisotropy", "--out", "damaged"], "damaged"),
    "run-out-corrupt": (["run", "anisotropy", "--out", "corrupt"], "not an SQLite file"),
    "run-out-busy": (["run", "anisotropy", "--out", "busy"], "in use by PID"),
    "run-one-epoch": (["run", "correlated-init", "--set", "sgd_epochs=1"], "sgd_epochs"),
    "run-eps-underflows": (["run", "single-neuron", "--set", "eps=1e-300"], "underflows to 0"),
    "run-sweep-item-underflows": (
        ["run", "single-neuron", "--set", "lr_sweep=0.1,1e-300"],
        "lr_sweep = 1e-300 underflows",
    ),
    "run-lock-is-directory": (["run", "anisotropy", "--out", "lock_is_dir"], "not a plain file"),
    "run-lock-is-symlink": (["run", "anisotropy", "--out", "lock_is_link"], "not a plain file"),
    "run-out-dangling-link": (["run", "anisotropy", "--out", "dangling"], "dangling"),
    "run-out-store-is-dir": (["run", "anisotropy", "--out", "store_is_dir"], "not a regular file"),
    "run-bias-window": (
        ["run", "bias-after-relu", "--set", "shifts=0,0.5,0.9"],
        "optimum_window",
    ),
    # reproduce
    "reproduce-unknown-only": (["reproduce", "--only", "nope"], "unknown experiment"),
    "reproduce-empty-only": (["reproduce", "--only", ","], "holds an empty name"),
    "reproduce-unknown-preset": (["reproduce", "--preset", "huge"], "unknown preset"),
    "reproduce-out-foreign": (["reproduce", "--out", "thesis"], "holds no relulab runs"),
    "reproduce-out-file": (["reproduce", "--out", "afile"], "is not a directory"),
    "reproduce-out-under-file": (["reproduce", "--out", "afile/r"], "is a file"),
    "reproduce-out-busy": (["reproduce", "--out", "busy"], "in use by PID"),
    "reproduce-threads": (["reproduce", "--threads", "100000"], "argument --threads"),
    "reproduce-seed": (["reproduce", "--seed", "-1"], "argument --seed"),
    # report
    "report-no-directory": (["report"], "required"),
    "report-missing": (["report", "missing"], "is not a directory"),
    "report-file": (["report", "afile"], "is not a directory"),
    "report-foreign": (["report", "thesis"], "holds no relulab run"),
    "report-damaged": (["report", "damaged"], "damaged"),
    "report-corrupt": (["report", "corrupt"], "not an SQLite file"),
    "report-empty-store": (["report", "empty_store"], "holds no results"),
    "report-unfinished": (["report", "unfinished"], "unfinished run"),
    "report-tampered": (["report", "tampered"], "checksum"),
    "report-busy": (["report", "busy"], "in use by PID"),
    "report-sweep-garbage": (["report", "sweep_garbage"], "not a readable sweep record"),
    "report-sweep-no-points": (["report", "sweep_other"], "not a readable sweep record"),
    "report-sweep-escapes": (["report", "sweep_escapes"], "is not a directory name"),
    "report-sweep-half-finished": (["report", "sweep_half"], "unfinished run"),
    "report-reproduce-half-finished": (["report", "reproduce_half"], "unfinished run"),
    "report-reproduce-with-damaged-run": (["report", "reproduce_damaged"], "damaged"),
    # run/reproduce: executors
    "run-jobs-0": (["run", "anisotropy", "--jobs", "0"], "argument --jobs"),
    "run-jobs-text": (["run", "anisotropy", "--jobs", "all"], "argument --jobs"),
    "run-executor-unknown": (["run", "anisotropy", "--executor", "dask"], "argument --executor"),
    "run-address-without-ray": (["run", "anisotropy", "--address", "x:1"], "--executor ray only"),
    "reproduce-jobs-huge": (["reproduce", "--jobs", "100000"], "argument --jobs"),
    # sweep
    "sweep-no-experiment": (["sweep"], "required"),
    "sweep-no-out": (["sweep", "anisotropy", "--grid", "d=4,6"], "required"),
    "sweep-no-grid": (["sweep", "anisotropy", "--out", "sw"], "at least one --grid"),
    "sweep-unknown-experiment": (["sweep", "nope", "--grid", "d=4", "--out", "sw"], "unknown"),
    "sweep-unknown-preset": (
        ["sweep", "anisotropy", "--preset", "huge", "--grid", "d=4", "--out", "sw"],
        "unknown preset",
    ),
    "sweep-unknown-key": (
        ["sweep", "anisotropy", "--grid", "wibble=1,2", "--out", "sw"],
        "unknown config key",
    ),
    "sweep-bad-value": (
        ["sweep", "anisotropy", "--grid", "d=4,many", "--out", "sw"],
        "expected an integer",
    ),
    "sweep-invalid-point": (
        ["sweep", "anisotropy", "--grid", "d=1,4", "--out", "sw"],
        "point d=1: d must be at least 2",
    ),
    "sweep-empty-grid": (["sweep", "anisotropy", "--grid", "d=", "--out", "sw"], "has no values"),
    "sweep-empty-values": (["sweep", "anisotropy", "--grid", "d=,,", "--out", "sw"], "no values"),
    "sweep-grid-no-equals": (["sweep", "anisotropy", "--grid", "d", "--out", "sw"], "key=v1"),
    "sweep-duplicate-key": (
        ["sweep", "anisotropy", "--grid", "d=4", "--grid", "d=6", "--out", "sw"],
        "given twice",
    ),
    "sweep-duplicate-value": (
        ["sweep", "anisotropy", "--grid", "d=4,4", "--out", "sw"],
        "4 is given twice",
    ),
    "sweep-same-value": (
        ["sweep", "anisotropy", "--grid", "crossover_ratio=2,2.0", "--out", "sw"],
        "same setting",
    ),
    "sweep-grid-and-set": (
        ["sweep", "anisotropy", "--grid", "d=4,6", "--set", "d=5", "--out", "sw"],
        "both --grid and --set",
    ),
    "sweep-seed-twice": (
        ["sweep", "anisotropy", "--grid", "seed=1,2", "--seed", "3", "--out", "sw"],
        "seed is given twice",
    ),
    "sweep-memory": (
        ["sweep", "anisotropy", "--grid", "n_samples=40,2000000000", "--out", "sw"],
        "memory",
    ),
    "sweep-too-many-points": (
        [
            "sweep",
            "anisotropy",
            "--grid",
            "seed=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39",
            "--grid",
            "d=4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39",
            "--out",
            "sw",
        ],
        "at most 1000",
    ),
    "sweep-out-foreign": (
        ["sweep", "anisotropy", "--grid", "d=4", "--out", "thesis"],
        "no relulab sweep",
    ),
    "sweep-out-run": (
        ["sweep", "anisotropy", "--grid", "d=4", "--out", "run_other"],
        "holds a relulab run, not a sweep",
    ),
    "sweep-out-file": (
        ["sweep", "anisotropy", "--grid", "d=4", "--out", "afile"],
        "not a directory",
    ),
    "sweep-out-busy": (["sweep", "anisotropy", "--grid", "d=4", "--out", "busy"], "in use by PID"),
    "sweep-out-other-sweep": (
        ["sweep", "prepost-ln", "--grid", "width=8", "--out", "sweep_other"],
        "holds a sweep of 'anisotropy'",
    ),
    "sweep-point-name-too-long": (
        [
            "sweep",
            "prepost-ln",
            "--grid",
            "alphas=1.0,2.0,3.0,4.0,5.0,6.0,7.0,8.0,9.0,10.0,11.0,12.0,13.0,14.0,15.0,16.0,17.0,18.0,19.0,20.0,21.0,22.0,23.0,24.0,25.0,26.0,27.0,28.0,29.0,30.0,31.0,32.0,33.0,34.0,35.0,36.0,37.0,38.0,39.0,40.0,41.0,42.0,43.0,44.0,45.0,46.0,47.0,48.0,49.0,50.0,51.0,52.0,53.0,54.0,55.0,56.0,57.0,58.0,59.0;1,2",
            "--out",
            "sw",
        ],
        "over 255 bytes",
    ),
    "sweep-jobs-0": (
        ["sweep", "anisotropy", "--grid", "d=4", "--jobs", "0", "--out", "sw"],
        "--jobs",
    ),
    "sweep-address-without-ray": (
        ["sweep", "anisotropy", "--grid", "d=4", "--address", "x:1", "--out", "sw"],
        "--executor ray only",
    ),
    # bench (its workloads must never start: see the fixture below)
    "bench-unknown-workload": (["bench", "--workloads", "w9"], "unknown workload"),
    "bench-no-workload": (["bench", "--workloads", ","], "holds an empty name"),
    "bench-out-directory": (["bench", "--out", "thesis"], "is a directory"),
    "bench-out-under-file": (["bench", "--out", "afile/bench.json"], "is a file"),
    "bench-out-empty": (["bench", "--out", ""], "must not be empty"),
    "bench-remedies-out-empty": (["bench", "remedies", "--out", ""], "must not be empty"),
    "bench-threads": (["bench", "--threads", "100000"], "argument --threads"),
    "bench-device": (["bench", "--device", "tpu"], "device"),
    "bench-naive-0": (["bench", "--naive-networks", "0"], "argument --naive-networks"),
    "bench-naive-41": (["bench", "--naive-networks", "41"], "argument --naive-networks"),
    # theory
    "theory-no-topic": (["theory"], "required"),
    "theory-q0-negative": (["theory", "phase-diagram", "--q0", "-1"], "argument --q0"),
    "theory-q0-zero": (["theory", "phase-diagram", "--q0", "0"], "argument --q0"),
    "theory-k-nan": (["theory", "phase-diagram", "--k", "nan"], "argument --k"),
    "theory-k-below-minus-1": (["theory", "phase-diagram", "--k", "-2"], "argument --k"),
    "theory-shift-nan": (["theory", "phase-diagram", "--shift", "nan"], "argument --shift"),
    "theory-slope-inf": (["theory", "phase-diagram", "--slope", "inf"], "argument --slope"),
    "theory-grid-huge": (["theory", "phase-diagram", "--grid", "10000000"], "argument --grid"),
    "theory-grid-1": (["theory", "phase-diagram", "--grid", "1"], "argument --grid"),
    "theory-activation": (["theory", "phase-diagram", "--activation", "nope"], "unknown"),
    "theory-out-suffix": (["theory", "phase-diagram", "--out", "x.txt"], "must end in .png"),
    "theory-out-directory": (["theory", "phase-diagram", "--out", "figure-dir.png"], "directory"),
    "theory-out-under-file": (["theory", "phase-diagram", "--out", "afile/x.png"], "is a file"),
    "theory-depth-0": (["theory", "sample-variance", "--depth", "0"], "argument --depth"),
    "theory-depth-huge": (
        ["theory", "sample-variance", "--depth", "1000000000"],
        "argument --depth",
    ),
    # diagnose: the model
    "diagnose-no-model": (["diagnose"], "required"),
    "diagnose-bad-spec": (["diagnose", "relulab.nn.examples"], "module.path:factory"),
    "diagnose-no-module": (["diagnose", "no.such.module:make"], "cannot load"),
    "diagnose-no-factory": (["diagnose", "relulab.nn.examples:nothing"], "no attribute"),
    "diagnose-syntax-error": (["diagnose", "r6_syntax_error:make"], "SyntaxError"),
    "diagnose-import-raises": (["diagnose", "r6_raises_on_import:make"], "broken at import"),
    "diagnose-factory-raises": (["diagnose", "r6_factories:raises"], "cannot build"),
    "diagnose-factory-needs-args": (["diagnose", "r6_factories:needs_args"], "without arguments"),
    "diagnose-not-callable": (["diagnose", "r6_factories:not_callable"], "not a factory"),
    "diagnose-not-a-module": (["diagnose", "r6_factories:not_a_module"], "not an nn.Module"),
    "diagnose-no-relu": (["diagnose", "r6_factories:no_relu"], "no ReLU-family"),
    "diagnose-broken-forward": (["diagnose", "r6_factories:broken_forward"], "probing"),
    # diagnose: the data
    "diagnose-missing-data": (["diagnose", MODEL, "--data", "missing.npy"], "no data file"),
    "diagnose-data-directory": (["diagnose", MODEL, "--data", "dir.npy"], "no data file"),
    "diagnose-data-suffix": (["diagnose", MODEL, "--data", "data.txt"], ".npy or .pt"),
    "diagnose-strings": (["diagnose", MODEL, "--data", "strings.npy"], "expected numbers"),
    "diagnose-0-d": (["diagnose", MODEL, "--data", "scalar.npy"], "single number"),
    "diagnose-all-nan": (["diagnose", MODEL, "--data", "all_nan.npy"], "NaN or infinite"),
    "diagnose-some-inf": (["diagnose", MODEL, "--data", "some_inf.npy"], "NaN or infinite"),
    "diagnose-empty": (["diagnose", MODEL, "--data", "empty.npy"], "no samples"),
    "diagnose-objects": (["diagnose", MODEL, "--data", "objects.npy"], "Python objects"),
    "diagnose-corrupt-npy": (["diagnose", MODEL, "--data", "corrupt.npy"], "not a .npy file"),
    "diagnose-truncated-npy": (["diagnose", MODEL, "--data", "truncated.npy"], "damaged"),
    "diagnose-corrupt-pt": (["diagnose", MODEL, "--data", "corrupt.pt"], "not a .pt file"),
    "diagnose-dict-pt": (["diagnose", MODEL, "--data", "dict.pt"], "expected a tensor"),
    "diagnose-complex-pt": (["diagnose", MODEL, "--data", "complex.pt"], "real numbers"),
    "diagnose-wrong-shape": (["diagnose", MODEL, "--input-shape", "7"], "could not run"),
    "diagnose-shape-text": (["diagnose", MODEL, "--input-shape", "3,x"], "integers"),
    "diagnose-shape-zero": (["diagnose", MODEL, "--input-shape", "0"], "positive"),
    "diagnose-too-big": (
        ["diagnose", MODEL, "--samples", "10000000", "--input-shape", "100000,100"],
        "of memory",
    ),
    "diagnose-samples-0": (["diagnose", MODEL, "--samples", "0"], "argument --samples"),
    "diagnose-seed": (["diagnose", MODEL, "--seed", "-1"], "argument --seed"),
    "diagnose-init": (["diagnose", MODEL, "--init", "he"], "unknown init"),
    # diagnose: the output directory
    "diagnose-out-foreign": (["diagnose", MODEL, "--out", "thesis"], "no relulab diagnose"),
    "diagnose-out-run": (["diagnose", MODEL, "--out", "run_other"], "no relulab diagnose"),
    "diagnose-out-file": (["diagnose", MODEL, "--out", "afile"], "is not a directory"),
    "diagnose-out-under-file": (["diagnose", MODEL, "--out", "afile/d"], "is a file"),
    "diagnose-out-busy": (["diagnose", MODEL, "--out", "busy"], "in use by PID"),
    # diagnose: user code that ends the process is a failed probe, not a silent success
    "diagnose-model-exits": (["diagnose", "r6_factories:exits"], "called sys.exit(0)"),
    "diagnose-model-interrupts": (
        ["diagnose", "r6_factories:interrupts"],
        "raised KeyboardInterrupt",
    ),
    "diagnose-module-exits": (["diagnose", "r6_exits_on_import:make"], "(SystemExit: 3)"),
    # export: the log directory and the run
    "export-no-run": (["export", "--tensorboard", "tb"], "required"),
    "export-empty-logdir": (["export", "--tensorboard", "", "run_other"], "must not be empty"),
    "export-logdir-file": (["export", "--tensorboard", "afile", "run_other"], "not a directory"),
    "export-logdir-under-file": (["export", "--tensorboard", "afile/tb", "run_other"], "is a file"),
    "export-foreign-run": (["export", "--tensorboard", "tb", "thesis"], "holds no relulab run"),
    "export-busy-run": (["export", "--tensorboard", "tb", "busy"], "in use by PID"),
    "export-tampered": (["export", "--tensorboard", "tb", "tampered"], "checksum"),
}
if PROC:
    CASES.update(
        {
            "run-out-proc": (["run", "anisotropy", "--out", "/proc/relulab-x"], "cannot write"),
            "bench-out-proc": (["bench", "--out", "/proc/relulab-x.json"], "cannot write"),
            "theory-out-proc": (
                ["theory", "phase-diagram", "--out", "/proc/relulab-x.png"],
                "cannot write",
            ),
            "diagnose-out-proc": (["diagnose", MODEL, "--out", "/proc/relulab-x"], "cannot write"),
            "bench-out-read-only-file": (["bench", "--out", "/proc/version"], "cannot be written"),
            "export-logdir-proc": (
                ["export", "--tensorboard", "/proc/relulab-tb", "run_other"],
                "cannot write",
            ),
        }
    )

# Issue 47: every directory a command writes is refused unless it holds the same kind (and, for
# a sweep or robustness run, the same request); an empty path or list is never a default.
CASES.update(
    {
        "robustness-out-plain-sweep": (
            ["robustness", "anisotropy", "--out", "sweep_plain"],
            "holds a relulab sweep, not a robustness run",
        ),
        "robustness-out-run": (
            ["robustness", "anisotropy", "--out", "run_other"],
            "holds a relulab run, not a robustness run",
        ),
        "robustness-out-diagnosis": (
            ["robustness", "anisotropy", "--out", "diagnosis"],
            "holds a relulab diagnose report",
        ),
        "sweep-out-robustness-interrupted": (
            ["sweep", "anisotropy", "--grid", "d=5", "--out", "robustness_interrupted"],
            "holds a relulab robustness run, not a sweep",
        ),
        "sweep-out-robustness-done": (
            ["sweep", "anisotropy", "--grid", "d=5", "--out", "robustness_done"],
            "holds a relulab robustness run, not a sweep",
        ),
        "sweep-out-narrower-grid": (
            ["sweep", "anisotropy", "--grid", "d=4", "--out", "sweep_plain"],
            "may only widen",
        ),
        "sweep-out-other-key": (
            ["sweep", "anisotropy", "--grid", "n_samples=100", "--out", "sweep_plain"],
            "may only widen",
        ),
        "sweep-out-other-preset": (
            ["sweep", "anisotropy", "--preset", "paper", "--grid", "d=4,6", "--out", "sweep_plain"],
            "with preset quick",
        ),
        "sweep-out-other-set": (
            [
                "sweep",
                "anisotropy",
                "--grid",
                "d=4,6",
                "--set",
                "n_samples=100",
                "--out",
                "sweep_plain",
            ],
            "with --set []",
        ),
        "reproduce-out-sweep": (
            ["reproduce", "--out", "sweep_plain"],
            "holds a relulab sweep, not a reproduction",
        ),
        "reproduce-out-run": (
            ["reproduce", "--out", "run_other"],
            "holds a relulab run, not a reproduction",
        ),
        "run-out-sweep": (
            ["run", "anisotropy", "--out", "sweep_plain"],
            "holds a relulab sweep, not a run",
        ),
        "run-out-diagnosis": (
            ["run", "anisotropy", "--out", "diagnosis"],
            "holds a relulab diagnose report, not a run",
        ),
        "diagnose-out-sweep": (
            ["diagnose", MODEL, "--out", "sweep_plain"],
            "holds a relulab sweep, not a diagnose report",
        ),
        "diagnose-out-run": (
            ["diagnose", MODEL, "--out", "run_other"],
            "holds a relulab run, not a diagnose report",
        ),
        "robustness-out-empty": (["robustness", "anisotropy", "--out", ""], "must not be empty"),
        "robustness-fields-empty": (
            ["robustness", "anisotropy", "--fields", ""],
            "must not be empty",
        ),
        "robustness-fields-empty-name": (
            ["robustness", "anisotropy", "--fields", "d,,n_samples"],
            "holds an empty name",
        ),
        "report-robustness-empty": (
            ["report", "run_other", "--robustness", ""],
            "must not be empty",
        ),
        "reproduce-robustness-empty": (["reproduce", "--robustness", " "], "must not be empty"),
        "rejudge-robustness-empty": (["rejudge", "run_other", "--robustness", ""], "empty"),
        "diagnose-out-empty": (["diagnose", MODEL, "--out", ""], "must not be empty"),
        "diagnose-data-empty": (["diagnose", MODEL, "--data", ""], "must not be empty"),
        "diagnose-compare-inits-empty-name": (
            ["diagnose", MODEL, "--compare-inits", "he,"],
            "holds an empty name",
        ),
        "sweep-out-empty": (["sweep", "anisotropy", "--grid", "d=4", "--out", ""], "empty"),
        "export-units-empty": (
            ["export", "--tensorboard", "tb", "--units", "", "run_other"],
            "must not be empty",
        ),
        "export-units-empty-name": (
            ["export", "--tensorboard", "tb", "--units", ",", "run_other"],
            "holds an empty name",
        ),
        "bench-workloads-empty-name": (["bench", "--workloads", "w1,,w2"], "holds an empty name"),
    }
)

COMMANDS = (
    "list",
    "run",
    "reproduce",
    "report",
    "rejudge",
    "sweep",
    "robustness",
    "bench",
    "theory",
    "diagnose",
    "export",
)


def test_every_command_is_covered():
    assert {args[0] for args, _ in CASES.values() if args} == set(COMMANDS)


@pytest.fixture
def in_workspace(workspace, monkeypatch):
    work, modules = workspace
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)

    def never(*args, **kwargs):
        raise AssertionError("bench started its workloads before refusing")

    monkeypatch.setattr("relulab.bench.run_bench", never)
    return work


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_refused_in_one_line_and_writes_nothing(in_workspace, capsys, case):
    argv, message = CASES[case]
    before = _tree_digest(in_workspace)
    try:
        code = cli.main(argv)
    except SystemExit as exit_:  # argparse's refusals
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("relulab: error:") and err.count("\n") == 1, err
    assert message in err, err
    assert "Traceback" not in err and out == ""
    assert _tree_digest(in_workspace) == before, "a refused request changed the directory"


def test_executor_ray_without_ray_is_refused_in_one_line_and_writes_nothing(
    in_workspace, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    for argv in (
        ["run", "anisotropy", "--executor", "ray", "--out", "r"],
        ["sweep", "anisotropy", "--grid", "d=4,6", "--executor", "ray", "--out", "s"],
        ["reproduce", "--only", "anisotropy", "--executor", "ray", "--out", "p"],
    ):
        before = _tree_digest(in_workspace)
        assert cli.main(argv) == 2
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and "pip install 'relulab[ray]'" in err and out == ""
        assert _tree_digest(in_workspace) == before


def test_ray_address_nothing_listens_at_is_refused_before_ray_init(
    in_workspace, capsys, monkeypatch
):
    """Issue 33: a bad ``--address`` (or ``RAY_ADDRESS``) is refused in one line by a TCP probe,
    before ``ray.init`` — which would retry for minutes printing Ray's log lines."""

    def init(**_: object) -> None:
        raise AssertionError("ray.init must not be reached for an address nobody listens at")

    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(init=init))
    cases = (
        (["--address", "127.0.0.1:1"], {}, "cannot connect to Ray at 127.0.0.1:1"),
        (["--address", "ray://127.0.0.1:1"], {}, "cannot connect to Ray at ray://127.0.0.1:1"),
        (["--address", "no-port"], {}, "expected host:port"),
        ([], {"RAY_ADDRESS": "127.0.0.1:1"}, "cannot connect to Ray at 127.0.0.1:1"),
    )
    for extra, env, message in cases:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        before = _tree_digest(in_workspace)
        assert cli.main(["run", "anisotropy", "--executor", "ray", *extra, "--out", "r"]) == 2
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and message in err and out == "", err
        assert _tree_digest(in_workspace) == before


def test_a_model_calling_os_exit_is_a_failed_probe_not_a_silent_success(workspace):
    """Run in a child process: were ``os._exit`` not intercepted, it would end the test run."""
    work, modules = workspace
    before = _tree_digest(work)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(modules), *sys.path])}
    child = subprocess.run(
        [sys.executable, "-m", "relulab", "diagnose", "r6_factories:exits_at_once"],
        cwd=work,
        env={**environment, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
    )
    assert child.returncode == 2, child.stderr
    assert child.stderr.count("\n") == 1 and "called os._exit(0)" in child.stderr
    assert _tree_digest(work) == before
