"""Claims of seed 003 §4–5 and appendix B: teacher–student training of students initialised He,
ACI, RAI, RAAI and with positively correlated weights, on the standard, simple and complex
teachers with SGD and Adam, and the (σ_w², k) plane (beyond the seed); the deeper students of
§5's overfitting remark are :mod:`.claims_overfitting`.

A student's score is the mean over epochs 1…E of its log10 validation loss (lower: faster and
better training; :func:`~relulab.experiments.correlated_init.readings.training_scores`). Two
inits are compared by the probability of superiority θ = P(a student of one init ends with a
lower score than a student of the other), **a diverged student ranked last** (the study's one
divergence policy, :func:`~relulab.experiments.correlated_init.readings.divergence_policy`),
with an exact Clopper–Pearson interval over students paired in seed order
(:func:`~relulab.experiments.correlated_init.readings.superiority`): no claim scores a diverged
student at a sentinel loss and none leaves it out. A claim that covers several teachers,
optimisers or inits judges every comparison (:class:`~relulab.experiments.criteria.Every`) on
intervals simultaneous over them, and its reading carries the divergence counts of every init
it read (``Reading(diverged=…)``).
"""

from __future__ import annotations

import math

import numpy as np

from relulab.analysis import Estimate, simultaneous_level
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.correlated_init.config import SOURCE, CorrelatedInitConfig, scale
from relulab.experiments.correlated_init.readings import (
    Group,
    difference,
    diverged,
    divergence,
    init_rows,
    log_validation,
    lowest,
    plane_phases,
    superiority,
    training_scores,
)
from relulab.experiments.correlated_init.units import (
    OPTIMISERS,
    TEACHERS,
    Key,
    Students,
    trained_on,
)
from relulab.experiments.criteria import Above, AllOf, Below, Every

__all__ = [
    "ACI_FASTER",
    "ACI_WORSE_INTERMEDIATE",
    "LAST",
    "ORDER_DEPENDS",
    "POSITIVE_SLOWER",
    "RAAI_BEST",
    "RAAI_SGD_EARLY",
    "RAI_BEATS_ACI",
    "SPEED_CLAIMS",
    "WINDOW_TRAINS_FASTEST",
    "centred",
    "divergence_detail",
    "early_epochs",
    "oriented",
    "scores",
    "students_of",
    "superiority_above",
]

SCORE = "mean over epochs of log10 validation loss"
LAST = "a diverged student ranked last"

Comparison = tuple[str, str, str, str]  # (teacher, optimiser, better, worse)
Counts = dict[str, tuple[int, int]]


def students_of(results: Results, key: str) -> Students:
    """A training unit read through its declared view."""
    return Students.read(results[key], key)


def scores(
    results: Results,
    config: CorrelatedInitConfig,
    last_epoch: int | None = None,
    units: list[tuple[str, str]] | None = None,
) -> dict[tuple[str, str], dict[str, Group]]:
    """Every student's score and divergence, per (teacher, optimiser) and init (epochs
    1…``last_epoch``), for the ``units`` given (default: every teacher and optimiser)."""
    units = [(t, o) for t in TEACHERS for o in OPTIMISERS] if units is None else units
    return {
        (t, o): training_scores(students_of(results, trained_on(t, o)), config, last_epoch)
        for t, o in units
    }


def _units(comparisons: list[Comparison]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((t, o) for t, o, _, _ in comparisons))


def _scale(config: CorrelatedInitConfig) -> str:
    return scale(
        f"students {config.train_depth}×{config.train_width}, {config.train_samples} samples, "
        f"{config.train_seeds} seeds",
    )


def _counts(groups: dict[str, Group]) -> Counts:
    return {name: group.counts for name, group in groups.items()}


def divergence_detail(counts: Counts) -> str:
    """The groups with diverged students, for a claim's detail (all are in its record)."""
    shown = [f"{name} {d}/{n}" for name, (d, n) in counts.items() if d]
    return "diverged (ranked last): " + (", ".join(shown) if shown else "none")


