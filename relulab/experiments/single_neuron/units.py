"""The work of the single-neuron study: every sweep is one batched computation.

Each condition (w1, b1, w2, b2, lr, activation, teacher, teacher_bias, parameterisation) is one
network of a :class:`relulab.engine.BatchedSingleNeuron`; networks that share an activation,
teacher and parameterisation train together, each with its own learning rate and, where the
teacher's bias is raised, its own targets.

Every reader reaches a unit through :class:`Key`, and reads it through its typed view
(:class:`Neurons`, whose final values are :class:`Ends`): every unit of the study is the same
kind, trained single neurons, so :func:`unit_views` maps every name to :class:`Neurons`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

import numpy as np
import torch
from torch import Tensor

from relulab.engine import BatchedAdam, BatchedSingleNeuron, train
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.single_neuron.config import SingleNeuronConfig
from relulab.nn.single_neuron import Parameterisation
from relulab.records import UnitResult, UnitSchema, UnitView, array, curve, final
from relulab.tasks import scalar_inputs, scalar_teacher

__all__ = [
    "Ends",
    "Key",
    "Neurons",
    "estimate_bytes",
    "neurons",
    "plan",
    "train_conditions",
    "unit_keys",
    "unit_views",
]


class Key(StrEnum):
    """The study's units, by name."""

    B1_SWEEP = "b1-sweep"
    B2_SWEEP = "b2-sweep"
    LR_SWEEP = "lr-sweep"
    B2_BOUNDARY = "b2-boundary"
    LR_BOUNDARY = "lr-boundary"
    TEACHER_BIAS = "teacher-bias"
    LR_EARLY = "lr-early"
    SILU_VS_RELU = "silu-vs-relu"
    MAP_B1_B2 = "map-b1-b2"
    MAP_B2_LR = "map-b2-lr"


def unit_keys(config: SingleNeuronConfig) -> list[str]:
    """Every unit name a reader of this study may use."""
    return [key.value for key in Key]


@dataclass(frozen=True)
class Ends(UnitView):
    """The final values of a unit of trained neurons, one per network ``(S,)``: the last record,
    kept at full precision (the recorded curves are stored in float32)."""

    loss: np.ndarray = final()
    state: np.ndarray = final()
    w1: np.ndarray = final()
    b1: np.ndarray = final()
    w2: np.ndarray = final()
    b2: np.ndarray = final()


@dataclass(frozen=True)
class Neurons(UnitView):
    """A unit of trained single neurons: per network ``(S, T)`` the loss, the neuron's state
    (:data:`relulab.engine.STATE_CODES`) and the four parameters at every record (``b1`` is
    b' for the reparameterised neuron), the inputs ``x`` they trained on, and their final values
    :attr:`end` (:class:`Ends`, part of this view's schema)."""

    loss: np.ndarray = curve()
    state: np.ndarray = curve()
    w1: np.ndarray = curve()
    b1: np.ndarray = curve()
    w2: np.ndarray = curve()
    b2: np.ndarray = curve()
    x: np.ndarray = array()

    @classmethod
    def schema(cls) -> UnitSchema:
        """The curves and inputs declared here and the final values of :class:`Ends`."""
        return dataclasses.replace(super().schema(), final=Ends.schema().final)

    @cached_property
    def end(self) -> Ends:
        """The final values (the unit's own arrays, no copy)."""
        return Ends.read(self.result)


def neurons(results: Mapping[str, UnitResult], key: str) -> Neurons:
    """The unit ``key`` of a run's results, read as :class:`Neurons` (checked first)."""
    return Neurons.read(results[key], str(key))


def unit_views(config: SingleNeuronConfig) -> dict[str, type[UnitView]]:
    """Every unit :func:`plan` produces → its view: all are :class:`Neurons`."""
    return {key.value: Neurons for key in Key}


def _condition(config: SingleNeuronConfig, **overrides: Any) -> dict[str, Any]:
    """The seed's student (w1 = w2 = 1, b1 = b2 = 0, ReLU, ReLU teacher) with some changes."""
    base = {
        "w1": 1.0,
        "b1": 0.0,
        "w2": 1.0,
        "b2": 0.0,
        "lr": config.lr,
        "activation": "relu",
        "teacher": "relu",
        "teacher_bias": 0.0,
        "parameterisation": "standard",
    }
    return {**base, **overrides}


