"""Figures of the correlated-init study, one per claim group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes

from relulab.analysis import where
from relulab.experiments.base import Figure, Results
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.experiments.correlated_init.inits import (
    ACI_UNBIASED,
    COMPARED,
    HE_BIASED,
    family,
    is_matched,
    matched,
    student_inits,
    unmatched,
)
from relulab.experiments.correlated_init.readings import (
    diverged,
    init_rows,
    kept_mean,
    log_validation,
    training_scores,
)
from relulab.experiments.correlated_init.theory import (
    RELU,
    dead_node_theory,
    mean_correlation_theory,
    point_theory,
)
from relulab.experiments.correlated_init.units import (
    OPTIMISERS,
    TEACHERS,
    DeadNodes,
    Key,
    Probes,
    Students,
    probe_points,
    trained_on,
)
from relulab.report.plotting import plot_phase_regions, plt, save
from relulab.theory import phase_diagram
from relulab.theory.correlated import covariance_coefficients, relu_phase_boundaries

__all__ = ["figures"]

COLOURS = {"he": "tab:blue", "aci": "tab:red", "rai": "tab:green", "raai": "tab:purple"}
COLOURS["positive"] = "tab:orange"


def _band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and a normal-approximation 95 % band over the first axis (figures only; claims use
    Student t and Welch intervals)."""
    mean = values.mean(axis=0)
    half = 1.96 * values.std(axis=0, ddof=1) / np.sqrt(max(len(values), 1))
    return mean, mean - half, mean + half


