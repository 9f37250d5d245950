"""W5 of ``relulab bench``: S copies of ALL-CNN-C (seed ``002_…``) trained the ways relulab can
train them, at init-training's training sizes (issue 43's init-training item, issue 44's item 2):
which is faster on a device, ``vmap``'s grouped convolution or a per-network loop, measured side
by side in one run.

Each of S copies gets its own CIFAR-shaped minibatches (as init-training's units do: every
network its own stream, ``per_network``), cross-entropy, SGD with momentum 0.9 and per-network
learning rates, for ``steps`` steps at each width of :data:`W5_WIDTHS` (batch 32). Timed, in the
same process, from the same initial copies:

* the engine's :class:`~relulab.engine.FunctionalFamily` with each execution of
  :data:`relulab.engine.copies.EXECUTIONS` — ``vmap`` (one grouped convolution for all copies),
  ``loop`` (the copies one after the other over the stacked tensors) and
  ``loop-channels-last`` (the same in channels-last memory) — through :func:`relulab.engine.train`;
* the per-model ``torch.optim`` loop a user would write (``naive``), and the same with the
  models and inputs in channels-last memory (``naive-channels-last``).

Every path runs ``steps + 1`` forward and backward passes per network (``train`` evaluates the
loss, with its gradients, after its last step too; the loops do the same) and ``steps``
optimiser steps. A path's time is the fastest of :data:`W5_REPEATS` runs, taken in turns; on the
CPU it is the process's CPU time (what the CPU-s per network-step of init-training's cost
estimates are in, and less disturbed by other processes than the wall clock), on CUDA the wall
time. ``torch.compile`` is not a path here: compiling the per-network forward took 40 s on this
machine and ran no faster (docs/performance.md).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal, cast

import torch
from torch import Tensor, nn

from relulab.engine import BatchedSGD, FunctionalFamily, FunctionalProblem, train
from relulab.engine.copies import EXECUTIONS, default_execution
from relulab.engine.device import synchronise
from relulab.nn import AllCNNC

Execution = Literal[
    "vmap", "loop", "loop-channels-last"
]  # EXECUTIONS, as FunctionalFamily types them

__all__ = ["W5_PATHS", "W5_REPEATS", "W5_TARGET_VS_NAIVE", "W5_WIDTHS", "w5_cnn_ensemble"]

#: ALL-CNN-C's channel multipliers measured: init-training's training widths (cpu-train 1/8,
#: cpu 1/4)
W5_WIDTHS = (0.125, 0.25)
#: the two per-model loops W5 measures beside the engine's executions
NAIVE_PATHS = ("naive", "naive-channels-last")
W5_PATHS = (*EXECUTIONS, *NAIVE_PATHS)
#: each path's time is the fastest of this many runs (taken in turns)
W5_REPEATS = 2
#: issue 44: the engine's chosen path at least this many times the per-model loop on the CPU
W5_TARGET_VS_NAIVE = 1.2


def _cycling(x: Tensor, y: Tensor, batch_size: int) -> Iterator[tuple[Tensor, Tensor]]:
    """Per step, network ``s``'s next batch of its own data ``x[s]`` (``(S, N, …)``), cycling
    in order: the same sequence for every path, laid out ``(S, B, …)``."""
    while True:
        for start in range(0, x.shape[1] - batch_size + 1, batch_size):
            yield x[:, start : start + batch_size], y[:, start : start + batch_size]


def _timed(run: Callable[[], None], device: torch.device) -> tuple[float, float]:
    """``(wall seconds, process CPU seconds)`` of ``run()``."""
    synchronise(device)
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    synchronise(device)
    return time.perf_counter() - wall, time.process_time() - cpu


def _engine_run(
    family: FunctionalFamily, initial: list[Tensor], data, lrs: list[float], steps: int
) -> Callable[[], None]:
    """A function that trains ``family`` from ``initial`` for ``steps`` steps."""

    def run() -> None:
        with torch.no_grad():
            for p, p0 in zip(family.params, initial, strict=True):
                p.copy_(p0)
        problem = FunctionalProblem(family, _cycling(*data), "cross_entropy", per_network=True)
        train(problem, BatchedSGD(problem.params, lrs, momentum=0.9), steps, steps, threads=None)

    return run


def _naive_run(
    initial: list[nn.Module], data, lrs: list[float], steps: int, channels_last: bool
) -> tuple[Callable[[], None], list[nn.Module]]:
    """A function that trains fresh copies of ``initial`` one by one with ``torch.optim``
    (``steps`` steps and one more forward and backward pass, as ``train``), and the list the
    last run's trained modules are put in."""
    trained: list[nn.Module] = []

    def run() -> None:
        trained.clear()
        x, y, batch_size = data
        for s, start in enumerate(initial):
            module = copy.deepcopy(start)
            if channels_last:
                module = module.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # torch: Module.to's overloads omit memory_format
            sgd = torch.optim.SGD(module.parameters(), lr=lrs[s], momentum=0.9)
            batches = _cycling(x[s : s + 1], y[s : s + 1], batch_size)
            for step in range(steps + 1):
                xb, yb = next(batches)
                inputs = xb[0]
                if channels_last:
                    inputs = inputs.contiguous(memory_format=torch.channels_last)
                sgd.zero_grad()
                nn.functional.cross_entropy(module(inputs), yb[0]).backward()
                if step < steps:
                    sgd.step()
            trained.append(module)

    return run, trained


