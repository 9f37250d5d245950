"""``relulab bench``: the engine against a naive loop, JAX and the matmul peak, in one process;
``relulab bench remedies``: the advice's remedies against broken networks, by held-out loss
(:mod:`relulab.bench.remedies`)."""

from __future__ import annotations

import argparse

from rich.table import Table

from relulab.cli.common import (
    UsageError,
    apply_threads,
    bounded_int,
    console,
    name_list,
    thread_count,
)

__all__ = ["SUITES", "add_parser", "command"]

#: What ``relulab bench`` measures.
SUITES = ("engine", "remedies")


def _case_names() -> list[str]:
    from relulab.bench.broken import CASES

    return list(CASES)


def add_parser(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure the engine against the machine and peers",
        description="Measure, in one process, the batched engine against a naive per-network "
        "PyTorch loop, JAX (when installed) and the fp32 matmul peak, and the training overhead "
        "of relulab.probe.Monitor; writes bench.json and prints a table. 'relulab bench "
        "remedies' instead trains deliberately broken networks untreated, with every remedy the "
        "advice can offer and with the practitioner's fix, and writes their held-out losses "
        "(the table the advice reads: relulab/bench/remedies.json).",
    )
    bench.add_argument(
        "suite",
        nargs="?",
        choices=SUITES,
        default="engine",
        help="engine (default: the workloads below) or remedies (the advice's remedies by "
        "held-out loss; about 7½ CPU minutes on one thread)",
    )
    bench.add_argument(
        "--workloads",
        default="w1,w2,w3,w4,w5,scaling,monitor",
        help="comma-separated: w1 (tiny nets), w2 (residual toy), w3 (wide forward "
        "statistics), w4 (single neurons at the seed's scale), w5 (CNN ensemble: vmap vs "
        "per-network loops), scaling (network-steps/s against S and width, with a figure), monitor "
        "(relulab.probe.Monitor's overhead on a ResNet-18 training step at every=50); "
        "default all",
    )
    bench.add_argument("--full", action="store_true", help="W3 at full size (width 3000)")
    bench.add_argument(
        "--naive-networks",
        type=bounded_int(1, 40),
        default=None,
        metavar="N",
        help="time W1's naive loop on N of its 40 networks and scale (default: all 40)",
    )
    bench.add_argument(
        "--out",
        default=None,
        help="where to write the results (default bench.json; remedies.json for remedies)",
    )
    _add_remedies_options(bench)
    bench.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    bench.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        help="torch CPU threads, at most the machine's CPU count",
    )
    bench.add_argument("--quiet", action="store_true", help="no table")


def _add_remedies_options(bench: argparse.ArgumentParser) -> None:
    """The options of ``relulab bench remedies``."""
    bench.add_argument(
        "--seeds",
        type=bounded_int(3, 1000),
        default=None,
        help="remedies: paired networks per arm (default 8)",
    )
    bench.add_argument(
        "--cases",
        default=None,
        help="remedies: comma-separated broken networks (default all: "
        + ",".join(_case_names())
        + ")",
    )
    bench.add_argument(
        "--quick",
        action="store_true",
        help="remedies: tiny networks and few steps (seconds; a smoke test, not the table)",
    )


def command(args: argparse.Namespace) -> int:
    if args.suite == "remedies":
        return _remedies(args)
    if args.seeds is not None or args.cases is not None or args.quick:
        raise UsageError("--seeds, --cases and --quick are options of 'relulab bench remedies'")
    return _engine(args)


def _remedies(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from relulab.bench.remedies import FULL, QUICK, remedies_markdown, run_remedies
    from relulab.files import check_output_file, write_atomic

    names = name_list(args.cases, "--cases") or []
    unknown = [name for name in names if name not in _case_names()]
    if unknown:
        raise UsageError(
            f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(_case_names())}"
        )
    try:
        out = check_output_file(_out(args, "remedies.json"))
    except ValueError as error:
        raise UsageError(str(error)) from None
    apply_threads(args)
    size = QUICK if args.quick else FULL
    if args.seeds is not None:
        size = dataclasses.replace(size, seeds=args.seeds)
    say = (lambda text: None) if args.quiet else (lambda text: console().print(text))
    table = run_remedies(size, names or None, progress=say)
    write_atomic(out, json.dumps(table, indent=1) + "\n")
    if not args.quiet:
        console().print(remedies_markdown(table), highlight=False, soft_wrap=True)
        console().print(f"written: {out}")
    return 0


def _out(args: argparse.Namespace, default: str) -> str:
    """``--out``, or ``default`` when it is not given (an empty ``--out ''`` stays empty, and
    :func:`~relulab.files.check_output_file` refuses it: it never means the default)."""
    return default if args.out is None else args.out


def _engine(args: argparse.Namespace) -> int:
    from relulab.bench import WORKLOADS, run_bench, summary_rows, write_bench
    from relulab.files import check_output_file
    from relulab.runner import resolve_device

    names = [name.lower() for name in name_list(args.workloads, "--workloads") or []]
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
    try:
        out = check_output_file(_out(args, "bench.json"))  # before minutes of work, not after
    except ValueError as error:
        raise UsageError(str(error)) from None
    apply_threads(args)
    say = (lambda text: None) if args.quiet else (lambda text: console().print(text))
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
        console().print(table)
        console().print(f"written: {out}")
    return 0
