"""``relulab list | run | reproduce | report``: experiments under the run contract."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from relulab.cli.common import (
    EXIT_CLAIMS_DO_NOT_HOLD,
    VERDICT_STYLES,
    UsageError,
    add_executor_options,
    add_run_options,
    apply_threads,
    console,
    executor_from,
)
from relulab.experiments import REGISTRY
from relulab.files import check_output_dir, write_atomic
from relulab.report import INDEX_FILENAME, REPORT_FILENAME, write_index
from relulab.report.scorecard import (
    count_text,
    format_interval,
    format_measured,
    is_beyond_seed,
    verdict,
)
from relulab.report.site import claim_robustness
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
from relulab.runner.robustness import RobustnessRun, find_robustness_runs, robustness_for
from relulab.runner.sweep import SWEEP_PAGE, rebuild_sweep
from relulab.store import STORE_FILENAME, SWEEP_FILENAME, RunStore, StoreError

__all__ = ["SCORECARD_FILENAME", "add_parsers", "COMMANDS"]

SCORECARD_FILENAME = "scorecard.json"
ROBUSTNESS_HELP = (
    "a finished `relulab robustness` run, or a directory of them (DIR/EXPERIMENT/"
    "robustness.json): the claims tables gain a robustness column (each claim's standing and "
    "k/n, linking its robustness page)"
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


def print_scorecard(summary: dict[str, Any]) -> None:
    """The claims table after a run: expected, measured (unit, interval), verdict, the count of
    claims that hold, and the reason for each one that does not (its detail, or why it was not
    tested). Claims beyond the seed are marked in the claim column."""
    claims = summary["claims"]
    table = Table(title=f"{summary['experiment']} ({summary['preset']}): {count_text(claims)}")
    for column in ("claim", "expected", "measured", "verdict"):
        table.add_column(column, overflow="fold")
    for claim in claims:
        outcome = verdict(claim)
        measured = "\n".join(filter(None, (format_measured(claim), format_interval(claim))))
        name = claim["id"] + ("\n(beyond the seed)" if is_beyond_seed(claim) else "")
        table.add_row(
            Text(name),
            Text(claim["expected"]),
            Text(measured),
            Text(outcome, style=VERDICT_STYLES[outcome]),
        )
    terminal = console()
    terminal.print(table)
    for claim in claims:
        outcome = verdict(claim)
        if outcome != "holds":
            reason = _reason(claim, outcome)
            line = Text(f"{claim['id']} {outcome}: ", style=VERDICT_STYLES[outcome])
            terminal.print(line + Text(reason))


def _reason(claim: dict[str, Any], outcome: str) -> str:
    if outcome == "not tested":
        return claim.get("why_not_tested") or "no reason recorded"
    return claim.get("detail") or "no detail recorded"


def _claims_with(summaries: Sequence[dict[str, Any] | None], outcomes: set[str]) -> list[str]:
    return [
        f"{summary['experiment']}:{claim['id']}"
        for summary in summaries
        if summary
        for claim in summary["claims"]
        if verdict(claim) in outcomes
    ]


def _strict_exit(args: argparse.Namespace, summaries: Sequence[dict[str, Any] | None]) -> int:
    """``EXIT_CLAIMS_DO_NOT_HOLD`` under ``--strict`` when a tested claim (of the seed or beyond
    it) fails or is inconclusive, else 0. Claims that were not tested decide nothing: they are
    named on stderr so a pipeline sees what it did not gate on."""
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
        return prepare_run(name, args.preset, list(overrides), args.seed, args.device, out)
    except (ValueError, StoreError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None


def _command_run(args: argparse.Namespace) -> int:
    out = f"runs/{args.experiment}-{args.preset}" if args.out is None else args.out
    prepared = _prepare(args.experiment, args, args.overrides, out)
    out = prepared.out_dir
    apply_threads(args)
    with executor_from(args) as executor:
        summary = execute(prepared, quiet=args.quiet, executor=executor)
    if not args.quiet:
        print_scorecard(summary)
        console().print(f"report: {out / REPORT_FILENAME}")
    return _strict_exit(args, [summary])


def _selected_experiments(only: str | None) -> list[str]:
    if only is None:
        return list(REGISTRY)
    names = [name.strip() for name in only.split(",") if name.strip()]
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
    children = (
        [child for child in out.iterdir() if not is_scaffolding(child.name)] if out.is_dir() else []
    )
    if (
        children
        and not (out / SCORECARD_FILENAME).exists()
        and not any((child / STORE_FILENAME).exists() for child in children)
    ):
        raise UsageError(
            f"--out {out} is not empty and holds no relulab runs; choose another directory"
        )
    return out


def _index_entry(
    name: str, summary: dict[str, Any] | None, error: str | None, folder: str | None = None
) -> dict[str, Any]:
    """One experiment of the index; ``folder`` is the run's directory name (default ``name``)."""
    return {
        "name": name,
        "title": REGISTRY[name].title if name in REGISTRY else name,
        "link": f"{folder or name}/{REPORT_FILENAME}",
        "summary": summary,
        "error": error,
    }


