"""``relulab list | run | reproduce | report``: experiments under the run contract."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from rich.table import Table
from rich.text import Text

from relulab.checkout import checkout_root
from relulab.cli.common import (
    EXIT_CLAIMS_DO_NOT_HOLD,
    MAX_JOBS,
    STANDING_STYLES,
    VERDICT_STYLES,
    UsageError,
    add_executor_options,
    add_run_options,
    apply_threads,
    console,
    executor_from,
    name_list,
)
from relulab.experiments import REGISTRY
from relulab.files import check_output_dir, write_atomic
from relulab.records.claims import ClaimRecord
from relulab.records.robustness import RobustnessRun, find_robustness_runs, robustness_for
from relulab.records.standing import Standing, standing
from relulab.records.summary import SummaryRecord
from relulab.report import INDEX_FILENAME, REPORT_FILENAME, write_index
from relulab.report.scorecard import format_interval, format_measured
from relulab.report.site import IndexEntry, claim_robustness, counts, index_counts
from relulab.runner import (
    DirectoryInUseError,
    PreparedRun,
    RunFailedError,
    RunOutcome,
    check_not_in_use,
    check_rebuildable,
    execute,
    execute_runs,
    is_scaffolding,
    locked,
    prepare_run,
    rebuild_outputs,
)
from relulab.runner.rundir import directory_holds
from relulab.runner.sweep import SWEEP_PAGE, rebuild_sweep
from relulab.store import STORE_FILENAME, SWEEP_FILENAME, StoreError, has_store, open_run_store

__all__ = ["SCORECARD_FILENAME", "add_parsers", "COMMANDS"]

SCORECARD_FILENAME = "scorecard.json"
ROBUSTNESS_HELP = (
    "a finished `relulab robustness` run, or a directory of them (DIR/EXPERIMENT/"
    "robustness.json), whose readings are weighed into each claim's headline standing (and "
    "linked); default: the checkout's committed records (results/robustness/PRESET), where "
    "there are; 'none': no record (every standing says 'robustness not measured')"
)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    commands.add_parser(
        "list",
        help="list the experiments with their seeds and presets",
        description="List the experiments with their seed documents and presets.",
    )

    run = commands.add_parser(
        "run",
        help="run one experiment into a directory (resumable)",
        description="Run one experiment. Writes summary.json, report.html, "
        "figures and runs.sqlite into --out; re-running into the same "
        "directory resumes and skips finished work.",
    )
    run.add_argument("experiment", help="experiment name (see `relulab list`)")
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a preset field (repeatable), e.g. --set steps=2000",
    )
    run.add_argument("--out", default=None, help="run directory (default runs/EXPERIMENT-PRESET)")
    run.add_argument("--robustness", default=None, metavar="DIR", help=ROBUSTNESS_HELP)
    add_run_options(run)
    add_executor_options(run)

    reproduce = commands.add_parser(
        "reproduce",
        help="run every experiment; write index.html",
        description="Run every experiment (or --only some) into "
        "OUT/EXPERIMENT and write OUT/index.html with the scorecard.",
    )
    reproduce.add_argument("--out", default=None, help="directory (default runs/reproduce-PRESET)")
    reproduce.add_argument(
        "--only", default=None, metavar="NAMES", help="comma-separated experiment names to run"
    )
    reproduce.add_argument("--robustness", default=None, metavar="DIR", help=ROBUSTNESS_HELP)
    add_run_options(reproduce)
    add_executor_options(reproduce)

    report = commands.add_parser(
        "report",
        help="rebuild reports from a run directory",
        description="Recompute claims, figures, summary.json and "
        "report.html from the run store in DIR (or, for a reproduce "
        "directory, every run in it and index.html).",
    )
    report.add_argument("directory", help="a run directory or a reproduce directory")
    report.add_argument("--robustness", default=None, metavar="DIR", help=ROBUSTNESS_HELP)


def print_scorecard(summary: SummaryRecord, robustness: RobustnessRun | None = None) -> None:
    """The claims table after a run: expected, measured (unit, interval), this run's verdict and
    the claim's headline standing; the count line (claims by standing, beyond-the-seed claims
    and checks apart); then the reason for each claim that does not hold (its detail, or why it
    was not tested) and what flips each claim that depends on a reading."""
    record = robustness.record if robustness is not None else None
    standings = {c.id: standing(c, record) for c in summary.claims}
    line = counts(summary, robustness)
    title = f"{summary.experiment} ({summary.preset}): {line['line']}"
    if line["stand_in"]:
        title += f" · stand-in (mechanism only): {line['stand_in']}"
    if line["beyond"]:
        title += f" · beyond the seed: {line['beyond']}"
    if line["checks"]:
        title += f" · checks: {line['checks']}"
    table = Table(title=title)
    for column in ("claim", "expected", "measured", "verdict", "standing"):
        table.add_column(column, overflow="fold")
    for claim in summary.claims:
        row = claim.to_json()
        measured = "\n".join(filter(None, (format_measured(row), format_interval(row))))
        name = claim.id + ("\n(beyond the seed)" if claim.beyond_seed else "")
        name += "\n(stand-in data)" if claim.stand_in else ""
        headline = standings[claim.id]
        table.add_row(
            Text(name),
            Text(claim.expected),
            Text(measured),
            Text(claim.verdict, style=VERDICT_STYLES[claim.verdict]),
            Text(headline.text(), style=STANDING_STYLES[headline.verdict]),
        )
    terminal = console()
    terminal.print(table)
    for claim in summary.claims:
        headline = standings[claim.id]
        if claim.verdict != "holds":
            line_text = Text(f"{claim.id} {claim.verdict}: ", style=VERDICT_STYLES[claim.verdict])
            terminal.print(line_text + Text(_reason(claim)))
        elif headline.verdict == "depends":
            terminal.print(
                Text(f"{claim.id} depends: ", style=STANDING_STYLES["depends"])
                + Text("holds here, not in the readings on " + ", ".join(headline.flipped_by))
            )
    failing_checks = [c.id for c in summary.checks if c.verdict not in ("holds", "not tested")]
    if failing_checks:
        terminal.print(
            Text("checks that do not hold (the simulation may be broken): ", style="red")
            + Text(", ".join(failing_checks))
        )


def _reason(claim: ClaimRecord) -> str:
    if claim.verdict == "not tested":
        return claim.why_not_tested or "no reason recorded"
    return claim.detail or "no detail recorded"


def _claims_with(summaries: Sequence[SummaryRecord | None], outcomes: set[str]) -> list[str]:
    return [
        f"{summary.experiment}:{claim.id}"
        for summary in summaries
        if summary
        for claim in summary.claims
        if claim.verdict in outcomes
    ]


def _strict_exit(args: argparse.Namespace, summaries: Sequence[SummaryRecord | None]) -> int:
    """``EXIT_CLAIMS_DO_NOT_HOLD`` under ``--strict`` when a tested claim (of the seed or beyond
    it) fails or is inconclusive, else 0. Claims that were not tested decide nothing: they are
    named on stderr so a pipeline sees what it did not gate on. Checks never gate."""
    if not getattr(args, "strict", False):
        return 0
    untested = _claims_with(summaries, {"not tested"})
    if untested:
        sys.stderr.write(
            f"relulab: --strict: {len(untested)} claim(s) not tested at this preset (not "
            f"gated): {', '.join(untested)}\n"
        )
    failing = _claims_with(summaries, {"fails", "inconclusive"})
    if not failing:
        return 0
    sys.stderr.write(
        f"relulab: --strict: {len(failing)} claim(s) do not hold: {', '.join(failing)}\n"
    )
    return EXIT_CLAIMS_DO_NOT_HOLD


def _command_list(_: argparse.Namespace) -> int:
    table = Table(title="relulab experiments")
    for column in ("name", "seed", "title", "presets"):
        table.add_column(column)
    for experiment in REGISTRY.values():
        table.add_row(
            experiment.name, experiment.seed, experiment.title, ", ".join(experiment.presets)
        )
    console().print(table)
    return 0


def _prepare(
    name: str, args: argparse.Namespace, overrides: Sequence[str], out: str | Path
) -> PreparedRun:
    try:
        return prepare_run(
            name,
            args.preset,
            list(overrides),
            args.seed,
            args.device,
            out,
            getattr(args, "allow_dirty", False),
        )
    except (ValueError, StoreError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None


def _command_run(args: argparse.Namespace) -> int:
    out = f"runs/{args.experiment}-{args.preset}" if args.out is None else args.out
    prepared = _prepare(args.experiment, args, args.overrides, out)
    out = prepared.out_dir
    robustness = _robustness_runs(args, [(args.experiment, args.preset)])
    apply_threads(args)
    with executor_from(args) as executor:
        summary = execute(prepared, quiet=args.quiet, executor=executor, robustness=robustness)
    if not args.quiet:
        print_scorecard(summary, (robustness or {}).get(summary.experiment))
        console().print(f"report: {out / REPORT_FILENAME}")
    return _strict_exit(args, [summary])


def _selected_experiments(only: str | None) -> list[str]:
    if only is None:
        return list(REGISTRY)
    names = name_list(only, "--only") or []
    unknown = [name for name in names if name not in REGISTRY]
    if unknown or not names:
        raise UsageError(
            f"unknown experiment(s) in --only: {', '.join(unknown) or only!r}; "
            f"known: {', '.join(REGISTRY)}"
        )
    return names


def _check_reproduce_dir(out_text: str) -> Path:
    try:
        out = check_output_dir(out_text)
        if out.is_dir():
            check_not_in_use(out)
    except (ValueError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    holds = directory_holds(out)
    if holds not in (None, "other files"):  # a reproduction is a directory of runs
        raise UsageError(f"--out {out} holds a relulab {holds}, not a reproduction; choose another")
    children = (
        [child for child in out.iterdir() if not is_scaffolding(child.name)] if out.is_dir() else []
    )
    if (
        children
        and not (out / SCORECARD_FILENAME).exists()
        and not any(has_store(child) for child in children)
    ):
        raise UsageError(
            f"--out {out} is not empty and holds no relulab runs; choose another directory"
        )
    return out


def _index_entry(
    name: str, summary: SummaryRecord | None, error: str | None, folder: str | None = None
) -> IndexEntry:
    """One experiment of the index; ``folder`` is the run's directory name (default ``name``)."""
    title = REGISTRY[name].title if name in REGISTRY else name
    return IndexEntry(name, title, f"{folder or name}/{REPORT_FILENAME}", summary, error)


