"""Seed 004 §6: downstream consequences of early linearity — preferential linear learning on XOR
+ a linear feature (§6.1, Fig. 5) and simple before complex on the parallel task (§6.2, Fig. 6,
appendix D)."""

from __future__ import annotations

from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, AllOf, Below, Ordered
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.sections.alignment import (
    alignment_rows,
    rescaled_spec,
)
from relulab.experiments.early_linearization.units import Family, Key, task_levels
from relulab.experiments.seed004 import SEED, alignment_reading, finite_mean_ci

__all__ = [
    "BIAS_FREE_USES_XOR",
    "BIAS_RELU_USES_LINEAR",
    "LOWER_RANK",
    "SIMPLE_OVER_COMPLEX",
    "SIMPLE_OVERREPRESENTED",
    "TRACKS_LINEAR",
    "WAITS_AT_LINEAR_LOSS",
    "parallel_pair",
    "reliance",
]

Config = EarlyLinearizationConfig
CONFLICT_NOTE = (
    "conflict points: the task's points with x3 flipped [I]; XOR levels centred [I] — the "
    "verdict depends on the XOR : x3 scale (metrics xor_linear_reliance_*)"
)


# --- xor-linear-bias-relu-tracks-linear --------------------------------------------------------
def _tracks_linear(results: Results, config: Config) -> Reading:
    match = {"c": config.constant, "delta": config.margin_delta}
    rows = alignment_rows(results, config, Family.XOR_PLUS_LINEAR, **match)
    return alignment_reading(rows, scale(config))


TRACKS_LINEAR = rescaled_spec(
    "xor-linear-bias-relu-tracks-linear",
    "On XOR + linear feature (Δ = 0.5) bias-ReLU loss curves closely resemble the linear "
    "network's, with a small time shift.",
    f"{SEED} §6.1, Fig. 5B",
    _tracks_linear,
    figure="xor_linear.png",
    scope="early in training, over the linear network's early window",
)


# --- xor-linear-bias-relu-uses-linear-feature / xor-linear-bias-free-uses-xor ------------------
def reliance(
    results: Results,
    config: Config,
    c: float,
    delta: float | None = None,
    key: Key = Key.XOR_PLUS_LINEAR_RELU,
):
    """Per bias-ReLU (``c > 0``) or bias-free ReLU (``c = 0``) network at Δ (default
    ``margin_delta``): the share of the four conflict points of its task (the XOR levels of
    the unit ``key``) it classifies by x3."""
    delta = config.margin_delta if delta is None else delta
    levels = task_levels(results[key].conditions[0].get("task", "xor-linear"), config)
    return measure.linear_feature_reliance(results[key], True, delta, c, levels)


def _bias_relu_reliance(results: Results, config: Config) -> Reading:
    values = reliance(results, config, config.constant)
    return Reading(finite_mean_ci(values), scale=scale(config))


def _bias_free_reliance(results: Results, config: Config) -> Reading:
    return Reading(finite_mean_ci(reliance(results, config, 0.0)), scale=scale(config))


BIAS_RELU_USES_LINEAR = ClaimSpec(
    "xor-linear-bias-relu-uses-linear-feature",
    "ReLU networks with bias terms strongly rely on the linear feature.",
    source=f"{SEED} §6.1, Fig. 5C",
    criterion=Above("share of conflict points classified by x3, bias-ReLU", 0.5),
    measure=_bias_relu_reliance,
    scope="the learned function at the end of training",
    note=CONFLICT_NOTE,
    figure="xor_linear.png",
)

BIAS_FREE_USES_XOR = ClaimSpec(
    "xor-linear-bias-free-uses-xor",
    "Bias-free ReLU networks make use of the non-linear (XOR) structure instead.",
    source=f"{SEED} §6.1, Fig. 5C",
    criterion=Below("share of conflict points classified by x3, bias-free ReLU", 0.5),
    measure=_bias_free_reliance,
    scope="the learned function at the end of training",
    note=CONFLICT_NOTE,
    figure="xor_linear.png",
)


