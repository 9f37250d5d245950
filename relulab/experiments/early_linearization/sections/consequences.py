"""Seed 004 §6: downstream consequences of early linearity — preferential linear learning on XOR
+ a linear feature (§6.1, Fig. 5) and simple before complex on the parallel task (§6.2, Fig. 6,
appendix D).

Every reading counts the networks it read under the study's divergence policy (:mod:`..scoring`):
a diverged network ranks last (its group's mean is NaN, so the claim cannot hold)."""

from __future__ import annotations

import numpy as np

from relulab.analysis import Estimate
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, Reading
from relulab.experiments.criteria import Above, AllOf, Below, Ordered
from relulab.experiments.early_linearization import measure
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig, scale
from relulab.experiments.early_linearization.scoring import counts_text, group_counts, scored_ci
from relulab.experiments.early_linearization.sections.alignment import (
    pair_reading,
    rescaled_spec,
)
from relulab.experiments.early_linearization.units import Family, Key, task_levels
from relulab.experiments.seed004 import SEED

__all__ = [
    "BIAS_FREE_USES_XOR",
    "BIAS_RELU_USES_LINEAR",
    "LESS_EXPLAINED_WITHOUT_BIAS",
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
    return pair_reading(results, config, Family.XOR_PLUS_LINEAR, **match)


TRACKS_LINEAR = rescaled_spec(
    "xor-linear-bias-relu-tracks-linear",
    "On XOR + linear feature (Δ = 0.5) bias-ReLU loss curves closely resemble the linear "
    "network's, with a small time shift.",
    f"{SEED} §6.1, Fig. 5B",
    _tracks_linear,
    figure="xor_linear.png",
    scope="early in training, over the linear network's early window",
    counterexample="a hidden bias too weak to push the units on (c = 0.01): the ReLU loss parts "
    "from the linear one (g ≈ 2.2)",
)


# --- xor-linear-bias-relu-uses-linear-feature / xor-linear-bias-free-uses-xor ------------------
def reliance(
    results: Results,
    config: Config,
    c: float,
    delta: float | None = None,
    key: Key = Key.XOR_PLUS_LINEAR_RELU,
) -> np.ndarray:
    """Per bias-ReLU (``c > 0``) or bias-free ReLU (``c = 0``) network at Δ (default
    ``margin_delta``): the share of the four conflict points of its task (the XOR levels of
    the unit ``key``) it classifies by x3."""
    delta = config.margin_delta if delta is None else delta
    levels = task_levels(results[key].conditions[0].get("task", "xor-linear"), config)
    return measure.linear_feature_reliance(results[key], True, delta, c, levels)


def _reliance_reading(results: Results, config: Config, c: float) -> Reading:
    """The mean reliance on x3 of the ReLU networks with constant ``c`` at Δ = margin_delta,
    under the divergence policy."""
    match = {"c": c, "delta": config.margin_delta}
    counts, mask = group_counts({"ReLU": results[Key.XOR_PLUS_LINEAR_RELU]}, **match)
    estimate, note = scored_ci(reliance(results, config, c), mask)
    detail = "; ".join(filter(None, [note, counts_text(counts)]))
    return Reading(estimate, detail=detail, scale=scale(config), diverged=counts)


def _bias_relu_reliance(results: Results, config: Config) -> Reading:
    return _reliance_reading(results, config, config.constant)


def _bias_free_reliance(results: Results, config: Config) -> Reading:
    return _reliance_reading(results, config, 0.0)


BIAS_RELU_USES_LINEAR: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "xor-linear-bias-relu-uses-linear-feature",
    "ReLU networks with bias terms strongly rely on the linear feature.",
    source=f"{SEED} §6.1, Fig. 5C",
    criterion=Above("share of conflict points classified by x3, bias-ReLU", 0.5),
    measure=_bias_relu_reliance,
    scope="the learned function at the end of training",
    note=CONFLICT_NOTE,
    figure="xor_linear.png",
    counterexample="a hidden bias too weak to matter (c = 0.01): the ReLU networks solve the "
    "task through XOR, as the bias-free ones do (share 0)",
)

