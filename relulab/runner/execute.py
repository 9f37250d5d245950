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
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from relulab.config import ConfigError, apply_overrides, config_to_dict
from relulab.engine.checkpoint import CHECKPOINT_DIRNAME, checkpoint_every
from relulab.errors import describe_error
from relulab.experiments import get_experiment
from relulab.files import check_output_dir
from relulab.progress import UnitLines, stderr_is_terminal
from relulab.records.robustness import RobustnessRun
from relulab.records.summary import SummaryRecord
from relulab.registry import check_clean_for_results
from relulab.resources import check_memory
from relulab.runner.environment import resolve_device
from relulab.runner.executor import Executor
from relulab.runner.outputs import (
    SUMMARY_FILENAME,
    RunFailedError,
    check_rebuildable,
    rebuild_outputs,
)
from relulab.runner.parallel import Outcome, UnitTask, make_executor
from relulab.runner.run_directory import PreparedRun, RunDirectory, RunOutcome
from relulab.runner.rundir import DirectoryInUseError, check_not_in_use, check_run_dir
from relulab.store import StoreError

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


def _stderr_warning(message: str) -> None:
    sys.stderr.write(f"relulab: warning: {message}\n")


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
            made: Executor = make_executor(quiet=quiet)  # the protocol, not a union of three
            executor = stack.enter_context(made)
        (outcome,) = execute_runs([run], executor, quiet=quiet, warn=warn, robustness=robustness)
    if outcome.error is not None:
        raise outcome.error
    assert outcome.summary is not None
    return outcome.summary


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
    outcomes: dict[int, RunOutcome] = {}

    def finish(index: int, outcome: RunOutcome) -> None:
        outcomes[index] = outcome
        if on_finished is not None:
            on_finished(index, outcome)

    def end(index: int) -> None:
        directory = directories.pop(index)
        try:
            finish(index, directory.complete(robustness))
        finally:
            directory.close()

    directories: dict[int, RunDirectory] = {}
    try:
        _open_directories(runs, executor.unit_threads(), warn, directories, finish)
        for index in [i for i, directory in directories.items() if directory.computed]:
            end(index)
        tasks = [
            _task(index, directory.run, unit, executor)
            for index, directory in directories.items()
            for unit in directory.pending
        ]

        def skip(task: UnitTask) -> bool:
            return task.run not in directories  # its run ended (a serial executor's failure)

        with _display(runs, len(tasks), executor, quiet, progress) as show:
            for outcome in executor.outcomes(tasks, skip):
                if outcome is not None:
                    directories[outcome.task.run].save(outcome, executor.keeps_going)
                show(outcome)
                if outcome is not None and directories[outcome.task.run].computed:
                    end(outcome.task.run)
    finally:
        for directory in directories.values():
            directory.close()
    return [outcomes[index] for index in sorted(outcomes)]


def _open_directories(
    runs: Sequence[PreparedRun],
    threads: int,
    warn: Callable[[str], None],
    into: dict[int, RunDirectory],
    finish: Callable[[int, RunOutcome], None],
) -> None:
    """Open every run's directory into ``into`` (index → directory); a run whose directory
    cannot be used ends there (``finish``), the others go on."""
    for index, run in enumerate(runs):
        try:
            into[index] = RunDirectory.open(run, threads, warn)
        except (StoreError, DirectoryInUseError) as error:
            finish(index, RunOutcome(run, error=error))


@contextlib.contextmanager
def _display(
    runs: Sequence[PreparedRun],
    total: int,
    executor: Executor,
    quiet: bool,
    progress: bool | None,
) -> Iterator[Callable[[Outcome | None], None]]:
    """Show the progress of ``total`` units: one bar on a terminal (by default unless the
    executor is serial, whose units show their own bars), else a line per finished unit
    (:class:`relulab.progress.UnitLines`); nothing when ``quiet``. Yields the function to call
    with each outcome as it is stored (``None``: a tick, the workers' activity refreshed)."""
    several = len(runs) > 1

    def label(task: UnitTask) -> str:
        return f"{runs[task.run].out_dir.name}/{task.unit}" if several else task.unit

    show = (executor.kind != "serial") if progress is None else progress
    terminal = stderr_is_terminal()
    if show and terminal:
        executor.quiet = True  # one live display at a time: ours, not the units' own bars
    lines = None if quiet or terminal else UnitLines(total)
    with _progress_bar(total, quiet or not show) as advance:
        advance(0, executor.activity(label))

        def shown(outcome: Outcome | None) -> None:
            advance(0 if outcome is None else 1, executor.activity(label))
            if outcome is not None and lines is not None:
                task = outcome.task
                failed = outcome.error is not None
                lines.finished(_run_label(runs, task.run), task.unit, outcome.wall_s, failed)

        yield shown


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
