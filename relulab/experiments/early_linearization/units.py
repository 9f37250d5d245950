"""The batched computations: every variant × seed (× c, Δ or σ²) of one task and activation is
one :func:`relulab.engine.train` call.

A network's variant lives in its *inputs*: the hidden bias is the input constant ``c`` appended
to x (seed 004 §5.1), so the bias-free variant is ``c = 0`` (its constant column gets no
gradient and adds nothing) and the c sweep, the Δ sweep and the (σ², c) map are all one
computation per activation. Only the activation and the readout bias (appendix C.3) change the
architecture, so they make separate units. Network ``k`` of a variant draws its initial weights
from seed ``config.seed·1000 + k`` in every unit: the ReLU and the linear network of one seed
start from the same weights, and the claims compare them pairwise.

Unit names are declared here once: :class:`Family` (one unit per family and activation),
:class:`Key` (every fixed unit name), :func:`width_key` (the extra hidden widths) and
:func:`pair` / :func:`width_pair` (a family's ReLU unit and its linear twin); every reader
reaches a unit through them.

What a unit stores is declared here too, as typed views (:class:`Training`, :class:`Trajectory`,
:class:`FinalWeights`; :func:`unit_views` maps every unit name to its view): readers reach the
loss, the unit-state shares and the weight snapshots by attribute (:func:`as_view`), never by a
string typed where they are read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import numpy as np
import torch

from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.records import UnitView, array, curve
from relulab.store import UnitResult
from relulab.tasks import (
    append_constant,
    hierarchical_task,
    parallel_task,
    xor_linear_task,
    xor_task,
)

__all__ = [
    "ACTIVATIONS",
    "Family",
    "FinalWeights",
    "Key",
    "Training",
    "Trajectory",
    "as_view",
    "augmented_task",
    "estimate_bytes",
    "pair",
    "plan",
    "task_arrays",
    "task_levels",
    "unit_key",
    "unit_keys",
    "unit_views",
    "width_key",
    "width_pair",
]

ACTIVATIONS = ("relu", "linear")
Snapshots = str  # "trajectory": every recording; "final": the last one; "none"


class Family(StrEnum):
    """A task and variant trained as one ReLU and one linear unit (``<family>-<activation>``)."""

    HIERARCHY = "hierarchy"  # bias, no bias and the c sweep
    HIERARCHY_BOTH = "hierarchy-both"  # biases in both layers (appendix C.3)
    XOR = "xor"
    XOR_BOTH = "xor-both"
    XOR_PLUS_LINEAR = "xor-plus-linear"  # with the Δ sweep
    XOR_UNCENTRED = "xor-uncentred"  # XOR on {0, 1}²: the uncentred encoding, metrics only
    XOR_PLUS_LINEAR_UNCENTRED = "xor-plus-linear-uncentred"  # the same for XOR + linear
    PARALLEL = "parallel"
    MAP = "map"  # beyond the seed: the (σ², c) map on the hierarchy


class Key(StrEnum):
    """Every fixed unit name: a family's ReLU and linear unit."""

    HIERARCHY_RELU = "hierarchy-relu"
    HIERARCHY_LINEAR = "hierarchy-linear"
    HIERARCHY_BOTH_RELU = "hierarchy-both-relu"
    HIERARCHY_BOTH_LINEAR = "hierarchy-both-linear"
    XOR_RELU = "xor-relu"
    XOR_LINEAR = "xor-linear"
    XOR_BOTH_RELU = "xor-both-relu"
    XOR_BOTH_LINEAR = "xor-both-linear"
    XOR_PLUS_LINEAR_RELU = "xor-plus-linear-relu"
    XOR_PLUS_LINEAR_LINEAR = "xor-plus-linear-linear"
    XOR_UNCENTRED_RELU = "xor-uncentred-relu"
    XOR_UNCENTRED_LINEAR = "xor-uncentred-linear"
    XOR_PLUS_LINEAR_UNCENTRED_RELU = "xor-plus-linear-uncentred-relu"
    XOR_PLUS_LINEAR_UNCENTRED_LINEAR = "xor-plus-linear-uncentred-linear"
    PARALLEL_RELU = "parallel-relu"
    PARALLEL_LINEAR = "parallel-linear"
    MAP_RELU = "map-relu"
    MAP_LINEAR = "map-linear"


