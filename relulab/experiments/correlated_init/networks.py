"""The random networks the correlated-init study measures at initialisation, forward and
backward: one layer drawn with correlated rows (:func:`correlated_layer`) or by an init
scheme's fill (:func:`scheme_layer`), a deep net's length, pair correlations and gradient per
layer (:func:`simulate_network`), and a deep net's dead nodes on many inputs
(:func:`dead_node_statistics`). The units of :mod:`.units` run them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.init import correlated_, get_scheme
from relulab.tasks import two_inputs_with_correlation

__all__ = [
    "Activation",
    "Layer",
    "correlated_layer",
    "dead_node_statistics",
    "scheme_layer",
    "simulate_network",
]

Layer = Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]]
Activation = Callable[[torch.Tensor], torch.Tensor]


def _grad(u: torch.Tensor) -> torch.Tensor:
    """``u``'s gradient, retained by the backward pass (``retain_grad``)."""
    assert u.grad is not None
    return u.grad


def _pair_correlation(u: torch.Tensor, first: slice, second: slice) -> float:
    """The mean over pairs of the correlation of rows ``u[first][p]`` and ``u[second][p]``."""
    a, b = u[first], u[second]
    per_pair = (a * b).mean(dim=1) / torch.sqrt(a.square().mean(dim=1) * b.square().mean(dim=1))
    return float(per_pair.mean())


def correlated_layer(k: float, sigma_w2: float, config: CorrelatedInitConfig) -> Layer:
    r"""Draws one layer of the propagation nets: rows by :func:`~relulab.init.correlated_`,
    bias :math:`N(0, \sigma_b^2)` with the config's ``sigma_b2``."""
    width = config.correlation_width

    def draw(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        weight = correlated_(
            torch.empty(width, width, dtype=torch.float64),
            sigma_w2=sigma_w2,
            k=k,
            parameterisation=config.parameterisation,
            generator=generator,
        )
        bias = torch.randn(width, generator=generator, dtype=torch.float64)
        return weight, bias * math.sqrt(config.sigma_b2)

    return draw


def scheme_layer(scheme: str, options: dict[str, Any], width: int) -> Layer:
    """Draws one ``width × width`` layer and its bias by the registry's fill of ``scheme``."""

    def draw(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        weight = torch.empty(width, width, dtype=torch.float64)
        bias = torch.zeros(width, dtype=torch.float64)
        get_scheme(scheme).fill(weight, bias, generator, **options)
        return weight, bias

    return draw


def simulate_network(
    k: float,
    sigma_w2: float,
    config: CorrelatedInitConfig,
    generator: torch.Generator,
    layer: Layer | None = None,
    activation: Activation = torch.relu,
) -> dict[str, np.ndarray]:
    r"""One random net of ``correlation_depth`` layers of width N on ``input_pairs`` far pairs
    of inputs (correlation ``correlation_c0``) and as many near pairs (``near_c0``), float64;
    each pair's correlation is averaged over the pairs (the network's reading: the average
    cuts the finite-width scatter of one pair's correlation in the chaotic phase).

    Layer l: :math:`u^l = W^l \phi(u^{l-1}) + b^l` (:math:`\phi` = identity on the inputs,
    ``activation`` — ReLU, the study's networks — after), rows of :math:`W^l` drawn by
    :func:`~relulab.init.correlated_`, :math:`b \sim N(0, \sigma_b^2)` (or by ``layer``, e.g.
    :func:`scheme_layer` for RAI/RAAI). Backward: :math:`g^l = \partial (v\cdot u^L)/\partial
    u^l` for a Gaussian :math:`v`. Another ``activation`` (tanh, the identity) is the setting
    under which the claims' negative controls run the same networks.

    Returns:
        Per layer: ``length`` (mean square of u over inputs and units), ``correlation`` (far
        pair), ``correlation_near`` and ``gradient`` (mean square of :math:`g^l`).
    """
    width, pairs = config.correlation_width, config.input_pairs
    far = [
        two_inputs_with_correlation(width, config.correlation_c0, generator) for _ in range(pairs)
    ]
    near = [two_inputs_with_correlation(width, config.near_c0, generator) for _ in range(pairs)]
    # rows: far firsts, far seconds, near firsts, near seconds
    x = torch.cat([torch.stack([p[i] for p in group]) for group in (far, near) for i in (0, 1)])
    far_pair = (slice(0, pairs), slice(pairs, 2 * pairs))
    near_pair = (slice(2 * pairs, 3 * pairs), slice(3 * pairs, 4 * pairs))
    draw = correlated_layer(k, sigma_w2, config) if layer is None else layer
    h, preactivations = x, []
    for index in range(config.correlation_depth):
        weight, bias = draw(generator)
        u = (activation(h) if index else h) @ weight.T + bias
        u.requires_grad_(True)
        u.retain_grad()
        preactivations.append(u)
        h = u
    readout = torch.randn(h.shape, generator=generator, dtype=torch.float64)
    (h * readout).sum().backward()
    with torch.no_grad():
        return {
            "length": np.array([float(u.square().mean()) for u in preactivations]),
            "correlation": np.array([_pair_correlation(u, *far_pair) for u in preactivations]),
            "correlation_near": np.array(
                [_pair_correlation(u, *near_pair) for u in preactivations]
            ),
            "gradient": np.array([float(_grad(u).square().mean()) for u in preactivations]),
        }


def dead_node_statistics(
    scheme: str, options: dict[str, Any], x: torch.Tensor, depth: int, generator: torch.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per layer of one random net of width ``x.shape[1]`` on inputs ``x`` ``(n, width)``: the
    fraction of (unit, input) pairs with :math:`h \\le 0`, the fraction of units with
    :math:`h \\le 0` on every input, and the mean pairwise correlation of the inputs'
    pre-activations. Layers drawn by the registry's fill of ``scheme`` with ``options``."""
    draw = scheme_layer(scheme, options, x.shape[1])
    h = x
    inactive, dead, correlation = [], [], []
    for layer in range(depth):
        weight, bias = draw(generator)
        u = (torch.relu(h) if layer else h) @ weight.T + bias
        off = u <= 0
        inactive.append(float(off.double().mean()))
        dead.append(float(off.all(dim=0).double().mean()))
        gram = u @ u.T
        scale = torch.sqrt(torch.diagonal(gram))
        corr = gram / (scale[:, None] * scale[None, :])
        n = corr.shape[0]
        correlation.append(float((corr.sum() - n) / (n * (n - 1))))
        h = u
    return np.array(inactive), np.array(dead), np.array(correlation)
