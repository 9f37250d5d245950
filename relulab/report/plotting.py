"""Matplotlib set-up shared by every experiment's figures (headless Agg backend).

:func:`save` is how an experiment finishes a figure: lay it out, write a PNG with deterministic
metadata into the run directory, close it, and return the :class:`Figure` record (file name and
caption) that the report embeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

from relulab.files import replacing

if TYPE_CHECKING:  # relulab.theory is not imported at run time by the plotting helpers
    from matplotlib.collections import QuadMesh

    from relulab.theory import PhaseDiagram

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["PHASE_LABELS", "Figure", "plot_phase_regions", "plt", "save", "save_figure"]

plt.rcParams.update(
    {
        "figure.dpi": 100,
        "savefig.dpi": 110,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "font.size": 9,
        "axes.titlesize": 10,
        "legend.fontsize": 7,
    }
)


@dataclass(frozen=True)
class Figure:
    """A figure written into a run directory: its PNG file name and the caption shown with it."""

    filename: str
    caption: str


def save_figure(figure: plt.Figure, path: Path) -> None:
    """Save as PNG (deterministic metadata, written through a temporary file and renamed:
    :func:`relulab.files.replacing`) and close."""
    figure.tight_layout()
    try:
        with replacing(Path(path)) as temporary:
            figure.savefig(temporary, format="png", metadata={"Software": None})
    finally:
        plt.close(figure)


def save(figure: plt.Figure, out_dir: Path, filename: str, caption: str) -> Figure:
    """Lay out, save as ``out_dir/filename`` (PNG, deterministic metadata), close, and record.

    Args:
        figure: the finished matplotlib figure; it is closed afterwards.
        out_dir: the run directory.
        filename: the PNG file name, e.g. ``"loss_curves.png"``.
        caption: what the report prints under the figure.

    Returns:
        The :class:`Figure` record for the experiment's ``figures`` list.

    Example:
        >>> fig, ax = plt.subplots()                          # doctest: +SKIP
        >>> save(fig, out_dir, "loss.png", "Loss per step.")  # doctest: +SKIP
        Figure(filename='loss.png', caption='Loss per step.')
    """
    save_figure(figure, Path(out_dir) / filename)
    return Figure(filename, caption)


PHASE_LABELS = ("ordered", "bounded chaotic", "unbounded")


def plot_phase_regions(ax: plt.Axes, diagram: PhaseDiagram) -> QuadMesh:
    """Draw a :class:`relulab.theory.PhaseDiagram`'s regions on (σ_w², σ_b²) axes."""
    mesh = ax.pcolormesh(
        diagram.sigma_w2[0],
        diagram.sigma_b2[:, 0],
        diagram.regions.astype(float),
        cmap=plt.colormaps["Pastel1"].resampled(3),
        vmin=-0.5,
        vmax=2.5,
        shading="nearest",
    )
    ax.axvline(2.0, color="k", lw=1, ls="--")
    ax.set(xlabel="σ_w²", ylabel="σ_b²")
    ax.grid(False)
    return mesh