BIAS_FREE_USES_XOR: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "xor-linear-bias-free-uses-xor",
    "Bias-free ReLU networks make use of the non-linear (XOR) structure instead.",
    source=f"{SEED} §6.1, Fig. 5C",
    criterion=Below("share of conflict points classified by x3, bias-free ReLU", 0.5),
    measure=_bias_free_reliance,
    scope="the learned function at the end of training",
    note=CONFLICT_NOTE,
    figure="xor_linear.png",
    counterexample="a wider margin (Δ = 1, XOR : x3 scale 1): the bias-free networks read x3 "
    "(share 1)",
)


# --- the parallel task (§6.2) ------------------------------------------------------------------
def parallel_pair(results: Results, config: Config) -> tuple[measure.Parallel, measure.Parallel]:
    """The §6.2 readings of the bias-ReLU and the bias-free ReLU networks of the parallel task."""
    relu = results[Key.PARALLEL_RELU]
    bias = measure.parallel(relu, config, config.constant, relu=True)
    return bias, measure.parallel(relu, config, 0.0, relu=True)


def _groups(
    results: Results, config: Config, field: str, order: tuple[str, str]
) -> tuple[list[tuple[str, Estimate]], str, dict[str, tuple[int, int]]]:
    """Per group of the parallel task's ReLU networks (``order`` of "bias", "no bias"), the
    mean of ``field`` under the divergence policy, the notes, and the divergence counts."""
    bias, free = parallel_pair(results, config)
    relu = results[Key.PARALLEL_RELU]
    counts = group_counts({"ReLU": relu}, c=config.constant)[0]
    counts |= group_counts({"ReLU": relu}, c=0.0)[0]
    values, notes = [], []
    for name in order:
        group = bias if name == "bias" else free
        estimate, note = scored_ci(getattr(group, field), group.diverged)
        values.append((name, estimate))
        notes += [f"{name}: {note}"] if note else []
    return values, "; ".join(notes + [counts_text(counts)]), counts


def _ordered_reading(
    results: Results, config: Config, field: str, order: tuple[str, str], extra: str = ""
) -> Reading:
    values, detail, counts = _groups(results, config, field, order)
    detail = "; ".join(filter(None, [extra, detail]))
    return Reading(values, detail=detail, scale=scale(config), diverged=counts)


def _waiting(results: Results, config: Config) -> Reading:
    return _ordered_reading(results, config, "waiting", ("no bias", "bias"))


WAITS_AT_LINEAR_LOSS: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "parallel-waits-at-linear-loss",
    "Bias-ReLU learns the linear task first and waits at its loss; without bias the saddle is "
    "substantially less pronounced.",
    source=f"{SEED} §6.2, Fig. 6B",
    criterion=Ordered("steps within ±10 % of the linear-task loss", names=("no bias", "bias")),
    measure=_waiting,
    note="band ±10 % [I]",
    unit="steps",
    figure="parallel.png",
    counterexample="a hidden bias too weak to make the linear phase (c = 0.01): neither network "
    "waits at the linear-task loss (0 steps each)",
)


def _rank(results: Results, config: Config) -> Reading:
    uncentred, detail, counts = _groups(results, config, "rank", ("bias", "no bias"))
    centred, _, _ = _groups(results, config, "centred_rank", ("bias", "no bias"))
    measured = {"HᵀH (eq. 1)": uncentred, "centred": centred}
    return Reading(measured, detail=detail, scale=scale(config), diverged=counts)


