"""Sweeps: one experiment over the Cartesian product of config overrides, each point a run.

``relulab sweep EXPERIMENT --grid key=v1,v2 [--grid key2=…] --out DIR`` runs every point of the
grid into ``DIR/<point>/`` under the ordinary run contract (``summary.json``, ``report.html``,
figures, ``runs.sqlite``; resumable; locked), with all units of all points scheduled together on
one executor. ``DIR/sweep.json`` lists the points with their settings and claims and
``DIR/sweep.html`` shows each claim's verdict as a function of the swept settings;
:func:`relulab.store.load_sweep` reads every point's networks into one table.

A grid's values are separated by commas, or by semicolons when the text holds one (for a
tuple-valued field: ``--grid widths="30,100;300,1000"`` is two points). Each value is parsed and
checked exactly as ``--set key=value`` is, point by point, before anything is written; the
point's directory is named after its parsed settings (``d=4,lr=0.1``), so the same grid always
maps to the same directories and a re-run resumes. A ``DIR`` holding a sweep of the same
experiment, preset and ``--set`` may be re-used with a wider grid: finished points are kept. A
``DIR`` holding anything else — a robustness run, a run, a diagnose report, a sweep of another
request whose points the new record would orphan — is refused before anything is written.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from relulab.config import ConfigError, apply_overrides, config_to_dict
from relulab.errors import describe_error
from relulab.experiments import get_experiment
from relulab.files import check_output_dir, remove_temporaries, write_atomic
from relulab.records.sweep import SweepPointRecord, SweepRecord
from relulab.report.sweep import write_sweep_page
from relulab.runner.execute import (
    PreparedRun,
    RunFailedError,
    RunOutcome,
    _stderr_warning,
    _with_seed,
    check_rebuildable,
    execute_runs,
    prepare_run,
    rebuild_outputs,
)
from relulab.runner.executor import Executor
from relulab.runner.rundir import check_holds, check_not_in_use, locked
from relulab.store import SWEEP_FILENAME, StoreError, read_sweep_record

__all__ = [
    "MAX_POINTS",
    "SWEEP_PAGE",
    "PreparedSweep",
    "SweepPoint",
    "execute_sweep",
    "parse_grid",
    "point_name",
    "prepare_points",
    "prepare_sweep",
    "checked_sweep",
    "rebuild_sweep",
]

MAX_POINTS = 1000  # a grid of more points is almost certainly a typo
SWEEP_PAGE = "sweep.html"


@dataclass(frozen=True)
class SweepPoint:
    """One point of the grid: its directory name and its settings (JSON-ready values)."""

    name: str
    settings: dict[str, Any]


@dataclass(frozen=True)
class PreparedSweep:
    experiment: str
    preset: str
    grid: dict[str, list[str]]
    fixed: list[str]
    points: list[SweepPoint]
    runs: list[PreparedRun]
    out_dir: Path


def parse_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """``["d=4,8", "lr=0.1"]`` → ``{"d": ["4", "8"], "lr": ["0.1"]}`` (texts, not yet typed).

    Example:
        >>> parse_grid(["d=4,8", "widths=30,100;300,1000"])
        {'d': ['4', '8'], 'widths': ['30,100', '300,1000']}
    """
    if not items:
        raise ConfigError("sweep needs at least one --grid key=v1,v2,…")
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--grid expects key=v1,v2,…, got {item!r}")
        if key in grid:
            raise ConfigError(f"--grid {key} is given twice; give each key once")
        separator = ";" if ";" in text else ","
        values = [value.strip() for value in text.split(separator) if value.strip()]
        if not values:
            raise ConfigError(f"--grid {key} has no values")
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            raise ConfigError(f"--grid {key}: {repeated[0]} is given twice")
        grid[key] = values
    return grid


def _name_part(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "+".join(_name_part(v) for v in value)
    return quote(str(value), safe="._-")


def point_name(settings: dict[str, Any]) -> str:
    """A point's directory name from its parsed settings: ``key=value`` joined by ``,``, tuple
    elements joined by ``+``, and every character of a value other than letters, digits, ``.``,
    ``_`` and ``-`` percent-encoded (``/`` → ``%2F``, ``+`` → ``%2B``, ``,`` → ``%2C``), so that
    names are one path component, readable, and different for different settings (a minus sign
    is kept: ``b2=-1.5``).

    Example:
        >>> point_name({"d": 4, "lr": 0.1, "widths": [30, 100]})
        'd=4,lr=0.1,widths=30+100'
        >>> point_name({"b2": -1.5, "eps": 1e-20, "dataset": "a/b"})
        'b2=-1.5,eps=1e-20,dataset=a%2Fb'
    """
    return ",".join(f"{key}={_name_part(value)}" for key, value in settings.items())


def _check_sweep_dir(
    out: Path,
    experiment: str,
    preset: str,
    fixed: Sequence[str],
    grid: dict[str, list[str]] | None = None,
    kind: str = "sweep",
) -> None:
    """``out`` is absent, empty, or a ``kind`` (``"sweep"`` or ``"robustness run"``) of the same
    experiment, preset, ``--set`` overrides and (for a sweep) grid — resuming it rewrites its
    record, so another request would orphan its points; and no live process writes it."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")
    if not out.is_dir():
        return
    check_not_in_use(out)
    if not check_holds(out, kind) or not (out / SWEEP_FILENAME).is_file():
        return
    try:
        stored = read_sweep_record(out)
    except StoreError as error:
        raise ValueError(f"--out {out}: {error}") from None
    if stored.experiment != experiment:
        raise ValueError(
            f"--out {out} holds a {kind} of {stored.experiment!r}, not {experiment!r}; "
            "choose another"
        )
    # a preset of '' was not recorded; the grid joins these below
    asked: dict[str, object] = {"preset": preset or stored.preset, "--set": sorted(fixed)}
    held: dict[str, object] = {"preset": stored.preset or preset, "--set": sorted(stored.fixed)}
    differs = [key for key in asked if asked[key] != held[key]]
    if grid is not None and not _widens(grid, stored.grid):
        asked["--grid"], held["--grid"] = grid, dict(stored.grid)
        differs.append("--grid")
    if differs:
        key = differs[0]
        raise ValueError(
            f"--out {out} holds a {kind} of {experiment} with {key} {held[key]}, not "
            f"{asked[key]}; re-run with the same request (a sweep's grid may only widen) to "
            "resume it, or choose another directory"
        )


