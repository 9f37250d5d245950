"""The work of the correlated-init study: random deep networks measured forward and backward
(the networks themselves are :mod:`.networks`), and teacher–student training, each one
resumable batched computation.

* ``propagation`` — for every probed (k, σ_w²): random width-N ReLU nets with correlated rows
  (:func:`relulab.init.correlated_`), two input pairs (far, near), per layer the length, both
  pairs' correlations and the backward gradient's second moment (seed 003 §2, Figs. 1–3).
* ``asymmetric-phases`` — the same random nets under RAI and RAAI over σ_w² sweeps (seed 003
  §3, Figs. 4–5, Table 1's "chaotic phase" column);
* ``dead-nodes`` — wide deep nets under He, ACI, RAI, RAAI and a positive control on many
  inputs: per layer the inactive probability and the fraction of units dead on every input
  (Table 1).
* ``train-<teacher>-<optimiser>`` — every student init × seed of one teacher and optimiser as
  one :class:`relulab.engine.BatchedMLP` (§4–5, appendix B);
* ``train-deep`` (Adam), ``train-deep-sgd`` — deeper students on the complex teacher (§5's
  overfitting remark; the seed names no optimiser);
* ``train-plane`` — correlated students over the (σ_w², k) grid at σ_b² > 0 (beyond the seed);
* ``train-bias`` — ACI at every σ_b² of ``bias_sweep`` and He (standard teacher, SGD; a metric).

Every reader reaches a unit through :class:`Key` or :func:`trained_on`, and reads it through
its declared view (:func:`unit_views`): :class:`Probes` (the propagation and asymmetric-phases
units), :class:`DeadNodes`, :class:`Students` (every training unit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import torch

from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.experiments.correlated_init.inits import (
    COMPARED,
    DEEP_COMPARED,
    bias_inits,
    deep_inits,
    plane_inits,
    student_inits,
    table1_inits,
)
from relulab.experiments.correlated_init.networks import (
    Activation,
    Layer,
    dead_node_statistics,
    scheme_layer,
    simulate_network,
)
from relulab.experiments.correlated_init.training import teacher_data, train_students
from relulab.records import UnitResult, UnitView, array, curve

__all__ = [
    "OPTIMISERS",
    "TEACHERS",
    "DeadNodes",
    "Key",
    "Probes",
    "Students",
    "asymmetric_layer",
    "asymmetric_points",
    "asymmetric_unit",
    "bias_inits",
    "bias_unit",
    "dead_nodes_unit",
    "deep_inits",
    "deep_key",
    "deep_unit",
    "estimate_bytes",
    "plan",
    "plane_inits",
    "plane_unit",
    "probe_points",
    "propagation_unit",
    "scheme_layer",
    "simulate_network",
    "student_inits",
    "table1_inits",
    "teacher_data",
    "train_students",
    "trained_on",
    "training_unit",
    "unit_keys",
    "unit_views",
]

TEACHERS = ("standard", "simple", "complex")
OPTIMISERS = ("sgd", "adam")


class Key(StrEnum):
    """The study's units with fixed names."""

    PROPAGATION = "propagation"
    ASYMMETRIC = "asymmetric-phases"
    DEAD_NODES = "dead-nodes"
    DEEP = "train-deep"
    PLANE = "train-plane"
    BIAS = "train-bias"


def trained_on(teacher: str, optimiser: str) -> str:
    """The unit that trains every student init on one teacher with one optimiser.

    Example:
        >>> trained_on("simple", "adam")
        'train-simple-adam'
    """
    return f"train-{teacher}-{optimiser}"


def unit_keys(config: CorrelatedInitConfig) -> list[str]:
    """Every unit name a reader of this study may use."""
    trained = [trained_on(t, o) for t in TEACHERS for o in OPTIMISERS]
    deep = [deep_key(o) for o in config.deep_optimisers]
    bias = [Key.BIAS] if config.bias_sweep else []
    fixed = [Key.PROPAGATION, Key.ASYMMETRIC, Key.DEAD_NODES]
    return [*fixed, *trained, *deep, Key.PLANE, *bias]


