"""Seed 004 §4 and appendix C.3: ReLU and linear losses aligned with bias terms, parted without
(the shared alignment measure of :mod:`relulab.experiments.seed004`)."""

from __future__ import annotations

import numpy as np

from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, AllOf, Below
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.units import Family, Key, pair
from relulab.experiments.seed004 import (
    ALIGNMENT_NOTE,
    SEED,
    alignment_reading,
    finite_mean_ci,
)

__all__ = [
    "BOTH_LAYERS_HIERARCHY",
    "BOTH_LAYERS_XOR",
    "EARLY",
    "HIERARCHY_ALIGNED",
    "HIERARCHY_EXACT",
    "PARALLEL_ALIGNED",
    "HIERARCHY_PARTS",
    "XOR_ALIGNED",
    "XOR_PARTS",
    "alignment_rows",
    "parts_criterion",
    "rescaled_aligned",
    "rescaled_spec",
    "parts_reading",
]

RESCALED = "largest |Δ ln L| ReLU vs linear over the early window, best rescaling t → κt"
NOTE = f"{ALIGNMENT_NOTE}; |ln κ| ≤ ln(1 + max_rescale) [I]"

EARLY = (
    "early in training, over the linear network's early window ('(early) learning dynamics', §1)"
)


def alignment_rows(
    results: Results,
    config: EarlyLinearizationConfig,
    family: Family,
    *,
    additive: bool = False,
    **match,
) -> np.ndarray:
    """Per matched network ``(gap, shift, unshifted gap, κ)``: the family's ReLU loss against
    the linear loss of the same seed and variant (:func:`.measure.alignments`; ``additive``:
    the one-shift gap, a metric)."""
    return measure.alignments(*pair(results, family), config, additive=additive, **match)


def rescaled_aligned(config: EarlyLinearizationConfig) -> Below:
    """Aligned: the mean gap after the best time rescaling (no additive shift) is below
    ``alignment_tolerance`` on its 95 % t interval — the seed's "slight time shift" read as
    mode-wise (§5: "a small, mode-wise time shift"; eq. 14 ∝ 1/s_α)."""
    return Below(RESCALED, config.alignment_tolerance)


def rescaled_spec(
    claim_id: str, statement: str, source: str, measure_fn, *, figure: str, scope: str
) -> ClaimSpec:
    """An alignment claim judged by :func:`rescaled_aligned` on :func:`alignment_rows`."""
    return ClaimSpec(
        claim_id,
        statement,
        source=source,
        criterion=rescaled_aligned,
        measure=measure_fn,
        scope=scope,
        note=NOTE,
        figure=figure,
    )


def parts_criterion(config: EarlyLinearizationConfig) -> AllOf:
    """The seed's "without bias the dynamics diverge" as a paired contrast: the bias-free
    pair's gap exceeds the bias pair's (same seeds), and the bias-free pair is parted (gap
    above the tolerance). The headline is the contrast."""
    return AllOf(
        {
            "contrast": Above("gap(no bias) − gap(bias), paired by seed", 0.0),
            "no bias": Above(RESCALED + ", no bias", config.alignment_tolerance),
        }
    )


def parts_reading(free: np.ndarray, bias: np.ndarray, scale_text: str) -> Reading:
    """The :func:`parts_criterion` reading from the per-seed alignment rows of the bias-free
    and the bias pairs (same seeds, same order)."""
    detail = alignment_reading(free, scale_text).detail
    detail += f"; bias pair per seed: {np.round(bias[:, 0], 3).tolist()}"
    measured = {
        "contrast": finite_mean_ci(free[:, 0] - bias[:, 0]),
        "no bias": finite_mean_ci(free[:, 0]),
    }
    return Reading(measured, detail=detail, scale=scale_text)


def _hierarchy_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = alignment_rows(results, config, Family.HIERARCHY, c=config.constant)
    return alignment_reading(rows, scale(config))


def _hierarchy_free(results: Results, config: EarlyLinearizationConfig) -> Reading:
    free = alignment_rows(results, config, Family.HIERARCHY, c=0.0)
    bias = alignment_rows(results, config, Family.HIERARCHY, c=config.constant)
    return parts_reading(free, bias, scale(config))


