"""Readings of the stored results shared by the claims, the metrics and the figures: a family
of estimates listed for a claim's detail, divergence under the study's one policy, the training
scores and overfitting rises with each student's divergence beside them, the comparisons of two
inits (the probability of superiority, a diverged student ranked last), the starting point of
training (initial loss and output variance).

**One divergence policy** (:func:`divergence_policy`, :mod:`relulab.analysis.divergence`): a
student diverged when the engine froze it (a non-finite training loss), when a recorded
validation loss is non-finite, or when one exceeds the stated cap ``divergence_cap`` [I]. Every
claim that reads a student counts it the same way — diverged, in its ``Reading(diverged=…)`` —
and every comparison ranks it last (:func:`superiority`); no claim scores it at a sentinel loss
and none leaves it out. Metrics that average scores average the students that did not diverge,
beside the count of those that did (:func:`kept_mean`, :func:`divergence`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from relulab.analysis import (
    DivergencePolicy,
    Estimate,
    divergence_counts,
    superiority_ci,
    where,
)
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.experiments.correlated_init.units import Students
from relulab.theory.correlated import describe

__all__ = [
    "Group",
    "difference",
    "divergence",
    "divergence_policy",
    "diverged",
    "init_rows",
    "initial_state",
    "kept_mean",
    "label",
    "listing",
    "log_validation",
    "lowest",
    "overfitting",
    "plane_phases",
    "row_correlation_change",
    "superiority",
    "training_scores",
]


def listing(estimates: dict[str, Estimate]) -> str:
    """``name: value [low, high], n = …`` for every entry, for a claim's detail."""
    return "; ".join(f"{key}: {value.describe()}" for key, value in estimates.items())


def label(k: float, sigma_w2: float) -> str:
    """The name of a probe point in details and listings."""
    return f"k={k:g}, σ_w²={sigma_w2:g}"


# ---------------------------------------------------------------------------------------------
# divergence
# ---------------------------------------------------------------------------------------------
def divergence_policy(config: CorrelatedInitConfig) -> DivergencePolicy:
    """The study's one policy: frozen by the engine, a non-finite validation loss, or one above
    ``divergence_cap`` [I].

    Example:
        >>> divergence_policy(CorrelatedInitConfig()).describe()
        'diverged: frozen by the engine, a non-finite validation loss, or one above 1e+06'
    """
    return DivergencePolicy(config.divergence_cap, "validation loss")


def diverged(students: Students, config: CorrelatedInitConfig) -> np.ndarray:
    """Per student, whether it diverged under :func:`divergence_policy` (its whole record:
    a student that diverged counts as diverged in every claim that reads it, at every epoch)."""
    return divergence_policy(config).diverged(students.diverged, students.validation_loss)


def init_rows(students: Students) -> dict[str, np.ndarray]:
    """Per init (in stored order), its students' rows."""
    names = dict.fromkeys(c["init"] for c in students.conditions)
    return {name: where(students.conditions, init=name) for name in names}


def divergence(students: Students, config: CorrelatedInitConfig) -> dict[str, tuple[int, int]]:
    """Per init: (students that diverged, students), under the study's policy."""
    return divergence_counts(diverged(students, config), init_rows(students))


# ---------------------------------------------------------------------------------------------
# scores, rises and their comparison
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Group:
    """One init's students in one unit: a value per student (lower is better: a score, a rise)
    and whether each diverged."""

    values: np.ndarray
    diverged: np.ndarray

    def shifted(self, by: float) -> Group:
        """The values moved by ``by`` (a margin); divergence unchanged."""
        return Group(self.values + by, self.diverged)

    @property
    def counts(self) -> tuple[int, int]:
        """(diverged, students)."""
        return int(np.sum(self.diverged)), len(self.values)