def _robustness_runs(
    directory: str | None, reported: Iterable[tuple[str, str]]
) -> dict[str, RobustnessRun] | None:
    """The robustness runs ``--robustness DIR`` gives for the reported (experiment, preset)
    pairs; ``None`` without the option. A refusal (:class:`UsageError`) writes nothing."""
    if directory is None:
        return None
    try:
        return robustness_for(find_robustness_runs(directory), reported, directory)
    except ValueError as error:
        raise UsageError(f"--robustness: {error}") from None


def _scorecard_claims(
    out: Path, entry: dict[str, Any], robustness: Mapping[str, RobustnessRun] | None
) -> list[dict[str, Any]]:
    """The entry's claims; with robustness runs, each with an added ``robustness`` field."""
    claims = entry["summary"]["claims"] if entry["summary"] else []
    if robustness is None:
        return claims
    run = robustness.get(entry["name"])
    return [{**c, "robustness": claim_robustness(run, c.get("id", ""), out)} for c in claims]


def _write_scorecard(
    out: Path,
    entries: list[dict[str, Any]],
    preset: str,
    robustness: Mapping[str, RobustnessRun] | None = None,
) -> Path:
    scorecard = {
        "preset": preset,
        "experiments": [
            {
                "experiment": e["name"],
                "error": e["error"],
                "claims": _scorecard_claims(out, e, robustness),
            }
            for e in entries
        ],
    }
    write_atomic(out / SCORECARD_FILENAME, json.dumps(scorecard, indent=2, allow_nan=False))
    return write_index(out, entries, preset, robustness)


def _command_reproduce(args: argparse.Namespace) -> int:
    names = _selected_experiments(args.only)
    out = _check_reproduce_dir(f"runs/reproduce-{args.preset}" if args.out is None else args.out)
    prepared = [_prepare(name, args, [], out / name) for name in names]
    robustness = _robustness_runs(args.robustness, [(name, args.preset) for name in names])
    apply_threads(args)
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
                print_scorecard(outcome.summary)
            entries[position] = _index_entry(name, outcome.summary, error)
            _write_scorecard(out, entries, args.preset, robustness)

        # Every unit of every experiment goes to the executor at once; each experiment's
        # outputs are written as soon as its last unit is stored.
        execute_runs(
            prepared, executor, quiet=args.quiet, on_finished=finished, robustness=robustness
        )
        index = _write_scorecard(out, entries, args.preset, robustness)
    if not args.quiet:
        console().print(f"index: {index}")
    if any(entry["error"] for entry in entries):
        return 1
    return _strict_exit(args, [entry["summary"] for entry in entries])


def _runs_in(directory: Path) -> list[Path]:
    """The run directories of a reproduce directory, each checked writable, free and holding a
    readable store — so that a refusal comes before any of them is rebuilt."""
    runs = (
        sorted(child for child in directory.iterdir() if (child / STORE_FILENAME).exists())
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
    with RunStore.open(run_dir / STORE_FILENAME) as store:
        meta = store.meta()
    return meta["experiment"], meta["preset"]


def _command_report(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        if not directory.is_dir():
            raise UsageError(f"{directory} is not a directory")
        check_output_dir(directory, "report directory")
        if os.path.lexists(directory / STORE_FILENAME):
            check_rebuildable(directory)
            robustness = _robustness_runs(args.robustness, [_run_identity(directory)])
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
        robustness = _robustness_runs(args.robustness, [_run_identity(r) for r in runs])
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
            entries.append(_index_entry(summary["experiment"], summary, None, run_dir.name))
        _write_scorecard(directory, entries, entries[0]["summary"]["preset"], robustness)
    print(directory / INDEX_FILENAME)
    return 0


COMMANDS = {
    "list": _command_list,
    "run": _command_run,
    "reproduce": _command_reproduce,
    "report": _command_report,
}
