"""The ``relulab`` command line: ``list``, ``run``, ``reproduce``, ``report``.

Every bad request (unknown experiment, preset, config key or value, device, an output directory
that belongs to something else) is answered with one line on stderr and exit code 2, before
anything is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import torch
from rich.console import Console
from rich.table import Table

from relulab import __version__
from relulab.experiments import REGISTRY
from relulab.report import INDEX_FILENAME, REPORT_FILENAME, write_index
from relulab.runner import PreparedRun, execute, prepare_run, rebuild_outputs
from relulab.store import STORE_FILENAME, StoreError
from relulab.theory_cli import add_theory_parser, run_theory

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
SCORECARD_FILENAME = "scorecard.json"


class UsageError(Exception):
    """A request we refuse: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"relulab: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _add_run_options(parser: argparse.ArgumentParser) -> None:
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
        type=_positive_int,
        default=None,
        help="torch CPU threads (default: torch's choice)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars or tables")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="relulab",
        description="A laboratory for how biases and initialisation shape ReLU networks.",
    )
    parser.add_argument("--version", action="version", version=f"relulab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser(
        "list",
        help="list the experiments with their seeds and presets",
        description="List the experiments with their seed documents and presets.",
    )

    run = commands.add_parser(
        "run",
        help="run one experiment into a directory (resumable)",
        description="Run one experiment. Writes summary.json, report.html, "
        "figures and runs.sqlite into --out; re-running into the same "
        "directory resumes and skips finished work.",
    )
    run.add_argument("experiment", help="experiment name (see `relulab list`)")
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a preset field (repeatable), e.g. --set steps=2000",
    )
    run.add_argument("--out", default=None, help="run directory (default runs/EXPERIMENT-PRESET)")
    _add_run_options(run)

    reproduce = commands.add_parser(
        "reproduce",
        help="run every experiment; write index.html",
        description="Run every experiment (or --only some) into "
        "OUT/EXPERIMENT and write OUT/index.html with the scorecard.",
    )
    reproduce.add_argument("--out", default=None, help="directory (default runs/reproduce-PRESET)")
    reproduce.add_argument(
        "--only", default=None, metavar="NAMES", help="comma-separated experiment names to run"
    )
    _add_run_options(reproduce)

    bench = commands.add_parser(
        "bench",
        help="measure the engine against the machine and peers",
        description="Measure, in one process, the batched engine against a naive per-network "
        "PyTorch loop, JAX (when installed) and the fp32 matmul peak; writes bench.json and "
        "prints a table.",
    )
    bench.add_argument(
        "--workloads",
        default="w1,w2,w3",
        help="comma-separated: w1 (tiny nets), "
        "w2 (residual toy), w3 (wide forward statistics); default all",
    )
    bench.add_argument("--full", action="store_true", help="W3 at full size (width 3000)")
    bench.add_argument(
        "--naive-networks",
        type=_positive_int,
        default=None,
        metavar="N",
        help="time W1's naive loop on N networks and scale (default: all 40)",
    )
    bench.add_argument("--out", default="bench.json", help="where to write the results")
    bench.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    bench.add_argument("--threads", type=_positive_int, default=None, help="torch CPU threads")
    bench.add_argument("--quiet", action="store_true", help="no table")

    add_theory_parser(commands, _positive_int)

    diagnose = commands.add_parser(
        "diagnose",
        help="probe any PyTorch model's ReLU units (dead/always-on, r, rank, Δ)",
        description="Build MODEL (module.path:factory), feed it data (a .npy/.pt file or "
        "Gaussian samples), print the per-layer probe table and write a report.",
    )
    diagnose.add_argument(
        "model", help="module.path:factory returning an nn.Module, e.g. relulab.examples:deep_mlp"
    )
    diagnose.add_argument(
        "--data", default=None, help=".npy or .pt file of inputs (default: Gaussian samples)"
    )
    diagnose.add_argument("--samples", type=_positive_int, default=512, help="number of samples")
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
        const=",".join(("default",) + _COMPARED),
        default=None,
        metavar="NAMES",
        help="probe the model under several inits "
        "side by side (default list: default," + ",".join(_COMPARED) + ")",
    )
    diagnose.add_argument("--seed", type=int, default=0)
    diagnose.add_argument("--out", default="diagnose", help="report directory (default diagnose)")

    report = commands.add_parser(
        "report",
        help="rebuild reports from a run directory",
        description="Recompute claims, figures, summary.json and "
        "report.html from the run store in DIR (or, for a reproduce "
        "directory, every run in it and index.html).",
    )
    report.add_argument("directory", help="a run directory or a reproduce directory")
    return parser


