"""Matplotlib set-up shared by every experiment's figures (headless Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["PHASE_LABELS", "plot_phase_regions", "plt", "save_figure"]

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


def save_figure(figure: plt.Figure, path: Path) -> None:
    """Save as PNG (deterministic metadata) and close."""
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={"Software": None})
    plt.close(figure)


PHASE_LABELS = ("ordered", "bounded chaotic", "unbounded")


def plot_phase_regions(ax: plt.Axes, diagram: object) -> object:
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
