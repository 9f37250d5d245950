"""The run contract: run an experiment into a directory, resumably, and write its outputs.

``OUT/summary.json`` = ``{experiment, preset, config, claims, metrics, …}``, ``OUT/report.html``
(self-contained), the figures (PNG) and ``OUT/runs.sqlite``. Everything is checked before
anything is written (:func:`prepare_run`), so a bad request leaves no trace. While running, the
directory is locked against a second writer (:mod:`relulab.runner.rundir`). A unit that fails
raises :class:`RunFailedError` (one line) and leaves the finished units stored and the directory
resumable; so does a failure while building the outputs. ``summary.json`` is written last and
atomically, and removed when a rebuild starts: it exists exactly when the outputs are complete.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from relulab.config import ConfigError, apply_overrides, config_to_dict, provenance
from relulab.errors import describe_error
from relulab.experiments import get_experiment
from relulab.experiments.base import Experiment
from relulab.faults import fault_point
from relulab.files import check_output_dir, remove_temporaries, write_atomic
from relulab.progress import UnitLines, stderr_is_terminal
from relulab.report import write_run_report
from relulab.runner.environment import library_versions, resolve_device
from relulab.runner.parallel import (
    PoolExecutor,
    RayExecutor,
    SerialExecutor,
    UnitTask,
    make_executor,
)
from relulab.runner.resources import check_memory
from relulab.runner.rundir import DirectoryInUseError, check_not_in_use, check_run_dir, locked
from relulab.store import STORE_FILENAME, RunStore, StoreError

__all__ = [
    "PreparedRun",
    "RunFailedError",
    "RunOutcome",
    "execute_runs",
    "describe_error",
    "prepare_run",
    "execute",
    "check_rebuildable",
    "rebuild_outputs",
    "SUMMARY_FILENAME",
]

SUMMARY_FILENAME = "summary.json"


class RunFailedError(RuntimeError):
    """A run that started and then failed; its finished units are kept and it can resume."""


@dataclass(frozen=True)
class PreparedRun:
    experiment: Experiment
    preset: str
    config: Any
    device: torch.device
    out_dir: Path


def _with_seed(overrides: list[str], seed: int | None) -> list[str]:
    if seed is None:
        return overrides
    if any(item.partition("=")[0].strip() == "seed" for item in overrides):
        raise ConfigError("the seed is given twice (--seed and --set seed=…); give it once")
    return [*overrides, f"seed={seed}"]


def prepare_run(
    name: str, preset: str, overrides: list[str], seed: int | None, device: str, out_dir: str | Path
) -> PreparedRun:
    """Resolve and validate everything a run needs, writing nothing.

    Checks the experiment, preset and overrides (generic field rules and the config's own
    ``validate``), the device, that ``out_dir`` can be written, is free and holds nothing else,
    and that the experiment's memory estimate fits. Raises ``ValueError`` (``ConfigError``,
    ``OutputPathError``), ``StoreError`` or ``DirectoryInUseError``.
    """
    experiment = get_experiment(name)
    if preset not in experiment.presets:
        raise ConfigError(
            f"unknown preset {preset!r} for {name}; choose one of {', '.join(experiment.presets)}"
        )
    config = apply_overrides(experiment.presets[preset], _with_seed(list(overrides), seed))
    resolved = resolve_device(device)
    out_path = check_output_dir(out_dir)
    check_run_dir(out_path, name, preset, config_to_dict(config))
    if out_path.is_dir():
        check_not_in_use(out_path)
    if experiment.estimate_bytes is not None:
        check_memory(int(experiment.estimate_bytes(config)), resolved, f"{name} with this config")
    return PreparedRun(experiment, preset, config, resolved, out_path)


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _warn_on_changed_environment(
    store: RunStore,
    run: PreparedRun,
    warn: Callable[[str], None],
    threads: int,
    versions: dict[str, str],
) -> None:
    """Units computed under another thread count or device differ in the last bits, and under
    another relulab commit perhaps more: say so. ``versions`` are this run's."""
    recorded = store.meta()["versions"]
    earlier = sorted({t for t in store.unit_threads().values() if t is not None})
    if not earlier and "torch_threads" in recorded:
        earlier = [int(recorded["torch_threads"])]
    if earlier and earlier != [threads]:
        before = ", ".join(map(str, earlier))
        warn(
            f"resuming {run.out_dir}: its finished units ran with {before} torch thread(s), "
            f"this run uses {threads}; units computed now may differ from them in the last bits "
            f"(pass --threads {earlier[0]} to match)"
        )
    device = recorded.get("device")
    if device is not None and device != str(run.device):
        warn(
            f"resuming {run.out_dir}: its finished units ran on {device}, this run uses "
            f"{run.device}; results may differ in the last bits"
        )
    commit, now = recorded.get("relulab_commit"), versions.get("relulab_commit")
    if commit is not None and now is not None and commit != now:
        warn(
            f"resuming {run.out_dir}: its finished units ran at relulab commit {commit}, this "
            f"run is at {now}; units computed now may differ from them"
        )


