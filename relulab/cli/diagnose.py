"""``relulab diagnose``: probe any PyTorch model built by a factory, under one or several inits."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from relulab.cli.common import UsageError, console, positive_int

__all__ = ["add_parser", "command"]

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
        help="module.path:factory returning an nn.Module, e.g. relulab.nn.examples:deep_mlp",
    )
    diagnose.add_argument(
        "--data", default=None, help=".npy or .pt file of inputs (default: Gaussian samples)"
    )
    diagnose.add_argument("--samples", type=positive_int, default=512, help="number of samples")
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
        "side by side (default list: default," + ",".join(COMPARED_INITS) + ")",
    )
    diagnose.add_argument("--seed", type=int, default=0)
    diagnose.add_argument("--out", default="diagnose", help="report directory (default diagnose)")


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


def _layer_names(frame: Any, model: Any) -> dict[int, str]:
    """Per probed activation layer: its name in the model and its type, e.g. ``3 (ReLU)``."""
    modules = dict(model.named_modules())
    names = {}
    for layer, module in zip(frame["layer"], frame["module"], strict=True):
        kind = type(modules[module]).__name__ if module in modules else ""
        names[int(layer)] = f"{module} ({kind})" if kind else str(module)
    return names


def command(args: argparse.Namespace) -> int:
    import torch

    from relulab.probe.diagnose import (
        KEY_METRICS,
        build_model,
        comparison_table,
        diagnose,
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
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    try:
        factory = build_model(args.model)
        data = load_data(
            args.data, factory(), args.samples, shape, torch.Generator().manual_seed(args.seed)
        )
        frame = diagnose(factory, data, inits, args.seed)
    except ValueError as error:
        raise UsageError(str(error)) from None
    tables = {metric: comparison_table(frame, metric) for metric in KEY_METRICS}
    names = _layer_names(frame, factory())
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "probe.csv", index=False)
    report = write_diagnose_report(out, args.model, inits, tuple(data.shape), tables, names)
    terminal = console()
    for metric, table in tables.items():
        rich_table = Table(title=metric)
        rich_table.add_column("module")
        for name in table.columns:
            rich_table.add_column(str(name))
        for layer, row in table.iterrows():
            rich_table.add_row(names.get(layer, str(layer)), *(f"{v:.3g}" for v in row.to_numpy()))
        terminal.print(rich_table)
    terminal.print(f"report: {report}")
    return 0