def _figure_phase_probes(results: Results, config: CorrelatedInitConfig, out_dir: Path) -> Figure:
    result = Probes.read(results[Key.PROPAGATION], Key.PROPAGATION)
    w2 = np.linspace(0.05, 4.0, config.grid_points)
    b2 = np.linspace(0.0, 2.0, config.grid_points)
    strengths = [("uncorrelated", 0.0), ("anti-correlated", config.aci_k)]
    strengths.append(("positively correlated", config.positive_k))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, (title, k) in zip(axes, strengths, strict=True):
        a, b = covariance_coefficients(k, config.parameterisation, 1000)
        plot_phase_regions(ax, phase_diagram(RELU, w2, b2, a=a, b=b))
        for p in probe_points(config):
            if not np.isclose(p[0], k):
                continue
            rows = where(result.conditions, k=float(p[0]), sigma_w2=float(p[1]))
            change = result.correlation_near[rows, -1].mean() - config.near_c0
            lengths = result.length[rows]
            growth = np.log(lengths[:, -1] / lengths[:, config.correlation_depth // 2]).mean()
            marker = "v" if change < 0 else "^"
            colour = "black" if growth < 0.5 else "white"
            ax.scatter(p[1], config.sigma_b2, marker=marker, s=70, c=colour, edgecolors="k")
        ax.set(title=f"{title} (k = {k:g}, {config.parameterisation})")
        ax.text(0.3, 1.7, "ordered", fontsize=8)
        ax.text(3.2, 1.7, "unbounded", fontsize=8)
    axes[1].text(2.05, 1.0, "bounded\nchaotic", fontsize=8)
    return save(
        fig,
        out_dir,
        "phase_probes.png",
        "Mean-field phases over (σ_w², σ_b²) (ordered χ1 < 1, bounded chaotic, unbounded "
        "length; dashed χ1 = 1) and simulated probes at σ_b² = "
        f"{config.sigma_b2}: ▲ close signals correlate, ▼ they decorrelate; black: length "
        "bounded, white: growing (seed 003 §2, Figs. 1–2).",
    )


def _at_last_layer(
    result: Probes, config: CorrelatedInitConfig, curve: str, w2: float
) -> np.ndarray:
    """One curve's value at the last layer, per network, at k = aci_k and σ_w² = w2."""
    rows = where(result.conditions, k=float(config.aci_k), sigma_w2=float(w2))
    return getattr(result, curve)[rows, -1]


def _sweep_correlations(
    ax: Axes, result: Probes, config: CorrelatedInitConfig, sweep: np.ndarray, fine: np.ndarray
) -> None:
    for curve, c0, colour in (
        ("correlation", config.correlation_c0, "tab:red"),
        ("correlation_near", config.near_c0, "tab:purple"),
    ):
        stats = [_band(_at_last_layer(result, config, curve, w)) for w in sweep]
        mean, low, high = (np.array(column) for column in zip(*stats, strict=True))
        ax.errorbar(
            sweep, mean, [mean - low, high - mean], fmt="o", color=colour, label=f"c0 = {c0}"
        )
        theory = [getattr(point_theory(config.aci_k, w, config), curve)[-1] for w in fine]
        ax.plot(fine, theory, color=colour, lw=1.5)
    ax.set(
        xlabel="σ_w²",
        ylabel=f"c at layer {config.correlation_depth}",
        title=f"k = {config.aci_k:g}: simulated (dots, 95 %) vs theory",
    )
    ax.legend()


def _sweep_lengths(
    ax: Axes, result: Probes, config: CorrelatedInitConfig, sweep: np.ndarray, fine: np.ndarray
) -> None:
    lengths = [_at_last_layer(result, config, "length", w).mean() for w in sweep]
    ax.semilogy(sweep, lengths, "o", color="tab:blue", label="simulated")
    ax.semilogy(
        fine,
        [point_theory(config.aci_k, w, config).length[-1] for w in fine],
        color="tab:blue",
        label="theory",
    )
    ax.set(xlabel="σ_w²", ylabel=f"q at layer {config.correlation_depth}", title="length")
    ax.legend()


def _gradient_panel(ax: Axes, result: Probes, config: CorrelatedInitConfig) -> None:
    for p in probe_points(config):
        rows = where(result.conditions, k=float(p[0]), sigma_w2=float(p[1]))
        grads = result.gradient[rows, :-1]
        depth = np.arange(1, config.correlation_depth)
        rates = [-np.polyfit(depth, np.log(g), 1)[0] for g in grads]
        theory = point_theory(*p, config)
        ax.errorbar(
            np.log(theory.chi1),
            np.mean(rates),
            1.96 * np.std(rates, ddof=1) / np.sqrt(len(rates)),
            fmt="o",
            color="tab:red" if theory.b < 0 else ("tab:orange" if theory.b > 0 else "tab:blue"),
        )
    span = np.array([-0.6, 0.6])
    ax.plot(span, span, color="k", lw=1)
    ax.set(
        xlabel="ln χ1 (theory)",
        ylabel="backward growth of ⟨g²⟩ per layer",
        title="gradients (blue k=0, red anti, orange positive)",
    )


def _lengths_per_layer(
    ax: Axes, result: Probes, config: CorrelatedInitConfig, sweep: np.ndarray
) -> None:
    palette = plt.colormaps["viridis"](np.linspace(0, 0.9, len(sweep)))
    for colour, w in zip(palette, sweep, strict=True):
        rows = where(result.conditions, k=float(config.aci_k), sigma_w2=float(w))
        ax.semilogy(result.steps, result.length[rows].mean(0), "o", ms=2, c=colour)
        theory = point_theory(config.aci_k, w, config).length
        ax.semilogy(result.steps, theory, color=colour, lw=1, label=f"σ_w² = {w:g}")
    ax.set(xlabel="layer", ylabel="q_l", title="length map reaching its fixed point")
    ax.legend(fontsize=7)


def _figure_sweep(results: Results, config: CorrelatedInitConfig, out_dir: Path) -> Figure:
    result = Probes.read(results[Key.PROPAGATION], Key.PROPAGATION)
    sweep = np.array(sorted(config.sweep_sigma_w2))
    fine = np.linspace(sweep.min(), sweep.max(), 60)
    a, b = covariance_coefficients(config.aci_k, config.parameterisation, 1000)
    limit = relu_phase_boundaries(a, b).bounded_limit
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2))
    _sweep_correlations(axes[0], result, config, sweep, fine)
    _sweep_lengths(axes[1], result, config, sweep, fine)
    for ax in axes[:2]:
        ax.axvline(2.0 / a, color="k", ls="--", lw=1)
        ax.axvline(limit, color="grey", ls=":", lw=1)
    _gradient_panel(axes[2], result, config)
    _lengths_per_layer(axes[3], result, config, sweep)
    secondary = axes[0].secondary_xaxis("top", functions=(lambda w: w * a / 2, lambda c: 2 * c / a))
    secondary.set_xlabel("χ1")
    return save(
        fig,
        out_dir,
        "fig3_sweep.png",
        "Seed 003 Fig. 3 as a sweep: correlation after many layers against σ_w² (top axis χ1), "
        "simulated vs mean field (dashed χ1 = 1, dotted bounded limit); the length at the last "
        "layer; the gradient's growth per layer against ln χ1 (line: equality); the length per "
        "layer (dots: simulation, lines: mean field).",
    )


