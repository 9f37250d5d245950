r"""Dead-node probabilities at initialisation (seed ``003_…`` §1, §3, Table 1; Lu et al. 2020).

**Definitions.** The seed uses "dead" in two senses, and they must not be confused:

* *dead-node probability* (Table 1): the probability that a unit's pre-activation is
  :math:`\le 0` — its ReLU outputs zero — for a given input, :math:`P(h \le 0)`. The seed: "For
  ReLU networks with symmetric distributions for weights and biases, the dead node probability
  is half" (§3) and "A ReLU network initialized with symmetric distributions has half of the
  nodes dead" (§4). Table 1's 0.5 for He and ACI can only be this per-input probability.
* *dead* in the dying-ReLU sense (§1: "the network outputs zero for all inputs and is dead";
  Lu et al.: a neuron inactive on the whole input domain): a unit with :math:`h \le 0` on
  *every* input of a set, :math:`P(h_\alpha \le 0\ \forall\alpha)`.

**Gaussian rows** (He, ACI, any :math:`(a, b)`, zero-mean Gaussian bias): the rows and biases
are symmetric, so :math:`h \stackrel{d}{=} -h` given the previous layer and
:math:`P(h \le 0) = 1/2` exactly, at any width and depth. At infinite width the pre-activations
of one unit on :math:`n` inputs are :math:`N(0, C^l)`, :math:`C^l` from the covariance map
(:func:`gaussian_gram_trajectory`), so the probability of being dead on all of them is the
orthant probability of :math:`C^l` [D]:

* two inputs of correlation :math:`c`: :math:`1/4 + \arcsin(c)/2\pi` (Sheppard);
* :math:`n` equicorrelated inputs (:math:`c \ge 0`): writing
  :math:`h_\alpha = \sqrt c\,T + \sqrt{1-c}\,Z_\alpha`,
  :math:`P = E_T\left[\Phi\!\left(-T\sqrt{c/(1-c)}\right)^n\right]`, a one-dimensional integral;
* general :math:`C`: Genz's algorithm (``scipy.stats.multivariate_normal.cdf``).

**RAI/RAAI**: the Beta entry gives :math:`h` a positive mean on inputs with a positive
activation at the special unit; the per-input law is propagated exactly by
:func:`relulab.theory.asymmetric.layer_laws`, the joint law over a set of inputs by
:func:`relulab.theory.population.population_dynamics`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr
from scipy.stats import multivariate_normal

from relulab.theory.asymmetric import RowScheme
from relulab.theory.kernels import arccos_kernel

__all__ = [
    "equicorrelated_dead_probability",
    "gaussian_dead_on_all",
    "gaussian_gram_trajectory",
    "pair_dead_probability",
]

_GRID, _GRID_WEIGHTS = np.polynomial.legendre.leggauss(400)


def pair_dead_probability(c: np.ndarray) -> np.ndarray:
    r""":math:`P(h_1 \le 0, h_2 \le 0) = 1/4 + \arcsin(c)/2\pi` for centred jointly Gaussian
    pre-activations of correlation ``c`` (Sheppard's formula).

    Example:
        >>> float(pair_dead_probability(0.0)), float(pair_dead_probability(1.0))
        (0.25, 0.5)
    """
    return 0.25 + np.arcsin(np.clip(np.asarray(c, float), -1.0, 1.0)) / (2.0 * np.pi)


def equicorrelated_dead_probability(c: float, n: int) -> float:
    r""":math:`P(h_\alpha \le 0\ \forall \alpha \le n)` for :math:`n` centred Gaussians with
    common correlation :math:`c \in [0, 1]` (module docstring; 400-point Gauss–Legendre on
    :math:`T \in [-12, 12]`).

    Example:
        >>> round(equicorrelated_dead_probability(0.0, 3), 12)
        0.125
    """
    if not 0.0 <= c <= 1.0:
        raise ValueError(f"the one-dimensional form needs 0 ≤ c ≤ 1, got {c}")
    if c == 1.0:
        return 0.5
    t = 12.0 * _GRID
    density = np.exp(-0.5 * t * t) / np.sqrt(2.0 * np.pi)
    conditional = ndtr(-t * np.sqrt(c / (1.0 - c)))
    return float(12.0 * np.sum(_GRID_WEIGHTS * density * conditional**n))


def gaussian_dead_on_all(covariance: np.ndarray, tolerance: float = 1e-5) -> float:
    r""":math:`P(h \le 0)` componentwise for :math:`h \sim N(0, C)`: the orthant probability
    (Genz's quasi-Monte Carlo algorithm through SciPy, absolute and relative ``tolerance``, a
    fixed seed; suited to a few dozen inputs at most).

    Example:
        >>> round(gaussian_dead_on_all(np.eye(2)), 6)
        0.25
    """
    covariance = np.asarray(covariance, dtype=float)
    n = covariance.shape[0]
    if n == 1:
        return 0.5
    scale = np.sqrt(np.diag(covariance))
    correlation = covariance / np.outer(scale, scale)
    return float(
        multivariate_normal.cdf(
            np.zeros(n),
            cov=correlation,
            allow_singular=True,
            abseps=tolerance,
            releps=tolerance,
            rng=np.random.default_rng(0),
        )
    )


def gaussian_gram_trajectory(scheme: RowScheme, inputs: np.ndarray, depth: int) -> np.ndarray:
    r"""Mean-field pre-activation covariances :math:`C^1 … C^{depth}` ``(depth, n, n)`` of
    Gaussian-row ReLU networks (He, ACI) on ``inputs`` ``(n, d)``.

    .. math::
        C^1 = \sigma_w^2\left(a\,\tfrac{XX^\top}{d} + b\,\bar x\bar x^\top\right) + \sigma_b^2,
        \qquad
        C^{l+1}_{\alpha\beta} = \sigma_w^2\left(a\,J(C^l_{\alpha\alpha}, C^l_{\beta\beta},
        C^l_{\alpha\beta}) + b\,\frac{\sqrt{C^l_{\alpha\alpha}C^l_{\beta\beta}}}{2\pi}\right)
        + \sigma_b^2,

    :math:`J` the arc-cosine kernel (seed ``003_…`` appendix A, eqs. 5–7, for all pairs at once).

    Example:
        >>> x = np.eye(2) * np.sqrt(2)  # two orthogonal inputs of mean square 1
        >>> gaussian_gram_trajectory(RowScheme(2.0), x, 2)[0]
        array([[2., 0.],
               [0., 2.]])
    """
    if scheme.asymmetric:
        raise ValueError("Gaussian-row closed forms do not apply to RAI/RAAI (asymmetric=True)")
    x = np.asarray(inputs, dtype=float)
    means = x.mean(axis=1)
    covariance = (
        scheme.sigma_w2 * (scheme.a * x @ x.T / x.shape[1] + scheme.b * np.outer(means, means))
        + scheme.sigma_b2
    )
    trajectory = [covariance]
    for _ in range(depth - 1):
        diagonal = np.diag(covariance)
        cross = arccos_kernel(diagonal[:, None], diagonal[None, :], covariance)
        mean_product = np.sqrt(np.outer(diagonal, diagonal)) / (2.0 * np.pi)
        covariance = (
            scheme.sigma_w2 * (scheme.a * cross + scheme.b * mean_product) + scheme.sigma_b2
        )
        trajectory.append(covariance)
    return np.array(trajectory)
