"""Claims and checks of seed 003 §3 and Table 1 (appendices C–E): dead nodes and the
correlation maps of RAI and RAAI, measured in wide random networks under He, ACI, RAI, RAAI and
a positively correlated control (the ``dead-nodes`` unit); the phases of RAI and RAAI are
:mod:`.claims_asymmetric`.

Claim: Table 1's 0.36. Checks (run and shown, never counted): relulab's exact infinite-width law
of the inactive probability and its population dynamics of the correlation map against
relulab's simulation of the same networks, and RAI's fewer units dead on every input (true by
construction).

Table 1's entry is a property of the scheme: the inactive probability of a node of the network,
averaged over the hidden layers from ``table1_first_layer`` (2: the layers fed by ReLU
activations; 1: every hidden node) to the last, per network; every estimate is over the
``dead_networks`` networks of one init (Student t, Welch for differences). A claim that
covers several inits judges every one (:class:`~relulab.experiments.criteria.Every`) on
intervals simultaneous over them. That symmetric inits sit at P(h ≤ 0) = ½ and that RAI/RAAI
lie below it hold by symmetry and by construction: they are tests
(``tests/experiments/correlated_init/test_correlated_init.py``), not claims.
"""

from __future__ import annotations

from relulab.analysis import (
    Estimate,
    mean_ci,
    mean_difference_ci,
    simultaneous_level,
    where,
)
from relulab.experiments.claims import ClaimSpec, Reading, Results
from relulab.experiments.correlated_init.config import SOURCE, CorrelatedInitConfig, scale
from relulab.experiments.correlated_init.readings import listing
from relulab.experiments.correlated_init.theory import dead_node_theory, mean_correlation_theory
from relulab.experiments.correlated_init.units import DeadNodes, Key
from relulab.experiments.criteria import Above, Every, Within

__all__ = [
    "ASYMMETRIC_CORRELATION_MAP",
    "DEAD_NODE_CLAIMS",
    "DEAD_THEORY",
    "FEWER_DEAD_ON_ALL",
    "SYMMETRIC_INITS",
    "ASYMMETRIC_INITS",
    "TABLE1_VALUE",
    "TABLE1_ASYMMETRIC",
    "inactive_per_init",
    "table1_layers",
]

SYMMETRIC_INITS = ("he", "aci", "positive")
ASYMMETRIC_INITS = ("rai", "raai")
TABLE1_ASYMMETRIC = 0.36  # Table 1: RAI and RAAI's dead-node probability [S]
DEEP = slice(1, None)  # from the second layer on: the first sees the raw inputs
LAYER_TWO = slice(1, 2)  # layer 2, the first fed by ReLU activations (issue 31's post-hoc pick)


def table1_layers(config: CorrelatedInitConfig) -> slice:
    """The hidden layers Table 1's entry averages over: ``table1_first_layer`` … L [I].

    Example:
        >>> table1_layers(CorrelatedInitConfig())
        slice(1, None, None)
    """
    return slice(config.table1_first_layer - 1, None)


def _scale(config: CorrelatedInitConfig) -> str:
    return scale(
        f"width {config.dead_width}, depth {config.dead_depth}, {config.dead_inputs} inputs"
    )


def _names(dead: DeadNodes) -> list[str]:
    return list(dict.fromkeys(c["init"] for c in dead.conditions))


def _dead(results: Results) -> DeadNodes:
    return DeadNodes.read(results[Key.DEAD_NODES], Key.DEAD_NODES)


def inactive_per_init(
    dead: DeadNodes, among: tuple[str, ...], layers: slice = DEEP, level: float = 0.95
) -> dict[str, Estimate]:
    """P(h ≤ 0) per input, averaged over ``layers`` (default 2…L) per network, for the inits in
    ``among``, each interval at ``level``."""
    return {
        name: mean_ci(dead.inactive[where(dead.conditions, init=name), layers].mean(axis=1), level)
        for name in _names(dead)
        if name in among
    }