@dataclass(frozen=True)
class Training(UnitView):
    """What every unit of the study records, per network ``(S, T)``: the sum loss, and the
    shares of hidden units active on every input (``always_on_fraction``) and on none
    (``dead_fraction``)."""

    loss: np.ndarray = curve()
    always_on_fraction: np.ndarray = curve()
    dead_fraction: np.ndarray = curve()


@dataclass(frozen=True)
class Trajectory(Training):
    """A unit that keeps every recording's weights: ``param_0`` ``(S, T, N, d+1)`` (the
    augmented first layer W̃1) and ``param_1`` ``(S, T, n_out, N)`` (W2)."""

    param_0: np.ndarray = array()
    param_1: np.ndarray = array()


@dataclass(frozen=True)
class FinalWeights(Training):
    """A unit that keeps the final weights only: ``param_0`` ``(S, N, d+1)``, ``param_1``
    ``(S, n_out, N)``."""

    param_0: np.ndarray = array()
    param_1: np.ndarray = array()


View = TypeVar("View", bound=UnitView)
Stored = UnitResult | UnitView  # a stored unit, or a view of one: as_view reads either


def as_view(unit: Stored, view: type[View]) -> View:
    """``unit`` read as ``view`` (checked: a missing field raises before anything is computed);
    a view of that kind already is returned as it is."""
    if isinstance(unit, view):
        return unit
    return view.read(unit.result if isinstance(unit, UnitView) else unit)


def unit_key(family: Family, activation: str) -> Key:
    """The unit of ``family`` with ``activation``.

    Example:
        >>> unit_key(Family.XOR_BOTH, "relu")
        <Key.XOR_BOTH_RELU: 'xor-both-relu'>
    """
    return Key(f"{family}-{activation}")


def width_key(width: int, activation: str) -> str:
    """The hierarchy unit at an extra hidden width (beyond the seed).

    Example:
        >>> width_key(16, "linear")
        'width16-linear'
    """
    return f"width{width}-{activation}"


def unit_keys(config: EarlyLinearizationConfig) -> list[str]:
    """Every unit name a reader of this study may use."""
    widths = [width_key(h, act) for h in config.map_widths for act in ACTIVATIONS]
    return [key.value for key in Key] + widths


def pair(results: Mapping[str, UnitResult], family: Family) -> tuple[UnitResult, UnitResult]:
    """``(ReLU unit, linear unit)`` of ``family``: the same networks, in the same order."""
    return results[unit_key(family, "relu")], results[unit_key(family, "linear")]


def width_pair(
    results: Mapping[str, UnitResult], config: EarlyLinearizationConfig, width: int
) -> tuple[UnitResult, UnitResult]:
    """``(ReLU unit, linear unit)`` on the hierarchy at hidden ``width`` (the main hierarchy
    units at ``config.hidden``)."""
    if width == config.hidden:
        return pair(results, Family.HIERARCHY)
    return results[width_key(width, "relu")], results[width_key(width, "linear")]


#: The uncentred XOR encoding (inputs on {0, 1}²), reported beside ``config.xor_levels``.
UNCENTRED = (0.0, 1.0)


def task_levels(task: str, config: EarlyLinearizationConfig) -> tuple[float, float]:
    """The XOR coordinates' two values of an XOR task: ``config.xor_levels``, or
    :data:`UNCENTRED` for the ``…-uncentred`` tasks."""
    lo, hi = UNCENTRED if task.endswith("-uncentred") else config.xor_levels
    return float(lo), float(hi)