def _difference(family: FunctionalFamily, module: nn.Module) -> float:
    """The largest parameter difference between the family's copy 0 and ``module``."""
    with torch.no_grad():
        return max(
            float((a - b).abs().max())
            for a, b in zip(family.module(0).parameters(), module.parameters(), strict=True)
        )


def _path_rows(
    timings: dict[str, list[tuple[float, float]]],
    n_networks: int,
    naive_networks: int,
    steps: int,
    cpu: bool,
) -> dict[str, dict[str, Any]]:
    """Each path's best wall and CPU time over the repeats, scaled to S networks (the per-model
    loops time ``naive_networks`` of them), its rate and CPU-s per network-step; ``time_s`` is
    the CPU time on the CPU, else the wall time."""
    rows: dict[str, dict[str, Any]] = {}
    for path, runs_of_path in timings.items():
        networks = naive_networks if path in NAIVE_PATHS else n_networks
        wall = min(w for w, _ in runs_of_path) * n_networks / networks
        cpu_s = min(c for _, c in runs_of_path) * n_networks / networks
        rows[path] = {
            "wall_s": wall,
            "cpu_s": cpu_s,
            "time_s": cpu_s if cpu else wall,
            "network_steps_per_s": n_networks * steps / wall,
            "cpu_s_per_network_step": cpu_s / (n_networks * steps),
        }
    return rows


