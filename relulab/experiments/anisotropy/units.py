"""The work of the anisotropy study: spectra of σ(XW) over independent draws of (X, W).

* ``activations`` — ReLU, linear, tanh and SiLU on the same draws, with the closed-form σ1 of
  ReLU per draw;
* ``leaky-sweep`` — leaky ReLU at ``slopes`` slopes evenly on [0, 1].

Every reader reaches a unit through :class:`Key`, and what it stores through its typed view
(:class:`Spectra`, :class:`ActivationSpectra`; :func:`unit_views`), never by a string typed where
it is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import torch

from relulab.engine import init_weight_stack
from relulab.experiments.anisotropy.config import ACTIVATIONS, AnisotropyConfig
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.nn import get_activation
from relulab.records import UnitView, array, curve, final
from relulab.store import UnitResult
from relulab.theory import get_kernel

__all__ = [
    "ActivationSpectra",
    "Key",
    "Spectra",
    "estimate_bytes",
    "plan",
    "predicted_sigma1",
    "unit_keys",
    "unit_views",
]


class Key(StrEnum):
    """The study's units, by name."""

    ACTIVATIONS = "activations"
    LEAKY_SWEEP = "leaky-sweep"


def unit_keys(config: AnisotropyConfig) -> list[str]:
    """Every unit name a reader of this study may use."""
    return [key.value for key in Key]


@dataclass(frozen=True)
class Spectra(UnitView):
    """One spectrum of σ(XW) per (draw, activation, slope): the singular values of H, largest
    first ``(S, D)``, σ1/σ2 and σ1 per network ``(S,)``."""

    singular: np.ndarray = curve()
    sigma1_over_sigma2: np.ndarray = final()
    sigma1: np.ndarray = final()


@dataclass(frozen=True)
class ActivationSpectra(Spectra):
    """The activations unit: :class:`Spectra` plus ReLU's closed-form σ1 per draw (in draw
    order, :func:`predicted_sigma1`)."""

    relu_sigma1_closed_form: np.ndarray = array()


def unit_views(config: AnisotropyConfig) -> dict[str, type[UnitView]]:
    """Every unit name :func:`plan` produces, with the view of what it stores.

    Example:
        >>> sorted((k, v.__name__) for k, v in unit_views(AnisotropyConfig()).items())
        [('activations', 'ActivationSpectra'), ('leaky-sweep', 'Spectra')]
    """
    return {Key.ACTIVATIONS.value: ActivationSpectra, Key.LEAKY_SWEEP.value: Spectra}


def _weight_seeds(config: AnisotropyConfig, context: RunContext) -> list[int]:
    generator = context.generator("weights")
    return torch.randint(0, 2**62, (config.n_draws,), generator=generator).tolist()


def _weights(config: AnisotropyConfig, seeds: list[int]) -> torch.Tensor:
    """W for every draw, ``(draws, D, d)`` as ``nn.Linear(d, D)`` holds it: rows are units."""
    ((weight, _),) = init_weight_stack(
        [(config.D, config.d)],
        len(seeds),
        config.init,
        seeds=seeds,
        bias=False,
        dtype=torch.float64,
    )
    return weight.detach()


def _spectrum(h: torch.Tensor) -> np.ndarray:
    """Singular values of H, largest first, from the eigenvalues of the D×D Gram matrix."""
    eigenvalues = torch.linalg.eigvalsh(h.T @ h).flip(0)
    return eigenvalues.clamp_min(0).sqrt().numpy()


