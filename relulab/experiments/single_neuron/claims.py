"""The single-neuron scorecard: each observation of seed 001 as a claim, plus the metrics.

Each claim is one :class:`~relulab.experiments.claims.ClaimSpec` with its measure function, in a
module per part of the seed (:mod:`relulab.experiments.single_neuron.observations`); ``CLAIMS``
lists them in scorecard order, the checks (``check=``: identities of the setup, run and shown,
never counted) among them: ``b1-dead-plateau``, ``stuck-solution-is-least-squares-line`` and
``plateaus-are-exact-fits``. The readings they share (loss levels, outcomes, kinks, transition
regions) are in :mod:`relulab.experiments.single_neuron.readings`.
"""

from __future__ import annotations

import numpy as np

from relulab.analysis import first_below, first_match, locate_boundary, where
from relulab.experiments.base import Analysis, Results
from relulab.experiments.claims import evaluate
from relulab.experiments.single_neuron.config import (
    DEAD_PLATEAU,
    HYPERACTIVE_PLATEAU,
    OUTCOMES,
    SingleNeuronConfig,
)
from relulab.experiments.single_neuron.observations.biases import (
    B1_DEAD,
    B1_HYPERACTIVE,
    B2_BOUNDARY,
    B2_CONVERGES,
    B2_STICKS,
    KINK,
    LEAST_SQUARES,
    TEACHER_BIAS,
)
from relulab.experiments.single_neuron.observations.irreversibility import (
    IRREVERSIBLE,
    irreversibility_metrics,
)
from relulab.experiments.single_neuron.observations.learning_rate import (
    FALLS_THEN_DIES,
    LR_BOUNDARY,
    LR_CONVERGES,
    LR_KILLS,
    lr_region,
)
from relulab.experiments.single_neuron.observations.plateaus import EXACT_FITS
from relulab.experiments.single_neuron.observations.questions import REPARAM
from relulab.experiments.single_neuron.observations.silu import (
    RELU_STUCK,
    SILU_RECOVERS,
    SILU_SADDLE,
)
from relulab.experiments.single_neuron.readings import (
    bracket,
    diverged,
    kinks,
    loss_levels,
    outcomes,
)
from relulab.experiments.single_neuron.units import Key, neurons
from relulab.theory import sample_constant_fit_loss, sample_linear_fit_loss

__all__ = [
    "CLAIMS",
    "analyse",
    "bracket",
    "kinks",
    "loss_levels",
    "metrics",
    "outcomes",
]

CLAIMS = (
    B1_HYPERACTIVE,
    B1_DEAD,
    B2_CONVERGES,
    B2_STICKS,
    B2_BOUNDARY,
    KINK,
    TEACHER_BIAS,
    LEAST_SQUARES,
    LR_CONVERGES,
    LR_KILLS,
    LR_BOUNDARY,
    FALLS_THEN_DIES,
    IRREVERSIBLE,
    RELU_STUCK,
    SILU_RECOVERS,
    SILU_SADDLE,
    EXACT_FITS,
    REPARAM,
)


def _boundary_metrics(results: Results, config: SingleNeuronConfig) -> dict[str, float]:
    """Per fine sweep and parameterisation: the first change of outcome, the transition
    region's ends, the number of changes and the fraction that converged."""
    values = {}
    for name, key, descending in ((Key.B2_BOUNDARY, "b2", True), (Key.LR_BOUNDARY, "lr", False)):
        unit = neurons(results, name)
        converged = outcomes(unit, config.converge_tol) == OUTCOMES["converged"]
        for parameterisation in ("standard", "reparam"):
            idx = where(unit.conditions, parameterisation=parameterisation)
            swept = np.array([unit.conditions[i][key] for i in idx])
            order = np.argsort(-swept if descending else swept)
            boundary, flips = locate_boundary(swept[order], converged[idx][order])
            region = bracket(unit, key, descending, parameterisation, config.converge_tol)
            values[f"{key}_boundary_{parameterisation}"] = boundary
            values[f"{key}_boundary_region_low_{parameterisation}"] = region.low
            values[f"{key}_boundary_region_high_{parameterisation}"] = region.high
            values[f"{key}_boundary_transitions_{parameterisation}"] = float(flips)
            values[f"{key}_fine_sweep_converged_fraction_{parameterisation}"] = float(
                converged[idx].mean()
            )
    return values


def _map_metrics(results: Results, config: SingleNeuronConfig) -> dict[str, float]:
    """The outcome fractions (dead / balanced / hyperactive / converged) of each phase map."""
    values = {}
    for key in (Key.MAP_B1_B2, Key.MAP_B2_LR):
        unit = neurons(results, key)
        outcome = outcomes(unit, config.converge_tol)
        for parameterisation in ("standard", "reparam"):
            idx = where(unit.conditions, parameterisation=parameterisation)
            for name, code in OUTCOMES.items():
                values[f"{key}_{parameterisation}_{name}_fraction"] = float(
                    np.mean(outcome[idx] == code)
                )
    return values


def _reached_zero_metrics(results: Results, config: SingleNeuronConfig) -> dict[str, float]:
    """Where the claims read "the loss reached zero" (issue 43), what the end of training shows:
    the fine lr sweep's transition region under that reading (both parameterisations; the
    ``lr_boundary_*`` metrics read the end), and the lr 0.2 run's loss level at the end and the
    last recorded step its loss was below the threshold (a converged run thrown off later)."""
    values = {}
    for parameterisation in ("standard", "reparam"):
        region = lr_region(results, config, parameterisation)
        values[f"lr_reached_zero_region_low_{parameterisation}"] = region.low
        values[f"lr_reached_zero_region_high_{parameterisation}"] = region.high
    lrs = neurons(results, Key.LR_SWEEP)
    i = first_match(lrs.conditions, lr=0.2)
    if i is not None:
        below = np.flatnonzero(lrs.loss[i] < config.converge_tol)
        values["lr_0_2_loss_level_at_end"] = float(loss_levels(lrs)[i])
        values["lr_0_2_last_step_below_tol"] = float(lrs.steps[below[-1]]) if len(below) else -1.0
    return values


def metrics(results: Results, config: SingleNeuronConfig) -> dict[str, float]:
    """Exact plateaus, located boundaries, outcome fractions of the maps, SiLU timing, and the
    counts behind irreversibility (the seed's learning rates, beyond them, reparameterised)."""
    x = neurons(results, Key.B1_SWEEP).x
    values = {
        "plateau_hyperactive_exact": HYPERACTIVE_PLATEAU,
        "plateau_dead_exact": DEAD_PLATEAU,
        "plateau_hyperactive_sample": sample_linear_fit_loss(x, np.maximum(x, 0)),
        "plateau_dead_sample": sample_constant_fit_loss(x, np.maximum(x, 0)),
    }
    values.update(_boundary_metrics(results, config))
    values.update(_map_metrics(results, config))
    values.update(irreversibility_metrics(results, config))
    values.update(_reached_zero_metrics(results, config))
    silu = neurons(results, Key.SILU_VS_RELU)
    silu_i = first_match(silu.conditions, activation="silu")
    tol = config.converge_tol
    values["silu_steps_to_converge"] = first_below(silu.steps, silu.loss[silu_i], tol)
    values["silu_final_loss"] = float(silu.end.loss[silu_i])
    values["diverged_networks"] = float(
        sum(int(diverged(neurons(results, key)).sum()) for key in results)
    )
    return values


def analyse(results: Results, config: SingleNeuronConfig) -> Analysis:
    """Claims and metrics from the stored results."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
