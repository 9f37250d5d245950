"""What the machine can give a run: CPU threads and memory, checked before a run starts.

``--threads`` is bounded by :func:`max_threads` (the machine's CPU count, ``os.cpu_count()``):
more threads than CPUs only slow torch down, and very large counts crash its OpenMP runtime.
An experiment may declare ``estimate_bytes(config)``, its peak memory; :func:`check_memory`
refuses a config whose estimate exceeds the memory available now — ``MemAvailable`` of
``/proc/meminfo`` capped by the cgroup's limit on CPU, the free memory of the GPU on CUDA.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import torch

from relulab.config import ConfigError

__all__ = ["available_memory_bytes", "check_memory", "format_bytes", "max_threads"]


def max_threads() -> int:
    """The largest ``--threads`` accepted: the number of CPUs of this machine."""
    return os.cpu_count() or 1


def format_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'``; binary units up to EiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024:
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"


def _meminfo_available() -> int | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return None


def _cgroup_headroom() -> int | None:
    """Limit minus usage of this process's memory cgroup (v2, then v1); ``None`` if unlimited."""
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        with contextlib.suppress(OSError, ValueError):
            limit = Path(limit_file).read_text().strip()
            if limit == "max" or int(limit) >= 2**60:
                return None
            return max(int(limit) - int(Path(usage_file).read_text().strip()), 0)
    return None


def available_memory_bytes(device: torch.device) -> int | None:
    """Memory a run on ``device`` can use now, in bytes; ``None`` when it cannot be told."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    known = [n for n in (_meminfo_available(), _cgroup_headroom()) if n is not None]
    return min(known) if known else None


def check_memory(estimate: int, device: torch.device, what: str) -> None:
    """Raise :class:`~relulab.config.ConfigError` if ``estimate`` bytes exceed what is available.

    Example:
        >>> check_memory(2**50, torch.device("cpu"), "anisotropy")  # doctest: +SKIP
        ConfigError: anisotropy needs about 1 PiB of memory; 22.8 GiB is available on cpu; ...
    """
    available = available_memory_bytes(device)
    if available is not None and estimate > available:
        raise ConfigError(
            f"{what} needs about {format_bytes(estimate)} of memory; "
            f"{format_bytes(available)} is available on {device.type}; choose smaller sizes"
        )