def committed_robustness(preset: str) -> Path | None:
    """The checkout's committed robustness records at ``preset``
    (``results/robustness/<preset>/``), when relulab runs from a checkout that has them."""
    root = checkout_root()
    directory = root / "results" / "robustness" / preset if root is not None else None
    return directory if directory is not None and directory.is_dir() else None


def _robustness_runs(
    args: argparse.Namespace, reported: Sequence[tuple[str, str]]
) -> dict[str, RobustnessRun] | None:
    """The robustness runs weighed into the reported (experiment, preset) pairs' standings:
    ``--robustness DIR``'s, none with ``--robustness none``, and by default the checkout's
    committed records at the preset (each speaks only for the claims whose registration it
    recorded). A refusal of a given ``DIR`` (:class:`UsageError`) writes nothing."""
    directory = getattr(args, "robustness", None)
    if directory == "none":
        return None
    if directory is None:
        presets = {preset for _, preset in reported}
        committed = committed_robustness(presets.pop()) if len(presets) == 1 else None
        if committed is None:
            return None
        try:
            return robustness_for(find_robustness_runs(committed), reported, committed)
        except ValueError:  # no committed record of these experiments at this preset
            return None
    try:
        return robustness_for(find_robustness_runs(directory), reported, directory)
    except ValueError as error:
        raise UsageError(f"--robustness: {error}") from None