def _figure_dead(results: Results, config: CorrelatedInitConfig, out_dir: Path) -> Figure:
    result = DeadNodes.read(results[Key.DEAD_NODES], Key.DEAD_NODES)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    for name in dict.fromkeys(c["init"] for c in result.conditions):
        rows = where(result.conditions, init=name)
        colour = COLOURS.get(name)
        for ax, curve in zip(axes[:2], ("inactive", "dead_on_all"), strict=True):
            mean, low, high = _band(getattr(result, curve)[rows])
            ax.plot(result.steps, mean, "o-", color=colour, label=name, ms=3)
            ax.fill_between(result.steps, low, high, color=colour, alpha=0.2)
        axes[0].plot(result.steps, dead_node_theory(name, config), "--", color=colour, lw=1)
        mean, low, high = _band(result.mean_correlation[rows])
        axes[2].plot(result.steps, mean, "o", color=colour, ms=3, label=name)
        axes[2].fill_between(result.steps, low, high, color=colour, alpha=0.2)
        theory = mean_correlation_theory(name, config, result.inputs)
        axes[2].plot(result.steps, theory, "--", color=colour, lw=1)
    axes[0].axhline(0.36, color="grey", ls=":", lw=1)
    axes[0].set(xlabel="layer", ylabel="P(h ≤ 0) per input", title="dashed: theory; dotted 0.36")
    axes[1].set(
        xlabel="layer",
        ylabel="fraction of units dead on all inputs",
        title=f"{config.dead_inputs} inputs",
    )
    axes[2].set(
        xlabel="layer",
        ylabel="mean pairwise correlation of h",
        title="dashed: infinite-width law (population dynamics)",
    )
    axes[0].legend()
    return save(
        fig,
        out_dir,
        "dead_nodes.png",
        f"Dead nodes (seed 003 Table 1) in width-{config.dead_width} random nets, 95 % bands "
        "over networks: per-input inactive probability (dashed: exact infinite-width law) and "
        "units dead on every input; the inputs' mean pairwise correlation (seed 003 Figs. 4–5, \
appendices C–E).",
    )


def _bands(
    ax: Axes,
    students: Students,
    config: CorrelatedInitConfig,
    names: Sequence[str],
    colours: Mapping[str, str],
) -> None:
    """Per init, the mean log10 validation loss and its 95 % band over the students that did
    not diverge (the study's policy); the label counts those that did."""
    curves = log_validation(students)
    flags = diverged(students, config)
    epochs = np.arange(curves.shape[1])
    rows_of = init_rows(students)
    for name in names:
        rows = rows_of[name]
        kept = rows[~flags[rows]]
        gone = f" ({len(rows) - len(kept)}/{len(rows)} diverged)" if len(kept) < len(rows) else ""
        if not len(kept):
            continue
        mean, low, high = _band(curves[kept])
        colour = colours.get(name, colours.get(family(name)))
        base = unmatched(name)
        style = "-" if base in COLOURS else "--" if base in (HE_BIASED, ACI_UNBIASED) else ":"
        ax.plot(epochs, mean, style, color=colour, label=f"{name}{gone}")
        ax.fill_between(epochs, low, high, color=colour, alpha=0.15)