def _stderr_warning(message: str) -> None:
    sys.stderr.write(f"relulab: warning: {message}\n")


@dataclass
class RunOutcome:
    """How one of several runs executed together ended: its summary, or the error that ended
    it (a :class:`RunFailedError`, ``StoreError`` or ``DirectoryInUseError``)."""

    run: PreparedRun
    summary: dict[str, Any] | None = None
    error: Exception | None = None


Executor = SerialExecutor | PoolExecutor | RayExecutor


def execute(
    run: PreparedRun,
    quiet: bool = False,
    warn: Callable[[str], None] = _stderr_warning,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Run every unfinished unit, then write summary, figures and report; returns the summary.

    Args:
        run: from :func:`prepare_run`.
        quiet: no progress display.
        warn: where warnings go (default: one line each on stderr).
        executor: where the units run (:func:`~relulab.runner.parallel.make_executor`;
            default: one after another in this process).

    Raises:
        RunFailedError: a unit or the outputs failed; finished units stay stored, re-run to resume.
        DirectoryInUseError: another process is writing ``run.out_dir``.
        StoreError: the directory's store cannot be used.
    """
    with contextlib.ExitStack() as stack:
        if executor is None:
            executor = stack.enter_context(make_executor(quiet=quiet))
        (outcome,) = execute_runs([run], executor, quiet=quiet, warn=warn)
    if outcome.error is not None:
        raise outcome.error
    assert outcome.summary is not None
    return outcome.summary


class _Session:
    """One run directory being written: its lock, open store and the units still to compute."""

    def __init__(self, run: PreparedRun, pending: list[str], store: RunStore, stack) -> None:
        self.run = run
        self.pending = pending
        self.store = store
        self.stack = stack
        self.failures: list[tuple[str, BaseException]] = []

    def close(self) -> None:
        self.stack.close()


def _open_session(run: PreparedRun, executor: Executor, warn: Callable[[str], None]) -> _Session:
    config_dict = config_to_dict(run.config)
    versions = {**library_versions(), "device": str(run.device)}
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(locked(run.out_dir))
        remove_temporaries(run.out_dir)
        check_run_dir(run.out_dir, run.experiment.name, run.preset, config_dict)
        store = stack.enter_context(
            RunStore.create_or_resume(
                run.out_dir / STORE_FILENAME,
                run.experiment.name,
                run.preset,
                config_dict,
                versions,
            )
        )
        done = store.done_units()
        pending = [unit.name for unit in run.experiment.plan(run.config) if unit.name not in done]
        if done and pending:
            _warn_on_changed_environment(store, run, warn, executor.unit_threads(), versions)
    except BaseException:
        stack.close()
        raise
    return _Session(run, pending, store, stack)


def _task(index: int, run: PreparedRun, unit: str, executor: Executor) -> UnitTask:
    return UnitTask(
        run=index,
        unit=unit,
        experiment=run.experiment.name,
        module=run.experiment.plan.__module__,
        config=run.config,
        device=str(run.device),
        dtype=getattr(run.config, "dtype", "float32"),
        seed=run.config.seed,
        threads=executor.task_threads(),
    )


def _unit_failure(session: _Session) -> RunFailedError:
    """One line: the (first) failed unit, how many more failed, what is kept and what to do."""
    run = session.run
    unit, error = session.failures[0]
    more = len(session.failures) - 1
    also = (
        f"; {more} more unit(s) failed: "
        + ", ".join(repr(name) for name, _ in session.failures[1:])
        if more
        else ""
    )
    kept = len(session.store.done_units())
    advice = (
        f"{kept} finished unit(s) are kept in {run.out_dir}: re-run the same "
        "command to resume, or choose another --out for a different config"
        if kept
        else f"no unit had finished; {run.out_dir} may be reused by any config"
    )
    failure = RunFailedError(
        f"{run.experiment.name}: unit {unit!r} failed ({describe_error(error)}){also}; {advice}"
    )
    failure.__cause__ = error
    return failure


def execute_runs(
    runs: Sequence[PreparedRun],
    executor: Executor,
    quiet: bool = False,
    warn: Callable[[str], None] = _stderr_warning,
    progress: bool | None = None,
    on_finished: Callable[[int, RunOutcome], None] | None = None,
    robustness: Mapping[str, Any] | None = None,
) -> list[RunOutcome]:
    """Execute several runs together: every unfinished unit of every run goes to ``executor``
    at once, each result is stored by this process as it comes back, and each run's outputs are
    written as soon as its last unit is stored.

    A run whose directory cannot be used, whose unit failed or whose outputs failed ends with an
    error in its :class:`RunOutcome`; the others go on. With the serial executor a failing unit
    skips the rest of its run; the other executors compute every unit.

    Args:
        runs: from :func:`prepare_run`, each into its own directory.
        executor: where the units run (:func:`~relulab.runner.parallel.make_executor`).
        quiet: no progress display.
        warn: where warnings go.
        progress: one bar over all units (default: unless the executor is serial, whose units
            show their own bars).
        on_finished: called with (index, outcome) as each run ends.
        robustness: experiment → its ``relulab robustness`` run
            (:class:`~relulab.runner.robustness.RobustnessRun`): those reports gain the
            robustness column.

    Returns:
        One :class:`RunOutcome` per run, in order.
    """
    outcomes: list[RunOutcome | None] = [None] * len(runs)

    def finish(index: int, outcome: RunOutcome) -> None:
        outcomes[index] = outcome
        if on_finished is not None:
            on_finished(index, outcome)

    sessions: dict[int, _Session] = {}
    try:
        for index, run in enumerate(runs):
            try:
                sessions[index] = _open_session(run, executor, warn)
            except (StoreError, DirectoryInUseError) as error:
                finish(index, RunOutcome(run, error=error))

        def complete(index: int) -> None:
            session = sessions.pop(index)
            if session.failures:
                failure = _unit_failure(session)
                session.close()
                finish(index, RunOutcome(session.run, error=failure))
                return
            session.store.close()
            try:
                summary = _rebuild_outputs(session.run.out_dir, robustness)
            except (RunFailedError, StoreError) as error:
                finish(index, RunOutcome(session.run, error=error))
            else:
                finish(index, RunOutcome(session.run, summary=summary))
            finally:
                session.close()

        for index in [i for i, s in sessions.items() if not s.pending]:
            complete(index)
        tasks = [
            _task(index, session.run, unit, executor)
            for index, session in sessions.items()
            for unit in session.pending
        ]
        several = len(runs) > 1

        def label(task: UnitTask) -> str:
            return f"{runs[task.run].out_dir.name}/{task.unit}" if several else task.unit

        def skip(task: UnitTask) -> bool:
            return task.run not in sessions  # its run ended (a serial executor's failure)

        show = (executor.kind != "serial") if progress is None else progress
        terminal = stderr_is_terminal()
        if show and terminal and isinstance(executor, SerialExecutor):
            executor.quiet = True  # one live display at a time: ours, not the units' own bars
        # off a terminal: a line per finished unit instead of the bar (relulab.progress)
        lines = None if quiet or terminal else UnitLines(len(tasks))
        with _progress_bar(len(tasks), quiet or not show) as advance:
            advance(0, executor.activity(label))
            for outcome in executor.outcomes(tasks, skip):
                if outcome is None:
                    advance(0, executor.activity(label))
                    continue
                index, unit = outcome.task.run, outcome.task.unit
                session = sessions[index]
                session.pending.remove(unit)
                if outcome.error is not None:
                    session.failures.append((unit, outcome.error))
                    if not executor.keeps_going:
                        session.pending.clear()
                else:
                    session.store.save_unit(unit, outcome.result, threads=outcome.threads)
                    fault_point(f"unit-saved:{unit}")
                advance(1, executor.activity(label))
                if lines is not None:
                    lines.finished(
                        _run_label(runs, index), unit, outcome.wall_s, outcome.error is not None
                    )
                if not session.pending:
                    complete(index)
    finally:
        for session in sessions.values():
            session.close()
    return [outcome for outcome in outcomes if outcome is not None]


def _run_label(runs: Sequence[PreparedRun], index: int) -> str:
    """The experiment of run ``index``, with its directory's name when that says more (a sweep
    point: ``anisotropy d=4``)."""
    run = runs[index]
    name, where = run.experiment.name, run.out_dir.name
    return f"{name} {where}" if len(runs) > 1 and where != name else name


@contextlib.contextmanager
def _progress_bar(total: int, silent: bool) -> Iterator[Callable[[int, str], None]]:
    """One bar over ``total`` units with the workers' current activity; silent off a terminal
    (where :class:`relulab.progress.UnitLines` writes a line per unit instead)."""
    console = Console(stderr=True)
    if silent or total == 0 or not console.is_terminal:
        yield lambda n, activity: None
        return
    columns = (
        TextColumn("units"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("", total=total)
        yield lambda n, activity: bar.update(task, advance=n, description=activity)


def rebuild_outputs(
    out_dir: str | Path, robustness: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """(Re)compute claims, metrics, figures, ``summary.json`` and ``report.html`` from the store,
    holding the directory's lock; with ``robustness`` (experiment → its ``relulab robustness``
    run) the report gains the robustness column.

    Raises:
        StoreError: no usable store, or an unfinished run.
        DirectoryInUseError: another process is writing ``out_dir``.
        RunFailedError: the analysis, a figure or the report failed.
    """
    out_dir = Path(out_dir)
    if not (out_dir / STORE_FILENAME).is_file():
        raise StoreError(f"no run store at {out_dir / STORE_FILENAME}")
    with locked(out_dir):
        remove_temporaries(out_dir)
        return _rebuild_outputs(out_dir, robustness)


def _finished_plan(store: RunStore, out_dir: Path) -> tuple[dict[str, Any], Experiment, Any, list]:
    """Meta, experiment, config and unit names of the run in ``store``; :class:`StoreError` if
    this relulab cannot rebuild it or a unit is missing."""
    meta = store.meta()
    try:
        experiment = get_experiment(meta["experiment"])
        config = experiment.config(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in meta["config"].items()}
        )
    except (ValueError, TypeError) as error:
        raise StoreError(
            f"{out_dir} holds a run this relulab cannot rebuild ({describe_error(error)})"
        ) from None
    expected_units = [unit.name for unit in experiment.plan(config)]
    missing = [name for name in expected_units if name not in store.done_units()]
    if missing:
        raise StoreError(
            f"{out_dir} is an unfinished run (missing: {', '.join(missing)}); re-run it to resume"
        )
    return meta, experiment, config, expected_units


def check_rebuildable(out_dir: str | Path) -> None:
    """Refuse, writing nothing, a directory whose outputs :func:`rebuild_outputs` could not
    rebuild: no store, an unreadable or foreign one, an unfinished run, a live writer.

    Raises:
        StoreError: no usable store, or an unfinished run.
        DirectoryInUseError: another process is writing ``out_dir``.
    """
    out_dir = Path(out_dir)
    if not (out_dir / STORE_FILENAME).is_file():
        raise StoreError(f"no run store at {out_dir / STORE_FILENAME}")
    check_not_in_use(out_dir)
    with RunStore.open(out_dir / STORE_FILENAME) as store:
        _finished_plan(store, out_dir)


def _stored_run(out_dir: Path) -> tuple[dict[str, Any], Experiment, Any, dict, dict]:
    """Meta, experiment, config, verified unit results and per-unit threads of a finished run."""
    with RunStore.open(out_dir / STORE_FILENAME) as store:
        meta, experiment, config, expected_units = _finished_plan(store, out_dir)
        results = {name: store.unit(name) for name in expected_units}
        threads = store.unit_threads()
    return meta, experiment, config, results, threads


def _rebuild_outputs(out_dir: Path, robustness: Mapping[str, Any] | None = None) -> dict[str, Any]:
    meta, experiment, config, results, threads = _stored_run(out_dir)
    (out_dir / SUMMARY_FILENAME).unlink(missing_ok=True)  # present again only when complete
    try:
        own = (robustness or {}).get(experiment.name)
        summary = _write_outputs(out_dir, meta, experiment, config, results, threads, own)
    except Exception as error:
        raise RunFailedError(
            f"all units of {out_dir} are stored, but building its outputs failed "
            f"({describe_error(error)}); `relulab report {out_dir}` retries"
        ) from error
    return summary


def _about(experiment: Experiment) -> str:
    """The report's "About": the study package's docstring (its module's, for a one-module
    study), else the experiment's one-line summary."""
    module = inspect.getmodule(experiment.plan)
    package = sys.modules.get(module.__package__ or "") if module else None
    for candidate in (package, module):
        if candidate is not None and candidate.__name__ != "relulab.experiments":
            text = inspect.getdoc(candidate)
            if text:
                return text
    return experiment.summary


