r"""Mean-field signal propagation (Poole et al. 2016; Schoenholz et al. 2017), with correlated
weights (seed ``003_…``, Singh & Sreejith, §2 and appendix A).

Layer :math:`l` computes :math:`h^l = W^l \phi(h^{l-1}) + b^l` with rows of :math:`W^l`
independent, each :math:`N(0, \Sigma)`,
:math:`\Sigma = (\sigma_w^2/N)\,(a\,I + (b/N)\,J)` (``a = 1, b = 0``: the usual i.i.d. weights;
``a = 1, b = k < 0``: anti-correlated, ACI), biases :math:`N(0, \sigma_b^2)`. Since
:math:`E[(w\cdot x)(w\cdot y)] = (\sigma_w^2/N)(a\,x\cdot y + (b/N)\sum x \sum y)`, at infinite
width

.. math::
    q^l = \sigma_w^2\left(a\,E[\phi(u)^2] + b\,E[\phi(u)]^2\right) + \sigma_b^2,\qquad
    q_{12}^l = \sigma_w^2\left(a\,E[\phi(u)\phi(v)] + b\,E[\phi(u)]E[\phi(v)]\right) + \sigma_b^2,

expectations over :math:`(u, v)` with the covariance of layer :math:`l-1`. For ReLU this is
:math:`q^l = \sigma_w^2 (a/2 + b/2\pi) q^{l-1} + \sigma_b^2` and
:math:`q_{12}^l = (\sigma_w^2 q^{l-1}/2\pi)(a f(c) + b) + \sigma_b^2`,
:math:`f(c) = \sqrt{1-c^2} + c(\pi - \arccos c)` (:func:`relulab.theory.arccos_j1`) [D],
checked against width-2048 simulations in the tests.

The slope of the correlation map at :math:`c = 1` is :math:`\chi_1 = \sigma_w^2\,a\,E[\phi'(u)^2]`
at the length fixed point :math:`q^*` (the :math:`b` term does not depend on :math:`q_{12}`);
ordered if :math:`\chi_1 < 1`, chaotic if :math:`> 1`. For ReLU :math:`\chi_1 = \sigma_w^2 a/2`
and the length is bounded iff :math:`\sigma_w^2 < 2\pi/(a\pi + b)`: a bounded chaotic window
:math:`2/a < \sigma_w^2 < 2\pi/(a\pi + b)` exists only for :math:`b < 0`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relulab.theory.kernels import ActivationKernel, ArrayLike, ReLUFamilyKernel

__all__ = [
    "PhaseDiagram",
    "chi1",
    "correlation_depth_scale",
    "correlation_fixed_point",
    "correlation_map",
    "correlation_trajectory",
    "covariance_map",
    "length_fixed_point",
    "length_map",
    "phase_diagram",
    "relu_bounded_limit",
    "relu_family_length_fixed_point",
]

UNBOUNDED = 1e12  # a length above this is treated as divergent


def length_map(
    kernel: ActivationKernel,
    q: ArrayLike,
    sigma_w2: ArrayLike,
    sigma_b2: ArrayLike,
    a: float = 1.0,
    b: float = 0.0,
) -> np.ndarray:
    r"""One layer of the length map :math:`q^{l-1} \mapsto q^l` (module docstring):
    :math:`q^l = \sigma_w^2(a\,E[\phi(u)^2] + b\,E[\phi(u)]^2) + \sigma_b^2`.

    Args:
        kernel: the activation's :class:`~relulab.theory.ActivationKernel`.
        q: :math:`q^{l-1}`.
        sigma_w2: :math:`\sigma_w^2` (array-like, broadcast).
        sigma_b2: :math:`\sigma_b^2`.
        a: the diagonal weight of the row covariance (1: i.i.d. weights).
        b: its all-ones weight (``k`` of seed 003; < 0 anti-correlated).

    Returns:
        :math:`q^l`.

    Example:
        >>> from relulab.theory import get_kernel
        >>> float(length_map(get_kernel("relu"), 1.0, 2.0, 0.0))  # Kaiming keeps the length
        1.0
    """
    return sigma_w2 * (a * kernel.second_moment(q) + b * kernel.mean(q) ** 2) + sigma_b2


def covariance_map(
    kernel: ActivationKernel,
    q1: ArrayLike,
    q2: ArrayLike,
    q12: ArrayLike,
    sigma_w2: ArrayLike,
    sigma_b2: ArrayLike,
    a: float = 1.0,
    b: float = 0.0,
) -> np.ndarray:
    r"""One layer of the covariance map :math:`q_{12}^{l-1} \mapsto q_{12}^l` (module
    docstring): :math:`\sigma_w^2(a\,E[\phi(u)\phi(v)] + b\,E[\phi(u)]E[\phi(v)]) + \sigma_b^2`.

    Args:
        kernel: the activation's :class:`~relulab.theory.ActivationKernel`.
        q1: the first input's length.
        q2: the second's.
        q12: their covariance.
        sigma_w2: :math:`\sigma_w^2` (array-like, broadcast).
        sigma_b2: :math:`\sigma_b^2`.
        a: the diagonal weight of the row covariance (1: i.i.d. weights).
        b: its all-ones weight (``k`` of seed 003; < 0 anti-correlated).

    Returns:
        :math:`q_{12}^l`.

    Example:
        >>> from relulab.theory import get_kernel
        >>> round(float(covariance_map(get_kernel("relu"), 1.0, 1.0, 0.0, 2.0, 0.0)), 6)  # 1/π
        0.31831
    """
    cross = kernel.cross(q1, q2, q12)
    return sigma_w2 * (a * cross + b * kernel.mean(q1) * kernel.mean(q2)) + sigma_b2


def length_fixed_point(
    kernel: ActivationKernel,
    sigma_w2: np.ndarray,
    sigma_b2: np.ndarray,
    a: float = 1.0,
    b: float = 0.0,
    q0: float = 1.0,
    iterations: int = 2000,
    tol: float = 1e-12,
) -> np.ndarray:
    """:math:`q^*` by iterating the length map from ``q0`` (vectorised over the grid); ``inf``
    where the length diverges (passes :data:`UNBOUNDED`).

    Args:
        kernel: the activation's :class:`~relulab.theory.ActivationKernel`.
        sigma_w2: :math:`\\sigma_w^2` (array-like, broadcast).
        sigma_b2: :math:`\\sigma_b^2`.
        a: the diagonal weight of the row covariance (1: i.i.d. weights).
        b: its all-ones weight (``k`` of seed 003; < 0 anti-correlated).
        q0: the input length.
        iterations: the most iterations.
        tol: the relative change taken as converged.

    Returns:
        :math:`q^*`, broadcast shape of ``sigma_w2`` and ``sigma_b2``.

    Example:
        >>> from relulab.theory import get_kernel
        >>> round(float(length_fixed_point(get_kernel("tanh"), 1.5, 0.1)), 4) > 0
        True
    """
    sigma_w2, sigma_b2 = np.broadcast_arrays(
        np.asarray(sigma_w2, float), np.asarray(sigma_b2, float)
    )
    q = np.full(sigma_w2.shape, q0, dtype=float)
    for _ in range(iterations):
        with np.errstate(over="ignore", invalid="ignore"):
            updated = length_map(kernel, q, sigma_w2, sigma_b2, a, b)
        updated = np.where(np.isfinite(updated) & (updated < UNBOUNDED), updated, np.inf)
        with np.errstate(invalid="ignore"):
            change_small = np.abs(updated - q) <= tol * np.maximum(1.0, q)
        converged = np.all(change_small | np.isinf(updated))
        q = updated
        if converged:
            break
    return q


def correlation_map(
    kernel: ActivationKernel,
    c: np.ndarray,
    q: np.ndarray,
    sigma_w2: np.ndarray,
    sigma_b2: np.ndarray,
    a: float = 1.0,
    b: float = 0.0,
) -> np.ndarray:
    r""":math:`c^{l-1} \mapsto c^l` for two inputs both of length ``q`` (at a fixed point):
    :func:`covariance_map` at :math:`q_{12} = c q` over :func:`length_map`.

    Args:
        kernel: the activation's :class:`~relulab.theory.ActivationKernel`.
        c: :math:`c^{l-1}`.
        q: the inputs' length (:math:`q^*`).
        sigma_w2: :math:`\sigma_w^2` (array-like, broadcast).
        sigma_b2: :math:`\sigma_b^2`.
        a: the diagonal weight of the row covariance (1: i.i.d. weights).
        b: its all-ones weight (``k`` of seed 003; < 0 anti-correlated).

    Returns:
        :math:`c^l`.

    Example:
        >>> from relulab.theory import get_kernel
        >>> round(float(correlation_map(get_kernel("relu"), 0.0, 1.0, 2.0, 0.0)), 6)  # K(0) = 1/π
        0.31831
    """
    q12 = covariance_map(kernel, q, q, c * q, sigma_w2, sigma_b2, a, b)
    return q12 / length_map(kernel, q, sigma_w2, sigma_b2, a, b)


def correlation_trajectory(
    kernel: ActivationKernel,
    c0: float,
    q0: float,
    depth: int,
    sigma_w2: float,
    sigma_b2: float,
    a: float = 1.0,
    b: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Lengths and correlations of two inputs (lengths ``q0``, correlation ``c0``) per layer.

    Index 0 is the first pre-activation layer, computed from the inputs themselves:
    :math:`q^1 = \\sigma_w^2 (a\\,q_0 + b\\,\\bar x^2) + \\sigma_b^2`, with zero-mean inputs
    (:math:`\\bar x = 0`). Returns arrays of length ``depth``.

    Args:
        kernel: the activation's kernel.
        c0: the inputs' correlation.
        q0: their length.
        depth: the number of layers.
        sigma_w2: :math:`\\sigma_w^2`.
        sigma_b2: :math:`\\sigma_b^2`.
        a: the diagonal weight of the row covariance.
        b: its all-ones weight.

    Returns:
        ``(lengths, correlations)``, each of length ``depth``.

    Example:
        >>> from relulab.theory import get_kernel
        >>> relu = get_kernel("relu")
        >>> lengths, correlations = correlation_trajectory(relu, 0.0, 1.0, 3, 2.0, 0.0)
        >>> lengths.tolist(), round(float(correlations[1]), 6)
        ([2.0, 2.0, 2.0], 0.31831)
    """
    q: ArrayLike = sigma_w2 * a * q0 + sigma_b2
    q12: ArrayLike = sigma_w2 * a * c0 * q0 + sigma_b2
    lengths, correlations = [q], [q12 / q]
    for _ in range(depth - 1):
        q, q12 = (
            length_map(kernel, q, sigma_w2, sigma_b2, a, b),
            covariance_map(kernel, q, q, q12, sigma_w2, sigma_b2, a, b),
        )
        lengths.append(float(q))
        correlations.append(float(q12 / q))
    return np.array(lengths, dtype=float), np.array(correlations, dtype=float)


