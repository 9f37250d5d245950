"""What every ``relulab`` command shares: one-line usage errors (exit 2), typed and bounded
arguments, the run options, and the console.

Exit codes: 0 success; 1 a command that started and then failed (finished work is kept; one
line on stderr); 2 a refused request (one line on stderr, nothing written); 130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import torch
from rich.console import Console

if TYPE_CHECKING:
    from relulab.runner.executor import Executor

__all__ = [
    "EXIT_CLAIMS_DO_NOT_HOLD",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "OneLineParser",
    "STANDING_STYLES",
    "VERDICT_STYLES",
    "UsageError",
    "name_list",
    "add_executor_options",
    "add_run_options",
    "apply_threads",
    "bounded_int",
    "console",
    "executor_from",
    "finite_float",
    "positive_int",
    "seed_int",
    "thread_count",
]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CLAIMS_DO_NOT_HOLD = 3  # --strict: a tested claim fails or is inconclusive
VERDICT_STYLES = {  # how the terminal colours each verdict
    "holds": "green",
    "fails": "red",
    "inconclusive": "yellow",
    "not tested": "bright_black",
}
STANDING_STYLES = {  # how the terminal colours each headline standing
    **VERDICT_STYLES,
    "depends": "magenta",
}
EXIT_INTERRUPTED = 130
SEED_LIMIT = 2**63
MAX_JOBS = 1024


class UsageError(Exception):
    """A request we refuse: reported as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit code 2, and
    an empty (or blank) value is an error for every argument: no path, name or list of relulab
    means "the default" or "the working directory" when given as ``''``."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"relulab: error: {message}\n")
        raise SystemExit(EXIT_USAGE)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        passed_on = action.nargs in (argparse.PARSER, argparse.REMAINDER)  # a sub-command's
        if not arg_string.strip() and not passed_on:
            raise argparse.ArgumentError(action, "must not be empty")
        return super()._get_value(action, arg_string)


def name_list(text: str | None, label: str) -> list[str] | None:
    """The names of a comma-separated option (``--fields a,b``); ``None`` when not given.

    Raises:
        UsageError: an empty list or an empty name in it (``','``, ``'a,,b'``).

    Example:
        >>> name_list(" a, b ", "--fields"), name_list(None, "--fields")
        (['a', 'b'], None)
    """
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise UsageError(f"{label} {text!r} holds an empty name; give comma-separated names")
    return names


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An ``argparse`` type: an integer in ``[low, high]``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must lie in [{low}, {high}], got {text}")
        return value

    return parse


def seed_int(text: str) -> int:
    """An ``argparse`` type: a seed, an integer in [0, 2**63)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text}") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**63), got {text}")
    return value


def thread_count(text: str) -> int:
    """An ``argparse`` type: torch CPU threads, 1 … the machine's CPU count."""
    from relulab.resources import max_threads

    return bounded_int(1, max_threads())(text)


def finite_float(
    low: float = -1e6, high: float = 1e6, open_low: bool = False
) -> Callable[[str], float]:
    """An ``argparse`` type: a finite number in ``[low, high]`` (open at ``low`` if asked)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text}") from None
        below = value <= low if open_low else value < low
        if not math.isfinite(value) or below or value > high:
            bracket = "(" if open_low else "["
            raise argparse.ArgumentTypeError(
                f"must be a finite number in {bracket}{low:g}, {high:g}], got {text}"
            )
        return value

    return parse


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--preset``, ``--seed``, ``--device``, ``--threads``, ``--quiet``, ``--allow-dirty``,
    ``--strict`` (run, reproduce, sweep, robustness)."""
    parser.add_argument(
        "--preset",
        default="quick",
        help="preset to start from: quick (minutes on 2 CPU cores), paper (the seed's full "
        "scale), or an experiment's own (init-training: cpu, what a CPU can decide); "
        "default quick",
    )
    parser.add_argument(
        "--seed",
        type=seed_int,
        default=None,
        help="random seed in [0, 2**63) (overrides the preset's)",
    )
    parser.add_argument(
        "--device", default="auto", help="auto (CUDA if available), cpu, cuda or cuda:N"
    )
    parser.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        help="torch CPU threads, at most the machine's CPU count (default: torch's choice); "
        "recorded per unit",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars or tables")
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="run into the checkout's results/ although the code has uncommitted changes "
        "(refused otherwise: committed results come from a clean commit); every page of the "
        "run is marked unregistered",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help=f"exit with code {EXIT_CLAIMS_DO_NOT_HOLD} when a tested claim does not hold (fails "
        "or is inconclusive), for pipelines that gate on a seed statement; claims the preset "
        "cannot decide ('not tested') are listed on stderr and gate nothing",
    )


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--executor``, ``--address`` (run, reproduce, sweep)."""
    parser.add_argument(
        "--jobs",
        type=bounded_int(1, MAX_JOBS),
        default=None,
        metavar="N",
        help="run N units at once in worker processes (default 1: one after another in this "
        "process; reproduce on the CPU: one worker per CPU, one thread each); with --executor "
        "ray, at most N units in flight. Results equal --jobs 1's under the same --threads",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local (this machine; default) or ray (each unit a Ray task; needs relulab[ray])",
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="the Ray cluster to use (host:port, or auto); default RAY_ADDRESS, else a Ray "
        "instance started for this command",
    )


def executor_from(args: argparse.Namespace) -> Executor:
    """The executor ``--executor/--jobs/--threads/--address`` ask for, connected; one-line
    :class:`UsageError` when it cannot be had (Ray not installed, no cluster at ADDR) — before
    anything is written."""
    from relulab.runner.parallel import ExecutorUnavailableError, make_executor

    try:
        executor = make_executor(
            args.executor, args.jobs, args.threads, args.address, quiet=args.quiet
        )
        executor.connect()
    except (ValueError, ExecutorUnavailableError) as error:
        raise UsageError(str(error)) from None
    return executor


def apply_threads(args: argparse.Namespace) -> None:
    """Set torch's CPU threads when ``--threads`` was given."""
    if getattr(args, "threads", None) is not None:
        torch.set_num_threads(args.threads)


def console() -> Console:
    return Console()
