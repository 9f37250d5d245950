"""Claims of seed 003 §4–5 and appendix B: teacher–student training of students initialised He,
ACI, RAI, RAAI and with positively correlated weights, on the standard, simple and complex
teachers with SGD and Adam; the deeper students of §5's overfitting remark; and the (σ_w², k)
plane (beyond the seed).

A student's score is the mean over epochs 1…E of its log10 validation loss (lower: faster and
better training; :func:`~relulab.experiments.correlated_init.readings.training_scores`);
comparisons of two inits are Welch intervals over their seeds. A claim that covers several
teachers, optimisers or inits judges every comparison
(:class:`~relulab.experiments.criteria.Every`) on intervals simultaneous over them.
"""

from __future__ import annotations

import math

import numpy as np

from relulab.analysis import (
    Estimate,
    mean_ci,
    mean_difference_ci,
    proportion_ci,
    simultaneous_level,
    statistic_ci,
    where,
)
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.correlated_init.config import SOURCE, CorrelatedInitConfig, scale
from relulab.experiments.correlated_init.readings import (
    divergence,
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
from relulab.experiments.criteria import Above, AllOf, Below, Every
from relulab.store import UnitResult

__all__ = [
    "ACI_FASTER",
    "ACI_OVERFITS",
    "ACI_WORSE_INTERMEDIATE",
    "ORDER_DEPENDS",
    "POSITIVE_SLOWER",
    "RAAI_BEST",
    "RAAI_NO_OVERFIT",
    "RAAI_SGD_EARLY",
    "RAI_BEATS_ACI",
    "TRAINING_CLAIMS",
    "WINDOW_TRAINS_FASTEST",
    "early_epochs",
    "oriented",
    "scores",
]

SCORE = "mean over epochs of log10 validation loss"


def scores(
    results: Results, last_epoch: int | None = None, drop_diverged: bool = False
) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Every student's score, per (teacher, optimiser) and init (epochs 1…``last_epoch``,
    diverged students left out with ``drop_diverged``)."""
    return {
        (t, o): training_scores(results[trained_on(t, o)], last_epoch, drop_diverged)
        for t in TEACHERS
        for o in OPTIMISERS
    }


def _scale(config: CorrelatedInitConfig) -> str:
    return scale(
        f"students {config.train_depth}×{config.train_width}, {config.train_samples} samples, "
        f"{config.train_seeds} seeds",
    )


def _family(
    by_unit: dict[tuple[str, str], dict[str, np.ndarray]],
    comparisons: list[tuple[str, str, str, str]],
) -> dict[str, Estimate]:
    """``worse − better`` (Welch) for every ``(teacher, optimiser, worse, better)``, the
    intervals simultaneous over the comparisons (:class:`~relulab.experiments.criteria.Every`)."""
    level = simultaneous_level(len(comparisons))
    return {
        f"{t}/{o}: {worse} − {better}": mean_difference_ci(
            by_unit[t, o][worse], by_unit[t, o][better], level
        )
        for t, o, worse, better in comparisons
    }


# ---------------------------------------------------------------------------------------------
# raai-best-or-on-par
# ---------------------------------------------------------------------------------------------
OTHERS = ("he", "aci", "rai")


def _raai_best(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [(t, o, other, "raai") for t in TEACHERS for o in OPTIMISERS for other in OTHERS]
    return Reading(_family(scores(results), comparisons), scale=_scale(config))


RAAI_BEST = ClaimSpec(
    "raai-best-or-on-par",
    "RAAI performs better than or on par with all other initialization schemes, on "
    "the standard, simple and complex teachers, with SGD and Adam.",
    source=f"{SOURCE} §5 (Figs. 6–8)",
    criterion=lambda c: Every(
        Above(
            f"{SCORE}, other − RAAI ('on par': within ×{c.on_par_ratio:g} in loss)",
            -math.log10(c.on_par_ratio),
        ),
        points_name="teacher × optimiser × other init (He, ACI, RAI)",
    ),
    measure=_raai_best,
    scope="§5: every teacher with SGD and Adam, the whole of training; §6's early-SGD "
    "advantage is its own claim (raai-best-sgd-early)",
    note="'on par' ratio [I]",
    figure="training_standard.png",
)


def early_epochs(epochs: int, fraction: float) -> int:
    """The last of §6's 'early training epochs' of ``epochs``: the first ``fraction`` of
    them (at least 1).

    Example:
        >>> early_epochs(30, 0.2)
        6
    """
    return max(1, round(fraction * epochs))


def _raai_sgd_early(results: Results, config: CorrelatedInitConfig) -> Reading:
    epochs = len(results[trained_on("standard", "sgd")].steps) - 1
    last = early_epochs(epochs, config.early_fraction)
    comparisons = [(t, "sgd", other, "raai") for t in TEACHERS for other in OTHERS]
    return Reading(
        _family(scores(results, last), comparisons),
        detail=f"SGD epochs 1…{last} of {epochs}",
        scale=_scale(config),
    )


RAAI_SGD_EARLY = ClaimSpec(
    "raai-best-sgd-early",
    "RAAI shows a definite advantage over other schemes when using the SGD optimizer, "
    "especially in early training epochs.",
    source=f"{SOURCE} §6 (Figs. 6–8 with SGD)",
    criterion=lambda c: Every(
        Above(f"{SCORE} over the early SGD epochs, other − RAAI", 0.0),
        points_name="teacher × other init (He, ACI, RAI)",
    ),
    measure=_raai_sgd_early,
    scope="SGD, early epochs (the first early_fraction = 20 % [I]), every teacher of §4",
    note="'early' [I]; a definite advantage: better than every other init, not 'on par'",
    figure="training_standard.png",
)


# ---------------------------------------------------------------------------------------------
# aci-faster-than-he
# ---------------------------------------------------------------------------------------------
def _aci_faster(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [(t, o, "he", "aci") for t in ("standard", "simple") for o in OPTIMISERS]
    return Reading(_family(scores(results), comparisons), scale=_scale(config))


ACI_FASTER = ClaimSpec(
    "aci-faster-than-he",
    "ReLU networks initialized with ACI train faster than He initialization (standard "
    "and simple teachers, SGD and Adam).",
    source=f"{SOURCE} appendix B (Figs. 9, 10), §6",
    criterion=Every(Above(f"{SCORE}, He − ACI", 0.0), points_name="teacher × optimiser"),
    measure=_aci_faster,
    scope="standard and simple teachers, SGD and Adam; on the simple teacher with SGD 'at "
    "large epochs' (all inits equal in an initial linear region)",
    figure="training_standard.png",
)


# ---------------------------------------------------------------------------------------------
# positive-slower-than-he
# ---------------------------------------------------------------------------------------------
def _positive_slower(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [(t, o, "positive", "he") for t in ("standard", "simple") for o in OPTIMISERS]
    diverged = {
        f"{t}/{o}": divergence(results[trained_on(t, o)])["positive"]
        for t in ("standard", "simple")
        for o in OPTIMISERS
    }
    return Reading(
        _family(scores(results, drop_diverged=True), comparisons),
        detail="diverged positive students (reported apart, not scored): "
        + "; ".join(
            f"{unit} {count}/{n} ({proportion_ci(count, n).describe()})"
            for unit, (count, n) in diverged.items()
        ),
        scale=_scale(config),
    )


POSITIVE_SLOWER = ClaimSpec(
    "positive-slower-than-he",
    "ReLU networks with positively correlated weights train slower than He initialization.",
    source=f"{SOURCE} appendix B (Figs. 9, 10)",
    criterion=Every(
        Above(f"{SCORE}, positive − He, students that did not diverge", 0.0),
        points_name="teacher × optimiser",
    ),
    measure=_positive_slower,
    scope="standard teacher (Fig. 9); the simple teacher shows 'similar qualitative results' "
    "(Fig. 10)",
    figure="training_standard.png",
)


# ---------------------------------------------------------------------------------------------
# rai-beats-aci-simple
# ---------------------------------------------------------------------------------------------
def _rai_beats_aci(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [("simple", o, "aci", "rai") for o in OPTIMISERS]
    return Reading(_family(scores(results), comparisons), scale=_scale(config))


RAI_BEATS_ACI = ClaimSpec(
    "rai-beats-aci-simple",
    "In between RAI and ACI, the former performs better [on the simple teacher] on "
    "using either optimizer.",
    source=f"{SOURCE} §5 (simple teacher, Fig. 7)",
    criterion=Every(
        Above(f"{SCORE}, ACI − RAI on the simple teacher", 0.0), points_name="optimiser"
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
    sgd, adam = (
        mean_difference_ci(by_unit["standard", o]["aci"], by_unit["standard", o]["rai"])
        for o in OPTIMISERS
    )
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
INTERMEDIATE_INITS = ("aci", "he", "rai", "raai")


def _gap(*groups: np.ndarray) -> float:
    """ACI's mean minus the highest mean of the other inits: > 0 when ACI is worse than every
    other."""
    return float(np.mean(groups[0]) - max(np.mean(g) for g in groups[1:]))


def _at(result: UnitResult, epoch: int) -> list[np.ndarray]:
    curves = log_validation(result)
    return [curves[where(result.conditions, init=n), epoch] for n in INTERMEDIATE_INITS]


def _contrast(first: list[np.ndarray], second: list[np.ndarray], level: float) -> Estimate:
    """The gap on ``first`` minus the gap on ``second`` (students treated as independent: for
    two epochs of the same students the interval is conservative)."""
    k = len(first)
    return statistic_ci(
        [*first, *second],
        lambda *g: _gap(*g[:k]) - _gap(*g[k:]),
        paired=False,
        level=level,
    )


def _intermediate(results: Results, config: CorrelatedInitConfig) -> Reading:
    """ACI worse than the other Table 1 inits with SGD on the complex teacher in an
    intermediate region of training, and not so with Adam nor at the end (the seed's contrast).

    Every interior epoch (10–90 % of training) is judged at the simultaneous level; the epoch
    whose interval of the gap lies highest carries the claim, and its contrasts with Adam at the
    same fraction of training and with the end of SGD training are judged at the same level."""
    sgd, adam = (results[trained_on("complex", o)] for o in OPTIMISERS)
    epochs, adam_epochs = len(sgd.steps) - 1, len(adam.steps) - 1
    interior = np.arange(max(1, round(0.1 * epochs)), max(2, round(0.9 * epochs)) + 1)
    level = simultaneous_level(len(interior))
    gaps = {
        int(e): statistic_ci(_at(sgd, int(e)), _gap, paired=False, level=level) for e in interior
    }
    best = max(gaps, key=lambda e: gaps[e].low)
    matched = round(best / epochs * adam_epochs)
    return Reading(
        {
            "sgd": gaps[best],
            "vs_adam": _contrast(_at(sgd, best), _at(adam, matched), level),
            "vs_end": _contrast(_at(sgd, best), _at(sgd, epochs), level),
        },
        detail=f"SGD epoch {best} of {epochs} (Adam epoch {matched} of {adam_epochs}); "
        f"gap at the end of SGD {_gap(*_at(sgd, epochs)):+.3f}, Adam at {matched} "
        f"{_gap(*_at(adam, matched)):+.3f}",
        scale=_scale(config),
    )


ACI_WORSE_INTERMEDIATE = ClaimSpec(
    "aci-worse-sgd-complex-intermediate",
    "For a complex teacher, ACI performs worse than other initializations on training "
    "with SGD in some intermediate region.",
    source=f"{SOURCE} appendix B (Fig. 11), §5 (complex teacher, Fig. 8)",
    criterion=AllOf(
        {
            "sgd": Above(
                "log10 validation loss, ACI − the highest of He, RAI, RAAI (ACI worse than every "
                "other), SGD, at the interior epoch (10–90 % of training) whose interval "
                "(simultaneous over the interior epochs) lies highest",
                0.0,
            ),
            "vs_adam": Above("that gap − the same gap with Adam at the same fraction", 0.0),
            "vs_end": Above("that gap − the same gap at the end of SGD training", 0.0),
        },
        headline_part="sgd",
    ),
    measure=_intermediate,
    scope="the complex teacher, SGD, an intermediate region of training: §6 'poor performance "
    "with SGD during an intermediate learning stage … consistent with the absence of a similar "
    "regime on training with Adam'",
    figure="training_complex.png",
)


# ---------------------------------------------------------------------------------------------
# aci-overfits-deeper
# ---------------------------------------------------------------------------------------------
def _rises(results: Results, config: CorrelatedInitConfig) -> dict[str, dict[str, np.ndarray]]:
    """The deeper students' rises per optimiser and init, diverged students left out."""
    return {o: overfitting(results[deep_key(o)], True) for o in config.deep_optimisers}


def _deep_divergence(results: Results, config: CorrelatedInitConfig) -> str:
    return "; ".join(
        f"{o} {init} {count}/{n}"
        for o in config.deep_optimisers
        for init, (count, n) in divergence(results[deep_key(o)]).items()
        if count
    )


def _deep_scale(config: CorrelatedInitConfig) -> str:
    return scale(
        f"students {config.deep_depth}×{config.train_width}, weak k = {config.weak_aci_k:g}, "
        f"{', '.join(config.deep_optimisers)}"
    )


def _rise_listing(rises: dict[str, dict[str, np.ndarray]]) -> str:
    return "; ".join(
        f"{o} {init} {mean_ci(values).describe()}"
        for o, by_init in rises.items()
        for init, values in by_init.items()
    )


def _overfits(results: Results, config: CorrelatedInitConfig) -> Reading:
    rises = _rises(results, config)
    level = simultaneous_level(len(rises))
    return Reading(
        {o: mean_difference_ci(r["aci"], r["weak-aci"], level) for o, r in rises.items()},
        detail=f"rise per init: {_rise_listing(rises)}; diverged (left out): "
        f"{_deep_divergence(results, config) or 'none'}",
        scale=_deep_scale(config),
    )


ACI_OVERFITS = ClaimSpec(
    "aci-overfits-deeper",
    "In a deeper network ACI starts to overfit, which a weaker correlation strength avoids.",
    source=f"{SOURCE} §5 ('We trained a neural network with … layers'), §1, §6",
    criterion=Every(
        Above(
            "rise of log10 validation loss from its minimum to the end (complex teacher), "
            "ACI − weak ACI",
            0.0,
        ),
        points_name="optimiser (SGD, Adam)",
    ),
    measure=_overfits,
    scope="deeper networks and complex tasks (§1); the seed names no optimiser, so the "
    "statement (a property of the init) is judged under both",
    figure="training_deep.png",
)


def _raai_no_overfit(results: Results, config: CorrelatedInitConfig) -> Reading:
    rises = _rises(results, config)
    level = simultaneous_level(len(rises))
    return Reading(
        {o: mean_ci(r["raai"], level) for o, r in rises.items()},
        detail=f"rise per init: {_rise_listing(rises)}; diverged (left out): "
        f"{_deep_divergence(results, config) or 'none'}",
        scale=_deep_scale(config),
    )


RAAI_NO_OVERFIT = ClaimSpec(
    "raai-no-overfitting-deeper",
    "RAAI does not show any overfitting signs on training deeper networks.",
    source=f"{SOURCE} §5 ('RAAI does not show any overfitting signs'), §1, §6",
    criterion=lambda c: Every(
        Below(
            "rise of RAAI's log10 validation loss from its minimum to the end (complex "
            f"teacher), 'no sign': the end within ×{c.on_par_ratio:g} of the minimum",
            math.log10(c.on_par_ratio),
        ),
        points_name="optimiser (SGD, Adam)",
    ),
    measure=_raai_no_overfit,
    scope="deeper networks, complex teacher; the seed names no optimiser: both",
    note="'no sign' as the 'on par' ratio [I]",
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
    RAAI_SGD_EARLY,
    RAAI_BEST,
    ACI_FASTER,
    POSITIVE_SLOWER,
    RAI_BEATS_ACI,
    ORDER_DEPENDS,
    ACI_WORSE_INTERMEDIATE,
    ACI_OVERFITS,
    RAAI_NO_OVERFIT,
    WINDOW_TRAINS_FASTEST,
)
