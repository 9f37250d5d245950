"""``relulab export --tensorboard LOGDIR RUN_DIR``: a run's recorded curves for TensorBoard."""

from __future__ import annotations

import argparse
from pathlib import Path

from relulab.cli.common import UsageError, console, name_list, positive_int
from relulab.files import OutputPathError, check_no_links_inside, check_output_dir
from relulab.runner import DirectoryInUseError, locked
from relulab.runner.rundir import check_not_in_use, directory_holds
from relulab.store import STORE_FILENAME, StoreError

__all__ = ["add_parser", "command"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser(
        "export",
        help="export a run's recorded curves (TensorBoard event files)",
        description="Write the curves recorded in RUN_DIR's run store as TensorBoard event "
        "files under LOGDIR: one TensorBoard run per network (LOGDIR/UNIT/NNNN_CONDITION), one "
        "chart per curve. A reproduce directory exports each of its runs into LOGDIR/RUN. "
        "Needs the tensorboard package: pip install 'relulab[tensorboard]'. "
        "Then: tensorboard --logdir LOGDIR",
    )
    export.add_argument("run_dir", metavar="RUN_DIR", help="a run or reproduce directory")
    export.add_argument(
        "--tensorboard",
        required=True,
        metavar="LOGDIR",
        help="write TensorBoard event files into LOGDIR",
    )
    export.add_argument(
        "--units", default=None, metavar="NAMES", help="comma-separated units (default all)"
    )
    export.add_argument(
        "--max-networks",
        type=positive_int,
        default=None,
        metavar="N",
        help="at most N networks per unit, the first ones (default all)",
    )
    export.add_argument("--quiet", action="store_true", help="no summary lines")


def _run_dirs(directory: Path) -> list[tuple[Path, str]]:
    """``(run directory, sub-directory of LOGDIR)`` pairs for a run or a reproduce directory."""
    if (directory / STORE_FILENAME).is_file():
        return [(directory, "")]
    runs = (
        sorted(c for c in directory.iterdir() if (c / STORE_FILENAME).is_file())
        if directory.is_dir()
        else []
    )
    if not runs:
        raise UsageError(f"{directory} holds no relulab run (no {STORE_FILENAME} in it or below)")
    return [(run, run.name) for run in runs]


def _export_runs(
    runs: list[tuple[Path, str]], logdir: Path, units: list[str] | None, args: argparse.Namespace
) -> None:
    from relulab.report.tensorboard import export_tensorboard

    terminal = console()
    for run_dir, sub in runs:
        exported = export_tensorboard(
            run_dir, logdir / sub, units, args.max_networks, "--tensorboard"
        )
        if not args.quiet:
            for unit in exported:
                terminal.print(
                    f"{run_dir.name}/{unit.unit}: {unit.written} of {unit.networks} networks, "
                    f"curves {', '.join(unit.curves) or '(none)'}, {unit.records} records each"
                )


def command(args: argparse.Namespace) -> int:
    from relulab.report.tensorboard import summary_writer_class

    try:
        summary_writer_class()
    except ImportError as error:
        raise UsageError(str(error)) from None
    try:
        logdir = check_output_dir(args.tensorboard, "--tensorboard")
        if logdir.exists() and not logdir.is_dir():
            raise UsageError(f"--tensorboard {logdir} exists and is not a directory")
        holds = directory_holds(logdir)
        if holds not in (None, "other files"):  # TensorBoard's own logs are welcome
            raise UsageError(
                f"--tensorboard {logdir} holds a relulab {holds}; choose another directory"
            )
        runs = _run_dirs(Path(args.run_dir))
        check_no_links_inside(logdir, [logdir / sub for _, sub in runs if sub], "--tensorboard")
        for run_dir, _ in runs:
            check_not_in_use(run_dir)  # a run still being written exports a partial store
    except (OutputPathError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    units = name_list(args.units, "--units")
    try:
        with locked(logdir):  # one writer from the first event file to the last
            _export_runs(runs, logdir, units, args)
    except (StoreError, KeyError, OutputPathError, DirectoryInUseError) as error:
        raise UsageError(str(error).strip("'\"")) from None
    if not args.quiet:
        console().print(f"tensorboard --logdir {logdir}")
    return 0
