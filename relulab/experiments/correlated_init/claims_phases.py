"""Claims and checks of seed 003 §2 (Figs. 1–3) on wide random networks: the seed's two
statements about what networks do — no chaos without anti-correlation, and ACI's bounded chaotic
window — are claims; relulab's mean field against relulab's simulation of the same networks
(the length's two phases, the correlation map across the Fig. 3 sweep, the stability change at
χ1 = 1, and, beyond the seed, the backward growth of gradients by χ1) are *checks*: the mean
field is the infinite-width limit of the very networks simulated, so under any setting they
agree up to finite-size scatter, and the experiment could not fail them.

Each measurement is one :class:`~relulab.analysis.Estimate` per probe point over the
``correlation_networks`` networks (Student t). A claim that covers several points judges every
point (:class:`~relulab.experiments.criteria.Every`) on intervals simultaneous over the points
it keeps — fixed by the config before the run — never the raw worst of K.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from relulab.analysis import (
    Estimate,
    fit_log_slope,
    interpolated_crossing,
    mean_ci,
    simultaneous_level,
    statistic_ci,
)
from relulab.analysis import where as rows_of
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.correlated_init.config import SOURCE, CorrelatedInitConfig, scale
from relulab.experiments.correlated_init.readings import label
from relulab.experiments.correlated_init.theory import PointTheory, growth_window, point_theory
from relulab.experiments.correlated_init.units import Key, Probes, probe_points
from relulab.experiments.criteria import Above, AllOf, Below, Every, Within

__all__ = [
    "CHAOS_ONSET",
    "CORRELATION_MAP",
    "GRADIENT_GROWTH",
    "LENGTH_PHASE",
    "NO_CHAOS_UNCORRELATED",
    "PHASE_CLAIMS",
    "WINDOW_CHAOS",
    "onset_error",
    "per_point",
]

PerNetwork = Callable[[Probes, np.ndarray, PointTheory, CorrelatedInitConfig], np.ndarray]

THEORY_CHECK = (
    "relulab's mean field against relulab's simulation of the same networks: the mean-field "
    "map is the infinite-width limit of the very model simulated (the seed's formulas were "
    "lost; relulab reconstructs them), so under any setting — k, σ_w², σ_b², the reading of "
    "k — simulation and map agree up to finite-width scatter; the experiment could not fail it"
)


def _probes(results: Results) -> Probes:
    return Probes.read(results[Key.PROPAGATION], Key.PROPAGATION)


def _scale(config: CorrelatedInitConfig) -> str:
    return scale(f"width {config.correlation_width}, depth {config.correlation_depth}")


def kept_points(
    config: CorrelatedInitConfig, keep: Callable[[PointTheory], bool] = lambda theory: True
) -> list[tuple[float, float]]:
    """The probe points whose mean-field theory passes ``keep`` — fixed by the config before
    the run (they set the simultaneous level of :func:`per_point`)."""
    return [p for p in probe_points(config) if keep(point_theory(*p, config))]


def per_point(
    results: Results,
    config: CorrelatedInitConfig,
    per_network: PerNetwork,
    keep: Callable[[PointTheory], bool] = lambda theory: True,
) -> dict[str, Estimate]:
    """``mean_ci`` over the networks of ``per_network(probes, rows, theory, config)`` at every
    probe point whose mean-field ``theory`` passes ``keep``, by the point's :func:`label`; the
    intervals simultaneous over those K points (:func:`~relulab.analysis.simultaneous_level`,
    level :math:`1 - 0.05/K` each) for :class:`~relulab.experiments.criteria.Every`."""
    probes = _probes(results)
    points = kept_points(config, keep)
    level = simultaneous_level(len(points)) if points else 0.95
    estimates = {}
    for p in points:
        rows = rows_of(probes.conditions, k=float(p[0]), sigma_w2=float(p[1]))
        values = per_network(probes, rows, point_theory(*p, config), config)
        estimates[label(*p)] = mean_ci(values, level)
    return estimates


def _phases(config: CorrelatedInitConfig) -> dict[str, str]:
    return {label(*p): point_theory(*p, config).phase for p in probe_points(config)}


# ---------------------------------------------------------------------------------------------
# length-phase-matches-theory
# ---------------------------------------------------------------------------------------------
def _growth(
    probes: Probes, rows: np.ndarray, theory: PointTheory, config: CorrelatedInitConfig
) -> np.ndarray:
    """Simulated growth rate of the length per layer, second half of the layers, per network."""
    window = growth_window(config.correlation_depth)
    return np.array([fit_log_slope(window, row[window - 1]) for row in probes.length[rows]])


def _growth_error(
    probes: Probes, rows: np.ndarray, theory: PointTheory, config: CorrelatedInitConfig
) -> np.ndarray:
    """Simulated − mean-field growth rate of the length per layer, second half of the layers."""
    return _growth(probes, rows, theory, config) - theory.growth


def _bounded(theory: PointTheory) -> bool:
    return theory.bounded


def _unbounded(theory: PointTheory) -> bool:
    return not theory.bounded


def _length_phase(results: Results, config: CorrelatedInitConfig) -> Reading:
    return Reading(
        {
            "bounded": per_point(results, config, _growth_error, keep=_bounded),
            "unbounded": per_point(results, config, _growth, keep=_unbounded),
        },
        scale=_scale(config),
    )


LENGTH_PHASE: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "length-phase-matches-theory",
    "The length map has a bounded phase and an unbounded one, separated by "
    "σ_w² = 2π/(aπ + b): anti-correlation moves the boundary up, positive correlation "
    "down; simulated lengths grow (or stay) as predicted on both sides of it.",
    source=f"{SOURCE} §2 ('The length is bounded if …'), Figs. 1–3",
    criterion=lambda c: AllOf(
        {
            "bounded": Every(
                Within(
                    "simulated − mean-field growth rate of the length per layer (second half "
                    "of the layers)",
                    0.0,
                    c.growth_atol,
                ),
                points_name="probe point theory puts in the bounded phase",
            ),
            "unbounded": Every(
                Above("simulated growth rate of the length per layer", 0.0),
                points_name="probe point theory puts in the unbounded phase (σ_w² ≥ 2π/(aπ + b))",
            ),
        },
        headline_part="bounded",
    ),
    measure=_length_phase,
    scope="σ_b² > 0 (the length's fixed point is finite only with a bias), both sides of the "
    "boundary; one k per side of 0 in the seed's figures",
    note="tolerance [I]",
    figure="phase_probes.png",
    check=THEORY_CHECK + " (the growth per layer at the points the map puts in either phase)",
)


# ---------------------------------------------------------------------------------------------
# no-chaos-uncorrelated
# ---------------------------------------------------------------------------------------------
def _near_change(
    probes: Probes, rows: np.ndarray, theory: PointTheory, config: CorrelatedInitConfig
) -> np.ndarray:
    """c_L − c_0 of the near pair: positive when close signals correlate."""
    return probes.correlation_near[rows, -1] - config.near_c0


def _no_chaos(results: Results, config: CorrelatedInitConfig) -> Reading:
    # uncorrelated or positively correlated: no chaotic phase at any σ_w²
    not_chaotic = per_point(results, config, _near_change, keep=_not_anti)
    return Reading(not_chaotic, scale=_scale(config))


def _not_anti(theory: PointTheory) -> bool:
    return theory.b >= 0


NO_CHAOS_UNCORRELATED: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "no-chaos-uncorrelated",
    "ReLU networks with uncorrelated (or positively correlated) weights have no "
    "chaotic phase: two close signals become more correlated at every σ_w², also in the "
    "unbounded phase.",
    source=f"{SOURCE} §2 ('ReLU networks with uncorrelated weights'), Figs. 1a, 2",
    criterion=lambda c: Every(
        Above(f"c_L − c_0 of the near pair (c_0 = {c.near_c0}), b ≥ 0 (no anti-correlation)", 0.0),
        points_name="probe point with b ≥ 0",
    ),
    measure=_no_chaos,
    scope="asymptotically ('become asymptotically correlated for all σ_w²'); the unbounded "
    "phase from Fig. 2's numerics",
    figure="phase_probes.png",
    counterexample="the same uncorrelated networks with tanh in place of ReLU at σ_w² = 4 (§6: "
    "'networks with other non-linear activation functions like tanh … have a chaotic phase even "
    "with uncorrelated weights'): close signals decorrelate",
)


# ---------------------------------------------------------------------------------------------
# aci-bounded-chaos
# ---------------------------------------------------------------------------------------------
def _in_window(theory: PointTheory) -> bool:
    return theory.b < 0 and theory.phase == "chaotic"


def _window_chaos(results: Results, config: CorrelatedInitConfig) -> Reading:
    window_points = per_point(results, config, _near_change, keep=_in_window)
    if not window_points:
        return Reading({"none": Estimate(math.nan, math.nan, math.nan, 0)}, scale=_scale(config))
    return Reading(window_points, scale=_scale(config))


WINDOW_CHAOS: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "aci-bounded-chaos",
    "Anti-correlated weights open a bounded chaotic phase 2/a < σ_w² < 2π/(aπ + b): "
    "close signals decorrelate there while the length stays bounded.",
    source=f"{SOURCE} §2 ('anti-correlations induce a bounded chaotic phase'), Figs. 1b, 3",
    criterion=lambda c: Every(
        Below(f"c_L − c_0 of the near pair (c_0 = {c.near_c0})", 0.0),
        points_name=f"k = {c.aci_k:g} point theory puts in the bounded chaotic window",
    ),
    measure=_window_chaos,
    scope="anti-correlated weights (b < 0) in the window; 'two closely related signals will "
    "eventually lose correlations' (asymptotically)",
    figure="phase_probes.png",
    counterexample="a large bias (sigma_b2 = 10): the correlation's fixed point c* moves above "
    "the near pairs' c_0 = 0.95, so close signals correlate further at every window point",
)


# ---------------------------------------------------------------------------------------------
# correlation-theory-matches-simulation
# ---------------------------------------------------------------------------------------------
def _far_error(
    probes: Probes, rows: np.ndarray, theory: PointTheory, config: CorrelatedInitConfig
) -> np.ndarray:
    """Simulated − mean-field correlation of the far pair at the last layer."""
    return probes.correlation[rows, -1] - theory.correlation[-1]


def _correlation_map(results: Results, config: CorrelatedInitConfig) -> Reading:
    return Reading(per_point(results, config, _far_error), scale=_scale(config))


CORRELATION_MAP: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "correlation-theory-matches-simulation",
    "The mean-field correlation map describes finite-width networks: the correlation of "
    "two signals after many layers matches theory across the σ_w² sweep (Fig. 3).",
    source=f"{SOURCE} §2, Fig. 3",
    criterion=lambda c: Every(
        Within(
            f"simulated − mean-field c_L of the far pairs (c_0 = {c.correlation_c0})",
            0.0,
            c.correlation_atol,
        ),
        points_name="probe point",
    ),
    measure=_correlation_map,
    scope="large width (the mean field's limit), after many layers; Fig. 3 shows one "
    "anti-correlated strength across σ_w²",
    note="tolerance [I]",
    figure="fig3_sweep.png",
    check=THEORY_CHECK + " (the far pairs' correlation after many layers)",
)


# ---------------------------------------------------------------------------------------------
# chaos-onset-at-chi1
# ---------------------------------------------------------------------------------------------
def _onset_changes(results: Results, config: CorrelatedInitConfig) -> list[np.ndarray]:
    """The near pair's c_L − c_0 per network at every σ_w² of the sweep, in increasing σ_w²."""
    probes = _probes(results)
    return [
        probes.correlation_near[
            rows_of(probes.conditions, k=float(config.aci_k), sigma_w2=float(w2)), -1
        ]
        - config.near_c0
        for w2 in sorted(config.sweep_sigma_w2)
    ]


