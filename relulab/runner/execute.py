"""The run contract: run an experiment into a directory, resumably, and write its outputs.

``OUT/summary.json`` = ``{experiment, preset, config, claims, metrics, …}``, ``OUT/report.html``
(self-contained), the figures (PNG) and ``OUT/runs.sqlite``. Everything is checked before
anything is written (:func:`prepare_run`), so a bad request leaves no trace.
"""

from __future__ import annotations

import inspect
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from relulab.config import ConfigError, apply_overrides, config_to_dict, provenance, validate
from relulab.experiments import get_experiment
from relulab.experiments.base import Experiment
from relulab.experiments.context import RunContext
from relulab.report import write_run_report
from relulab.runner.environment import library_versions, resolve_device
from relulab.store import STORE_FILENAME, RunStore, StoreError

__all__ = ["PreparedRun", "prepare_run", "execute", "rebuild_outputs", "SUMMARY_FILENAME"]

SUMMARY_FILENAME = "summary.json"


@dataclass(frozen=True)
class PreparedRun:
    experiment: Experiment
    preset: str
    config: Any
    device: torch.device
    out_dir: Path


def _check_run_dir(out_dir: Path, experiment: str, preset: str, config: dict[str, Any]) -> None:
    """Refuse a path that is a file, a non-empty foreign directory or a different run's store."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir} exists and is not a directory")
    store_path = out_dir / STORE_FILENAME
    if store_path.exists():
        with RunStore.open(store_path) as store:
            store.check_same_run(experiment, preset, config)
    elif out_dir.is_dir() and any(out_dir.iterdir()):
        raise ValueError(
            f"--out {out_dir} is not empty and holds no relulab run; choose another directory"
        )


def prepare_run(
    name: str, preset: str, overrides: list[str], seed: int | None, device: str, out_dir: str | Path
) -> PreparedRun:
    """Resolve and validate everything a run needs; raises ``ValueError``/``StoreError``."""
    experiment = get_experiment(name)
    if preset not in experiment.presets:
        raise ConfigError(
            f"unknown preset {preset!r} for {name}; choose one of {', '.join(experiment.presets)}"
        )
    config = apply_overrides(experiment.presets[preset], list(overrides))
    if seed is not None:
        config = apply_overrides(config, [f"seed={seed}"])
    validate(config)
    out_path = Path(out_dir)
    _check_run_dir(out_path, name, preset, config_to_dict(config))
    return PreparedRun(experiment, preset, config, resolve_device(device), out_path)


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def execute(run: PreparedRun, quiet: bool = False) -> dict[str, Any]:
    """Run every unfinished unit, then write summary, figures and report; returns the summary."""
    run.out_dir.mkdir(parents=True, exist_ok=True)
    config_dict = config_to_dict(run.config)
    dtype = getattr(torch, getattr(run.config, "dtype", "float32"))
    context = RunContext(device=run.device, dtype=dtype, seed=run.config.seed, quiet=quiet)
    with RunStore.create_or_resume(
        run.out_dir / STORE_FILENAME,
        run.experiment.name,
        run.preset,
        config_dict,
        {**library_versions(), "device": str(run.device)},
    ) as store:
        done = store.done_units()
        for unit in run.experiment.plan(run.config):
            if unit.name in done:
                continue
            started = time.perf_counter()
            result = unit.run(context)
            result.wall_s = time.perf_counter() - started
            store.save_unit(unit.name, result)
    return rebuild_outputs(run.out_dir)


def rebuild_outputs(out_dir: str | Path) -> dict[str, Any]:
    """(Re)compute claims, metrics, figures, ``summary.json`` and ``report.html`` from the store."""
    out_dir = Path(out_dir)
    with RunStore.open(out_dir / STORE_FILENAME) as store:
        meta = store.meta()
        experiment = get_experiment(meta["experiment"])
        config = experiment.config(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in meta["config"].items()}
        )
        expected_units = [unit.name for unit in experiment.plan(config)]
        missing = [name for name in expected_units if name not in store.done_units()]
        if missing:
            raise StoreError(
                f"{out_dir} is an unfinished run (missing: {', '.join(missing)}); "
                "re-run it to resume"
            )
        results = {name: store.unit(name) for name in expected_units}
    preset = config_to_dict(experiment.presets[meta["preset"]])
    analysis = experiment.analyse(results, config)
    figures = experiment.figures(results, config, out_dir)
    summary = {
        "experiment": experiment.name,
        "title": experiment.title,
        "seed_document": experiment.seed,
        "preset": meta["preset"],
        "config": meta["config"],
        "config_provenance": provenance(config),
        "overrides": {k: v for k, v in meta["config"].items() if preset.get(k) != v},
        "claims": [
            {
                **asdict(c),
                "measured": _finite_or_none(c.measured),
                "passed": bool(c.passed),
                "ci_low": None if c.ci_low is None else _finite_or_none(c.ci_low),
                "ci_high": None if c.ci_high is None else _finite_or_none(c.ci_high),
                "preset": meta["preset"],
            }
            for c in analysis.claims
        ],
        "metrics": {k: _finite_or_none(v) for k, v in analysis.metrics.items()},
        "units": {
            name: {
                "networks": r.n_networks,
                "wall_s": round(r.wall_s, 3),
                "diverged": int(r.diverged.sum()),
            }
            for name, r in results.items()
        },
        "versions": meta["versions"],
        "created": meta["created"],
        "device": meta["versions"].get("device", "unknown"),
    }
    (out_dir / SUMMARY_FILENAME).write_text(json.dumps(summary, indent=2, allow_nan=False))
    about = inspect.getdoc(inspect.getmodule(experiment.plan)) or experiment.summary
    write_run_report(out_dir, summary, figures, about=about)
    return summary
