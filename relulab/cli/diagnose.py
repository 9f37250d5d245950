"""``relulab diagnose``: probe any PyTorch model built by a factory, under one or several inits."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from rich.table import Table

from relulab.cli.common import UsageError, bounded_int, console, seed_int
from relulab.errors import describe_error
from relulab.files import check_output_dir, write_atomic
from relulab.runner import DirectoryInUseError, check_not_in_use, is_scaffolding, locked

__all__ = ["DIAGNOSE_MARKER", "add_parser", "command"]

DIAGNOSE_MARKER = ".relulab-diagnose"  # marks a directory as a diagnose report's: rewritable
MAX_SAMPLES = 10_000_000
COMPARED_INITS = ("kaiming_normal", "lecun_normal", "orthogonal", "scale_bias", "lsuv")


def _init_names() -> list[str]:
    from relulab.init import MODEL_INITS

    return list(MODEL_INITS)


def add_parser(commands: argparse._SubParsersAction) -> None:
    diagnose = commands.add_parser(
        "diagnose",
        help="probe any PyTorch model's ReLU units (dead/always-on, r, rank, Δ)",
        description="Build MODEL (module.path:factory), feed it data (a .npy/.pt file or "
        "Gaussian samples), print the per-layer probe table and write a report.",
    )
    diagnose.add_argument(
        "model",
        help="module.path:factory returning an nn.Module, e.g. relulab.nn.examples:deep_mlp "
        "(the current directory is searched first, as by python -m)",
    )
    diagnose.add_argument(
        "--data", default=None, help=".npy or .pt file of inputs (default: Gaussian samples)"
    )
    diagnose.add_argument(
        "--samples",
        type=bounded_int(1, MAX_SAMPLES),
        default=512,
        help=f"number of samples, 1 … {MAX_SAMPLES:,} (default 512)",
    )
    diagnose.add_argument(
        "--input-shape",
        default=None,
        help="per-sample shape for Gaussian data, e.g. 3,32,32 (default: from the first layer)",
    )
    diagnose.add_argument(
        "--init",
        default="default",
        help="initialiser to apply first: default (as built), " + ", ".join(_init_names()),
    )
    diagnose.add_argument(
        "--compare-inits",
        nargs="?",
        const=",".join(("default",) + COMPARED_INITS),
        default=None,
        metavar="NAMES",
        help="probe the model under several inits "
        "side by side (default list: default," + ",".join(COMPARED_INITS) + "); an init "
        "that cannot apply to the model is skipped with a note",
    )
    diagnose.add_argument(
        "--mode",
        choices=("train", "eval"),
        default="train",
        help="forward mode to probe in: train (batch statistics, dropout on: what training "
        "sees; default) or eval (running statistics, no dropout)",
    )
    diagnose.add_argument("--seed", type=seed_int, default=0, help="seed in [0, 2**63)")
    diagnose.add_argument(
        "--out",
        default="diagnose",
        help="report directory (default diagnose): new, empty, or an earlier diagnose report's",
    )


def _parse_shape(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--input-shape must be comma-separated integers, got {text!r}") from None
    if not shape or min(shape) < 1:
        raise UsageError(f"--input-shape must be positive integers, got {text!r}")
    return shape


def _check_out(text: str) -> Path:
    """The report directory: writable, and absent, empty or an earlier diagnose report's."""
    try:
        out = check_output_dir(text)
        if out.is_dir():
            check_not_in_use(out)
    except (ValueError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    if (
        out.is_dir()
        and not (out / DIAGNOSE_MARKER).is_file()
        and any(not is_scaffolding(child.name) for child in out.iterdir())
    ):
        raise UsageError(
            f"--out {out} is not empty and holds no relulab diagnose report; "
            "choose another directory"
        )
    return out


def _check_data_size(samples: int, shape: tuple[int, ...]) -> None:
    from relulab.runner import check_memory

    n_bytes = 4 * samples * int(np.prod(shape, dtype=object))
    check_memory(2 * n_bytes, torch.device("cpu"), f"probing {samples} samples of shape {shape}")


class _UserCodeStoppedError(Exception):
    """The user's model (or its module) called ``sys.exit`` or raised ``KeyboardInterrupt``."""


@contextlib.contextmanager
def _user_code() -> Iterator[None]:
    """Run the user's model: a ``SystemExit`` it raises, or a ``KeyboardInterrupt`` it raises
    itself (not one from Ctrl-C, which still interrupts), fails the probe like any other error
    instead of ending relulab silently."""
    interrupted = False
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None

    def on_ctrl_c(signum: int, frame: object) -> None:
        nonlocal interrupted
        interrupted = True
        raise KeyboardInterrupt

    if main:
        signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    except SystemExit as stop:
        raise _UserCodeStoppedError(f"the model's code called sys.exit({stop.code!r})") from None
    except KeyboardInterrupt:
        if interrupted:
            raise
        raise _UserCodeStoppedError("the model's code raised KeyboardInterrupt") from None
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def command(args: argparse.Namespace) -> int:

    from relulab.probe.diagnose import (
        build_model,
        comparison_table,
        default_shape,
        diagnose,
        key_metrics,
        load_data,
    )
    from relulab.report import write_diagnose_report

    inits = (args.compare_inits or args.init).split(",")
    unknown = [name for name in inits if name != "default" and name not in _init_names()]
    if unknown:
        raise UsageError(
            f"unknown init(s) {', '.join(unknown)}; choose default or " + ", ".join(_init_names())
        )
    shape = _parse_shape(args.input_shape)
    out = _check_out(args.out)
    try:
        with _user_code():
            factory = build_model(args.model)
            model = factory()
            if args.data is None:
                _check_data_size(args.samples, default_shape(model, shape))
            data = load_data(
                args.data, model, args.samples, shape, torch.Generator().manual_seed(args.seed)
            )
            found = diagnose(factory, data, inits, args.seed, args.mode)
        tables = {
            metric: comparison_table(found.frame, metric) for metric in key_metrics(found.frame)
        }
        names = found.names
    except ValueError as error:
        raise UsageError(str(error)) from None
    except _UserCodeStoppedError as error:
        raise UsageError(f"probing {args.model} failed ({error})") from None
    except Exception as error:  # the user's model failed while being probed: nothing written
        raise UsageError(f"probing {args.model} failed ({describe_error(error)})") from None
    try:
        with locked(out):  # one writer: a second diagnose into --out is refused, not lost
            write_atomic(out / DIAGNOSE_MARKER, "written by relulab diagnose\n")
            frame = found.frame
            frame.insert(1, "mode", found.mode)
            write_atomic(out / "probe.csv", frame.to_csv(index=False))
            report = write_diagnose_report(
                out,
                args.model,
                found.inits,
                tuple(data.shape),
                tables,
                names,
                mode=found.mode,
                skipped=found.skipped,
            )
    except DirectoryInUseError as error:
        raise UsageError(str(error)) from None
    terminal = console()
    for name, why in found.skipped.items():
        terminal.print(f"note: skipped init {name}: {why}", highlight=False, soft_wrap=True)
    terminal.print(f"probed in {found.mode} mode", highlight=False)
    for metric, table in tables.items():
        rich_table = Table(title=metric)
        rich_table.add_column("activation call")
        for name in table.columns:
            rich_table.add_column(str(name))
        for layer, row in table.iterrows():
            rich_table.add_row(names.get(layer, str(layer)), *(f"{v:.3g}" for v in row.to_numpy()))
        terminal.print(rich_table)
    terminal.print(f"report: {report}")
    return 0
