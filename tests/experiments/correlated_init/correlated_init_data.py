"""Stored results for the correlated-init tests (``test_correlated_init*.py``): the three kinds
of unit the study reads, built from the mean field (or from a per-epoch level) so that a test
can make a behaviour of the seed present or absent; and the study's own units run at a small
size (:func:`realised`), on which the claims' negative controls realise their counterexamples.

The network-to-network spreads are the ones the quick run measured (width 500, depth 30, 12
networks per probe point; width 500, depth 10, 64 inputs, 16 networks per init), so that a
control built on them carries the noise the scorecard's intervals see.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import torch

from relulab.experiments.context import RunContext
from relulab.experiments.correlated_init import PRESETS
from relulab.experiments.correlated_init.inits import (
    COMPARED,
    DEEP_COMPARED,
    bias_inits,
    deep_inits,
    family,
    matched,
    plane_inits,
    student_inits,
    table1_inits,
    unmatched,
)
from relulab.experiments.correlated_init.theory import (
    dead_node_theory,
    mean_correlation_theory,
    point_theory,
)
from relulab.experiments.correlated_init.units import (
    OPTIMISERS,
    TEACHERS,
    Key,
    asymmetric_points,
    asymmetric_unit,
    deep_key,
    plan,
    probe_points,
    propagation_unit,
    trained_on,
)
from relulab.records import UnitResult

QUICK = PRESETS["quick"]

# sd over networks of each probe point's per-network reading in the quick run (issue 31: 8 far
# and 8 near input pairs per network, averaged): the length's growth rate per layer, the near
# pairs' c_L, the far pairs' c_L, the gradient's growth rate
SPREAD = {
    (0.0, 1.6): (0.014, 2e-5, 5e-5, 0.011),
    (0.0, 2.0): (0.025, 0.0010, 0.0036, 0.0070),
    (0.0, 2.4): (0.023, 0.0043, 0.0069, 0.011),
    (-1.0, 1.6): (0.0062, 3e-5, 1e-4, 0.0092),
    (-1.0, 2.4): (0.012, 0.028, 0.027, 0.0081),
    (-1.0, 3.4): (0.0045, 0.020, 0.032, 0.0038),
    (-1.0, 1.8): (0.0074, 2.3e-4, 9e-4, 0.0085),
    (-1.0, 2.0): (0.0070, 0.0033, 0.0047, 0.0092),
    (-1.0, 2.2): (0.0082, 0.011, 0.012, 0.0054),
    (-1.0, 2.6): (0.0064, 0.038, 0.048, 0.0067),
    (-1.0, 2.8): (0.0092, 0.034, 0.033, 0.0058),
    (1.0, 1.2): (0.014, 1e-8, 1e-8, 0.014),
    (1.0, 1.8): (0.018, 3e-6, 1e-5, 0.025),
}
GROWTH, NEAR, FAR, GRADIENT = range(4)
# networks per point the far pairs' spread (up to 0.048 at width 500) needs to decide the
# correlation map on simultaneous intervals: the paper preset's 30
CORRELATION_NETWORKS = PRESETS["paper"].correlation_networks
SMALL = (1e-3, 1e-4, 1e-4, 1e-3)  # the noise of an "ideal" run

# sd over networks of the per-network P(h ≤ 0) (layers averaged) and of the mean pairwise
# correlation (layers averaged) in the quick run
INACTIVE_SPREAD = {"he": 0.0050, "aci": 0.0052, "rai": 0.0072, "raai": 0.0034, "positive": 0.0068}
CORRELATION_SPREAD = {"rai": 0.0155, "raai": 0.0084}
INPUTS = np.random.default_rng(7).standard_normal((6, 40))


def propagation(config, spread=None, seed=0, change=None) -> dict:
    """``{Key.PROPAGATION: result}`` whose networks follow the mean field at every probe point:
    each network's length grows at the mean-field rate plus an offset, its pairs' correlations
    sit at the mean-field values plus an offset, its gradient grows by χ1 per layer times an
    offset — the offsets normal with the point's ``spread`` (default: :data:`SMALL`).
    ``change(k, sigma_w2, curves)`` edits one network's curves."""
    rng = np.random.default_rng(seed)
    depth = config.correlation_depth
    layers = np.arange(1, depth + 1)
    conditions, rows = [], []
    for k, w2 in probe_points(config):
        theory = point_theory(k, w2, config)
        sd = np.array(SMALL if spread is None else spread[(k, w2)])
        for net in range(config.correlation_networks):
            growth, near, far, gradient = sd * rng.standard_normal(4)
            curves = {
                "length": theory.length * np.exp(growth * layers),
                "correlation": theory.correlation + far,
                "correlation_near": theory.correlation_near + near,
                "gradient": np.exp((depth - layers) * (math.log(theory.chi1) + gradient)),
            }
            if change is not None:
                change(k, w2, curves)
            rows.append(curves)
            conditions.append({"k": k, "sigma_w2": w2, "network": net})
    curves = {name: np.array([row[name] for row in rows]) for name in rows[0]}
    return {Key.PROPAGATION: UnitResult.forward_only(conditions, layers, curves, {})}


