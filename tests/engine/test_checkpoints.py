"""In-unit training checkpoints (relulab.engine.checkpoint): a training interrupted after a
checkpoint and resumed ends bit for bit where an uninterrupted one ends — in process, and for a
real ``relulab run init-training`` killed with SIGKILL after its first checkpoint; a checkpoint
taken under another identity is ignored, with a warning, and the training starts over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import relulab
from relulab.engine import (
    BatchedAdam,
    BatchedSGD,
    FunctionalFamily,
    FunctionalProblem,
    Minibatches,
    PerNetworkBatches,
    train,
)
from relulab.engine.checkpoint import CHECKPOINT_DIRNAME, CHECKPOINT_EVERY_ENV, FileCheckpoint
from relulab.faults import FAULT_ENV
from relulab.store import RunStore

IDENTITY = {"config": "abc", "relulab": "test"}
STEPS, EVERY = 10, 3


class _InterruptedError(Exception):
    pass


class _DiesAt:
    """A stream that raises after ``batches`` batches (a kill, in process)."""

    def __init__(self, stream: PerNetworkBatches, batches: int) -> None:
        self.stream, self.left = stream, batches

    def __next__(self):
        if self.left == 0:
            raise _InterruptedError
        self.left -= 1
        return next(self.stream)

    def state_dict(self):
        return self.stream.state_dict()

    def load_state_dict(self, state) -> None:
        self.stream.load_state_dict(state)


def _setup(optimiser: str, dies_at: int | None = None):
    """Two small convolutional networks with BatchNorm, each its own augmented stream."""
    torch.manual_seed(0)
    net = lambda: nn.Sequential(  # noqa: E731
        nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(12, 2)
    )
    family = FunctionalFamily(net, 2, seeds=[1, 2], execution="loop-channels-last")
    data = torch.Generator().manual_seed(5)
    x, y = torch.randn(10, 1, 4, 4, generator=data), torch.randint(0, 2, (10,), generator=data)

    def flip(xb, yb, generator):  # augmentation drawn from the stream's generator
        keep = torch.rand(len(xb), generator=generator) < 0.5
        return torch.where(keep[:, None, None, None], xb, xb.flip(-1)), yb

    streams = [Minibatches(x, y, 4, torch.Generator().manual_seed(j), flip) for j in range(2)]
    batches = PerNetworkBatches(streams, [0, 1])
    stream = batches if dies_at is None else _DiesAt(batches, dies_at)
    problem = FunctionalProblem(family, stream, "cross_entropy", per_network=True)
    lrs = [0.05, 0.1]
    if optimiser == "sgd":
        return problem, BatchedSGD(problem.params, lrs, momentum=0.9)
    return problem, BatchedAdam(problem.params, lrs)


def _train(optimiser: str, checkpoint=None, dies_at=None):
    problem, opt = _setup(optimiser, dies_at)
    result = train(problem, opt, STEPS, 2, checkpoint=checkpoint, threads=1)
    return result, problem


def _equal(a, b) -> None:
    (ra, pa), (rb, pb) = a, b
    for name in ra.curves:
        np.testing.assert_array_equal(ra.curves[name], rb.curves[name])
    for p, q in zip(pa.params, pb.params, strict=True):
        assert torch.equal(p, q)
    for name, buffer in pa.family.buffers.items():
        assert torch.equal(buffer, pb.family.buffers[name])


@pytest.mark.parametrize("optimiser", ["sgd", "adam"])
def test_an_interrupted_training_resumes_bit_for_bit(tmp_path, optimiser):
    uninterrupted = _train(optimiser)
    checkpoint = FileCheckpoint(tmp_path / "part.pt", IDENTITY, EVERY)
    with pytest.raises(_InterruptedError):  # dies during step 7, after the checkpoint at step 6
        _train(optimiser, checkpoint, dies_at=7)
    assert torch.load(checkpoint.path, weights_only=False)["state"]["step"] == 6
    resumed = _train(optimiser, checkpoint)
    _equal(resumed, uninterrupted)
    again = _train(optimiser, checkpoint, dies_at=0)  # finished: its result, not one step
    _equal(again, uninterrupted)


def test_a_checkpoint_of_another_run_is_ignored_with_a_warning(tmp_path):
    uninterrupted = _train("sgd")
    taken = FileCheckpoint(tmp_path / "part.pt", IDENTITY, EVERY)
    with pytest.raises(_InterruptedError):
        _train("sgd", taken, dies_at=7)
    other = FileCheckpoint(taken.path, {**IDENTITY, "relulab": "another commit"}, EVERY)
    with pytest.warns(RuntimeWarning, match="another run.*relulab test → another commit"):
        restarted = _train("sgd", other)
    _equal(restarted, uninterrupted)
    taken.path.write_bytes(b"truncated")
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        _equal(_train("sgd", taken), uninterrupted)


def test_a_stream_without_state_is_refused(tmp_path):
    problem, opt = _setup("sgd")
    problem.batches = (batch for batch in problem.batches)  # a generator cannot say where
    checkpoint = FileCheckpoint(tmp_path / "part.pt", IDENTITY, EVERY)
    with pytest.raises(ValueError, match="resumable minibatch stream"):
        train(problem, opt, STEPS, 2, checkpoint=checkpoint)


# --- a real run, killed with SIGKILL after its first checkpoint --------------------------------
TINY = [
    "--set=tasks=cifar10",
    "--set=inits=scale,scale_bias",
    "--set=optimisers=sgd",
    "--set=sgd_lrs=0.001",
    "--set=n_seeds=3",
    "--set=steps=6",
    "--set=record_every=2",
    "--set=cifar_batch=4",
    "--set=init_batches=1",
    "--set=probe_images=4",
    "--set=ratio_networks=3",
    "--set=ratio_images=4",
    "--set=ratio_batch=4",
    "--set=ratio_chunk=3",
    "--set=allcnn_width=0.03",
]
KILLED_UNIT = "train-cifar10-sgd-scale"


def _run(out: Path, **environment: str) -> subprocess.CompletedProcess:
    source = str(Path(relulab.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "relulab", "run", "init-training", "--preset", "quick"]
    command += ["--quiet", "--threads", "1", *TINY, "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    env |= {"PYTHONPATH": path, CHECKPOINT_EVERY_ENV: "2", **environment}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _units(out: Path) -> dict:
    with RunStore.open(out / "runs.sqlite") as store:
        units = {name: store.unit(name) for name in store.done_units()}
    return {
        name: (
            unit.conditions,
            unit.steps.tolist(),
            {k: v.tobytes() for k, v in unit.curves.items()},
            {k: v.tobytes() for k, v in unit.final.items()},
            {k: v.tobytes() for k, v in unit.arrays.items()},
        )
        for name, unit in units.items()
    }


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_kill_9_after_the_first_checkpoint_then_resume_equals_an_uninterrupted_run(tmp_path):
    reference, out = tmp_path / "reference", tmp_path / "killed"
    assert _run(reference).returncode == 0
    killed = _run(out, **{FAULT_ENV: f"checkpoint-saved:{KILLED_UNIT}"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    checkpoints = out / CHECKPOINT_DIRNAME / KILLED_UNIT
    assert [p.name for p in checkpoints.iterdir()] == ["networks-0.pt"]
    assert torch.load(checkpoints / "networks-0.pt", weights_only=False)["state"]["step"] == 2
    with RunStore.open(out / "runs.sqlite") as store:
        assert KILLED_UNIT not in store.done_units()
    resumed = _run(out)
    assert resumed.returncode == 0, resumed.stderr
    assert "ignoring checkpoint" not in resumed.stderr
    assert _units(out) == _units(reference)
    assert not (out / CHECKPOINT_DIRNAME).exists()  # removed as the units finished