def log_validation(students: Students) -> np.ndarray:
    """log10 of the validation loss per student and epoch; a non-finite loss stays non-finite
    (no sentinel: the divergence policy marks that student)."""
    loss = np.asarray(students.validation_loss, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log10(np.where(np.isfinite(loss), np.maximum(loss, 1e-12), loss))


def training_scores(
    students: Students, config: CorrelatedInitConfig, last_epoch: int | None = None
) -> dict[str, Group]:
    """Per init: every student's score — the mean over epochs 1…E (1…``last_epoch``) of log10
    validation loss, lower is faster and better training (the area under the seed's validation
    curves) [I] — and whether it diverged (:func:`diverged`)."""
    curves = log_validation(students)[:, 1 : (None if last_epoch is None else last_epoch + 1)]
    flags = diverged(students, config)
    with np.errstate(invalid="ignore"):
        scores = curves.mean(axis=1)
    return {name: Group(scores[rows], flags[rows]) for name, rows in init_rows(students).items()}


def overfitting(students: Students, config: CorrelatedInitConfig) -> dict[str, Group]:
    """Per init: how far each student's validation loss ends above its minimum over training,
    in decades (0: no sign of overfitting), and whether it diverged (a diverged student's rise
    is not finite: it ranks last)."""
    curves = log_validation(students)
    flags = diverged(students, config)
    with np.errstate(invalid="ignore"):
        rise = curves[:, -1] - np.where(np.isfinite(curves), curves, np.inf).min(axis=1)
    return {name: Group(rise[rows], flags[rows]) for name, rows in init_rows(students).items()}


def kept_mean(group: Group) -> float:
    """The mean over the students that did not diverge (a metric; ``nan`` if none); the count
    of the others is reported beside it (:func:`divergence`)."""
    kept = np.asarray(group.values)[~np.asarray(group.diverged, bool)]
    kept = kept[np.isfinite(kept)]
    return float(kept.mean()) if len(kept) else float("nan")


def superiority(first: Group, second: Group, level: float = 0.95) -> Estimate:
    """P(a student of ``first`` ends better — a lower value — than one of ``second``), a
    diverged student ranked last, with the exact interval of
    :func:`~relulab.analysis.superiority_ci` (students paired in seed order). When every pair
    ties (both diverged) neither ends better: ½ with the interval [0, 1].

    Example:
        >>> no = np.zeros(10, bool)
        >>> superiority(Group(np.zeros(10), no), Group(np.ones(10), no)).value
        1.0
    """
    estimate = superiority_ci(first.values, second.values, first.diverged, second.diverged, level)
    if estimate.n == 0:
        return Estimate(0.5, 0.0, 1.0, 0, level, estimate.method)
    return estimate


def lowest(estimates: Mapping[str, Estimate]) -> Estimate:
    """The smallest of several quantities, each with its interval: value, low and high the
    smallest of theirs. It covers the minimum whenever every interval covers its own, so its
    level is at least ``1 − Σ (1 − level_i)`` (Bonferroni)."""
    values = list(estimates.values())
    level = 1.0 - sum(1.0 - e.level for e in values)
    return Estimate(
        min(e.value for e in values),
        min(e.low for e in values),
        min(e.high for e in values),
        min(e.n for e in values),
        level,
        "the smallest of " + ", ".join(estimates),
    )


def difference(first: Estimate, second: Estimate) -> Estimate:
    """``first − second`` with the interval [low₁ − high₂, high₁ − low₂]: it covers the
    difference whenever both intervals cover theirs, whatever their dependence, so its level is
    at least ``level₁ + level₂ − 1`` (Bonferroni).

    Example:
        >>> gap = difference(Estimate(0.9, 0.8, 1.0, 10, 0.975), Estimate(0.5, 0.2, 0.8, 10, 0.975))
        >>> gap.describe(), gap.level
        ('0.4 [0, 0.8], n = 10', 0.95)
    """
    return Estimate(
        round(first.value - second.value, 12),
        round(first.low - second.high, 12),
        round(first.high - second.low, 12),
        min(first.n, second.n),
        round(first.level + second.level - 1.0, 12),
        "difference of two intervals (Bonferroni)",
    )


def initial_state(students: Students) -> dict[str, tuple[float, float]]:
    """Per init, means over seeds of the log10 validation loss before training (epoch 0) and of
    the output variance on the validation inputs at initialisation: the starting point of the
    speed comparisons (a smaller initial output scale starts closer to the standardised
    target's mean)."""
    curves = log_validation(students)
    variance = students.initial_output_variance
    return {
        name: (
            float(curves[rows, 0].mean()),
            float(np.asarray(variance)[rows].mean()) if variance is not None else float("nan"),
        )
        for name, rows in init_rows(students).items()
    }


def row_correlation_change(students: Students, config: CorrelatedInitConfig) -> dict[str, float]:
    """Per init, the mean over the students that did not diverge of the change of their hidden
    weights' row correlation during training (:func:`~.training.row_correlation`; ``nan`` in
    stores made before issue 45)."""
    if students.initial_row_correlation is None or students.final_row_correlation is None:
        return {}
    change = np.asarray(students.final_row_correlation) - np.asarray(
        students.initial_row_correlation
    )
    flags = diverged(students, config)
    return {
        name: kept_mean(Group(change[rows], flags[rows]))
        for name, rows in init_rows(students).items()
    }


def plane_phases(students: Students, config: CorrelatedInitConfig) -> np.ndarray:
    """The mean-field phase (``describe``) of every student of the plane."""
    return np.array(
        [
            describe(c["sigma_w2"], c["k"], config.parameterisation, config.train_width).phase
            for c in students.conditions
        ]
    )
