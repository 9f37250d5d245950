"""``relulab bench``: the engine against a naive loop, JAX and the matmul peak, in one process."""

from __future__ import annotations

import argparse

from rich.table import Table

from relulab.cli.common import UsageError, apply_threads, bounded_int, console, thread_count

__all__ = ["add_parser", "command"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure the engine against the machine and peers",
        description="Measure, in one process, the batched engine against a naive per-network "
        "PyTorch loop, JAX (when installed) and the fp32 matmul peak, and the training overhead "
        "of relulab.probe.Monitor; writes bench.json and prints a table.",
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
    bench.add_argument("--out", default="bench.json", help="where to write the results")
    bench.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    bench.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        help="torch CPU threads, at most the machine's CPU count",
    )
    bench.add_argument("--quiet", action="store_true", help="no table")


def command(args: argparse.Namespace) -> int:
    from relulab.bench import WORKLOADS, run_bench, summary_rows, write_bench
    from relulab.files import check_output_file
    from relulab.runner import resolve_device

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
    try:
        out = check_output_file(args.out)  # before minutes of work, not after
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