def probe_points(config: CorrelatedInitConfig) -> list[tuple[float, float]]:
    """Every (k, σ_w²) the propagation unit simulates: the phase probes and the Fig. 3 sweep."""
    points = [(0.0, w2) for w2 in config.probe_uncorrelated]
    points += [(config.aci_k, w2) for w2 in (*config.probe_anti, *config.sweep_sigma_w2)]
    points += [(config.positive_k, w2) for w2 in config.probe_positive]
    unique: list[tuple[float, float]] = []
    for point in points:
        if not any(np.allclose(point, other) for other in unique):
            unique.append(point)
    return unique


def propagation_unit(config: CorrelatedInitConfig, activation: Activation = torch.relu) -> Unit:
    """The ``propagation`` unit: ``correlation_networks`` random nets at every probe point
    (:func:`simulate_network`; ``activation`` ReLU, another one only in the negative controls).
    """

    def run(context: RunContext) -> UnitResult:
        points = probe_points(config)
        conditions, rows = [], []
        with context.progress(len(points) * config.correlation_networks, "propagation") as done:
            for k, sigma_w2 in points:
                for net in range(config.correlation_networks):
                    generator = context.generator(f"propagation-{k:g}-{sigma_w2:g}-{net}")
                    rows.append(simulate_network(k, sigma_w2, config, generator, None, activation))
                    conditions.append({"k": k, "sigma_w2": sigma_w2, "network": net})
                    done(1)
        curves = {name: np.array([row[name] for row in rows]) for name in rows[0]}
        final = {name: curve[:, -1] for name, curve in curves.items()}
        return UnitResult.forward_only(
            conditions, np.arange(1, config.correlation_depth + 1), curves, final
        )

    return Unit(Key.PROPAGATION, run)


def _sorted_union(values: tuple[float, ...]) -> list[float]:
    unique: list[float] = []
    for value in sorted(values):
        if not any(math.isclose(value, other) for other in unique):
            unique.append(value)
    return unique


def asymmetric_points(config: CorrelatedInitConfig) -> list[tuple[str, float]]:
    """Every (scheme, σ_w²) the asymmetric-phases unit simulates, in increasing σ_w²: RAI (its
    Gaussian part's variance σ_w² = std²) over its sweep and at appendix D.1's approximated
    length bound; RAAI (anti-correlated rows at ``train_aci_k``) over its sweep, at Table 1's
    σ_w² and at appendix E's approximated boundaries."""
    rai = (*config.rai_sweep_sigma_w2, config.rai_length_approximation)
    raai = (
        *config.raai_sweep_sigma_w2,
        config.raai_sigma_w2,
        config.raai_chaos_approximation,
        config.raai_length_approximation,
    )
    return [("rai", w2) for w2 in _sorted_union(rai)] + [("raai", w2) for w2 in _sorted_union(raai)]


def asymmetric_layer(scheme: str, sigma_w2: float, config: CorrelatedInitConfig) -> Layer:
    """One layer of RAI (``std = √σ_w²``) or RAAI (σ_w², ``train_aci_k``) at the propagation
    nets' width."""
    if scheme == "rai":
        options: dict[str, Any] = {"std": math.sqrt(sigma_w2), "alpha": config.beta_alpha}
    else:
        options = {
            "sigma_w2": sigma_w2,
            "k": config.train_aci_k,
            "parameterisation": config.parameterisation,
            "alpha": config.beta_alpha,
        }
    return scheme_layer(scheme, options, config.correlation_width)