def seed_near(scheme, sigma_w2):
    """The near pairs' change over the layers as seed 003 describes RAI and RAAI (Figs. 4–5,
    appendices D.2, E.2): RAI correlates at every σ_w² (+0.04); RAAI is ordered (+0.04) below
    an order-to-chaos boundary at 0.8 — under appendix E.2's approximated 1.24, which
    'overestimates' it — and decorrelates (−0.2) above."""
    return 0.04 if scheme == "rai" or sigma_w2 < 0.8 else -0.2


def seed_growth(scheme, sigma_w2):
    """The length's growth per layer as seed 003 describes it: RAI's length 'remains finite'
    (−0.1) up to 0.8, above appendix D.1's 0.57 ('underestimates'), and grows (+0.1) above;
    RAAI's is finite up to 1.1, under appendix E.1's approximated 1.30 ('overestimates'), and
    diverges above."""
    return -0.1 if sigma_w2 < (0.8 if scheme == "rai" else 1.1) else 0.1


def asymmetric(config, near_of=seed_near, growth_of=seed_growth, seed=3) -> dict:
    """``{Key.ASYMMETRIC: result}``: per (scheme, σ_w²) networks whose near pairs move from
    c_0 by ``near_of(scheme, sigma_w2)`` over the layers (default :func:`seed_near`) and whose
    length grows by ``growth_of(scheme, sigma_w2)`` per layer (default :func:`seed_growth`),
    each network off by ± 0.005."""
    rng = np.random.default_rng(seed)
    depth = config.correlation_depth
    layers = np.arange(1, depth + 1)
    conditions, rows = [], []
    for scheme, w2 in asymmetric_points(config):
        for net in range(config.asymmetric_networks):
            noise = 0.005 * rng.standard_normal(2)
            near = config.near_c0 + (near_of(scheme, w2) + noise[0]) * layers / depth
            rows.append(
                {
                    "length": np.exp((growth_of(scheme, w2) + noise[1]) * layers),
                    "correlation": np.full(depth, config.correlation_c0),
                    "correlation_near": near,
                    "gradient": np.ones(depth),
                }
            )
            conditions.append({"scheme": scheme, "sigma_w2": w2, "network": net})
    curves = {name: np.array([row[name] for row in rows]) for name in rows[0]}
    return {Key.ASYMMETRIC: UnitResult.forward_only(conditions, layers, curves, {})}


@functools.lru_cache(maxsize=32)
def _mean_correlation(name, config):
    return mean_correlation_theory(name, config, INPUTS)


def dead_nodes(config, inactive_of, networks=6, seed=1, correlation_shift=0.0, dead_of=None):
    """``{Key.DEAD_NODES: result}``: per init ``inactive_of(name)`` per layer plus a small
    per-network offset, ``dead_of(name)`` units dead on every input (default 0.1 for RAI,
    0.2 otherwise), and for RAI and RAAI the exact mean correlation of :data:`INPUTS` plus
    ``correlation_shift``."""
    rng = np.random.default_rng(seed)
    dead_of = dead_of or (lambda name: 0.1 if name == "rai" else 0.2)
    conditions, inactive, dead, correlation = [], [], [], []
    for name in table1_inits(config):
        # the exact law where a claim reads it (RAI, RAAI), 0 elsewhere
        theory = (
            _mean_correlation(name, config)
            if name in ("rai", "raai")
            else np.zeros(config.dead_depth)
        )
        for net in range(networks):
            inactive.append(inactive_of(name) + 1e-3 * rng.standard_normal(config.dead_depth))
            dead.append(np.full(config.dead_depth, dead_of(name)))
            correlation.append(theory + correlation_shift + 1e-3 * rng.standard_normal())
            conditions.append({"init": name, "network": net})
    curves = {
        "inactive": np.array(inactive),
        "dead_on_all": np.array(dead) + 1e-3 * rng.standard_normal((len(dead), config.dead_depth)),
        "mean_correlation": np.array(correlation),
    }
    steps = np.arange(1, config.dead_depth + 1)
    result = UnitResult.forward_only(conditions, steps, curves, {}, {"inputs": INPUTS})
    return {Key.DEAD_NODES: result}


def exact_law(config):
    """``inactive_of`` for :func:`dead_nodes`: the exact infinite-width law per layer."""
    return lambda name: dead_node_theory(name, config)


def develops(name, teacher, optimiser):
    """``row_shift`` for :func:`training`: every student's row correlation falls by 0.05
    during training (appendix B's 'anti-correlation may develop')."""
    return -0.05


