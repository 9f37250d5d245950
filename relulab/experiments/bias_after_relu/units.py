"""The work of the bias-after-relu study.

* ``sweep-postln-default`` — the seed's sweep: Post-LN students with ReLU−b for every b of the
  config, ``seeds_per_shift`` seeds each (seed ``s`` gives the same weights at every b), trained
  with Adam against a b = 0 teacher; Δ at init recorded per student;
* ``sweep-postln-kaiming``, ``sweep-preln-default`` — the same under Kaiming-normal init and
  under Pre-LN (``variant_seeds_per_shift`` seeds; metrics only);
* ``calibrated`` — students whose shift is calibrated per neuron on the data (metrics);
* ``init-delta`` — no training: Δ of the output at init for every b of the fine grid under both
  inits, Δ of the input, and the zero-mean-activation control.

Every reader reaches a unit through :class:`Key` (or :func:`sweep`), and what it stores through
its typed view (:class:`Training`, :class:`Students`, :class:`InitDeltas`; :func:`unit_views`),
never by a string typed where it is read. A trained unit's final values are its curves' last
record, so the views declare the curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

import numpy as np
import torch

from relulab.engine import (
    BatchedAdam,
    BatchedResidualToy,
    ResidualToySpec,
    SupervisedProblem,
    train,
)
from relulab.experiments.base import Unit
from relulab.experiments.bias_after_relu.config import (
    MAIN,
    VARIANTS,
    BiasAfterReLUConfig,
    fine_shifts,
)
from relulab.experiments.context import RunContext
from relulab.nn.statistics import BATCHED_SAMPLE_DIMS, delta
from relulab.records import UnitView, array, curve, final
from relulab.store import UnitResult

__all__ = [
    "INIT_CHUNK",
    "InitDeltas",
    "Key",
    "Students",
    "Training",
    "estimate_bytes",
    "output_delta",
    "plan",
    "sweep",
    "unit_keys",
    "unit_views",
]

INIT_CHUNK = 64  # networks per forward pass in the init unit (bounds its memory)


class Key(StrEnum):
    """The study's units, by name."""

    SWEEP_POSTLN_DEFAULT = "sweep-postln-default"
    SWEEP_POSTLN_KAIMING = "sweep-postln-kaiming"
    SWEEP_PRELN_DEFAULT = "sweep-preln-default"
    CALIBRATED = "calibrated"
    INIT_DELTA = "init-delta"


def sweep(variant: str) -> Key:
    """The trained sweep of one variant of :data:`VARIANTS`.

    Example:
        >>> sweep("postln-default") is Key.SWEEP_POSTLN_DEFAULT
        True
    """
    return Key(f"sweep-{variant}")


def unit_keys(config: BiasAfterReLUConfig) -> list[str]:
    """Every unit name a reader of this study may use."""
    return [key.value for key in Key]


@dataclass(frozen=True)
class Training(UnitView):
    """What the claims read of trained students: the loss per record ``(S, T)`` (its last
    record is the final loss) and Δ at initialisation per student ``(S,)``."""

    loss: np.ndarray = curve()
    final_loss: np.ndarray = final(key="loss")  # the loss after the last step, float64
    delta_init: np.ndarray = final()


@dataclass(frozen=True)
class Students(Training):
    """A trained unit (the sweeps, the calibrated students): :class:`Training` plus the shares
    of FC1 units dead (never active on the data) and always on, per record ``(S, T)``."""

    dead_fraction: np.ndarray = curve()
    always_on_fraction: np.ndarray = curve()


@dataclass(frozen=True)
class InitDeltas(UnitView):
    """The init unit: Δ of the output at initialisation per network ``(S,)`` and Δ of the
    input itself (one value, ``(1,)``)."""

    delta_init: np.ndarray = final()
    input_delta: np.ndarray = array()


def unit_views(config: BiasAfterReLUConfig) -> dict[str, type[UnitView]]:
    """Every unit name :func:`plan` produces, with the view of what it stores.

    Example:
        >>> views = unit_views(BiasAfterReLUConfig())
        >>> views["sweep-postln-default"].__name__, views["init-delta"].__name__
        ('Students', 'InitDeltas')
    """
    return {key.value: InitDeltas if key is Key.INIT_DELTA else Students for key in Key}


def output_delta(output: torch.Tensor) -> torch.Tensor:
    """Δ per network: std over width of the mean over samples of the output ``(S, N, d)``."""
    return delta(output, BATCHED_SAMPLE_DIMS)


def _spec(config: BiasAfterReLUConfig, norm: Literal["post", "pre"]) -> ResidualToySpec:
    return ResidualToySpec(config.width, config.hidden, config.blocks, norm, config.alpha)


def _inputs(config: BiasAfterReLUConfig, context: RunContext, stream: str) -> torch.Tensor:
    """``n_samples`` standard Gaussian inputs ``(N, width)`` from the run's named stream."""
    x = torch.randn(config.n_samples, config.width, generator=context.generator(stream))
    return x.to(context.dtype).to(context.device)


def _teacher_targets(
    config: BiasAfterReLUConfig,
    norm: Literal["post", "pre"],
    init: str,
    x: torch.Tensor,
    context: RunContext,
) -> torch.Tensor:
    teacher = BatchedResidualToy(
        _spec(config, norm),
        1,
        init=init,
        seeds=[10_000 + config.seed],
        dtype=context.dtype,
        device=context.device,
    )
    with torch.no_grad():
        return teacher.forward(x)[0]


