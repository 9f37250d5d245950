"""Claims of seed 003 §4–5 and appendix B: teacher–student training of students initialised He,
ACI, RAI, RAAI and with positively correlated weights, on the standard, simple and complex
teachers with SGD and Adam; the deeper students of §5's overfitting remark; and the (σ_w², k)
plane (beyond the seed).

A student's score is the mean over epochs 1…E of its log10 validation loss (lower: faster and
better training; :func:`~relulab.experiments.correlated_init.readings.training_scores`);
comparisons of two inits are Welch intervals over their seeds. Where a claim covers several
teachers and optimisers, today's criterion judges the comparison least favourable to it.
"""

from __future__ import annotations

import math

import numpy as np

from relulab.analysis import Estimate, mean_ci, mean_difference_ci, statistic_ci, where
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.correlated_init.config import SOURCE, CorrelatedInitConfig, scale
from relulab.experiments.correlated_init.readings import (
    listing,
    log_validation,
    lowest,
    overfitting,
    plane_phases,
    training_scores,
)
from relulab.experiments.correlated_init.units import OPTIMISERS, TEACHERS, Key, trained_on
from relulab.experiments.criteria import Above, AllOf, Below
from relulab.store import UnitResult

__all__ = [
    "ACI_FASTER",
    "ACI_OVERFITS",
    "ACI_WORSE_INTERMEDIATE",
    "ORDER_DEPENDS",
    "POSITIVE_SLOWER",
    "RAAI_BEST",
    "RAI_BEATS_ACI",
    "TRAINING_CLAIMS",
    "WINDOW_TRAINS_FASTEST",
    "oriented",
    "scores",
]

SCORE = "mean over epochs of log10 validation loss"


def scores(results: Results) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Every student's score, per (teacher, optimiser) and init."""
    return {
        (t, o): training_scores(results[trained_on(t, o)]) for t in TEACHERS for o in OPTIMISERS
    }


def _difference(by_init: dict[str, np.ndarray], worse: str, better: str) -> Estimate:
    return mean_difference_ci(by_init[worse], by_init[better])


def _scale(config: CorrelatedInitConfig) -> str:
    return scale(
        f"students {config.train_depth}×{config.train_width}, {config.train_samples} samples, "
        f"{config.train_seeds} seeds",
    )


def _least_favourable(differences: dict[str, Estimate], config: CorrelatedInitConfig) -> Reading:
    name, estimate = lowest(differences)
    return Reading(
        estimate,
        detail=f"least favourable: {name}; {listing(differences)}",
        scale=_scale(config),
    )


# ---------------------------------------------------------------------------------------------
# raai-best-or-on-par
# ---------------------------------------------------------------------------------------------
def _raai_best(results: Results, config: CorrelatedInitConfig) -> Reading:
    by_unit = scores(results)
    differences = {
        f"{t}/{o}: {other} − raai": _difference(by_unit[t, o], other, "raai")
        for t in TEACHERS
        for o in OPTIMISERS
        for other in ("he", "aci", "rai")
    }
    return _least_favourable(differences, config)


RAAI_BEST = ClaimSpec(
    "raai-best-or-on-par",
    "RAAI performs better than or on par with all other initialization schemes, on "
    "the standard, simple and complex teachers, with SGD and Adam.",
    source=f"{SOURCE} §5 (Figs. 6–8), §6",
    criterion=lambda c: Above(
        f"{SCORE}, other − RAAI, the least favourable of He, ACI, RAI over teachers and "
        f"optimisers ('on par': within ×{c.on_par_ratio:g} in loss)",
        -math.log10(c.on_par_ratio),
    ),
    measure=_raai_best,
    scope="§5: every teacher with SGD and Adam; §6 places the definite advantage 'when using "
    "the SGD optimizer, especially in early training epochs'",
    note="'on par' ratio [I]",
    figure="training_standard.png",
)


# ---------------------------------------------------------------------------------------------
# aci-faster-than-he
# ---------------------------------------------------------------------------------------------
def _aci_faster(results: Results, config: CorrelatedInitConfig) -> Reading:
    by_unit = scores(results)
    differences = {
        f"{t}/{o}": _difference(by_unit[t, o], "he", "aci")
        for t in ("standard", "simple")
        for o in OPTIMISERS
    }
    return _least_favourable(differences, config)


ACI_FASTER = ClaimSpec(
    "aci-faster-than-he",
    "ReLU networks initialized with ACI train faster than He initialization (standard "
    "and simple teachers, SGD and Adam).",
    source=f"{SOURCE} appendix B (Figs. 9, 10), §6",
    criterion=Above(f"{SCORE}, He − ACI, the least favourable teacher/optimiser", 0.0),
    measure=_aci_faster,
    scope="standard and simple teachers, SGD and Adam; on the simple teacher with SGD 'at "
    "large epochs' (all inits equal in an initial linear region)",
    figure="training_standard.png",
)


