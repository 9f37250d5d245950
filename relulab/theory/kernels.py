r"""Gaussian expectations of activations — the building blocks of mean-field theory.

For :math:`(u, v) \sim N\!\left(0, \begin{pmatrix} q_1 & q_{12} \\ q_{12} & q_2\end{pmatrix}\right)`
an :class:`ActivationKernel` gives :math:`E[\phi(u)]`, :math:`E[\phi(u)^2]`,
:math:`E[\phi(u)\phi(v)]` and :math:`E[\phi'(u)^2]`, vectorised over NumPy arrays (float64).

**One general closed form** (the pattern of neural-tangents): the ReLU family
:math:`\phi(z) = a\min(z, 0) + b\max(z, 0) - s = a z + (b-a)\,\mathrm{ReLU}(z) - s` covers ReLU
``(0, 1, 0)``, leaky ReLU ``(α, 1, 0)``, ReLU−b ``(0, 1, b)`` (seed ``000_…``) and :math:`|z|`
``(−1, 1, 0)``. With :math:`c = q_{12}/\sqrt{q_1 q_2} = \cos\theta`, the arc-cosine kernel
(Cho & Saul 2009)

.. math::
    J(q_1, q_2, q_{12}) = E[\mathrm{ReLU}(u)\mathrm{ReLU}(v)]
      = \frac{\sqrt{q_1 q_2}}{2\pi}\left(\sin\theta + (\pi - \theta)\cos\theta\right),

:math:`E[u\,\mathrm{ReLU}(v)] = q_{12}/2` and :math:`E[\mathrm{ReLU}(u)] = \sqrt{q_1/2\pi}` give

.. math::
    E[\phi(u)\phi(v)] = a^2 q_{12} + a(b-a) q_{12} + (b-a)^2 J
      - s\,(b-a)\left(\sqrt{q_1/2\pi} + \sqrt{q_2/2\pi}\right) + s^2 .

The shift only adds constant and mean terms (derived here [D]; checked against quadrature and
Monte Carlo in the tests). :math:`\theta` is
computed as ``arctan2(√(1−c²), c)`` with ``c`` clipped to [−1, 1]: no NaN at :math:`c \to \pm 1`,
a known failure of ``arccos`` near 1 in other libraries.

erf has its own closed form (Williams 1997):
:math:`E[\mathrm{erf}(u)\mathrm{erf}(v)]
= \tfrac{2}{\pi}\arcsin\frac{2q_{12}}{\sqrt{(1+2q_1)(1+2q_2)}}`.
Smooth activations (tanh, SiLU, GELU) use 2-D Gauss–Hermite quadrature;
:func:`monte_carlo_cross` is an independent sampling path for tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import erf

__all__ = [
    "KERNELS",
    "KERNEL_NAMES",
    "ActivationKernel",
    "ReLUFamilyKernel",
    "QuadratureKernel",
    "arccos_j1",
    "arccos_kernel",
    "correlation_angle",
    "get_kernel",
    "monte_carlo_cross",
    "safe_correlation",
]

ArrayLike = float | np.ndarray
TWO_PI = 2.0 * np.pi


def safe_correlation(q1: ArrayLike, q2: ArrayLike, q12: ArrayLike) -> np.ndarray:
    """:math:`c = q_{12}/\\sqrt{q_1 q_2}` clipped to [−1, 1] (rounding can push it past ±1);
    two zero-length signals are identical, so ``c = 1`` there."""
    norm = np.sqrt(np.asarray(q1, dtype=float) * np.asarray(q2, dtype=float))
    q12 = np.asarray(q12, dtype=float)
    ones = np.ones(np.broadcast(q12, norm).shape)
    return np.clip(np.divide(q12, norm, out=ones, where=norm > 0), -1.0, 1.0)


def correlation_angle(c: ArrayLike) -> np.ndarray:
    r"""The angle :math:`\theta = \arccos c \in [0, \pi]` of a correlation, computed as
    ``arctan2(√(1−c²), c)`` after clipping ``c`` to [−1, 1]: no NaN and no loss of accuracy
    near :math:`c = \pm 1`, where ``arccos`` fails in other libraries.

    Args:
        c: correlations (array-like).

    Returns:
        :math:`\theta`, same shape.

    Example:
        >>> float(correlation_angle(1.0 + 1e-15))
        0.0
    """
    c = np.clip(np.asarray(c, dtype=float), -1.0, 1.0)
    return np.arctan2(np.sqrt(np.maximum(1.0 - c * c, 0.0)), c)


def arccos_j1(c: ArrayLike) -> np.ndarray:
    r"""The angular factor of the degree-1 arc-cosine kernel (Cho & Saul 2009),
    :math:`J_1(\theta) = \sin\theta + (\pi - \theta)\cos\theta` at :math:`\cos\theta = c`.

    Every ReLU correlation formula is this function: :func:`arccos_kernel`
    :math:`= \sqrt{q_1 q_2}\,J_1/2\pi`, the normalised kernel of seed ``002_…`` §3.1
    (:func:`relulab.theory.normalised_arccos_kernel`) :math:`K(c) = J_1/\pi`, and seed
    ``003_…`` §2's :math:`f(c)` :math:`= J_1`.

    Args:
        c: correlations, clipped to [−1, 1].

    Returns:
        :math:`J_1`, same shape; :math:`J_1 = 1` at :math:`c = 0`, :math:`\pi` at :math:`c = 1`.

    Example:
        >>> float(arccos_j1(0.0)), float(arccos_j1(1.0)) == np.pi
        (1.0, True)
    """
    c = np.clip(np.asarray(c, dtype=float), -1.0, 1.0)
    sin_theta = np.sqrt(np.maximum(1.0 - c * c, 0.0))
    theta = np.arctan2(sin_theta, c)
    return sin_theta + (np.pi - theta) * c


def arccos_kernel(q1: ArrayLike, q2: ArrayLike, q12: ArrayLike) -> np.ndarray:
    r""":math:`J(q_1, q_2, q_{12}) = E[\mathrm{ReLU}(u)\mathrm{ReLU}(v)]
    = \sqrt{q_1 q_2}\,J_1(\theta)/2\pi` (Cho & Saul 2009; module docstring), NaN-safe at
    :math:`c = \pm 1`.

    Args:
        q1: :math:`E[u^2]`.
        q2: :math:`E[v^2]`.
        q12: :math:`E[uv]`.

    Returns:
        The expectation, broadcast over the arguments.

    Example:
        >>> float(arccos_kernel(2.0, 2.0, 2.0))  # q/2 at c = 1
        1.0
    """
    c = safe_correlation(q1, q2, q12)
    return np.sqrt(np.asarray(q1) * np.asarray(q2)) / TWO_PI * arccos_j1(c)


class ActivationKernel:
    """Gaussian expectations of one activation (module docstring); subclasses give
    :meth:`mean`, :meth:`cross` and :meth:`derivative_second_moment`.

    Example:
        >>> kernel = get_kernel("relu")
        >>> float(kernel.second_moment(2.0))  # E[ReLU(u)²] = q/2
        1.0
    """

    name: str

    def mean(self, q: ArrayLike) -> np.ndarray:
        """:math:`E[\\phi(u)]`, :math:`u \\sim N(0, q)`."""
        raise NotImplementedError

    def cross(self, q1: ArrayLike, q2: ArrayLike, q12: ArrayLike) -> np.ndarray:
        """:math:`E[\\phi(u)\\phi(v)]`."""
        raise NotImplementedError

    def derivative_second_moment(self, q: ArrayLike) -> np.ndarray:
        """:math:`E[\\phi'(u)^2]` (enters :math:`\\chi_1`)."""
        raise NotImplementedError

    def second_moment(self, q: ArrayLike) -> np.ndarray:
        """:math:`E[\\phi(u)^2]`."""
        return self.cross(q, q, q)


@dataclass(frozen=True)
class ReLUFamilyKernel(ActivationKernel):
    r""":math:`\phi(z) = a\min(z,0) + b\max(z,0) - s`: exact closed forms (module docstring).

    Attributes:
        negative_slope: :math:`a`.
        positive_slope: :math:`b`.
        shift: :math:`s` (ReLU−b of seed ``000_…``).
        name: a label.

    Example:
        >>> relu_b = ReLUFamilyKernel(shift=1 / np.sqrt(2 * np.pi))  # the centring shift at q = 1
        >>> abs(float(relu_b.mean(1.0))) < 1e-16
        True
    """

    negative_slope: float = 0.0
    positive_slope: float = 1.0
    shift: float = 0.0
    name: str = "relu"

    def mean(self, q: ArrayLike) -> np.ndarray:
        a, b, s = self.negative_slope, self.positive_slope, self.shift
        return (b - a) * np.sqrt(np.asarray(q, dtype=float) / TWO_PI) - s

    def cross(self, q1: ArrayLike, q2: ArrayLike, q12: ArrayLike) -> np.ndarray:
        a, b, s = self.negative_slope, self.positive_slope, self.shift
        q1, q2, q12 = (np.asarray(v, dtype=float) for v in (q1, q2, q12))
        linear = a * a * q12 + a * (b - a) * q12 + (b - a) ** 2 * arccos_kernel(q1, q2, q12)
        shift_terms = -s * (b - a) * (np.sqrt(q1 / TWO_PI) + np.sqrt(q2 / TWO_PI)) + s * s
        return linear + shift_terms

    def derivative_second_moment(self, q: ArrayLike) -> np.ndarray:
        a, b = self.negative_slope, self.positive_slope
        return np.full_like(np.asarray(q, dtype=float), a * a + a * (b - a) + 0.5 * (b - a) ** 2)

    def derivative_cross(self, q1: ArrayLike, q2: ArrayLike, q12: ArrayLike) -> np.ndarray:
        r""":math:`E[\phi'(u)\phi'(v)] = a^2 + a(b-a) + (b-a)^2 (\pi-\theta)/2\pi`."""
        a, b = self.negative_slope, self.positive_slope
        theta = correlation_angle(safe_correlation(q1, q2, q12))
        return a * a + a * (b - a) + (b - a) ** 2 * (np.pi - theta) / TWO_PI


_NODES, _WEIGHTS = hermegauss(64)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()  # probabilists' Hermite: expectations under N(0, 1)


@dataclass(frozen=True)
class QuadratureKernel(ActivationKernel):
    """A smooth activation by 2-D Gauss–Hermite quadrature (64 nodes per axis).

    Attributes:
        name: a label.
        fn: :math:`\\phi`, vectorised over NumPy arrays.
        derivative: :math:`\\phi'`.

    Example:
        >>> identity = QuadratureKernel("linear", lambda z: z, np.ones_like)
        >>> round(float(identity.cross(1.0, 2.0, 0.5)), 12)
        0.5
    """

    name: str
    fn: Callable[[np.ndarray], np.ndarray]
    derivative: Callable[[np.ndarray], np.ndarray]

    def _expect(self, f: Callable, q: ArrayLike) -> np.ndarray:
        z = np.sqrt(np.asarray(q, dtype=float))[..., None] * _NODES
        return (f(z) * _WEIGHTS).sum(axis=-1)

    def mean(self, q: ArrayLike) -> np.ndarray:
        return self._expect(self.fn, q)

    def derivative_second_moment(self, q: ArrayLike) -> np.ndarray:
        return self._expect(lambda z: self.derivative(z) ** 2, q)

    def cross(self, q1: ArrayLike, q2: ArrayLike, q12: ArrayLike) -> np.ndarray:
        c = safe_correlation(q1, q2, q12)[..., None, None]
        z1, z2 = _NODES[:, None], _NODES[None, :]
        u = np.sqrt(np.asarray(q1, dtype=float))[..., None, None] * z1
        v = np.sqrt(np.asarray(q2, dtype=float))[..., None, None] * (
            c * z1 + np.sqrt(np.maximum(1 - c * c, 0.0)) * z2
        )
        weights = _WEIGHTS[:, None] * _WEIGHTS[None, :]
        return (self.fn(u) * self.fn(v) * weights).sum(axis=(-2, -1))


@dataclass(frozen=True)
class ErfKernel(QuadratureKernel):
    """erf: closed-form cross moment (Williams 1997); the rest by quadrature."""

    def cross(self, q1: ArrayLike, q2: ArrayLike, q12: ArrayLike) -> np.ndarray:
        q1, q2, q12 = (np.asarray(v, dtype=float) for v in (q1, q2, q12))
        argument = np.clip(2 * q12 / np.sqrt((1 + 2 * q1) * (1 + 2 * q2)), -1.0, 1.0)
        return 2.0 / np.pi * np.arcsin(argument)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * z))


def _gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1 + erf(z / np.sqrt(2)))


def _gelu_derivative(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + erf(z / np.sqrt(2))) + z * np.exp(-0.5 * z * z) / np.sqrt(TWO_PI)


#: The kernels by name, each built from ``(slope, shift)`` (the smooth ones ignore both): the
#: table :data:`relulab.nn.catalogue.ACTIVATIONS` points into by name, so theory never imports
#: torch.
KERNELS: dict[str, Callable[[float, float], ActivationKernel]] = {
    "relu": lambda slope, shift: ReLUFamilyKernel(
        0.0, 1.0, shift, "relu" if not shift else f"relu-{shift:g}"
    ),
    "relu_b": lambda slope, shift: ReLUFamilyKernel(0.0, 1.0, shift, f"relu-{shift:g}"),
    "leaky_relu": lambda slope, shift: ReLUFamilyKernel(
        slope, 1.0, shift, f"leaky_relu({slope:g})"
    ),
    "abs": lambda slope, shift: ReLUFamilyKernel(-1.0, 1.0, shift, "abs"),
    "linear": lambda slope, shift: ReLUFamilyKernel(1.0, 1.0, shift, "linear"),
    "erf": lambda slope, shift: ErfKernel(
        "erf", erf, lambda z: 2 / np.sqrt(np.pi) * np.exp(-z * z)
    ),
    "tanh": lambda slope, shift: QuadratureKernel("tanh", np.tanh, lambda z: 1 - np.tanh(z) ** 2),
    "silu": lambda slope, shift: QuadratureKernel(
        "silu", lambda z: z * _sigmoid(z), lambda z: _sigmoid(z) * (1 + z * (1 - _sigmoid(z)))
    ),
    "gelu": lambda slope, shift: QuadratureKernel("gelu", _gelu, _gelu_derivative),
}

#: The names :func:`get_kernel` knows.
KERNEL_NAMES: tuple[str, ...] = tuple(KERNELS)


def get_kernel(name: str, slope: float = 0.01, shift: float = 0.0) -> ActivationKernel:
    """The :class:`ActivationKernel` of an activation by name (:data:`KERNEL_NAMES`): the ReLU
    family exactly (``relu``, ``relu_b``, ``leaky_relu``, ``abs``, ``linear``), ``erf`` with
    its closed-form cross moment, ``tanh``, ``silu``, ``gelu`` by quadrature. An activation
    module's kernel name is declared in :data:`relulab.nn.catalogue.ACTIVATIONS`.

    Args:
        name: the activation.
        slope: the negative slope of ``leaky_relu``.
        shift: the shift :math:`s` subtracted after the activation (ReLU family).

    Returns:
        The kernel.

    Raises:
        ValueError: ``name`` is not one of :data:`KERNEL_NAMES`.

    Example:
        >>> get_kernel("leaky_relu", slope=0.1).name
        'leaky_relu(0.1)'
    """
    if name not in KERNELS:
        raise ValueError(f"unknown activation {name!r}; choose {', '.join(KERNEL_NAMES)}")
    return KERNELS[name](slope, shift)


def monte_carlo_cross(
    fn: Callable[[np.ndarray], np.ndarray],
    q1: float,
    q2: float,
    q12: float,
    n_samples: int = 1_000_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Sampling estimate of :math:`E[\\phi(u)\\phi(v)]` and its standard error: an independent
    path for tests of the closed forms and the quadrature.

    Args:
        fn: :math:`\\phi`, vectorised over NumPy arrays.
        q1: :math:`E[u^2]`.
        q2: :math:`E[v^2]`.
        q12: :math:`E[uv]`.
        n_samples: the number of draws.
        seed: the NumPy generator's seed.

    Returns:
        ``(estimate, standard error)``.

    Example:
        >>> value, error = monte_carlo_cross(lambda z: np.maximum(z, 0), 1.0, 1.0, 1.0)
        >>> abs(value - 0.5) < 5 * error
        True
    """
    rng = np.random.default_rng(seed)
    c = float(safe_correlation(q1, q2, q12))
    z1, z2 = rng.standard_normal((2, n_samples))
    u = np.sqrt(q1) * z1
    v = np.sqrt(q2) * (c * z1 + np.sqrt(max(1 - c * c, 0.0)) * z2)
    products = fn(u) * fn(v)
    return float(products.mean()), float(products.std() / np.sqrt(n_samples))
