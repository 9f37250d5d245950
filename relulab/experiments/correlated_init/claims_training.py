"""Claims of seed 003 §4–6: teacher–student training of students initialised He, ACI, RAI and
RAAI on the standard, simple and complex teachers with SGD and Adam, and the (σ_w², k) plane
(beyond the seed); appendix B's family (ACI, positive control, He at their bias) is
:mod:`.claims_appendix_b`, the deeper students of §5 :mod:`.claims_overfitting`.

**Bias and initial output scale (issue 45).** Every comparison is made at one bias
(:mod:`.inits`): §5's schemes He, RAI, RAAI at σ_b² = 0 (their mean-field bias), ACI with them
as ``aci-unbiased``; and on two populations (:data:`POPULATIONS`) — the students as initialised
and their output-matched twins (:func:`~.inits.matched`), whose initial output variance over the
training inputs is ``matched_output_variance`` — so a claim holds only if the scheme's effect
survives at a common initial output scale (:func:`both_populations`,
:func:`in_both_populations`).

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
from relulab.experiments.correlated_init.inits import ACI_UNBIASED, is_matched, matched
from relulab.experiments.correlated_init.readings import (
    Group,
    init_rows,
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
    "LAST",
    "ORDER_DEPENDS",
    "POPULATIONS",
    "RAAI_BEST",
    "RAAI_CLAIMS",
    "RAAI_SGD_EARLY",
    "RAI_BEATS_ACI",
    "SECTION5_CLAIMS",
    "WINDOW_TRAINS_FASTEST",
    "both_populations",
    "centred",
    "divergence_detail",
    "early_epochs",
    "in_both_populations",
    "oriented",
    "scores",
    "speed_reading",
    "students_of",
    "superiority_above",
    "training_scale",
    "units_of",
]

SCORE = "mean over epochs of log10 validation loss"
#: the two populations every speed claim is judged on (issue 45)
POPULATIONS = ("as initialised", "output-matched")
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


def units_of(comparisons: list[Comparison]) -> list[tuple[str, str]]:
    """The (teacher, optimiser) units the comparisons read, in order."""
    return list(dict.fromkeys((t, o) for t, o, _, _ in comparisons))


def training_scale(config: CorrelatedInitConfig) -> str:
    """The students' sizes, for a training claim's record."""
    return scale(
        f"students {config.train_depth}×{config.train_width}, {config.train_samples} samples, "
        f"{config.train_seeds} seeds; twins at output variance {config.matched_output_variance:g}",
    )


def _counts(groups: dict[str, Group]) -> Counts:
    return {name: group.counts for name, group in groups.items()}


def divergence_detail(counts: Counts) -> str:
    """The groups with diverged students, for a claim's detail (all are in its record)."""
    shown = [f"{name} {d}/{n}" for name, (d, n) in counts.items() if d]
    return "diverged (ranked last): " + (", ".join(shown) if shown else "none")


def both_populations(comparisons: list[Comparison]) -> list[Comparison]:
    """``comparisons`` as initialised, then the same between the output-matched twins
    (:func:`~.inits.matched`): a speed claim holds only if the scheme's effect survives at a
    common initial output scale (issue 45).

    Example:
        >>> both_populations([("simple", "sgd", "rai", "aci-unbiased")])[1]
        ('simple', 'sgd', 'rai-matched', 'aci-unbiased-matched')
    """
    twins = [(t, o, matched(better), matched(worse)) for t, o, better, worse in comparisons]
    return [*comparisons, *twins]


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


def speed_reading(
    by_unit: dict[tuple[str, str], dict[str, Group]],
    comparisons: list[Comparison],
    config: CorrelatedInitConfig,
    margin: float = 0.0,
    detail: str = "",
    scale_text: str = "",
) -> Reading:
    """Every comparison of ``comparisons`` on both populations (:func:`both_populations`), the
    intervals simultaneous over all of them, with the divergence counts of every init read
    (``scale_text``: the record's scale, default the students')."""
    estimates, counts = _family(by_unit, both_populations(comparisons), margin)
    return Reading(
        estimates,
        detail="; ".join(filter(None, [detail, divergence_detail(counts)])),
        scale=scale_text or training_scale(config),
        diverged=counts,
    )


