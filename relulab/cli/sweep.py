"""``relulab sweep``: one experiment over a grid of config overrides, each point a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table
from rich.text import Text

from relulab.cli.common import (
    STANDING_STYLES,
    UsageError,
    add_executor_options,
    add_run_options,
    apply_threads,
    console,
    executor_from,
)
from relulab.cli.runs import _strict_exit
from relulab.records.standing import Standing, count_line, standing
from relulab.records.summary import SummaryRecord
from relulab.records.sweep import SweepPointRecord, SweepRecord
from relulab.runner import DirectoryInUseError
from relulab.runner.sweep import SWEEP_PAGE, execute_sweep, prepare_sweep
from relulab.store import StoreError

__all__ = ["add_parser", "command"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    sweep = commands.add_parser(
        "sweep",
        help="run one experiment over a grid of settings (resumable)",
        description="Run one experiment at every point of the Cartesian product of the --grid "
        "values, each point a run in OUT/<point>/ (summary.json, report.html, figures, "
        "runs.sqlite), all units of all points scheduled together; then OUT/sweep.json and "
        "OUT/sweep.html (each claim's verdict as a function of the settings). Re-running the "
        "same command resumes.",
    )
    sweep.add_argument("experiment", help="experiment name (see `relulab list`)")
    sweep.add_argument(
        "--grid",
        dest="grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,…",
        help="a config field and its values (repeatable; the grid is the product), typed like "
        "--set; separate the values by ; instead when each is itself a list",
    )
    sweep.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a preset field at every point (repeatable)",
    )
    sweep.add_argument("--out", required=True, help="the sweep directory")
    add_run_options(sweep)
    add_executor_options(sweep)


def _print_points(record: SweepRecord) -> None:
    keys = list(record.grid)
    table = Table(title=f"sweep of {record.experiment} ({record.preset})")
    for column in (*keys, "claims"):
        table.add_column(column, overflow="fold")
    for point in record.points:
        standings = [standing(c) for c in point.claims if not c.beyond_seed]
        settings = [Text(str(point.settings[key])) for key in keys]
        style = STANDING_STYLES[max(standings, key=_severity).verdict] if standings else ""
        table.add_row(*settings, Text(count_line(standings), style=style))
    console().print(table)


def _severity(headline: Standing) -> int:
    """How badly a standing reads, for the colour of a point's count."""
    return ("not tested", "holds", "inconclusive", "depends", "fails").index(headline.verdict)


def command(args: argparse.Namespace) -> int:
    try:
        sweep = prepare_sweep(
            args.experiment,
            args.preset,
            args.grid,
            args.overrides,
            args.seed,
            args.device,
            args.out,
            args.allow_dirty,
        )
    except (ValueError, StoreError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    apply_threads(args)
    with executor_from(args) as executor:
        record = execute_sweep(sweep, executor, quiet=args.quiet)
    if not args.quiet:
        _print_points(record)
        console().print(f"sweep: {Path(sweep.out_dir) / SWEEP_PAGE}")
    return _strict_exit(args, [_as_summary(record, point) for point in record.points])


def _as_summary(record: SweepRecord, point: SweepPointRecord) -> SummaryRecord:
    """A point as the summary ``--strict`` gates on (its name in place of the experiment)."""
    return SummaryRecord(
        point.name, "", "", record.preset, {}, {}, {}, point.claims, {}, {}, {}, "", ""
    )
