"""What the mean field predicts for every measurement of the study, from :mod:`relulab.theory`
(one place for the experiment's theory curves, read by the claims and the figures)."""

from __future__ import annotations

import functools

import numpy as np

from relulab.analysis import fit_log_slope
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.experiments.correlated_init.inits import table1_inits
from relulab.theory import correlation_trajectory, get_kernel
from relulab.theory.asymmetric import RAI_SIGMA_W2, RowScheme, layer_laws
from relulab.theory.correlated import covariance_coefficients, relu_phase_boundaries
from relulab.theory.population import population_dynamics

__all__ = [
    "PointTheory",
    "dead_node_theory",
    "mean_correlation_theory",
    "growth_window",
    "point_theory",
    "row_scheme",
]

RELU = get_kernel("relu")


def growth_window(depth: int) -> np.ndarray:
    """The layers (1-based) over which growth rates are fitted: the second half."""
    return np.arange(depth // 2, depth + 1)


class PointTheory:
    """Mean-field curves at one (k, σ_w²): lengths and the far and near pairs' correlations
    per layer (:func:`relulab.theory.correlation_trajectory`), the length growth rate over
    :func:`growth_window`, :math:`\\chi_1 = \\sigma_w^2 a/2` and the phase."""

    def __init__(self, k: float, sigma_w2: float, config: CorrelatedInitConfig) -> None:
        self.a, self.b = covariance_coefficients(
            k, config.parameterisation, config.correlation_width
        )
        args = (config.correlation_depth, sigma_w2, config.sigma_b2, self.a, self.b)
        self.length, self.correlation = correlation_trajectory(
            RELU, config.correlation_c0, 1.0, *args
        )
        _, self.correlation_near = correlation_trajectory(RELU, config.near_c0, 1.0, *args)
        window = growth_window(config.correlation_depth)
        self.growth = fit_log_slope(window, self.length[window - 1])
        self.chi1 = sigma_w2 * self.a / 2.0
        boundaries = relu_phase_boundaries(self.a, self.b)
        self.bounded = sigma_w2 < boundaries.bounded_limit
        self.phase = (
            "unbounded" if not self.bounded else ("chaotic" if self.chi1 > 1.0 else "ordered")
        )


@functools.lru_cache(maxsize=256)
def point_theory(k: float, sigma_w2: float, config: CorrelatedInitConfig) -> PointTheory:
    """The mean-field curves at one (k, σ_w²), computed once per config (claims and figures
    read the same point many times)."""
    return PointTheory(k, sigma_w2, config)


def row_scheme(name: str, config: CorrelatedInitConfig) -> RowScheme:
    """The mean field's view (:class:`~relulab.theory.asymmetric.RowScheme`) of one of
    :func:`~relulab.experiments.correlated_init.inits.table1_inits`."""
    scheme, options = table1_inits(config)[name]
    if scheme == "kaiming_normal":
        return RowScheme(2.0)
    if scheme == "rai":
        return RowScheme(RAI_SIGMA_W2, asymmetric=True)
    a, b = covariance_coefficients(options["k"], options["parameterisation"], config.dead_width)
    sigma_b2 = options.get("sigma_b2", 0.0)
    return RowScheme(options["sigma_w2"], a=a, b=b, sigma_b2=sigma_b2, asymmetric=scheme == "raai")


@functools.lru_cache(maxsize=64)
def dead_node_theory(name: str, config: CorrelatedInitConfig) -> np.ndarray:
    """:math:`P(h \\le 0)` per layer at infinite width
    (:func:`relulab.theory.asymmetric.layer_laws`; 1/2 for Gaussian rows)."""
    return layer_laws(row_scheme(name, config), config.dead_depth).inactive


def mean_correlation_theory(
    name: str, config: CorrelatedInitConfig, inputs: np.ndarray, particles: int = 20_000
) -> np.ndarray:
    """Mean pairwise correlation of the pre-activations of ``inputs`` per layer at infinite
    width, by population dynamics (:func:`relulab.theory.population.population_dynamics`: the
    exact joint law, RAI/RAAI included; appendices A, C)."""
    stats = population_dynamics(row_scheme(name, config), inputs, config.dead_depth, particles)
    n = inputs.shape[0]
    correlation = stats.correlation
    return (correlation.sum(axis=(1, 2)) - np.trace(correlation, axis1=1, axis2=2)) / (n * (n - 1))
