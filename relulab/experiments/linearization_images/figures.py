"""Figures: ReLU vs linear training loss per preprocessing and bias variant (seed 004 fig. 1A,
7, 8), and effective rank and test error at each network's stop (fig. 1B, 1C)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes

from relulab.experiments.base import Figure, Results
from relulab.experiments.linearization_images.config import LinearizationImagesConfig, scale
from relulab.experiments.linearization_images.readings import at_stop, diverged
from relulab.experiments.linearization_images.units import Training, schedule, unit
from relulab.report.plotting import plt, save

__all__ = ["figures"]

COLOURS = {"relu": "tab:red", "linear": "tab:blue"}


def _per_sample_loss(
    ax: Axes, view: Training, n_loss: int, per_epoch: float, label: str, colour: str
) -> None:
    loss = view.full_loss[~diverged(view)] / n_loss  # diverged networks are out, as in the claims
    if not len(loss):
        return
    mean = loss.mean(axis=0)
    se = loss.std(axis=0, ddof=1) / np.sqrt(len(loss)) if len(loss) > 1 else 0 * mean
    epochs = view.steps / per_epoch
    ax.semilogy(epochs, mean, color=colour, label=label)
    ax.fill_between(epochs, mean - se, mean + se, color=colour, alpha=0.2)


def _alignment(results: Results, config: LinearizationImagesConfig, out_dir: Path) -> Figure:
    norms = config.normalizations
    fig, axes = plt.subplots(len(norms), 2, figsize=(11, 4 * len(norms)), squeeze=False)
    n_train, per_epoch, _ = schedule(config)
    n_loss = min(config.loss_images, n_train)
    for row, norm in zip(axes, norms, strict=True):
        for ax, bias in zip(row, (True, False), strict=True):
            for act in ("linear", "relu"):
                view = unit(results, norm, bias, act)
                _per_sample_loss(ax, view, n_loss, per_epoch, act, COLOURS[act])
            ax.axhline(config.stop_level, color="k", lw=0.8, ls=":")
            ax.axvline(config.early_steps / per_epoch, color="grey", lw=0.8, ls="--")
            ax.set_xscale("symlog", linthresh=1.0)  # the early phase spans the first epochs
            ax.set_xlim(left=0)
            variant = f"constant pixel c = {config.constant:g}" if bias else "no bias"
            ax.set(
                title=f"{norm}, {variant}",
                xlabel="epoch",
                ylabel="training loss per sample ½‖y − ŷ‖²",
            )
            ax.legend()
    caption = (
        f"Training loss of ReLU and linear networks (mean ± SE over the {config.seeds} seeds, a "
        f"diverged network left out as in the claims; dotted: "
        f"the stopping loss; dashed: the end of the early phase the alignment claims judge, "
        f"{config.early_steps} SGD steps), seed 004 fig. 1A / 7 / 8. {scale(config)}."
    )
    return save(fig, out_dir, "alignment.png", caption)


def _rank_error(results: Results, config: LinearizationImagesConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.5))
    labels, ranks, errors, ends = [], [], [], []
    for norm in config.normalizations:
        for bias in (True, False):
            for act in ("relu", "linear"):
                view = unit(results, norm, bias, act)
                short = "px-mean" if norm == "pixel_mean" else "std"
                labels.append(f"{short}\n{'bias' if bias else 'no bias'}\n{act}")
                ranks.append(at_stop(view, view.rank_at_stop))
                errors.append(at_stop(view, view.validation_error))
                error = np.asarray(view.validation_error, dtype=np.float64)
                ends.append(np.where(diverged(view), np.nan, error))
    positions = np.arange(len(labels))
    titles = ("effective rank of HᵀH at the stop", "test error at the stop", "test error at end")
    for ax, values, title in zip(axes, (ranks, errors, ends), titles, strict=True):
        means = [np.nanmean(v) if np.isfinite(v).any() else np.nan for v in values]
        ax.bar(positions, means, color=["tab:red" if "relu" in s else "tab:blue" for s in labels])
        for x, v in zip(positions, values, strict=True):
            ax.plot(np.full(len(v), x), v, "k.", ms=4)
        ax.set_xticks(positions, labels, fontsize=7)
        ax.set_title(title)
    caption = (
        "Effective rank of the Gram matrix of hidden representations of the held-out images "
        "and test error, at each network's stop (mean per-sample training loss first ≤ "
        f"{config.stop_level:g}) and at the end, seed 004 fig. 1B, 1C (dots: seeds). "
        f"{scale(config)}."
    )
    return save(fig, out_dir, "rank_error.png", caption)


def figures(results: Results, config: LinearizationImagesConfig, out_dir: Path) -> list[Figure]:
    """All figures of the run."""
    return [_alignment(results, config, out_dir), _rank_error(results, config, out_dir)]
