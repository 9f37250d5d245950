"""The prepost-ln scorecard: the post's observations as claims, plus the metrics.

Each reading is one number per toy (:func:`norm_exponent`, :func:`cosine_gap_exponent`,
:func:`cosine_drift`, :func:`rank_ratio`), an estimate per α over the toys (Student t), and a
claim judged at every α of the config with :class:`~relulab.experiments.criteria.AllOf` (one
part per α: fails if any α fails, inconclusive if any straddles). The headline is the first α
(α = 1 in both presets); every α is listed in the detail with its verdict.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relulab.analysis import Estimate, mean_ci, power_law_exponent
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import ClaimSpec, Reading, evaluate
from relulab.experiments.criteria import Above, AllOf, Below, Criterion, Within
from relulab.experiments.prepost_ln.config import SOURCE, PrePostConfig, scale
from relulab.experiments.prepost_ln.units import Key
from relulab.store import UnitResult

__all__ = [
    "CLAIMS",
    "COSINE_FLAT",
    "GAP_LIKE_1_OVER_L",
    "KEEPS_RANK",
    "NORM_LIKE_SQRT_L",
    "RANK_COLLAPSES",
    "alpha_part",
    "analyse",
    "cosine_drift",
    "cosine_gap_exponent",
    "metrics",
    "norm_exponent",
    "norm_offset",
    "rank_ratio",
]

PerToy = Callable[[UnitResult, int, PrePostConfig], float]
FIGURE = "prepost.png"


# ---------------------------------------------------------------------------------------------
# Readings: one number per toy.
# ---------------------------------------------------------------------------------------------
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


def _toys(result: UnitResult, alpha: float) -> list[int]:
    return [i for i, c in enumerate(result.conditions) if np.isclose(c["alpha"], alpha)]


def alpha_part(alpha: float) -> str:
    """The name of one α's part of a claim (the key of its measurement).

    Example:
        >>> alpha_part(10.0)
        'α=10'
    """
    return f"α={alpha:g}"


def _per_alpha(result: UnitResult, config: PrePostConfig, reading: PerToy) -> dict[str, Estimate]:
    """An :class:`Estimate` over the toys of each α, keyed by :func:`alpha_part`."""
    return {
        alpha_part(alpha): mean_ci([reading(result, i, config) for i in _toys(result, alpha)])
        for alpha in config.alphas
    }


def _every_alpha(
    config: PrePostConfig, quantity: str, condition: Callable[[str], Criterion]
) -> AllOf:
    """``condition(quantity at α)`` for every α of the config, one part each (the quantity named
    in full for the first α only), the first α's the headline."""
    parts = {}
    for k, alpha in enumerate(config.alphas):
        name = alpha_part(alpha)
        parts[name] = condition(f"{quantity} at {name}" if k == 0 else f"at {name}")
    return AllOf(parts, joiner="; ")


def norm_offset(result: UnitResult, alpha: float) -> float:
    """l₀ = a/b of the fit ‖h_l‖² ≈ a + b·l (mean over toys): the depth after which the √l law of
    a random walk started at ‖h_0‖ applies."""
    squared = result.curves["norm"][_toys(result, alpha)].mean(axis=0) ** 2
    slope, intercept = np.polyfit(result.steps, squared, 1)
    return float(intercept / slope)


# ---------------------------------------------------------------------------------------------
# preln-norm-grows-like-sqrt-l
# ---------------------------------------------------------------------------------------------
def _norm_grows(results: Results, config: PrePostConfig) -> Reading:
    pre = results[Key.FORWARD_PRE]
    offsets = ", ".join(f"α={a:g}: {norm_offset(pre, a):.1f}" for a in config.alphas)
    return Reading(
        _per_alpha(pre, config, norm_exponent),
        detail=f"‖h_l‖² ≈ a + b·l with l₀ = a/b layers ({offsets}): √l is the law for l ≫ l₀, "
        "so a small α reaches it later",
        scale=scale(config),
    )


NORM_LIKE_SQRT_L = ClaimSpec(
    "preln-norm-grows-like-sqrt-l",
    "Pre-LN: the residual stream's norm grows like √l.",
    source=f"{SOURCE}, Observation 1, first asymptotic behaviour (‖h^l‖ ~ √l, a random walk)",
    criterion=lambda c: _every_alpha(
        c,
        f"exponent of ‖h_l‖ in l (layers ≥ {c.fit_from})",
        lambda quantity: Within(quantity, 0.5, c.exponent_tolerance),
    ),
    measure=_norm_grows,
    scope="asymptotically in depth ('We observe two asymptotic behaviors'): l ≫ l₀, the depth "
    "at which the random walk forgets ‖h_0‖",
    note="tolerance [I]; judged at every α over layers ≥ fit_from, not yet restricted to the "
    "post's asymptotic scope (issue 29)",
    figure=FIGURE,
)


# ---------------------------------------------------------------------------------------------
# preln-cosine-gap-like-1-over-l
# ---------------------------------------------------------------------------------------------
def _gap_shrinks(results: Results, config: PrePostConfig) -> Reading:
    pre = results[Key.FORWARD_PRE]
    return Reading(_per_alpha(pre, config, cosine_gap_exponent), scale=scale(config))


