"""The training loop shared by every batched network family.

A *problem* holds S networks of one family with their data; it computes the per-network loss
and gradients in one batched computation, and reports per-network observables to record. The
loop steps a batched optimiser, records every k steps on the device, and freezes any network
whose loss turns NaN/Inf (it is flagged with the step, the others go on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch import Tensor

from relulab.engine.recorder import Recorder

__all__ = ["BatchedProblem", "Optimiser", "TrainResult", "train"]


class BatchedProblem(Protocol):
    """What :func:`train` needs from a family of S networks."""

    n_networks: int
    params: list[Tensor]

    def loss_and_grads(self) -> tuple[Tensor, list[Tensor]]:
        """Per-network loss ``(S,)`` and gradients matching :attr:`params`."""

    def observe(self) -> dict[str, Tensor]:
        """Per-network observables ``{name: (S,)}`` to record besides the loss."""


class Optimiser(Protocol):
    def step(self, grads: list[Tensor], active: Tensor | None = None) -> None: ...


@dataclass
class TrainResult:
    """Recorded curves ``(S, T)`` at ``steps``, final values ``(S,)`` and divergence flags."""

    steps: np.ndarray
    curves: dict[str, np.ndarray]
    final: dict[str, np.ndarray]
    diverged: np.ndarray
    diverged_step: np.ndarray


ProgressCallback = Callable[[int], None]


def train(
    problem: BatchedProblem,
    optimiser: Optimiser,
    steps: int,
    record_every: int,
    progress: ProgressCallback | None = None,
) -> TrainResult:
    """Run ``steps`` optimiser steps on all S networks; record at steps 0, k, 2k, …, ``steps``.

    ``progress(n)`` is called with the number of steps done since the last call.
    """
    first = problem.params[0]
    device = first.device
    recorder = Recorder(steps, record_every, problem.n_networks, device, first.dtype)
    active = torch.ones(problem.n_networks, dtype=torch.bool, device=device)
    diverged_step = torch.full((problem.n_networks,), -1, dtype=torch.long, device=device)
    # On the CPU asking "is every network still finite?" costs nothing, and while the answer is
    # yes the optimiser skips the per-network masks. On CUDA that question would stall the
    # stream every step, so there the masks are always applied (no host synchronisation).
    check_on_host = device.type == "cpu"
    all_healthy = True
    last_reported = 0
    for step in range(steps + 1):
        loss, grads = problem.loss_and_grads()
        finite = torch.isfinite(loss)
        if check_on_host and all_healthy and bool(finite.all()):
            mask = None
        else:
            all_healthy = False
            diverged_step = torch.where(active & ~finite, step, diverged_step)
            active = active & finite
            mask = active
        if recorder.wants(step):
            recorder.record(step, {"loss": loss, **problem.observe()})
            if progress is not None:
                progress(step - last_reported)
                last_reported = step
        if step < steps:
            optimiser.step(grads, mask)
    curves = recorder.to_numpy()
    final = {name: curve[:, -1].copy() for name, curve in curves.items()}
    diverged_np = (diverged_step >= 0).cpu().numpy()
    return TrainResult(recorder.steps, curves, final, diverged_np, diverged_step.cpu().numpy())