def train_conditions(
    conditions: list[dict[str, Any]],
    steps: int,
    record_every: int,
    config: SingleNeuronConfig,
    context: RunContext,
    description: str,
) -> UnitResult:
    """Train every condition; one batched problem per (activation, teacher, parameterisation)."""
    x = scalar_inputs(
        config.n_points,
        config.sampling,
        -1.0,
        1.0,
        context.generator("inputs"),
        context.dtype,
        context.device,
    )
    groups: dict[tuple[str, str, Parameterisation], list[int]] = {}
    for i, c in enumerate(conditions):
        groups.setdefault((c["activation"], c["teacher"], c["parameterisation"]), []).append(i)
    parts = []
    with context.progress(steps * len(groups), description) as advance:
        for (activation, teacher, parameterisation), indices in groups.items():
            chosen = [conditions[i] for i in indices]
            w1, b1, w2, b2 = ([c[k] for c in chosen] for k in ("w1", "b1", "w2", "b2"))
            problem = BatchedSingleNeuron(
                x,
                _targets(x, teacher, chosen),
                w1,
                b1,
                w2,
                b2,
                activation=activation,
                parameterisation=parameterisation,
            )
            optimiser = BatchedAdam(
                problem.params, [c["lr"] for c in chosen], config.betas, config.eps
            )
            parts.append((indices, train(problem, optimiser, steps, record_every, advance)))
    return _merge(conditions, parts, {"x": x.cpu().numpy().astype(np.float64)})


def _targets(x: Tensor, teacher: str, chosen: list[dict[str, Any]]) -> Tensor:
    """The teacher's outputs ``(N,)``, or per network ``(S, N)`` when some raise its bias."""
    shifts = [c.get("teacher_bias", 0.0) for c in chosen]
    if not any(shifts):
        return scalar_teacher(x, teacher)
    return torch.stack([scalar_teacher(x, teacher, b2=shift) for shift in shifts])


def _merge(
    conditions: list[dict[str, Any]],
    parts: list[tuple[list[int], Any]],
    arrays: dict[str, np.ndarray],
) -> UnitResult:
    """Put the per-group training results back in the order of ``conditions``."""
    n_total = len(conditions)
    curves: dict[str, np.ndarray] = {}
    final: dict[str, np.ndarray] = {}
    diverged = np.zeros(n_total, dtype=bool)
    diverged_step = np.full(n_total, -1, dtype=np.int64)
    for indices, result in parts:
        for name, values in result.curves.items():
            curves.setdefault(name, np.full((n_total, values.shape[1]), np.nan))[indices] = values
            final.setdefault(name, np.full(n_total, np.nan))[indices] = result.final[name]
        diverged[indices] = result.diverged
        diverged_step[indices] = result.diverged_step
    return UnitResult(conditions, parts[0][1].steps, curves, final, diverged, diverged_step, arrays)


def _unit(
    name: Key,
    description: str,
    make_conditions: Callable[[], list[dict[str, Any]]],
    steps: int,
    record_every: int,
    config: SingleNeuronConfig,
) -> Unit:
    return Unit(
        str(name),
        lambda context: train_conditions(
            make_conditions(), steps, record_every, config, context, description
        ),
    )