def _w5_width(
    device: torch.device,
    width: float,
    steps: int,
    n_networks: int,
    batch_size: int,
    naive_networks: int,
    repeats: int,
) -> dict[str, Any]:
    """W5 at one width: every path's time, CPU-s per network-step, rate, its speed against
    the per-model loop and (the engine's paths) its parameters against that loop's."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n_networks, 4 * batch_size, 3, 32, 32, generator=generator).to(device)
    y = torch.randint(0, 10, (n_networks, 4 * batch_size), generator=generator).to(device)
    data = (x, y, batch_size)
    lrs = torch.logspace(-3, -2, n_networks).tolist()
    families = {
        ex: FunctionalFamily(
            lambda: AllCNNC(width), n_networks, device=device, execution=cast(Execution, ex)
        )
        for ex in EXECUTIONS
    }  # the same copies (seeds 0 … S−1) in each
    initial_modules = [families["vmap"].module(s) for s in range(naive_networks)]
    runs: dict[str, Callable[[], None]] = {}
    for execution, family in families.items():
        initial = [p.detach().clone() for p in family.params]
        runs[execution] = _engine_run(family, initial, data, lrs, steps)
    trained: dict[str, list[nn.Module]] = {}
    for path in NAIVE_PATHS:
        channels_last = path == "naive-channels-last"
        runs[path], trained[path] = _naive_run(initial_modules, data, lrs, steps, channels_last)
    for run in runs.values():  # warm-up: oneDNN's first calls at these shapes, the allocator
        run()
    timings: dict[str, list[tuple[float, float]]] = {path: [] for path in runs}
    for _ in range(repeats):
        for path, run in runs.items():
            timings[path].append(_timed(run, device))
    rows = _path_rows(timings, n_networks, naive_networks, steps, cpu=device.type == "cpu")
    for path, row in rows.items():
        row["vs_naive"] = rows["naive"]["time_s"] / row["time_s"]
        if path in families:
            row["max_abs_diff_vs_naive"] = _difference(families[path], trained["naive"][0])
    engine = {path: rows[path] for path in EXECUTIONS}
    auto = default_execution(device)
    best_loop = min(rows[path]["time_s"] for path in EXECUTIONS if path != "vmap")
    return {
        "width": width,
        "paths": rows,
        "fastest_engine_path": min(engine, key=lambda p: engine[p]["time_s"]),
        "auto_execution": auto,
        "auto_vs_naive": rows[auto]["vs_naive"],
        "auto_vs_vmap": rows["vmap"]["time_s"] / rows[auto]["time_s"],
        "loop_vs_vmap": rows["vmap"]["time_s"] / best_loop,
    }


def w5_cnn_ensemble(
    device: torch.device,
    steps: int = 8,
    n_networks: int = 8,
    widths: tuple[float, ...] = W5_WIDTHS,
    batch_size: int = 32,
    naive_networks: int | None = None,
    repeats: int = W5_REPEATS,
) -> dict[str, Any]:
    """W5 (module docstring) at every width of ``widths``.

    Args:
        device: where everything runs.
        steps: optimiser steps per run.
        n_networks: S (init-training's cpu presets train 8 per unit).
        widths: ALL-CNN-C channel multipliers.
        batch_size: images per network and step.
        naive_networks: time the per-model loops on this many of the S networks and scale
            (stated in the result); default all.
        repeats: runs per path; the fastest counts.

    Returns:
        Per width (``by_width``, keyed by the width as text) every path's ``time_s`` (CPU
        seconds on the CPU, wall seconds on CUDA), ``cpu_s_per_network_step``,
        ``network_steps_per_s``, ``vs_naive`` and, for the engine's paths, the largest
        parameter difference from the per-model loop after the run; the fastest engine path,
        the one ``execution="auto"`` takes on ``device`` and its speed against the loop and
        against ``vmap``, the faster engine loop's speed against ``vmap`` (``loop_vs_vmap``:
        above 1, the per-network loop wins); and whether the chosen path meets
        :data:`W5_TARGET_VS_NAIVE` at every width.
    """
    n_naive = min(naive_networks or n_networks, n_networks)
    by_width = {
        f"{width:g}": _w5_width(device, width, steps, n_networks, batch_size, n_naive, repeats)
        for width in widths
    }
    worst = min(row["auto_vs_naive"] for row in by_width.values())
    return {
        "networks": n_networks,
        "steps": steps,
        "batch_size": batch_size,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "naive_networks_timed": n_naive,
        "repeats": repeats,
        "time_measure": "process CPU seconds" if device.type == "cpu" else "wall seconds",
        "by_width": by_width,
        "auto_execution": default_execution(device),
        "target_auto_vs_naive": W5_TARGET_VS_NAIVE,
        "auto_vs_naive_worst": worst,
        "meets_target": worst >= W5_TARGET_VS_NAIVE,
    }