def _widens(grid: dict[str, list[str]], stored: Mapping[str, list[str]]) -> bool:
    """Whether ``grid`` keeps every point of the ``stored`` grid (same keys, no value dropped),
    so re-using the directory orphans none of its points."""
    return list(grid) == list(stored) and all(set(stored[k]) <= set(grid[k]) for k in grid)


def prepare_sweep(
    name: str,
    preset: str,
    grid_items: Sequence[str],
    fixed: Sequence[str],
    seed: int | None,
    device: str,
    out_dir: str | Path,
    allow_dirty: bool = False,
) -> PreparedSweep:
    """Resolve and validate every point of a sweep, writing nothing.

    Args:
        name: the experiment.
        preset: the preset every point starts from.
        grid_items: ``key=v1,v2,…`` texts (``--grid``).
        fixed: ``key=value`` overrides shared by every point (``--set``).
        seed: the run seed (``--seed``), or ``None`` for the preset's.
        device: as for ``relulab run``.
        out_dir: the sweep directory.
        allow_dirty: run into the checkout's ``results/`` from uncommitted code (unregistered).

    Raises:
        ValueError (``ConfigError``, ``OutputPathError``), ``StoreError`` or
        ``DirectoryInUseError``, as :func:`~relulab.runner.prepare_run` does, naming the point.
    """
    experiment = get_experiment(name)
    if preset not in experiment.presets:
        raise ConfigError(
            f"unknown preset {preset!r} for {name}; choose one of {', '.join(experiment.presets)}"
        )
    grid = parse_grid(grid_items)
    fixed_keys = {item.partition("=")[0].strip() for item in fixed}
    both = [key for key in grid if key in fixed_keys]
    if both:
        raise ConfigError(f"{both[0]} is in both --grid and --set; give it once")
    if "seed" in grid and seed is not None:
        raise ConfigError("the seed is given twice (--seed and --grid seed=…); give it once")
    size = 1
    for values in grid.values():
        size *= len(values)
    if size > MAX_POINTS:
        raise ConfigError(f"the grid has {size} points; at most {MAX_POINTS} are allowed")
    out = check_output_dir(out_dir)
    _check_sweep_dir(out, name, preset, fixed, grid)
    point_overrides = [
        [f"{key}={value}" for key, value in zip(grid, values, strict=True)]
        for values in itertools.product(*grid.values())
    ]
    points, runs = prepare_points(
        name, preset, point_overrides, fixed, seed, device, out, allow_dirty=allow_dirty
    )
    return PreparedSweep(name, preset, grid, list(fixed), points, runs, out)


