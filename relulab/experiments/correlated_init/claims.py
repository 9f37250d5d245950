"""The scorecard of the correlated-init study: every claim compares seed 003's statement with
simulated or trained networks (the theory-only identities are in the tests).

The claims are declared per section of the seed, one measure function and one
:class:`~relulab.experiments.claims.ClaimSpec` each: :mod:`.claims_phases` (§2, Figs. 1–3),
:mod:`.claims_dead_nodes` (§3, Table 1, appendices C–E) and :mod:`.claims_training` (§4–5,
appendix B). Criteria come from the seed's words (issue 31 tabled every change on the docs
page); tolerances are [I] config fields. Every stochastic measurement is a
:class:`relulab.analysis.Estimate` over independent networks (or seeds) and the verdict
follows its interval — simultaneous over the points where a claim judges several
(:class:`~relulab.experiments.criteria.Every`).
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
    divergence,
    initial_state,
    log_validation,
    overfitting,
    plane_phases,
    training_scores,
)
from relulab.experiments.correlated_init.units import (
    OPTIMISERS,
    TEACHERS,
    Key,
    deep_key,
    trained_on,
)
from relulab.store import UnitResult

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
    """Per init the inactive probability (layers 2…L and layer 2) and the fraction of units
    dead on every input; per teacher × optimiser × init the mean training score, the initial
    log10 validation loss and output variance (the speed claims' starting point) and the
    diverged students; the deeper students' rise above their minimum per optimiser; the
    plane's scores; ACI's score and initial output variance per σ_b² of the bias sweep."""
    values: dict[str, float] = {}
    dead = results[Key.DEAD_NODES]
    for name in dict.fromkeys(c["init"] for c in dead.conditions):
        rows = where(dead.conditions, init=name)
        values[f"inactive_{name}"] = float(dead.curves["inactive"][rows, 1:].mean())
        values[f"inactive_layer2_{name}"] = float(dead.curves["inactive"][rows, 1].mean())
        values[f"dead_on_all_{name}"] = float(dead.curves["dead_on_all"][rows].mean())
    for t in TEACHERS:
        for o in OPTIMISERS:
            values.update(_training_metrics(results[trained_on(t, o)], f"{t}_{o}"))
    for o in config.deep_optimisers:
        suffix = "" if o == "adam" else f"_{o}"
        for name, rise in overfitting(results[deep_key(o)], True).items():
            values[f"deep_overfitting{suffix}_{name}"] = float(rise.mean())
        for name, (count, _) in divergence(results[deep_key(o)]).items():
            values[f"deep_diverged{suffix}_{name}"] = float(count)
    for name, score in training_scores(results[Key.PLANE]).items():
        values[f"plane_score_{name}"] = float(score.mean())
    if config.bias_sweep:
        bias = results[Key.BIAS]
        for name, score in training_scores(bias).items():
            values[f"bias_score_{name}"] = float(score.mean())
        for name, (_, variance) in initial_state(bias).items():
            values[f"bias_initial_variance_{name}"] = variance
    return values


def _training_metrics(result: UnitResult, unit: str) -> dict[str, float]:
    values = {
        f"score_{unit}_{name}": float(score.mean())
        for name, score in training_scores(result).items()
    }
    for name, (loss, variance) in initial_state(result).items():
        values[f"initial_loss_{unit}_{name}"] = loss
        values[f"initial_variance_{unit}_{name}"] = variance
    for name, (count, _) in divergence(result).items():
        values[f"diverged_{unit}_{name}"] = float(count)
    values[f"diverged_{unit}"] = float(result.diverged.sum())
    return values


def analyse(results: Results, config: CorrelatedInitConfig) -> Analysis:
    """Claims and metrics from the stored results."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
