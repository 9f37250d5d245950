"""The bias-after-relu figures: loss curves, Δ against b and final loss against Δ; the FC1
neuron states against b."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from scipy import stats

from relulab.analysis import group_means
from relulab.experiments.base import Figure, Results
from relulab.experiments.bias_after_relu.config import BiasAfterReLUConfig, fine_shifts
from relulab.experiments.bias_after_relu.readings import init_table, per_student
from relulab.experiments.bias_after_relu.units import InitDeltas, Key, Students, Training, sweep
from relulab.init import analytic_relu_shift
from relulab.report.plotting import plt, save

__all__ = ["figures"]


def _loss_curves(ax: Axes, results: Results, config: BiasAfterReLUConfig) -> None:
    """Mean loss curve per b of the main sweep, and of the calibrated students."""
    result = Training.read(results[Key.SWEEP_POSTLN_DEFAULT], Key.SWEEP_POSTLN_DEFAULT)
    b = np.array([c["b"] for c in result.conditions])
    colours = plt.cm.viridis(np.linspace(0, 0.95, len(config.shifts)))
    for colour, shift in zip(colours, config.shifts, strict=True):
        rows = np.isclose(b, shift)
        ax.semilogy(
            result.steps, result.loss[rows].mean(axis=0), color=colour, label=f"b={shift:g}"
        )
    calibrated = Training.read(results[Key.CALIBRATED], Key.CALIBRATED)
    ax.semilogy(calibrated.steps, calibrated.loss.mean(axis=0), "k--", label="per-neuron b")
    ax.set(xlabel="step", ylabel="MSE", title="loss (mean over seeds)")
    ax.legend(ncol=2)


def _delta_against_b(ax: Axes, results: Results, config: BiasAfterReLUConfig) -> None:
    """Δ at init per b for the three trained variants, both b*, and the init unit's fine grid."""
    for variant, marker in (
        ("postln-default", "o-"),
        ("postln-kaiming", "s-"),
        ("preln-default", "^-"),
    ):
        v = per_student(Training.read(results[sweep(variant)], sweep(variant)))
        ax.plot(
            config.shifts, group_means(v["delta"], v["b"], config.shifts), marker, label=variant
        )
    for scheme, colour in (("torch_default", "tab:blue"), ("kaiming_normal", "tab:orange")):
        ax.axvline(
            analytic_relu_shift(scheme=scheme), color=colour, ls=":", lw=1.2, label=f"b* {scheme}"
        )
    init, fine = InitDeltas.read(results[Key.INIT_DELTA], Key.INIT_DELTA), fine_shifts(config)
    for variant, colour in (("postln-default", "tab:blue"), ("postln-kaiming", "tab:orange")):
        table = init_table(init, variant, fine)
        low, high = np.percentile(table, [2.5, 97.5], axis=0)
        ax.fill_between(fine, low, high, color=colour, alpha=0.2, lw=0)
        ax.plot(fine, table.mean(axis=0), color=colour, lw=1, label=f"{variant} (init unit)")
    ax.axhline(float(init.input_delta[0]), color="k", ls="--", lw=1, label="Δ of the input")
    ax.set(xlabel="b", ylabel="Δ at init", title="Δ vs b", yscale="log")
    ax.legend()


def _final_against_delta(ax: Axes, results: Results) -> None:
    values = per_student(Training.read(results[Key.SWEEP_POSTLN_DEFAULT], Key.SWEEP_POSTLN_DEFAULT))
    rho = stats.spearmanr(values["delta"], values["final_loss"])[0]
    ax.scatter(values["delta"], values["final_loss"], c=values["b"], cmap="viridis")
    ax.set(
        xlabel="Δ at init",
        ylabel="final loss",
        xscale="log",
        yscale="log",
        title=f"final loss vs Δ (Spearman ρ = {rho:.2f})",
    )


def _figure_main(results: Results, config: BiasAfterReLUConfig, out_dir: Path) -> Figure:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    _loss_curves(axes[0], results, config)
    _delta_against_b(axes[1], results, config)
    _final_against_delta(axes[2], results)
    return save(
        fig,
        out_dir,
        "bias_after_relu.png",
        "Post-LN students (default init): loss curves per b and with per-neuron calibrated "
        "shifts; Δ vs b for the three variants with the analytic b* marked, and on the fine "
        "grid of the init unit (mean and 95 % of networks) next to Δ of the input; final loss "
        "vs Δ coloured by b.",
    )


def _figure_states(results: Results, config: BiasAfterReLUConfig, out_dir: Path) -> Figure:
    result = Students.read(results[Key.SWEEP_POSTLN_DEFAULT], Key.SWEEP_POSTLN_DEFAULT)
    b = np.array([c["b"] for c in result.conditions])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    shares = {
        "dead_fraction": result.dead_fraction,
        "always_on_fraction": result.always_on_fraction,
    }
    for ax, (key, share) in zip(axes, shares.items(), strict=True):
        for column, label in ((0, "init"), (-1, "end")):
            ax.plot(
                config.shifts,
                group_means(share[:, column], b, config.shifts),
                "o-",
                label=label,
            )
        ax.set(xlabel="b", ylabel=key.replace("_", " "), title=f"FC1 units: {key.split('_')[0]}")
        ax.legend()
    return save(
        fig,
        out_dir,
        "neuron_states.png",
        "Fraction of FC1 units dead (never active on the data) and always on, at initialisation "
        "and after training, against b.",
    )


def figures(results: Results, config: BiasAfterReLUConfig, out_dir: Path) -> list[Figure]:
    """``bias_after_relu.png`` (the seed's three plots, with the variants) and
    ``neuron_states.png``."""
    return [_figure_main(results, config, out_dir), _figure_states(results, config, out_dir)]