def correlation_fixed_point(
    kernel: ActivationKernel,
    q_star: np.ndarray,
    sigma_w2: np.ndarray,
    sigma_b2: np.ndarray,
    a: float = 1.0,
    b: float = 0.0,
    c0: float = 0.0,
    iterations: int = 5000,
    tol: float = 1e-13,
) -> np.ndarray:
    """:math:`c^*` reached from correlation ``c0`` by iterating the correlation map at :math:`q^*`
    (vectorised; NaN where the length is unbounded). In the ordered phase of ReLU this is 1, but
    the approach is slow near :math:`\\chi_1 = 1`, so compare with a tolerance there.

    Args:
        kernel: the activation's kernel.
        q_star: :math:`q^*` (from :func:`length_fixed_point`).
        sigma_w2: :math:`\\sigma_w^2`.
        sigma_b2: :math:`\\sigma_b^2`.
        a: the diagonal weight of the row covariance.
        b: its all-ones weight.
        c0: the starting correlation.
        iterations: the most iterations.
        tol: the absolute change taken as converged.

    Returns:
        :math:`c^*`.

    Example:
        >>> from relulab.theory import get_kernel
        >>> relu = get_kernel("relu")
        >>> round(float(correlation_fixed_point(relu, 1.0, 1.5, 0.5)), 6)  # ordered: c* = 1
        1.0
    """
    q_star, sigma_w2, sigma_b2 = np.broadcast_arrays(
        np.asarray(q_star, float), np.asarray(sigma_w2, float), np.asarray(sigma_b2, float)
    )
    bounded = np.isfinite(q_star) & (q_star > 0)
    q = np.where(bounded, q_star, 1.0)
    c = np.full(q.shape, float(c0))
    for _ in range(iterations):
        updated = np.clip(correlation_map(kernel, c, q, sigma_w2, sigma_b2, a, b), -1.0, 1.0)
        done = np.all(np.abs(updated - c) <= tol)
        c = updated
        if done:
            break
    return np.where(bounded, c, np.nan)