def _hierarchy_exact(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = measure.exact_alignments(results[Key.HIERARCHY_RELU], config)
    return alignment_reading(rows, scale(config))


def _parallel_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = alignment_rows(results, config, Family.PARALLEL, c=config.constant)
    return alignment_reading(rows, scale(config))


def _xor_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = alignment_rows(results, config, Family.XOR, c=config.constant)
    return alignment_reading(rows, scale(config))


def _xor_free(results: Results, config: EarlyLinearizationConfig) -> Reading:
    free = alignment_rows(results, config, Family.XOR, c=0.0)
    bias = alignment_rows(results, config, Family.XOR, c=config.constant)
    return parts_reading(free, bias, scale(config))


def _hierarchy_both(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = alignment_rows(results, config, Family.HIERARCHY_BOTH)
    return alignment_reading(rows, scale(config))


def _xor_both(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return alignment_reading(alignment_rows(results, config, Family.XOR_BOTH), scale(config))


HIERARCHY_ALIGNED = rescaled_spec(
    "hierarchy-aligned-with-bias",
    "With bias terms, ReLU and linear networks are functionally similar on the hierarchy (loss "
    "curves aligned, slight time shift).",
    f"{SEED} §4, Fig. 2B",
    _hierarchy_bias,
    figure="alignment.png",
    scope=EARLY,
)

HIERARCHY_PARTS = ClaimSpec(
    "hierarchy-part-without-bias",
    "Without bias terms the dynamics of linear and ReLU networks diverge (hierarchy).",
    source=f"{SEED} §4, Fig. 2B ('when removing bias terms the connection breaks down')",
    criterion=parts_criterion,
    measure=_hierarchy_free,
    scope=EARLY,
    note=NOTE,
    figure="alignment.png",
)

HIERARCHY_EXACT = rescaled_spec(
    "hierarchy-relu-follows-exact-solutions",
    "Bias-ReLU networks agree well with the exact solutions devised for linear networks "
    "(Saxe et al. 2014), with a slight time shift.",
    f"{SEED} §4, Fig. 2B ('note the good agreement of ReLU networks with exact solutions')",
    _hierarchy_exact,
    figure="modes.png",
    scope=EARLY.replace("linear network's", "exact solution's"),
)

PARALLEL_ALIGNED = rescaled_spec(
    "parallel-aligned-with-bias",
    "On the parallel task bias-ReLU networks are aligned to linear networks in early training.",
    f"{SEED} §6.2, Fig. 6B ('with bias ReLU networks are aligned to linear models in early "
    "training')",
    _parallel_bias,
    figure="parallel.png",
    scope=EARLY,
)

XOR_ALIGNED = rescaled_spec(
    "xor-aligned-with-bias",
    "Even on the non-linear XOR problem, bias-ReLU and bias-linear dynamics are matched in "
    "early training.",
    f"{SEED} §4, Fig. 2D",
    _xor_bias,
    figure="alignment.png",
    scope="transiently: early in training ('transiently aligned on non-linear problems', Fig. 2D)",
)

XOR_PARTS = ClaimSpec(
    "xor-part-without-bias",
    "On XOR the correspondence breaks down when bias terms are ablated.",
    source=f"{SEED} §4, Fig. 2D ('as before, the correspondence breaks down')",
    criterion=parts_criterion,
    measure=_xor_free,
    scope=EARLY,
    note=f"{NOTE}; XOR inputs centred [I]",
    figure="alignment.png",
)

BOTH_LAYERS_HIERARCHY = rescaled_spec(
    "both-layer-bias-aligned-hierarchy",
    "With biases in both layers, ReLU and linear dynamics stay aligned on the hierarchy.",
    f"{SEED} appendix C.3, Fig. 9A",
    _hierarchy_both,
    figure="alignment.png",
    scope=EARLY,
)

BOTH_LAYERS_XOR = rescaled_spec(
    "both-layer-bias-aligned-xor",
    "With biases in both layers, early dynamics are also aligned on XOR.",
    f"{SEED} appendix C.3, Fig. 9B",
    _xor_both,
    figure="alignment.png",
    scope="early in training ('early dynamics are also aligned', C.3)",
)
