"""What every ``relulab`` command shares: one-line usage errors (exit 2), typed arguments, the
run options, and the console."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

import torch
from rich.console import Console

__all__ = [
    "EXIT_CLAIMS_DO_NOT_HOLD",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "OneLineParser",
    "UsageError",
    "add_run_options",
    "apply_threads",
    "console",
    "positive_int",
]

EXIT_USAGE = 2
EXIT_CLAIMS_DO_NOT_HOLD = 3  # --strict: a claim fails or is inconclusive
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A request we refuse: reported as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"relulab: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--preset``, ``--seed``, ``--device``, ``--threads``, ``--quiet``, ``--strict`` (run and
    reproduce)."""
    parser.add_argument(
        "--preset",
        default="quick",
        help="preset to start from: quick (minutes on "
        "2 CPU cores) or paper (the seed's full scale); default quick",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="random seed (overrides the preset's)"
    )
    parser.add_argument(
        "--device", default="auto", help="auto (CUDA if available), cpu, cuda or cuda:N"
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch CPU threads (default: torch's choice)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars or tables")
    parser.add_argument(
        "--strict",
        action="store_true",
        help=f"exit with code {EXIT_CLAIMS_DO_NOT_HOLD} when any claim does not hold (fails or "
        "is inconclusive), for pipelines that gate on a seed statement",
    )


def apply_threads(args: argparse.Namespace) -> None:
    """Set torch's CPU threads when ``--threads`` was given."""
    if getattr(args, "threads", None) is not None:
        torch.set_num_threads(args.threads)


def console() -> Console:
    return Console()