def _scorecard_experiment(
    out: Path, entry: IndexEntry, robustness: Mapping[str, RobustnessRun] | None
) -> dict[str, Any]:
    """One experiment of ``scorecard.json``: its claims (each with its ``standing`` and, where
    a robustness record has the claim, its ``robustness`` row), its checks and count lines."""
    summary = entry.summary
    if summary is None:
        return {"experiment": entry.name, "error": entry.error, "claims": [], "checks": []}
    run = (robustness or {}).get(entry.name)
    record = run.record if run is not None else None
    claims = []
    for claim in summary.claims:
        headline = standing(claim, record)
        row = {**claim.to_json(summary.preset), "standing": _standing_json(headline)}
        if run is not None:
            row["robustness"] = claim_robustness(run, claim.id, out)
        claims.append(row)
    lines = counts(summary, run)
    return {
        "experiment": entry.name,
        "error": entry.error,
        "claims": claims,
        "checks": [c.to_json(summary.preset) for c in summary.checks],
        "count": lines["line"],
        "counts": lines["headline"],
        "stand_in_count": lines["stand_in"],
        "beyond_seed_count": lines["beyond"],
        "checks_count": lines["checks"],
        "registration": None
        if summary.registration is None
        else dataclasses.asdict(summary.registration),
    }


