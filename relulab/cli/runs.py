"""``relulab list | run | reproduce | report``: experiments under the run contract."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from relulab.cli.common import UsageError, add_run_options, apply_threads, console
from relulab.experiments import REGISTRY
from relulab.files import check_output_dir, write_atomic
from relulab.report import INDEX_FILENAME, REPORT_FILENAME, write_index
from relulab.runner import (
    DirectoryInUseError,
    PreparedRun,
    RunFailedError,
    check_not_in_use,
    execute,
    is_scaffolding,
    locked,
    prepare_run,
    rebuild_outputs,
)
from relulab.store import STORE_FILENAME, RunStore, StoreError

__all__ = ["SCORECARD_FILENAME", "add_parsers", "COMMANDS"]

SCORECARD_FILENAME = "scorecard.json"


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
    add_run_options(reproduce)

    report = commands.add_parser(
        "report",
        help="rebuild reports from a run directory",
        description="Recompute claims, figures, summary.json and "
        "report.html from the run store in DIR (or, for a reproduce "
        "directory, every run in it and index.html).",
    )
    report.add_argument("directory", help="a run directory or a reproduce directory")


def print_scorecard(summary: dict[str, Any]) -> None:
    table = Table(title=f"{summary['experiment']} ({summary['preset']})")
    for column in ("claim", "measured", "verdict"):
        table.add_column(column)
    for claim in summary["claims"]:
        measured = "—" if claim["measured"] is None else f"{claim['measured']:.4g}"
        verdict = "[green]holds[/green]" if claim["passed"] else "[red]fails[/red]"
        table.add_row(claim["id"], measured, verdict)
    console().print(table)


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
    summary = execute(prepared, quiet=args.quiet)
    if not args.quiet:
        print_scorecard(summary)
        console().print(f"report: {out / REPORT_FILENAME}")
    return 0


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


def _index_entry(name: str, summary: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "title": REGISTRY[name].title,
        "link": f"{name}/{REPORT_FILENAME}",
        "summary": summary,
        "error": error,
    }


def _write_scorecard(out: Path, entries: list[dict[str, Any]], preset: str) -> Path:
    scorecard = {
        "preset": preset,
        "experiments": [
            {
                "experiment": e["name"],
                "error": e["error"],
                "claims": e["summary"]["claims"] if e["summary"] else [],
            }
            for e in entries
        ],
    }
    write_atomic(out / SCORECARD_FILENAME, json.dumps(scorecard, indent=2, allow_nan=False))
    return write_index(out, entries, preset)


def _command_reproduce(args: argparse.Namespace) -> int:
    names = _selected_experiments(args.only)
    out = _check_reproduce_dir(f"runs/reproduce-{args.preset}" if args.out is None else args.out)
    prepared = [_prepare(name, args, [], out / name) for name in names]
    apply_threads(args)
    entries = []
    with locked(out):
        for run in prepared:
            try:
                summary, error = execute(run, quiet=args.quiet), None
            except (RunFailedError, StoreError, DirectoryInUseError) as failure:
                summary, error = None, " ".join(str(failure).split())
                sys.stderr.write(f"relulab: {run.experiment.name} failed: {error}\n")
            if summary and not args.quiet:
                print_scorecard(summary)
            entries.append(_index_entry(run.experiment.name, summary, error))
        index = _write_scorecard(out, entries, args.preset)
    if not args.quiet:
        console().print(f"index: {index}")
    return 1 if any(entry["error"] for entry in entries) else 0


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
        check_not_in_use(run_dir)
        RunStore.open(run_dir / STORE_FILENAME).close()
    return runs


def _command_report(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        if not directory.is_dir():
            raise UsageError(f"{directory} is not a directory")
        check_output_dir(directory, "report directory")
        if os.path.lexists(directory / STORE_FILENAME):
            rebuild_outputs(directory)
            print(directory / REPORT_FILENAME)
            return 0
        runs = _runs_in(directory)
    except (StoreError, ValueError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    with locked(directory):
        summaries = []
        for run_dir in runs:
            try:
                summaries.append(rebuild_outputs(run_dir))
            except (StoreError, DirectoryInUseError) as error:  # others may be rebuilt already
                raise RunFailedError(f"rebuilding {run_dir} failed: {error}") from None
        entries = [_index_entry(s["experiment"], s, None) for s in summaries]
        _write_scorecard(directory, entries, entries[0]["summary"]["preset"])
    print(directory / INDEX_FILENAME)
    return 0


COMMANDS = {
    "list": _command_list,
    "run": _command_run,
    "reproduce": _command_reproduce,
    "report": _command_report,
}