# --- the parallel task (§6.2) ------------------------------------------------------------------
def parallel_pair(results: Results, config: Config) -> tuple[measure.Parallel, measure.Parallel]:
    """The §6.2 readings of the bias-ReLU and the bias-free ReLU networks of the parallel task."""
    relu = results[Key.PARALLEL_RELU]
    bias = measure.parallel(relu, config, config.constant, relu=True)
    return bias, measure.parallel(relu, config, 0.0, relu=True)


def _waiting(results: Results, config: Config) -> Reading:
    bias, free = parallel_pair(results, config)
    values = [("no bias", finite_mean_ci(free.waiting)), ("bias", finite_mean_ci(bias.waiting))]
    return Reading(values, scale=scale(config))


WAITS_AT_LINEAR_LOSS = ClaimSpec(
    "parallel-waits-at-linear-loss",
    "Bias-ReLU learns the linear task first and waits at its loss; without bias the saddle is "
    "substantially less pronounced.",
    source=f"{SEED} §6.2, Fig. 6B",
    criterion=Ordered("steps within ±10 % of the linear-task loss", names=("no bias", "bias")),
    measure=_waiting,
    note="band ±10 % [I]",
    unit="steps",
    figure="parallel.png",
)


def _rank(results: Results, config: Config) -> Reading:
    bias, free = parallel_pair(results, config)
    values = [("bias", finite_mean_ci(bias.rank)), ("no bias", finite_mean_ci(free.rank))]
    detail = (
        f"centred Gram matrix (the bias offset removed): bias "
        f"{finite_mean_ci(bias.centred_rank).describe()}, no bias "
        f"{finite_mean_ci(free.centred_rank).describe()}"
    )
    return Reading(values, detail=detail, scale=scale(config))


LOWER_RANK = ClaimSpec(
    "parallel-lower-rank-with-bias",
    "Bias-ReLU networks have a strong low-rank bias: lower effective rank of HᵀH.",
    source=f"{SEED} §6.2, Fig. 6C; eq. 1",
    criterion=Ordered("effective rank of HᵀH at the end", names=("bias", "no bias")),
    measure=_rank,
    scope="at convergence (the end of training)",
    figure="parallel.png",
)


def _simple_overrepresented(results: Results, config: Config) -> Reading:
    bias, free = parallel_pair(results, config)
    values = [("no bias", finite_mean_ci(free.r2_simple)), ("bias", finite_mean_ci(bias.r2_simple))]
    return Reading(values, scale=scale(config))


SIMPLE_OVERREPRESENTED = ClaimSpec(
    "parallel-simple-overrepresented-with-bias",
    "ReLU networks with bias encode the linear task more strongly than bias-free ones.",
    source=f"{SEED} §6.2, Fig. 6D; appendix D",
    criterion=Ordered(
        "R² of the hidden representation on the simple feature", names=("no bias", "bias")
    ),
    measure=_simple_overrepresented,
    scope="at the end of training ('despite zero loss on both tasks')",
    figure="parallel.png",
)


def _simple_over_complex(results: Results, config: Config) -> Reading:
    bias, free = parallel_pair(results, config)
    return Reading(
        {
            "bias": finite_mean_ci(bias.r2_simple - bias.r2_complex),
            "no bias": finite_mean_ci(free.r2_simple - free.r2_complex),
        },
        scale=scale(config),
    )


SIMPLE_OVER_COMPLEX = ClaimSpec(
    "parallel-simple-over-complex",
    "Both models represent the linear feature more prominently than the non-linear one.",
    source=f"{SEED} §6.2, Fig. 6D; appendix D",
    criterion=AllOf(
        {
            "bias": Above("R²(simple) − R²(complex), bias-ReLU", 0.0),
            "no bias": Above("bias-free ReLU", 0.0),
        }
    ),
    measure=_simple_over_complex,
    scope="at the end of training",
    figure="parallel.png",
)