# -- output -----------------------------------------------------------------------------------
def _console() -> Console:
    return Console()


def _print_scorecard(summary: dict[str, Any]) -> None:
    table = Table(title=f"{summary['experiment']} ({summary['preset']})")
    for column in ("claim", "measured", "verdict"):
        table.add_column(column)
    for claim in summary["claims"]:
        measured = "—" if claim["measured"] is None else f"{claim['measured']:.4g}"
        verdict = "[green]holds[/green]" if claim["passed"] else "[red]fails[/red]"
        table.add_row(claim["id"], measured, verdict)
    _console().print(table)


# -- commands ---------------------------------------------------------------------------------
def _command_list(_: argparse.Namespace) -> int:
    table = Table(title="relulab experiments")
    for column in ("name", "seed", "title", "presets"):
        table.add_column(column)
    for experiment in REGISTRY.values():
        table.add_row(
            experiment.name, experiment.seed, experiment.title, ", ".join(experiment.presets)
        )
    _console().print(table)
    return 0


def _prepare(
    name: str, args: argparse.Namespace, overrides: Sequence[str], out: Path
) -> PreparedRun:
    try:
        return prepare_run(name, args.preset, list(overrides), args.seed, args.device, out)
    except (ValueError, StoreError) as error:
        raise UsageError(str(error)) from None


def _apply_threads(args: argparse.Namespace) -> None:
    if args.threads is not None:
        torch.set_num_threads(args.threads)


def _command_run(args: argparse.Namespace) -> int:
    out = Path(args.out or f"runs/{args.experiment}-{args.preset}")
    prepared = _prepare(args.experiment, args, args.overrides, out)
    _apply_threads(args)
    summary = execute(prepared, quiet=args.quiet)
    if not args.quiet:
        _print_scorecard(summary)
        _console().print(f"report: {out / REPORT_FILENAME}")
    return 0


def _selected_experiments(only: str | None) -> list[str]:
    if only is None:
        return list(REGISTRY)
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in REGISTRY]
    if unknown or not names:
        raise UsageError(
            f"unknown experiment(s) in --only: {', '.join(unknown) or only!r}; "
            f"known: {', '.join(REGISTRY)}"
        )
    return names


def _check_reproduce_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    if (
        out.is_dir()
        and any(out.iterdir())
        and not (out / SCORECARD_FILENAME).exists()
        and not any((child / STORE_FILENAME).exists() for child in out.iterdir())
    ):
        raise UsageError(
            f"--out {out} is not empty and holds no relulab runs; choose another directory"
        )


def _index_entry(name: str, summary: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "title": REGISTRY[name].title,
        "link": f"{name}/{REPORT_FILENAME}",
        "summary": summary,
        "error": error,
    }


def _write_scorecard(out: Path, entries: list[dict[str, Any]], preset: str) -> Path:
    scorecard = {
        "preset": preset,
        "experiments": [
            {
                "experiment": e["name"],
                "error": e["error"],
                "claims": e["summary"]["claims"] if e["summary"] else [],
            }
            for e in entries
        ],
    }
    (out / SCORECARD_FILENAME).write_text(json.dumps(scorecard, indent=2, allow_nan=False))
    return write_index(out, entries, preset)