def superiority_above(what: str, bound: float = 0.5) -> Above:
    """The criterion P(``what``) > ``bound``, a diverged student ranked last."""
    return Above(f"P({what}), {LAST}", bound)


def in_both_populations(criterion: AllOf) -> AllOf:
    """``criterion`` judged as initialised and on the output-matched twins (issue 45): the
    statement holds only where it holds in both; the headline is the matched population's."""
    return AllOf(dict.fromkeys(POPULATIONS, criterion), headline_part=POPULATIONS[1])


# ---------------------------------------------------------------------------------------------
# raai-best-or-on-par
# ---------------------------------------------------------------------------------------------
OTHERS = ("he", ACI_UNBIASED, "rai")  # §5's schemes at RAAI's (mean-field) bias, σ_b² = 0


def _raai_best(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [(t, o, "raai", other) for t in TEACHERS for o in OPTIMISERS for other in OTHERS]
    by_unit = scores(results, config, units=units_of(comparisons))
    return speed_reading(by_unit, comparisons, config, margin=math.log10(config.on_par_ratio))


RAAI_BEST: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "raai-best-or-on-par",
    "RAAI performs better than or on par with all other initialization schemes, on "
    "the standard, simple and complex teachers, with SGD and Adam.",
    source=f"{SOURCE} §5 (Figs. 6–8)",
    criterion=lambda c: Every(
        superiority_above(
            f"a RAAI student's score < another init's + log10 {c.on_par_ratio:g} ('better or on "
            f"par': within ×{c.on_par_ratio:g} in loss)"
        ),
        points_name="population (as initialised, output-matched) × teacher × optimiser × other "
        "init (He, ACI at σ_b² = 0, RAI)",
    ),
    measure=_raai_best,
    scope="§5: every teacher with SGD and Adam, the whole of training; the schemes at RAAI's "
    "(mean-field) bias σ_b² = 0 (ACI as aci-unbiased), as initialised and with every student's "
    "initial output variance matched (issue 45); §6's early-SGD advantage is its own claim "
    "(raai-best-sgd-early)",
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
    by_unit = scores(results, config, last, units_of(comparisons))
    return speed_reading(by_unit, comparisons, config, detail=f"SGD epochs 1…{last} of {epochs}")


RAAI_SGD_EARLY: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "raai-best-sgd-early",
    "RAAI shows a definite advantage over other schemes when using the SGD optimizer, "
    "especially in early training epochs.",
    source=f"{SOURCE} §6 (Figs. 6–8 with SGD)",
    criterion=Every(
        superiority_above("a RAAI student's score over the early SGD epochs < another init's"),
        points_name="population (as initialised, output-matched) × teacher × other init (He, "
        "ACI at σ_b² = 0, RAI)",
    ),
    measure=_raai_sgd_early,
    scope="SGD, early epochs (the first early_fraction = 20 % [I]), every teacher of §4; the "
    "schemes at σ_b² = 0, as initialised and output-matched (issue 45); a student that diverged "
    "later in training counts as diverged here too (one policy)",
    note="'early' [I]; a definite advantage: better than every other init, not 'on par'",
    figure="training_standard.png",
    counterexample="RAAI with a Gaussian part of σ_w² = 8 (raai_sigma_w2): behind every other "
    "init from the first SGD epochs",
)


