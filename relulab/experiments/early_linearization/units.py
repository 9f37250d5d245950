"""The batched computations: every variant × seed (× c, Δ or σ²) of one task and activation is
one :func:`relulab.engine.train` call.

A network's variant lives in its *inputs*: the hidden bias is the input constant ``c`` appended
to x (seed 004 §5.1), so the bias-free variant is ``c = 0`` (its constant column gets no
gradient and adds nothing) and the c sweep, the Δ sweep and the (σ², c) map are all one
computation per activation. Only the activation and the readout bias (appendix C.3) change the
architecture, so they make separate units. Network ``k`` of a variant draws its initial weights
from seed ``config.seed·1000 + k`` in every unit: the ReLU and the linear network of one seed
start from the same weights, and the claims compare them pairwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.store import UnitResult
from relulab.tasks import (
    append_constant,
    hierarchical_task,
    parallel_task,
    xor_linear_task,
    xor_task,
)

__all__ = ["ACTIVATIONS", "augmented_task", "estimate_bytes", "plan", "task_arrays"]

ACTIVATIONS = ("relu", "linear")
Snapshots = str  # "trajectory": every recording; "final": the last one; "none"


def task_arrays(task: str, config: EarlyLinearizationConfig, delta: float | None = None):
    """``(X, Y)`` sample-major, without the constant, for ``task`` (see :mod:`relulab.tasks`)."""
    if task == "hierarchy":
        return hierarchical_task(config.n_items)
    if task == "xor":
        return xor_task()
    if task == "xor-linear":
        return xor_linear_task(config.margin_delta if delta is None else delta)
    if task == "parallel":
        return parallel_task()
    raise ValueError(f"unknown task {task!r}")


def augmented_task(task: str, config: EarlyLinearizationConfig, c: float, delta=None):
    """``(X̃, Y)`` with the constant ``c`` appended as the last input column (seed 004 §5.1)."""
    X, Y = task_arrays(task, config, delta)
    return append_constant(torch.from_numpy(X), float(c)).numpy(), Y


def _network_seed(config: EarlyLinearizationConfig, k: int) -> int:
    return config.seed * 1000 + k


def _conditions(config: EarlyLinearizationConfig, task: str, kind: str) -> list[dict[str, Any]]:
    """One dict per network: its task, c, Δ, σ², readout bias and seed index."""
    base = {"task": task, "delta": 0.0, "variance": config.init_variance, "output_bias": False}
    rows = []
    if kind == "main":
        constants = config.all_constants if task == "hierarchy" else (0.0, config.constant)
        rows = [{**base, "c": c, "seed": k} for c in constants for k in range(config.seeds)]
    elif kind == "both":
        rows = [
            {**base, "c": config.constant, "output_bias": True, "seed": k}
            for k in range(config.seeds)
        ]
    elif kind == "deltas":
        rows = [
            {**base, "c": c, "delta": d, "seed": k}
            for d in config.all_deltas
            for c in (0.0, config.constant)
            for k in range(config.seeds)
        ]
    elif kind == "width":
        rows = [
            {**base, "c": c, "seed": k}
            for c in (0.0, config.constant)
            for k in range(config.map_seeds)
        ]
    elif kind == "map":
        rows = [
            {**base, "c": c, "variance": v, "seed": k}
            for v in config.map_variances
            for c in config.map_constants
            for k in range(config.map_seeds)
        ]
    return rows


def _steps(config: EarlyLinearizationConfig, task: str) -> int:
    return {
        "hierarchy": config.hierarchy_steps,
        "xor": config.xor_steps,
        "xor-linear": config.xor_linear_steps,
        "parallel": config.parallel_steps,
    }[task]


def _train_unit(
    config: EarlyLinearizationConfig,
    name: str,
    task: str,
    activation: str,
    kind: str,
    snapshots: Snapshots,
    hidden: int | None = None,
) -> Unit:
    conditions = _conditions(config, task, kind)
    width = config.hidden if hidden is None else hidden
    steps = _steps(config, task)

    def run(context: RunContext) -> UnitResult:
        pairs = [augmented_task(task, config, c["c"], c["delta"]) for c in conditions]
        as_tensor: Callable[[np.ndarray], torch.Tensor] = lambda a: torch.as_tensor(  # noqa: E731
            a, dtype=context.dtype, device=context.device
        )
        x = torch.stack([as_tensor(X) for X, _ in pairs])
        y = torch.stack([as_tensor(Y) for _, Y in pairs])
        spec = MLPSpec(
            (x.shape[-1], width, y.shape[-1]),
            activation=activation,
            bias=False,
            output_bias=bool(conditions[0]["output_bias"]),
        )
        model = BatchedMLP(
            spec,
            len(conditions),
            init="normal",
            init_scale=[math.sqrt(c["variance"]) for c in conditions],
            seeds=[_network_seed(config, c["seed"]) for c in conditions],
            dtype=context.dtype,
            device=context.device,
        )
        problem = SupervisedProblem(
            model, x, y, loss="half_sum", record_parameters=snapshots != "none"
        )
        with context.progress(steps, name) as progress:
            result = train(
                problem, BatchedSGD(problem.params, config.lr), steps, config.record_every, progress
            )
        arrays = {}
        for key in [k for k in result.curves if k.startswith("param_")]:
            trajectory = result.curves.pop(key)
            result.final.pop(key)
            kept = trajectory if snapshots == "trajectory" else trajectory[:, -1]
            arrays[key] = kept.astype(np.float32)
        return UnitResult.from_training(result, conditions, arrays)

    return Unit(name, run)


def plan(config: EarlyLinearizationConfig) -> list[Unit]:
    """Per activation: hierarchy (bias, no bias, c sweep), both-layer biases on the hierarchy
    and on XOR, XOR, XOR + linear (Δ sweep), the parallel task, the (σ², c) map and one unit
    per extra hidden width (bias and no bias)."""
    units = []
    for act in ACTIVATIONS:
        units += [
            _train_unit(config, f"hierarchy-{act}", "hierarchy", act, "main", "trajectory"),
            _train_unit(config, f"hierarchy-both-{act}", "hierarchy", act, "both", "none"),
            _train_unit(config, f"xor-{act}", "xor", act, "main", "none"),
            _train_unit(config, f"xor-both-{act}", "xor", act, "both", "none"),
            _train_unit(config, f"xor-plus-linear-{act}", "xor-linear", act, "deltas", "final"),
            _train_unit(config, f"parallel-{act}", "parallel", act, "main", "final"),
            _train_unit(config, f"map-{act}", "hierarchy", act, "map", "none"),
        ]
        units += [
            _train_unit(config, f"width{h}-{act}", "hierarchy", act, "width", "none", hidden=h)
            for h in config.map_widths
        ]
    return units


def estimate_bytes(config: EarlyLinearizationConfig) -> int:
    """Peak memory in bytes: the hierarchy unit's parameter trajectories (float64 while
    recording), S × T × (parameters per network), dominate everything else."""
    n_in = config.n_items + 1
    n_out = 2 * config.n_items - 1 if config.n_items == 8 else 7
    per_network = config.hidden * (n_in + n_out)
    networks = len(config.all_constants) * config.seeds
    recordings = config.hierarchy_steps // config.record_every + 2
    return 8 * networks * recordings * per_network * 2 + 50_000_000