# ---------------------------------------------------------------------------------------------
# table1-asymmetric-value
# ---------------------------------------------------------------------------------------------
def _table1_value(results: Results, config: CorrelatedInitConfig) -> Reading:
    """Table 1's entry as the seed defines it (a node of the network, layers averaged), with
    the per-layer profile and layer 2 (issue 31's post-hoc reading) in the detail."""
    dead = _dead(results)
    level = simultaneous_level(len(ASYMMETRIC_INITS))
    averaged = inactive_per_init(dead, ASYMMETRIC_INITS, table1_layers(config), level)
    at_layer_two = inactive_per_init(dead, ASYMMETRIC_INITS, LAYER_TWO)
    profile = {
        name: dead.inactive[where(dead.conditions, init=name)].mean(axis=0)
        for name in ASYMMETRIC_INITS
    }
    return Reading(
        averaged,
        detail=f"layers {config.table1_first_layer}…{config.dead_depth} averaged; at layer 2 "
        f"(a metric since issue 45): {listing(at_layer_two)}; per layer: "
        + "; ".join(
            f"{name} " + " ".join(f"{p:.3f}" for p in values) for name, values in profile.items()
        ),
        scale=_scale(config),
    )


TABLE1_VALUE: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "table1-asymmetric-value",
    "RAI and RAAI have dead node probability 0.36 (Table 1).",
    source=f"{SOURCE} Table 1, §3 ('for ReLU networks with symmetric distributions … the dead "
    "node probability is half. RAI reduces it')",
    criterion=lambda c: Every(
        Within(
            f"P(h ≤ 0) per input, averaged over the hidden layers {c.table1_first_layer}…L",
            TABLE1_ASYMMETRIC,
            c.table1_atol,
        ),
        points_name="asymmetric init (RAI, RAAI)",
    ),
    measure=_table1_value,
    scope="at initialisation; Table 1's entry is a property of the scheme (as its σ_w², k and "
    "'chaotic phase' columns are), the probability that a node of the network is inactive: "
    "every hidden layer fed by ReLU activations weighted alike (issue 45; layer 2 alone was "
    "a post-hoc pick)",
    note="tolerance [I]; the layers averaged [I] (table1_first_layer, alternative: every "
    "hidden layer)",
    figure="dead_nodes.png",
    counterexample="RAAI with a Gaussian part of σ_w² = 30 (raai_sigma_w2): it swamps the Beta "
    "entry and P(h ≤ 0) rises toward a symmetric init's ½ (≈ 0.44)",
)


# ---------------------------------------------------------------------------------------------
# dead-theory-matches-simulation
# ---------------------------------------------------------------------------------------------
def _dead_theory(results: Results, config: CorrelatedInitConfig) -> Reading:
    dead = _dead(results)
    names = _names(dead)
    level = simultaneous_level(len(names))
    theory_error = {
        name: mean_ci(
            (
                dead.inactive[where(dead.conditions, init=name)] - dead_node_theory(name, config)
            ).mean(axis=1),
            level,
        )
        for name in names
    }
    return Reading(theory_error, scale=_scale(config))


DEAD_THEORY: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "dead-theory-matches-simulation",
    "The infinite-width law of a unit's pre-activation (appendix C, eq. 8, exact) gives "
    "the per-input inactive probability of every init, layer by layer.",
    source=f"{SOURCE} appendix C.1 (eq. 8), Table 1",
    criterion=lambda c: Every(
        Within("simulated − theory P(h ≤ 0), averaged over layers", 0.0, c.dead_atol),
        points_name="init",
    ),
    measure=_dead_theory,
    scope="large width (the law is the infinite-width limit), at initialisation",
    note="tolerance [I]",
    figure="dead_nodes.png",
    check="relulab's theory against relulab's simulation of the same networks: the law is "
    "relulab's exact infinite-width law of a unit's pre-activation (relulab.theory.asymmetric; "
    "the seed derives only bounds and mean-field approximations of it, appendix D), the limit "
    "of the very networks simulated, so they agree up to finite-width scatter under any init; "
    "the experiment could not fail it",
)