# ---------------------------------------------------------------------------------------------
# positive-slower-than-he
# ---------------------------------------------------------------------------------------------
def _positive_slower(results: Results, config: CorrelatedInitConfig) -> Reading:
    by_unit = scores(results)
    differences = {
        f"{t}/{o}": _difference(by_unit[t, o], "positive", "he")
        for t in ("standard", "simple")
        for o in OPTIMISERS
    }
    return _least_favourable(differences, config)


POSITIVE_SLOWER = ClaimSpec(
    "positive-slower-than-he",
    "ReLU networks with positively correlated weights train slower than He initialization.",
    source=f"{SOURCE} appendix B (Figs. 9, 10)",
    criterion=Above(f"{SCORE}, positive − He, the least favourable teacher/optimiser", 0.0),
    measure=_positive_slower,
    scope="standard teacher (Fig. 9); the simple teacher shows 'similar qualitative results' "
    "(Fig. 10)",
    figure="training_standard.png",
)


# ---------------------------------------------------------------------------------------------
# rai-beats-aci-simple
# ---------------------------------------------------------------------------------------------
def _rai_beats_aci(results: Results, config: CorrelatedInitConfig) -> Reading:
    by_unit = scores(results)
    differences = {
        f"simple/{o}": _difference(by_unit["simple", o], "aci", "rai") for o in OPTIMISERS
    }
    return Reading(lowest(differences)[1], detail=listing(differences), scale=_scale(config))


RAI_BEATS_ACI = ClaimSpec(
    "rai-beats-aci-simple",
    "In between RAI and ACI, the former performs better [on the simple teacher] on "
    "using either optimizer.",
    source=f"{SOURCE} §5 (simple teacher, Fig. 7)",
    criterion=Above(
        f"{SCORE}, ACI − RAI on the simple teacher, the less favourable optimiser", 0.0
    ),
    measure=_rai_beats_aci,
    scope="the simple teacher, either optimiser",
    figure="training_simple.png",
)


# ---------------------------------------------------------------------------------------------
# rai-aci-order-depends-on-optimiser
# ---------------------------------------------------------------------------------------------
def oriented(estimate: Estimate, sign: float) -> Estimate:
    """``sign × estimate`` (the interval flipped for a negative sign).

    Example:
        >>> oriented(Estimate(0.2, 0.1, 0.3, 5), -1.0).describe()
        '-0.2 [-0.3, -0.1], n = 5'
    """
    if sign > 0:
        return estimate
    return Estimate(
        -estimate.value, -estimate.high, -estimate.low, estimate.n, estimate.level, estimate.method
    )


def _order(results: Results, config: CorrelatedInitConfig) -> Reading:
    """ACI − RAI on the standard teacher under each optimiser, both signed by the optimiser
    whose difference lies farther from 0: the statement holds when the other one's is then
    negative (opposite signs), both intervals excluding 0."""
    by_unit = scores(results)
    sgd, adam = (_difference(by_unit["standard", o], "aci", "rai") for o in OPTIMISERS)
    closer = min((sgd, adam), key=lambda est: abs(est.value))
    farther = adam if closer is sgd else sgd
    sign = 1.0 if farther.value >= 0 else -1.0
    return Reading(
        {"closer": oriented(closer, sign), "farther": oriented(farther, sign)},
        detail=f"SGD: {sgd.describe()}; Adam: {adam.describe()}",
        scale=_scale(config),
    )


ORDER_DEPENDS = ClaimSpec(
    "rai-aci-order-depends-on-optimiser",
    "On the standard teacher the relative performance of RAI and ACI depends on the "
    "optimization algorithm.",
    source=f"{SOURCE} §5 (standard teacher, Fig. 6)",
    criterion=AllOf(
        {
            "closer": Below(
                f"ACI − RAI ({SCORE}) under the optimiser where it lies closer to 0, signed so "
                "that the other optimiser's is positive",
                0.0,
            ),
            "farther": Above("under the other optimiser", 0.0),
        },
        headline_part="closer",
    ),
    measure=_order,
    scope="the standard teacher",
    note="opposite signs under SGD and Adam, both 95 % intervals excluding 0",
    figure="training_standard.png",
)


