"""Matplotlib set-up shared by every experiment's figures (headless Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt", "save_figure"]

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