def _both_parameterisations(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each condition for the standard neuron w·x + b and the reparameterised w·(x + b')."""
    return [{**c, "parameterisation": p} for p in ("standard", "reparam") for c in conditions]


def _log_grid(bounds: tuple[float, float], n: int) -> np.ndarray:
    return np.geomspace(bounds[0], bounds[1], n)


def _lin_grid(bounds: tuple[float, float], n: int) -> np.ndarray:
    return np.linspace(bounds[0], bounds[1], n)


Conditions = Callable[[], list[dict[str, Any]]]


def _seed_sweeps(c: SingleNeuronConfig) -> list[tuple[Key, str, Conditions]]:
    """The seed's three sweeps and the two fine sweeps that locate its boundaries."""
    b2_fine = _lin_grid(c.b2_boundary_range, c.boundary_points)
    lr_fine = _log_grid(c.lr_boundary_range, c.boundary_points)
    return [
        (Key.B1_SWEEP, "b1 sweep (b2 = 0)", lambda: [_condition(c, b1=v) for v in c.b1_sweep]),
        (Key.B2_SWEEP, "b2 sweep (b1 = 0)", lambda: [_condition(c, b2=v) for v in c.b2_sweep]),
        (
            Key.LR_SWEEP,
            "lr sweep (b2 = -1)",
            lambda: [_condition(c, b2=c.lr_sweep_b2, lr=v) for v in c.lr_sweep],
        ),
        (
            Key.B2_BOUNDARY,
            "b2 boundary",
            lambda: _both_parameterisations([_condition(c, b2=float(v)) for v in b2_fine]),
        ),
        (
            Key.LR_BOUNDARY,
            "lr boundary",
            lambda: _both_parameterisations(
                [_condition(c, b2=c.lr_sweep_b2, lr=float(v)) for v in lr_fine]
            ),
        ),
        (
            Key.TEACHER_BIAS,
            "teacher bias sweep",
            lambda: [_condition(c, teacher_bias=float(v)) for v in c.teacher_bias_sweep],
        ),
    ]


def _maps(c: SingleNeuronConfig) -> list[tuple[Key, str, Conditions]]:
    """The two phase maps, (b1, b2) and (b2, lr), for both parameterisations."""
    b1_axis = _lin_grid(c.grid_b1_range, c.grid_size)
    b2_axis = _lin_grid(c.grid_b2_range, c.grid_size)
    lr_axis = _log_grid(c.grid_lr_range, c.grid_size)
    return [
        (
            Key.MAP_B1_B2,
            "phase map (b1, b2)",
            lambda: _both_parameterisations(
                [_condition(c, b1=float(b1), b2=float(b2)) for b2 in b2_axis for b1 in b1_axis]
            ),
        ),
        (
            Key.MAP_B2_LR,
            "phase map (b2, lr)",
            lambda: _both_parameterisations(
                [_condition(c, b2=float(b2), lr=float(lr)) for lr in lr_axis for b2 in b2_axis]
            ),
        ),
    ]


def plan(config: SingleNeuronConfig) -> list[Unit]:
    """The seed's three sweeps and the fine boundaries, the teacher-bias sweep, the early steps
    of the lr sweep, the SiLU run and the two phase maps."""
    c = config
    units = [
        _unit(key, text, make, c.steps, c.record_every, c) for key, text, make in _seed_sweeps(c)
    ]
    units.append(
        _unit(
            Key.LR_EARLY,
            "early steps of the lr sweep",
            lambda: [_condition(c, b2=c.lr_sweep_b2, lr=v) for v in (c.lr, 0.2, 0.4)],
            c.early_steps,
            1,
            c,
        )
    )
    units.append(
        _unit(
            Key.SILU_VS_RELU,
            "SiLU vs ReLU",
            lambda: [
                _condition(c, b2=c.silu_b2),
                _condition(c, b2=c.silu_b2, activation="silu", teacher=c.silu_teacher),
            ],
            c.silu_steps,
            c.record_every,
            c,
        )
    )
    units += [
        _unit(key, text, make, c.steps, c.grid_record_every, c) for key, text, make in _maps(c)
    ]
    return units


def estimate_bytes(config: SingleNeuronConfig) -> int:
    """Peak memory in bytes of the largest unit: a phase map (2·grid_size² neurons), a
    boundary sweep (2·boundary_points) or SiLU vs ReLU (long): the batched training's
    temporaries (≈ 12 per neuron and input point), the six recorded curves on the device, merged
    in float64 and packed in float32, and each condition's dict and stored rows (≈ 1 KiB).
    Measured: 344 MiB peak for an estimate of 341 MiB (grid_size 150, n_points 100)."""
    itemsize = 8 if config.dtype == "float64" else 4
    units = (  # (neurons, recorded steps)
        (2 * config.grid_size**2, config.steps // config.grid_record_every + 2),
        (2 * config.boundary_points, config.steps // config.record_every + 2),
        (2, config.silu_steps // config.record_every + 2),
    )
    return max(
        12 * neurons * config.n_points * itemsize
        + 6 * neurons * records * (itemsize + 8 + 4)
        + 1024 * neurons
        for neurons, records in units
    )