def chi1(
    kernel: ActivationKernel, q_star: np.ndarray, sigma_w2: np.ndarray, a: float = 1.0
) -> np.ndarray:
    r""":math:`\chi_1 = \sigma_w^2\,a\,E[\phi'(u)^2]`, :math:`u \sim N(0, q^*)`: the slope of the
    correlation map at :math:`c = 1` (Schoenholz et al. 2017); ordered below 1, chaotic above.

    Args:
        kernel: the activation's kernel.
        q_star: :math:`q^*` (non-finite entries are evaluated at 1).
        sigma_w2: :math:`\sigma_w^2`.
        a: the diagonal weight of the row covariance.

    Returns:
        :math:`\chi_1`.

    Example:
        >>> from relulab.theory import get_kernel
        >>> float(chi1(get_kernel("relu"), 1.0, 2.0))  # ReLU: σ_w² a / 2
        1.0
    """
    finite_q = np.where(np.isfinite(q_star), q_star, 1.0)
    return sigma_w2 * a * kernel.derivative_second_moment(finite_q)


def correlation_depth_scale(chi: np.ndarray) -> np.ndarray:
    r"""The correlation depth scale :math:`\xi_c = -1/\ln \chi` (Schoenholz et al. 2017);
    infinite at :math:`\chi = 1`.

    Args:
        chi: :math:`\chi_1` (array-like).

    Returns:
        :math:`\xi_c`.

    Example:
        >>> round(float(correlation_depth_scale(np.exp(-0.1))), 9)
        10.0
    """
    with np.errstate(divide="ignore"):
        return -1.0 / np.log(np.asarray(chi, dtype=float))