def claim_rows(claims: Sequence[Any], preset: str) -> list[dict[str, Any]]:
    """The claims of an analysis as ``summary.json`` lists them (JSON-ready, non-finite
    numbers as ``None``)."""
    return [
        {
            **asdict(c),
            "measured": _finite_or_none(c.measured),
            "passed": bool(c.passed),
            "ci_low": None if c.ci_low is None else _finite_or_none(c.ci_low),
            "ci_high": None if c.ci_high is None else _finite_or_none(c.ci_high),
            "preset": preset,
        }
        for c in claims
    ]


def rejudge(out_dir: str | Path, overrides: Sequence[str]) -> dict[str, Any]:
    """The claims and metrics of the finished run in ``out_dir`` judged again under its config
    with ``overrides`` — fields that only the claims read (``setting(..., judging=True)``), so
    the stored units are the ones the changed config would compute. Writes nothing.

    Raises:
        StoreError: no usable store, or an unfinished run.
        ValueError: an override of a field that is not ``judging``, or an invalid value.
    """
    out_dir = Path(out_dir)
    meta, experiment, config, results, _ = _stored_run(out_dir)
    changed = apply_overrides(config, list(overrides))
    kinds = {f.name: f.metadata.get("judging", False) for f in dataclasses.fields(changed)}
    before = config_to_dict(config)
    computed = [
        key
        for key, value in config_to_dict(changed).items()
        if value != before[key] and not kinds.get(key)
    ]
    if computed:
        raise ValueError(f"{computed[0]} changes what the units compute; run it, do not rejudge")
    analysis = experiment.analyse(results, changed)
    return {
        "claims": claim_rows(analysis.claims, meta["preset"]),
        "metrics": {k: _finite_or_none(v) for k, v in analysis.metrics.items()},
    }


