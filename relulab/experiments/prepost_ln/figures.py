"""The prepost-ln figure: norm, consecutive-layer cosine gap, effective rank and the influence of
an early layer against depth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes

from relulab.experiments.base import Figure, Results
from relulab.experiments.prepost_ln.config import (
    NORMS,
    PrePostConfig,
    long_alphas,
    long_depth,
    probe_count,
)
from relulab.experiments.prepost_ln.units import Influence, Key, Stream, Walk, forward
from relulab.report.plotting import plt, save

__all__ = ["figures"]


def _curves(ax: np.ndarray, results: Results, config: PrePostConfig, layers: np.ndarray) -> None:
    """The mean curves of every (norm, α): Pre-LN solid, Post-LN dashed."""
    for norm, style in zip(NORMS, ("-", "--"), strict=True):
        stream = Stream.read(results[forward(norm)], forward(norm))
        for alpha in config.alphas:
            toys = [i for i, c in enumerate(stream.conditions) if np.isclose(c["alpha"], alpha)]
            label = f"{norm}-LN α={alpha:g}"
            ax[0].loglog(layers, stream.norm[toys].mean(axis=0), style, label=label)
            gap = 1 - stream.cosine[toys].mean(axis=0)
            ax[1].loglog(layers[:-1], gap[:-1], style, label=label)
            ax[2].plot(layers, stream.effective_rank[toys].mean(axis=0), style, label=label)


def _long(ax: np.ndarray, results: Results, config: PrePostConfig) -> None:
    """The long Pre-LN stream (dotted), on which the asymptotic laws are read at long_alphas."""
    if Key.FORWARD_PRE_LONG not in results:
        return
    result = Walk.read(results[Key.FORWARD_PRE_LONG], Key.FORWARD_PRE_LONG)
    for alpha in long_alphas(config):
        toys = [i for i, c in enumerate(result.conditions) if np.isclose(c["alpha"], alpha)]
        norm = result.norm[toys].mean(axis=0)
        gap = 1 - result.cosine[toys].mean(axis=0)
        label = f"pre-LN α={alpha:g}, {long_depth(config)} blocks"
        ax[0].loglog(result.steps, norm, ":", label=label)
        ax[1].loglog(result.steps[:-1], gap[:-1], ":", label=label)


def _influence(ax: Axes, results: Results, config: PrePostConfig) -> None:
    """The gain of a perturbation of h^l on h^m, m > l (geometric mean over toys)."""
    result = Influence.read(results[Key.INFLUENCE], Key.INFLUENCE)
    for norm, style in zip(NORMS, ("-", "--"), strict=True):
        for alpha in config.alphas:
            toys = [
                i
                for i, c in enumerate(result.conditions)
                if c["norm"] == norm and np.isclose(c["alpha"], alpha)
            ]
            gain = np.exp(np.log(result.gain[toys]).mean(axis=0))
            ax.semilogy(result.steps, gain, style, label=f"{norm}-LN α={alpha:g}")
    ax.axhline(1.0, color="k", lw=0.5)


def _guides(ax: np.ndarray, results: Results, config: PrePostConfig, layers: np.ndarray) -> None:
    """√l and 1/l guides through the last Pre-LN toy at layer ``fit_from``."""
    pre = Walk.read(results[Key.FORWARD_PRE], Key.FORWARD_PRE)
    guide = pre.norm[-1]
    ax[0].loglog(
        layers, guide[config.fit_from - 1] * np.sqrt(layers / config.fit_from), "k:", label="∝ √l"
    )
    gap = 1 - pre.cosine[-1][config.fit_from - 1]
    ax[1].loglog(layers, gap * config.fit_from / layers, "k:", label="∝ 1/l")


def figures(results: Results, config: PrePostConfig, out_dir: Path) -> list[Figure]:
    """``prepost.png``: the per-layer readings and the influence, Pre-LN against Post-LN."""
    fig, axes = plt.subplots(1, 4, figsize=(20, 4))
    layers = np.arange(1, config.blocks + 1)
    _curves(axes, results, config, layers)
    _long(axes, results, config)
    _guides(axes, results, config, layers)
    _influence(axes[3], results, config)
    axes[0].set(xlabel="layer l", ylabel="mean ‖h_l‖", title="norm")
    axes[1].set(xlabel="layer l", ylabel="1 − cos(h_l, h_{l+1})", title="consecutive-layer cosine")
    axes[2].set(xlabel="layer l", ylabel="effective rank (uncentred)", title="effective rank")
    axes[3].set(
        xlabel="layer m",
        ylabel=f"‖∂h_m/∂h_{config.influence_layer}·v‖",
        title=f"influence of layer {config.influence_layer}",
    )
    for ax in axes:
        ax.legend(fontsize=6)
    caption = (
        f"Residual toy, d = {config.width}, hidden {config.hidden}, {config.blocks} blocks, "
        f"{config.n_samples} Gaussian inputs, mean over {config.n_networks} toys per α: Pre-LN "
        f"(solid) vs Post-LN (dashed), with √l and 1/l guides; dotted: Pre-LN over "
        f"{long_depth(config)} blocks; right: the gain of a perturbation of layer "
        f"{config.influence_layer} ({probe_count(config)} inputs)."
    )
    return [save(fig, out_dir, "prepost.png", caption)]