COUNTER_ACI = (
    "ACI far in the unbounded phase (aci_train_sigma_w2 = 8; ACI at σ_b² = 0 then has a length "
    "growing by 8(1/2 − 1/2π) ≈ 2.7 per layer): its students, as initialised and output-matched, "
    "end behind RAI's"
)
COUNTER_ACI_ORDER = (
    "ACI far in the unbounded phase (aci_train_sigma_w2 = 8): behind RAI under both optimisers, "
    "so the order cannot depend on the optimiser"
)


# ---------------------------------------------------------------------------------------------
# rai-beats-aci-simple
# ---------------------------------------------------------------------------------------------
def _rai_beats_aci(results: Results, config: CorrelatedInitConfig) -> Reading:
    comparisons = [("simple", o, "rai", ACI_UNBIASED) for o in OPTIMISERS]
    by_unit = scores(results, config, units=units_of(comparisons))
    return speed_reading(by_unit, comparisons, config)


RAI_BEATS_ACI: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "rai-beats-aci-simple",
    "In between RAI and ACI, the former performs better [on the simple teacher] on "
    "using either optimizer.",
    source=f"{SOURCE} §5 (simple teacher, Fig. 7)",
    criterion=Every(
        superiority_above("a RAI student's score < an ACI student's, simple teacher"),
        points_name="population (as initialised, output-matched) × optimiser",
    ),
    measure=_rai_beats_aci,
    scope="the simple teacher, either optimiser; ACI at RAI's (mean-field) bias σ_b² = 0 "
    "(aci-unbiased), as initialised and output-matched (issue 45)",
    note="divergence cap [I]",
    figure="training_simple.png",
    counterexample=COUNTER_ACI,
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


def _order_parts(
    by_unit: dict[tuple[str, str], dict[str, Group]], aci: str, rai: str, level: float
) -> tuple[dict[str, Estimate], str]:
    """The two parts of the order claim for one population, and their description."""
    sgd, adam = (
        centred(superiority(by_unit["standard", o][aci], by_unit["standard", o][rai], level))
        for o in OPTIMISERS
    )
    closer = min((sgd, adam), key=lambda est: abs(est.value))
    farther = adam if closer is sgd else sgd
    sign = 1.0 if farther.value >= 0 else -1.0
    parts = {"closer": oriented(closer, sign), "farther": oriented(farther, sign)}
    return parts, f"SGD {sgd.describe()}; Adam {adam.describe()}"


def _order(results: Results, config: CorrelatedInitConfig) -> Reading:
    """P(an ACI student's score < a RAI student's) − ½ on the standard teacher under each
    optimiser, both signed by the optimiser whose value lies farther from 0: the statement
    holds when the other one's is then negative (opposite orders), both intervals excluding 0;
    in each population (ACI at RAI's bias, σ_b² = 0), each interval at 1 − 0.05/2."""
    by_unit = scores(results, config, units=[("standard", o) for o in OPTIMISERS])
    level = simultaneous_level(len(POPULATIONS))
    measured, described = {}, []
    for population, (aci, rai) in zip(
        POPULATIONS, ((ACI_UNBIASED, "rai"), (matched(ACI_UNBIASED), matched("rai"))), strict=True
    ):
        measured[population], text = _order_parts(by_unit, aci, rai, level)
        described.append(f"{population}: {text}")
    names = (ACI_UNBIASED, "rai", matched(ACI_UNBIASED), matched("rai"))
    counts = {
        f"standard/{o} {name}": by_unit["standard", o][name].counts
        for o in OPTIMISERS
        for name in names
    }
    return Reading(
        measured,
        detail="P(ACI over RAI) − ½: " + "; ".join(described) + "; " + divergence_detail(counts),
        scale=training_scale(config),
        diverged=counts,
    )


_ORDER_PARTS = AllOf(
    {
        "closer": Below(
            f"P(an ACI student's score < a RAI student's) − ½ ({LAST}) under the optimiser "
            "where it lies closer to 0, signed so that the other optimiser's is positive",
            0.0,
        ),
        "farther": Above("under the other optimiser", 0.0),
    },
    headline_part="closer",
)

