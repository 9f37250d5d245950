"""Figures of ``init-training``: at-init ratio profiles (seed 002 Fig. 2 middle/right), training
loss with bands (Fig. 4), ratios during training, and time to a loss level."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure as MplFigure

from relulab.experiments.base import Figure, Results
from relulab.experiments.init_training.config import ARCHITECTURE, InitTrainingConfig
from relulab.experiments.init_training.readings import (
    at_init_ratios,
    mlp_theory_ratio,
    training_summary,
)
from relulab.report.plotting import plt, save

__all__ = ["figures"]

COLOURS = {
    "kaiming": "tab:gray",
    "scale": "tab:blue",
    "scale_bias": "tab:orange",
    "batchnorm": "tab:green",
}
LABELS = {
    "kaiming": "Kaiming",
    "scale": "scale",
    "scale_bias": "scale+bias",
    "batchnorm": "BatchNorm",
}


def _ratios_at_init(results: Results, config: InitTrainingConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(
        1, len(config.tasks), figsize=(6 * len(config.tasks), 4), squeeze=False
    )
    for ax, task in zip(axes[0], config.tasks, strict=True):
        r = at_init_ratios(results, task)
        layers = np.arange(1, r.shape[1] + 1)
        mean, sd = r.mean(axis=0), r.std(axis=0)
        ax.plot(layers, mean, "o-", ms=3, label=f"{ARCHITECTURE[task]}, {len(r)} nets")
        ax.fill_between(layers, mean - sd, mean + sd, alpha=0.25)
        ax.plot(layers, mlp_theory_ratio(len(layers)), "k--", label="wide MLP (theory)")
        ax.set(xlabel="layer (Linear/Conv output)", ylabel="r (seed eq. 9)", title=task)
        ax.legend()
    return save(
        fig,
        out_dir,
        "ratios_at_init.png",
        "Sample mean/std ratio per layer at Kaiming initialisation, mean ± sd over "
        "networks, against the wide-MLP theory (seed 002 Fig. 2 middle and right).",
    )


def _panels(config: InitTrainingConfig) -> tuple[MplFigure, np.ndarray]:
    rows, cols = len(config.tasks), len(config.optimisers)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.8 * rows), squeeze=False)
    return fig, axes


def _training_loss(results: Results, config: InitTrainingConfig, out_dir: Path) -> Figure:
    fig, axes = _panels(config)
    for i, task in enumerate(config.tasks):
        for j, optimiser in enumerate(config.optimisers):
            ax = axes[i][j]
            for init, runs in training_summary(results, config, task, optimiser).items():
                loss = runs["loss"]
                mean, sd = np.nanmean(loss, axis=0), np.nanstd(loss, axis=0)
                colour = COLOURS[init]
                lost = int(runs["diverged"].sum())
                note = f", {lost} of {len(loss)} diverged" if lost else ""
                ax.plot(
                    runs["steps"],
                    mean,
                    color=colour,
                    label=f"{LABELS[init]} (lr {runs['lr']:g}{note})",
                )
                ax.fill_between(
                    runs["steps"], np.maximum(mean - sd, 1e-12), mean + sd, color=colour, alpha=0.2
                )
            ax.set_yscale("log")
            ax.set(xlabel="iteration", ylabel="training loss", title=f"{task}, {optimiser}")
            ax.legend(fontsize=7)
    return save(
        fig,
        out_dir,
        "training_loss.png",
        "Training loss (minibatch) at each init's fastest-converging learning rate, mean ± "
        "sd over the seeds that did not diverge (the legend counts those that did; seed 002 "
        "Fig. 4).",
    )


def _training_ratios(results: Results, config: InitTrainingConfig, out_dir: Path) -> Figure:
    fig, axes = _panels(config)
    for i, task in enumerate(config.tasks):
        for j, optimiser in enumerate(config.optimisers):
            ax = axes[i][j]
            for init, runs in training_summary(results, config, task, optimiser).items():
                ratios = np.nanmean(runs["ratios"], axis=0)  # (layers, T)
                layers = np.arange(1, ratios.shape[0] + 1)
                ax.plot(layers, ratios[:, 0], ":", color=COLOURS[init])
                ax.plot(layers, ratios[:, -1], "o-", ms=3, color=COLOURS[init], label=LABELS[init])
            ax.set_yscale("log")
            ax.set(
                xlabel="layer", ylabel="r", title=f"{task}, {optimiser}: dotted start, solid end"
            )
            ax.legend(fontsize=7)
    return save(
        fig,
        out_dir,
        "training_ratios.png",
        "Per-layer sample mean/std ratio on fixed training images at the start (dotted) and "
        "end (solid) of training, seed mean at each init's best learning rate (seed 002 "
        "§5.3).",
    )


def _ratio_trajectories(results: Results, config: InitTrainingConfig, out_dir: Path) -> Figure:
    fig, axes = _panels(config)
    styles = ("-", "--", ":")
    for i, task in enumerate(config.tasks):
        for j, optimiser in enumerate(config.optimisers):
            ax = axes[i][j]
            summary = training_summary(results, config, task, optimiser)
            for init in ("scale", "scale_bias"):
                runs = summary[init]
                ratios = np.nanmean(runs["ratios"], axis=0)  # (layers, T)
                n_layers = ratios.shape[0]
                chosen = sorted({max(1, n_layers // 3), max(1, 2 * n_layers // 3), n_layers})
                for style, layer in zip(styles, chosen, strict=False):
                    ax.plot(
                        runs["steps"],
                        ratios[layer - 1],
                        style,
                        color=COLOURS[init],
                        label=f"{LABELS[init]}, layer {layer}",
                    )
            ax.set_yscale("log")
            ax.set(xlabel="iteration", ylabel="r", title=f"{task}, {optimiser}")
            ax.legend(fontsize=6)
    return save(
        fig,
        out_dir,
        "ratio_trajectories.png",
        "The sample mean/std ratio of three layers during training, scale vs scale+bias, "
        "seed mean at each init's best learning rate (seed 002 §5.3: the ratios converge "
        "after a few thousand iterations).",
    )


def _time_to_level(results: Results, config: InitTrainingConfig, out_dir: Path) -> Figure:
    fig, axes = _panels(config)
    for i, task in enumerate(config.tasks):
        for j, optimiser in enumerate(config.optimisers):
            ax = axes[i][j]
            summary = training_summary(results, config, task, optimiser)
            names = list(summary)
            for k, init in enumerate(names):
                times = summary[init]["time_to_level"]
                reached = times[np.isfinite(times)]
                value = reached.mean() if len(reached) else config.steps
                ax.bar(
                    k, value, color=COLOURS[init], hatch="" if len(reached) == len(times) else "//"
                )
                ax.plot(np.full(len(reached), k), reached, "k.", ms=4)
            ax.set_xticks(range(len(names)), [LABELS[n] for n in names])
            level = next(iter(summary.values()))["level"]
            ax.set(ylabel="iterations", title=f"{task}, {optimiser}: to loss < {level:.3g}")
    return save(
        fig,
        out_dir,
        "time_to_level.png",
        "Iterations to reach the loss level (a fraction of the label entropy), per seed "
        "(dots) and mean (bars; hatched: some seeds never reached it in the run).",
    )


def figures(results: Results, config: InitTrainingConfig, out_dir: Path) -> list[Figure]:
    made = [_ratios_at_init(results, config, out_dir)]
    if config.train:
        made += [
            _training_loss(results, config, out_dir),
            _training_ratios(results, config, out_dir),
            _ratio_trajectories(results, config, out_dir),
            _time_to_level(results, config, out_dir),
        ]
    return made