def _standing_json(headline: Standing) -> dict[str, Any]:
    return {
        "verdict": headline.verdict,
        "readings": headline.readings,
        "holds": headline.holds,
        "flipped_by": list(headline.flipped_by),
        "measured": headline.measured,
        "why_unmeasured": headline.why_unmeasured,
    }


def _write_scorecard(
    out: Path,
    entries: list[IndexEntry],
    preset: str,
    robustness: Mapping[str, RobustnessRun] | None = None,
) -> Path:
    totals = index_counts(entries, robustness)
    scorecard = {
        "preset": preset,
        "experiments": [_scorecard_experiment(out, e, robustness) for e in entries],
        "count": totals["line"],
        "counts": totals["headline"],
        "stand_in_count": totals["stand_in"],
        "beyond_seed_count": totals["beyond"],
        "checks_count": totals["checks"],
    }
    write_atomic(out / SCORECARD_FILENAME, json.dumps(scorecard, indent=2, allow_nan=False))
    return write_index(out, entries, preset, robustness)


def _command_reproduce(args: argparse.Namespace) -> int:
    names = _selected_experiments(args.only)
    out = _check_reproduce_dir(f"runs/reproduce-{args.preset}" if args.out is None else args.out)
    prepared = [_prepare(name, args, [], out / name) for name in names]
    robustness = _robustness_runs(args, [(name, args.preset) for name in names])
    apply_threads(args)
    args.jobs = reproduce_jobs(args, prepared)
    with executor_from(args) as executor, locked(out):
        # The index exists from the start (reports link back to it) and follows the progress.
        entries = [_index_entry(run.experiment.name, None, None) for run in prepared]
        _write_scorecard(out, entries, args.preset, robustness)

        def finished(position: int, outcome: RunOutcome) -> None:
            name = outcome.run.experiment.name
            error = None if outcome.error is None else " ".join(str(outcome.error).split())
            if error is not None:
                sys.stderr.write(f"relulab: {name} failed: {error}\n")
            elif not args.quiet:
                assert outcome.summary is not None  # a run without an error has its summary
                print_scorecard(outcome.summary, (robustness or {}).get(name))
            entries[position] = _index_entry(name, outcome.summary, error)
            _write_scorecard(out, entries, args.preset, robustness)

        # Every unit of every experiment goes to the executor at once; each experiment's
        # outputs are written as soon as its last unit is stored. The smallest experiment
        # starts first, so its scorecard is on screen within seconds (issue 44).
        order = smallest_first(prepared)
        execute_runs(
            [prepared[i] for i in order],
            executor,
            quiet=args.quiet,
            on_finished=lambda position, outcome: finished(order[position], outcome),
            robustness=robustness,
        )
        index = _write_scorecard(out, entries, args.preset, robustness)
    if not args.quiet:
        console().print(f"{index_counts(entries, robustness)['line']}\nindex: {index}")
    if any(entry.error for entry in entries):
        return 1
    return _strict_exit(args, [entry.summary for entry in entries])