# ---------------------------------------------------------------------------------------------
# aci-worse-sgd-complex-intermediate
# ---------------------------------------------------------------------------------------------
def _intermediate(results: Results, config: CorrelatedInitConfig) -> Reading:
    """ACI worse than the other Table 1 inits with SGD on the complex teacher somewhere in an
    intermediate region of training (not at its start or end).

    The statement is existential ("in some intermediate region"), so the statistic is the
    largest gap over the interior epochs, the epoch picked inside every leave-one-out
    replicate (the students of each init left out independently)."""
    result = results[trained_on("complex", "sgd")]
    curves = log_validation(result)
    epochs = curves.shape[1] - 1
    interior = np.arange(max(1, round(0.1 * epochs)), max(2, round(0.9 * epochs)) + 1)
    window = curves[:, interior]
    names = ("aci", "he", "rai", "raai")
    groups = [where(result.conditions, init=n).astype(np.float64) for n in names]

    def gaps(*picked: np.ndarray, axis: int = -1) -> np.ndarray:
        means = [
            window[np.moveaxis(np.asarray(p), axis, -1).astype(int)].mean(axis=-2) for p in picked
        ]
        return means[0] - np.maximum.reduce(means[1:])  # worse than every other init

    measured = statistic_ci(
        groups,
        lambda *picked, axis=-1: gaps(*picked, axis=axis).max(axis=-1),
        paired=False,
        vectorized=True,
    )
    at = int(np.argmax(gaps(*groups)))
    means_at = {n: window[g.astype(int), at].mean() for n, g in zip(names, groups, strict=True)}
    closest = max(names[1:], key=means_at.get)  # the other init ACI is closest to
    return Reading(
        measured,
        detail=f"largest at epoch {int(interior[at])} of {epochs}; closest other init there: "
        f"{closest}",
        scale=_scale(config),
    )


ACI_WORSE_INTERMEDIATE = ClaimSpec(
    "aci-worse-sgd-complex-intermediate",
    "For a complex teacher, ACI performs worse than other initializations on training "
    "with SGD in some intermediate region.",
    source=f"{SOURCE} appendix B (Fig. 11), §5 (complex teacher, Fig. 8)",
    criterion=Above(
        "largest gap over the interior epochs (10–90 % of training) of log10 validation loss, "
        "ACI − the worst of He, RAI, RAAI (ACI worse than every other); the epoch chosen inside "
        "each leave-one-out replicate",
        0.0,
    ),
    measure=_intermediate,
    scope="the complex teacher, SGD, an intermediate region of training (absent with Adam, §6)",
    figure="training_complex.png",
)


# ---------------------------------------------------------------------------------------------
# aci-overfits-deeper
# ---------------------------------------------------------------------------------------------
def _overfits(results: Results, config: CorrelatedInitConfig) -> Reading:
    rise = overfitting(results[Key.DEEP])
    comparisons = {
        f"aci − {other}": mean_difference_ci(rise["aci"], rise[other])
        for other in ("weak-aci", "raai")
    }
    name, estimate = lowest(comparisons)
    return Reading(
        estimate,
        detail=f"least favourable: {name}; {listing(comparisons)}; rise per init: "
        + "; ".join(f"{init} {mean_ci(values).describe()}" for init, values in rise.items()),
        scale=scale(
            f"students {config.deep_depth}×{config.train_width}, weak k = {config.weak_aci_k:g}",
        ),
    )


ACI_OVERFITS = ClaimSpec(
    "aci-overfits-deeper",
    "In a deeper network ACI starts to overfit, which a weaker correlation strength "
    "avoids; RAAI shows no sign of overfitting.",
    source=f"{SOURCE} §5 ('We trained a neural network with … layers'), §1, §6",
    criterion=Above(
        "rise of log10 validation loss from its minimum to the end (complex teacher, Adam), "
        "ACI − the less overfitting of weak ACI and RAAI",
        0.0,
    ),
    measure=_overfits,
    scope="deeper networks and complex tasks (§1); the seed names no optimiser",
    figure="training_deep.png",
)


# ---------------------------------------------------------------------------------------------
# bounded-chaotic-window-trains-fastest (beyond the seed)
# ---------------------------------------------------------------------------------------------
def _window_fastest(results: Results, config: CorrelatedInitConfig) -> Reading:
    result: UnitResult = results[Key.PLANE]
    curves = log_validation(result)[:, 1:].mean(axis=1)
    inside = plane_phases(result, config) == "chaotic"
    return Reading(
        mean_difference_ci(curves[~inside], curves[inside]),
        detail=f"{int(inside.sum())} students inside, {int((~inside).sum())} outside; "
        f"grid σ_w² {config.plane_sigma_w2}, k {config.plane_k}",
        scale=scale(f"{config.plane_seeds} seeds per grid point"),
    )


WINDOW_TRAINS_FASTEST = ClaimSpec(
    "bounded-chaotic-window-trains-fastest",
    "It may be beneficial for a ReLU network to remain in the bounded chaotic subspace "
    "(beyond the seed: tested over the (σ_w², k) plane).",
    source=f"{SOURCE} §2 ('it may be beneficial for a ReLU network to remain in this subspace')",
    criterion=Above(
        f"{SCORE}, students outside − inside the mean-field bounded chaotic window (standard "
        "teacher, Adam)",
        0.0,
    ),
    measure=_window_fastest,
    figure="plane.png",
    beyond_seed=True,
)

TRAINING_CLAIMS = (
    RAAI_BEST,
    ACI_FASTER,
    POSITIVE_SLOWER,
    RAI_BEATS_ACI,
    ORDER_DEPENDS,
    ACI_WORSE_INTERMEDIATE,
    ACI_OVERFITS,
    WINDOW_TRAINS_FASTEST,
)
