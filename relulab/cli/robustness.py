"""``relulab robustness``: one experiment under every declared reading of its inferred
settings (:mod:`relulab.runner.robustness`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table
from rich.text import Text

from relulab.cli.common import (
    VERDICT_STYLES,
    UsageError,
    add_executor_options,
    add_run_options,
    apply_threads,
    console,
    executor_from,
    name_list,
)
from relulab.records.robustness import RobustnessRecord
from relulab.report.robustness import STANDING_VERDICT
from relulab.runner import DirectoryInUseError
from relulab.runner.robustness import (
    ROBUSTNESS_PAGE,
    prepare_robustness,
    run_robustness,
    single_variants,
)
from relulab.store import StoreError

__all__ = ["add_parser", "command"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    robustness = commands.add_parser(
        "robustness",
        help="does each verdict survive the other readings of what the seed left unsaid?",
        description="Run the preset and, for each inferred setting that declares alternatives, "
        "each alternative with every other setting at the preset (one at a time; --pairs adds "
        "the pairwise combinations of the settings that flipped a verdict). Each reading is a "
        "run in OUT/<setting>=<value>/ (the preset in OUT/preset/), all units scheduled "
        "together; then OUT/robustness.json and OUT/robustness.html: per claim its verdict in "
        "every reading, 'holds in k of n', and the settings that flip it. Re-running the same "
        "command resumes.",
    )
    robustness.add_argument("experiment", help="experiment name (see `relulab list`)")
    robustness.add_argument(
        "--fields",
        default=None,
        metavar="NAMES",
        help="comma-separated inferred settings to vary (default: every one that declares "
        "alternatives)",
    )
    robustness.add_argument(
        "--pairs",
        action="store_true",
        help="also run every pair of alternatives of the settings that flipped a verdict",
    )
    robustness.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a preset field in every reading (repeatable)",
    )
    robustness.add_argument(
        "--out", default=None, help="directory (default runs/robustness-EXPERIMENT-PRESET)"
    )
    add_run_options(robustness)
    add_executor_options(robustness)


def _print_claims(record: RobustnessRecord) -> None:
    table = Table(title=f"robustness of {record.experiment} ({record.preset})")
    for column in ("claim", "preset", "holds in", "standing", "flipped by"):
        table.add_column(column, overflow="fold")
    for claim in record.claims:
        table.add_row(
            claim.id + (" (check)" if claim.kind == "check" else ""),
            Text(claim.preset, style=VERDICT_STYLES.get(claim.preset, "")),
            f"{claim.holds} of {claim.tested}",
            Text(claim.standing, style=VERDICT_STYLES[STANDING_VERDICT[claim.standing]]),
            ", ".join(claim.flipped_by),
        )
    console().print(table)


def command(args: argparse.Namespace) -> int:
    out = args.out or Path("runs") / f"robustness-{args.experiment}-{args.preset}"
    fields = name_list(args.fields, "--fields")
    try:
        # validate every reading before anything is written or an executor is started
        variants = single_variants(args.experiment, args.preset, fields)
        prepare_robustness(
            args.experiment,
            args.preset,
            variants,
            args.overrides,
            args.seed,
            args.device,
            out,
            args.allow_dirty,
        )
    except (ValueError, StoreError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    apply_threads(args)
    with executor_from(args) as executor:
        record = run_robustness(
            args.experiment,
            args.preset,
            fields,
            args.pairs,
            args.overrides,
            args.seed,
            args.device,
            out,
            executor,
            quiet=args.quiet,
            allow_dirty=args.allow_dirty,
        )
    if not args.quiet:
        _print_claims(record)
        console().print(f"robustness: {Path(out) / ROBUSTNESS_PAGE}")
    return 0