def _figure_training(
    results: Results, config: CorrelatedInitConfig, out_dir: Path, teacher: str
) -> Figure:
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4), sharey="row")
    populations = (list(student_inits(config)), [matched(name) for name in COMPARED])
    for row, names in zip(axes, populations, strict=True):
        for ax, optimiser in zip(row, OPTIMISERS, strict=True):
            key = trained_on(teacher, optimiser)
            _bands(ax, Students.read(results[key], key), config, names, COLOURS)
            twins = "output-matched twins" if is_matched(names[0]) else "as initialised"
            ax.set(xlabel="epoch", ylabel="log10 validation loss")
            ax.set_title(f"{teacher}, {optimiser}: {twins}", fontsize=9)
            ax.legend(fontsize=6)
    return save(
        fig,
        out_dir,
        f"training_{teacher}.png",
        f"{teacher.capitalize()} teacher (seed 003 §4–5, appendix B): validation loss of "
        f"{config.train_seeds} students per init, mean and 95 % band (normal approximation) "
        "over the students that did not diverge; the legend counts those that did. Top: as "
        "initialised (dashed: He at ACI's σ_b², ACI at σ_b² = 0); bottom: the twins whose "
        f"initial output variance is {config.matched_output_variance:g} (issue 45).",
    )


def _figure_deep(results: Results, config: CorrelatedInitConfig, out_dir: Path) -> Figure:
    students = Students.read(results[Key.DEEP], Key.DEEP)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    names = [n for n in dict.fromkeys(c["init"] for c in students.conditions) if not is_matched(n)]
    _bands(ax, students, config, names, {**COLOURS, "weak-aci": "tab:pink"})
    ax.set(
        xlabel="epoch",
        ylabel="log10 validation loss",
        title=f"{config.deep_depth} hidden layers, complex teacher, Adam",
    )
    ax.legend()
    return save(
        fig,
        out_dir,
        "training_deep.png",
        "Deeper students (seed 003 §5): ACI, ACI with a weaker correlation (k = "
        f"{config.weak_aci_k:g}), RAAI, He, RAI and ACI at σ_b² = 0 (dashed), as initialised "
        "(the output-matched twins are in the claims); mean and 95 % band over the students that "
        "did not diverge (the legend counts those that did).",
    )


def _figure_plane(results: Results, config: CorrelatedInitConfig, out_dir: Path) -> Figure:
    scores = training_scores(Students.read(results[Key.PLANE], Key.PLANE), config)
    w2 = np.array(config.plane_sigma_w2)
    ks = np.array(config.plane_k)
    grid = np.array([[kept_mean(scores[f"w2={w:g},k={k:g}"]) for w in w2] for k in ks])
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    mesh = ax.pcolormesh(w2, ks, grid, shading="nearest", cmap="viridis_r")
    fig.colorbar(mesh, ax=ax, label="mean over epochs of log10 validation loss")
    fine_k = np.linspace(ks.min(), ks.max(), 100)
    limits = [
        relu_phase_boundaries(*covariance_coefficients(k, config.parameterisation, 1000))
        for k in fine_k
    ]
    ax.plot([lim.chaos_onset for lim in limits], fine_k, "w--", label="χ1 = 1")
    ax.plot([lim.bounded_limit for lim in limits], fine_k, "w:", label="bounded limit")
    ax.set(
        xlim=(w2.min() - 0.2, w2.max() + 0.2),
        xlabel="σ_w²",
        ylabel=f"k ({config.parameterisation})",
        title="training speed over the phase diagram (standard teacher, Adam)",
    )
    ax.legend(loc="lower left", fontsize=8)
    return save(
        fig,
        out_dir,
        "plane.png",
        "Beyond the seed: training speed of correlated students over (σ_w², k), "
        f"{config.plane_seeds} seeds per point, with the mean-field boundaries: the bounded "
        "chaotic window lies between the dashed and the dotted line (k < 0).",
    )


def figures(results: Results, config: CorrelatedInitConfig, out_dir: Path) -> list[Figure]:
    return [
        _figure_phase_probes(results, config, out_dir),
        _figure_sweep(results, config, out_dir),
        _figure_dead(results, config, out_dir),
        *(_figure_training(results, config, out_dir, t) for t in TEACHERS),
        _figure_deep(results, config, out_dir),
        _figure_plane(results, config, out_dir),
    ]
