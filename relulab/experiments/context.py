"""The context an experiment's units run in: device, dtype, seeding and progress bars."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from relulab.progress import StepLines

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
        console = Console(stderr=True)
        if self.quiet:
            yield lambda n: None
            return
        if not console.is_terminal:
            yield StepLines(total, description).advance
            return
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)
