"""Claims of seed 003 §3 and Table 1 (appendices C–E): dead nodes and the correlation maps of
RAI and RAAI, measured in wide random networks under He, ACI, RAI, RAAI and a positively
correlated control (the ``dead-nodes`` unit).

Per-input inactive probabilities are averaged over layers 2…L (the first layer sees the raw
inputs) per network; every estimate is over the ``dead_networks`` networks of one init
(Student t, Welch for differences). Where a claim covers several inits, today's criterion
judges the one least favourable to it.
"""

from __future__ import annotations

from relulab.analysis import Estimate, mean_ci, mean_difference_ci, where
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.correlated_init.config import SOURCE, CorrelatedInitConfig, scale
from relulab.experiments.correlated_init.readings import highest, listing, worst
from relulab.experiments.correlated_init.theory import dead_node_theory, mean_correlation_theory
from relulab.experiments.correlated_init.units import Key
from relulab.experiments.criteria import Above, Below, Within
from relulab.store import UnitResult

__all__ = [
    "ASYMMETRIC_CORRELATION_MAP",
    "DEAD_NODE_CLAIMS",
    "DEAD_THEORY",
    "FEWER_DEAD_ON_ALL",
    "FEWER_INACTIVE",
    "SYMMETRIC_HALF",
    "SYMMETRIC_INITS",
    "ASYMMETRIC_INITS",
    "TABLE1_VALUE",
    "TABLE1_ASYMMETRIC",
    "inactive_per_init",
]

SYMMETRIC_INITS = ("he", "aci", "positive")
ASYMMETRIC_INITS = ("rai", "raai")
TABLE1_ASYMMETRIC = 0.36  # Table 1: RAI and RAAI's dead-node probability [S]
DEEP = slice(1, None)  # from the second layer on: the first sees the raw inputs


def _scale(config: CorrelatedInitConfig) -> str:
    return scale(
        f"width {config.dead_width}, depth {config.dead_depth}, {config.dead_inputs} inputs"
    )


def _names(result: UnitResult) -> list[str]:
    return list(dict.fromkeys(c["init"] for c in result.conditions))


def inactive_per_init(result: UnitResult, among: tuple[str, ...]) -> dict[str, Estimate]:
    """P(h ≤ 0) per input, averaged over layers 2…L per network, for the inits in ``among``."""
    inactive = result.curves["inactive"]
    return {
        name: mean_ci(inactive[where(result.conditions, init=name), DEEP].mean(axis=1))
        for name in _names(result)
        if name in among
    }


# ---------------------------------------------------------------------------------------------
# symmetric-inits-dead-half
# ---------------------------------------------------------------------------------------------
def _symmetric_half(results: Results, config: CorrelatedInitConfig) -> Reading:
    symmetric = inactive_per_init(results[Key.DEAD_NODES], SYMMETRIC_INITS)
    name, estimate = worst(symmetric, 0.5)
    return Reading(estimate, detail=f"farthest: {name}; {listing(symmetric)}", scale=_scale(config))


SYMMETRIC_HALF = ClaimSpec(
    "symmetric-inits-dead-half",
    "For ReLU networks with symmetric distributions for weights and biases, the dead "
    "node probability is half (Table 1: He and ACI 0.5).",
    source=f"{SOURCE} §3, Table 1",
    criterion=lambda c: Within(
        "P(h ≤ 0) per input, layers 2…L, the symmetric init farthest from 1/2", 0.5, c.dead_atol
    ),
    measure=_symmetric_half,
    scope="symmetric distributions of weights and biases, at initialisation",
    note="tolerance [I]; the positive control is symmetric too",
    figure="dead_nodes.png",
)


# ---------------------------------------------------------------------------------------------
# asymmetric-inits-fewer-inactive
# ---------------------------------------------------------------------------------------------
def _fewer_inactive(results: Results, config: CorrelatedInitConfig) -> Reading:
    asymmetric = inactive_per_init(results[Key.DEAD_NODES], ASYMMETRIC_INITS)
    return Reading(highest(asymmetric)[1], detail=listing(asymmetric), scale=_scale(config))


FEWER_INACTIVE = ClaimSpec(
    "asymmetric-inits-fewer-inactive",
    "RAI and RAAI lower the dead node probability below one half (Table 1: 0.36).",
    source=f"{SOURCE} §3, Table 1",
    criterion=Below("P(h ≤ 0) per input, layers 2…L, the higher of RAI and RAAI", 0.5),
    measure=_fewer_inactive,
    scope="at initialisation",
    figure="dead_nodes.png",
)


# ---------------------------------------------------------------------------------------------
# table1-asymmetric-value
# ---------------------------------------------------------------------------------------------
def _table1_value(results: Results, config: CorrelatedInitConfig) -> Reading:
    asymmetric = inactive_per_init(results[Key.DEAD_NODES], ASYMMETRIC_INITS)
    name, estimate = worst(asymmetric, TABLE1_ASYMMETRIC)
    return Reading(
        estimate, detail=f"farthest: {name}; {listing(asymmetric)}", scale=_scale(config)
    )


