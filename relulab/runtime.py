"""Run-time context handed to every unit: device, dtype, seeding, threads and progress bars."""

from __future__ import annotations

import contextlib
import platform
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["RunContext", "library_versions", "resolve_device"]


def resolve_device(name: str) -> torch.device:
    """``auto`` → CUDA when available else CPU; ``cpu``; ``cuda`` / ``cuda:N`` (must exist)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"unknown device {name!r}; use auto, cpu or cuda[:N]") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {name!r}; use auto, cpu or cuda[:N]")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but CUDA is not available here")
    if (
        device.type == "cuda"
        and device.index is not None
        and device.index >= torch.cuda.device_count()
    ):
        raise ValueError(
            f"device {name!r} does not exist ({torch.cuda.device_count()} CUDA devices)"
        )
    return device


def library_versions() -> dict[str, str]:
    """Versions of Python, the platform and every library a result depends on."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("relulab", "torch", "numpy", "scipy", "pandas", "matplotlib"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    versions["torch_threads"] = str(torch.get_num_threads())
    return versions


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
        """A progress bar over ``total`` steps; silent with ``quiet`` or off a terminal."""
        console = Console(stderr=True)
        if self.quiet or not console.is_terminal:
            yield lambda n: None
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
