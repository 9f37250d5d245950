"""The ``relulab`` command line.

``list``, ``run``, ``reproduce``, ``report`` (:mod:`relulab.cli.runs`), ``rejudge``,
``register`` (:mod:`relulab.cli.rejudge`), ``sweep``
(:mod:`relulab.cli.sweep`), ``robustness`` (:mod:`relulab.cli.robustness`), ``bench``
(:mod:`relulab.cli.bench`), ``theory`` (:mod:`relulab.cli.theory`), ``diagnose``
(:mod:`relulab.cli.diagnose`) and ``export`` (:mod:`relulab.cli.export`). Every bad request
(unknown experiment, preset, config key or value, device, an output path that cannot be written
or belongs to something else, a directory in use) is answered with one line on stderr and exit
code 2, before anything is written. A command that started and then failed says so in one line
with exit code 1, its finished work kept; ``RELULAB_DEBUG=1`` shows the traceback instead.

Exit codes: 0 done; 1 started, then failed (for ``reproduce``: an experiment did not finish);
2 a refused request, nothing written; 3 (``run``/``reproduce``/``sweep --strict``) a tested claim
does not hold (fails or is inconclusive; a claim the preset cannot decide, ``not tested``, gates
nothing); 130 interrupted (finished work is kept).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence

from relulab import __version__
from relulab.cli import bench, diagnose, export, rejudge, robustness, runs, sweep, theory
from relulab.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    OneLineParser,
    UsageError,
)
from relulab.engine.memory import retain_freed_memory
from relulab.errors import one_line_warnings
from relulab.runner import DirectoryInUseError, RunFailedError, describe_error

__all__ = ["build_parser", "main"]


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="relulab",
        description="A laboratory for how biases and initialisation shape ReLU networks.",
    )
    parser.add_argument("--version", action="version", version=f"relulab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runs.add_parsers(commands)
    rejudge.add_parsers(commands)
    sweep.add_parser(commands)
    robustness.add_parser(commands)
    bench.add_parser(commands)
    theory.add_parser(commands)
    diagnose.add_parser(commands)
    export.add_parser(commands)
    return parser


_COMMANDS = {
    **runs.COMMANDS,
    **rejudge.COMMANDS,
    "sweep": sweep.command,
    "robustness": robustness.command,
    "bench": bench.command,
    "theory": theory.command,
    "diagnose": diagnose.command,
    "export": export.command,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (argparse's refusals and ``--help`` included)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # a usage error (already reported in one line), --help, --version
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    retain_freed_memory()  # large activations reuse warm pages (relulab.engine.memory)
    shown = warnings.showwarning
    if not os.environ.get("RELULAB_DEBUG"):
        one_line_warnings()  # numpy's, scipy's, Pillow's warnings as relulab: warning: lines
    try:
        return _COMMANDS[args.command](args)
    except (UsageError, DirectoryInUseError) as error:
        sys.stderr.write(f"relulab: error: {_one_line(error)}\n")
        return EXIT_USAGE
    except RunFailedError as error:
        if os.environ.get("RELULAB_DEBUG"):
            raise
        sys.stderr.write(f"relulab: error: {_one_line(error)}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write(
            "relulab: interrupted; finished work is saved, re-run the same command to resume\n"
        )
        return EXIT_INTERRUPTED
    except Exception as error:  # a failure nobody foresaw: still one line, never a traceback
        if os.environ.get("RELULAB_DEBUG"):
            raise
        sys.stderr.write(
            f"relulab: error: {args.command} failed unexpectedly ({describe_error(error)}); "
            "set RELULAB_DEBUG=1 for the traceback\n"
        )
        return EXIT_FAILED
    finally:
        warnings.showwarning = shown


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


if __name__ == "__main__":
    raise SystemExit(main())