def task_arrays(
    task: str, config: EarlyLinearizationConfig, delta: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` sample-major, without the constant, for ``task`` (see :mod:`relulab.tasks`)."""
    if task == "hierarchy":
        return hierarchical_task(config.n_items)
    if task in ("xor", "xor-uncentred"):
        return xor_task(task_levels(task, config))
    if task in ("xor-linear", "xor-linear-uncentred"):
        delta = config.margin_delta if delta is None else delta
        return xor_linear_task(delta, levels=task_levels(task, config))
    if task == "parallel":
        return parallel_task()
    raise ValueError(f"unknown task {task!r}")


def augmented_task(
    task: str, config: EarlyLinearizationConfig, c: float, delta: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(X̃, Y)`` with the constant ``c`` appended as the last input column (seed 004 §5.1)."""
    X, Y = task_arrays(task, config, delta)
    return append_constant(torch.from_numpy(X), float(c)).numpy(), Y


def _network_seed(config: EarlyLinearizationConfig, k: int) -> int:
    return config.seed * 1000 + k


def _conditions(config: EarlyLinearizationConfig, task: str, kind: str) -> list[dict[str, Any]]:
    """One dict per network: its task, c, Δ, σ², readout bias and seed index."""
    delta = config.margin_delta if task.startswith("xor-linear") else 0.0
    base = {"task": task, "delta": delta, "variance": config.init_variance, "output_bias": False}
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
        "xor-uncentred": config.xor_steps,
        "xor-linear": config.xor_linear_steps,
        "xor-linear-uncentred": config.xor_linear_steps,
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


# family: (task, kind of conditions, parameter snapshots kept)
_FAMILIES = {
    Family.HIERARCHY: ("hierarchy", "main", "trajectory"),
    Family.HIERARCHY_BOTH: ("hierarchy", "both", "none"),
    Family.XOR: ("xor", "main", "none"),
    Family.XOR_BOTH: ("xor", "both", "none"),
    Family.XOR_PLUS_LINEAR: ("xor-linear", "deltas", "final"),
    Family.XOR_UNCENTRED: ("xor-uncentred", "main", "none"),
    Family.XOR_PLUS_LINEAR_UNCENTRED: ("xor-linear-uncentred", "main", "final"),
    Family.PARALLEL: ("parallel", "main", "final"),
    Family.MAP: ("hierarchy", "map", "none"),
}


_VIEWS = {"trajectory": Trajectory, "final": FinalWeights, "none": Training}


def unit_views(config: EarlyLinearizationConfig) -> dict[str, type[UnitView]]:
    """Every unit name :func:`plan` produces, with the view of what it stores.

    Example:
        >>> views = unit_views(EarlyLinearizationConfig())
        >>> views["hierarchy-relu"].__name__, views["parallel-linear"].__name__
        ('Trajectory', 'FinalWeights')
    """
    views: dict[str, type[UnitView]] = {}
    for act in ACTIVATIONS:
        for family, (_, _, snapshots) in _FAMILIES.items():
            views[unit_key(family, act).value] = _VIEWS[snapshots]
        for h in config.map_widths:
            views[width_key(h, act)] = Training
    return views


def plan(config: EarlyLinearizationConfig) -> list[Unit]:
    """Per activation: hierarchy (bias, no bias, c sweep), both-layer biases on the hierarchy
    and on XOR, XOR, XOR + linear (Δ sweep), both XOR tasks in the uncentred encoding, the
    parallel task, the (σ², c) map and one unit per extra hidden width (bias and no bias)."""
    units = []
    for act in ACTIVATIONS:
        units += [
            _train_unit(config, unit_key(family, act), task, act, kind, snapshots)
            for family, (task, kind, snapshots) in _FAMILIES.items()
        ]
        units += [
            _train_unit(config, width_key(h, act), "hierarchy", act, "width", "none", hidden=h)
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