def _unit(inits, twins, teacher, optimiser, level_of, row_shift, epochs, seeds, rng, twin_level):
    """One training unit: every init and twin × seed; a student follows ``level_of`` (a twin
    ``twin_level`` if given) and ``row_shift`` called with its scheme's name
    (:func:`~.inits.family`: a twin and a bias-matched companion behave as their scheme does)."""
    conditions, curves, start, end = [], [], [], []
    for name in [*inits, *(matched(n) for n in twins)]:
        scheme = family(name)
        level = twin_level if twin_level is not None and name not in inits else level_of
        for seed in range(seeds):
            levels = np.array([level(scheme, teacher, optimiser, e) for e in range(epochs + 1)])
            curves.append(10 ** (levels + 0.01 * rng.standard_normal(epochs + 1)))
            start.append(0.02 * rng.standard_normal())
            end.append(
                start[-1] + row_shift(scheme, teacher, optimiser) + 0.01 * rng.standard_normal()
            )
            conditions.append({"init": name, "seed": seed, **inits[unmatched(name)][1]})
    n = len(conditions)
    arrays = {"initial_row_correlation": np.array(start), "final_row_correlation": np.array(end)}
    return UnitResult(
        conditions,
        np.arange(epochs + 1),
        {"validation_loss": np.array(curves)},
        {},
        np.zeros(n, bool),
        np.full(n, -1),
        arrays,
    )


def training(config, level_of, epochs=10, seeds=10, row_shift=develops, twin_level=None) -> dict:
    """Validation curves at log10 level ``level_of(init, teacher, optimiser, epoch)`` (± 0.01
    decades per student and epoch) for every training unit, twins included, and row
    correlations that move by ``row_shift(init, teacher, optimiser)`` during training; the deep
    units under the teacher name "deep", the plane under "plane", the σ_b² sweep under
    "bias"; the output-matched twins follow ``twin_level`` where it is given."""
    rng = np.random.default_rng(2)

    def unit(inits, twins, teacher, optimiser, n):
        return _unit(
            inits, twins, teacher, optimiser, level_of, row_shift, epochs, n, rng, twin_level
        )

    results = {
        trained_on(t, o): unit(student_inits(config), COMPARED, t, o, seeds)
        for t in TEACHERS
        for o in OPTIMISERS
    }
    for o in config.deep_optimisers:
        results[deep_key(o)] = unit(deep_inits(config), DEEP_COMPARED, "deep", o, seeds)
    plane = plane_inits(config)
    results[Key.PLANE] = unit(plane, tuple(plane), "plane", "adam", 3)
    results[Key.BIAS] = unit(bias_inits(config), (), "bias", "sgd", 3)
    return results


def in_window(name: str) -> bool:
    """Plane students inside the mean-field bounded chaotic window (additive reading)."""
    if not name.startswith("w2="):
        return False
    w2, k = (float(part.split("=")[1]) for part in name.split(","))
    return 2.0 < w2 < 2 * math.pi / (math.pi + k)


# --- the study's own units at a small size (the negative controls' counter-settings) ----------
CONTEXT = RunContext(torch.device("cpu"), torch.float32, seed=0, quiet=True)
# random nets: width 64, depth 10, 4 networks per point
FORWARD = dataclasses.replace(
    QUICK,
    correlation_width=64,
    correlation_depth=10,
    correlation_networks=4,
    input_pairs=4,
    asymmetric_networks=4,
    dead_width=64,
    dead_depth=5,
    dead_inputs=16,
    dead_networks=4,
)
# students: 2 hidden layers of 8 (deeper: 8 of 8), 128 examples, 10 SGD / 5 Adam epochs, 20
# seeds per init (Table 1's inits and the positive control; no appendix-B sweep)
STUDENTS = dataclasses.replace(
    QUICK,
    train_width=8,
    train_depth=2,
    input_dim=4,
    train_samples=128,
    validation_samples=64,
    sgd_epochs=10,
    adam_epochs=5,
    train_seeds=20,
    deep_depth=8,
    plane_seeds=20,
    correlation_sweep=(),
)
ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "identity": lambda h: h}


@functools.lru_cache(maxsize=32)
def realised(config, names: tuple[str, ...], activation: str = "relu") -> dict:
    """``{name: result}``: the study's units ``names`` run at ``config`` (the forward probes
    with ``activation`` in place of ReLU, the setting some counterexamples change), cached."""
    builders = {
        str(Key.PROPAGATION): lambda: propagation_unit(config, ACTIVATIONS[activation]),
        str(Key.ASYMMETRIC): lambda: asymmetric_unit(config, ACTIVATIONS[activation]),
    }
    planned = {unit.name: unit for unit in plan(config)}
    return {
        name: (builders[name]() if name in builders else planned[name]).run(CONTEXT)
        for name in names
    }


def realised_training(config, teachers=TEACHERS, optimisers=OPTIMISERS) -> dict:
    """The training units of ``teachers`` × ``optimisers`` run at ``config``."""
    return realised(config, tuple(trained_on(t, o) for t in teachers for o in optimisers))
