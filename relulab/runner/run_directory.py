"""One run directory while its units are computed: checked, locked, its store open, each unit's
outcome saved as it comes back and its outputs written when the last one is in
(:class:`RunDirectory`).

It builds on :mod:`relulab.runner.rundir` (the checks and the lock) and
:mod:`relulab.runner.outputs` (summary, figures, report); it is not part of ``rundir`` because
``outputs`` itself locks directories through ``rundir``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from relulab.config import config_to_dict
from relulab.engine.checkpoint import remove_checkpoints
from relulab.errors import describe_error
from relulab.experiments.base import Experiment
from relulab.faults import fault_point
from relulab.files import remove_temporaries
from relulab.records import UnitSchemaError
from relulab.records.robustness import RobustnessRun
from relulab.records.summary import SummaryRecord
from relulab.runner.environment import library_versions
from relulab.runner.outputs import RunFailedError, build_outputs, check_unit
from relulab.runner.parallel import Outcome
from relulab.runner.rundir import check_run_dir, locked
from relulab.store import STORE_FILENAME, RunStore, StoreError

__all__ = ["PreparedRun", "RunDirectory", "RunOutcome"]


@dataclass(frozen=True)
class PreparedRun:
    """A run resolved and validated (:func:`relulab.runner.prepare_run`), nothing written yet:
    its experiment, preset, config, device and directory."""

    experiment: Experiment
    preset: str
    config: Any
    device: torch.device
    out_dir: Path


@dataclass
class RunOutcome:
    """How one of several runs executed together ended: its summary, or the error that ended
    it (a :class:`RunFailedError`, ``StoreError`` or ``DirectoryInUseError``)."""

    run: PreparedRun
    summary: SummaryRecord | None = None
    error: Exception | None = None


class RunDirectory:
    """One run directory being written: its lock (held from before the first unit is computed
    until its outputs are written), its open store, the units still to come and those that
    failed. Made by :meth:`open`; ends with :meth:`complete` (or :meth:`close`)."""

    def __init__(
        self, run: PreparedRun, store: RunStore, pending: list[str], stack: contextlib.ExitStack
    ) -> None:
        self.run = run
        self.store = store
        self.pending = pending
        self.failures: list[tuple[str, BaseException]] = []
        self._stack = stack

    @classmethod
    def open(cls, run: PreparedRun, threads: int, warn: Callable[[str], None]) -> RunDirectory:
        """Lock ``run.out_dir``, clear a killed process's temporaries, check it again under the
        lock and open (or resume) its store; warn when finished units ran under another thread
        count (``threads``: this run's), device or commit.

        Raises:
            DirectoryInUseError: another process holds the directory.
            StoreError: its store cannot be used.
        """
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
            pending = [u.name for u in run.experiment.plan(run.config) if u.name not in done]
            if done and pending:
                _warn_on_changed_environment(store, run, warn, threads, versions)
        except BaseException:
            stack.close()
            raise
        return cls(run, store, pending, stack)

    @property
    def computed(self) -> bool:
        """Whether no unit is left to come back (every one stored, failed or skipped)."""
        return not self.pending

    def save(self, outcome: Outcome, keeps_going: bool) -> None:
        """Take one unit's outcome: store its result (then drop its checkpoints), or note its
        failure — its error, or a result that does not hold what its study declares. Unless
        ``keeps_going``, a failure skips the run's other units."""
        unit = outcome.task.unit
        self.pending.remove(unit)
        if outcome.error is not None:
            self.failures.append((unit, outcome.error))
            if not keeps_going:
                self.pending.clear()
        elif (mismatch := _schema_mismatch(self.run, unit, outcome.result)) is not None:
            self.failures.append((unit, mismatch))
        else:
            self.store.save_unit(unit, outcome.result, threads=outcome.threads)
            fault_point(f"unit-saved:{unit}")
            remove_checkpoints(self.run.out_dir, unit)  # stored: not needed

    def complete(self, robustness: Mapping[str, RobustnessRun] | None) -> RunOutcome:
        """End the run: its failure (the directory released at once), or its outputs written
        (``robustness`` weighed into the report's standings) while the lock is still held —
        the caller reports the outcome, then calls :meth:`close`."""
        if self.failures:
            try:
                return RunOutcome(self.run, error=_unit_failure(self))
            finally:
                self.close()
        self.store.close()
        remove_checkpoints(self.run.out_dir)  # the area, now empty
        try:
            summary = build_outputs(self.run.out_dir, robustness)
        except (RunFailedError, StoreError) as error:
            return RunOutcome(self.run, error=error)
        return RunOutcome(self.run, summary=summary)

    def close(self) -> None:
        """Close the store and release the lock (again: nothing)."""
        self._stack.close()


def _schema_mismatch(run: PreparedRun, unit: str, result: Any) -> UnitSchemaError | None:
    """The error when a computed unit does not hold what its study declares (it is not stored:
    a reader could not use it)."""
    try:
        check_unit(run.experiment, run.config, unit, result)
    except UnitSchemaError as error:
        return error
    return None


def _unit_failure(directory: RunDirectory) -> RunFailedError:
    """One line: the (first) failed unit, how many more failed, what is kept and what to do."""
    run = directory.run
    unit, error = directory.failures[0]
    more = len(directory.failures) - 1
    also = (
        f"; {more} more unit(s) failed: "
        + ", ".join(repr(name) for name, _ in directory.failures[1:])
        if more
        else ""
    )
    kept = len(directory.store.done_units())
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
