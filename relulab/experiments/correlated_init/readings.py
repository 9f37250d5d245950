"""Readings of the stored results shared by the claims, the metrics and the figures: the
extreme of a family of estimates (the way today's claims pick the point they judge), their
listing for a claim's detail, and the training scores.
"""

from __future__ import annotations

import numpy as np

from relulab.analysis import Estimate, where
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.store import UnitResult
from relulab.theory.correlated import describe

__all__ = [
    "DIVERGED_LOSS",
    "highest",
    "label",
    "listing",
    "log_validation",
    "lowest",
    "overfitting",
    "plane_phases",
    "training_scores",
    "worst",
]

DIVERGED_LOSS = 1e6  # a diverged student counts with this validation loss [I]


def worst(estimates: dict[str, Estimate], target: float = 0.0) -> tuple[str, Estimate]:
    """The entry whose point value lies farthest from ``target``.

    Example:
        >>> worst({"a": Estimate(0.1, 0, 0.2, 3), "b": Estimate(-0.3, -0.4, -0.2, 3)})[0]
        'b'
    """
    name = max(estimates, key=lambda key: abs(estimates[key].value - target))
    return name, estimates[name]


def lowest(estimates: dict[str, Estimate]) -> tuple[str, Estimate]:
    """The entry with the smallest point value."""
    name = min(estimates, key=lambda key: estimates[key].value)
    return name, estimates[name]


def highest(estimates: dict[str, Estimate]) -> tuple[str, Estimate]:
    """The entry with the largest point value."""
    name = max(estimates, key=lambda key: estimates[key].value)
    return name, estimates[name]


def listing(estimates: dict[str, Estimate]) -> str:
    """``name: value [low, high], n = …`` for every entry, for a claim's detail."""
    return "; ".join(f"{key}: {value.describe()}" for key, value in estimates.items())


def label(k: float, sigma_w2: float) -> str:
    """The name of a probe point in details and listings."""
    return f"k={k:g}, σ_w²={sigma_w2:g}"


def log_validation(result: UnitResult) -> np.ndarray:
    """log10 of the validation loss per network and epoch; diverged students at 1e6 [I]."""
    loss = np.nan_to_num(result.curves["validation_loss"], nan=DIVERGED_LOSS, posinf=DIVERGED_LOSS)
    return np.log10(np.clip(loss, 1e-12, DIVERGED_LOSS))


def training_scores(result: UnitResult) -> dict[str, np.ndarray]:
    """Per init, per seed: the mean over epochs 1…E of log10 validation loss — lower is faster
    and better training (the area under the seed's validation curves) [I]."""
    curves = log_validation(result)
    names = dict.fromkeys(c["init"] for c in result.conditions)
    return {name: curves[where(result.conditions, init=name), 1:].mean(axis=1) for name in names}


def overfitting(result: UnitResult) -> dict[str, np.ndarray]:
    """Per init, per seed: how far the validation loss ends above its minimum over training,
    in decades (0: no sign of overfitting)."""
    curves = log_validation(result)
    names = dict.fromkeys(c["init"] for c in result.conditions)
    return {
        name: curves[rows, -1] - curves[rows].min(axis=1)
        for name in names
        for rows in [where(result.conditions, init=name)]
    }


def plane_phases(result: UnitResult, config: CorrelatedInitConfig) -> np.ndarray:
    """The mean-field phase (``describe``) of every student of the plane."""
    return np.array(
        [
            describe(c["sigma_w2"], c["k"], config.parameterisation, config.train_width).phase
            for c in result.conditions
        ]
    )