def _write_outputs(
    out_dir: Path,
    meta: dict[str, Any],
    experiment: Experiment,
    config: Any,
    results: dict,
    threads: dict,
    robustness: Any = None,
) -> dict[str, Any]:
    preset = config_to_dict(experiment.presets[meta["preset"]])
    analysis = experiment.analyse(results, config)
    figures = experiment.figures(results, config, out_dir)
    fault_point("outputs-figures")
    summary = {
        "experiment": experiment.name,
        "title": experiment.title,
        "seed_document": experiment.seed,
        "preset": meta["preset"],
        "config": meta["config"],
        "config_provenance": provenance(config),
        "overrides": {k: v for k, v in meta["config"].items() if preset.get(k) != v},
        "claims": claim_rows(analysis.claims, meta["preset"]),
        "metrics": {k: _finite_or_none(v) for k, v in analysis.metrics.items()},
        "units": {
            name: {
                "networks": r.n_networks,
                "wall_s": round(r.wall_s, 3),
                "diverged": int(r.diverged.sum()),
                "threads": threads.get(name),
            }
            for name, r in results.items()
        },
        "versions": meta["versions"],
        "created": meta["created"],
        "device": meta["versions"].get("device", "unknown"),
    }
    text = json.dumps(summary, indent=2, allow_nan=False)
    about = _about(experiment)
    write_run_report(out_dir, summary, figures, about=about, robustness=robustness)
    fault_point("outputs-report")
    write_atomic(out_dir / SUMMARY_FILENAME, text)
    return summary
