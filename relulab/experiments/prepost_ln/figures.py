"""The prepost-ln figure: norm, consecutive-layer cosine gap and effective rank against depth."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from relulab.experiments.base import Figure, Results
from relulab.experiments.prepost_ln.config import NORMS, PrePostConfig
from relulab.experiments.prepost_ln.units import Key, forward
from relulab.report.plotting import plt, save

__all__ = ["figures"]


def _curves(ax, results: Results, config: PrePostConfig, layers: np.ndarray) -> None:
    """The mean curves of every (norm, α): Pre-LN solid, Post-LN dashed."""
    for norm, style in zip(NORMS, ("-", "--"), strict=True):
        result = results[forward(norm)]
        for alpha in config.alphas:
            toys = [i for i, c in enumerate(result.conditions) if np.isclose(c["alpha"], alpha)]
            curves = {key: result.curves[key][toys].mean(axis=0) for key in result.curves}
            label = f"{norm}-LN α={alpha:g}"
            ax[0].loglog(layers, curves["norm"], style, label=label)
            ax[1].loglog(layers[:-1], 1 - curves["cosine"][:-1], style, label=label)
            ax[2].plot(layers, curves["effective_rank"], style, label=label)


def _guides(ax, results: Results, config: PrePostConfig, layers: np.ndarray) -> None:
    """√l and 1/l guides through the last Pre-LN toy at layer ``fit_from``."""
    pre = results[Key.FORWARD_PRE]
    guide = pre.curves["norm"][-1]
    ax[0].loglog(
        layers, guide[config.fit_from - 1] * np.sqrt(layers / config.fit_from), "k:", label="∝ √l"
    )
    gap = 1 - pre.curves["cosine"][-1][config.fit_from - 1]
    ax[1].loglog(layers, gap * config.fit_from / layers, "k:", label="∝ 1/l")


def figures(results: Results, config: PrePostConfig, out_dir: Path) -> list[Figure]:
    """``prepost.png``: the three per-layer readings, Pre-LN against Post-LN."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    layers = np.arange(1, config.blocks + 1)
    _curves(axes, results, config, layers)
    _guides(axes, results, config, layers)
    axes[0].set(xlabel="layer l", ylabel="mean ‖h_l‖", title="norm")
    axes[1].set(xlabel="layer l", ylabel="1 − cos(h_l, h_{l+1})", title="consecutive-layer cosine")
    axes[2].set(xlabel="layer l", ylabel="effective rank (uncentred)", title="effective rank")
    for ax in axes:
        ax.legend(fontsize=6)
    caption = (
        f"Residual toy, d = {config.width}, hidden {config.hidden}, {config.blocks} blocks, "
        f"{config.n_samples} Gaussian inputs, mean over {config.n_networks} toys per α: Pre-LN "
        "(solid) vs Post-LN (dashed), with √l and 1/l guides."
    )
    return [save(fig, out_dir, "prepost.png", caption)]
