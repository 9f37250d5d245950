"""Sample-variance decay in random ReLU nets (seed ``002_…``, Luther & Seung, §3–4).

* Infinite width: m, v, σ per layer and m/v against depth (``relulab.theory``).
* Finite width: 30 Kaiming nets per width, 100 Gaussian inputs, the ratio r_l of seed eq. 9,
  mean ± sd against the theory (``engine.forward_statistics``).
* Gradients vs layer under the random linear loss for Kaiming, scale+bias and BatchNorm, with
  fitted slopes against ln σ_s² (``engine.activation_gradient_profile``, ``init``).
* Per-neuron vs pooled pre-activation histograms at an early and a deep layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from relulab.analysis import fit_log_slope, sample_bias_corrected_ratio
from relulab.config import ConfigError
from relulab.engine import BatchedMLP, MLPSpec, scale_init_batched_
from relulab.engine.forward import activation_gradient_profile, forward_statistics
from relulab.experiments.base import Analysis, Experiment, Figure, Results, Unit
from relulab.experiments.claims import Claim, above, below, judged, within
from relulab.experiments.context import RunContext
from relulab.report.plotting import plt, save
from relulab.store import UnitResult
from relulab.theory import (
    batchnorm_gradient_slope,
    batchnorm_sample_std,
    sample_statistics,
)

SEED = "seed 002"
SCHEMES = ("kaiming", "scale_bias", "batchnorm")


@dataclass(frozen=True)
class SampleVarianceConfig:
    """Settings; [S] stated by seed 002, [I] inferred and configurable."""

    seed: int = 0
    dtype: Literal["float32", "float64"] = "float32"
    depth: int = 50  # [S]
    n_samples: int = 100  # [S]
    n_networks: int = 30  # [S]
    widths: tuple[int, ...] = (30, 100, 300, 1000)  # [S] the paper adds 3000
    histogram_width: int = 1000  # [I] the paper's Fig. 1 width is not stated
    histogram_layers: tuple[int, int] = (1, 50)  # [S] Fig. 1 right, 1-based pre-activation layers
    gradient_width: int = 500  # [S] 3000 in the paper
    gradient_networks: int = 6  # [S] 30 in the paper
    gradient_chunk: int = 3  # networks per batched computation (memory)
    scale_eps: float = 1e-5  # [S]
    slope_tolerance: float = 0.03  # [I] |fitted − predicted| slope allowed
    sigma_s_rtol: float = 0.02  # [I]

    def validate(self) -> None:
        for name in (
            "depth",
            "n_samples",
            "n_networks",
            "histogram_width",
            "gradient_width",
            "gradient_networks",
            "gradient_chunk",
        ):
            if getattr(self, name) < 2 and name not in ("gradient_chunk",):
                raise ConfigError(f"{name} must be at least 2, got {getattr(self, name)}")
        if self.gradient_chunk < 1 or min(self.widths) < 2:
            raise ConfigError("gradient_chunk must be positive and every width at least 2")
        if not all(1 <= layer <= self.depth for layer in self.histogram_layers):
            raise ConfigError(f"histogram_layers must lie in 1..depth, got {self.histogram_layers}")
        if self.depth < 4 or self.histogram_width < 3:
            raise ConfigError(  # gradient slopes fit layers 2..depth-1; the figure shows 3 units
                "depth must be at least 4 and histogram_width at least 3"
            )


PRESETS = {
    "quick": SampleVarianceConfig(),
    "paper": SampleVarianceConfig(
        widths=(30, 100, 300, 1000, 3000),
        histogram_width=3000,
        gradient_width=3000,
        gradient_networks=30,
        gradient_chunk=1,
    ),
}


# ---------------------------------------------------------------------------------------------
# Units.
# ---------------------------------------------------------------------------------------------
def _inputs(config: SampleVarianceConfig, width: int, context: RunContext) -> torch.Tensor:
    generator = context.generator(f"inputs-{width}")
    return torch.randn(config.n_samples, width, generator=generator, dtype=torch.float64)


def _seeds(context: RunContext, name: str, n: int) -> list[int]:
    generator = context.generator(name)
    return torch.randint(0, 2**62, (n,), generator=generator).tolist()


def _finite_width_unit(config: SampleVarianceConfig, width: int) -> Unit:
    def run(context: RunContext) -> UnitResult:
        keep = (
            [layer - 1 for layer in config.histogram_layers]
            if width == config.histogram_width
            else []
        )
        seeds = _seeds(context, f"nets-{width}", config.n_networks)
        with context.progress(
            1, f"width {width}: {config.n_networks} nets × {config.depth} layers"
        ) as done:
            statistics = forward_statistics(
                config.n_networks,
                width,
                config.depth,
                _inputs(config, width, context),
                seeds,
                context.dtype,
                context.device,
                keep_layers=keep,
                keep_units=3,
            )
            done(1)
        layers = np.arange(1, config.depth + 1)
        curves = {
            "ratio": statistics.ratio,
            "mean_sq": statistics.mean_sq,
            "sample_var": statistics.sample_var,
        }
        arrays = {f"units_layer_{layer + 1}": values for layer, values in statistics.units.items()}
        return UnitResult.forward_only(
            [{"width": width, "seed": s} for s in seeds],
            layers,
            curves,
            {k: v[:, -1] for k, v in curves.items()},
            arrays,
        )

    return Unit(f"finite-width-{width}", run)


def _gradient_model(
    scheme: str,
    config: SampleVarianceConfig,
    seeds: list[int],
    context: RunContext,
    x: torch.Tensor,
) -> BatchedMLP:
    width = config.gradient_width
    spec = MLPSpec(
        (width,) * (config.depth + 1) + (1,),
        bias=scheme == "scale_bias",
        output_bias=False,
        batchnorm=scheme == "batchnorm",
    )
    init = "normal" if scheme == "scale_bias" else "kaiming_normal"
    model = BatchedMLP(
        spec, len(seeds), init=init, seeds=seeds, dtype=context.dtype, device=context.device
    )
    with torch.no_grad():
        readout = model.weights[-1]
        readout.div_(readout.std(dim=(1, 2), keepdim=True))  # the random loss vector w ~ N(0, I)
    if scheme == "scale_bias":
        scale_init_batched_(model, x, with_bias=True, eps=config.scale_eps)
    return model


def _gradient_unit(config: SampleVarianceConfig, scheme: str) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x = _inputs(config, config.gradient_width, context).to(context.dtype).to(context.device)
        seeds = _seeds(context, f"gradients-{scheme}", config.gradient_networks)
        grad_sq, pre_std = [], []
        chunks = [
            seeds[i : i + config.gradient_chunk]
            for i in range(0, len(seeds), config.gradient_chunk)
        ]
        with context.progress(len(chunks), f"gradients, {scheme}") as done:
            for chunk in chunks:
                model = _gradient_model(scheme, config, chunk, context, x)
                g, s = activation_gradient_profile(model, x)
                grad_sq.append(g.double().cpu().numpy())
                pre_std.append(s.double().cpu().numpy())
                done(1)
        curves = {"grad_sq": np.concatenate(grad_sq), "pre_std": np.concatenate(pre_std)}
        return UnitResult.forward_only(
            [{"scheme": scheme, "seed": s} for s in seeds],
            np.arange(1, config.depth + 1),
            curves,
            {k: v[:, -1] for k, v in curves.items()},
        )

    return Unit(f"gradients-{scheme}", run)


def plan(config: SampleVarianceConfig) -> list[Unit]:
    units = [_finite_width_unit(config, width) for width in config.widths]
    if config.histogram_width not in config.widths:
        units.append(_finite_width_unit(config, config.histogram_width))
    units += [_gradient_unit(config, scheme) for scheme in SCHEMES]
    return units


# ---------------------------------------------------------------------------------------------
# Analysis.
# ---------------------------------------------------------------------------------------------
def _theory_ratio(config: SampleVarianceConfig) -> np.ndarray:
    return sample_statistics(config.depth).mean_to_std_ratio


def _gradient_slopes(results: Results, config: SampleVarianceConfig) -> dict[str, float]:
    slopes = {}
    for scheme in SCHEMES:
        result = results[f"gradients-{scheme}"]
        profile = result.curves["grad_sq"].mean(axis=0)
        fit = slice(1, config.depth - 1)  # away from the input and the readout
        slopes[scheme] = fit_log_slope(result.steps[fit], profile[fit])
    return slopes


def _width_deviations(results: Results, config: SampleVarianceConfig) -> dict[int, float]:
    theory = _theory_ratio(config)
    return {
        width: float(
            np.mean(
                np.abs(results[f"finite-width-{width}"].curves["ratio"].mean(0)[1:] - theory[1:])
            )
        )
        for width in config.widths
    }


def _histogram_spread(results: Results, config: SampleVarianceConfig, layer: int) -> float:
    """Mean over kept units of (per-network sample std) / (pooled std over samples and nets)."""
    units = results[f"finite-width-{config.histogram_width}"].arrays[f"units_layer_{layer}"]
    per_network = units.std(axis=1)  # (S, units)
    pooled = units.transpose(2, 0, 1).reshape(units.shape[2], -1).std(axis=1)
    return float(np.mean(per_network.mean(axis=0) / pooled))


def _excess_over_theory(results: Results, config: SampleVarianceConfig, width: int) -> str:
    theory = _theory_ratio(config)
    measured = results[f"finite-width-{width}"].curves["ratio"].mean(0)
    above = np.flatnonzero(measured[1:] > theory[1:]) + 1
    if not len(above):
        return "no layer above theory"
    expected = sample_bias_corrected_ratio(theory, config.n_samples) - theory
    return (
        f"layers {above[0] + 1}–{above[-1] + 1} exceed theory by "
        f"{np.mean(measured[above] - theory[above]):.3f} on average; the {config.n_samples}-"
        f"sample estimator bias predicts {np.mean(expected[above]):.3f}"
    )


def _claims_sample_variance(results: Results, config: SampleVarianceConfig) -> list[Claim]:
    theory = sample_statistics(config.depth)
    ratio = theory.mean_to_std_ratio
    gaps = 1 - sample_statistics(max(config.depth, 200)).rho
    contraction = gaps[1:] / gaps[:-1]
    deviations = _width_deviations(results, config)
    widths = sorted(deviations)
    below_theory = [
        float(np.mean(results[f"finite-width-{w}"].curves["ratio"].mean(0)[1:] <= ratio[1:]))
        for w in config.widths
    ]
    excess = _excess_over_theory(results, config, config.widths[-1])
    slopes = _gradient_slopes(results, config)
    predicted = batchnorm_gradient_slope()
    pre_std = results["gradients-batchnorm"].curves["pre_std"][:, 1:].mean()
    early, deep = (_histogram_spread(results, config, layer) for layer in config.histogram_layers)
    return [
        judged(
            "sample-variance-decays",
            "With Kaiming init the total variance is preserved but the "
            "sample variance decays with depth: m/v grows layer after layer (infinite width).",
            expected=f"m/v strictly increasing over the {config.depth} layers; measured: m/v at "
            "the last layer",
            measured=float(ratio[-1]),
            holds=bool(np.all(np.diff(ratio) > 0)),
            source=f"{SEED} §3.1, Fig. 1 left",
            detail=f"m/v at layers 2, {config.depth // 2}, {config.depth}: {ratio[1]:.3f}, "
            f"{ratio[config.depth // 2 - 1]:.3f}, {ratio[-1]:.3f}",
        ),
        judged(
            "decay-is-subexponential",
            "The decay is sub-exponential: dK/dc → 1 as c → 1, so the "
            "per-layer contraction of 1 − ρ tends to 1.",
            expected="(1 − ρ_{l+1})/(1 − ρ_l) increasing towards 1 with depth (above 0.99 at the "
            f"deepest layer computed); measured: the contraction at layer {config.depth}",
            measured=float(contraction[config.depth - 2]),
            holds=bool(np.all(np.diff(contraction) > 0) and contraction[-1] > 0.99),
            source=f"{SEED} §3.1.1",
            detail=f"contraction at layer 2: {contraction[0]:.3f}, layer {config.depth}: "
            f"{contraction[config.depth - 2]:.4f}, layer {len(gaps)}: {contraction[-1]:.4f}",
        ),
        above(
            "theory-is-upper-bound",
            "The infinite-width ratio is an upper bound on the ratio "
            "r_l measured in finite networks.",
            quantity="fraction of layers ≥ 2 with mean r_l ≤ theory, lowest over widths",
            measured=float(min(below_theory)),
            bound=1.0,
            or_equal=True,
            source=f"{SEED} §3.2, Fig. 2 left",
            detail="fraction of layers below theory per width: "
            + ", ".join(f"{w}: {b:.2f}" for w, b in zip(config.widths, below_theory, strict=True))
            + f"; at width {config.widths[-1]} {excess}",
        ),
        judged(
            "wider-is-closer",
            "For a given layer, the empirical ratio approaches the theory as the width increases.",
            expected="mean |r_l − theory| strictly decreasing in width; measured: its value at "
            "the largest width",
            measured=float(deviations[widths[-1]]),
            holds=bool(np.all(np.diff([deviations[w] for w in widths]) < 0)),
            source=f"{SEED} §3.2, Fig. 2 left",
            detail=", ".join(f"width {w}: {deviations[w]:.3f}" for w in widths),
        ),
        below(
            "histograms-narrow-with-depth",
            "In layer 1 a neuron's distribution over samples looks "
            "like the pooled one over samples and networks; in layer 50 its sample variance has "
            "decayed significantly.",
            quantity=f"per-neuron/pooled std ratio at layer {config.histogram_layers[1]}",
            measured=deep,
            bound=0.5 * early,
            source=f"{SEED} §3.1, Fig. 1 right",
            note=f"bound: half the ratio at layer {config.histogram_layers[0]}",
            detail=f"layer {config.histogram_layers[0]}: {early:.3f}, layer "
            f"{config.histogram_layers[1]}: {deep:.3f}; infinite-width v/σ: "
            f"{theory.std_over_sigma[-1]:.3f}",
        ),
        within(
            "batchnorm-sigma-s",
            "With BatchNorm, one Kaiming layer + ReLU leaves a sample std of "
            "σ_s = √(1 − K(0)) ≈ 0.826 (rescaled by 1/σ_s ≈ 1.21).",
            quantity="measured pre-BN per-feature sample std",
            measured=float(pre_std),
            target=batchnorm_sample_std(),
            tolerance=config.sigma_s_rtol,
            relative=True,
            source=f"{SEED} §4",
            detail=f"1/measured = {1 / pre_std:.3f}",
        ),
        _slope_claim(
            "batchnorm-gradient-slope",
            "BatchNorm makes gradients grow towards the input: "
            "ln⟨(∂L/∂x^l)²⟩ falls with slope ≈ −0.38 per layer (−0.381 reported).",
            slopes["batchnorm"],
            predicted,
            config,
        ),
        _slope_claim(
            "scale-bias-gradient-slope",
            "Scale+bias initialisation makes gradients grow the same way (−0.379 reported).",
            slopes["scale_bias"],
            predicted,
            config,
        ),
        _slope_claim(
            "kaiming-gradients-flat",
            "With Kaiming initialisation the scale of gradients stays fixed across layers.",
            slopes["kaiming"],
            0.0,
            config,
        ),
    ]


def _slope_claim(
    claim_id: str, statement: str, slope: float, target: float, config: SampleVarianceConfig
) -> Claim:
    return within(
        claim_id,
        statement,
        quantity="fitted slope of ln⟨(∂L/∂x^l)²⟩ in l",
        measured=slope,
        target=target,
        tolerance=config.slope_tolerance,
        source=f"{SEED} §4, Fig. 3",
        note="tolerance [I]",
        detail=f"width {config.gradient_width}, {config.gradient_networks} networks",
    )


def _metrics(results: Results, config: SampleVarianceConfig) -> dict[str, float]:
    theory = sample_statistics(config.depth)
    metrics = {
        "theory_m_over_v_last_layer": float(theory.mean_to_std_ratio[-1]),
        "theory_v_over_sigma_last_layer": float(theory.std_over_sigma[-1]),
        "predicted_gradient_slope": batchnorm_gradient_slope(),
        "sigma_s_theory": batchnorm_sample_std(),
    }
    for scheme, slope in _gradient_slopes(results, config).items():
        metrics[f"gradient_slope_{scheme}"] = slope
    corrected = sample_bias_corrected_ratio(_theory_ratio(config), config.n_samples)
    for width in config.widths:
        measured = results[f"finite-width-{width}"].curves["ratio"].mean(0)
        metrics[f"fraction_below_sample_bias_corrected_theory_width_{width}"] = float(
            np.mean(measured <= corrected)
        )
    for width, deviation in _width_deviations(results, config).items():
        metrics[f"ratio_mean_abs_deviation_width_{width}"] = deviation
        metrics[f"ratio_last_layer_width_{width}"] = float(
            results[f"finite-width-{width}"].curves["ratio"][:, -1].mean()
        )
    return metrics


def analyse(results: Results, config: SampleVarianceConfig) -> Analysis:
    return Analysis(
        _claims_sample_variance(results, config),
        _metrics(results, config),
    )


# ---------------------------------------------------------------------------------------------
# Figures.
# ---------------------------------------------------------------------------------------------
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
        result = results[f"finite-width-{width}"]
        mean, sd = result.curves["ratio"].mean(0), result.curves["ratio"].std(0)
        ax.plot(result.steps, mean, color=colour, label=f"width {width}")
        ax.fill_between(result.steps, mean - sd, mean + sd, color=colour, alpha=0.25)
    ax.plot(np.arange(1, config.depth + 1), _theory_ratio(config), "k--", label="infinite width")
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
    slopes = _gradient_slopes(results, config)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, scheme in zip(axes, SCHEMES, strict=True):
        result = results[f"gradients-{scheme}"]
        profile = result.curves["grad_sq"].mean(0)
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
    result = results[f"finite-width-{config.histogram_width}"]
    fig, axes = plt.subplots(2, 4, figsize=(13, 5.5))
    for row, layer in enumerate(config.histogram_layers):
        units = result.arrays[f"units_layer_{layer}"]
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


def figures(results: Results, config: SampleVarianceConfig, out_dir: Path) -> list[Figure]:
    makers = (
        _figure_theory,
        _figure_finite_width,
        _figure_gradients,
        _figure_histograms,
    )
    return [make(results, config, out_dir) for make in makers]


def estimate_bytes(config: SampleVarianceConfig) -> int:
    """Peak memory in bytes of the largest unit or analysis step: a finite-width unit (S weight
    matrices and three S×N×width activations), a gradient chunk (weights and gradients of every
    layer, four activations per layer).
    Measured: 290 MiB peak for an estimate of 262 MiB (4 networks of width 4000)."""
    itemsize = 8 if config.dtype == "float64" else 4
    n, depth = config.n_samples, config.depth
    width = max(*config.widths, config.histogram_width)
    forward = itemsize * config.n_networks * (width * width + 3 * n * width)
    g = config.gradient_width
    gradients = itemsize * config.gradient_chunk * depth * (2 * g * g + 4 * n * g)
    return max(forward, gradients)


EXPERIMENT = Experiment(
    name="sample-variance",
    title="Sample variance decay in random ReLU networks",
    seed="002",
    summary="m/v per layer, finite-width ratios, BN / scale+bias gradient slopes, histograms",
    config=SampleVarianceConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
)