def onset_error(
    per_point_changes: list[np.ndarray], config: CorrelatedInitConfig
) -> tuple[Estimate, Estimate, float]:
    """Where, along the Fig. 3 sweep, the near pair turns from correlating to decorrelating
    (interpolated, jackknife over networks), minus the mean-field crossing at the same depth.

    Returns:
        ``(simulated − mean field, simulated onset, mean-field onset)``.
    """
    sweep = np.array(sorted(config.sweep_sigma_w2))
    n = min(len(p) for p in per_point_changes)

    def onset(*changes: np.ndarray, axis: int = -1) -> np.ndarray:
        means = np.stack([np.mean(c, axis=axis) for c in changes], axis=-1)
        flat = means.reshape(-1, len(sweep))
        crossings = [interpolated_crossing(sweep, row, 0.0) for row in flat]
        return np.array(crossings).reshape(means.shape[:-1])

    measured = statistic_ci([p[:n] for p in per_point_changes], onset, vectorized=True)
    theory = [point_theory(config.aci_k, w2, config).correlation_near[-1] for w2 in sweep]
    expected = interpolated_crossing(sweep, np.array(theory) - config.near_c0, 0.0)
    error = Estimate(
        measured.value - expected,
        measured.low - expected,
        measured.high - expected,
        measured.n,
        measured.level,
        measured.method,
    )
    return error, measured, expected


