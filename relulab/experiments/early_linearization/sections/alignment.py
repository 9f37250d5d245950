"""Seed 004 §4 and appendix C.3: ReLU and linear losses aligned with bias terms, parted without
(the shared alignment measure of :mod:`relulab.experiments.seed004`).

Every pair read is counted under the study's divergence policy (:mod:`..scoring`): a diverged
ReLU or linear network ranks last, so an alignment or a contrast over it cannot hold."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import AllOf, Below
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.scoring import counts_text, group_counts, scored_ci
from relulab.experiments.early_linearization.units import Family, Key, pair
from relulab.experiments.seed004 import ALIGNMENT, ALIGNMENT_NOTE, SEED, alignment_reading, parts

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
    "bias_windows",
    "pair_reading",
    "parts_criterion",
    "parts_reading",
    "rescaled_aligned",
    "rescaled_spec",
    "scored_alignment",
]

RESCALED = ALIGNMENT
NOTE = f"{ALIGNMENT_NOTE}; κ ≤ 1 + max_rescale, or eq. 14's own κ (rescale_bound) [I]"

WEAK_BIAS = "a hidden bias too weak to push the units on (c = 0.01)"

EARLY = (
    "early in training, over the linear network's early window ('(early) learning dynamics', §1)"
)
EARLY_PAIRS = (
    "early in training: both pairs over the bias pair's early window (its linear network's "
    "95 % drop), where the seed says the bias pair is aligned"
)


def alignment_rows(
    results: Results,
    config: EarlyLinearizationConfig,
    family: Family,
    *,
    additive: bool = False,
    window_ends: np.ndarray | None = None,
    **match,
) -> np.ndarray:
    """Per matched network ``(gap, shift, unshifted gap, κ)``: the family's ReLU loss against
    the linear loss of the same seed and variant (:func:`.measure.alignments`; ``additive``:
    the one-shift gap, a metric; ``window_ends``: per network, in place of its linear twin's
    early window)."""
    relu, linear = pair(results, family)
    return measure.alignments(
        relu, linear, config, additive=additive, window_ends=window_ends, **match
    )


def pair_divergence(
    results: Results, family: Family, **match
) -> tuple[dict[str, tuple[int, int]], np.ndarray]:
    """Divergence counts of the family's ReLU and linear networks matching ``match``, and per
    pair whether either diverged (:func:`..scoring.group_counts`)."""
    relu, linear = pair(results, family)
    return group_counts({"ReLU": relu, "linear": linear}, **match)


def scored_alignment(
    rows: np.ndarray,
    scale_text: str,
    counts: dict[str, tuple[int, int]] | None = None,
    mask: np.ndarray | None = None,
) -> Reading:
    """:func:`~relulab.experiments.seed004.alignment_reading` under the study's divergence
    policy: the mean gap is NaN (no hold) when a pair read diverged, and the counts are in the
    reading and its detail."""
    estimate, note = scored_ci(rows[:, 0], mask)
    detail = "; ".join(filter(None, [alignment_reading(rows, scale_text).detail, note]))
    detail = "; ".join(filter(None, [detail, counts_text(counts or {})]))
    return Reading(estimate, detail=detail, scale=scale_text, diverged=counts or {})


def pair_reading(
    results: Results, config: EarlyLinearizationConfig, family: Family, **match
) -> Reading:
    """The alignment reading of the family's ReLU against its linear networks (``match``)."""
    rows = alignment_rows(results, config, family, **match)
    return scored_alignment(rows, scale(config), *pair_divergence(results, family, **match))


def rescaled_aligned(config: EarlyLinearizationConfig) -> Below:
    """Aligned: the mean gap after the best time rescaling (1 ≤ κ ≤ 1 + r, no additive shift)
    is below ``alignment_tolerance`` on its 95 % t interval — the seed's "slight time shift"
    read as mode-wise (§5: "a small, mode-wise time shift"; eq. 14 ∝ 1/s_α), the one convention
    of both seed-004 studies (:func:`relulab.experiments.seed004.aligned`)."""
    return Below(RESCALED, config.alignment_tolerance)


def rescaled_spec(
    claim_id: str,
    statement: str,
    source: str,
    measure_fn: Callable[[Results, EarlyLinearizationConfig], Reading],
    *,
    figure: str,
    scope: str,
    counterexample: str = "",
    check: str = "",
) -> ClaimSpec[EarlyLinearizationConfig]:
    """An alignment claim judged by :func:`rescaled_aligned` on :func:`alignment_rows` (a check
    with ``check``)."""
    return ClaimSpec(
        claim_id,
        statement,
        source=source,
        criterion=rescaled_aligned,
        measure=measure_fn,
        scope=scope,
        note=NOTE,
        figure=figure,
        counterexample=counterexample,
        check=check,
    )