def _family(
    by_unit: dict[tuple[str, str], dict[str, Group]],
    comparisons: list[Comparison],
    margin: float = 0.0,
) -> tuple[dict[str, Estimate], Counts]:
    """θ = P(a ``better`` student's score < a ``worse`` student's + ``margin``) for every
    ``(teacher, optimiser, better, worse)``, the intervals simultaneous over the comparisons
    (:class:`~relulab.experiments.criteria.Every`); and the divergence counts of every init
    read."""
    level = simultaneous_level(len(comparisons))
    estimates = {
        f"{t}/{o}: {better} over {worse}": superiority(
            by_unit[t, o][better], by_unit[t, o][worse].shifted(margin), level
        )
        for t, o, better, worse in comparisons
    }
    counts = {
        f"{t}/{o} {name}": by_unit[t, o][name].counts
        for t, o, better, worse in comparisons
        for name in (better, worse)
    }
    return estimates, counts


def _reading(
    by_unit: dict[tuple[str, str], dict[str, Group]],
    comparisons: list[Comparison],
    config: CorrelatedInitConfig,
    margin: float = 0.0,
    detail: str = "",
) -> Reading:
    estimates, counts = _family(by_unit, comparisons, margin)
    return Reading(
        estimates,
        detail="; ".join(filter(None, [detail, divergence_detail(counts)])),
        scale=_scale(config),
        diverged=counts,
    )


def superiority_above(what: str, bound: float = 0.5) -> Above:
    """The criterion P(``what``) > ``bound``, a diverged student ranked last."""
    return Above(f"P({what}), {LAST}", bound)


# ---------------------------------------------------------------------------------------------
# raai-best-or-on-par
# ---------------------------------------------------------------------------------------------
OTHERS = ("he", "aci", "rai")


