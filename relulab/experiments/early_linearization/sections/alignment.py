"""Seed 004 §4 and appendix C.3: ReLU and linear losses aligned with bias terms, parted without
(the shared alignment measure of :mod:`relulab.experiments.seed004`)."""

from __future__ import annotations

import numpy as np

from relulab.experiments.base import Results
from relulab.experiments.claims import Reading
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.units import Family, pair
from relulab.experiments.seed004 import SEED, alignment_reading, alignment_spec

__all__ = [
    "BOTH_LAYERS_HIERARCHY",
    "BOTH_LAYERS_XOR",
    "EARLY",
    "HIERARCHY_ALIGNED",
    "HIERARCHY_PARTS",
    "XOR_ALIGNED",
    "XOR_PARTS",
    "alignment_rows",
]

EARLY = (
    "early in training, over the linear network's early window ('(early) learning dynamics', §1)"
)


def alignment_rows(
    results: Results, config: EarlyLinearizationConfig, family: Family, **match
) -> np.ndarray:
    """Per matched network ``(gap, shift, unshifted gap)``: the family's ReLU loss against the
    linear loss of the same seed and variant (:func:`.measure.alignments`)."""
    return measure.alignments(*pair(results, family), config, **match)


def _hierarchy_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = alignment_rows(results, config, Family.HIERARCHY, c=config.constant)
    return alignment_reading(rows, scale(config))


def _hierarchy_free(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return alignment_reading(
        alignment_rows(results, config, Family.HIERARCHY, c=0.0), scale(config)
    )


def _xor_bias(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = alignment_rows(results, config, Family.XOR, c=config.constant)
    return alignment_reading(rows, scale(config))


def _xor_free(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return alignment_reading(alignment_rows(results, config, Family.XOR, c=0.0), scale(config))


def _hierarchy_both(results: Results, config: EarlyLinearizationConfig) -> Reading:
    rows = alignment_rows(results, config, Family.HIERARCHY_BOTH)
    return alignment_reading(rows, scale(config))


def _xor_both(results: Results, config: EarlyLinearizationConfig) -> Reading:
    return alignment_reading(alignment_rows(results, config, Family.XOR_BOTH), scale(config))


HIERARCHY_ALIGNED = alignment_spec(
    "hierarchy-aligned-with-bias",
    "With bias terms, ReLU and linear networks are functionally similar on the hierarchy (loss "
    "curves aligned, slight time shift).",
    f"{SEED} §4, Fig. 2B",
    _hierarchy_bias,
    figure="alignment.png",
    scope=EARLY,
)

HIERARCHY_PARTS = alignment_spec(
    "hierarchy-part-without-bias",
    "Without bias terms the dynamics of linear and ReLU networks diverge (hierarchy).",
    f"{SEED} §4, Fig. 2B",
    _hierarchy_free,
    figure="alignment.png",
    part=True,
    scope=EARLY,
)

XOR_ALIGNED = alignment_spec(
    "xor-aligned-with-bias",
    "Even on the non-linear XOR problem, bias-ReLU and bias-linear dynamics are matched in "
    "early training.",
    f"{SEED} §4, Fig. 2D",
    _xor_bias,
    figure="alignment.png",
    scope="transiently: early in training ('transiently aligned on non-linear problems', Fig. 2D)",
)

XOR_PARTS = alignment_spec(
    "xor-part-without-bias",
    "On XOR the correspondence breaks down when bias terms are ablated.",
    f"{SEED} §4, Fig. 2D",
    _xor_free,
    figure="alignment.png",
    part=True,
    scope=EARLY,
)

BOTH_LAYERS_HIERARCHY = alignment_spec(
    "both-layer-bias-aligned-hierarchy",
    "With biases in both layers, ReLU and linear dynamics stay aligned on the hierarchy.",
    f"{SEED} appendix C.3, Fig. 9A",
    _hierarchy_both,
    figure="alignment.png",
    scope=EARLY,
)

BOTH_LAYERS_XOR = alignment_spec(
    "both-layer-bias-aligned-xor",
    "With biases in both layers, early dynamics are also aligned on XOR.",
    f"{SEED} appendix C.3, Fig. 9B",
    _xor_both,
    figure="alignment.png",
    scope="early in training ('early dynamics are also aligned', C.3)",
)