def parts_criterion(config: EarlyLinearizationConfig) -> AllOf:
    """The seed's "without bias the dynamics diverge" as a paired contrast over the bias pair's
    window (:func:`relulab.experiments.seed004.parts`, both studies' one convention): the
    bias-free pair's gap exceeds the bias pair's (same seeds), and the bias-free pair is parted
    (gap above the tolerance). The headline is the contrast."""
    return parts(config)


def parts_reading(
    free: np.ndarray,
    bias: np.ndarray,
    scale_text: str,
    counts: dict[str, tuple[int, int]] | None = None,
    mask: np.ndarray | None = None,
    windows: np.ndarray | None = None,
) -> Reading:
    """The :func:`parts_criterion` reading from the per-seed alignment rows of the bias-free
    and the bias pairs (same seeds, same order, over the same ``windows``, shown in the
    detail); ``mask``: per seed, whether any of its four networks diverged (then no part
    holds)."""
    detail = alignment_reading(free, scale_text).detail
    detail += f"; bias pair per seed: {np.round(bias[:, 0], 3).tolist()}"
    if windows is not None:
        detail += f"; windows (steps, the bias pair's) {np.round(windows).tolist()}"
    contrast, note = scored_ci(free[:, 0] - bias[:, 0], mask)
    detail = "; ".join(filter(None, [detail, note, counts_text(counts or {})]))
    measured = {"contrast": contrast, "no bias": scored_ci(free[:, 0], mask)[0]}
    return Reading(measured, detail=detail, scale=scale_text, diverged=counts or {})


def bias_windows(results: Results, config: EarlyLinearizationConfig, family: Family) -> np.ndarray:
    """Per seed, the early window of the family's bias-linear network (c = ``constant``): the
    stretch of training both pairs of a parts claim are judged over. It is fixed by the linear
    network with bias, whose curve eq. 7 gives from the data and its initial weights (the check
    ``linear-theory-matches-linear-networks``), never by a bias-free reference that may not
    learn at all (centred XOR: flat, so its own 95 % window is noise)."""
    return measure.linear_windows(pair(results, family)[1], config, c=config.constant)


def _parts(results: Results, config: EarlyLinearizationConfig, family: Family) -> Reading:
    """The parts reading of a family: its bias-free pair against its bias pair, by seed, both
    over the bias pair's window (:func:`bias_windows`)."""
    windows = bias_windows(results, config, family)
    free = alignment_rows(results, config, family, window_ends=windows, c=0.0)
    bias = alignment_rows(results, config, family, window_ends=windows, c=config.constant)
    counts_free, mask_free = pair_divergence(results, family, c=0.0)
    counts_bias, mask_bias = pair_divergence(results, family, c=config.constant)
    mask = mask_free | mask_bias
    return parts_reading(free, bias, scale(config), counts_free | counts_bias, mask, windows)


def _hierarchy_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return pair_reading(results, config, Family.HIERARCHY, c=config.constant)


