"""``relulab theory …``: the theory toolkit from the command line (figures and tables)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from relulab.cli.common import UsageError, bounded_int, finite_float
from relulab.files import check_output_file
from relulab.report.plotting import PHASE_LABELS, plot_phase_regions, plt, save_figure
from relulab.theory import (
    batchnorm_gradient_slope,
    batchnorm_sample_std,
    get_kernel,
    phase_diagram,
    relu_bounded_limit,
    sample_statistics,
)

__all__ = ["add_parser", "command", "fresh_directory"]

MAX_GRID = 2000  # 2000² points: a few seconds and ~1 GB at most
MAX_DEPTH = 10_000  # seed 002's statistics for 10 000 layers take 0.1 s
FIGURE_NAME = "phase_diagram.png"


def add_parser(commands: argparse._SubParsersAction) -> None:
    theory = commands.add_parser(
        "theory",
        help="mean-field theory: phase diagrams, sample statistics",
        description="Closed-form theory from the command line.",
    )
    topics = theory.add_subparsers(dest="topic", required=True, metavar="TOPIC")
    phase = topics.add_parser(
        "phase-diagram",
        help="ordered/chaotic and bounded regions over (σ_w², σ_b²), seed 003 §2",
        description="Phase diagram of a deep network with row covariance (σ_w²/N)(aI + (k/N)J).",
    )
    phase.add_argument(
        "--activation",
        default="relu",
        help="relu, relu_b, leaky_relu, abs, erf, tanh, silu, gelu (default relu)",
    )
    phase.add_argument(
        "--shift", type=finite_float(), default=0.0, help="ReLU−b shift b (relu_b), |b| ≤ 1e6"
    )
    phase.add_argument(
        "--slope", type=finite_float(), default=0.01, help="leaky ReLU negative slope, |p| ≤ 1e6"
    )
    phase.add_argument(
        "--k",
        type=finite_float(-1.0, 1e6),
        default=0.0,
        help="weight correlation strength (a = 1, b = k; k < 0 anti-correlated; k ≥ −1 for a "
        "valid covariance)",
    )
    phase.add_argument(
        "--q0",
        type=finite_float(0.0, 1e6, open_low=True),
        default=1.0,
        help="input length, > 0 (default 1)",
    )
    phase.add_argument(
        "--grid",
        type=bounded_int(2, MAX_GRID),
        default=200,
        help=f"grid points per axis, 2 … {MAX_GRID} (default 200)",
    )
    phase.add_argument(
        "--out",
        default=None,
        help="figure path (.png); default a fresh directory runs/theory-phase-diagram-N/ "
        "(an existing file is never replaced without --force)",
    )
    phase.add_argument("--force", action="store_true", help="replace the --out figure if it exists")
    sv = topics.add_parser(
        "sample-variance",
        help="seed 002's m/v per layer at infinite width",
        description="ρ_l, m/σ, v/σ and m/v per layer (seed 002 §3).",
    )
    sv.add_argument(
        "--depth",
        type=bounded_int(1, MAX_DEPTH),
        default=50,
        help=f"layers, 1 … {MAX_DEPTH} (default 50)",
    )


def fresh_directory(parent: Path, stem: str) -> Path:
    """``parent/stem-N`` for the smallest N ≥ 1 that does not exist yet (nothing is created).

    Example:
        >>> fresh_directory(Path("/nonexistent"), "theory-phase-diagram")
        PosixPath('/nonexistent/theory-phase-diagram-1')
    """
    number = 1
    while (parent / f"{stem}-{number}").exists():
        number += 1
    return parent / f"{stem}-{number}"


def _figure_path(args: argparse.Namespace, topic: str) -> Path:
    """Where a figure goes: ``--out`` (never replaced without ``--force``) or a fresh
    directory under ``runs/``."""
    if args.out is None:
        directory = fresh_directory(Path("runs"), f"theory-{topic}")
        return check_output_file(directory / FIGURE_NAME, suffixes=(".png",))
    out = check_output_file(args.out, suffixes=(".png",))
    if out.exists() and not args.force:
        raise ValueError(f"--out {out} exists; pass --force to replace it or choose another path")
    return out


def _phase_diagram(args: argparse.Namespace) -> int:
    kernel = get_kernel(args.activation, slope=args.slope, shift=args.shift)
    out = _figure_path(args, "phase-diagram")
    w2, b2 = np.linspace(0.05, 4.0, args.grid), np.linspace(0.0, 2.0, args.grid)
    diagram = phase_diagram(kernel, w2, b2, a=1.0, b=args.k, q0=args.q0)
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    mesh = plot_phase_regions(ax, diagram)
    bar = fig.colorbar(mesh, ax=ax, ticks=[0, 1, 2])
    bar.ax.set_yticklabels(PHASE_LABELS)
    ax.set(title=f"{kernel.name}, k = {args.k:g}")
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out)
    print(
        f"{kernel.name}, k = {args.k:g}: bounded-and-chaotic fraction of the grid "
        f"{diagram.bounded_chaotic_fraction:.3f}"
    )
    if args.activation == "relu" and not args.shift:
        print(
            f"ReLU: chaotic for σ_w² > 2; bounded for σ_w² < {relu_bounded_limit(1.0, args.k):.4f}"
        )
    print(f"figure: {out}")
    return 0


def _sample_variance(args: argparse.Namespace) -> int:
    statistics = sample_statistics(args.depth)
    print("layer   rho      m/sigma  v/sigma  m/v")
    for layer in range(args.depth):
        print(
            f"{layer:5d}   {statistics.rho[layer]:.4f}   {statistics.mean_over_sigma[layer]:.4f}"
            f"   {statistics.std_over_sigma[layer]:.4f}   {statistics.mean_to_std_ratio[layer]:.4f}"
        )
    print(
        f"BatchNorm: sigma_s = {batchnorm_sample_std():.4f} (1/sigma_s = "
        f"{1 / batchnorm_sample_std():.4f}), gradient slope ln sigma_s^2 = "
        f"{batchnorm_gradient_slope():.4f}"
    )
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    return {"phase-diagram": _phase_diagram, "sample-variance": _sample_variance}[args.topic](args)


def command(args: argparse.Namespace) -> int:
    """``relulab theory TOPIC``; bad input is a one-line usage error."""
    try:
        return _dispatch(args)
    except ValueError as error:
        raise UsageError(str(error)) from None
