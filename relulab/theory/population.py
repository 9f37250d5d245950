r"""Infinite-width forward statistics of several inputs by population dynamics (NumPy).

At infinite width a unit of layer :math:`l` sees, for the inputs :math:`\alpha = 1 … n` at once,

.. math::
    h_\alpha = \xi\,x_{p,\alpha} + g_\alpha,\qquad
    g \sim N\!\left(0,\ \sigma_w^2\left(a K + b\,m m^\top\right) + \sigma_b^2\,\mathbf 1
    \mathbf 1^\top\right),

:math:`K_{\alpha\beta} = \overline{x_\alpha x_\beta}` and :math:`m_\alpha = \overline{x_\alpha}`
the previous layer's activation Gram and means, :math:`x_{p,\cdot}` the activations of one
uniformly chosen unit of the previous layer on all inputs, :math:`\xi \sim \mathrm{Beta}(\alpha,
1)` for RAI/RAAI and :math:`\xi = 0` otherwise (seed ``003_…`` appendices A, C; the joint form
is [D], the one-input case is :func:`relulab.theory.asymmetric.layer_laws`). The law of a
layer's units is represented by ``particles`` samples; each layer draws the next from it. Unlike
a width-:math:`P` network this costs :math:`O(Pn^2)` per layer and has no :math:`1/N`
corrections (the bias node's share), only sampling noise of order :math:`P^{-1/2}`.

It gives, per layer, the quantities a finite-width simulation measures: the inactive
probability :math:`P(h_\alpha \le 0)`, the probability that a unit is inactive on *every* input
of the set, and the pre-activation Gram matrix (lengths, correlations).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relulab.theory.asymmetric import RowScheme

__all__ = ["PopulationStatistics", "population_dynamics"]


@dataclass
class PopulationStatistics:
    """Per layer (index 0 = first hidden layer): ``inactive`` (mean over inputs of
    :math:`P(h \\le 0)`), ``dead_on_all`` (:math:`P(h_\\alpha \\le 0\\ \\forall\\alpha)`) and
    ``gram`` ``(depth, n, n)`` :math:`E[h_\\alpha h_\\beta]` over units."""

    inactive: np.ndarray
    dead_on_all: np.ndarray
    gram: np.ndarray

    @property
    def correlation(self) -> np.ndarray:
        """Pre-activation correlation matrices ``(depth, n, n)``."""
        scale = np.sqrt(np.einsum("lii->li", self.gram))
        return self.gram / (scale[:, :, None] * scale[:, None, :])


def _gaussian_draws(covariance: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` draws of :math:`N(0, C)` via a symmetric square root (C may be singular)."""
    eigenvalues, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
    return rng.standard_normal((count, covariance.shape[0])) @ root.T


def population_dynamics(
    scheme: RowScheme,
    inputs: np.ndarray,
    depth: int,
    particles: int = 100_000,
    seed: int = 0,
) -> PopulationStatistics:
    r"""Propagate the joint law of a unit's pre-activations on ``inputs`` ``(n, d)`` through
    ``depth`` layers (module docstring).

    The first layer draws the special entry's input coordinate uniformly among the ``d``
    coordinates and uses :math:`K = XX^\top/d`, :math:`m = \bar X` of the inputs themselves.

    Args:
        scheme: the layer's initialisation (:class:`~relulab.theory.asymmetric.RowScheme`).
        inputs: ``(n, d)`` float array.
        depth: number of layers.
        particles: sample size of the population.
        seed: NumPy random seed.

    Returns:
        :class:`PopulationStatistics`.

    Example:
        >>> x = np.random.default_rng(0).standard_normal((4, 100))
        >>> stats = population_dynamics(RowScheme(2.0), x, depth=3, particles=20_000)
        >>> bool(abs(stats.inactive[2] - 0.5) < 0.01)
        True
    """
    rng = np.random.default_rng(seed)
    activations = np.asarray(inputs, dtype=float).T  # (units, n): the input coordinates
    inactive, dead_on_all, grams = [], [], []
    for _ in range(depth):
        gram = activations.T @ activations / activations.shape[0]
        means = activations.mean(axis=0)
        covariance = (
            scheme.sigma_w2 * (scheme.a * gram + scheme.b * np.outer(means, means))
            + scheme.sigma_b2
        )
        h = _gaussian_draws(covariance, particles, rng)
        if scheme.asymmetric:
            chosen = rng.integers(0, activations.shape[0], particles)
            xi = rng.random(particles) ** (1.0 / scheme.alpha)  # Beta(α, 1) by inversion
            h += xi[:, None] * activations[chosen]
        off = h <= 0
        inactive.append(off.mean())
        dead_on_all.append(off.all(axis=1).mean())
        grams.append(h.T @ h / particles)
        activations = np.maximum(h, 0.0)
    return PopulationStatistics(np.array(inactive), np.array(dead_on_all), np.array(grams))
