"""How many torch CPU threads a training loop runs with.

Intra-op parallelism pays only when a step's operators are large: for tiny networks each
operator is a few microseconds of work, and a second thread adds its hand-over to every one.
Measured with ``relulab bench`` on the 2-core machine: W1 (40 two-layer nets of 64 hidden units
on 8 samples, ≈ 0.5 M multiply–adds per step) ran 111–121 µs per step on one thread, steadily,
and 100–180 µs on two, depending on the process; 400 such networks (≈ 5 M) and 40 of width 256
(≈ 2 M) ran 1.9× and 1.5× faster on two. :func:`train_threads` therefore picks one thread below
:data:`SMALL_STEP_WORK` multiply–adds per step and leaves torch's setting alone above it.

Compiled steps are different: a compiled chunk of steps is one C++ kernel per step, with every
small product inside it (:func:`relulab.engine.family.batched_matmul`), and inductor splits its
loops over the threads with one hand-over per kernel rather than per operator. Measured on W1
compiled in 10-step chunks: 0.73–1.07 M network-steps/s on two threads against 0.67–0.71 M on
one (two threads vary with how the virtual machine schedules its second core); two threads
were faster at every size tried (40 nets of 64 … 1024 hidden units, 400 and 4000 nets of 64).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import torch

__all__ = ["SMALL_STEP_WORK", "ThreadsOption", "train_threads", "using_threads"]

#: multiply–adds per step below which :func:`train_threads` runs a loop on one thread
SMALL_STEP_WORK = 1_000_000

ThreadsOption = int | Literal["auto"] | None


def train_threads(
    work_per_step: int | None, threads: ThreadsOption = "auto", compiled: bool = False
) -> int:
    """The torch CPU thread count for a training loop.

    Args:
        work_per_step: the step's multiply–adds, where the problem knows them
            (``problem.work_per_step``), else ``None``.
        threads: ``"auto"`` (one thread below :data:`SMALL_STEP_WORK`, torch's setting
            otherwise), a count, or ``None`` (torch's setting).
        compiled: whether the steps run compiled (``train(..., compiled_steps=K)``): then
            ``"auto"`` keeps torch's setting at every size, see the module docstring.

    Returns:
        The number of threads to run with.

    Example:
        >>> train_threads(500_000), train_threads(None) == torch.get_num_threads()
        (1, True)
    """
    if threads is None:
        return torch.get_num_threads()
    if threads == "auto":
        small = work_per_step is not None and not compiled and work_per_step < SMALL_STEP_WORK
        return 1 if small else torch.get_num_threads()
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be 'auto', None or a positive count, got {threads!r}")
    return threads


@contextmanager
def using_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` torch CPU threads (``torch.set_num_threads``), then restore
    the previous setting, also when the block raises.

    Args:
        count: the thread count inside the block.

    Example:
        >>> before = torch.get_num_threads()
        >>> with using_threads(1):
        ...     torch.get_num_threads()
        1
        >>> torch.get_num_threads() == before
        True
    """
    previous = torch.get_num_threads()
    if count != previous:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)
