r"""Readings of the correlation strength ``k`` of seed ``003_…`` (Singh & Sreejith, §2 and
appendix A) as a row covariance, and the ReLU phase boundaries each reading implies.

The weights into one node are jointly Gaussian with a covariance built from the identity
:math:`I` and the all-ones matrix :math:`J`, scaled by :math:`1/N` (:math:`N` the fan-in);
rows of different nodes are independent (seed §2, eq. 1). The seed's formula for the covariance
was lost, and so were the regions of ``k`` it calls anti-correlated. Every reading below is of
the form

.. math::
    \Sigma = \frac{\sigma_w^2}{N}\left(a\,I + \frac{b}{N}\,J\right),

positive semi-definite iff :math:`a \ge 0` and :math:`a + b \ge 0` (eigenvalues
:math:`\sigma_w^2 a/N` on the :math:`N-1` directions orthogonal to :math:`\mathbf 1`,
:math:`\sigma_w^2 (a+b)/N` along :math:`\mathbf 1`). Off-diagonal covariances are
:math:`\sigma_w^2 b/N^2`: anti-correlated iff :math:`b < 0`. The mean-field maps depend on
:math:`(a, b)` only (:mod:`relulab.theory.meanfield`), so a reading is a map ``k ↦ (a, b)`` [D]:

* ``additive`` — :math:`I + (k/N)J`, relulab's reading [I]: :math:`(a, b) = (1, k)`;
  valid :math:`k \ge -1`, anti-correlated for :math:`k < 0`.
* ``negated`` — :math:`I - (k/N)J`: :math:`(1, -k)`; valid :math:`k \le 1`, anti for
  :math:`k > 0`.
* ``pairwise`` — variance :math:`\sigma_w^2/N`, pairwise correlation :math:`k/N`:
  :math:`(1 - k/N, k)`; valid :math:`-N/(N-1) \le k \le N`, anti for :math:`k < 0`.
* ``correlation`` — variance :math:`\sigma_w^2/N`, pairwise correlation :math:`k`:
  :math:`(1 - k, kN)`; valid :math:`-1/(N-1) \le k \le 1`, anti for :math:`k < 0`.
* ``one_plus_k`` — :math:`(1+k)I - (k/N)J`: :math:`(1 + k, -k)`; valid :math:`k \ge -1`, anti
  for :math:`k > 0`.
* ``precision`` — :math:`(I + (k/N)J)^{-1} = ((1+k)I - (k/N)J)/(1+k)`:
  :math:`(1, -k/(1+k))`; valid :math:`k > -1`, anti for :math:`k > 0`.

Derivations [D]. *pairwise*: :math:`\Sigma = (\sigma_w^2/N)((1-\rho) I + \rho J)` with
:math:`\rho = k/N`, so :math:`a = 1 - k/N`, :math:`b = \rho N^2/N = k`; it tends to ``additive``
as :math:`N \to \infty` (at finite :math:`N` it keeps the variance exactly :math:`\sigma_w^2/N`).
*correlation*: the same with :math:`\rho = k`; an :math:`O(1)` anti-correlation is impossible
(:math:`a + b = 1 + k(N-1) \ge 0`), its extreme :math:`k = -1/(N-1)` is the zero-sum subspace
:math:`(a, b) \to (1, -1)`, and an :math:`O(1)` positive correlation gives :math:`b = kN`, an
:math:`O(N)` input contribution the seed's :math:`1/N` scaling is said to avoid (§2).
*precision*: a Gaussian :math:`\propto \exp(-\tfrac{N}{2\sigma_w^2} w^\top(I + \tfrac kN J) w)`,
i.e. an energy penalising :math:`(\sum_i w_i)^2`; since :math:`J^2 = NJ`,
:math:`(I + \tfrac kN J)^{-1} = I - \tfrac{k}{1+k}\tfrac JN`. It is ``one_plus_k`` divided by
:math:`1+k`, and :math:`k \to \infty` is the zero-sum subspace :math:`(1, -1)`.

Phase boundaries for ReLU (mean field, :math:`\sigma_b^2 > 0`; seed §2, eq. 2 and appendix A)
[D]: the length map is :math:`q' = \sigma_w^2(a/2 + b/2\pi)\,q + \sigma_b^2`, the slope of the
correlation map at :math:`c = 1` is :math:`\chi_1 = \sigma_w^2 a/2`, so

* order-to-chaos boundary :math:`\chi_1 = 1`: :math:`\sigma_w^2 = 2/a`;
* bounded length iff :math:`\sigma_w^2 < 2\pi/(a\pi + b)`;
* a bounded chaotic window :math:`2/a < \sigma_w^2 < 2\pi/(a\pi + b)` iff :math:`b < 0`.

Per reading (:func:`relu_phase_boundaries`): ``additive`` 2 and :math:`2\pi/(\pi + k)`;
``negated`` 2 and :math:`2\pi/(\pi - k)`; ``pairwise`` :math:`2N/(N-k)` and
:math:`2\pi/((1-k/N)\pi + k)`; ``correlation`` :math:`2/(1-k)` and
:math:`2\pi/((1-k)\pi + kN)`; ``one_plus_k`` :math:`2/(1+k)` and :math:`2\pi/((1+k)\pi - k)`;
``precision`` 2 and :math:`2\pi/(\pi - k/(1+k))` (:math:`\to 2\pi/(\pi - 1) \approx 2.934`).

The seed's Table 1 (headers lost) lists He (2.0, 0.0, No, 0.5), ACI (2.0, 100.0, Yes, 0.5),
RAI (0.36, 0.0, No, 0.36), RAAI (0.92, 100.0, Yes, 0.36). Read as (σ_w², k, has a chaotic
phase, dead-node probability), only ``precision`` makes ACI valid, anti-correlated and at the
order-to-chaos boundary the seed proposes (§2: "initializing ... at the order to chaos
boundary"): :math:`k = 100 \Rightarrow (a, b) = (1, -100/101)`, :math:`\chi_1 = 1`, bounded up
to :math:`\sigma_w^2 \approx 2.92` [I]. :func:`describe` evaluates any point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PARAMETERISATIONS",
    "CorrelatedPoint",
    "ReLUPhaseBoundaries",
    "check_row_covariance",
    "covariance_coefficients",
    "describe",
    "relu_phase_boundaries",
    "row_covariance",
]

PARAMETERISATIONS = (
    "additive",
    "negated",
    "pairwise",
    "correlation",
    "one_plus_k",
    "precision",
)


def check_row_covariance(a: float, b: float) -> None:
    """Raise ``ValueError`` unless :math:`(\\sigma_w^2/N)(aI + (b/N)J)` is PSD
    (:math:`a \\ge 0`, :math:`a + b \\ge 0`; module docstring)."""
    if not (math.isfinite(a) and math.isfinite(b)) or a < 0 or a + b < 0:
        raise ValueError(f"row covariance is not PSD: need a ≥ 0 and a + b ≥ 0, got a={a}, b={b}")


def covariance_coefficients(
    k: float, parameterisation: str = "additive", fan_in: int | None = None
) -> tuple[float, float]:
    r"""The coefficients :math:`(a, b)` of :math:`\Sigma = (\sigma_w^2/N)(aI + (b/N)J)` for the
    seed's correlation strength ``k`` under a named reading (module docstring table).

    Source: seed ``003_…`` §2, eq. 1 (formula lost; readings [I], their covariances [D]).

    Args:
        k: the correlation strength.
        parameterisation: one of :data:`PARAMETERISATIONS`.
        fan_in: :math:`N`; needed by ``pairwise`` and ``correlation`` only.

    Returns:
        ``(a, b)``; raises ``ValueError`` if the covariance is not PSD or the name is unknown.

    Example:
        >>> covariance_coefficients(100.0, "precision")
        (1.0, -0.9900990099009901)
    """
    k = float(k)
    if parameterisation == "additive":
        a, b = 1.0, k
    elif parameterisation == "negated":
        a, b = 1.0, -k
    elif parameterisation == "pairwise":
        a, b = 1.0 - k / _fan_in(parameterisation, fan_in), k
    elif parameterisation == "correlation":
        a, b = 1.0 - k, k * _fan_in(parameterisation, fan_in)
    elif parameterisation == "one_plus_k":
        a, b = 1.0 + k, -k
    elif parameterisation == "precision":
        if k <= -1.0:
            raise ValueError(f"the precision reading needs k > −1 (I + (k/N)J invertible), got {k}")
        a, b = 1.0, -k / (1.0 + k)
    else:
        raise ValueError(
            f"unknown parameterisation {parameterisation!r}; choose from "
            f"{', '.join(PARAMETERISATIONS)}"
        )
    check_row_covariance(a, b)
    return a, b


def _fan_in(parameterisation: str, fan_in: int | None) -> int:
    """``fan_in``, which the ``pairwise`` and ``correlation`` readings need (≥ 2)."""
    if fan_in is None or fan_in < 2:
        raise ValueError(f"the {parameterisation!r} reading needs fan_in ≥ 2, got {fan_in}")
    return fan_in


def row_covariance(fan_in: int, sigma_w2: float, a: float, b: float) -> np.ndarray:
    """The ``(fan_in, fan_in)`` matrix :math:`(\\sigma_w^2/N)(aI + (b/N)J)` (float64).

    Example:
        >>> row_covariance(2, 2.0, 1.0, -1.0)
        array([[ 0.5, -0.5],
               [-0.5,  0.5]])
    """
    n = int(fan_in)
    return (sigma_w2 / n) * (a * np.eye(n) + (b / n) * np.ones((n, n)))


@dataclass(frozen=True)
class ReLUPhaseBoundaries:
    """:math:`\\sigma_w^2` at the order-to-chaos boundary (:math:`\\chi_1 = 1`) and at the
    bounded-length limit of a ReLU network (module docstring)."""

    chaos_onset: float
    bounded_limit: float

    @property
    def has_bounded_chaotic_window(self) -> bool:
        return self.chaos_onset < self.bounded_limit


def relu_phase_boundaries(a: float, b: float) -> ReLUPhaseBoundaries:
    r""":math:`\sigma_w^2 = 2/a` (:math:`\chi_1 = 1`) and :math:`2\pi/(a\pi + b)` (length limit).

    Source: seed ``003_…`` §2 (eq. 2, "the length is bounded if ...") [D]. ``inf`` where the
    boundary does not exist (:math:`a = 0`, or :math:`a\pi + b \le 0`).

    Example:
        >>> round(relu_phase_boundaries(1.0, -1.0).bounded_limit, 4)
        2.9339
    """
    chaos = math.inf if a <= 0 else 2.0 / a
    denominator = a * math.pi + b
    bounded = math.inf if denominator <= 0 else 2.0 * math.pi / denominator
    return ReLUPhaseBoundaries(chaos, bounded)


@dataclass(frozen=True)
class CorrelatedPoint:
    """One (σ_w², k) point under a reading: its (a, b), χ1 and phase (:func:`describe`)."""

    parameterisation: str
    k: float
    sigma_w2: float
    a: float
    b: float
    chi1: float
    boundaries: ReLUPhaseBoundaries

    @property
    def anti_correlated(self) -> bool:
        return self.b < 0

    @property
    def bounded(self) -> bool:
        return self.sigma_w2 < self.boundaries.bounded_limit

    @property
    def phase(self) -> str:
        """``ordered``, ``critical`` (χ1 = 1 within 1e-12), ``chaotic`` (bounded, χ1 > 1) or
        ``unbounded``."""
        if not self.bounded:
            return "unbounded"
        if abs(self.chi1 - 1.0) <= 1e-12:
            return "critical"
        return "chaotic" if self.chi1 > 1.0 else "ordered"


def describe(
    sigma_w2: float, k: float, parameterisation: str = "additive", fan_in: int | None = None
) -> CorrelatedPoint:
    r"""Where :math:`(\sigma_w^2, k)` lies in the ReLU phase diagram under a reading.

    :math:`\chi_1 = \sigma_w^2 a/2` [D]; phases as in the module docstring (σ_b² > 0).

    Example:
        >>> describe(2.0, 100.0, "precision").phase
        'critical'
        >>> describe(2.0, 100.0, "additive").phase
        'unbounded'
    """
    a, b = covariance_coefficients(k, parameterisation, fan_in)
    return CorrelatedPoint(
        parameterisation,
        float(k),
        float(sigma_w2),
        a,
        b,
        float(sigma_w2) * a / 2.0,
        relu_phase_boundaries(a, b),
    )
