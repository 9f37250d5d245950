"""``relulab list | run | reproduce | report``: experiments under the run contract."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from relulab.cli.common import (
    EXIT_CLAIMS_DO_NOT_HOLD,
    UsageError,
    add_run_options,
    apply_threads,
    console,
)
from relulab.experiments import REGISTRY
from relulab.report import INDEX_FILENAME, REPORT_FILENAME, write_index
from relulab.report.scorecard import count_text, format_interval, format_measured, verdict
from relulab.runner import PreparedRun, execute, prepare_run, rebuild_outputs
from relulab.store import STORE_FILENAME, StoreError

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
    """The claims table after a run: expected, measured (unit, interval), verdict, the count of
    claims that hold, and the reason (the claim's detail) for each one that does not."""
    claims = summary["claims"]
    table = Table(title=f"{summary['experiment']} ({summary['preset']}): {count_text(claims)}")
    for column in ("claim", "expected", "measured", "verdict"):
        table.add_column(column, overflow="fold")
    for claim in claims:
        outcome = verdict(claim)
        measured = "\n".join(filter(None, (format_measured(claim), format_interval(claim))))
        table.add_row(
            Text(claim["id"]),
            Text(claim["expected"]),
            Text(measured),
            Text(outcome, style=_VERDICT_STYLES[outcome]),
        )
    terminal = console()
    terminal.print(table)
    for claim in claims:
        outcome = verdict(claim)
        if outcome != "holds":
            reason = claim.get("detail") or "no detail recorded"
            line = Text(f"{claim['id']} {outcome}: ", style=_VERDICT_STYLES[outcome])
            terminal.print(line + Text(reason))


_VERDICT_STYLES = {"holds": "green", "fails": "red", "inconclusive": "yellow"}


def _not_holding(summaries: Sequence[dict[str, Any] | None]) -> list[str]:
    return [
        f"{summary['experiment']}:{claim['id']}"
        for summary in summaries
        if summary
        for claim in summary["claims"]
        if verdict(claim) != "holds"
    ]


def _strict_exit(args: argparse.Namespace, summaries: Sequence[dict[str, Any] | None]) -> int:
    """``EXIT_CLAIMS_DO_NOT_HOLD`` under ``--strict`` when a claim does not hold, else 0."""
    failing = _not_holding(summaries)
    if not getattr(args, "strict", False) or not failing:
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
    name: str, args: argparse.Namespace, overrides: Sequence[str], out: Path
) -> PreparedRun:
    try:
        return prepare_run(name, args.preset, list(overrides), args.seed, args.device, out)
    except (ValueError, StoreError) as error:
        raise UsageError(str(error)) from None


def _command_run(args: argparse.Namespace) -> int:
    out = Path(args.out or f"runs/{args.experiment}-{args.preset}")
    prepared = _prepare(args.experiment, args, args.overrides, out)
    apply_threads(args)
    summary = execute(prepared, quiet=args.quiet)
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


def _check_reproduce_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    if (
        out.is_dir()
        and any(out.iterdir())
        and not (out / SCORECARD_FILENAME).exists()
        and not any((child / STORE_FILENAME).exists() for child in out.iterdir())
    ):
        raise UsageError(
            f"--out {out} is not empty and holds no relulab runs; choose another directory"
        )


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
    (out / SCORECARD_FILENAME).write_text(json.dumps(scorecard, indent=2, allow_nan=False))
    return write_index(out, entries, preset)


def _command_reproduce(args: argparse.Namespace) -> int:
    out = Path(args.out or f"runs/reproduce-{args.preset}")
    names = _selected_experiments(args.only)
    _check_reproduce_dir(out)
    prepared = [_prepare(name, args, [], out / name) for name in names]
    apply_threads(args)
    out.mkdir(parents=True, exist_ok=True)
    # The index exists from the start (reports link back to it) and follows the progress.
    entries = [_index_entry(run.experiment.name, None, None) for run in prepared]
    _write_scorecard(out, entries, args.preset)
    for position, run in enumerate(prepared):
        try:
            summary, error = execute(run, quiet=args.quiet), None
        except (RuntimeError, ValueError, StoreError) as failure:
            summary, error = None, f"{type(failure).__name__}: {failure}"
            sys.stderr.write(f"relulab: {run.experiment.name} failed: {error}\n")
        if summary and not args.quiet:
            print_scorecard(summary)
        entries[position] = _index_entry(run.experiment.name, summary, error)
        index = _write_scorecard(out, entries, args.preset)
    if not args.quiet:
        console().print(f"index: {index}")
    if any(entry["error"] for entry in entries):
        return 1
    return _strict_exit(args, [entry["summary"] for entry in entries])


def _command_report(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        if (directory / STORE_FILENAME).exists():
            summary = rebuild_outputs(directory)
            print(directory / REPORT_FILENAME)
            return 0 if summary else 1
        runs = (
            sorted(child for child in directory.iterdir() if (child / STORE_FILENAME).exists())
            if directory.is_dir()
            else []
        )
        if not runs:
            raise UsageError(
                f"{directory} holds no relulab run (no {STORE_FILENAME} in it or "
                "its sub-directories)"
            )
        # Write the index first so that every rebuilt report links back to it.
        if not (directory / INDEX_FILENAME).is_file():
            write_index(directory, [], "")
        entries = []
        for run_dir in runs:
            summary = rebuild_outputs(run_dir)
            entries.append(_index_entry(summary["experiment"], summary, None, run_dir.name))
        _write_scorecard(directory, entries, entries[0]["summary"]["preset"])
        print(directory / INDEX_FILENAME)
        return 0
    except (StoreError, ValueError) as error:
        raise UsageError(str(error)) from None


COMMANDS = {
    "list": _command_list,
    "run": _command_run,
    "reproduce": _command_reproduce,
    "report": _command_report,
}