def relu_bounded_limit(a: float = 1.0, b: float = 0.0) -> float:
    r"""Largest :math:`\sigma_w^2` with a bounded ReLU length: :math:`2\pi/(a\pi + b)` (inf if
    the denominator is ≤ 0); seed ``003_…`` §2's condition for a bounded chaotic window
    :math:`2/a < \sigma_w^2 < 2\pi/(a\pi + b)`, open only for :math:`b < 0`.

    Args:
        a: the diagonal weight of the row covariance.
        b: its all-ones weight.

    Returns:
        The limit.

    Example:
        >>> relu_bounded_limit(1.0, 0.0)
        2.0
    """
    denominator = a * np.pi + b
    return float("inf") if denominator <= 0 else 2 * np.pi / denominator


@dataclass
class PhaseDiagram:
    r"""Grids of :math:`q^*`, :math:`\chi_1` and the phases over (σ_w², σ_b²).

    Example:
        >>> from relulab.theory import get_kernel
        >>> diagram = phase_diagram(get_kernel("relu"), [1.0, 2.5], [0.5], b=-0.9)
        >>> diagram.regions.tolist()  # ordered, then bounded chaotic
        [[0, 1]]
    """

    sigma_w2: np.ndarray
    sigma_b2: np.ndarray
    q_star: np.ndarray
    chi1: np.ndarray

    @property
    def bounded(self) -> np.ndarray:
        """Where the length stays finite."""
        return np.isfinite(self.q_star)

    @property
    def chaotic(self) -> np.ndarray:
        """Where :math:`\\chi_1 > 1`."""
        return self.chi1 > 1.0

    @property
    def regions(self) -> np.ndarray:
        """0 ordered (bounded, χ1 < 1), 1 bounded chaotic, 2 unbounded length."""
        return np.where(~self.bounded, 2, np.where(self.chaotic, 1, 0))

    @property
    def bounded_chaotic_fraction(self) -> float:
        """The share of the grid that is bounded and chaotic."""
        return float(np.mean(self.bounded & self.chaotic))