def asymmetric_unit(config: CorrelatedInitConfig, activation: Activation = torch.relu) -> Unit:
    """The ``asymmetric-phases`` unit: ``asymmetric_networks`` random nets under RAI and RAAI at
    every point of their sweeps (``activation`` ReLU, another one only in negative controls)."""

    def run(context: RunContext) -> UnitResult:
        points = asymmetric_points(config)
        conditions, rows = [], []
        with context.progress(len(points) * config.asymmetric_networks, "RAI/RAAI phases") as done:
            for scheme, sigma_w2 in points:
                layer = asymmetric_layer(scheme, sigma_w2, config)
                for net in range(config.asymmetric_networks):
                    generator = context.generator(f"asymmetric-{scheme}-{sigma_w2:g}-{net}")
                    rows.append(
                        simulate_network(0.0, sigma_w2, config, generator, layer, activation)
                    )
                    conditions.append({"scheme": scheme, "sigma_w2": sigma_w2, "network": net})
                    done(1)
        curves = {name: np.array([row[name] for row in rows]) for name in rows[0]}
        final = {name: curve[:, -1] for name, curve in curves.items()}
        return UnitResult.forward_only(
            conditions, np.arange(1, config.correlation_depth + 1), curves, final
        )

    return Unit(Key.ASYMMETRIC, run)


def dead_nodes_unit(config: CorrelatedInitConfig) -> Unit:
    """The ``dead-nodes`` unit: Table 1's inits on ``dead_inputs`` shared inputs."""

    def run(context: RunContext) -> UnitResult:
        inits = table1_inits(config)
        data_generator = context.generator("dead-nodes-inputs")
        x = torch.randn(config.dead_inputs, config.dead_width, generator=data_generator).double()
        conditions, rows = [], []
        with context.progress(len(inits) * config.dead_networks, "dead nodes") as done:
            for name, (scheme, options) in inits.items():
                for net in range(config.dead_networks):
                    generator = context.generator(f"dead-nodes-{name}-{net}")
                    rows.append(
                        dead_node_statistics(scheme, options, x, config.dead_depth, generator)
                    )
                    conditions.append({"init": name, "network": net})
                    done(1)
        curves = {
            name: np.array([row[i] for row in rows])
            for i, name in enumerate(("inactive", "dead_on_all", "mean_correlation"))
        }
        final = {name: curve[:, -1] for name, curve in curves.items()}
        return UnitResult.forward_only(
            conditions,
            np.arange(1, config.dead_depth + 1),
            curves,
            final,
            {"inputs": x.numpy()},
        )

    return Unit(Key.DEAD_NODES, run)


def training_unit(config: CorrelatedInitConfig, teacher: str, optimiser: str) -> Unit:
    """Every student init of :func:`~.inits.student_inits` on one teacher and optimiser, and the
    output-matched twins of those a speed claim compares (:data:`~.inits.COMPARED`)."""
    name = trained_on(teacher, optimiser)
    return Unit(
        name,
        lambda context: train_students(
            context,
            config,
            teacher,
            optimiser,
            student_inits(config),
            config.train_seeds,
            config.train_depth,
            name,
            COMPARED,
        ),
    )


def plane_unit(config: CorrelatedInitConfig) -> Unit:
    """The students of the (σ_w², k) plane (standard teacher, Adam), each with its
    output-matched twin."""
    return Unit(
        Key.PLANE,
        lambda context: train_students(
            context,
            config,
            "standard",
            "adam",
            plane_inits(config),
            config.plane_seeds,
            config.train_depth,
            Key.PLANE,
            tuple(plane_inits(config)),
        ),
    )


def deep_key(optimiser: str) -> str:
    """The unit of the deeper students trained with ``optimiser`` (Adam keeps the old name).

    Example:
        >>> deep_key("sgd")
        'train-deep-sgd'
    """
    return str(Key.DEEP) if optimiser == "adam" else f"{Key.DEEP}-{optimiser}"


def deep_unit(config: CorrelatedInitConfig, optimiser: str) -> Unit:
    """The deeper students of §5 on the complex teacher with ``optimiser``, and the
    output-matched twins of those §5's deeper comparison reads (:data:`~.inits.DEEP_COMPARED`)."""
    name = deep_key(optimiser)
    return Unit(
        name,
        lambda context: train_students(
            context,
            config,
            "complex",
            optimiser,
            deep_inits(config),
            config.train_seeds,
            config.deep_depth,
            name,
            DEEP_COMPARED,
        ),
    )