def _raai_best(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [(t, o, "raai", other) for t in TEACHERS for o in OPTIMISERS for other in OTHERS]
    by_unit = scores(results, config, units=_units(comparisons))
    return _reading(by_unit, comparisons, config, margin=math.log10(config.on_par_ratio))


RAAI_BEST = ClaimSpec(
    "raai-best-or-on-par",
    "RAAI performs better than or on par with all other initialization schemes, on "
    "the standard, simple and complex teachers, with SGD and Adam.",
    source=f"{SOURCE} §5 (Figs. 6–8)",
    criterion=lambda c: Every(
        superiority_above(
            f"a RAAI student's score < another init's + log10 {c.on_par_ratio:g} ('better or on "
            f"par': within ×{c.on_par_ratio:g} in loss)"
        ),
        points_name="teacher × optimiser × other init (He, ACI, RAI)",
    ),
    measure=_raai_best,
    scope="§5: every teacher with SGD and Adam, the whole of training; §6's early-SGD "
    "advantage is its own claim (raai-best-sgd-early)",
    note="'on par' ratio [I]; divergence cap [I]",
    figure="training_standard.png",
    counterexample="RAAI with a Gaussian part of σ_w² = 8 (raai_sigma_w2): its students start "
    "with a huge output and end behind He, ACI and RAI on every teacher",
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
    comparisons = [(t, "sgd", "raai", other) for t in TEACHERS for other in OTHERS]
    by_unit = scores(results, config, last, _units(comparisons))
    return _reading(by_unit, comparisons, config, detail=f"SGD epochs 1…{last} of {epochs}")


RAAI_SGD_EARLY = ClaimSpec(
    "raai-best-sgd-early",
    "RAAI shows a definite advantage over other schemes when using the SGD optimizer, "
    "especially in early training epochs.",
    source=f"{SOURCE} §6 (Figs. 6–8 with SGD)",
    criterion=Every(
        superiority_above("a RAAI student's score over the early SGD epochs < another init's"),
        points_name="teacher × other init (He, ACI, RAI)",
    ),
    measure=_raai_sgd_early,
    scope="SGD, early epochs (the first early_fraction = 20 % [I]), every teacher of §4; a "
    "student that diverged later in training counts as diverged here too (one policy)",
    note="'early' [I]; a definite advantage: better than every other init, not 'on par'",
    figure="training_standard.png",
    counterexample="RAAI with a Gaussian part of σ_w² = 8 (raai_sigma_w2): behind every other "
    "init from the first SGD epochs",
)


# ---------------------------------------------------------------------------------------------
# aci-faster-than-he
# ---------------------------------------------------------------------------------------------
def _aci_faster(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [(t, o, "aci", "he") for t in ("standard", "simple") for o in OPTIMISERS]
    return _reading(scores(results, config, units=_units(comparisons)), comparisons, config)


ACI_FASTER = ClaimSpec(
    "aci-faster-than-he",
    "ReLU networks initialized with ACI train faster than He initialization (standard "
    "and simple teachers, SGD and Adam).",
    source=f"{SOURCE} appendix B (Figs. 9, 10), §6",
    criterion=Every(
        superiority_above("an ACI student's score < a He student's"),
        points_name="teacher × optimiser",
    ),
    measure=_aci_faster,
    scope="standard and simple teachers, SGD and Adam; on the simple teacher with SGD 'at "
    "large epochs' (all inits equal in an initial linear region)",
    note="divergence cap [I]",
    figure="training_standard.png",
    counterexample="ACI at σ_b² = 100 (aci_train_sigma_b2; Table 1's second column read as σ_b²): "
    "a length fixed point q* ≈ 300 gives ACI's students a huge initial output, and He's train "
    "faster",
)


# ---------------------------------------------------------------------------------------------
# positive-slower-than-he
# ---------------------------------------------------------------------------------------------
def _positive_slower(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [(t, o, "he", "positive") for t in ("standard", "simple") for o in OPTIMISERS]
    return _reading(scores(results, config, units=_units(comparisons)), comparisons, config)


POSITIVE_SLOWER = ClaimSpec(
    "positive-slower-than-he",
    "ReLU networks with positively correlated weights train slower than He initialization.",
    source=f"{SOURCE} appendix B (Figs. 9, 10)",
    criterion=Every(
        superiority_above("a He student's score < a positively correlated student's"),
        points_name="teacher × optimiser",
    ),
    measure=_positive_slower,
    scope="standard teacher (Fig. 9); the simple teacher shows 'similar qualitative results' "
    "(Fig. 10)",
    note="divergence cap [I]",
    figure="training_standard.png",
    counterexample="positively correlated rows at a small scale (σ_w² = 0.5, σ_b² = 0: "
    "aci_train_sigma_w2, aci_train_sigma_b2): the positive students start with a small output "
    "and train faster than He's",
)


# ---------------------------------------------------------------------------------------------
# rai-beats-aci-simple
# ---------------------------------------------------------------------------------------------
def _rai_beats_aci(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [("simple", o, "rai", "aci") for o in OPTIMISERS]
    return _reading(scores(results, config, units=_units(comparisons)), comparisons, config)


RAI_BEATS_ACI = ClaimSpec(
    "rai-beats-aci-simple",
    "In between RAI and ACI, the former performs better [on the simple teacher] on "
    "using either optimizer.",
    source=f"{SOURCE} §5 (simple teacher, Fig. 7)",
    criterion=Every(
        superiority_above("a RAI student's score < an ACI student's, simple teacher"),
        points_name="optimiser",
    ),
    measure=_rai_beats_aci,
    scope="the simple teacher, either optimiser",
    note="divergence cap [I]",
    figure="training_simple.png",
    counterexample="ACI at a small scale (σ_w² = 0.5, σ_b² = 0: aci_train_sigma_w2, "
    "aci_train_sigma_b2): ACI's students start with an output as small as RAI's and RAI no "
    "longer ends ahead",
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


def centred(estimate: Estimate, at: float = 0.5) -> Estimate:
    """``estimate − at`` (a probability of superiority centred on 'neither ends better').

    Example:
        >>> centred(Estimate(0.9, 0.7, 1.0, 10)).describe()
        '0.4 [0.2, 0.5], n = 10'
    """
    return Estimate(
        round(estimate.value - at, 12),
        round(estimate.low - at, 12),
        round(estimate.high - at, 12),
        estimate.n,
        estimate.level,
        estimate.method,
    )


def _order(results: Results, config: CorrelatedInitConfig) -> Reading:
    """P(an ACI student's score < a RAI student's) − ½ on the standard teacher under each
    optimiser, both signed by the optimiser whose value lies farther from 0: the statement
    holds when the other one's is then negative (opposite orders), both intervals excluding 0."""
    by_unit = scores(results, config, units=[("standard", o) for o in OPTIMISERS])
    sgd, adam = (
        centred(superiority(by_unit["standard", o]["aci"], by_unit["standard", o]["rai"]))
        for o in OPTIMISERS
    )
    closer = min((sgd, adam), key=lambda est: abs(est.value))
    farther = adam if closer is sgd else sgd
    sign = 1.0 if farther.value >= 0 else -1.0
    counts = {
        f"standard/{o} {name}": by_unit["standard", o][name].counts
        for o in OPTIMISERS
        for name in ("aci", "rai")
    }
    return Reading(
        {"closer": oriented(closer, sign), "farther": oriented(farther, sign)},
        detail=f"P(ACI over RAI) − ½: SGD {sgd.describe()}; Adam {adam.describe()}; "
        + divergence_detail(counts),
        scale=_scale(config),
        diverged=counts,
    )


ORDER_DEPENDS = ClaimSpec(
    "rai-aci-order-depends-on-optimiser",
    "On the standard teacher the relative performance of RAI and ACI depends on the "
    "optimization algorithm.",
    source=f"{SOURCE} §5 (standard teacher, Fig. 6)",
    criterion=AllOf(
        {
            "closer": Below(
                f"P(an ACI student's score < a RAI student's) − ½ ({LAST}) under the optimiser "
                "where it lies closer to 0, signed so that the other optimiser's is positive",
                0.0,
            ),
            "farther": Above("under the other optimiser", 0.0),
        },
        headline_part="closer",
    ),
    measure=_order,
    scope="the standard teacher",
    note="opposite orders under SGD and Adam, both 95 % intervals excluding ½; divergence cap [I]",
    figure="training_standard.png",
    counterexample="ACI at σ_b² = 100 (aci_train_sigma_b2): far behind RAI under both "
    "optimisers, so the order cannot depend on the optimiser",
)


# ---------------------------------------------------------------------------------------------
# aci-worse-sgd-complex-intermediate
# ---------------------------------------------------------------------------------------------
INTERMEDIATE_OTHERS = ("he", "rai", "raai")


def _at(students: Students, config: CorrelatedInitConfig, epoch: int) -> dict[str, Group]:
    """Per init, every student's log10 validation loss at ``epoch`` and its divergence."""
    curves = log_validation(students)[:, epoch]
    flags = diverged(students, config)
    return {name: Group(curves[rows], flags[rows]) for name, rows in init_rows(students).items()}


def _aci_worst(groups: dict[str, Group], level: float) -> Estimate:
    """The smallest over He, RAI, RAAI of P(ACI's student ends worse than the other's), each at
    the level that makes the smallest's ``level`` (:func:`~.readings.lowest`): above ½, ACI
    is worse than every other init."""
    each = 1.0 - (1.0 - level) / len(INTERMEDIATE_OTHERS)
    return lowest(
        {other: superiority(groups[other], groups["aci"], each) for other in INTERMEDIATE_OTHERS}
    )


def _intermediate(results: Results, config: CorrelatedInitConfig) -> Reading:
    """ACI worse than the other Table 1 inits with SGD on the complex teacher in an
    intermediate region of training, and not so with Adam nor at the end (the seed's contrast).

    Every interior epoch (10–90 % of training) is judged at the simultaneous level; the epoch
    whose interval lies highest carries the claim, and its contrasts with Adam at the same
    fraction of training and with the end of SGD training are judged at the same level
    (each side at the half-way level, :func:`~.readings.difference`)."""
    sgd = students_of(results, trained_on("complex", "sgd"))
    adam = students_of(results, trained_on("complex", "adam"))
    epochs, adam_epochs = len(sgd.steps) - 1, len(adam.steps) - 1
    interior = np.arange(max(1, round(0.1 * epochs)), max(2, round(0.9 * epochs)) + 1)
    level = simultaneous_level(len(interior))
    gaps = {int(e): _aci_worst(_at(sgd, config, int(e)), level) for e in interior}
    best = max(gaps, key=lambda e: gaps[e].low)
    matched = round(best / epochs * adam_epochs)
    half = (1.0 + level) / 2.0
    at_best = _aci_worst(_at(sgd, config, best), half)
    with_adam = _aci_worst(_at(adam, config, matched), half)
    at_end = _aci_worst(_at(sgd, config, epochs), half)
    counts = {
        f"complex/{o} {name}": count
        for o, view in (("sgd", sgd), ("adam", adam))
        for name, count in divergence(view, config).items()
        if name in ("aci", *INTERMEDIATE_OTHERS)
    }
    return Reading(
        {
            "sgd": gaps[best],
            "vs_adam": difference(at_best, with_adam),
            "vs_end": difference(at_best, at_end),
        },
        detail=f"SGD epoch {best} of {epochs} (Adam epoch {matched} of {adam_epochs}); the "
        f"smallest P(ACI worse than another) at the end of SGD {at_end.value:.2f}, with Adam at "
        f"{matched} {with_adam.value:.2f}; " + divergence_detail(counts),
        scale=_scale(config),
        diverged=counts,
    )


ACI_WORSE_INTERMEDIATE = ClaimSpec(
    "aci-worse-sgd-complex-intermediate",
    "For a complex teacher, ACI performs worse than other initializations on training "
    "with SGD in some intermediate region.",
    source=f"{SOURCE} appendix B (Fig. 11), §5 (complex teacher, Fig. 8)",
    criterion=AllOf(
        {
            "sgd": Above(
                "the smallest over He, RAI, RAAI of P(an ACI student's log10 validation loss > "
                f"the other init's) ({LAST}; above ½: ACI worse than every other), SGD, at the "
                "interior epoch (10–90 % of training) whose interval (simultaneous over the "
                "interior epochs) lies highest",
                0.5,
            ),
            "vs_adam": Above("that probability − the same with Adam at the same fraction", 0.0),
            "vs_end": Above("that probability − the same at the end of SGD training", 0.0),
        },
        headline_part="sgd",
    ),
    measure=_intermediate,
    scope="the complex teacher, SGD, an intermediate region of training: §6 'poor performance "
    "with SGD during an intermediate learning stage … consistent with the absence of a similar "
    "regime on training with Adam'",
    note="divergence cap [I]",
    figure="training_complex.png",
    counterexample="RAAI with a Gaussian part of σ_w² = 8 (raai_sigma_w2): ACI ends ahead of "
    "RAAI at every epoch, so it is never worse than every other init",
)


# ---------------------------------------------------------------------------------------------
# bounded-chaotic-window-trains-fastest (beyond the seed)
# ---------------------------------------------------------------------------------------------
def _window_fastest(results: Results, config: CorrelatedInitConfig) -> Reading:
    students = students_of(results, Key.PLANE)
    groups = training_scores(students, config)
    inside = plane_phases(students, config) == "chaotic"
    scores_all = np.empty(len(inside))
    flags = diverged(students, config)
    for name, rows in init_rows(students).items():
        scores_all[rows] = groups[name].values
    order = np.random.default_rng(0).permutation(int((~inside).sum()))
    inner = Group(scores_all[inside], flags[inside])
    outer = Group(scores_all[~inside][order], flags[~inside][order])
    counts = {"inside": inner.counts, "outside": outer.counts}
    return Reading(
        superiority(inner, outer),
        detail=f"{int(inside.sum())} students inside, {int((~inside).sum())} outside (in a fixed "
        f"random order, paired with the inside ones in turn); grid σ_w² {config.plane_sigma_w2}, "
        f"k {config.plane_k}; " + divergence_detail(counts),
        scale=scale(f"{config.plane_seeds} seeds per grid point"),
        diverged=counts,
    )


WINDOW_TRAINS_FASTEST = ClaimSpec(
    "bounded-chaotic-window-trains-fastest",
    "It may be beneficial for a ReLU network to remain in the bounded chaotic subspace "
    "(beyond the seed: tested over the (σ_w², k) plane).",
    source=f"{SOURCE} §2 ('it may be beneficial for a ReLU network to remain in this subspace')",
    criterion=superiority_above(
        f"a student inside the mean-field bounded chaotic window scores lower ({SCORE}) than one "
        "outside (standard teacher, Adam)"
    ),
    measure=_window_fastest,
    note="divergence cap [I]",
    figure="plane.png",
    beyond_seed=True,
    counterexample="a plane whose outside points lie at a small σ_w² (plane_sigma_w2 = (0.5, "
    "2.2, 2.6), plane_k = (−0.99,)): the ordered students start with a smaller output and "
    "train faster than the window's",
)

SPEED_CLAIMS = (
    RAAI_SGD_EARLY,
    RAAI_BEST,
    ACI_FASTER,
    POSITIVE_SLOWER,
    RAI_BEATS_ACI,
    ORDER_DEPENDS,
    ACI_WORSE_INTERMEDIATE,
)