def _hierarchy_free(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return _parts(results, config, Family.HIERARCHY)


def _hierarchy_exact(results: Results, config: EarlyLinearizationConfig) -> Reading:
    relu = results[Key.HIERARCHY_RELU]
    rows = measure.exact_alignments(relu, config)
    counts, mask = group_counts({"ReLU": relu}, c=config.constant)
    return scored_alignment(rows, scale(config), counts, mask)


def _parallel_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return pair_reading(results, config, Family.PARALLEL, c=config.constant)


def _xor_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return pair_reading(results, config, Family.XOR, c=config.constant)


def _xor_free(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return _parts(results, config, Family.XOR)


def _hierarchy_both(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return pair_reading(results, config, Family.HIERARCHY_BOTH)


def _xor_both(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return pair_reading(results, config, Family.XOR_BOTH)


HIERARCHY_ALIGNED = rescaled_spec(
    "hierarchy-aligned-with-bias",
    "With bias terms, ReLU and linear networks are functionally similar on the hierarchy (loss "
    "curves aligned, slight time shift).",
    f"{SEED} §4, Fig. 2B",
    _hierarchy_bias,
    figure="alignment.png",
    scope=EARLY,
    counterexample=WEAK_BIAS + ": the ReLU loss parts from the linear one (g ≈ 0.2–0.24)",
)

HIERARCHY_PARTS: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "hierarchy-part-without-bias",
    "Without bias terms the dynamics of linear and ReLU networks diverge (hierarchy).",
    source=f"{SEED} §4, Fig. 2B ('when removing bias terms the connection breaks down')",
    criterion=parts_criterion,
    measure=_hierarchy_free,
    scope=EARLY_PAIRS,
    note=NOTE,
    figure="alignment.png",
    counterexample="wide networks (hidden = 256): the bias-free ReLU network follows the linear "
    "one about as closely as the bias network does (contrast ≈ 0.01, g(no bias) ≈ 0.07)",
)

HIERARCHY_EXACT = rescaled_spec(
    "hierarchy-relu-follows-exact-solutions",
    "Bias-ReLU networks agree well with the exact solutions devised for linear networks "
    "(Saxe et al. 2014), with a slight time shift.",
    f"{SEED} §4, Fig. 2B ('note the good agreement of ReLU networks with exact solutions')",
    _hierarchy_exact,
    figure="modes.png",
    scope=EARLY.replace("linear network's", "exact solution's"),
    counterexample=WEAK_BIAS + ": the ReLU networks do not follow eq. 7 (g ≈ 0.23)",
)

PARALLEL_ALIGNED = rescaled_spec(
    "parallel-aligned-with-bias",
    "On the parallel task bias-ReLU networks are aligned to linear networks in early training.",
    f"{SEED} §6.2, Fig. 6B ('with bias ReLU networks are aligned to linear models in early "
    "training')",
    _parallel_bias,
    figure="parallel.png",
    scope=EARLY,
    counterexample=WEAK_BIAS + ": the ReLU loss parts from the linear one (g ≈ 0.25)",
)

XOR_ALIGNED = rescaled_spec(
    "xor-aligned-with-bias",
    "Even on the non-linear XOR problem, bias-ReLU and bias-linear dynamics are matched in "
    "early training.",
    f"{SEED} §4, Fig. 2D",
    _xor_bias,
    figure="alignment.png",
    scope="transiently: early in training ('transiently aligned on non-linear problems', Fig. 2D)",
    counterexample=WEAK_BIAS + ": on centred XOR the ReLU network parts from the linear one as the "
    "bias-free one does (g ≈ 21)",
)

XOR_PARTS: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "xor-part-without-bias",
    "On XOR the correspondence breaks down when bias terms are ablated.",
    source=f"{SEED} §4, Fig. 2D ('as before, the correspondence breaks down')",
    criterion=parts_criterion,
    measure=_xor_free,
    scope=EARLY_PAIRS,
    note=f"{NOTE}; XOR inputs centred [I]",
    figure="alignment.png",
    counterexample="XOR on {0, 1}² (xor_levels = (0, 1)): the inputs' mean is an input constant, "
    "a bias in disguise (§3), and the 'bias-free' pair stays together (contrast ≈ 0)",
)

BOTH_LAYERS_HIERARCHY = rescaled_spec(
    "both-layer-bias-aligned-hierarchy",
    "With biases in both layers, ReLU and linear dynamics stay aligned on the hierarchy.",
    f"{SEED} appendix C.3, Fig. 9A",
    _hierarchy_both,
    figure="alignment.png",
    scope=EARLY,
    counterexample=WEAK_BIAS + " beside the readout bias: the ReLU loss parts once ȳ is learned "
    "(g ≈ 0.5)",
)

BOTH_LAYERS_XOR = rescaled_spec(
    "both-layer-bias-aligned-xor",
    "With biases in both layers, early dynamics are also aligned on XOR.",
    f"{SEED} appendix C.3, Fig. 9B",
    _xor_both,
    figure="alignment.png",
    scope="early in training ('early dynamics are also aligned', C.3)",
    check="an identity of the setup at the seed's small initialisation: on centred XOR the "
    "affine part of the targets is ȳ, so ȳ is all the linear network learns and its early "
    "window is the fit of ȳ — which the readout bias b2 makes in both networks by the same "
    "gradient (the summed error) while the hidden path is still O(σ²). Any hidden layer passes: "
    "with the hidden bias almost gone (c = 0.01) g = 0.008, at the preset 0.006 (0.006 before "
    "any rescaling); it fails only far outside the seed's initialisation (σ² = 0.02: 0.39)",
)