def _chaos_onset(results: Results, config: CorrelatedInitConfig) -> Reading:
    error, measured, expected = onset_error(_onset_changes(results, config), config)
    return Reading(
        error,
        detail=f"simulated onset {measured.describe()}; mean field at depth "
        f"{config.correlation_depth}: {expected:.3f}; χ1 = 1 at σ_w² = 2/a",
        scale=_scale(config),
    )


CHAOS_ONSET: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "chaos-onset-at-chi1",
    "The stability of the correlation fixed point c* = 1 changes at χ1 = 1 (σ_w² = 2/a): "
    "below it close signals correlate, above it they decorrelate.",
    source=f"{SOURCE} §2 ('the stability of the fixed point changes at …'), Fig. 3",
    criterion=lambda c: Within(
        f"σ_w² where the near pair's c_L − c_0 turns negative along the k = {c.aci_k:g} sweep, "
        "minus the mean-field crossing at the same depth",
        0.0,
        0.1,
    ),
    measure=_chaos_onset,
    scope="at the length's fixed point q* (reached 'within a few layers'); the anti-correlated "
    "strength of Fig. 3",
    note="tolerance 0.1 in σ_w² [I]; at finite depth the crossing sits above χ1 = 1",
    figure="fig3_sweep.png",
    check=THEORY_CHECK + " (where, along the sweep, the near pairs' simulated c_L − c_0 turns "
    "negative, against where the map's own does at the same depth)",
)