def prepare_points(
    name: str,
    preset: str,
    point_overrides: Sequence[Sequence[str]],
    fixed: Sequence[str],
    seed: int | None,
    device: str,
    out: Path,
    names: Sequence[str] | None = None,
    record_keys: Sequence[str] | None = None,
    allow_dirty: bool = False,
) -> tuple[list[SweepPoint], list[PreparedRun]]:
    """Resolve and validate each point (its ``key=value`` overrides on top of ``fixed``) into a
    run in ``out/<point>/``, writing nothing. A point's settings are its overridden fields' parsed
    values (or those of ``record_keys`` when given); its directory is :func:`point_name` of them
    unless ``names`` gives it.

    Raises:
        ConfigError: a point's overrides are invalid (naming the point), or two points are the
            same setting; and whatever :func:`~relulab.runner.prepare_run` raises.
    """
    experiment = get_experiment(name)
    points: list[SweepPoint] = []
    runs: list[PreparedRun] = []
    seen: dict[str, str] = {}  # point name → its overrides
    for index, overrides in enumerate(point_overrides):
        try:
            config = apply_overrides(
                experiment.presets[preset], _with_seed([*fixed, *overrides], seed)
            )
        except ValueError as error:
            raise ConfigError(f"point {', '.join(overrides) or preset}: {error}") from None
        values = config_to_dict(config)
        keys = record_keys or [item.partition("=")[0].strip() for item in overrides]
        settings = {key: values[key] for key in keys}
        point = SweepPoint(names[index] if names else point_name(settings), settings)
        if point.name in seen:
            raise ConfigError(
                f"--grid points {seen[point.name]} and {', '.join(overrides)} are the same "
                "setting; give distinct values"
            )
        seen[point.name] = ", ".join(overrides)
        runs.append(
            prepare_run(
                name, preset, [*fixed, *overrides], seed, device, out / point.name, allow_dirty
            )
        )
        points.append(point)
    return points, runs


def _point(point: SweepPoint, outcome: RunOutcome | None) -> SweepPointRecord:
    """A point's record: its run's claims once finished, or the error that ended it."""
    if outcome is not None and outcome.summary is not None:
        return SweepPointRecord.of_summary(point.name, point.settings, outcome.summary)
    error = outcome.error if outcome else None
    return SweepPointRecord(
        point.name, point.settings, error=None if error is None else " ".join(str(error).split())
    )


def _record(sweep: PreparedSweep, outcomes: dict[int, RunOutcome]) -> SweepRecord:
    """``sweep.json``: the grid and, per point, its settings, directory, claims or error."""
    return SweepRecord(
        sweep.experiment,
        sweep.preset,
        sweep.grid,
        tuple(sweep.fixed),
        tuple(_point(point, outcomes.get(i)) for i, point in enumerate(sweep.points)),
    )