RANK_BOTH = (
    "issue 45: eq. 1's HᵀH is uncentred, so the bias's common offset alone lowers its rank; "
    "'represent the task in a fundamentally lower dimensional fashion' (§6.2) is a statement "
    "about the representation, so the centred Gram matrix must show it too"
)
LOWER_RANK: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "parallel-lower-rank-with-bias",
    "Bias-ReLU networks have a strong low-rank bias: lower effective rank of HᵀH, and of the "
    "representation itself (centred).",
    source=f"{SEED} §6.2, Fig. 6C; eq. 1 ('represent the task in a fundamentally lower "
    "dimensional fashion')",
    criterion=AllOf(
        {
            "HᵀH (eq. 1)": Ordered("effective rank of HᵀH at the end", names=("bias", "no bias")),
            "centred": Ordered(
                "effective rank of the centred Gram matrix (the bias offset removed)",
                names=("bias", "no bias"),
            ),
        }
    ),
    measure=_rank,
    scope="at convergence (the end of training)",
    note=RANK_BOTH,
    figure="parallel.png",
    counterexample="a hidden bias too weak to matter (c = 0.01): the two ranks are the same "
    "(difference ≈ 0.003)",
)


def _r2_both(results: Results, config: Config) -> Reading:
    return _ordered_reading(results, config, "r2_both", ("no bias", "bias"))


LESS_EXPLAINED_WITHOUT_BIAS: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "parallel-less-variance-explained-without-bias",
    "For bias-free ReLU less overall representational variance is explained by a regression on "
    "both features.",
    source=f"{SEED} §6.2, Fig. 6D; appendix D ('for bias-free ReLU we also find that less "
    "overall representational variance is explained when fitting a regression that contain "
    "both regressor')",
    criterion=Ordered(
        "R² of the hidden representation on both features", names=("no bias", "bias")
    ),
    measure=_r2_both,
    scope="at the end of training",
    figure="parallel.png",
    counterexample="a hidden bias too weak to matter (c = 0.01): R² on both features is the "
    "same with and without it (0.716 each)",
)


def _simple_overrepresented(results: Results, config: Config) -> Reading:
    return _ordered_reading(results, config, "r2_simple", ("no bias", "bias"))


SIMPLE_OVERREPRESENTED: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
    "parallel-simple-overrepresented-with-bias",
    "ReLU networks with bias encode the linear task more strongly than bias-free ones.",
    source=f"{SEED} §6.2, Fig. 6D; appendix D",
    criterion=Ordered(
        "R² of the hidden representation on the simple feature", names=("no bias", "bias")
    ),
    measure=_simple_overrepresented,
    scope="at the end of training ('despite zero loss on both tasks')",
    figure="parallel.png",
    counterexample="a hidden bias too weak to matter (c = 0.01): R²(simple) is the same with and "
    "without it (difference ≈ 0.001)",
)


def _simple_over_complex(results: Results, config: Config) -> Reading:
    bias, free = parallel_pair(results, config)
    relu = results[Key.PARALLEL_RELU]
    counts = group_counts({"ReLU": relu}, c=config.constant)[0]
    counts |= group_counts({"ReLU": relu}, c=0.0)[0]
    measured = {
        "bias": scored_ci(bias.r2_simple - bias.r2_complex, bias.diverged)[0],
        "no bias": scored_ci(free.r2_simple - free.r2_complex, free.diverged)[0],
    }
    return Reading(measured, detail=counts_text(counts), scale=scale(config), diverged=counts)


SIMPLE_OVER_COMPLEX: ClaimSpec[EarlyLinearizationConfig] = ClaimSpec(
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
    check="guaranteed by the task and the activation: the simple feature s = (1 − x1)/2 is linear "
    "in the inputs and the complex one (x1·x2) is not, and ReLU features of these centred inputs "
    "carry mostly their linear part whether or not they learned — after 1/150 of the horizon "
    "(barely trained) the difference is already 0.59, and every setting the study's units can run "
    "holds (c 0.01–3, σ² 2e-4–0.2: 0.23–0.43)",
)