# ---------------------------------------------------------------------------------------------
# asymmetric-correlation-map-matches-simulation
# ---------------------------------------------------------------------------------------------
def _asymmetric_correlation_map(results: Results, config: CorrelatedInitConfig) -> Reading:
    dead = _dead(results)
    level = simultaneous_level(len(ASYMMETRIC_INITS))
    correlation_error = {
        name: mean_ci(
            (
                dead.mean_correlation[where(dead.conditions, init=name)]
                - mean_correlation_theory(name, config, dead.inputs)
            ).mean(axis=1),
            level,
        )
        for name in _names(dead)
        if name in ASYMMETRIC_INITS
    }
    return Reading(correlation_error, scale=_scale(config))


ASYMMETRIC_CORRELATION_MAP: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "asymmetric-correlation-map-matches-simulation",
    "The correlation map of RAI and RAAI derived with the special Beta weight "
    "(appendices C.2, E.2) describes finite networks: the correlations of many inputs "
    "evolve layer by layer as the infinite-width law says.",
    source=f"{SOURCE} §3, appendices C.2, E.2 (Figs. 4, 5)",
    criterion=lambda c: Every(
        Within(
            "simulated − infinite-width mean pairwise pre-activation correlation, averaged "
            "over layers",
            0.0,
            c.correlation_atol,
        ),
        points_name="asymmetric init (RAI, RAAI)",
    ),
    measure=_asymmetric_correlation_map,
    scope="large width, at initialisation",
    note="tolerance [I]; theory by population dynamics of the exact law",
    figure="dead_nodes.png",
    check="relulab's theory against relulab's simulation of the same networks: the law is "
    "relulab's population dynamics of the exact infinite-width joint law (relulab.theory."
    "population; the seed leaves appendix C.2's map as an integral it does not evaluate), the "
    "limit of the very networks simulated, so they agree up to finite-width scatter; the "
    "experiment could not fail it",
)


# ---------------------------------------------------------------------------------------------
# rai-fewer-dead-on-all
# ---------------------------------------------------------------------------------------------
def _fewer_dead_on_all(results: Results, config: CorrelatedInitConfig) -> Reading:
    dead = _dead(results)
    names = _names(dead)
    dead_mean = {
        name: dead.dead_on_all[where(dead.conditions, init=name)].mean(axis=1) for name in names
    }
    raai_vs_aci = mean_difference_ci(dead_mean["aci"], dead_mean["raai"])
    return Reading(
        mean_difference_ci(dead_mean["he"], dead_mean["rai"]),
        detail=f"ACI − RAAI: {raai_vs_aci.describe()}; per init (mean over nets): "
        + ", ".join(f"{n} {dead_mean[n].mean():.4f}" for n in names),
        scale=_scale(config),
    )


FEWER_DEAD_ON_ALL: ClaimSpec[CorrelatedInitConfig] = ClaimSpec(
    "rai-fewer-dead-on-all",
    "RAI reduces dying ReLUs: fewer units are dead on every input than under He.",
    source=f"{SOURCE} §1, §3 (RAI, its ref. [18])",
    criterion=Above("fraction of units dead on all inputs, mean over layers, He − RAI", 0.0),
    measure=_fewer_dead_on_all,
    scope="at initialisation",
    figure="dead_nodes.png",
    check="true by construction (issue 31 moved 'RAI reduces it' to a test for the same "
    "reason): RAI replaces one entry of every row [w, b] by a positive Beta draw that multiplies "
    "a non-negative ReLU activation or the bias input 1, so it raises a unit's pre-activation "
    "on every input, and RAI has no setting in the study that removes it; the experiment could "
    "not fail it",
)


DEAD_NODE_CLAIMS = (
    TABLE1_VALUE,
    DEAD_THEORY,
    ASYMMETRIC_CORRELATION_MAP,
    FEWER_DEAD_ON_ALL,
)
