"""The context an experiment's units run in: device, dtype, seeding, progress bars and where a
unit's training checkpoints go."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from relulab.engine.checkpoint import FileCheckpoint
from relulab.progress import step_progress

__all__ = ["RunContext"]


ProgressCallback = Callable[[int], None]


@dataclass
class RunContext:
    """Everything a unit needs besides its config.

    ``checkpoints`` is the unit's own checkpoint directory in the run directory (set by the
    runner, ``None`` outside a run), ``checkpoint_identity`` what a checkpoint there must have
    been taken under to be resumed (commit, config, device, dtype, threads), and
    ``checkpoint_every`` the steps between checkpoints (0: none); a unit asks for a training's
    checkpoint with :meth:`checkpoint` and passes it to :func:`relulab.engine.train`.
    """

    device: torch.device
    dtype: torch.dtype
    seed: int
    quiet: bool = False
    unit: str = ""
    checkpoints: Path | None = None
    checkpoint_identity: dict[str, str] = field(default_factory=dict)
    checkpoint_every: int = 0

    def generator(self, unit_name: str) -> torch.Generator:
        """A generator seeded by (run seed, unit name): units draw the same numbers in any order."""
        entropy = np.random.SeedSequence([self.seed, zlib.crc32(unit_name.encode())])
        generator = torch.Generator(device="cpu")
        generator.manual_seed(int(entropy.generate_state(1, dtype=np.uint64)[0] >> 1))
        return generator

    def checkpoint(self, part: str = "training") -> FileCheckpoint | None:
        """The checkpoint of one training of this unit (``part`` names it among the unit's
        trainings, e.g. a chunk of its networks), for ``train(..., checkpoint=…)``: a killed
        unit resumes each training from its last checkpoint, bit for bit
        (:mod:`relulab.engine.checkpoint`); ``None`` outside a run or with checkpoints off.

        Example:
            >>> RunContext(torch.device("cpu"), torch.float32, seed=0).checkpoint() is None
            True
        """
        if self.checkpoints is None or self.checkpoint_every <= 0:
            return None
        identity = {**self.checkpoint_identity, "unit": self.unit, "part": part}
        path = self.checkpoints / f"{part}.pt"
        return FileCheckpoint(path, identity, self.checkpoint_every, label=self.unit)

    @contextlib.contextmanager
    def progress(self, total: int, description: str) -> Iterator[ProgressCallback]:
        """A progress bar over ``total`` steps on a terminal; off one, a line on stderr at most
        every :data:`relulab.progress.LINE_INTERVAL_S` seconds
        (:class:`~relulab.progress.StepLines`); silent with ``quiet``."""
        with step_progress(total, description, False if self.quiet else None) as advance:
            yield advance