ORDER_DEPENDS: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "rai-aci-order-depends-on-optimiser",
    "On the standard teacher the relative performance of RAI and ACI depends on the "
    "optimization algorithm.",
    source=f"{SOURCE} §5 (standard teacher, Fig. 6)",
    criterion=in_both_populations(_ORDER_PARTS),
    measure=_order,
    scope="the standard teacher; ACI at RAI's (mean-field) bias σ_b² = 0 (aci-unbiased), as "
    "initialised and output-matched (issue 45)",
    note="opposite orders under SGD and Adam, in each population both intervals (at 97.5 %) "
    "excluding ½; divergence cap [I]",
    figure="training_standard.png",
    counterexample=COUNTER_ACI_ORDER,
)


# ---------------------------------------------------------------------------------------------
# bounded-chaotic-window-trains-fastest (beyond the seed)
# ---------------------------------------------------------------------------------------------
def _window_pair(
    students: Students, config: CorrelatedInitConfig, twins: bool, level: float
) -> tuple[Estimate, Counts, int]:
    """P(a student inside the window scores lower than one outside) in one population."""
    groups = training_scores(students, config)
    names = [n for n in init_rows(students) if is_matched(n) == twins]
    rows = np.concatenate([init_rows(students)[n] for n in names])
    inside = plane_phases(students, config)[rows] == "chaotic"
    values = np.concatenate([groups[n].values for n in names])
    flags = np.concatenate([groups[n].diverged for n in names])
    order = np.random.default_rng(0).permutation(int((~inside).sum()))
    inner = Group(values[inside], flags[inside])
    outer = Group(values[~inside][order], flags[~inside][order])
    return (
        superiority(inner, outer, level),
        {"inside": inner.counts, "outside": outer.counts},
        (int(inside.sum())),
    )


def _window_fastest(results: Results, config: CorrelatedInitConfig) -> Reading:
    students = students_of(results, Key.PLANE)
    level = simultaneous_level(len(POPULATIONS))
    measured, counts, inside = {}, {}, 0
    for population, twins in zip(POPULATIONS, (False, True), strict=True):
        measured[population], found, inside = _window_pair(students, config, twins, level)
        counts.update({f"{population} {side}": count for side, count in found.items()})
    outside = len(plane_phases(students, config)) // len(POPULATIONS) - inside
    return Reading(
        measured,
        detail=f"{inside} students inside, {outside} outside per population (in a fixed "
        f"random order, paired with the inside ones in turn); grid σ_w² {config.plane_sigma_w2}, "
        f"k {config.plane_k}; " + divergence_detail(counts),
        scale=scale(f"{config.plane_seeds} seeds per grid point, each with its twin"),
        diverged=counts,
    )


WINDOW_TRAINS_FASTEST: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "bounded-chaotic-window-trains-fastest",
    "It may be beneficial for a ReLU network to remain in the bounded chaotic subspace "
    "(beyond the seed: tested over the (σ_w², k) plane).",
    source=f"{SOURCE} §2 ('it may be beneficial for a ReLU network to remain in this subspace')",
    criterion=Every(
        superiority_above(
            f"a student inside the mean-field bounded chaotic window scores lower ({SCORE}) than "
            "one outside (standard teacher, Adam)"
        ),
        points_name="population (as initialised, output-matched)",
    ),
    measure=_window_fastest,
    note="divergence cap [I]",
    figure="plane.png",
    beyond_seed=True,
    counterexample="a plane whose outside points lie at a small σ_w² (plane_sigma_w2 = (0.5, "
    "2.2, 2.6), plane_k = (−0.99,)): the ordered students start with a smaller output and "
    "train faster than the window's",
)

RAAI_CLAIMS = (RAAI_SGD_EARLY, RAAI_BEST)
SECTION5_CLAIMS = (RAI_BEATS_ACI, ORDER_DEPENDS)
