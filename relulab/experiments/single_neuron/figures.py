"""The single-neuron figures: loss curves, student fits, kinks and states, phase and loss maps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from relulab.analysis import first_match, where
from relulab.experiments.base import Figure, Results
from relulab.experiments.single_neuron.config import (
    DEAD_PLATEAU,
    HYPERACTIVE_PLATEAU,
    OUTCOMES,
    SingleNeuronConfig,
)
from relulab.experiments.single_neuron.readings import kinks, outcomes
from relulab.experiments.single_neuron.units import Key, Neurons, neurons
from relulab.report.plotting import plt, save

__all__ = ["figures"]


def _plateau_lines(ax: plt.Axes) -> None:
    ax.axhline(HYPERACTIVE_PLATEAU, color="k", ls=":", lw=1, label="1/48 (hyperactive)")
    ax.axhline(DEAD_PLATEAU, color="k", ls="--", lw=1, label="5/48 (dead)")


def _loss_panel(
    ax: plt.Axes, unit: Neurons, label: Callable[[dict[str, Any]], str], title: str
) -> None:
    colours = plt.cm.viridis(np.linspace(0, 0.95, unit.n_networks))
    for i, condition in enumerate(unit.conditions):
        ax.plot(
            unit.steps,
            np.maximum(unit.loss[i], 1e-16),
            color=colours[i],
            label=label(condition),
            lw=1.2,
        )
    _plateau_lines(ax)
    ax.set(yscale="log", xlabel="step", ylabel="MSE", title=title, ylim=(1e-14, 10))
    ax.legend(ncol=2)


def _figure_losses(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    b1s, b2s = neurons(results, Key.B1_SWEEP), neurons(results, Key.B2_SWEEP)
    _loss_panel(axes[0, 0], b1s, lambda c: f"b1={c['b1']:g}", "b1 sweep (b2 = 0)")
    _loss_panel(axes[0, 1], b2s, lambda c: f"b2={c['b2']:g}", "b2 sweep (b1 = 0)")
    _loss_panel(
        axes[1, 0],
        neurons(results, Key.LR_SWEEP),
        lambda c: f"lr={c['lr']:g}",
        f"learning-rate sweep (b1 = 0, b2 = {config.lr_sweep_b2:g})",
    )
    _loss_panel(
        axes[1, 1],
        neurons(results, Key.SILU_VS_RELU),
        lambda c: c["activation"],
        f"SiLU vs ReLU (b2 = {config.silu_b2:g})",
    )
    return save(
        fig,
        out_dir,
        "loss_curves.png",
        "Loss per condition (log scale) with the exact plateaus "
        "1/48 (best line) and 5/48 (best constant).",
    )


def _student(unit: Neurons, i: int, t: int, x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2 = (curve[i, t] for curve in (unit.w1, unit.b1, unit.w2, unit.b2))
    pre = w1 * (x + b1) if unit.conditions[i]["parameterisation"] == "reparam" else w1 * x + b1
    return w2 * np.maximum(pre, 0) + b2


def _figure_fits(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    cases = [
        (Key.B2_SWEEP, {"b2": -1.1}, "b2 = −1.1"),
        (Key.B2_SWEEP, {"b2": -1.2}, "b2 = −1.2"),
        (Key.LR_SWEEP, {"lr": 0.2}, "lr = 0.2"),
        (Key.LR_SWEEP, {"lr": 0.4}, "lr = 0.4"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4), sharey=True)
    x = np.linspace(-1, 1, 201)
    for ax, (key, match, title) in zip(axes, cases, strict=True):
        unit = neurons(results, key)
        i = first_match(unit.conditions, **match)
        ax.plot(x, np.maximum(x, 0), "k--", lw=1.5, label="teacher")
        if i is not None:
            for target in (0, 20, 100, 500, config.steps):
                t = int(np.argmin(np.abs(unit.steps - target)))
                ax.plot(x, _student(unit, i, t, x), lw=1.2, label=f"step {int(unit.steps[t])}")
        ax.set(title=title, xlabel="x")
        ax.legend()
    axes[0].set_ylabel("f(x)")
    return save(
        fig,
        out_dir,
        "fits.png",
        "Student function at chosen steps: b2 = −1.1 converges, −1.2 ends "
        "as the best line; lr 0.2 converges, lr 0.4 ends as the best constant.",
    )


def _figure_kinks(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for ax, name, key in ((axes[0], Key.B2_SWEEP, "b2"), (axes[1], Key.LR_SWEEP, "lr")):
        unit = neurons(results, name)
        trajectories = kinks(unit)
        colours = plt.cm.viridis(np.linspace(0, 0.95, unit.n_networks))
        for i, condition in enumerate(unit.conditions):
            label = f"{key}={condition[key]:g}"
            ax.plot(unit.steps, trajectories[i], color=colours[i], label=label)
        for edge in (-1, 1):
            ax.axhline(edge, color="k", ls=":", lw=1)
        ax.set(
            xscale="symlog",
            xlim=(0, unit.steps[-1]),
            xlabel="step",
            ylabel="kink x_t",
            ylim=(-3, 3),
            title=f"kink x_t = −b1/w1, {name.replace('-', ' ')}",
        )
        ax.legend(ncol=2)
    b2s = neurons(results, Key.B2_SWEEP)
    image = axes[2].imshow(
        b2s.state,
        aspect="auto",
        cmap=plt.colormaps["coolwarm"].resampled(3),
        vmin=-0.5,
        vmax=2.5,
        interpolation="nearest",
        extent=(b2s.steps[0], b2s.steps[-1], b2s.n_networks - 0.5, -0.5),
    )
    axes[2].set(
        yticks=range(b2s.n_networks),
        xlabel="step",
        title="neuron state, b2 sweep",
        yticklabels=[f"b2={c['b2']:g}" for c in b2s.conditions],
    )
    axes[2].grid(False)
    bar = fig.colorbar(image, ax=axes[2], ticks=[0, 1, 2])
    bar.ax.set_yticklabels(["dead", "balanced", "hyperactive"])
    return save(
        fig,
        out_dir,
        "kinks.png",
        "Kink trajectories (the neuron is balanced while the kink is inside "
        "[−1, 1]) and the neuron state over time for the b2 sweep.",
    )


def _map_axes(
    unit: Neurons, x_key: str, y_key: str, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    xs = np.unique([unit.conditions[i][x_key] for i in idx])
    ys = np.unique([unit.conditions[i][y_key] for i in idx])
    return xs, ys


def _map_values(
    unit: Neurons, values: np.ndarray, x_key: str, y_key: str, parameterisation: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = where(unit.conditions, parameterisation=parameterisation)
    xs, ys = _map_axes(unit, x_key, y_key, idx)
    grid = np.full((len(ys), len(xs)), np.nan)
    for i in idx:
        cond = unit.conditions[i]
        grid[np.searchsorted(ys, cond[y_key]), np.searchsorted(xs, cond[x_key])] = values[i]
    return xs, ys, grid


_MAPS = ((Key.MAP_B1_B2, "b1", "b2"), (Key.MAP_B2_LR, "b2", "lr"))


def _map_grid(
    results: Results,
    values_of: Callable[[Neurons], np.ndarray],
    draw: Callable[[plt.Axes, np.ndarray, np.ndarray, np.ndarray], Any],
    title: str,
    labels: list[str] | None = None,
) -> plt.Figure:
    """2×2 panels: rows (b1, b2) and (b2, lr) maps, columns standard and reparam neurons."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    for row, (key, x_key, y_key) in enumerate(_MAPS):
        unit = neurons(results, key)
        values = values_of(unit)
        for col, parameterisation in enumerate(("standard", "reparam")):
            ax = axes[row, col]
            xs, ys, grid = _map_values(unit, values, x_key, y_key, parameterisation)
            mesh = draw(ax, xs, ys, grid)
            ax.set(
                xlabel=x_key,
                ylabel=y_key,
                title=f"{title}, {parameterisation} neuron",
                yscale="log" if y_key == "lr" else "linear",
            )
            ax.grid(False)
            bar = fig.colorbar(mesh, ax=ax, ticks=range(len(labels)) if labels else None)
            if labels:
                bar.ax.set_yticklabels(labels)
    return fig