def _command_reproduce(args: argparse.Namespace) -> int:
    out = Path(args.out or f"runs/reproduce-{args.preset}")
    names = _selected_experiments(args.only)
    _check_reproduce_dir(out)
    prepared = [_prepare(name, args, [], out / name) for name in names]
    _apply_threads(args)
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for run in prepared:
        try:
            summary, error = execute(run, quiet=args.quiet), None
        except (RuntimeError, ValueError, StoreError) as failure:
            summary, error = None, f"{type(failure).__name__}: {failure}"
            sys.stderr.write(f"relulab: {run.experiment.name} failed: {error}\n")
        if summary and not args.quiet:
            _print_scorecard(summary)
        entries.append(_index_entry(run.experiment.name, summary, error))
    index = _write_scorecard(out, entries, args.preset)
    if not args.quiet:
        _console().print(f"index: {index}")
    return 1 if any(entry["error"] for entry in entries) else 0


def _command_report(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        if (directory / STORE_FILENAME).exists():
            summary = rebuild_outputs(directory)
            print(directory / REPORT_FILENAME)
            return 0 if summary else 1
        runs = (
            sorted(child for child in directory.iterdir() if (child / STORE_FILENAME).exists())
            if directory.is_dir()
            else []
        )
        if not runs:
            raise UsageError(
                f"{directory} holds no relulab run (no {STORE_FILENAME} in it or "
                "its sub-directories)"
            )
        entries = []
        for run_dir in runs:
            summary = rebuild_outputs(run_dir)
            entries.append(_index_entry(summary["experiment"], summary, None))
        _write_scorecard(directory, entries, entries[0]["summary"]["preset"])
        print(directory / INDEX_FILENAME)
        return 0
    except (StoreError, ValueError) as error:
        raise UsageError(str(error)) from None


def _command_bench(args: argparse.Namespace) -> int:
    from relulab.bench import WORKLOADS, run_bench, summary_rows, write_bench
    from relulab.runtime import resolve_device

    names = [name.strip().lower() for name in args.workloads.split(",") if name.strip()]
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown or not names:
        raise UsageError(
            f"unknown workload(s) {', '.join(unknown) or args.workloads!r}; "
            f"choose from {', '.join(WORKLOADS)}"
        )
    try:
        device = resolve_device(args.device)
    except ValueError as error:
        raise UsageError(str(error)) from None
    out = Path(args.out)
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory; give a file path such as bench.json")
    _apply_threads(args)
    say = (lambda text: None) if args.quiet else (lambda text: _console().print(text))
    results = run_bench(
        names, device, full=args.full, naive_networks=args.naive_networks, progress=say
    )
    write_bench(results, out)
    if not args.quiet:
        table = Table(title=f"relulab bench ({results['machine']['device']})")
        for column in ("workload", "measure", "value", "target"):
            table.add_column(column)
        for row in summary_rows(results):
            table.add_row(*row)
        _console().print(table)
        _console().print(f"written: {out}")
    return 0


def _init_names() -> list[str]:
    from relulab.init import MODEL_INITS

    return list(MODEL_INITS)


_COMPARED = ("kaiming_normal", "lecun_normal", "orthogonal", "scale_bias", "lsuv")


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


def _command_diagnose(args: argparse.Namespace) -> int:
    import torch

    from relulab.diagnose import KEY_METRICS, build_model, comparison_table, diagnose, load_data
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
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "probe.csv", index=False)
    report = write_diagnose_report(out, args.model, inits, tuple(data.shape), tables)
    console = _console()
    for metric, table in tables.items():
        rich_table = Table(title=metric)
        rich_table.add_column("layer")
        for name in table.columns:
            rich_table.add_column(str(name))
        for layer, row in table.iterrows():
            rich_table.add_row(str(layer), *(f"{v:.3g}" for v in row.to_numpy()))
        console.print(rich_table)
    console.print(f"report: {report}")
    return 0


def _command_theory(args: argparse.Namespace) -> int:
    try:
        return run_theory(args)
    except ValueError as error:
        raise UsageError(str(error)) from None


_COMMANDS = {
    "diagnose": _command_diagnose,
    "theory": _command_theory,
    "list": _command_list,
    "run": _command_run,
    "reproduce": _command_reproduce,
    "report": _command_report,
    "bench": _command_bench,
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
