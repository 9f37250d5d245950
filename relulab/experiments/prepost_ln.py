"""Pre-LN vs Post-LN in Liu's residual toy, forward only (the "Depth 1 -- Understanding Pre-LN
and Post-LN" post that seed ``000_…`` builds on: its toy model is the one seed 000 trains).

For d = 100, hidden 400, 100 blocks and α ∈ {1, 10, 100}, with N = 1000 Gaussian inputs [I]:
per layer (layer l = the output of block l) the per-sample cosine between consecutive layers
averaged over samples, the mean norm ‖h_l‖, and the effective rank of the uncentred N×d matrix
(``relulab.probe.effective_rank``, [I, strong]). Exponents are least-squares slopes on
log–log axes over layers ≥ ``fit_from``.

Every reading is taken on ``n_networks`` independently drawn toys per (norm, α) [I] and reported
with a bootstrap confidence interval over them; a law stated for the toy must hold for every α
(the post does not restrict it), so a compound verdict fails if any α fails and is
inconclusive if any α's interval straddles the criterion. That Post-LN pins the norm at √d is
LayerNorm's definition, not a finding: it is a test (``tests/test_residual_studies.py``) and a
metric, not a claim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from relulab.analysis import Estimate, mean_ci, power_law_exponent
from relulab.config import ConfigError, setting
from relulab.engine import BatchedResidualToy, ResidualToySpec
from relulab.experiments.base import Analysis, Experiment, Figure, Results, Unit
from relulab.experiments.claims import Claim, above, below, judged, within
from relulab.experiments.context import RunContext
from relulab.probe import effective_rank
from relulab.report.plotting import plt, save
from relulab.store import UnitResult

SOURCE = "the Pre-LN/Post-LN post ('Depth 1') that seed 000 builds on"
NORMS = ("pre", "post")


@dataclass(frozen=True)
class PrePostConfig:
    """Settings with their provenance (:func:`relulab.config.setting`)."""

    seed: int = setting(0, "choice", note="the run seed: every unit's generator derives from it")
    dtype: Literal["float32", "float64"] = setting("float32", "choice")
    width: int = setting(100, "stated")
    hidden: int = setting(400, "stated")
    blocks: int = setting(100, "stated")
    alphas: tuple[float, ...] = setting((1.0, 10.0, 100.0), "stated")
    n_samples: int = setting(1000, "inferred", note="N Gaussian inputs")
    init: Literal["torch_default", "kaiming_normal"] = setting(
        "torch_default", "inferred", note="strong: Kaiming normal does not give the post's figures"
    )
    n_networks: int = setting(
        8, "choice", note="toys drawn per (norm, α) behind every CI; the post shows one"
    )
    fit_from: int = setting(10, "inferred", note="first layer of the power-law and trend fits")
    exponent_tolerance: float = setting(
        0.1, "inferred", note="±0.1 on the √l exponent, twice that on the 1/l one"
    )
    flat_tolerance: float = setting(
        0.05, "inferred", note="'flat': |trend of cos × ln(blocks/fit_from)| below this"
    )
    collapse_factor: float = setting(
        0.5, "inferred", note="'collapsing': last-layer rank below this × first-layer rank"
    )

    def validate(self) -> None:
        if min(self.width, self.hidden, self.n_samples) < 2 or self.blocks < self.fit_from + 3:
            raise ConfigError("width, hidden, n_samples ≥ 2 and blocks ≥ fit_from + 3 are needed")
        if not self.alphas or min(self.alphas) <= 0:
            raise ConfigError(f"alphas must be positive, got {self.alphas}")
        if self.n_networks < 1:
            raise ConfigError(f"n_networks must be positive, got {self.n_networks}")


PRESETS = {"quick": PrePostConfig(), "paper": PrePostConfig(n_networks=30)}


def _scale(config: PrePostConfig) -> str:
    sizes = (config.width, config.hidden, config.blocks)
    which = "the post's sizes" if sizes == (100, 400, 100) else "not the post's 100/400/100"
    return (
        f"d = {config.width}, hidden {config.hidden}, {config.blocks} blocks ({which}); "
        f"N = {config.n_samples}; {config.n_networks} toys per (norm, α)"
    )


# ---------------------------------------------------------------------------------------------
# Units.
# ---------------------------------------------------------------------------------------------
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
        x = x.to(context.dtype).to(context.device)
        seeds = torch.randint(
            0, 2**62, (config.n_networks,), generator=context.generator("toys")
        ).tolist()
        rows, conditions = [], []
        total = len(config.alphas) * len(seeds)
        with context.progress(total, f"{norm}-LN forward") as done:
            for alpha in config.alphas:
                spec = ResidualToySpec(config.width, config.hidden, config.blocks, norm, alpha)
                for seed in seeds:  # one toy at a time: a trace keeps every block's tensors
                    model = BatchedResidualToy(
                        spec,
                        1,
                        init=config.init,
                        seeds=[seed],
                        dtype=context.dtype,
                        device=context.device,
                    )
                    with torch.no_grad():
                        stream = model.trace(x).stream
                    rows.append(_layer_statistics([h[0].double().cpu() for h in stream]))
                    conditions.append({"norm": norm, "alpha": alpha, "seed": seed})
                    done(1)
        curves = {key: np.stack([r[key] for r in rows]) for key in rows[0]}
        final = {"norm": curves["norm"][:, -1], "effective_rank": curves["effective_rank"][:, -1]}
        return UnitResult.forward_only(conditions, np.arange(1, config.blocks + 1), curves, final)

    return Unit(f"forward-{norm}", run)


def plan(config: PrePostConfig) -> list[Unit]:
    return [_forward_unit(config, norm) for norm in NORMS]


# ---------------------------------------------------------------------------------------------
# Analysis: one number per toy, an estimate per α, a compound verdict over α.
# ---------------------------------------------------------------------------------------------
PerToy = Callable[[UnitResult, int, PrePostConfig], float]


def norm_exponent(result: UnitResult, i: int, config: PrePostConfig) -> float:
    """Exponent of ‖h_l‖ in l over layers ≥ ``fit_from``."""
    fit = result.steps >= config.fit_from
    return power_law_exponent(result.steps[fit], result.curves["norm"][i][fit])


def cosine_gap_exponent(result: UnitResult, i: int, config: PrePostConfig) -> float:
    """Exponent of 1 − cos(h_l, h_{l+1}) in l over layers ≥ ``fit_from``."""
    gap = 1.0 - result.curves["cosine"][i]
    keep = (result.steps >= config.fit_from) & np.isfinite(gap) & (gap > 0)
    return power_law_exponent(result.steps[keep], gap[keep])


def cosine_drift(result: UnitResult, i: int, config: PrePostConfig) -> float:
    """The change of cos(h_l, h_{l+1}) over layers ``fit_from`` … ``blocks`` that its
    least-squares trend in ln l predicts: slope × ln(blocks/fit_from)."""
    cosine = result.curves["cosine"][i]
    keep = (result.steps >= config.fit_from) & np.isfinite(cosine)
    slope = np.polyfit(np.log(result.steps[keep]), cosine[keep], 1)[0]
    return float(slope * np.log(config.blocks / config.fit_from))


def rank_ratio(result: UnitResult, i: int, config: PrePostConfig) -> float:
    """Effective rank at the last layer over that at layer 1."""
    ranks = result.curves["effective_rank"][i]
    return float(ranks[-1] / ranks[0])


def _per_alpha(result: UnitResult, config: PrePostConfig, reading: PerToy) -> dict:
    """An :class:`Estimate` over the toys of each α."""
    out = {}
    for alpha in config.alphas:
        toys = [i for i, c in enumerate(result.conditions) if np.isclose(c["alpha"], alpha)]
        out[alpha] = mean_ci([reading(result, i, config) for i in toys])
    return out


def _compound(
    claim_id: str,
    statement: str,
    parts: dict[float, Claim],
    estimates: dict[float, Estimate],
    criterion: str,
    config: PrePostConfig,
    detail: str = "",
    note: str = "",
) -> Claim:
    """One claim over every α: the per-α claims' verdicts combined (fails if any fails,
    inconclusive if any is); measured is the α farthest from holding."""
    verdicts = {alpha: part.verdict for alpha, part in parts.items()}
    order = {"fails": 0, "inconclusive": 1, "holds": 2}
    worst = min(parts, key=lambda a: order[verdicts[a]])
    holds = {"fails": False, "inconclusive": None, "holds": True}[verdicts[worst]]
    listing = "; ".join(
        f"α={alpha:g}: {estimates[alpha].describe()} ({verdicts[alpha]})" for alpha in parts
    )
    return judged(
        claim_id,
        statement,
        expected=f"{criterion}, for every α; measured: α = {worst:g}",
        measured=estimates[worst],
        holds=holds,
        source=SOURCE,
        note=note,
        detail="; ".join(filter(None, [listing, detail])),
        scale=_scale(config),
    )


def _norm_offset(result: UnitResult, alpha: float) -> float:
    """l₀ = a/b of the fit ‖h_l‖² ≈ a + b·l (mean over toys): the depth after which the √l law of
    a random walk started at ‖h_0‖ applies."""
    toys = [i for i, c in enumerate(result.conditions) if np.isclose(c["alpha"], alpha)]
    squared = result.curves["norm"][toys].mean(axis=0) ** 2
    slope, intercept = np.polyfit(result.steps, squared, 1)
    return float(intercept / slope)


def _claims(results: Results, config: PrePostConfig) -> list[Claim]:
    pre, post = results["forward-pre"], results["forward-post"]
    tol = config.exponent_tolerance
    norm_exp = _per_alpha(pre, config, norm_exponent)
    gap_exp = _per_alpha(pre, config, cosine_gap_exponent)
    drift = _per_alpha(post, config, cosine_drift)
    ratio = _per_alpha(post, config, rank_ratio)
    rank_gap = {
        alpha: mean_ci(pre.final["effective_rank"][idx] - post.final["effective_rank"][idx])
        for alpha in config.alphas
        for idx in [[i for i, c in enumerate(pre.conditions) if np.isclose(c["alpha"], alpha)]]
    }
    offsets = ", ".join(f"α={a:g}: {_norm_offset(pre, a):.1f}" for a in config.alphas)
    return [
        _compound(
            "preln-norm-grows-like-sqrt-l",
            "Pre-LN: the residual stream's norm grows like √l.",
            {
                a: within("_", "", quantity="", measured=e, target=0.5, tolerance=tol, source="")
                for a, e in norm_exp.items()
            },
            norm_exp,
            f"exponent of ‖h_l‖ in l (layers ≥ {config.fit_from}) within ±{tol:g} of 0.5",
            config,
            detail="‖h_l‖² ≈ a + b·l with l₀ = a/b layers ("
            + offsets
            + "): √l is the law for l ≫ l₀, so a small α reaches it later",
            note="tolerance [I]",
        ),
        _compound(
            "preln-cosine-gap-like-1-over-l",
            "Pre-LN: consecutive layers align, 1 − cos(h_l, h_{l+1}) ~ 1/l.",
            {
                a: within(
                    "_", "", quantity="", measured=e, target=-1.0, tolerance=2 * tol, source=""
                )
                for a, e in gap_exp.items()
            },
            gap_exp,
            f"exponent of 1 − cos in l (layers ≥ {config.fit_from}) within ±{2 * tol:g} of −1",
            config,
            note="tolerance [I]",
        ),
        _compound(
            "postln-cosine-flat",
            "Post-LN: the cosine between consecutive layers is flat in depth (no trend).",
            {
                a: within(
                    "_",
                    "",
                    quantity="",
                    measured=e,
                    target=0.0,
                    tolerance=config.flat_tolerance,
                    source="",
                )
                for a, e in drift.items()
            },
            drift,
            f"the change of cos over layers {config.fit_from}–{config.blocks} along its "
            f"least-squares trend in ln l within ±{config.flat_tolerance:g}",
            config,
            detail="the statement is about a trend in depth; layer-to-layer fluctuations around "
            "it are not a trend",
            note="tolerance [I]",
        ),
        _compound(
            "postln-rank-collapses",
            "Post-LN: the effective rank collapses with depth.",
            {
                a: below("_", "", quantity="", measured=e, bound=config.collapse_factor, source="")
                for a, e in ratio.items()
            },
            ratio,
            f"effective rank at layer {config.blocks} / at layer 1 below "
            f"{config.collapse_factor:g}",
            config,
            note="factor [I]",
        ),
        _compound(
            "preln-keeps-rank-better",
            "Pre-LN keeps the effective rank better than Post-LN.",
            {
                a: above("_", "", quantity="", measured=e, bound=0.0, source="")
                for a, e in rank_gap.items()
            },
            rank_gap,
            "last-layer effective rank Pre-LN − Post-LN (same weights) above 0",
            config,
        ),
    ]


def analyse(results: Results, config: PrePostConfig) -> Analysis:
    pre, post = results["forward-pre"], results["forward-post"]
    metrics = {
        "postln_max_norm_deviation_from_sqrt_d": float(
            np.max(np.abs(post.curves["norm"] / np.sqrt(config.width) - 1))
        )
    }
    for alpha in config.alphas:
        idx = [i for i, c in enumerate(pre.conditions) if np.isclose(c["alpha"], alpha)]
        metrics[f"preln_norm_exponent_alpha_{alpha:g}"] = float(
            np.mean([norm_exponent(pre, i, config) for i in idx])
        )
        metrics[f"preln_cosine_gap_exponent_alpha_{alpha:g}"] = float(
            np.mean([cosine_gap_exponent(pre, i, config) for i in idx])
        )
        metrics[f"postln_final_rank_alpha_{alpha:g}"] = float(
            post.final["effective_rank"][idx].mean()
        )
        metrics[f"preln_final_rank_alpha_{alpha:g}"] = float(
            pre.final["effective_rank"][idx].mean()
        )
    return Analysis(_claims(results, config), metrics)


def figures(results: Results, config: PrePostConfig, out_dir: Path) -> list[Figure]:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    layers = np.arange(1, config.blocks + 1)
    for norm, style in (("pre", "-"), ("post", "--")):
        result = results[f"forward-{norm}"]
        for alpha in config.alphas:
            toys = [i for i, c in enumerate(result.conditions) if np.isclose(c["alpha"], alpha)]
            curves = {key: result.curves[key][toys].mean(axis=0) for key in result.curves}
            label = f"{norm}-LN α={alpha:g}"
            axes[0].loglog(layers, curves["norm"], style, label=label)
            axes[1].loglog(layers[:-1], 1 - curves["cosine"][:-1], style, label=label)
            axes[2].plot(layers, curves["effective_rank"], style, label=label)
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
        f"{config.n_samples} Gaussian inputs, mean over {config.n_networks} toys per α: Pre-LN "
        "(solid) vs Post-LN (dashed), with √l and 1/l guides."
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
