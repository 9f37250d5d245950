"""The anisotropy figure: normalised spectra per activation, σ1/σ2 against the leaky slope."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes

from relulab.analysis import where
from relulab.experiments.anisotropy.claims import crossovers, sweep
from relulab.experiments.anisotropy.config import ACTIVATIONS, AnisotropyConfig
from relulab.experiments.anisotropy.units import Key, Spectra
from relulab.experiments.base import Figure, Results
from relulab.report.plotting import plt, save

__all__ = ["figures"]


def _spectra(ax: Axes, results: Results, config: AnisotropyConfig) -> None:
    acts = Spectra.read(results[Key.ACTIVATIONS], Key.ACTIVATIONS)
    k = min(config.spectrum_points, acts.singular.shape[1])
    for activation in ACTIVATIONS:
        spectrum = acts.singular[where(acts.conditions, activation=activation, draw=0)[0]]
        ax.semilogy(
            np.arange(1, k + 1), (spectrum / spectrum.sum())[:k], "o-", ms=2.5, label=activation
        )
    ax.set(
        xlabel="index",
        ylabel="normalised singular value",
        title=f"spectrum of σ(XW), first {k} (draw 0)",
    )
    ax.legend()


def _slope_sweep(ax: Axes, results: Results, config: AnisotropyConfig) -> None:
    slopes, ratio = sweep(Spectra.read(results[Key.LEAKY_SWEEP], Key.LEAKY_SWEEP))
    ax.plot(slopes, ratio.T, color="tab:blue", alpha=0.3, lw=0.8)
    ax.plot(slopes, ratio.mean(axis=0), "o-", color="tab:blue", label="mean over draws")
    ax.axhline(1.0, color="k", lw=1, ls=":")
    ax.axvline(config.reported_crossover, color="tab:red", lw=1, ls="--", label="reported ≈ 0.8")
    crossover = float(np.mean(crossovers(results, config)))
    ax.axvline(crossover, color="tab:green", lw=1, ls="-.", label=f"floor reached {crossover:.2f}")
    ax.set(xlabel="leaky-ReLU slope p", ylabel="σ1 / σ2", title="anisotropy vs slope")
    ax.legend()


def figures(results: Results, config: AnisotropyConfig, out_dir: Path) -> list[Figure]:
    """``anisotropy.png``: the spectra of draw 0 and the slope sweep."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    _spectra(left, results, config)
    _slope_sweep(right, results, config)
    caption = (
        f"H = σ(XW), d = {config.d}, D = {config.D}, N = {config.n_samples}: normalised "
        f"uncentred spectra and σ1/σ2 against the leaky slope ({config.n_draws} draws)."
    )
    return [save(fig, out_dir, "anisotropy.png", caption)]