def bias_unit(config: CorrelatedInitConfig) -> Unit:
    """ACI over the σ_b² sweep and He (standard teacher, SGD)."""
    return Unit(
        Key.BIAS,
        lambda context: train_students(
            context,
            config,
            "standard",
            "sgd",
            bias_inits(config),
            config.bias_sweep_seeds,
            config.train_depth,
            Key.BIAS,
        ),
    )


def plan(config: CorrelatedInitConfig) -> list[Unit]:
    """The propagation and dead-node units, a training unit per teacher × optimiser, the deeper
    students per optimiser, the plane and the σ_b² sweep (named by :func:`unit_keys`)."""
    units = [propagation_unit(config), asymmetric_unit(config), dead_nodes_unit(config)]
    units += [training_unit(config, t, o) for t in TEACHERS for o in OPTIMISERS]
    units += [deep_unit(config, o) for o in config.deep_optimisers]
    units.append(plane_unit(config))
    return [*units, bias_unit(config)] if config.bias_sweep else units


def estimate_bytes(config: CorrelatedInitConfig) -> int:
    """Peak memory in bytes: the propagation's weights kept for the backward pass
    (depth × width² float64), the dead-node layer, or the phase-diagram grids."""
    propagation = 8 * (config.correlation_depth + 2) * config.correlation_width**2
    dead = 8 * 4 * config.dead_width**2 + 8 * 3 * config.dead_inputs * config.dead_width
    return max(propagation, dead, 8 * 30 * config.grid_points**2)


# ---------------------------------------------------------------------------------------------
# the declared views of the stored units
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Probes(UnitView):
    """The ``propagation`` and ``asymmetric-phases`` units: per network (one row each) and
    layer, :func:`simulate_network`'s readings."""

    length: np.ndarray = curve()  # mean square of the pre-activations, (S, L)
    correlation: np.ndarray = curve()  # the far pairs' correlation, (S, L)
    correlation_near: np.ndarray = curve()  # the near pairs' correlation, (S, L)
    gradient: np.ndarray = curve()  # mean square of the backward signal, (S, L)


@dataclass(frozen=True)
class DeadNodes(UnitView):
    """The ``dead-nodes`` unit: per network and layer :func:`dead_node_statistics`, and the
    shared inputs."""

    inactive: np.ndarray = curve()  # P(h ≤ 0) over (unit, input) pairs, (S, L)
    dead_on_all: np.ndarray = curve()  # units with h ≤ 0 on every input, (S, L)
    mean_correlation: np.ndarray = curve()  # the inputs' mean pairwise correlation, (S, L)
    inputs: np.ndarray = array()  # the shared inputs, (dead_inputs, dead_width)


@dataclass(frozen=True)
class Students(UnitView):
    """A training unit (:func:`train_students`): per student the validation loss per epoch
    (epoch 0: before training), its output variance on the validation inputs at initialisation
    (absent in stores made before issue 31) and its hidden weights' row correlation before and
    after training (:func:`~.training.row_correlation`; absent before issue 45)."""

    validation_loss: np.ndarray = curve()  # (S, E + 1)
    initial_output_variance: np.ndarray | None = array(optional=True)  # (S,)
    initial_row_correlation: np.ndarray | None = array(optional=True)  # (S,)
    final_row_correlation: np.ndarray | None = array(optional=True)  # (S,)


def unit_views(config: CorrelatedInitConfig) -> dict[str, type[UnitView]]:
    """Every unit :func:`plan` produces → its declared view.

    Example:
        >>> from relulab.experiments.correlated_init.config import CorrelatedInitConfig
        >>> unit_views(CorrelatedInitConfig())["train-simple-adam"].__name__
        'Students'
    """
    views: dict[str, type[UnitView]] = {
        Key.PROPAGATION: Probes,
        Key.ASYMMETRIC: Probes,
        Key.DEAD_NODES: DeadNodes,
    }
    for key in unit_keys(config):
        views.setdefault(str(key), Students)
    return {str(key): view for key, view in views.items()}