GAP_LIKE_1_OVER_L = ClaimSpec(
    "preln-cosine-gap-like-1-over-l",
    "Pre-LN: consecutive layers align, 1 − cos(h_l, h_{l+1}) ~ 1/l.",
    source=f"{SOURCE}, Observation 1, second asymptotic behaviour (1 − cos ~ θ² ~ 1/l)",
    criterion=lambda c: _every_alpha(
        c,
        f"exponent of 1 − cos in l (layers ≥ {c.fit_from})",
        lambda quantity: Within(quantity, -1.0, 2 * c.exponent_tolerance),
    ),
    measure=_gap_shrinks,
    scope="asymptotically in depth ('We observe two asymptotic behaviors'): l ≫ l₀",
    note="tolerance [I]; judged at every α over layers ≥ fit_from, not yet restricted to the "
    "post's asymptotic scope (issue 29)",
    figure=FIGURE,
)


# ---------------------------------------------------------------------------------------------
# postln-cosine-flat
# ---------------------------------------------------------------------------------------------
def _cosine_flat(results: Results, config: PrePostConfig) -> Reading:
    post = results[Key.FORWARD_POST]
    return Reading(
        _per_alpha(post, config, cosine_drift),
        detail="the statement is about a trend in depth; layer-to-layer fluctuations around it "
        "are not a trend",
        scale=scale(config),
    )


COSINE_FLAT = ClaimSpec(
    "postln-cosine-flat",
    "Post-LN: the cosine between consecutive layers is flat in depth (no trend).",
    source=f"{SOURCE}, Observation 2 ('cos(h^l, h^(l+1)) does not asymptotically approach 1')",
    criterion=lambda c: _every_alpha(
        c,
        f"change of cos over layers {c.fit_from}–{c.blocks} along its least-squares trend in ln l",
        lambda quantity: Within(quantity, 0.0, c.flat_tolerance),
    ),
    measure=_cosine_flat,
    scope="asymptotically in depth: the post says the cosine does not approach 1",
    note="tolerance [I]; tests 'no trend', not yet 'does not approach 1' (issue 29)",
    figure=FIGURE,
)


# ---------------------------------------------------------------------------------------------
# postln-rank-collapses
# ---------------------------------------------------------------------------------------------
def _rank_collapses(results: Results, config: PrePostConfig) -> Reading:
    post = results[Key.FORWARD_POST]
    return Reading(_per_alpha(post, config, rank_ratio), scale=scale(config))


RANK_COLLAPSES = ClaimSpec(
    "postln-rank-collapses",
    "Post-LN: the effective rank collapses with depth.",
    source=f"{SOURCE}, Observation 2, the effective-rank figure",
    criterion=lambda c: _every_alpha(
        c,
        f"effective rank at layer {c.blocks} / at layer 1",
        lambda quantity: Below(quantity, c.collapse_factor),
    ),
    measure=_rank_collapses,
    scope="the post's effective-rank figure (α = 100); its only rank statement is comparative",
    note="factor [I]; judged at every α, not yet at the figure's α (issue 29)",
    figure=FIGURE,
)


# ---------------------------------------------------------------------------------------------
# preln-keeps-rank-better
# ---------------------------------------------------------------------------------------------
def _keeps_rank(results: Results, config: PrePostConfig) -> Reading:
    pre, post = results[Key.FORWARD_PRE], results[Key.FORWARD_POST]
    gaps = {}
    for alpha in config.alphas:
        toys = _toys(pre, alpha)
        gaps[alpha_part(alpha)] = mean_ci(
            pre.final["effective_rank"][toys] - post.final["effective_rank"][toys]
        )
    return Reading(gaps, scale=scale(config))


KEEPS_RANK = ClaimSpec(
    "preln-keeps-rank-better",
    "Pre-LN keeps the effective rank better than Post-LN.",
    source=f"{SOURCE}, Observation 2 ('Pre-LN maintains representation rank better than "
    "Post-LN'), the effective-rank figure",
    criterion=lambda c: _every_alpha(
        c,
        "last-layer effective rank Pre-LN − Post-LN (same weights)",
        lambda quantity: Above(quantity, 0.0),
    ),
    measure=_keeps_rank,
    scope="the post's effective-rank figure (α = 100)",
    figure=FIGURE,
)

CLAIMS = (NORM_LIKE_SQRT_L, GAP_LIKE_1_OVER_L, COSINE_FLAT, RANK_COLLAPSES, KEEPS_RANK)


def metrics(results: Results, config: PrePostConfig) -> dict[str, float]:
    """Post-LN's largest deviation of the norm from √d (LayerNorm's definition: a test, not a
    claim) and, per α, the mean exponents and last-layer ranks."""
    pre, post = results[Key.FORWARD_PRE], results[Key.FORWARD_POST]
    values = {
        "postln_max_norm_deviation_from_sqrt_d": float(
            np.max(np.abs(post.curves["norm"] / np.sqrt(config.width) - 1))
        )
    }
    for alpha in config.alphas:
        idx = _toys(pre, alpha)
        values[f"preln_norm_exponent_alpha_{alpha:g}"] = float(
            np.mean([norm_exponent(pre, i, config) for i in idx])
        )
        values[f"preln_cosine_gap_exponent_alpha_{alpha:g}"] = float(
            np.mean([cosine_gap_exponent(pre, i, config) for i in idx])
        )
        values[f"postln_final_rank_alpha_{alpha:g}"] = float(
            post.final["effective_rank"][idx].mean()
        )
        values[f"preln_final_rank_alpha_{alpha:g}"] = float(pre.final["effective_rank"][idx].mean())
    return values


def analyse(results: Results, config: PrePostConfig) -> Analysis:
    """Claims and metrics from the stored results."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