def predicted_sigma1(weight: np.ndarray, n_samples: int, slope: float) -> tuple[float, float]:
    r""":math:`\sqrt{N\lambda_1(\mu\mu^\top + C)}` for leaky ReLU (slope 0 = ReLU) and
    weights ``weight`` (D×d), in closed form [D], and :math:`\lVert\mu\rVert`.

    The rows of :math:`H = \sigma(XW)` are i.i.d. with mean :math:`\mu_j = E[\sigma(x\cdot
    w_j)]` and covariance :math:`C_{jk}`, given by the Gaussian kernels of
    :mod:`relulab.theory` (:math:`q_j = \lVert w_j\rVert^2`, :math:`q_{jk} = w_j\cdot w_k`), so
    :math:`H^\top H/N \to \mu\mu^\top + C`.

    Args:
        weight: ``(D, d)``, rows are units.
        n_samples: N.
        slope: the leaky-ReLU slope p.

    Returns:
        ``(σ1, ‖μ‖)``.

    Example:
        >>> w = np.eye(3)
        >>> round(predicted_sigma1(w, 100, 1.0)[1], 12)  # linear: zero mean
        0.0
    """
    kernel = get_kernel("leaky_relu", slope=slope)
    gram = weight @ weight.T
    q = np.diag(gram)
    second_moment = kernel.cross(q[:, None], q[None, :], gram)  # E[h hᵀ] = μμᵀ + C
    return float(np.sqrt(n_samples * np.linalg.eigvalsh(second_moment)[-1])), float(
        np.linalg.norm(kernel.mean(q))
    )


def _draw_spectra(
    config: AnisotropyConfig, x: torch.Tensor, weight: torch.Tensor, values: list
) -> tuple[list[np.ndarray], list[float]]:
    """Spectra of σ(XW) for every (activation, slope), and ReLU's closed-form σ1."""
    pre = x @ weight.T
    spectra, closed = [], []
    for activation, slope in values:
        spectra.append(_spectrum(get_activation(activation, slope).fn(pre)))
        if activation == "relu":  # the closed form is compared for ReLU
            closed.append(predicted_sigma1(weight.numpy(), config.n_samples, slope)[0])
    return spectra, closed


def _unit(config: AnisotropyConfig, name: str, values: list[tuple[str, float]]) -> Unit:
    def run(context: RunContext) -> UnitResult:
        seeds = _weight_seeds(config, context)
        weights = _weights(config, seeds)
        spectra, conditions, closed = [], [], []
        with context.progress(config.n_draws * len(values), name) as done:
            for draw, seed in enumerate(seeds):
                generator = context.generator(f"inputs-{draw}")
                x = torch.randn(
                    config.n_samples, config.d, generator=generator, dtype=torch.float64
                )
                drawn, relu_closed = _draw_spectra(config, x, weights[draw], values)
                spectra += drawn
                closed += relu_closed
                conditions += [
                    {"draw": draw, "seed": seed, "activation": activation, "slope": slope}
                    for activation, slope in values
                ]
                done(len(values))
        singular = np.stack(spectra)
        return UnitResult.forward_only(
            conditions,
            np.arange(1, singular.shape[1] + 1),
            {"singular": singular},
            {"sigma1_over_sigma2": singular[:, 0] / singular[:, 1], "sigma1": singular[:, 0]},
            {"relu_sigma1_closed_form": np.array(closed)} if closed else {},
        )

    return Unit(name, run)


def plan(config: AnisotropyConfig) -> list[Unit]:
    """The two units: every activation, and the leaky-ReLU sweep."""
    slopes = np.linspace(0.0, 1.0, config.slopes)
    return [
        _unit(config, Key.ACTIVATIONS, [(a, 0.0) for a in ACTIVATIONS]),
        _unit(config, Key.LEAKY_SWEEP, [("leaky_relu", float(p)) for p in slopes]),
    ]


def estimate_bytes(config: AnisotropyConfig) -> int:
    """Peak memory in bytes (float64): X (N×d), the pre-activations and one activation
    (2 N×D), the Gram matrix and the closed form's D×D kernel matrices (≈ 8 D²) and every draw's
    W. Measured: 496 MiB peak for an estimate of 535 MiB (N = 20 000, d = 100, D = 1000) before
    the Gram-matrix spectrum."""
    n, d, width = config.n_samples, config.d, config.D
    return 8 * (n * d + 3 * n * width + 8 * width * width + config.n_draws * d * width)
