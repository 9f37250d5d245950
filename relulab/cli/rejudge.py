"""``relulab rejudge`` and ``relulab register``: committed results judged again from their
stored units, and the criteria registered before the runs that judge them.

``relulab rejudge DIR`` recomputes ``summary.json`` from the stored units of a run directory —
or of every run of a reproduce directory (then ``scorecard.json`` and ``index.html``), or of
every reading of a robustness run (then ``robustness.json`` and its page) — under the code's
registration, keeping the figures as drawn; ``--check`` writes nothing and exits 1 when a
recomputed summary differs from the one there, byte for byte. Missing, altered or
undeclared unit data are refused (exit 2, one line, nothing written): everything is recomputed
before anything is written.

``relulab register`` writes each study's registry files (:mod:`relulab.registry`);
``--check`` writes nothing and exits 1 when one is out of date.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from relulab.cli.common import UsageError, console
from relulab.cli.runs import (
    ROBUSTNESS_HELP,
    _index_entry,
    _robustness_runs,
    _runs_in,
    _write_scorecard,
)
from relulab.experiments import REGISTRY
from relulab.files import check_output_dir, write_atomic
from relulab.reading import InputFileError, read_text_bounded
from relulab.records.robustness import ROBUSTNESS_FILENAME, ROBUSTNESS_PAGE
from relulab.records.summary import SummaryRecord
from relulab.registry import sync
from relulab.report.robustness import write_robustness_page
from relulab.runner import DirectoryInUseError, check_not_in_use, locked
from relulab.runner.outputs import SUMMARY_FILENAME, rejudge, write_rejudged
from relulab.runner.robustness import rejudge_robustness
from relulab.store import StoreError, has_store

__all__ = ["EXIT_DIFFERS", "add_parsers", "COMMANDS"]

EXIT_DIFFERS = 1  # --check: a recomputed file differs from the one there

Rejudged = list[tuple[Path, SummaryRecord, SummaryRecord | None]]


def add_parsers(commands: argparse._SubParsersAction) -> None:
    rejudge_parser = commands.add_parser(
        "rejudge",
        help="recompute summary.json from a run's stored units (byte for byte)",
        description="Recompute summary.json from the stored units of DIR — a run directory, a "
        "reproduce directory (every run, then scorecard.json and index.html) or a robustness "
        "run (every reading, then robustness.json) — under the code's registration, keeping "
        "the figures as drawn. Missing, altered or undeclared unit data are refused (exit 2, "
        "nothing written).",
    )
    rejudge_parser.add_argument("directory", help="a run, reproduce or robustness directory")
    rejudge_parser.add_argument(
        "--check",
        action="store_true",
        help=f"write nothing; exit {EXIT_DIFFERS} when a recomputed summary differs from the "
        "one there",
    )
    rejudge_parser.add_argument("--robustness", default=None, metavar="DIR", help=ROBUSTNESS_HELP)
    register = commands.add_parser(
        "register",
        help="write each study's registry files (criteria, tolerances, points, config)",
        description="Write relulab/experiments/<study>/registry/<preset>.json for every study "
        "and preset: every claim's criterion, tolerances, sweep points and windows with the "
        "preset's config, hashed. Commit them with the code.",
    )
    register.add_argument(
        "--check",
        action="store_true",
        help=f"write nothing; exit {EXIT_DIFFERS} when a registry file is out of date",
    )


def _differences(new: SummaryRecord, old: SummaryRecord | None) -> str:
    """What changed, in words: the verdicts that moved, else 'the text'."""
    if old is None:
        return "no summary.json there"
    before = old.verdicts()
    moved = [
        f"{k}: {before.get(k, 'absent')} → {v}"
        for k, v in new.verdicts().items()
        if before.get(k) != v
    ]
    return "; ".join(moved) or "the text differs (no verdict moved)"


def _rejudge_runs(runs: Sequence[Path]) -> Rejudged:
    rejudged = []
    for run_dir in runs:
        check_not_in_use(run_dir)
        new, old = rejudge(run_dir)
        rejudged.append((run_dir, new, old))
    return rejudged


def _holds(path: Path, text: str) -> bool:
    """Whether ``path`` is a readable record holding exactly ``text`` (read bounded: a FIFO,
    a device or an oversized file in its place does not)."""
    try:
        return read_text_bounded(path, "record", what="a JSON record") == text
    except InputFileError:
        return False


def _report_check(rejudged: Rejudged) -> int:
    differing = [
        (run_dir, new, old)
        for run_dir, new, old in rejudged
        if not _holds(run_dir / SUMMARY_FILENAME, new.to_json())
    ]
    for run_dir, new, old in differing:
        print(f"differs: {run_dir / SUMMARY_FILENAME}: {_differences(new, old)}")
    if not differing:
        print(f"{len(rejudged)} summar{'y' if len(rejudged) == 1 else 'ies'} equal, byte for byte")
    return EXIT_DIFFERS if differing else 0


def _command_rejudge(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        if not directory.is_dir():
            raise UsageError(f"{directory} is not a directory")
        check_output_dir(directory, "rejudge directory")
        if os.path.lexists(directory / ROBUSTNESS_FILENAME):
            return _rejudge_robustness(directory, args.check)
        single = has_store(directory)
        runs = [directory] if single else _runs_in(directory)
        rejudged = _rejudge_runs(runs)
        identities = [(new.experiment, new.preset) for _, new, _ in rejudged]
        robustness = _robustness_runs(args, identities)
    except (StoreError, ValueError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    if args.check:
        return _report_check(rejudged)
    for run_dir, new, _ in rejudged:
        write_rejudged(run_dir, new, (robustness or {}).get(new.experiment))
    if not single:
        with locked(directory):
            entries = [_index_entry(new.experiment, new, None, d.name) for d, new, _ in rejudged]
            first = entries[0].summary
            assert first is not None  # every entry is a re-judged run's
            _write_scorecard(directory, entries, first.preset, robustness)
    console().print(f"re-judged {len(rejudged)} run(s) in {directory}")
    return 0


def _rejudge_robustness(directory: Path, check: bool) -> int:
    check_not_in_use(directory)
    record, summaries = rejudge_robustness(directory)
    rejudged = [(run_dir, new, old) for run_dir, (new, old) in summaries]
    if check:
        status = _report_check(rejudged)
        same = _holds(directory / ROBUSTNESS_FILENAME, record.to_json())
        if not same:
            print(f"differs: {directory / ROBUSTNESS_FILENAME}")
        return status if same else EXIT_DIFFERS
    for run_dir, new, _ in rejudged:
        write_rejudged(run_dir, new)
    with locked(directory):
        write_robustness_page(directory / ROBUSTNESS_PAGE, record)
        write_atomic(directory / ROBUSTNESS_FILENAME, record.to_json())
    console().print(f"re-judged {len(record.readings)} reading(s) in {directory}")
    return 0


def _command_register(args: argparse.Namespace) -> int:
    changed = sync(REGISTRY, check=args.check)
    for path in changed:
        print(f"{'out of date' if args.check else 'written'}: {path}")
    if args.check:
        return EXIT_DIFFERS if changed else 0
    if not changed:
        print("every registry file is up to date")
    return 0


COMMANDS = {"rejudge": _command_rejudge, "register": _command_register}
