"""Readings of the stored results shared by the claims, the metrics and the figures: a family
of estimates listed for a claim's detail, the training scores, divergence, the starting point of
training (initial loss and output variance) and the overfitting rise.
"""

from __future__ import annotations

import numpy as np

from relulab.analysis import Estimate, where
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.store import UnitResult
from relulab.theory.correlated import describe

__all__ = [
    "DIVERGED_LOSS",
    "divergence",
    "initial_state",
    "label",
    "listing",
    "log_validation",
    "overfitting",
    "plane_phases",
    "training_scores",
]

DIVERGED_LOSS = 1e6  # a diverged student counts with this validation loss [I]


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


def training_scores(
    result: UnitResult, last_epoch: int | None = None, drop_diverged: bool = False
) -> dict[str, np.ndarray]:
    """Per init, per seed: the mean over epochs 1…E (1…``last_epoch``) of log10 validation
    loss — lower is faster and better training (the area under the seed's validation curves)
    [I]. With ``drop_diverged`` the students that diverged are left out (their divergence is
    reported apart, :func:`divergence`)."""
    curves = log_validation(result)[:, 1 : (None if last_epoch is None else last_epoch + 1)]
    names = dict.fromkeys(c["init"] for c in result.conditions)
    kept = ~np.asarray(result.diverged, bool) if drop_diverged else np.ones(len(curves), bool)
    return {
        name: curves[
            where(result.conditions, init=name)[kept[where(result.conditions, init=name)]]
        ].mean(axis=1)
        for name in names
    }


def divergence(result: UnitResult) -> dict[str, tuple[int, int]]:
    """Per init: (students that diverged, students)."""
    names = dict.fromkeys(c["init"] for c in result.conditions)
    diverged = np.asarray(result.diverged, bool)
    return {
        name: (int(diverged[rows].sum()), len(rows))
        for name in names
        for rows in [where(result.conditions, init=name)]
    }


def initial_state(result: UnitResult) -> dict[str, tuple[float, float]]:
    """Per init, means over seeds of the log10 validation loss before training (epoch 0) and of
    the output variance on the validation inputs at initialisation: the starting point of the
    speed comparisons (a smaller initial output scale starts closer to the standardised
    target's mean)."""
    curves = log_validation(result)
    variance = result.arrays.get("initial_output_variance")
    names = dict.fromkeys(c["init"] for c in result.conditions)
    return {
        name: (
            float(curves[rows, 0].mean()),
            float(np.asarray(variance)[rows].mean()) if variance is not None else float("nan"),
        )
        for name in names
        for rows in [where(result.conditions, init=name)]
    }


def overfitting(result: UnitResult, drop_diverged: bool = False) -> dict[str, np.ndarray]:
    """Per init, per seed: how far the validation loss ends above its minimum over training,
    in decades (0: no sign of overfitting); with ``drop_diverged`` the students that diverged
    are left out (a diverged student's rise measures its divergence, not overfitting)."""
    curves = log_validation(result)
    kept = ~np.asarray(result.diverged, bool) if drop_diverged else np.ones(len(curves), bool)
    names = dict.fromkeys(c["init"] for c in result.conditions)
    return {
        name: curves[rows, -1] - curves[rows].min(axis=1)
        for name in names
        for rows in [where(result.conditions, init=name)[kept[where(result.conditions, init=name)]]]
    }


def plane_phases(result: UnitResult, config: CorrelatedInitConfig) -> np.ndarray:
    """The mean-field phase (``describe``) of every student of the plane."""
    return np.array(
        [
            describe(c["sigma_w2"], c["k"], config.parameterisation, config.train_width).phase
            for c in result.conditions
        ]
    )
