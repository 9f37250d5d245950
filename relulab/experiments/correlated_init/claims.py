"""The scorecard of the correlated-init study: every claim compares seed 003's statement with
simulated or trained networks (the theory-only identities are in the tests).

The claims are declared per section of the seed, one measure function and one
:class:`~relulab.experiments.claims.ClaimSpec` each: :mod:`.claims_phases` (§2, Figs. 1–3),
:mod:`.claims_dead_nodes` (§3, Table 1, appendices C–E) and :mod:`.claims_training` (§4–5,
appendix B). Criteria were fixed from the seed's words before the results were looked at;
tolerances are [I] config fields. Every stochastic measurement is a
:class:`relulab.analysis.Estimate` over independent networks (or seeds) and the verdict
follows its 95 % interval.
"""

from __future__ import annotations

from relulab.analysis import where
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import evaluate
from relulab.experiments.correlated_init.claims_dead_nodes import DEAD_NODE_CLAIMS
from relulab.experiments.correlated_init.claims_phases import PHASE_CLAIMS
from relulab.experiments.correlated_init.claims_training import TRAINING_CLAIMS
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.experiments.correlated_init.readings import (
    log_validation,
    overfitting,
    plane_phases,
    training_scores,
)
from relulab.experiments.correlated_init.units import OPTIMISERS, TEACHERS, Key, trained_on

__all__ = [
    "CLAIMS",
    "DEAD_NODE_CLAIMS",
    "PHASE_CLAIMS",
    "TRAINING_CLAIMS",
    "analyse",
    "log_validation",
    "metrics",
    "overfitting",
    "plane_phases",
    "training_scores",
]

CLAIMS = (*PHASE_CLAIMS, *DEAD_NODE_CLAIMS, *TRAINING_CLAIMS)


def metrics(results: Results, config: CorrelatedInitConfig) -> dict[str, float]:
    """Per init the inactive probability (layers 2…L) and the fraction of units dead on every
    input; per teacher × optimiser × init the mean training score and the diverged students;
    the deeper students' rise above their minimum; the plane's scores."""
    values: dict[str, float] = {}
    dead = results[Key.DEAD_NODES]
    for name in dict.fromkeys(c["init"] for c in dead.conditions):
        rows = where(dead.conditions, init=name)
        values[f"inactive_{name}"] = float(dead.curves["inactive"][rows, 1:].mean())
        values[f"dead_on_all_{name}"] = float(dead.curves["dead_on_all"][rows].mean())
    for t in TEACHERS:
        for o in OPTIMISERS:
            result = results[trained_on(t, o)]
            for name, score in training_scores(result).items():
                values[f"score_{t}_{o}_{name}"] = float(score.mean())
            values[f"diverged_{t}_{o}"] = float(result.diverged.sum())
    for name, rise in overfitting(results[Key.DEEP]).items():
        values[f"deep_overfitting_{name}"] = float(rise.mean())
    for name, score in training_scores(results[Key.PLANE]).items():
        values[f"plane_score_{name}"] = float(score.mean())
    return values


def analyse(results: Results, config: CorrelatedInitConfig) -> Analysis:
    """Claims and metrics from the stored results."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