# ---------------------------------------------------------------------------------------------
# gradient-growth-chi1 (beyond the seed)
# ---------------------------------------------------------------------------------------------
def _gradient_error(
    probes: Probes, rows: np.ndarray, theory: PointTheory, config: CorrelatedInitConfig
) -> np.ndarray:
    """Backward growth rate of the mean squared gradient per layer − ln χ1."""
    depth = config.correlation_depth
    backward = [-fit_log_slope(np.arange(1, depth), row[:-1]) for row in probes.gradient[rows]]
    return np.array(backward) - math.log(theory.chi1)


def _not_positive(theory: PointTheory) -> bool:
    return theory.b <= 0


def _gradient_growth(results: Results, config: CorrelatedInitConfig) -> Reading:
    non_positive = per_point(results, config, _gradient_error, keep=_not_positive)
    positive = {
        label(*p): float(np.mean(_gradient_error(*_rows(results, p, config), config)))
        for p in probe_points(config)
        if not _not_positive(point_theory(*p, config))
    }
    return Reading(
        non_positive,
        detail="outside the scope (b > 0, where the rows' common component correlates the "
        "masks with the weights and gradient independence breaks), mean error: "
        + "; ".join(f"{name}: {value:+.3f}" for name, value in positive.items()),
        scale=_scale(config),
    )


def _rows(
    results: Results, p: tuple[float, float], config: CorrelatedInitConfig
) -> tuple[Probes, np.ndarray, PointTheory]:
    probes = _probes(results)
    rows = rows_of(probes.conditions, k=float(p[0]), sigma_w2=float(p[1]))
    return probes, rows, point_theory(*p, config)


GRADIENT_GROWTH: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "gradient-growth-chi1",
    "Backpropagated gradients grow by χ1 = σ_w² a/2 per layer (shrink in the ordered "
    "phase, grow in the chaotic one).",
    source=f"{SOURCE} §2 (χ1, after its ref. [38])",
    criterion=lambda c: Every(
        Within(
            "simulated backward growth rate of the mean squared gradient per layer − ln χ1",
            0.0,
            c.gradient_atol,
        ),
        points_name="probe point with b ≤ 0",
    ),
    measure=_gradient_growth,
    scope="b ≤ 0 (uncorrelated and anti-correlated rows), where the mean field of its ref. "
    "[38] (gradient independence) applies; the seed itself never ties χ1 to gradients",
    note="tolerance [I]",
    figure="fig3_sweep.png",
    beyond_seed=True,
    check="relulab's mean field (gradient independence, the seed's ref. [38]) against relulab's "
    "simulation of the same networks: at b ≤ 0 the backward map is the infinite-width limit of "
    "the very model simulated, so simulation and ln χ1 agree up to finite-width scatter under "
    "any setting in its scope; the experiment could not fail it",
)

PHASE_CLAIMS = (
    LENGTH_PHASE,
    NO_CHAOS_UNCORRELATED,
    WINDOW_CHAOS,
    CORRELATION_MAP,
    CHAOS_ONSET,
    GRADIENT_GROWTH,
)