def _draw_outcomes(ax: plt.Axes, xs: np.ndarray, ys: np.ndarray, grid: np.ndarray) -> Any:
    cmap = plt.colormaps["Set2"].resampled(len(OUTCOMES))
    mesh = ax.pcolormesh(xs, ys, grid, cmap=cmap, vmin=-0.5, vmax=3.5, shading="nearest")
    converged = (grid == OUTCOMES["converged"]).astype(float)
    ax.contour(xs, ys, converged, levels=[0.5], colors="k", linewidths=1.2)
    return mesh


def _draw_log_loss(ax: plt.Axes, xs: np.ndarray, ys: np.ndarray, grid: np.ndarray) -> Any:
    return ax.pcolormesh(xs, ys, grid, cmap="magma", vmin=-14, vmax=0, shading="nearest")


def _figure_phase_maps(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig = _map_grid(
        results,
        lambda r: outcomes(r, config.converge_tol).astype(float),
        _draw_outcomes,
        "final outcome",
        labels=list(OUTCOMES),
    )
    return save(
        fig,
        out_dir,
        "phase_maps.png",
        f"Final outcome after {config.steps} steps over (b1, b2) and "
        f"(b2, lr): converged (loss < {config.converge_tol:g}) or stuck dead / balanced / "
        "hyperactive; black line: convergence boundary. Left: standard neuron w·x + b; "
        "right: reparameterised w·(x + b').",
    )


def _figure_loss_maps(results: Results, config: SingleNeuronConfig, out_dir: Path) -> Figure:
    fig = _map_grid(
        results,
        lambda unit: np.log10(np.maximum(unit.end.loss, 1e-16)),
        _draw_log_loss,
        "log10 final loss",
    )
    return save(fig, out_dir, "loss_maps.png", "log10 of the final loss over the same grids.")


def figures(results: Results, config: SingleNeuronConfig, out_dir: Path) -> list[Figure]:
    """Write the five PNG figures into ``out_dir`` and return their records."""
    makers = (_figure_losses, _figure_fits, _figure_kinks, _figure_phase_maps, _figure_loss_maps)
    return [make(results, config, out_dir) for make in makers]
