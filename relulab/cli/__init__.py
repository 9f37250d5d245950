"""The ``relulab`` command line.

``list``, ``run``, ``reproduce``, ``report`` (:mod:`relulab.cli.runs`), ``bench``
(:mod:`relulab.cli.bench`), ``theory`` (:mod:`relulab.cli.theory`), ``diagnose``
(:mod:`relulab.cli.diagnose`) and ``export`` (:mod:`relulab.cli.export`). Every bad request
(unknown experiment, preset, config key or value, device, an output directory that belongs to
something else) is answered with one line on stderr and exit code 2, before anything is written.

Exit codes: 0 done; 1 an experiment of ``reproduce`` did not finish; 2 a refused request;
3 (``run``/``reproduce --strict``) a claim does not hold (fails or is inconclusive);
130 interrupted (finished work is kept).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from relulab import __version__
from relulab.cli import bench, diagnose, export, runs, theory
from relulab.cli.common import EXIT_INTERRUPTED, EXIT_USAGE, OneLineParser, UsageError

__all__ = ["build_parser", "main"]


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="relulab",
        description="A laboratory for how biases and initialisation shape ReLU networks.",
    )
    parser.add_argument("--version", action="version", version=f"relulab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runs.add_parsers(commands)
    bench.add_parser(commands)
    theory.add_parser(commands)
    diagnose.add_parser(commands)
    export.add_parser(commands)
    return parser


_COMMANDS = {
    **runs.COMMANDS,
    "bench": bench.command,
    "theory": theory.command,
    "diagnose": diagnose.command,
    "export": export.command,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except UsageError as error:
        sys.stderr.write(f"relulab: error: {error}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(
            "relulab: interrupted; finished work is saved, re-run the same command to resume\n"
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
