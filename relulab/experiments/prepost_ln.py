"""Pre-LN vs Post-LN in Liu's residual toy, forward only (the "Depth 1 -- Understanding Pre-LN
and Post-LN" post that seed ``000_…`` builds on: its toy model is the one seed 000 trains).

For d = 100, hidden 400, 100 blocks and α ∈ {1, 10, 100}, with N = 1000 Gaussian inputs [I]:
per layer (layer l = the output of block l) the per-sample cosine between consecutive layers
averaged over samples, the mean norm ‖h_l‖, and the effective rank of the uncentred N×d matrix
(``relulab.probe.effective_rank``, [I, strong]). Exponents are least-squares slopes on
log–log axes over layers ≥ ``fit_from``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from relulab.analysis import power_law_exponent
from relulab.config import ConfigError
from relulab.engine import BatchedResidualToy, ResidualToySpec
from relulab.experiments.base import Analysis, Experiment, Figure, Results, Unit
from relulab.experiments.claims import above, below, judged
from relulab.experiments.context import RunContext
from relulab.probe import effective_rank
from relulab.report.plotting import plt, save
from relulab.store import UnitResult

SOURCE = "the Pre-LN/Post-LN post ('Depth 1') that seed 000 builds on"
NORMS = ("pre", "post")


@dataclass(frozen=True)
class PrePostConfig:
    """Settings; [S] stated by the Pre-LN/Post-LN post, [I] inferred and configurable."""

    seed: int = 0
    dtype: Literal["float32", "float64"] = "float32"
    width: int = 100  # [S]
    hidden: int = 400  # [S]
    blocks: int = 100  # [S]
    alphas: tuple[float, ...] = (1.0, 10.0, 100.0)  # [S]
    n_samples: int = 1000  # [I]
    init: Literal["torch_default", "kaiming_normal"] = "torch_default"  # [I, strong]
    fit_from: int = 10  # [I] first layer of the power-law fits
    exponent_tolerance: float = 0.1  # [I]
    collapse_factor: float = 0.5  # [I] "collapsing": last-layer rank below this × first-layer

    def validate(self) -> None:
        if min(self.width, self.hidden, self.n_samples) < 2 or self.blocks < self.fit_from + 3:
            raise ConfigError("width, hidden, n_samples ≥ 2 and blocks ≥ fit_from + 3 are needed")
        if not self.alphas or min(self.alphas) <= 0:
            raise ConfigError(f"alphas must be positive, got {self.alphas}")


PRESETS = {"quick": PrePostConfig(), "paper": PrePostConfig()}


def _layer_statistics(stream: list[torch.Tensor]) -> dict[str, np.ndarray]:
    """Per layer: mean norm, cosine to the next layer (NaN for the last), effective rank."""
    norms = np.array([float(h.norm(dim=1).mean()) for h in stream])
    cosines = [
        float(torch.nn.functional.cosine_similarity(a, b, dim=1).mean())
        for a, b in zip(stream[:-1], stream[1:], strict=True)
    ]
    ranks = np.array([effective_rank(h) for h in stream])
    return {"norm": norms, "cosine": np.array(cosines + [np.nan]), "effective_rank": ranks}


def _forward_unit(config: PrePostConfig, norm: str) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x = torch.randn(config.n_samples, config.width, generator=context.generator("inputs"))
        rows, conditions = [], []
        with context.progress(len(config.alphas), f"{norm}-LN forward") as done:
            for alpha in config.alphas:
                spec = ResidualToySpec(config.width, config.hidden, config.blocks, norm, alpha)
                model = BatchedResidualToy(
                    spec,
                    1,
                    init=config.init,
                    seeds=[config.seed],
                    dtype=context.dtype,
                    device=context.device,
                )
                with torch.no_grad():
                    stream = model.trace(x.to(context.dtype).to(context.device)).stream
                rows.append(_layer_statistics([h[0].double().cpu() for h in stream]))
                conditions.append({"norm": norm, "alpha": alpha})
                done(1)
        curves = {key: np.stack([r[key] for r in rows]) for key in rows[0]}
        final = {"norm": curves["norm"][:, -1], "effective_rank": curves["effective_rank"][:, -1]}
        return UnitResult.forward_only(conditions, np.arange(1, config.blocks + 1), curves, final)

    return Unit(f"forward-{norm}", run)


def plan(config: PrePostConfig) -> list[Unit]:
    return [_forward_unit(config, norm) for norm in NORMS]


def _exponents(result: UnitResult, config: PrePostConfig, key: str) -> dict[float, float]:
    fit = result.steps >= config.fit_from
    out = {}
    for i, condition in enumerate(result.conditions):
        values = result.curves[key][i]
        if key == "cosine":
            values = 1.0 - values
        keep = fit & np.isfinite(values) & (values > 0)
        out[condition["alpha"]] = power_law_exponent(result.steps[keep], values[keep])
    return out


def _fmt(values: dict[float, float]) -> str:
    return ", ".join(f"α={alpha:g}: {v:.3f}" for alpha, v in values.items())


def analyse(results: Results, config: PrePostConfig) -> Analysis:
    pre, post = results["forward-pre"], results["forward-post"]
    norm_exponents = _exponents(pre, config, "norm")
    cos_exponents = _exponents(pre, config, "cosine")
    tol = config.exponent_tolerance
    big = [alpha for alpha in config.alphas if alpha >= 10] or list(config.alphas)
    post_norm_spread = float(np.max(np.abs(post.curves["norm"] / np.sqrt(config.width) - 1)))
    post_cos = post.curves["cosine"][:, config.fit_from - 1 : -1]
    cos_spread = float(np.max(post_cos.max(axis=1) - post_cos.min(axis=1)))
    fit_layers = np.log(post.steps[config.fit_from - 1 : -1])
    cos_trends = [float(np.polyfit(fit_layers, row, 1)[0]) for row in post_cos]
    rank_ratio = post.curves["effective_rank"][:, -1] / post.curves["effective_rank"][:, 0]
    final_pre, final_post = pre.final["effective_rank"], post.final["effective_rank"]
    claims = [
        judged(
            "preln-norm-grows-like-sqrt-l",
            "Pre-LN: the residual stream's norm grows like √l.",
            expected=f"exponent of ‖h_l‖ in l within ±{tol} of 0.5 for every α ≥ 10 (layers ≥ "
            f"{config.fit_from}); measured: their mean",
            measured=float(np.mean([norm_exponents[a] for a in big])),
            holds=all(abs(norm_exponents[a] - 0.5) < tol for a in big),
            source=SOURCE,
            note="tolerance [I]",
            detail=_fmt(norm_exponents),
        ),
        judged(
            "preln-cosine-gap-like-1-over-l",
            "Pre-LN: consecutive layers align, 1 − cos(h_l, h_{l+1}) ~ 1/l.",
            expected=f"exponent of 1 − cos in l within ±{2 * tol} of −1 for every α ≥ 10; "
            "measured: their mean",
            measured=float(np.mean([cos_exponents[a] for a in big])),
            holds=all(abs(cos_exponents[a] + 1) < 2 * tol for a in big),
            source=SOURCE,
            note="tolerance [I]",
            detail=_fmt(cos_exponents),
        ),
        below(
            "postln-norm-constant",
            "Post-LN: the norm is constant in depth (LN fixes it at √d).",
            quantity="max over layers |‖h_l‖/√d − 1|",
            measured=post_norm_spread,
            bound=1e-3,
            source=SOURCE,
        ),
        below(
            "postln-cosine-flat",
            "Post-LN: the cosine between consecutive layers is flat in depth.",
            quantity=f"range of cos over layers ≥ {config.fit_from}, largest over α",
            measured=cos_spread,
            bound=0.05,
            source=SOURCE,
            note="threshold [I]",
            detail=", ".join(
                f"α={c['alpha']:g}: mean {np.nanmean(post.curves['cosine'][i]):.3f}, "
                f"trend {cos_trends[i]:+.3f} per unit ln l"
                for i, c in enumerate(post.conditions)
            ),
        ),
        below(
            "postln-rank-collapses",
            "Post-LN: the effective rank collapses with depth.",
            quantity=f"rank at layer {config.blocks} / rank at layer 1, largest over α",
            measured=float(rank_ratio.max()),
            bound=config.collapse_factor,
            source=SOURCE,
            note="factor [I]",
            detail=", ".join(
                f"α={c['alpha']:g}: {r:.3f}"
                for c, r in zip(post.conditions, rank_ratio, strict=True)
            ),
        ),
        above(
            "preln-keeps-rank-better",
            "Pre-LN keeps the effective rank better than Post-LN.",
            quantity="last-layer effective rank Pre-LN − Post-LN, smallest over α",
            measured=float(np.min(final_pre - final_post)),
            bound=0.0,
            source=SOURCE,
            detail=", ".join(
                f"α={a:g}: {p:.1f} vs {q:.1f}"
                for a, p, q in zip(config.alphas, final_pre, final_post, strict=True)
            ),
        ),
    ]
    metrics = {f"preln_norm_exponent_alpha_{a:g}": v for a, v in norm_exponents.items()}
    metrics.update({f"preln_cosine_gap_exponent_alpha_{a:g}": v for a, v in cos_exponents.items()})
    for i, condition in enumerate(post.conditions):
        metrics[f"postln_final_rank_alpha_{condition['alpha']:g}"] = float(final_post[i])
        metrics[f"preln_final_rank_alpha_{condition['alpha']:g}"] = float(final_pre[i])
    return Analysis(claims, metrics)


def figures(results: Results, config: PrePostConfig, out_dir: Path) -> list[Figure]:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    layers = np.arange(1, config.blocks + 1)
    for norm, style in (("pre", "-"), ("post", "--")):
        result = results[f"forward-{norm}"]
        for i, condition in enumerate(result.conditions):
            label = f"{norm}-LN α={condition['alpha']:g}"
            axes[0].loglog(layers, result.curves["norm"][i], style, label=label)
            axes[1].loglog(layers[:-1], 1 - result.curves["cosine"][i][:-1], style, label=label)
            axes[2].plot(layers, result.curves["effective_rank"][i], style, label=label)
    guide = results["forward-pre"].curves["norm"][-1]
    axes[0].loglog(
        layers, guide[config.fit_from - 1] * np.sqrt(layers / config.fit_from), "k:", label="∝ √l"
    )
    gap = 1 - results["forward-pre"].curves["cosine"][-1][config.fit_from - 1]
    axes[1].loglog(layers, gap * config.fit_from / layers, "k:", label="∝ 1/l")
    axes[0].set(xlabel="layer l", ylabel="mean ‖h_l‖", title="norm")
    axes[1].set(xlabel="layer l", ylabel="1 − cos(h_l, h_{l+1})", title="consecutive-layer cosine")
    axes[2].set(xlabel="layer l", ylabel="effective rank (uncentred)", title="effective rank")
    for ax in axes:
        ax.legend(fontsize=6)
    caption = (
        f"Residual toy, d = {config.width}, hidden {config.hidden}, {config.blocks} blocks, "
        f"{config.n_samples} Gaussian inputs: Pre-LN (solid) vs Post-LN (dashed), with √l and "
        "1/l guides."
    )
    return [save(fig, out_dir, "prepost.png", caption)]


def estimate_bytes(config: PrePostConfig) -> int:
    """Peak memory in bytes: the blocks' weights (2·width·hidden each), the residual stream of
    every layer kept for the statistics plus its float64 copy, and every block's hidden
    pre-activations, which the batched forward keeps (N·hidden per block). Measured: 1786 MiB
    peak for an estimate of 1785 MiB (width 100, hidden 1600, 30 blocks, N = 8000)."""
    itemsize = 8 if config.dtype == "float64" else 4
    weights = config.blocks * 2 * config.width * config.hidden * itemsize
    stream = (config.blocks + 1) * config.n_samples * config.width * (itemsize + 8)
    hidden = config.blocks * config.n_samples * config.hidden * itemsize
    return weights + stream + hidden


EXPERIMENT = Experiment(
    name="prepost-ln",
    title="Pre-LN vs Post-LN in a deep residual toy (forward)",
    seed="000",
    summary="norm ~ √l and 1 − cos ~ 1/l for Pre-LN; constant norm, rank collapse for Post-LN",
    config=PrePostConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
)
