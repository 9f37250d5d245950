"""The prepost-ln scorecard: the post's observations as claims (one, Post-LN's flat cosine, a
check: LayerNorm makes it an identity of the setup), plus the metrics.

Each reading is one number per toy (:func:`norm_exponent`, :func:`cosine_gap_exponent`,
:func:`rank_ratio`, :func:`log_gain`), an estimate per α over the toys (Student t), and a claim
judged where the post puts it (issue 29):

* the Pre-LN laws are *asymptotic* ("We observe two asymptotic behaviors"): at each α they are
  fitted over layers ≥ :func:`asymptotic_start` — ``asymptotic_factor`` × l₀, where l₀ = a/b of
  ‖h_l‖² ≈ a + b·l is the depth at which the random walk forgets its start — on the stream deep
  enough to reach it (the long Pre-LN stream for ``long_alphas``);
* Post-LN's cosine "does not asymptotically approach 1": its gap 1 − cos does not shrink as a
  power of l, at every α;
* the effective-rank figure shows α = 100 only: Post-LN's collapse is judged at
  ``figure_alpha``; the other α are metrics;
* Observation 2's "vanishing influence of early layers": a perturbation of h^l is followed to
  h^L (forward-mode); Post-LN's gain must have vanished — at most ``vanishing_gain`` of its
  size at the output (issue 43; "below 1" was met by construction) — and stay below Pre-LN's
  on the same weights, at every α.

Claims over several α are :class:`~relulab.experiments.criteria.AllOf` (one part per α: fails if
any α fails, inconclusive if any straddles); the headline is the first α's. Units are read
through their typed views (:class:`~relulab.experiments.prepost_ln.units.Walk`,
:class:`~relulab.experiments.prepost_ln.units.Stream`,
:class:`~relulab.experiments.prepost_ln.units.Influence`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from relulab.analysis import Estimate, mean_ci, power_law_exponent
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import ClaimSpec, Reading, evaluate
from relulab.experiments.criteria import Above, AllOf, Below, Criterion, Within
from relulab.experiments.prepost_ln.config import SOURCE, PrePostConfig, long_alphas, scale
from relulab.experiments.prepost_ln.units import Influence, Key, Stream, Walk

__all__ = [
    "CLAIMS",
    "COSINE_FLAT",
    "EARLY_INFLUENCE",
    "GAP_LIKE_1_OVER_L",
    "KEEPS_RANK",
    "NORM_LIKE_SQRT_L",
    "RANK_COLLAPSES",
    "alpha_part",
    "analyse",
    "asymptotic_start",
    "cosine_drift",
    "cosine_gap_exponent",
    "forward_stream",
    "influence",
    "log_gain",
    "metrics",
    "norm_exponent",
    "norm_offset",
    "pre_stream",
    "rank_ratio",
]

PerToy = Callable[[Walk, int, PrePostConfig], float]
FIGURE = "prepost.png"


# ---------------------------------------------------------------------------------------------
# Readings: one number per toy.
# ---------------------------------------------------------------------------------------------
def norm_exponent(walk: Walk, i: int, config: PrePostConfig, start: int = 0) -> float:
    """Exponent of ‖h_l‖ in l over layers ≥ ``start`` (``fit_from`` by default)."""
    fit = walk.steps >= (start or config.fit_from)
    return power_law_exponent(walk.steps[fit], walk.norm[i][fit])


def cosine_gap_exponent(walk: Walk, i: int, config: PrePostConfig, start: int = 0) -> float:
    """Exponent of 1 − cos(h_l, h_{l+1}) in l over layers ≥ ``start`` (``fit_from`` by
    default)."""
    gap = 1.0 - walk.cosine[i]
    keep = (walk.steps >= (start or config.fit_from)) & np.isfinite(gap) & (gap > 0)
    return power_law_exponent(walk.steps[keep], gap[keep])


def cosine_drift(walk: Walk, i: int, config: PrePostConfig) -> float:
    """The change of cos(h_l, h_{l+1}) over layers ``fit_from`` … ``blocks`` that its
    least-squares trend in ln l predicts: slope × ln(blocks/fit_from) (the reading of the old
    "flat" criterion, now a metric)."""
    cosine = walk.cosine[i]
    keep = (walk.steps >= config.fit_from) & np.isfinite(cosine)
    slope = np.polyfit(np.log(walk.steps[keep]), cosine[keep], 1)[0]
    return float(slope * np.log(config.blocks / config.fit_from))


def rank_ratio(stream: Stream, i: int, config: PrePostConfig) -> float:
    """Effective rank at the last layer over that at layer 1."""
    ranks = stream.effective_rank[i]
    return float(ranks[-1] / ranks[0])


def log_gain(influence: Influence, i: int, config: PrePostConfig) -> float:
    """log₁₀ of the gain from h^l (l = ``influence_layer``) to the output h^L: the mean over
    inputs of ‖∂h^L/∂h^l · v‖ for unit directions v (a gain multiplies over blocks, so its log
    is the scale on which toys average). A gain of exactly 0 — an influence that vanished
    below the stored precision — is read as the smallest positive float64 (log₁₀ ≈ −308).

    Example:
        >>> from relulab.store import UnitResult
        >>> toys = [{"norm": "post", "alpha": 1.0, "seed": s} for s in (0, 1)]
        >>> unit = UnitResult.forward_only(
        ...     toys, np.arange(2, 4), {"gain": np.array([[0.5, 0.1], [1e-3, 0.0]])},
        ...     {"gain": np.array([0.1, 0.0])})
        >>> view = Influence.read(unit)
        >>> log_gain(view, 0, None), round(log_gain(view, 1, None))
        (-1.0, -308)
    """
    return float(_log10(influence.output_gain[i]))  # a scalar: _log10 gives a float


def _log10(gain: float | np.ndarray) -> float | np.ndarray:
    """log₁₀ of a gain, 0 read as the smallest positive float64."""
    value = np.log10(np.maximum(gain, np.finfo(np.float64).tiny))
    return float(value) if np.ndim(value) == 0 else value


def _toys(view: Walk | Influence, alpha: float, norm: str | None = None) -> list[int]:
    return [
        i
        for i, c in enumerate(view.conditions)
        if np.isclose(c["alpha"], alpha) and (norm is None or c["norm"] == norm)
    ]


def forward_stream(results: Results, norm: str) -> Stream:
    """The ``blocks``-deep forward unit of one norm (``"pre"`` or ``"post"``), as a view."""
    key = Key.FORWARD_PRE if norm == "pre" else Key.FORWARD_POST
    return Stream.read(results[key], key)


def influence(results: Results) -> Influence:
    """The influence probe, as a view."""
    return Influence.read(results[Key.INFLUENCE], Key.INFLUENCE)


def alpha_part(alpha: float) -> str:
    """The name of one α's part of a claim (the key of its measurement).

    Example:
        >>> alpha_part(10.0)
        'α=10'
    """
    return f"α={alpha:g}"


def _per_alpha(view: Walk, config: PrePostConfig, reading: PerToy) -> dict[str, Estimate]:
    """An :class:`Estimate` over the toys of each α, keyed by :func:`alpha_part`."""
    return {
        alpha_part(alpha): mean_ci([reading(view, i, config) for i in _toys(view, alpha)])
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


def norm_offset(walk: Walk, alpha: float) -> float:
    """l₀ = a/b of the fit ‖h_l‖² ≈ a + b·l (mean over toys): the depth after which the √l law of
    a random walk started at ‖h_0‖ applies."""
    squared = walk.norm[_toys(walk, alpha)].mean(axis=0) ** 2
    slope, intercept = np.polyfit(walk.steps, squared, 1)
    return float(intercept / slope)


def asymptotic_start(walk: Walk, alpha: float, config: PrePostConfig) -> int:
    """The first layer of the asymptotic fits at α: ``asymptotic_factor`` × l₀ (and at least
    ``fit_from``), l₀ from :func:`norm_offset`. A norm that does not grow (l₀ ≤ 0 or not finite
    is read as fit_from) or an l₀ beyond the stream's reach is capped at half its depth, so the
    fit always has the deepest layers to judge (and a flat norm fails rather than escapes)."""
    depth = int(walk.steps[-1])
    offset = norm_offset(walk, alpha)
    start = config.fit_from
    if math.isfinite(offset) and offset > 0:
        start = max(start, math.ceil(config.asymptotic_factor * offset))
    return min(start, max(config.fit_from, depth // 2))


def pre_stream(results: Results, config: PrePostConfig, alpha: float) -> Walk:
    """The Pre-LN stream on which the asymptotic laws are read at α: the long one for
    ``long_alphas``, else the ``blocks``-deep one."""
    if any(np.isclose(alpha, a) for a in long_alphas(config)):
        return Walk.read(results[Key.FORWARD_PRE_LONG], Key.FORWARD_PRE_LONG)
    return Walk.read(results[Key.FORWARD_PRE], Key.FORWARD_PRE)


def _asymptotic(results: Results, config: PrePostConfig, reading: Callable) -> Reading:
    """``reading(result, toy, config, start)`` per α over the asymptotic range of its stream."""
    measured, ranges = {}, []
    for alpha in config.alphas:
        stream = pre_stream(results, config, alpha)
        start = asymptotic_start(stream, alpha, config)
        toys = _toys(stream, alpha)
        measured[alpha_part(alpha)] = mean_ci([reading(stream, i, config, start) for i in toys])
        ranges.append(
            f"α={alpha:g}: l₀ = {norm_offset(stream, alpha):.1f}, layers "
            f"{start}–{int(stream.steps[-1])}"
        )
    detail = (
        "‖h_l‖² ≈ a + b·l, l₀ = a/b; fitted over layers ≥ "
        f"{config.asymptotic_factor:g} l₀ ({'; '.join(ranges)})"
    )
    return Reading(measured, detail=detail, scale=scale(config))


_ASYMPTOTIC_SCOPE = (
    "asymptotically in depth ('We observe two asymptotic behaviors'): layers l ≥ "
    "asymptotic_factor × l₀, l₀ = a/b of ‖h_l‖² ≈ a + b·l; a stream deep enough to reach them "
    "(long_blocks for long_alphas)"
)


# ---------------------------------------------------------------------------------------------
# preln-norm-grows-like-sqrt-l, preln-cosine-gap-like-1-over-l
# ---------------------------------------------------------------------------------------------
NORM_LIKE_SQRT_L: ClaimSpec[PrePostConfig] = ClaimSpec(
    "preln-norm-grows-like-sqrt-l",
    "Pre-LN: the residual stream's norm grows like √l (asymptotically).",
    source=f"{SOURCE}, Observation 1, first asymptotic behaviour (‖h^l‖ ~ √l, a random walk)",
    criterion=lambda c: _every_alpha(
        c,
        f"exponent of ‖h_l‖ in l (layers ≥ {c.asymptotic_factor:g} l₀)",
        lambda quantity: Within(quantity, 0.5, c.exponent_tolerance),
    ),
    measure=lambda results, config: _asymptotic(results, config, norm_exponent),
    scope=_ASYMPTOTIC_SCOPE,
    note="tolerance [I]; asymptotic range [I]",
    figure=FIGURE,
    counterexample="gentle blocks, α = 0.1: l₀ = 18/α² = 1800 lies beyond the long stream, "
    "whose norm has barely left ‖h_0‖ (exponent ≈ 0.05 over its deepest half, not ½)",
)

GAP_LIKE_1_OVER_L: ClaimSpec[PrePostConfig] = ClaimSpec(
    "preln-cosine-gap-like-1-over-l",
    "Pre-LN: consecutive layers align, 1 − cos(h_l, h_{l+1}) ~ 1/l (asymptotically).",
    source=f"{SOURCE}, Observation 1, second asymptotic behaviour (1 − cos ~ θ² ~ 1/l)",
    criterion=lambda c: _every_alpha(
        c,
        f"exponent of 1 − cos in l (layers ≥ {c.asymptotic_factor:g} l₀)",
        lambda quantity: Within(quantity, -1.0, 2 * c.exponent_tolerance),
    ),
    measure=lambda results, config: _asymptotic(results, config, cosine_gap_exponent),
    scope=_ASYMPTOTIC_SCOPE,
    note="tolerance [I]; asymptotic range [I]",
    figure=FIGURE,
    counterexample="the same gentle blocks, α = 0.1: every layer the stream reaches has l ≪ l₀, "
    "where 1 − cos ≈ 1/(2(l₀ + l)) is nearly flat (exponent ≈ −0.1, not −1)",
)


# ---------------------------------------------------------------------------------------------
# postln-cosine-flat: "does not asymptotically approach 1"
# ---------------------------------------------------------------------------------------------
def _cosine_stays_away(results: Results, config: PrePostConfig) -> Reading:
    post = Walk.read(results[Key.FORWARD_POST], Key.FORWARD_POST)
    return Reading(
        _per_alpha(post, config, cosine_gap_exponent),
        detail="a cosine that approaches 1 has a gap 1 − cos shrinking like a power of l "
        "(Pre-LN: exponent −1); one that does not keeps exponent ≈ 0",
        scale=scale(config),
    )


COSINE_FLAT: ClaimSpec[PrePostConfig] = ClaimSpec(
    "postln-cosine-flat",
    "Post-LN: the cosine between consecutive layers does not approach 1 with depth.",
    source=f"{SOURCE}, Observation 2 ('cos(h^l, h^(l+1)) does not asymptotically approach 1 "
    "as the layer index increases')",
    criterion=lambda c: _every_alpha(
        c,
        f"exponent of 1 − cos in l (Post-LN, layers ≥ {c.fit_from})",
        lambda quantity: Above(quantity, -2 * c.exponent_tolerance),
    ),
    measure=_cosine_stays_away,
    scope="asymptotically in depth, every α: the gap to 1 does not shrink as l grows",
    note="bound [I]: the 1/l law's tolerance (2 × exponent_tolerance) read from exponent 0",
    figure=FIGURE,
    check="an identity of the setup: LayerNorm returns every layer to zero mean and norm √d, and "
    "each block's weights are drawn independently of the stream, so how far one block turns a "
    "sample, cos(h_l, h_{l+1}) given h_l, has the same distribution at every depth (exactly "
    "under a rotation-invariant init, up to the weights' non-Gaussianity under U(±1/√fan_in)): "
    "no α, width, init or input makes its gap shrink as a power of l",
)


# ---------------------------------------------------------------------------------------------
# postln-rank-collapses (at the figure's α), preln-keeps-rank-better
# ---------------------------------------------------------------------------------------------
def _rank_collapses(results: Results, config: PrePostConfig) -> Reading:
    post = forward_stream(results, "post")
    ratios = [rank_ratio(post, i, config) for i in _toys(post, config.figure_alpha)]
    return Reading(
        mean_ci(ratios) if len(ratios) > 1 else math.nan,
        detail="other α are metrics (postln_rank_ratio_alpha_*)",
        scale=scale(config),
    )


RANK_COLLAPSES: ClaimSpec[PrePostConfig] = ClaimSpec(
    "postln-rank-collapses",
    "Post-LN: the effective rank collapses with depth (the post's figure, α = 100).",
    source=f"{SOURCE}, Observation 2, the effective-rank figure (α = 100)",
    criterion=lambda c: Below(
        f"effective rank at layer {c.blocks} / at layer 1 (Post-LN, α = {c.figure_alpha:g})",
        c.collapse_factor,
    ),
    measure=_rank_collapses,
    untested=lambda c: (
        ""
        if any(math.isclose(c.figure_alpha, a) for a in c.alphas)
        else f"the run has no toy at the figure's α = {c.figure_alpha:g} (alphas = {c.alphas})"
    ),
    scope="the post's effective-rank figure: α = figure_alpha only; its rank statement in words "
    "is the comparison preln-keeps-rank-better",
    note="factor [I]",
    figure=FIGURE,
    counterexample="a shallow stack at the figure's α = 100: over 4 blocks the last layer keeps "
    "0.69 of the first layer's rank (width 16), above ½",
)


def _keeps_rank(results: Results, config: PrePostConfig) -> Reading:
    pre, post = forward_stream(results, "pre"), forward_stream(results, "post")
    gaps = {}
    for alpha in config.alphas:
        toys = _toys(pre, alpha)
        gaps[alpha_part(alpha)] = mean_ci(pre.final_rank[toys] - post.final_rank[toys])
    return Reading(gaps, scale=scale(config))


KEEPS_RANK: ClaimSpec[PrePostConfig] = ClaimSpec(
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
    scope="the post's effective-rank figure (α = 100); the sentence itself names no α",
    figure=FIGURE,
    counterexample="two inputs (N = 2) through gentle blocks (α = 0.1): both streams keep the "
    "inputs, and Post-LN's LayerNorm gives the two rows equal norms, which raises the "
    "uncentred effective rank of two rows above Pre-LN's (difference −0.015 at width 16)",
)


# ---------------------------------------------------------------------------------------------
# postln-early-influence-vanishes
# ---------------------------------------------------------------------------------------------
def influence_part(norm: str, alpha: float) -> str:
    """The name of one part of the influence claim.

    Example:
        >>> influence_part("post", 1.0), influence_part("pre-post", 100.0)
        ('Post-LN α=1', 'Pre-LN − Post-LN α=100')
    """
    who = "Post-LN" if norm == "post" else "Pre-LN − Post-LN"
    return f"{who} {alpha_part(alpha)}"


def _early_influence(results: Results, config: PrePostConfig) -> Reading:
    unit = influence(results)
    measured, detail = {}, []
    middle = unit.gain.shape[1] // 2  # the layer half-way from h^l to the output
    for alpha in config.alphas:
        post_toys = _toys(unit, alpha, "post")
        post = np.array([log_gain(unit, i, config) for i in post_toys])
        pre = np.array([log_gain(unit, i, config) for i in _toys(unit, alpha, "pre")])
        measured[influence_part("post", alpha)] = mean_ci(post)
        measured[influence_part("pre-post", alpha)] = mean_ci(pre - post)
        half_way = np.mean(_log10(unit.gain[post_toys, middle]))
        detail.append(
            f"α={alpha:g}: Post-LN {10**half_way:.3g} at h^{int(unit.steps[middle])}, "
            f"{10 ** post.mean():.3g} at the output; Pre-LN {10 ** pre.mean():.3g}"
        )
    return Reading(
        measured,
        detail=f"geometric-mean gains from h^{config.influence_layer} "
        f"(vanished: at most {config.vanishing_gain:g} at h^{config.blocks}) "
        f"({'; '.join(detail)})",
        scale=scale(config),
    )


def _influence_criterion(config: PrePostConfig) -> AllOf:
    quantity = (
        f"log₁₀ gain ‖∂h^{config.blocks}/∂h^{config.influence_layer}·v‖ (unit v, forward-mode)"
    )
    bound = math.log10(config.vanishing_gain)
    parts: dict[str, Criterion] = {}
    for k, alpha in enumerate(config.alphas):
        name = f"{quantity} at " if k == 0 else "at "
        parts[influence_part("post", alpha)] = Below(f"{name}Post-LN {alpha_part(alpha)}", bound)
        parts[influence_part("pre-post", alpha)] = Above(
            f"Pre-LN − Post-LN at {alpha_part(alpha)} (same weights)", 0.0
        )
    return AllOf(parts, joiner="; ")


EARLY_INFLUENCE: ClaimSpec[PrePostConfig] = ClaimSpec(
    "postln-early-influence-vanishes",
    "Post-LN: a signal from an early layer vanishes on its way to the output (it reaches the "
    "output at most a small fraction of its size: vanishing influence, vanishing gradients), "
    "unlike Pre-LN.",
    source=f"{SOURCE}, Observation 2 ('signals originating from early layers keep shrinking as "
    "they propagate forward, leading to vanishing influence on the output (and correspondingly, "
    "vanishing gradients)'; Post-LN has 'the opposite problem' of Pre-LN)",
    criterion=_influence_criterion,
    measure=_early_influence,
    scope="an early layer (influence_layer) to the output, every α; Pre-LN the contrast",
    note="perturbation infinitesimal (the gradient's forward counterpart) [I]; early layer [I]; "
    "'vanishing' read as a gain to the output of at most vanishing_gain [I] (issue 43: the "
    "earlier reading, any gain below 1, was met by construction)",
    figure=FIGURE,
    counterexample="the post's own Post-LN toy at α = 1 (at the post's sizes and at width 16): "
    "bias-free ReLU blocks are positively homogeneous, so each block gives back, on average, "
    "what its LayerNorm takes from an early perturbation; the gain from h^1 to the output stays "
    "near 1 (0.96 at the post's sizes, 30 toys), far above vanishing_gain. Also the LayerNorm "
    "before the block (Pre-LN's toy in Post-LN's place): the identity path carries h^l to the "
    "output with gain ≥ 1",
)

CLAIMS = (
    NORM_LIKE_SQRT_L,
    GAP_LIKE_1_OVER_L,
    COSINE_FLAT,
    RANK_COLLAPSES,
    KEEPS_RANK,
    EARLY_INFLUENCE,
)


def _alpha_metrics(results: Results, config: PrePostConfig, alpha: float) -> dict[str, float]:
    """One α's metrics: the short-depth exponents (layers ≥ fit_from, ``blocks`` deep), l₀, the
    old "no trend" drift, the rank ratio and last-layer ranks, and the influence gains."""
    pre, post = forward_stream(results, "pre"), forward_stream(results, "post")
    idx, tag = _toys(pre, alpha), f"alpha_{alpha:g}"
    stream = pre_stream(results, config, alpha)
    squared_gap = (1 - stream.cosine[:, :-1]) * stream.norm[:, :-1] ** 2
    product = squared_gap[_toys(stream, alpha)].mean(axis=0)
    start = asymptotic_start(stream, alpha, config)
    unit = influence(results)
    gain = unit.output_gain
    return {
        f"preln_norm_exponent_{tag}": float(np.mean([norm_exponent(pre, i, config) for i in idx])),
        f"preln_cosine_gap_exponent_{tag}": float(
            np.mean([cosine_gap_exponent(pre, i, config) for i in idx])
        ),
        f"preln_norm_offset_l0_{tag}": norm_offset(stream, alpha),
        f"preln_asymptotic_from_layer_{tag}": float(start),
        # the mechanism: (1 − cos)·‖h_l‖² is constant for the random walk once l ≫ l₀
        f"preln_gap_times_squared_norm_last_over_start_{tag}": float(
            product[-1] / product[start - 1]
        ),
        f"postln_cosine_drift_{tag}": float(np.mean([cosine_drift(post, i, config) for i in idx])),
        f"postln_cosine_gap_exponent_{tag}": float(
            np.mean([cosine_gap_exponent(post, i, config) for i in idx])
        ),
        f"postln_rank_ratio_{tag}": float(np.mean([rank_ratio(post, i, config) for i in idx])),
        f"postln_final_rank_{tag}": float(post.final_rank[idx].mean()),
        f"preln_final_rank_{tag}": float(pre.final_rank[idx].mean()),
        f"postln_influence_gain_{tag}": float(gain[_toys(unit, alpha, "post")].mean()),
        f"preln_influence_gain_{tag}": float(gain[_toys(unit, alpha, "pre")].mean()),
    }


def metrics(results: Results, config: PrePostConfig) -> dict[str, float]:
    """Post-LN's largest deviation of the norm from √d (LayerNorm's definition: a test, not a
    claim) and, per α, :func:`_alpha_metrics`."""
    post = forward_stream(results, "post")
    values = {
        "postln_max_norm_deviation_from_sqrt_d": float(
            np.max(np.abs(post.norm / np.sqrt(config.width) - 1))
        )
    }
    for alpha in config.alphas:
        values.update(_alpha_metrics(results, config, alpha))
    return values


def analyse(results: Results, config: PrePostConfig) -> Analysis:
    """Claims and metrics from the stored results."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
