"""In-unit training checkpoints: a killed training resumes from its last checkpoint and ends bit
for bit where an uninterrupted one ends.

:func:`~relulab.engine.train` given a :class:`FileCheckpoint` saves, every ``every`` steps,
everything the rest of the loop depends on — the parameters and buffers (BatchNorm statistics),
the optimiser's state (:meth:`~relulab.engine.BatchedSGD.state_dict`), the minibatch stream's
position (:meth:`~relulab.engine.Minibatches.state_dict`), torch's global random states, and the
loop's own: the step, the recordings so far, which networks are frozen and since when — and
when the loop ends, its result. Given the file again, ``train`` restores all of it in place
(the family's per-network loop copies alias the parameters and keep doing so) and continues;
a finished training returns its saved result without a step.

A file is written atomically (:func:`relulab.files.replacing`) and carries an *identity*: the
experiment, unit and part, a hash of the config, relulab's commit, torch's version, the device,
dtype and thread count. A checkpoint whose identity differs from the run's (another commit,
config, thread count) is not resumed: it is ignored with a warning and the training starts
over, because its state would not continue the same computation bit for bit. The runner puts a
unit's checkpoints in ``OUT/.relulab-checkpoints/<unit>/`` (:meth:`RunContext.checkpoint
<relulab.experiments.context.RunContext.checkpoint>`) and removes them once the unit's result
is stored (:func:`remove_checkpoints`). Files are read with ``torch.load(weights_only=False)``:
they are relulab's own, in a run directory the user writes.
"""

from __future__ import annotations

import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

from relulab.faults import fault_point
from relulab.files import replacing
from relulab.reading import InputFileError, check_input_file

__all__ = [
    "CHECKPOINT_DIRNAME",
    "CHECKPOINT_EVERY_ENV",
    "DEFAULT_EVERY",
    "FileCheckpoint",
    "checkpoint_every",
    "load_problem_state",
    "problem_state",
    "remove_checkpoints",
    "unit_checkpoint_dir",
]

#: a run directory's checkpoint area (relulab's scaffolding, removed as units finish)
CHECKPOINT_DIRNAME = ".relulab-checkpoints"
#: the environment variable that sets the steps between checkpoints (0: none)
CHECKPOINT_EVERY_ENV = "RELULAB_CHECKPOINT_EVERY"
#: steps between checkpoints by default: init-training's cpu units step in ≈ 0.5–1 s, so a
#: kill costs at most a minute or two, and a save (kilobytes to megabytes) costs nothing
DEFAULT_EVERY = 100
_FORMAT = 1


def checkpoint_every() -> int:
    """Steps between checkpoints: ``RELULAB_CHECKPOINT_EVERY`` or :data:`DEFAULT_EVERY`.

    Example:
        >>> checkpoint_every() >= 0
        True
    """
    value = os.environ.get(CHECKPOINT_EVERY_ENV, "").strip()
    if not value:
        return DEFAULT_EVERY
    if not value.isdigit():
        raise ValueError(f"{CHECKPOINT_EVERY_ENV} must be a whole number of steps, got {value!r}")
    return int(value)


def unit_checkpoint_dir(root: Path, unit: str) -> Path:
    """Where unit ``unit``'s checkpoints live under a run's checkpoint area ``root``."""
    return Path(root) / unit


def remove_checkpoints(out_dir: Path, unit: str | None = None) -> None:
    """Remove unit ``unit``'s checkpoints from run directory ``out_dir`` (its result is
    stored), or with ``unit=None`` the checkpoint area itself if no unit has any left."""
    root = Path(out_dir) / CHECKPOINT_DIRNAME
    if unit is not None:
        shutil.rmtree(unit_checkpoint_dir(root, unit), ignore_errors=True)
        return
    try:
        root.rmdir()
    except OSError:
        pass  # absent, or a failed unit's checkpoints wait for the re-run