TABLE1_VALUE = ClaimSpec(
    "table1-asymmetric-value",
    "RAI and RAAI have dead node probability 0.36 (Table 1).",
    source=f"{SOURCE} Table 1",
    criterion=lambda c: Within(
        "P(h ≤ 0) per input, layers 2…L, RAI or RAAI farthest from 0.36",
        TABLE1_ASYMMETRIC,
        c.table1_atol,
    ),
    measure=_table1_value,
    scope="at initialisation; Table 1 states no layer",
    note="tolerance [I]; the depth the table refers to was not stated",
    figure="dead_nodes.png",
)


# ---------------------------------------------------------------------------------------------
# dead-theory-matches-simulation
# ---------------------------------------------------------------------------------------------
def _dead_theory(results: Results, config: CorrelatedInitConfig) -> Reading:
    result = results[Key.DEAD_NODES]
    inactive = result.curves["inactive"]
    theory_error = {
        name: mean_ci(
            (inactive[where(result.conditions, init=name)] - dead_node_theory(name, config)).mean(
                axis=1
            )
        )
        for name in _names(result)
    }
    name, estimate = worst(theory_error)
    return Reading(
        estimate, detail=f"farthest: {name}; {listing(theory_error)}", scale=_scale(config)
    )


DEAD_THEORY = ClaimSpec(
    "dead-theory-matches-simulation",
    "The infinite-width law of a unit's pre-activation (appendix C, eq. 8, exact) gives "
    "the per-input inactive probability of every init, layer by layer.",
    source=f"{SOURCE} appendix C.1 (eq. 8), Table 1",
    criterion=lambda c: Within(
        "simulated − theory P(h ≤ 0), averaged over layers, the init farthest from theory",
        0.0,
        c.dead_atol,
    ),
    measure=_dead_theory,
    scope="large width (the law is the infinite-width limit), at initialisation",
    note="tolerance [I]",
    figure="dead_nodes.png",
)


# ---------------------------------------------------------------------------------------------
# asymmetric-correlation-map-matches-simulation
# ---------------------------------------------------------------------------------------------
def _asymmetric_correlation_map(results: Results, config: CorrelatedInitConfig) -> Reading:
    result = results[Key.DEAD_NODES]
    correlation_error = {
        name: mean_ci(
            (
                result.curves["mean_correlation"][where(result.conditions, init=name)]
                - mean_correlation_theory(name, config, result.arrays["inputs"])
            ).mean(axis=1)
        )
        for name in _names(result)
        if name in ASYMMETRIC_INITS
    }
    name, estimate = worst(correlation_error)
    return Reading(
        estimate, detail=f"farthest: {name}; {listing(correlation_error)}", scale=_scale(config)
    )


ASYMMETRIC_CORRELATION_MAP = ClaimSpec(
    "asymmetric-correlation-map-matches-simulation",
    "The correlation map of RAI and RAAI derived with the special Beta weight "
    "(appendices C.2, E.2) describes finite networks: the correlations of many inputs "
    "evolve layer by layer as the infinite-width law says.",
    source=f"{SOURCE} §3, appendices C.2, E.2 (Figs. 4, 5)",
    criterion=lambda c: Within(
        "simulated − infinite-width mean pairwise pre-activation correlation, averaged over "
        "layers, RAI or RAAI farthest from theory",
        0.0,
        c.correlation_atol,
    ),
    measure=_asymmetric_correlation_map,
    scope="large width, at initialisation",
    note="tolerance [I]; theory by population dynamics of the exact law",
    figure="dead_nodes.png",
)


# ---------------------------------------------------------------------------------------------
# rai-fewer-dead-on-all
# ---------------------------------------------------------------------------------------------
def _fewer_dead_on_all(results: Results, config: CorrelatedInitConfig) -> Reading:
    result = results[Key.DEAD_NODES]
    names = _names(result)
    dead = result.curves["dead_on_all"]
    dead_mean = {name: dead[where(result.conditions, init=name)].mean(axis=1) for name in names}
    raai_vs_aci = mean_difference_ci(dead_mean["aci"], dead_mean["raai"])
    return Reading(
        mean_difference_ci(dead_mean["he"], dead_mean["rai"]),
        detail=f"ACI − RAAI: {raai_vs_aci.describe()}; per init (mean over nets): "
        + ", ".join(f"{n} {dead_mean[n].mean():.4f}" for n in names),
        scale=_scale(config),
    )


FEWER_DEAD_ON_ALL = ClaimSpec(
    "rai-fewer-dead-on-all",
    "RAI reduces dying ReLUs: fewer units are dead on every input than under He.",
    source=f"{SOURCE} §1, §3 (RAI, its ref. [18])",
    criterion=Above("fraction of units dead on all inputs, mean over layers, He − RAI", 0.0),
    measure=_fewer_dead_on_all,
    scope="at initialisation",
    figure="dead_nodes.png",
)

DEAD_NODE_CLAIMS = (
    SYMMETRIC_HALF,
    FEWER_INACTIVE,
    TABLE1_VALUE,
    DEAD_THEORY,
    ASYMMETRIC_CORRELATION_MAP,
    FEWER_DEAD_ON_ALL,
)
