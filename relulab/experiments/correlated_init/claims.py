"""The scorecard of the correlated-init study: every claim compares seed 003's statement with
simulated or trained networks; the comparisons of relulab's own theory with relulab's
simulation of the same model, and the facts that hold by construction, are *checks* (run and
shown, never counted: ``check=`` on their specs says why).

The claims are declared per section of the seed, one measure function and one
:class:`~relulab.experiments.claims.ClaimSpec` each: :mod:`.claims_phases` (§2, Figs. 1–3),
:mod:`.claims_asymmetric` (§3's RAI/RAAI phases, appendices D.1, E.1, E.2),
:mod:`.claims_dead_nodes` (Table 1, appendices C–E), :mod:`.claims_training` (§4–6),
:mod:`.claims_appendix_b` (appendix B) and :mod:`.claims_overfitting` (§5's deeper
students). Criteria come from the
seed's words (issues 31 and 42 tabled every change on the docs page); tolerances are [I] config
fields. Every stochastic measurement is a :class:`relulab.analysis.Estimate` over independent
networks (or seeds) and the verdict follows its interval — simultaneous over the points where a
claim judges several (:class:`~relulab.experiments.criteria.Every`). Trained students follow
one divergence policy (:func:`~.readings.divergence_policy`): counted diverged in every claim
that reads them, ranked last in every comparison.
"""

from __future__ import annotations

from relulab.analysis import where
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import evaluate
from relulab.experiments.correlated_init.claims_appendix_b import APPENDIX_B_CLAIMS, LATE_CLAIMS
from relulab.experiments.correlated_init.claims_asymmetric import ASYMMETRIC_PHASE_CLAIMS
from relulab.experiments.correlated_init.claims_dead_nodes import DEAD_NODE_CLAIMS
from relulab.experiments.correlated_init.claims_overfitting import OVERFITTING_CLAIMS, deeper_rises
from relulab.experiments.correlated_init.claims_phases import PHASE_CLAIMS
from relulab.experiments.correlated_init.claims_training import (
    RAAI_CLAIMS,
    SECTION5_CLAIMS,
    WINDOW_TRAINS_FASTEST,
)
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.experiments.correlated_init.readings import (
    divergence,
    initial_state,
    kept_mean,
    log_validation,
    overfitting,
    plane_phases,
    row_correlation_change,
    training_scores,
)
from relulab.experiments.correlated_init.units import (
    OPTIMISERS,
    TEACHERS,
    DeadNodes,
    Key,
    Students,
    deep_key,
    trained_on,
)

__all__ = [
    "ASYMMETRIC_PHASE_CLAIMS",
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

SPEED_CLAIMS = (*RAAI_CLAIMS, *APPENDIX_B_CLAIMS, *SECTION5_CLAIMS, *LATE_CLAIMS)
TRAINING_CLAIMS = (*SPEED_CLAIMS, *OVERFITTING_CLAIMS, WINDOW_TRAINS_FASTEST)
CLAIMS = (*PHASE_CLAIMS, *ASYMMETRIC_PHASE_CLAIMS, *DEAD_NODE_CLAIMS, *TRAINING_CLAIMS)


def metrics(results: Results, config: CorrelatedInitConfig) -> dict[str, float]:
    """Per init the inactive probability (layers 2…L and layer 2) and the fraction of units
    dead on every input; per teacher × optimiser × init (twins included) the mean training
    score of the students that did not diverge, the initial log10 validation loss and output
    variance (the speed claims' starting point), the students that diverged (the study's one
    policy) and the mean change of their row correlation during training; the deeper students'
    rise above their minimum per optimiser (students that did not diverge), their divergence
    and P(a shallow student's rise < a deeper one's) per init; the plane's scores; ACI's score
    and initial output variance per σ_b² of the bias sweep."""
    values: dict[str, float] = {}
    dead = DeadNodes.read(results[Key.DEAD_NODES], Key.DEAD_NODES)
    for name in dict.fromkeys(c["init"] for c in dead.conditions):
        rows = where(dead.conditions, init=name)
        values[f"inactive_{name}"] = float(dead.inactive[rows, 1:].mean())
        values[f"inactive_layer2_{name}"] = float(dead.inactive[rows, 1].mean())
        values[f"dead_on_all_{name}"] = float(dead.dead_on_all[rows].mean())
    for t in TEACHERS:
        for o in OPTIMISERS:
            values.update(
                _training_metrics(_students(results, trained_on(t, o)), config, f"{t}_{o}")
            )
    for o, by_init in deeper_rises(results, config).items():
        for name, estimate in by_init.items():
            values[f"deeper_rises_more_{o}_{name}"] = estimate.value
    for o in config.deep_optimisers:
        suffix = "" if o == "adam" else f"_{o}"
        deep = _students(results, deep_key(o))
        for name, rise in overfitting(deep, config).items():
            values[f"deep_overfitting{suffix}_{name}"] = kept_mean(rise)
        for name, (count, _) in divergence(deep, config).items():
            values[f"deep_diverged{suffix}_{name}"] = float(count)
    plane = _students(results, Key.PLANE)
    for name, score in training_scores(plane, config).items():
        values[f"plane_score_{name}"] = kept_mean(score)
    values["plane_diverged"] = float(sum(d for d, _ in divergence(plane, config).values()))
    if config.bias_sweep:
        bias = _students(results, Key.BIAS)
        for name, score in training_scores(bias, config).items():
            values[f"bias_score_{name}"] = kept_mean(score)
        for name, (_, variance) in initial_state(bias).items():
            values[f"bias_initial_variance_{name}"] = variance
        for name, (count, _) in divergence(bias, config).items():
            values[f"bias_diverged_{name}"] = float(count)
    return values


def _students(results: Results, key: str) -> Students:
    return Students.read(results[key], key)


def _training_metrics(
    students: Students, config: CorrelatedInitConfig, unit: str
) -> dict[str, float]:
    values = {
        f"score_{unit}_{name}": kept_mean(score)
        for name, score in training_scores(students, config).items()
    }
    for name, (loss, variance) in initial_state(students).items():
        values[f"initial_loss_{unit}_{name}"] = loss
        values[f"initial_variance_{unit}_{name}"] = variance
    counts = divergence(students, config)
    for name, (count, _) in counts.items():
        values[f"diverged_{unit}_{name}"] = float(count)
    for name, change in row_correlation_change(students, config).items():
        values[f"row_correlation_change_{unit}_{name}"] = change
    values[f"diverged_{unit}"] = float(sum(count for count, _ in counts.values()))
    return values


def analyse(results: Results, config: CorrelatedInitConfig) -> Analysis:
    """Claims and metrics from the stored results."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
