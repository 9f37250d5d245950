"""The sample-variance figures: the infinite-width theory, r_l per width, gradient profiles,
per-unit vs pooled histograms, and the ratio and share layer by layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from relulab.experiments.base import Figure, Results
from relulab.experiments.sample_variance import readings as rd
from relulab.experiments.sample_variance.config import SCHEMES, SampleVarianceConfig
from relulab.report.plotting import plt, save
from relulab.theory import batchnorm_gradient_slope, sample_statistics

__all__ = ["figures"]


def _figure_theory(results: Results, config: SampleVarianceConfig, out_dir: Path) -> Figure:
    theory = sample_statistics(config.depth)
    layers = np.arange(config.depth)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    left.plot(layers, theory.mean, label="m (sample mean)")
    left.plot(layers, theory.std, label="v (sample std)")
    left.plot(layers, np.sqrt(theory.mean**2 + theory.std**2), "k--", label="σ (total)")
    left.set(xlabel="layer (0 = first pre-activation)", ylabel="value", title="infinite width")
    left.legend()
    right.plot(layers, theory.mean_to_std_ratio)
    right.set(xlabel="layer", ylabel="m / v", title="sample mean-to-std ratio")
    return save(
        fig,
        out_dir,
        "theory_mv.png",
        "Infinite-width sample mean m, sample std v and total σ per "
        "layer (seed 002 Fig. 1 left), and m/v.",
    )


def _figure_finite_width(results: Results, config: SampleVarianceConfig, out_dir: Path) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(config.widths)))
    for colour, width in zip(colours, config.widths, strict=True):
        result = rd.width_result(results, width)
        mean, sd = result.ratio.mean(0), result.ratio.std(0)
        ax.plot(result.steps, mean, color=colour, label=f"width {width}")
        ax.fill_between(result.steps, mean - sd, mean + sd, color=colour, alpha=0.25)
    layers = np.arange(1, config.depth + 1)
    ax.plot(layers, rd.theory_ratio(config), "k--", label="infinite width")
    ax.plot(
        layers,
        rd.corrected_theory(config),
        "k:",
        label=f"infinite width, read on {config.n_samples} samples",
    )
    ax.set(
        xlabel="layer",
        ylabel="r_l (seed eq. 9)",
        title=f"{config.n_networks} nets per width, {config.n_samples} inputs",
    )
    ax.legend()
    return save(
        fig,
        out_dir,
        "finite_width_ratio.png",
        "Empirical mean-to-std ratio r_l, mean ± sd over "
        "networks, against the infinite-width theory (seed 002 Fig. 2 left).",
    )


def _figure_gradients(results: Results, config: SampleVarianceConfig, out_dir: Path) -> Figure:
    slopes = {scheme: float(e) for scheme, e in rd.slope_estimates(results, config).items()}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, scheme in zip(axes, SCHEMES, strict=True):
        result = rd.gradient_unit(results, scheme)
        profile = result.grad_sq.mean(0)
        ax.semilogy(result.steps, profile, "o-", ms=2.5, label=f"fitted slope {slopes[scheme]:.3f}")
        if scheme != "kaiming":
            anchor = profile[len(profile) // 2]
            middle = result.steps[len(profile) // 2]
            ax.semilogy(
                result.steps,
                anchor * np.exp(batchnorm_gradient_slope() * (result.steps - middle)),
                "k--",
                label=f"predicted {batchnorm_gradient_slope():.3f}",
            )
        ax.set(xlabel="layer l", title=scheme.replace("_", "+"))
        ax.legend()
    axes[0].set_ylabel("⟨(∂L/∂x^l)²⟩")
    return save(
        fig,
        out_dir,
        "gradients.png",
        f"Gradient second moment per layer, random linear loss, width "
        f"{config.gradient_width} (seed 002 Fig. 3).",
    )


def _figure_histograms(results: Results, config: SampleVarianceConfig, out_dir: Path) -> Figure:
    result = rd.histogram_unit(results, config)
    fig, axes = plt.subplots(2, 4, figsize=(13, 5.5))
    for row, layer in enumerate(config.histogram_layers):
        units = result.units(layer)
        for col in range(3):
            axes[row, col].hist(units[0, :, col], bins=20, color="tab:blue")
            axes[row, col].set(title=f"layer {layer}, neuron {col + 1}, one net")
        axes[row, 3].hist(units[:, :, 0].ravel(), bins=40, color="tab:gray")
        axes[row, 3].set(title=f"layer {layer}, neuron 1, all nets")
    return save(
        fig,
        out_dir,
        "histograms.png",
        "Pre-activation distributions over samples for single neurons "
        "of one network vs over samples and networks (seed 002 Fig. 1 right).",
    )


def _figure_layer_steps(results: Results, config: SampleVarianceConfig, out_dir: Path) -> Figure:
    kaiming = rd.gradient_unit(results, "kaiming")
    batchnorm = rd.gradient_unit(results, "batchnorm")
    layers = kaiming.steps
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    left.plot(layers, kaiming.linear_ratio.mean(0), "o-", ms=2.5, label="r(u^l), after W")
    left.plot(layers, kaiming.activation_ratio.mean(0), "s-", ms=2.5, label="r(ReLU(u^l))")
    left.set(xlabel="layer l", ylabel="r (seed eq. 9)", title="Kaiming: matmul keeps, ReLU raises")
    left.legend()
    theory = 1 - sample_statistics(config.depth).rho
    right.plot(layers, kaiming.linear_share.mean(0), "o-", ms=2.5, label="Kaiming")
    right.plot(layers, batchnorm.linear_share.mean(0), "s-", ms=2.5, label="BatchNorm (pre-BN)")
    right.plot(layers, theory, "k--", label="Kaiming, infinite width")
    right.axhline(1 - 1 / np.pi, color="k", ls=":", label="1 − K(0)")
    right.set(xlabel="layer l", ylabel="v² / (m² + v²)", title="sample-variance share")
    right.legend()
    return save(
        fig,
        out_dir,
        "layer_steps.png",
        f"Network means over {config.gradient_networks} nets of width {config.gradient_width}: "
        "the ratio before and after each ReLU (seed 002 §3.4), and the sample-variance share of "
        "each layer's linear output with and without BatchNorm (§4).",
    )


def figures(results: Results, config: SampleVarianceConfig, out_dir: Path) -> list[Figure]:
    """``theory_mv.png``, ``finite_width_ratio.png``, ``gradients.png``, ``histograms.png`` and
    ``layer_steps.png``."""
    makers = (
        _figure_theory,
        _figure_finite_width,
        _figure_gradients,
        _figure_histograms,
        _figure_layer_steps,
    )
    return [make(results, config, out_dir) for make in makers]
