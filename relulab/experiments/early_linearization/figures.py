"""Figures: loss alignment, modes with the exact linear theory, the mechanism, the gated linear
model, XOR + linear, the parallel task, the c sweep, MDS of the hidden representations, and the
beyond-the-seed (σ², c) map."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes

from relulab.analysis import where
from relulab.experiments.base import Figure, Results
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.units import (
    Family,
    FinalWeights,
    Key,
    Stored,
    Training,
    Trajectory,
    as_view,
    pair,
    unit_key,
)
from relulab.report.plotting import plt, save
from relulab.theory.deep_linear import (
    gated_linear_prediction,
    learning_time_constant,
    mode_loss,
    mode_projections,
)

__all__ = ["figures"]

COLOURS = {"relu": "tab:red", "linear": "tab:blue"}


def _mean_loss(
    ax: Axes, unit: Stored, label: str, colour: str, style: str = "-", **match: object
) -> None:
    index = where(unit.conditions, **match)
    loss = as_view(unit, Training).loss[index]
    ax.semilogy(unit.steps, loss.mean(axis=0), style, color=colour, label=label)
    ax.fill_between(unit.steps, loss.min(axis=0), loss.max(axis=0), color=colour, alpha=0.15)


def _theory_loss(ax: Axes, linear: Stored, config: EarlyLinearizationConfig) -> None:
    """Mean over seeds of the closed-form loss from each linear net's initial weights."""
    X, modes = measure.hierarchy_modes(config, config.constant)
    tau = learning_time_constant(X.shape[0], config.lr)
    index = where(linear.conditions, c=config.constant)
    losses = [
        mode_loss(modes, measure.theory_trajectory(linear, i, modes, linear.steps, tau))
        for i in index
    ]
    ax.semilogy(linear.steps, np.mean(losses, axis=0), "k--", lw=1, label="eq. 7 (exact)")


