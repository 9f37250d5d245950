"""The context an experiment's units run in: device, dtype, seeding and progress bars."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from relulab.progress import step_progress

__all__ = ["RunContext"]


ProgressCallback = Callable[[int], None]


@dataclass
class RunContext:
    """Everything a unit needs besides its config."""

    device: torch.device
    dtype: torch.dtype
    seed: int
    quiet: bool = False

    def generator(self, unit_name: str) -> torch.Generator:
        """A generator seeded by (run seed, unit name): units draw the same numbers in any order."""
        entropy = np.random.SeedSequence([self.seed, zlib.crc32(unit_name.encode())])
        generator = torch.Generator(device="cpu")
        generator.manual_seed(int(entropy.generate_state(1, dtype=np.uint64)[0] >> 1))
        return generator

    @contextlib.contextmanager
    def progress(self, total: int, description: str) -> Iterator[ProgressCallback]:
        """A progress bar over ``total`` steps on a terminal; off one, a line on stderr at most
        every :data:`relulab.progress.LINE_INTERVAL_S` seconds
        (:class:`~relulab.progress.StepLines`); silent with ``quiet``."""
        with step_progress(total, description, False if self.quiet else None) as advance:
            yield advance