def _train_students(
    config: BiasAfterReLUConfig,
    variant: str,
    conditions: list[dict[str, Any]],
    context: RunContext,
    calibrate: bool = False,
) -> UnitResult:
    norm, init = VARIANTS[variant]
    x = _inputs(config, context, "inputs")
    students = BatchedResidualToy(
        _spec(config, norm),
        len(conditions),
        init=init,
        seeds=[config.seed * 1000 + c["seed"] for c in conditions],
        relu_shift=[0.0 if calibrate else c["b"] for c in conditions],
        dtype=context.dtype,
        device=context.device,
    )
    if calibrate:
        students.calibrate_shifts_(x)
    with torch.no_grad():
        delta_init = output_delta(students.forward(x)).double().cpu().numpy()
    problem = SupervisedProblem(students, x, _teacher_targets(config, norm, init, x, context))
    with context.progress(config.steps, f"{variant}{' calibrated' if calibrate else ''}") as done:
        result = train(
            problem, BatchedAdam(problem.params, config.lr), config.steps, config.record_every, done
        )
    unit = UnitResult.from_training(result, conditions)
    unit.final["delta_init"] = delta_init
    return unit


def _seeds(config: BiasAfterReLUConfig, variant: str) -> int:
    """Trained students per b: the main sweep carries the claims, the variants only metrics."""
    return config.seeds_per_shift if variant == MAIN else config.variant_seeds_per_shift


def _sweep_unit(config: BiasAfterReLUConfig, variant: str) -> Unit:
    conditions = [
        {"variant": variant, "b": b, "seed": s}
        for s in range(_seeds(config, variant))
        for b in config.shifts
    ]
    return Unit(
        sweep(variant), lambda context: _train_students(config, variant, conditions, context)
    )


def _calibrated_unit(config: BiasAfterReLUConfig) -> Unit:
    conditions = [
        {"variant": "calibrated", "b": -1.0, "seed": s}
        for s in range(config.variant_seeds_per_shift)
    ]
    return Unit(
        Key.CALIBRATED,
        lambda context: _train_students(config, MAIN, conditions, context, calibrate=True),
    )


def _init_groups(config: BiasAfterReLUConfig) -> dict[str, list[dict[str, Any]]]:
    """The networks of the init unit, per variant: every b of the fine grid × ``init_seeds``
    under both inits, and ``init_seeds`` zero-mean controls."""
    groups = {
        variant: [
            {"variant": variant, "b": float(b), "seed": s}
            for b in fine_shifts(config)
            for s in range(config.init_seeds)
        ]
        for variant in ("postln-default", "postln-kaiming")
    }
    groups["zero-mean"] = [
        {"variant": "zero-mean", "b": -1.0, "seed": s} for s in range(config.init_seeds)
    ]
    return groups


def _init_deltas(config: BiasAfterReLUConfig, context: RunContext) -> UnitResult:
    """Δ at init, no training: Δ of the input; Δ of the output for every b of the fine grid and
    ``init_seeds`` networks under both inits; the zero-mean control (per-neuron shifts centred on
    a held-out draw of the inputs, so the activation has zero mean in expectation, not by
    construction on the measured sample)."""
    x = _inputs(config, context, "inputs")
    held_out = _inputs(config, context, "calibration")
    groups = _init_groups(config)
    conditions, deltas = [], []
    total = sum(len(g) for g in groups.values())
    with context.progress(total, "Δ at init") as done:
        for variant, group in groups.items():
            for start in range(0, len(group), INIT_CHUNK):
                chunk = group[start : start + INIT_CHUNK]
                deltas.append(_chunk_deltas(config, variant, chunk, x, held_out, context))
                conditions += chunk
                done(len(chunk))
    input_delta = output_delta(x.unsqueeze(0)).double().cpu().numpy()
    return UnitResult.forward_only(
        conditions,
        np.zeros(1),
        {},
        {"delta_init": np.concatenate(deltas)},
        {"input_delta": input_delta},
    )


def _chunk_deltas(
    config: BiasAfterReLUConfig,
    variant: str,
    chunk: list[dict[str, Any]],
    x: torch.Tensor,
    held_out: torch.Tensor,
    context: RunContext,
) -> np.ndarray:
    """Δ of the output at init of one batch of networks of one variant."""
    zero_mean = variant == "zero-mean"
    toy = BatchedResidualToy(
        _spec(config, "post"),
        len(chunk),
        init=VARIANTS[MAIN if zero_mean else variant][1],
        seeds=[config.seed * 1000 + c["seed"] for c in chunk],
        relu_shift=[0.0 if zero_mean else c["b"] for c in chunk],
        dtype=context.dtype,
        device=context.device,
    )
    if zero_mean:
        toy.calibrate_shifts_(held_out)
    with torch.no_grad():
        return output_delta(toy.forward(x)).double().cpu().numpy()


def plan(config: BiasAfterReLUConfig) -> list[Unit]:
    """The three trained sweeps, the calibrated students and the init unit."""
    return [
        *(_sweep_unit(config, variant) for variant in VARIANTS),
        _calibrated_unit(config),
        Unit(Key.INIT_DELTA, lambda context: _init_deltas(config, context)),
    ]


def estimate_bytes(config: BiasAfterReLUConfig) -> int:
    """Peak memory in bytes of the largest unit (one sweep, S = shifts × seeds students): the
    weights with their gradients and Adam moments (4 × 2·width·hidden per block) and the
    activations kept for the backward pass (≈ N·(4·hidden + 4·width) per block). Measured:
    929 MiB peak for an estimate of 989 MiB (6 students, width 100, hidden 400, 10 blocks,
    N = 2000)."""
    itemsize = 8 if config.dtype == "float64" else 4
    students = len(config.shifts) * config.seeds_per_shift
    per_block = 4 * 2 * config.width * config.hidden + config.n_samples * (
        4 * config.hidden + 4 * config.width
    )
    return itemsize * students * config.blocks * per_block
