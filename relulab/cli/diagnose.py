"""``relulab diagnose``: probe any PyTorch model built by a factory, under one or several inits.

The report goes to ``--out``, by default ``runs/diagnose-<model>`` (the spec with ``:`` as
``-``), as ``relulab run`` writes ``runs/<experiment>-<preset>``: a new or empty directory, or
an earlier diagnose report's, never another one.

The tables go to stdout as ``--format``: ``table`` (rich tables, the default on a terminal),
``markdown`` (the default off one: full call names, nothing truncated) or ``csv`` (one row per
init and call; notes then go to stderr). Off a terminal, stderr gets a line per stage — the
model built, the data ready, each init probed, the report written — with the time since the
start (:class:`DiagnoseLines`; ``--quiet`` silences them).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import torch

from relulab.cli.common import (
    UsageError,
    bounded_int,
    console,
    name_list,
    positive_int,
    seed_int,
)
from relulab.cli.diagnose_tables import PRINTERS, markdown_table
from relulab.errors import describe_error
from relulab.files import check_output_dir, write_atomic
from relulab.progress import LINE_INTERVAL_S, StepLines, format_seconds, stderr_is_terminal
from relulab.progress import write_line as _write_line
from relulab.runner import DirectoryInUseError, check_not_in_use, locked
from relulab.runner.rundir import DIAGNOSE_MARKER, check_holds

if TYPE_CHECKING:
    from relulab.probe.core import ProbeData
    from relulab.probe.diagnose import Diagnosis

__all__ = [
    "DIAGNOSE_MARKER",
    "FORMATS",
    "DiagnoseLines",
    "add_parser",
    "command",
    "default_out",
    "markdown_table",
]

MAX_SAMPLES = 10_000_000
COMPARED_INITS = ("kaiming_normal", "lecun_normal", "orthogonal", "scale_bias", "lsuv")
#: The layouts of the printed tables (``--format``).
FORMATS = ("table", "csv", "markdown")


def _init_names() -> list[str]:
    from relulab.init import MODEL_INITS

    return list(MODEL_INITS)


def add_parser(commands: argparse._SubParsersAction) -> None:
    diagnose = commands.add_parser(
        "diagnose",
        help="probe any PyTorch model's ReLU units (dead/always-on, r, rank, Δ)",
        description="Build MODEL (module.path:factory), feed it data (a .npy/.npz/.pt file, "
        "or Gaussian samples / random token ids shaped for its first layer), print the "
        "per-layer probe table and write a report.",
    )
    diagnose.add_argument(
        "model",
        help="module.path:factory returning an nn.Module, e.g. relulab.nn.examples:deep_mlp "
        "(the current directory is searched first, as by python -m)",
    )
    diagnose.add_argument(
        "--data",
        default=None,
        help=".npy file of inputs, or .npz / .pt file of named model arguments (input_ids, "
        "attention_mask, …: the model is called as model(**data), padding left out); integers "
        "stay integers (default: Gaussian samples, or random token ids for an embedding)",
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
        help="per-sample shape of the made-up data, e.g. 3,224,224, or the sequence length "
        "T for token ids (default: relulab's guess from the first layer: 3,32,32 for a "
        "Conv2d, 32 tokens for an embedding)",
    )
    _add_probe_options(diagnose)


def _add_probe_options(diagnose: argparse.ArgumentParser) -> None:
    """How to probe: batches, unit axis, activation types, inits, bias-free layers."""
    diagnose.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="probe in batches of this size (default: all samples at once)",
    )
    diagnose.add_argument(
        "--unit-axis",
        type=int,
        default=None,
        help="the unit (feature) axis of every activation, instead of following the layer "
        "that produced it (e.g. -1)",
    )
    diagnose.add_argument(
        "--activation-types",
        default=None,
        metavar="CLASSES",
        help="further activation module classes to probe, comma-separated "
        "module.path:Class (the current directory is searched first)",
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
        "--bias-free",
        choices=("add", "scale"),
        default=None,
        help="what the inits that set every bias (rai, raai, scale_bias) do with layers "
        "without one (ResNet, Llama, T5): add (a zero bias parameter first) or scale (none: "
        "RAI/RAAI draw the weights alone, scale_bias scales uncentred); default: skip those "
        "inits with a note",
    )
    _add_output_options(diagnose)


def _add_output_options(diagnose: argparse.ArgumentParser) -> None:
    """The forward mode, what is printed and where the report goes."""
    diagnose.add_argument(
        "--mode",
        choices=("train", "eval"),
        default="train",
        help="forward mode to probe in: train (batch statistics, dropout on: what training "
        "sees; default) or eval (running statistics, no dropout)",
    )
    diagnose.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="layout of the printed tables: table (rich tables; the default on a terminal), "
        "markdown (the default off a terminal: full call names, nothing truncated) or csv (one "
        "row per init and activation call, notes on stderr)",
    )
    diagnose.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (written off a terminal: one per stage)",
    )
    diagnose.add_argument("--seed", type=seed_int, default=0, help="seed in [0, 2**63)")
    diagnose.add_argument(
        "--out",
        default=None,
        help="report directory (default runs/diagnose-MODEL): new, empty, or an earlier "
        "diagnose report's",
    )


def default_out(model: str) -> str:
    """``runs/diagnose-<model>``, the spec's characters outside ``[A-Za-z0-9._-]`` as ``-``.

    Args:
        model: the ``module.path:factory`` spec.

    Returns:
        The default report directory, relative to the current directory.

    Example:
        >>> default_out("relulab.nn.examples:deep_mlp")
        'runs/diagnose-relulab.nn.examples-deep_mlp'
    """
    return "runs/diagnose-" + re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")


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
        check_holds(out, "diagnose report")
    except (ValueError, DirectoryInUseError) as error:
        raise UsageError(str(error)) from None
    return out


def _check_data_size(samples: int, shape: tuple[int, ...]) -> None:
    from relulab.runner import check_memory

    n_bytes = 4 * samples * int(np.prod(shape, dtype=object))
    check_memory(2 * n_bytes, torch.device("cpu"), f"probing {samples} samples of shape {shape}")


class DiagnoseLines:
    """Progress of ``relulab diagnose`` off a terminal: a stderr line per stage — the model
    built, the data ready, each init probed or skipped (k of n, :class:`StepLines`' count), the
    report written — with the time since the start.

    A stage line written before the first init is probed waits for it (or for
    :data:`LINE_INTERVAL_S` seconds to have passed): a model or data refused before then leaves
    one line on stderr, the error.

    Example:
        >>> ticks = iter([0.0, 0.5, 1.0, 1.25])
        >>> lines = DiagnoseLines("m:f", 2, enabled=False, clock=lambda: next(ticks))
        >>> lines.stage("model built")
        'diagnose m:f: model built, 0.5 s elapsed'
        >>> lines.init_done("default", "probed")
        'diagnose m:f: init default probed: 1/2 steps (50%), 1.0 s elapsed'
    """

    def __init__(
        self,
        model: str,
        inits: int,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.enabled = enabled
        self.clock = clock
        self.steps = StepLines(inits, f"diagnose {model}", interval=0.0, clock=clock)
        self.pending: list[str] = []
        self.probed = False

    def stage(self, text: str) -> str:
        """Write (or hold) the line of a finished stage; returns it."""
        elapsed = format_seconds(self.clock() - self.steps.started)
        return self._emit(f"diagnose {self.model}: {text}, {elapsed} elapsed")

    def count_init(self, init: str, outcome: str) -> None:
        """:meth:`init_done` as the probe's progress callback (which returns nothing)."""
        self.init_done(init, outcome)

    def init_done(self, init: str, outcome: str) -> str:
        """Count one init (``outcome`` ``"probed"`` or ``"skipped"``); write its line."""
        self.steps.done += 1
        self.steps.description = f"diagnose {self.model}: init {init} {outcome}"
        self.probed = self.probed or outcome == "probed"
        return self._emit(self.steps.line(self.clock()))

    def _emit(self, line: str) -> str:
        if not self.enabled:
            return line
        self.pending.append(line)
        if self.probed or self.clock() - self.steps.started >= LINE_INTERVAL_S:
            for text in self.pending:
                _write_line(text)
            self.pending.clear()
        return line


class _UserCodeStoppedError(Exception):
    """The user's model (or its module) called ``sys.exit`` or raised ``KeyboardInterrupt``."""


class _ProcessExitRequest(BaseException):
    """``os._exit(status)`` called by the model's code (a ``BaseException``, so that the model's
    own ``except Exception`` does not swallow it)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@contextlib.contextmanager
def _user_code() -> Iterator[None]:
    """Run the user's model: a ``SystemExit`` it raises, an ``os._exit`` it calls, or a
    ``KeyboardInterrupt`` it raises itself (not one from Ctrl-C, which still interrupts), fails
    the probe like any other error instead of ending relulab silently. The model still runs in
    this process: a signal it sends itself, a crash or an exit from compiled code ends relulab
    (docs/probe.md says so)."""
    interrupted = False
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None

    def on_ctrl_c(signum: int, frame: object) -> None:
        nonlocal interrupted
        interrupted = True
        raise KeyboardInterrupt

    def exit_at_once(status: int) -> NoReturn:
        raise _ProcessExitRequest(status)

    if main:
        signal.signal(signal.SIGINT, on_ctrl_c)
    real_exit, os._exit = os._exit, exit_at_once
    try:
        yield
    except _ProcessExitRequest as stop:
        raise _UserCodeStoppedError(f"the model's code called os._exit({stop.status})") from None
    except SystemExit as stop:
        raise _UserCodeStoppedError(f"the model's code called sys.exit({stop.code!r})") from None
    except KeyboardInterrupt:
        if interrupted:
            raise
        raise _UserCodeStoppedError("the model's code raised KeyboardInterrupt") from None
    finally:
        os._exit = real_exit
        if main:
            signal.signal(signal.SIGINT, previous)


def _refusal(args: argparse.Namespace, error: Exception, guess: str | None, data: object) -> str:
    """The one line saying why the model could not be probed, and what to pass instead."""
    from relulab.probe import ModelRunError

    if isinstance(error, ModelRunError) and guess is not None:
        return (
            f"{args.model} did not run on {guess}: {error.reason.rstrip('.')}; pass "
            "--input-shape (e.g. --input-shape 3,224,224, or T for token ids) or --data"
        )
    if isinstance(error, ModelRunError) and _has_integers(data):
        return (
            f"{error}; integer data are passed as integers (token ids): save inputs that "
            "should be numbers (images, features) as floating point"
        )
    if isinstance(error, ValueError):
        return str(error)
    return f"probing {args.model} failed ({describe_error(error)})"


def _has_integers(data: object) -> bool:
    tensors = data.values() if isinstance(data, dict) else [data]
    return any(
        isinstance(t, torch.Tensor) and not t.is_floating_point() and t.dtype != torch.bool
        for t in tensors
    )


def _data_shape(data: ProbeData) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    if isinstance(data, Mapping):
        return {name: tuple(tensor.shape) for name, tensor in data.items()}
    return tuple(data.shape)


def _probe(
    args: argparse.Namespace,
    inits: list[str],
    shape: tuple[int, ...] | None,
    lines: DiagnoseLines,
) -> tuple[Diagnosis, ProbeData, str]:
    """Build the model, load or guess the data, probe: ``(diagnosis, data, data source)``;
    anything the user's code or data get wrong is a one-line :class:`UsageError`."""
    from relulab.init.data import describe
    from relulab.probe.diagnose import (
        build_model,
        default_shape,
        diagnose,
        guess_inputs,
        load_activation_types,
        load_data,
    )

    data: ProbeData | None = None
    guess: str | None = None
    source = str(args.data)
    try:
        with _user_code():
            activation_types = load_activation_types(args.activation_types)
            factory = build_model(args.model)
            model = factory()
            size = sum(p.numel() for p in model.parameters())
            lines.stage(f"model built ({type(model).__name__}, {size:,} parameters)")
            generator = torch.Generator().manual_seed(args.seed)
            if args.data is None:
                _check_data_size(args.samples, default_shape(model, shape))
                guessed = guess_inputs(model, args.samples, shape, generator)
                data, source = guessed.data, guessed.description
                guess = source if guessed.guessed else None
            else:
                data = load_data(args.data, model, args.samples, shape, generator)
            lines.stage(f"data ready: {describe(data)}; probing {len(inits)} init(s)")
            found = diagnose(
                factory,
                data,
                inits,
                args.seed,
                args.mode,
                unit_axis=args.unit_axis,
                activation_types=activation_types,
                batch_size=args.batch_size,
                progress=lines.count_init,
                bias_free=args.bias_free or "error",
            )
    except _UserCodeStoppedError as error:
        raise UsageError(f"probing {args.model} failed ({error})") from None
    except Exception as error:  # the user's model failed while being probed: nothing written
        raise UsageError(_refusal(args, error, guess, data)) from None
    assert data is not None  # loaded or guessed, or the probe was refused above
    return found, data, source


def _write_report(
    out: Path,
    model: str,
    found: Diagnosis,
    tables: dict[str, Any],
    data: ProbeData,
    source: str,
) -> Path:
    from relulab.report import write_diagnose_report

    write_atomic(out / DIAGNOSE_MARKER, "written by relulab diagnose\n")
    frame = found.frame
    frame.insert(1, "mode", found.mode)
    write_atomic(out / "probe.csv", frame.to_csv(index=False))
    return write_diagnose_report(
        out,
        model,
        found.inits,
        _data_shape(data),
        tables,
        found.names,
        mode=found.mode,
        skipped=found.skipped,
        calls=found.calls,
        notes=found.notes,
        data_source=source,
        flags=found.flags,
        advice=found.advice,
    )


def command(args: argparse.Namespace) -> int:
    from relulab.probe.diagnose import comparison_table, key_metrics

    inits = name_list(args.compare_inits, "--compare-inits") or name_list(args.init, "--init")
    assert inits is not None  # --init has a default
    unknown = [name for name in inits if name != "default" and name not in _init_names()]
    if unknown:
        raise UsageError(
            f"unknown init(s) {', '.join(unknown)}; choose default or " + ", ".join(_init_names())
        )
    shape = _parse_shape(args.input_shape)
    out = _check_out(args.out or default_out(args.model))
    terminal = console()
    layout = args.format or ("table" if terminal.is_terminal else "markdown")
    lines = DiagnoseLines(args.model, len(inits), not (args.quiet or stderr_is_terminal()))
    try:
        # one writer from the first probe to the last byte: a second diagnose into --out is
        # refused at once, never silently replaced (a refused probe removes what the lock made)
        with locked(out):
            found, data, source = _probe(args, inits, shape, lines)
            tables = {
                metric: comparison_table(found.frame, metric) for metric in key_metrics(found.frame)
            }
            report = _write_report(out, args.model, found, tables, data, source)
    except DirectoryInUseError as error:
        raise UsageError(str(error)) from None
    lines.stage(f"report written to {report}")
    PRINTERS[layout](found, tables)
    if layout == "csv":
        _write_line(f"report: {report}")
    else:
        terminal.print(f"report: {report}", highlight=False, soft_wrap=True)
    return 0
