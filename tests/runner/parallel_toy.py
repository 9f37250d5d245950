"""A toy experiment for the parallel tests, importable by worker processes (they find it as
this module's ``EXPERIMENT``; tests register it in the driver's registry themselves).

Its three units draw from ``context.generator(name)``; the unit named by the config's
``fail_unit`` raises — always, or while the file ``fail_while`` exists (a transient failure:
remove the file and the same config resumes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from relulab.experiments.base import Analysis, Experiment, Unit
from relulab.store import UnitResult

UNITS = ("first", "second", "third")


@dataclasses.dataclass(frozen=True)
class ParallelToyConfig:
    seed: int = 0
    scale: float = 1.0
    fail_unit: str = ""
    fail_while: str = ""


def _run(name: str, config: ParallelToyConfig):
    def run(context) -> UnitResult:
        failing = not config.fail_while or Path(config.fail_while).exists()
        if name == config.fail_unit and failing:
            raise IndexError(f"unit {name} fails on request")
        values = torch.randn(3, generator=context.generator(name), dtype=torch.float64).numpy()
        return UnitResult(
            [{"unit": name, "i": i} for i in range(3)],
            np.arange(2),
            {"value": np.stack([values, values * config.scale], axis=1)},
            {"value": values * config.scale},
            np.zeros(3, bool),
            np.full(3, -1),
        )

    return run


def plan(config: ParallelToyConfig) -> list[Unit]:
    return [Unit(name, _run(name, config)) for name in UNITS]


def analyse(results, config) -> Analysis:
    return Analysis([], {name: float(r.final["value"].sum()) for name, r in results.items()})


EXPERIMENT = Experiment(
    name="parallel-toy",
    title="parallel toy",
    seed="none",
    summary="three units, one may fail on request",
    config=ParallelToyConfig,
    presets={"quick": ParallelToyConfig()},
    plan=plan,
    analyse=analyse,
    figures=lambda results, config, out_dir: [],
)