def smallest_first(runs: Sequence[PreparedRun]) -> list[int]:
    """The order ``reproduce`` hands the runs to the executor: the run with the fewest units
    first, the others in registry order (the index keeps registry order)."""
    if not runs:
        return []
    sizes = [len(run.experiment.plan(run.config)) for run in runs]
    first = min(range(len(runs)), key=lambda i: (sizes[i], i))
    return [first, *(i for i in range(len(runs)) if i != first)]


def reproduce_jobs(args: argparse.Namespace, runs: Sequence[PreparedRun] = ()) -> int | None:
    """``reproduce``'s worker processes: ``--jobs`` when given; else, for the local executor on
    the CPU, one per CPU this process may use (issue 44: the quick reproduction's many small
    units keep one thread busy each; 2 workers ran five quick studies in 132 s against 218 s of
    units one after another on 2 threads), one thread each. On a GPU, with Ray, and for a study
    registered at run time outside relulab (a fresh worker may not find it), the units run as
    ``--jobs`` says (default: one after another; Ray: no limit)."""
    if args.jobs is not None or args.executor != "local" or args.device not in ("auto", "cpu"):
        return args.jobs
    if any(not run.experiment.plan.__module__.startswith("relulab.") for run in runs):
        return None
    if args.device == "auto" and torch.cuda.is_available():
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cpus, MAX_JOBS) if cpus and cpus > 1 else None


def _runs_in(directory: Path) -> list[Path]:
    """The run directories of a reproduce directory, each checked writable, free and holding a
    readable store — so that a refusal comes before any of them is rebuilt."""
    runs = (
        sorted(child for child in directory.iterdir() if has_store(child))
        if directory.is_dir()
        else []
    )
    if not runs:
        raise UsageError(
            f"{directory} holds no relulab run (no {STORE_FILENAME} in it or its sub-directories)"
        )
    for run_dir in runs:
        check_output_dir(run_dir, "report directory")
        check_rebuildable(run_dir)  # readable, finished, free: checked before anything is written
    return runs


def _run_identity(run_dir: Path) -> tuple[str, str]:
    """(experiment, preset) of the run stored in ``run_dir``."""
    with open_run_store(run_dir) as store:
        meta = store.meta()
    return meta["experiment"], meta["preset"]


def _command_report(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        if not directory.is_dir():
            raise UsageError(f"{directory} is not a directory")
        check_output_dir(directory, "report directory")
        if has_store(directory):
            check_rebuildable(directory)
            robustness = _robustness_runs(args, [_run_identity(directory)])
            rebuild_outputs(directory, robustness)
            print(directory / REPORT_FILENAME)
            return 0
        if os.path.lexists(directory / SWEEP_FILENAME):  # a sweep: its page, not an index
            if args.robustness is not None:
                raise UsageError(
                    f"--robustness applies to a run or a reproduce directory; {directory} is "
                    "a sweep"
                )
            rebuild_sweep(directory)
            print(directory / SWEEP_PAGE)
            return 0
        runs = _runs_in(directory)
        robustness = _robustness_runs(args, [_run_identity(r) for r in runs])
    except (StoreError, ValueError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    return _report_reproduce_dir(directory, runs, robustness)


def _report_reproduce_dir(
    directory: Path, runs: list[Path], robustness: Mapping[str, RobustnessRun] | None
) -> int:
    """Rebuild every run of a reproduce directory (already checked), then its index."""
    with locked(directory):
        # Write the index first so that every rebuilt report links back to it.
        if not (directory / INDEX_FILENAME).is_file():
            write_index(directory, [], "")
        entries = []
        for run_dir in runs:
            try:
                summary = rebuild_outputs(run_dir, robustness)
            except (StoreError, DirectoryInUseError) as error:  # others may be rebuilt already
                raise RunFailedError(f"rebuilding {run_dir} failed: {error}") from None
            entries.append(_index_entry(summary.experiment, summary, None, run_dir.name))
        first = entries[0].summary
        assert first is not None  # every entry is a rebuilt run's
        _write_scorecard(directory, entries, first.preset, robustness)
    print(directory / INDEX_FILENAME)
    return 0


COMMANDS = {
    "list": _command_list,
    "run": _command_run,
    "reproduce": _command_reproduce,
    "report": _command_report,
}