@dataclass
class FileCheckpoint:
    """One training's checkpoint file (module docstring).

    Attributes:
        path: the file.
        identity: what must match for the file to be resumed (strings).
        every: save every this many steps (0: never during training; the result still is).
        label: the name of the fault point after a save, ``checkpoint-saved:<label>``
            (:mod:`relulab.faults`, for tests that ``kill -9`` there).
    """

    path: Path
    identity: dict[str, str]
    every: int = DEFAULT_EVERY
    label: str = ""

    def load(self) -> dict[str, Any] | None:
        """The saved state, or ``None`` when there is none to resume (absent, unreadable,
        or taken under another identity: a warning says which and that training starts
        over)."""
        if not self.path.exists():
            return None
        try:
            check_input_file(self.path, "checkpoint")  # a FIFO or device would hang torch.load
        except InputFileError as error:
            self._ignore(f"it cannot be read ({error})")
            return None
        try:
            saved = torch.load(self.path, map_location="cpu", weights_only=False)
            identity, state = saved["identity"], saved["state"]
        except Exception as error:  # a truncated or foreign file: start over
            self._ignore(f"it cannot be read ({type(error).__name__})")
            return None
        if identity != self.identity:
            keys = sorted({*identity, *self.identity})
            changed = [k for k in keys if identity.get(k) != self.identity.get(k)]
            details = ", ".join(f"{k} {identity.get(k)} → {self.identity.get(k)}" for k in changed)
            self._ignore(f"it was taken under another run ({details})")
            return None
        return state

    def _ignore(self, why: str) -> None:
        warnings.warn(
            f"ignoring checkpoint {self.path}: {why}; this training starts over",
            RuntimeWarning,
            stacklevel=3,
        )
        self.path.unlink(missing_ok=True)

    def save(self, state: dict[str, Any]) -> None:
        """Write ``state`` with the identity, atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(self.path) as temporary:
            torch.save({"format": _FORMAT, "identity": self.identity, "state": state}, temporary)
        fault_point(f"checkpoint-saved:{self.label}")


@runtime_checkable
class Resumable(Protocol):
    """What a checkpoint saves and restores of an optimiser or a minibatch stream."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@runtime_checkable
class DrawsMinibatches(Protocol):
    """A problem that draws its data from a stream (:class:`relulab.engine.Minibatches`)."""

    batches: Any


@runtime_checkable
class HoldsStackedBuffers(Protocol):
    """A family whose networks keep stacked buffers (BatchNorm statistics:
    :class:`relulab.engine.FunctionalFamily`)."""

    buffers: dict[str, torch.Tensor]


def _stream(problem: Any) -> Resumable | None:
    """The problem's minibatch stream, if it has one; it must say where it is."""
    if not isinstance(problem, DrawsMinibatches) or problem.batches is None:
        return None
    if not isinstance(problem.batches, Resumable):
        raise ValueError(
            f"a checkpoint needs a resumable minibatch stream (state_dict), not "
            f"{type(problem.batches).__name__}: use relulab.engine.Minibatches / "
            "PerNetworkBatches"
        )
    return problem.batches


@runtime_checkable
class TrainsAFamily(Protocol):
    """A problem that trains a family of networks (:class:`relulab.engine.FunctionalProblem`)."""

    family: Any


def _buffers(problem: Any) -> dict[str, torch.Tensor]:
    family = problem.family if isinstance(problem, TrainsAFamily) else None
    return dict(family.buffers or {}) if isinstance(family, HoldsStackedBuffers) else {}


def problem_state(problem: Any, optimiser: Any) -> dict[str, Any]:
    """Copies of everything a training's continuation depends on outside the loop: the
    parameters, buffers, the optimiser's and the stream's state, torch's random states."""
    if not isinstance(optimiser, Resumable):
        raise ValueError(f"a checkpoint needs an optimiser with state_dict, not {optimiser}")
    stream = _stream(problem)
    device = problem.params[0].device
    return {
        "params": [p.detach().clone() for p in problem.params],
        "buffers": {k: v.detach().clone() for k, v in _buffers(problem).items()},
        "optimiser": optimiser.state_dict(),
        "stream": None if stream is None else stream.state_dict(),
        "rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
    }


@torch.no_grad()
def load_problem_state(problem: Any, optimiser: Any, state: dict[str, Any]) -> None:
    """Restore :func:`problem_state` in place (aliases of the tensors stay aliases)."""
    for p, saved in zip(problem.params, state["params"], strict=True):
        p.copy_(saved)
    buffers = _buffers(problem)
    for name, saved in state["buffers"].items():
        buffers[name].copy_(saved)
    optimiser.load_state_dict(state["optimiser"])
    stream = _stream(problem)
    if stream is not None:
        stream.load_state_dict(state["stream"])
    torch.set_rng_state(state["rng"])
    if state["cuda_rng"] is not None:
        torch.cuda.set_rng_state(state["cuda_rng"], problem.params[0].device)