def execute_sweep(
    sweep: PreparedSweep,
    executor: Executor,
    quiet: bool = False,
    warn: Callable[[str], None] = _stderr_warning,
) -> SweepRecord:
    """Run every unfinished unit of every point on ``executor``, holding ``DIR``'s lock; write
    each point's outputs as it completes, then ``sweep.json`` and ``sweep.html``.

    Returns:
        The record written to ``sweep.json``.

    Raises:
        RunFailedError: a point failed (a unit or its outputs); every other point is finished,
            stored and shown; re-run the same command to resume.
    """
    outcomes: dict[int, RunOutcome] = {}
    with locked(sweep.out_dir):
        remove_temporaries(sweep.out_dir)
        write_atomic(sweep.out_dir / SWEEP_FILENAME, _record(sweep, outcomes).to_json())
        results = execute_runs(
            sweep.runs,
            executor,
            quiet=quiet,
            warn=warn,
            progress=True,
            on_finished=lambda index, outcome: outcomes.__setitem__(index, outcome),
        )
        record = _record(sweep, dict(enumerate(results)))
        text = record.to_json()
        try:
            write_sweep_page(sweep.out_dir / SWEEP_PAGE, record)
        except Exception as error:
            raise RunFailedError(
                f"every point of {sweep.out_dir} is stored, but writing {SWEEP_PAGE} failed "
                f"({describe_error(error)}); re-run the same command to retry"
            ) from error
        write_atomic(sweep.out_dir / SWEEP_FILENAME, text)
    failed = [
        (point, outcome)
        for point, outcome in zip(sweep.points, results, strict=True)
        if outcome.error
    ]
    if failed:
        point, outcome = failed[0]
        others = f" ({len(failed) - 1} more point(s) failed)" if len(failed) > 1 else ""
        raise RunFailedError(
            f"sweep point {point.name} failed{others}: {' '.join(str(outcome.error).split())}; "
            f"the other points are kept in {sweep.out_dir}, re-run the same command to resume"
        )
    return record


def checked_sweep(directory: Path) -> SweepRecord:
    """The sweep's record (:func:`relulab.store.read_sweep_record`) for an experiment this
    relulab knows, with every point a finished run nobody is writing — so that
    :func:`rebuild_sweep` refuses before it writes anything.

    Raises:
        StoreError: an unreadable or malformed ``sweep.json``, a point name outside the sweep,
            or a point whose run is unfinished or unreadable.
        ValueError: an unknown experiment, or no points.
        DirectoryInUseError: a live process writes the sweep or one of its points.
    """
    record = read_sweep_record(directory)
    if not record.grid:  # the sweep page is drawn from it
        raise StoreError(
            f"{directory / SWEEP_FILENAME} is not a readable sweep record (no grid); re-run "
            "the sweep to rebuild it"
        )
    get_experiment(record.experiment)
    check_not_in_use(directory)
    if not record.points:
        raise ValueError(f"{directory / SWEEP_FILENAME} lists no points; re-run the sweep")
    for point in record.points:
        check_rebuildable(directory / point.name)  # unfinished → "re-run it to resume"
    return record


def rebuild_sweep(directory: Path) -> SweepRecord:
    """Rebuild every point's outputs, then ``sweep.json`` and ``sweep.html`` from them — after
    :func:`checked_sweep` has checked everything, so a refusal writes nothing.

    Returns:
        The rebuilt record.
    """
    record = checked_sweep(directory)
    with locked(directory):
        remove_temporaries(directory)
        points = tuple(
            SweepPointRecord.of_summary(
                point.name, point.settings, rebuild_outputs(directory / point.name)
            )
            for point in record.points
        )
        record = dataclasses.replace(record, points=points)
        write_sweep_page(directory / SWEEP_PAGE, record)
        write_atomic(directory / SWEEP_FILENAME, record.to_json())
    return record