def _alignment(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    panels = [
        (Family.HIERARCHY, {"c": config.constant}, "hierarchy, hidden bias"),
        (Family.HIERARCHY, {"c": 0.0}, "hierarchy, no bias"),
        (Family.HIERARCHY_BOTH, {}, "hierarchy, bias in both layers"),
        (Family.XOR, {"c": config.constant}, "XOR, hidden bias"),
        (Family.XOR, {"c": 0.0}, "XOR, no bias"),
        (Family.XOR_BOTH, {}, "XOR, bias in both layers"),
    ]
    for ax, (family, match, title) in zip(axes.ravel(), panels, strict=True):
        for act in ("linear", "relu"):
            _mean_loss(ax, results[unit_key(family, act)], act, COLOURS[act], "-", **match)
        if family == Family.HIERARCHY and match["c"] > 0:
            _theory_loss(ax, results[Key.HIERARCHY_LINEAR], config)
        ax.set(title=title, xlabel="GD step", ylabel="loss ½Σ‖y − ŷ‖²")
        ax.legend()
    caption = (
        f"Loss of ReLU and linear networks (mean and range over {config.seeds} seeds), seed 004 "
        "fig. 2B, 2D and 9, with the exact deep-linear loss (dashed) on the hierarchy."
    )
    return save(fig, out_dir, "alignment.png", caption)


def _modes(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    relu, linear = (Trajectory.read(unit) for unit in pair(results, Family.HIERARCHY))
    X, modes = measure.hierarchy_modes(config, config.constant)
    tau = learning_time_constant(X.shape[0], config.lr)
    i = int(where(relu.conditions, c=config.constant)[0])
    fine = np.linspace(0, relu.steps[-1], 2000)
    theory = measure.theory_trajectory(linear, i, modes, fine, tau)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, unit, act in ((axes[0], linear, "linear"), (axes[1], relu, "relu")):
        a = measure.mode_trajectories(unit, i, X, modes, relu=act == "relu")
        weights = mode_projections(unit.param_1[i], unit.param_0[i], modes)
        for m in range(modes.n_modes):
            colour = f"C{m}"
            ax.plot(unit.steps, a[:, m], color=colour, lw=2, alpha=0.6, label=f"s={modes.s[m]:.3f}")
            ax.plot(unit.steps, weights[:, m], ":", color=colour, lw=1.5)
            ax.plot(fine, theory[:, m], "k--", lw=1)
        ax.set(
            title=f"{act} network (seed 0): a_α(t), dashed: eq. 7 (exact, unbalanced)",
            xlabel="GD step",
            ylabel="mode strength a_α",
        )
        ax.legend(fontsize=8)
    caption = (
        "Mode strengths of the hierarchy's data (Σ̃yx = USVᵀ with c = "
        f"{config.constant:g}) read from the simulated networks' outputs (solid) and their "
        "weight projections (Uᵀ W2 W̃1 V)_αα (dotted; the same for the linear net), with the "
        "closed-form deep-linear dynamics from the same initial weights (dashed; seed 004 "
        "appendix B, eq. 7)."
    )
    return save(fig, out_dir, "modes.png", caption)


def _mechanism(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    relu = Trajectory.read(results[Key.HIERARCHY_RELU])
    c = config.constant
    index = where(relu.conditions, c=c)
    i = int(index[0])
    W1 = relu.param_0[i].astype(np.float64)
    bias, weights = c * W1[:, :, -1], W1[:, :, :-1]
    fig, axes = plt.subplots(1, 5, figsize=(25, 4.2))
    axes[0].plot(relu.steps, np.linalg.norm(bias, axis=1), label="‖b‖")
    axes[0].plot(relu.steps, np.linalg.norm(weights, axis=(1, 2)), label="‖W1‖_F")
    axes[0].set(title="norms (seed 0)", xlabel="GD step")
    axes[0].legend()
    axes[1].plot(relu.steps, bias, lw=0.6)
    axes[1].set(title="biases b_j (seed 0)", xlabel="GD step")
    on = relu.always_on_fraction[index]
    dead = relu.dead_fraction[index]
    for values, label in ((on, "always on"), (dead, "always off"), (1 - on - dead, "gating")):
        axes[2].plot(relu.steps, values.mean(axis=0), label=label)
    axes[2].set(
        title=f"unit states (mean of {len(index)} seeds)",
        xlabel="GD step",
        ylabel="fraction of units",
    )
    axes[2].legend()
    kinks = -bias / np.linalg.norm(weights, axis=2)
    axes[3].plot(relu.steps, np.clip(kinks, -5, 5), lw=0.6)
    axes[3].axhline(0, color="r", ls="--")
    axes[3].set(title="kinks −b_j/‖w_j‖ (seed 0, clipped to ±5)", xlabel="GD step")
    X, Y = measure.augmented_task("hierarchy", config, c)
    mean_target = Y.mean(axis=0)
    plateau = measure.hierarchy_mechanism(results, config).plateau_step[0]
    k = int(np.flatnonzero(relu.steps == plateau)[0])
    _, outputs = measure.forward(W1[k], relu.param_1[i, k], X, relu=True)
    axes[4].plot(mean_target, "ko-", lw=2, label="ȳ")
    for item in range(X.shape[0]):
        axes[4].plot(outputs[:, item], ".--", label=f"ŷ item {item}")
    axes[4].set(
        title=f"outputs at step {relu.steps[k]} (the bias-mode plateau)", xlabel="output unit"
    )
    axes[4].legend(fontsize=7)
    caption = "Mechanism on the hierarchy, bias-ReLU (seed 004 fig. 3A–D and 12)."
    return save(fig, out_dir, "mechanism.png", caption)


def _gated(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    relu = Trajectory.read(results[Key.HIERARCHY_RELU])
    X, modes = measure.hierarchy_modes(config, config.constant)
    tau = learning_time_constant(X.shape[0], config.lr)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n, i in enumerate(where(relu.conditions, c=config.constant)[:3]):
        on = relu.always_on_fraction[i]
        j = measure.linearization_index(relu.steps, on, config.smooth_steps)
        W1, W2 = relu.param_0[i, j], relu.param_1[i, j]
        gate = np.all(W1.astype(np.float64) @ X.T > 0, axis=1)
        times = relu.steps[j:] - relu.steps[j]
        pred = gated_linear_prediction(W2, W1, gate, modes, times, tau, method="unbalanced")
        ax.semilogy(relu.steps, relu.loss[i], color=f"C{n}", label=f"ReLU seed {n}")
        ax.semilogy(relu.steps[j:], pred.loss, "k--", lw=1)
        ax.axvline(relu.steps[j], color=f"C{n}", ls=":")
    ax.set(xlabel="GD step", ylabel="loss", title="gated linear model from t* (dashed)")
    ax.legend()
    caption = "ReLU loss and the gated linear model from the linearization time t* (dotted), "
    caption += "seed 004 §5.4, fig. 4."
    return save(fig, out_dir, "gated.png", caption)


def _xor_linear(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    relu, linear = (FinalWeights.read(unit) for unit in pair(results, Family.XOR_PLUS_LINEAR))
    d, c = config.margin_delta, config.constant
    fig, axes = plt.subplots(1, 5, figsize=(24, 4.2))
    _mean_loss(axes[0], linear, "linear, bias", COLOURS["linear"], c=c, delta=d)
    _mean_loss(axes[0], relu, "ReLU, bias", COLOURS["relu"], c=c, delta=d)
    _mean_loss(axes[0], relu, "ReLU, no bias", "tab:green", "--", c=0.0, delta=d)
    axes[0].set(title=f"XOR + linear feature, Δ = {d:g}", xlabel="GD step", ylabel="loss")
    axes[0].legend()
    panels = (
        (linear, c, False, "linear, bias"),
        (relu, c, True, "ReLU, bias"),
        (relu, 0.0, True, "ReLU, no bias"),
    )
    for ax, (unit, cv, is_relu, title) in zip(axes[1:4], panels, strict=True):
        i = int(where(unit.conditions, c=cv, delta=d)[0])
        x1, x3, f = measure.cube_function(
            unit.param_0[i],
            unit.param_1[i],
            cv,
            d,
            is_relu,
            levels=config.xor_levels,
        )
        image = ax.pcolormesh(x1, x3, f.T, cmap="coolwarm", vmin=-1, vmax=1, shading="auto")
        ax.set(title=f"{title}: ŷ₂ − ŷ₁ averaged over x2", xlabel="x1", ylabel="x3")
    fig.colorbar(image, ax=axes[3])
    gaps = measure.delta_gaps((relu, linear), config)
    deltas = list(gaps)
    axes[4].plot(deltas, [np.mean(g) for g in gaps.values()], "o-")
    axes[4].axhline(config.alignment_tolerance, color="k", ls=":")
    axes[4].set(xscale="log", xlabel="Δ", ylabel="alignment gap", title="bias-ReLU vs linear")
    caption = "XOR + linear feature (seed 004 fig. 5, 11): losses, learned functions on the box "
    caption += "(seed 0), and the alignment gap against Δ."
    return save(fig, out_dir, "xor_linear.png", caption)


def _parallel(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    relu, linear = pair(results, Family.PARALLEL)
    c = config.constant
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2))
    for ax, cv, title in ((axes[0], c, "bias"), (axes[1], 0.0, "no bias")):
        _mean_loss(ax, linear, "linear", COLOURS["linear"], c=cv)
        _mean_loss(ax, relu, "ReLU", COLOURS["relu"], c=cv)
        ax.axhline(measure.linear_task_loss(config), color="k", ls=":", label="linear task only")
        ax.set(title=f"parallel task, {title}", xlabel="GD step", ylabel="loss")
        ax.legend()
    bias = measure.parallel(relu, config, c, relu=True)
    free = measure.parallel(relu, config, 0.0, relu=True)
    axes[2].bar(
        ["bias", "no bias"],
        [bias.rank.mean(), free.rank.mean()],
        yerr=[bias.rank.std(), free.rank.std()],
    )
    axes[2].set(title="effective rank of HᵀH", ylabel="ρ")
    width = 0.35
    names = ("simple", "complex", "both")
    for k, (p, label) in enumerate(((bias, "bias"), (free, "no bias"))):
        values = [p.r2_simple, p.r2_complex, p.r2_both]
        axes[3].bar(
            np.arange(3) + k * width,
            [v.mean() for v in values],
            width,
            yerr=[v.std() for v in values],
            label=label,
        )
    axes[3].set_xticks(np.arange(3) + width / 2, names)
    axes[3].set(title="representational R² (appendix D)", ylabel="R²")
    axes[3].legend()
    caption = "Parallel simple/complex task (seed 004 fig. 6): losses with the linear-task loss "
    caption += "(dotted), effective rank and R² at the end (mean ± sd over seeds)."
    return save(fig, out_dir, "parallel.png", caption)


def _c_sweep(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    relu = Training.read(results[Key.HIERARCHY_RELU])
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2))
    for k, c in enumerate(config.all_constants):
        index = where(relu.conditions, c=c)
        on = relu.always_on_fraction[index].mean(axis=0)
        dead = relu.dead_fraction[index].mean(axis=0)
        axes[0].semilogy(
            relu.steps, relu.loss[index].mean(axis=0), color=f"C{k}", label=f"c = {c:g}"
        )
        axes[1].plot(relu.steps, on, color=f"C{k}")
        axes[2].plot(relu.steps, 1 - on - dead, color=f"C{k}")
        axes[3].plot(relu.steps, dead, color=f"C{k}")
    for ax, title in zip(axes, ("ReLU loss", "always on", "gating", "always off"), strict=True):
        ax.set(title=title, xlabel="GD step")
    axes[0].legend()
    caption = "Bias magnitude c on the hierarchy (seed 004 fig. 10), means over seeds."
    return save(fig, out_dir, "c_sweep.png", caption)


def _mds(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    from sklearn.manifold import MDS

    # scikit-learn ≥ 1.8 takes the classical-MDS start (and warns without it); older has no init
    start = {"init": "classical_mds"} if "init" in inspect.signature(MDS).parameters else {}

    relu, linear = (Trajectory.read(unit) for unit in pair(results, Family.HIERARCHY))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    panels = (
        (linear, config.constant, False, "linear, bias"),
        (relu, config.constant, True, "ReLU, bias"),
        (relu, 0.0, True, "ReLU, no bias"),
    )
    picks = np.unique(np.geomspace(1, len(relu.steps) - 1, config.mds_points).astype(int))
    for ax, (unit, c, is_relu, title) in zip(axes, panels, strict=True):
        X, _ = measure.augmented_task("hierarchy", config, c)
        i = int(where(unit.conditions, c=c)[0])
        H, _ = measure.forward(unit.param_0[i][picks], unit.param_1[i][picks], X, is_relu)
        points = np.swapaxes(H, 1, 2).reshape(-1, H.shape[1])  # (times·P, N)
        embedded = MDS(n_components=2, random_state=0, n_init=1, **start)
        xy = embedded.fit_transform(points).reshape(len(picks), X.shape[0], 2)
        for item in range(X.shape[0]):
            ax.plot(xy[:, item, 0], xy[:, item, 1], "o-", ms=3, label=f"item {item}")
        ax.set(title=f"{title} (seed 0)")
    axes[0].legend(fontsize=8)
    caption = "MDS of the hidden representations at steps "
    caption += f"{relu.steps[picks].tolist()} (seed 004 fig. 2E); lines follow each item."
    return save(fig, out_dir, "mds.png", caption)


def _map(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> Figure:
    grid = measure.map_gaps(pair(results, Family.MAP), config)
    fig, (ax, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    widths = measure.width_gaps(results, config)
    for k, label in ((0, f"c = {config.constant:g}"), (1, "no bias")):
        right.plot(list(widths), [np.mean(g[k]) for g in widths.values()], "o-", label=label)
    right.axhline(config.alignment_tolerance, color="k", ls=":")
    right.set(xscale="log", xlabel="hidden width", ylabel="alignment gap", title="width")
    right.legend()
    image = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(config.map_constants)), [f"{c:g}" for c in config.map_constants])
    ax.set_yticks(range(len(config.map_variances)), [f"{v:g}" for v in config.map_variances])
    for (a, b), value in np.ndenumerate(grid):
        ax.text(b, a, f"{value:.2f}", ha="center", va="center", color="w", fontsize=8)
    ax.set(xlabel="input constant c", ylabel="init variance σ²", title="alignment gap (hierarchy)")
    fig.colorbar(image, ax=ax)
    caption = "Beyond the seed: the ReLU–linear alignment gap over (σ², c) and over the hidden "
    caption += f"width (σ² = {config.init_variance:g}), mean over {config.map_seeds} seeds."
    return save(fig, out_dir, "map.png", caption)


def figures(results: Results, config: EarlyLinearizationConfig, out_dir: Path) -> list[Figure]:
    makers = (_alignment, _modes, _mechanism, _gated, _xor_linear, _parallel, _c_sweep, _mds, _map)
    return [make(results, config, out_dir) for make in makers]