def relu_family_length_fixed_point(
    kernel: ReLUFamilyKernel,
    sigma_w2: np.ndarray,
    sigma_b2: np.ndarray,
    a: float = 1.0,
    b: float = 0.0,
    q0: float = 1.0,
) -> np.ndarray:
    r"""Closed-form :math:`q^*` for the ReLU family with shift :math:`s`, from inputs of length
    ``q0`` [D].

    With :math:`m_2 = E[\phi_0^2]/q`, :math:`m_1 = E[\phi_0]/\sqrt q` of the unshifted
    activation, :math:`E[\phi^2] = m_2 q - 2 s m_1 \sqrt q + s^2` and
    :math:`E[\phi]^2 = (m_1\sqrt q - s)^2`, so the length map is
    :math:`q' = A q - B\sqrt q + C` with :math:`A = \sigma_w^2(a m_2 + b m_1^2)`,
    :math:`B = 2 s m_1 \sigma_w^2 (a + b)`, :math:`C = \sigma_w^2 (a + b) s^2 + \sigma_b^2`, and
    :math:`q' - q = h(\sqrt q)`, :math:`h(x) = (A-1)x^2 - Bx + C`.

    * :math:`A < 1`: one fixed point, attracting from any start: the positive root of h.
    * :math:`A > 1`, :math:`B^2 \ge 4(A-1)C`, :math:`B > 0` (a positive shift): roots
      :math:`x_- \le x_+`; :math:`x_-` attracts every start below :math:`x_+^2`, above it the
      length diverges — boundedness then depends on ``q0``.
    * otherwise the length diverges (``inf``).

    Args:
        kernel: a :class:`~relulab.theory.ReLUFamilyKernel`.
        sigma_w2: :math:`\sigma_w^2`.
        sigma_b2: :math:`\sigma_b^2`.
        a: the diagonal weight of the row covariance.
        b: its all-ones weight.
        q0: the input length.

    Returns:
        :math:`q^*` (``inf`` where unbounded).

    Example:
        >>> from relulab.theory import get_kernel
        >>> relu = get_kernel("relu")
        >>> float(relu_family_length_fixed_point(relu, 1.0, 0.5))  # q = q/2 + 1/2
        1.0
    """
    unshifted = ReLUFamilyKernel(kernel.negative_slope, kernel.positive_slope, 0.0)
    m2 = float(unshifted.second_moment(1.0))
    m1 = float(unshifted.mean(1.0))
    s = kernel.shift
    curvature = sigma_w2 * (a * m2 + b * m1 * m1) - 1.0  # A − 1
    linear = 2 * s * m1 * sigma_w2 * (a + b)  # B
    constant = sigma_w2 * (a + b) * s * s + sigma_b2  # C
    discriminant = linear * linear - 4 * curvature * constant
    with np.errstate(divide="ignore", invalid="ignore"):
        root_sqrt = np.sqrt(np.maximum(discriminant, 0.0))
        contracting = (linear - root_sqrt) / (2 * curvature)  # x_- (A > 1) or the root (A < 1)
        expanding = (linear + root_sqrt) / (2 * curvature)  # x_+ (A > 1)
        stable_root = np.where(curvature < 0, (linear - root_sqrt) / (2 * curvature), contracting)
    two_roots = (curvature > 0) & (discriminant >= 0) & (linear > 0)
    bounded = (curvature < 0) | (two_roots & (q0 < expanding**2))
    return np.where(bounded, np.maximum(stable_root, 0.0) ** 2, np.inf)


def phase_diagram(
    kernel: ActivationKernel,
    sigma_w2: np.ndarray,
    sigma_b2: np.ndarray,
    a: float = 1.0,
    b: float = 0.0,
    q0: float = 1.0,
) -> PhaseDiagram:
    """Phases on the grid ``sigma_w2 × sigma_b2`` (1-D axes; result shape ``(len(b2), len(w2))``)
    for signals starting at length ``q0``.

    The ReLU family (any slopes and shift) uses :func:`relu_family_length_fixed_point`; other
    activations iterate the length map.

    Args:
        kernel: the activation's kernel.
        sigma_w2: the σ_w² axis.
        sigma_b2: the σ_b² axis.
        a: the diagonal weight of the row covariance.
        b: its all-ones weight (seed 003's ``k``).
        q0: the input length.

    Returns:
        :class:`PhaseDiagram`.

    Example:
        >>> from relulab.theory import get_kernel
        >>> diagram = phase_diagram(get_kernel("relu"), np.linspace(0.5, 4, 8), [0.1])
        >>> diagram.bounded_chaotic_fraction  # i.i.d. ReLU weights: no bounded chaotic phase
        0.0
    """
    w2, b2 = np.meshgrid(np.asarray(sigma_w2, float), np.asarray(sigma_b2, float))
    if isinstance(kernel, ReLUFamilyKernel):
        q_star = relu_family_length_fixed_point(kernel, w2, b2, a, b, q0)
    else:
        q_star = length_fixed_point(kernel, w2, b2, a, b, q0)
    return PhaseDiagram(w2, b2, q_star, chi1(kernel, q_star, w2, a))
