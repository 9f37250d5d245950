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
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from relulab.config import ConfigError, apply_overrides, config_to_dict
from relulab.engine.checkpoint import CHECKPOINT_DIRNAME, checkpoint_every, remove_checkpoints
from relulab.errors import describe_error
from relulab.experiments import get_experiment
from relulab.experiments.base import Experiment
from relulab.faults import fault_point
from relulab.files import check_output_dir, remove_temporaries
from relulab.progress import UnitLines, stderr_is_terminal
from relulab.records import UnitSchemaError
from relulab.records.robustness import RobustnessRun
from relulab.records.summary import SummaryRecord
from relulab.registry import check_clean_for_results
from relulab.runner.environment import library_versions, resolve_device
from relulab.runner.outputs import (
    SUMMARY_FILENAME,
    RunFailedError,
    build_outputs,
    check_rebuildable,
    check_unit,
    rebuild_outputs,
)
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
    name: str,
    preset: str,
    overrides: list[str],
    seed: int | None,
    device: str,
    out_dir: str | Path,
    allow_dirty: bool = False,
) -> PreparedRun:
    """Resolve and validate everything a run needs, writing nothing.

    Checks the experiment, preset and overrides (generic field rules and the config's own
    ``validate``), the device, that ``out_dir`` can be written, is free and holds nothing else,
    that a run into the checkout's ``results/`` comes from committed code (unless
    ``allow_dirty``: :func:`relulab.registry.check_clean_for_results`), and that the
    experiment's memory estimate fits. Raises ``ValueError`` (``ConfigError``,
    ``OutputPathError``, ``DirtyTreeError``), ``StoreError`` or ``DirectoryInUseError``.
    """
    experiment = get_experiment(name)
    if preset not in experiment.presets:
        raise ConfigError(
            f"unknown preset {preset!r} for {name}; choose one of {', '.join(experiment.presets)}"
        )
    config = apply_overrides(experiment.presets[preset], _with_seed(list(overrides), seed))
    resolved = resolve_device(device)
    out_path = check_output_dir(out_dir)
    check_clean_for_results(out_path, allow_dirty)
    check_run_dir(out_path, name, preset, config_to_dict(config))
    if out_path.is_dir():
        check_not_in_use(out_path)
    if experiment.estimate_bytes is not None:
        check_memory(int(experiment.estimate_bytes(config)), resolved, f"{name} with this config")
    return PreparedRun(experiment, preset, config, resolved, out_path)


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
    summary: SummaryRecord | None = None
    error: Exception | None = None


Executor = SerialExecutor | PoolExecutor | RayExecutor


def execute(
    run: PreparedRun,
    quiet: bool = False,
    warn: Callable[[str], None] = _stderr_warning,
    executor: Executor | None = None,
    robustness: Mapping[str, RobustnessRun] | None = None,
) -> SummaryRecord:
    """Run every unfinished unit, then write summary, figures and report; returns the summary.

    Args:
        run: from :func:`prepare_run`.
        quiet: no progress display.
        warn: where warnings go (default: one line each on stderr).
        executor: where the units run (:func:`~relulab.runner.parallel.make_executor`;
            default: one after another in this process).
        robustness: experiment → its robustness run, weighed into the report's standings.

    Raises:
        RunFailedError: a unit or the outputs failed; finished units stay stored, re-run to resume.
        DirectoryInUseError: another process is writing ``run.out_dir``.
        StoreError: the directory's store cannot be used.
    """
    with contextlib.ExitStack() as stack:
        if executor is None:
            executor = stack.enter_context(make_executor(quiet=quiet))
        (outcome,) = execute_runs([run], executor, quiet=quiet, warn=warn, robustness=robustness)
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
        checkpoints=str(run.out_dir / CHECKPOINT_DIRNAME),
        checkpoint_every=checkpoint_every(),
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
    robustness: Mapping[str, RobustnessRun] | None = None,
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
            (:class:`~relulab.records.RobustnessRun`): those reports weigh its readings into
            each claim's standing.

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
            remove_checkpoints(session.run.out_dir)  # the area, now empty
            try:
                summary = build_outputs(session.run.out_dir, robustness)
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
                elif (mismatch := _schema_mismatch(session.run, unit, outcome.result)) is not None:
                    session.failures.append((unit, mismatch))
                else:
                    session.store.save_unit(unit, outcome.result, threads=outcome.threads)
                    fault_point(f"unit-saved:{unit}")
                    remove_checkpoints(session.run.out_dir, unit)  # stored: not needed
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


def _schema_mismatch(run: PreparedRun, unit: str, result: Any) -> UnitSchemaError | None:
    """The error when a computed unit does not hold what its study declares (it is not stored:
    a reader could not use it)."""
    try:
        check_unit(run.experiment, run.config, unit, result)
    except UnitSchemaError as error:
        return error
    return None


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
