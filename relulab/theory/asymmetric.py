r"""Mean-field theory of ReLU networks initialised with RAI and RAAI (seed ``003_…`` §3,
appendices C–E; RAI from Lu et al. 2020).

**The initialisations.** Every row of weights into a unit — the bias included as the weight of a
fictitious node of constant activation 1 (appendix C) — is Gaussian: i.i.d.
:math:`N(0, \sigma_w^2/N)` for RAI (:math:`\sigma_w^2 = 0.6007^2 \approx 0.36`), anti-correlated
with covariance :math:`(\sigma_w^2/N)(aI + (b/N)J)` for RAAI. Then one entry per row, chosen
uniformly, is replaced by :math:`\xi \sim \mathrm{Beta}(\alpha, 1)` (:math:`\alpha = 2`).
:class:`RowScheme` describes any of these, and He/ACI (no replacement) too.

**Exact infinite-width law** [D]. For one input, a unit of layer :math:`l` receives

.. math::
    h = \xi\,x_p + g,\qquad g \sim N\!\left(0,\ s^2\right),\quad
    s^2 = \sigma_w^2\,(a\,Q + b\,M^2) + \sigma_b^2,

where :math:`x_p` is the activation of a uniformly chosen unit of layer :math:`l-1`,
:math:`Q = \overline{x^2}` and :math:`M = \bar x` are that layer's mean squared and mean
activation, and the bias node's share is :math:`O(1/N)` and dropped (so RAI/RAAI have no
effective :math:`\sigma_b^2`). The Gaussian part sums the other :math:`N-1` entries, whose joint
law is the restriction of the row covariance, and is independent of :math:`(\xi, x_p)`. So the
law of :math:`h` over units is the law of :math:`\xi X + g` with :math:`X` drawn from the previous
layer's activations: the seed's eq. 8 without approximation. :func:`layer_laws` propagates this
one-dimensional law exactly (quadrature in :math:`\xi`, a grid for the law). The map is
homogeneous of degree one in :math:`Q` when :math:`\sigma_b^2 = 0`: the length grows or decays
geometrically and only the shape of the law has a fixed point.

**The seed's approximations** (appendices D and E). The law of :math:`x_p` is replaced by one
value: its RMS :math:`\sqrt Q` (``"rms"``) or its mean :math:`M` (``"mean"``). In units of
:math:`\sqrt Q`, :math:`u = h/\sqrt Q = m\,\xi + \tilde\sigma z` with :math:`m = 1` (RMS) or
:math:`m = \sqrt r` (mean), :math:`r = M^2/Q`, and
:math:`\tilde\sigma^2 = \sigma_w^2(a + b\,r)` (appendix E.1's re-defined variance; :math:`r` is
not given by the seed and is taken self-consistently from the approximated law,
:math:`r = E[u^+]^2/E[(u^+)^2]`, [D]). Then, with :math:`u^+ = \max(u, 0)`:

* length map :math:`Q' = Q\,E[(u^+)^2]` (the seed's linear-in-:math:`Q` assumption), whose slope
  (eqs. 10, 12) is
  :math:`\chi_Q = \tilde\sigma^2 P(u > 0) + m\,E[\xi u^+] = E[(u^+)^2]` (Stein's lemma);
  bounded iff :math:`\chi_Q < 1`;
* correlation map of two inputs with activation correlation :math:`c = Q_{12}/Q` (both special
  activations :math:`\approx \sqrt Q`, appendix D.2):
  :math:`c' = E[u_1^+ u_2^+]/E[(u^+)^2]`, :math:`u_i = m\xi + \tilde\sigma z_i`,
  :math:`\mathrm{corr}(z_1, z_2) = \rho = (a c + b r)/(a + b r)`; :math:`c = 1` is a fixed point;
* its slope at :math:`c = 1` with the length at its fixed point (eq. 11, the first term of
  eq. 10): :math:`\chi_c = \sigma_w^2\,a\,P(u > 0)`; without that assumption the slope of the
  scale-free map is :math:`\chi_c / E[(u^+)^2]` [D].

For RAI (:math:`b = 0`) the scale-free slope is
:math:`\sigma_w^2 P/(\sigma_w^2 P + E[\xi u^+]) < 1`: RAI is always ordered, as the seed expects
(D.2) [D]. Anti-correlation (:math:`b < 0`) lowers :math:`\tilde\sigma^2` below
:math:`\sigma_w^2 a` and opens a chaotic window (RAAI, E.2).

Table 2 of the seed gives, for the RMS approximation, 0.57, 1.41, 1.75 and for the mean one
0.85, 1.46, 1.89 (headers lost). :func:`approximate_boundaries` reproduces 0.57 (RAI length,
D.1) and 1.41 (RAI chaos, D.2) with the RMS approximation; the other four numbers are not
reproduced by the readings implemented here (see the tests).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, roots_jacobi

from relulab.theory.correlated import covariance_coefficients
from relulab.theory.kernels import ArrayLike

__all__ = [
    "APPROXIMATIONS",
    "ApproximateBoundaries",
    "ApproximateSlopes",
    "LayerLaws",
    "RAI_SIGMA_W2",
    "RowScheme",
    "approximate_boundaries",
    "approximate_correlation_map",
    "approximate_slopes",
    "beta_quadrature",
    "layer_laws",
    "shifted_relu_cross_moment",
    "shifted_relu_moments",
    "table1_schemes",
]

APPROXIMATIONS = ("rms", "mean")
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


@dataclass(frozen=True)
class RowScheme:
    r"""One layer's initialisation as the mean field sees it (module docstring).

    ``sigma_w2, a, b``: the Gaussian row covariance :math:`(\sigma_w^2/N)(aI + (b/N)J)`;
    ``sigma_b2``: a separate Gaussian bias (He: 0, ACI: the seed's :math:`\sigma_b^2`; RAI/RAAI
    carry the bias inside the row, so 0); ``asymmetric``: one entry per row replaced by
    :math:`\mathrm{Beta}(\alpha, 1)` (RAI, RAAI).

    Example:
        >>> rai = RowScheme(sigma_w2=0.6007**2, asymmetric=True)
        >>> raai = RowScheme(sigma_w2=0.92, b=-100 / 101, asymmetric=True)
    """

    sigma_w2: float
    a: float = 1.0
    b: float = 0.0
    sigma_b2: float = 0.0
    asymmetric: bool = False
    alpha: float = 2.0

    def gaussian_variance(self, second_moment: float, mean: float) -> float:
        """:math:`s^2 = \\sigma_w^2(aQ + bM^2) + \\sigma_b^2` of the Gaussian part."""
        return self.sigma_w2 * (self.a * second_moment + self.b * mean * mean) + self.sigma_b2


RAI_SIGMA_W2 = 0.6007**2  # Lu et al. 2020


def table1_schemes(
    k: float = 100.0, parameterisation: str = "precision", aci_sigma_b2: float = 0.0
) -> dict[str, RowScheme]:
    r"""The four schemes of the seed's Table 1 read as (σ_w², k, chaotic phase, dead-node
    probability): He (2.0, 0), ACI (2.0, k), RAI (0.36, 0), RAAI (0.92, k) [I].

    ``k = 100`` under the ``precision`` reading (:mod:`relulab.theory.correlated`) gives
    :math:`b = -100/101`. ACI's bias variance is not in the table: ``aci_sigma_b2`` (default 0,
    the framework default of a zero bias [I]); He's is 0, RAI/RAAI carry the bias in the row.

    Example:
        >>> round(table1_schemes()["raai"].b, 4)
        -0.9901
    """
    a, b = covariance_coefficients(k, parameterisation)
    return {
        "he": RowScheme(2.0),
        "aci": RowScheme(2.0, a=a, b=b, sigma_b2=aci_sigma_b2),
        "rai": RowScheme(RAI_SIGMA_W2, asymmetric=True),
        "raai": RowScheme(0.92, a=a, b=b, asymmetric=True),
    }


def beta_quadrature(alpha: float = 2.0, n: int = 48) -> tuple[np.ndarray, np.ndarray]:
    r"""Nodes and weights of Gauss–Jacobi quadrature for :math:`\xi \sim \mathrm{Beta}(\alpha,1)`
    (density :math:`\alpha\xi^{\alpha-1}` on [0, 1]): exact for polynomials of degree
    :math:`< 2n`.

    Example:
        >>> nodes, weights = beta_quadrature(2.0)
        >>> round(float(weights @ nodes), 12), round(float(weights @ nodes**2), 12)
        (0.666666666667, 0.5)
    """
    x, w = roots_jacobi(n, 0.0, alpha - 1.0)  # weight (1 + x)^(α−1) on [−1, 1]
    return (1.0 + x) / 2.0, w * alpha * 2.0 ** (-alpha)


def shifted_relu_moments(mu: ArrayLike, s: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r""":math:`P(u > 0)`, :math:`E[u^+]`, :math:`E[(u^+)^2]` for :math:`u \sim N(\mu, s^2)`.

    .. math::
        P = \Phi(t),\quad E[u^+] = \mu\Phi(t) + s\varphi(t),\quad
        E[(u^+)^2] = (\mu^2 + s^2)\Phi(t) + \mu s\,\varphi(t),\qquad t = \mu/s,

    with the limits at :math:`s = 0` [D].

    Example:
        >>> [round(float(v), 6) for v in shifted_relu_moments(0.0, 1.0)]
        [0.5, 0.398942, 0.5]
    """
    mu, s = np.broadcast_arrays(np.asarray(mu, float), np.asarray(s, float))
    positive_s = s > 0
    safe_s = np.where(positive_s, s, 1.0)
    t = np.where(positive_s, mu / safe_s, 0.0)
    cdf = np.where(positive_s, ndtr(t), (mu > 0).astype(float))
    pdf = np.where(positive_s, np.exp(-0.5 * t * t) * _INV_SQRT_2PI, 0.0)
    first = mu * cdf + s * pdf
    second = (mu * mu + s * s) * cdf + mu * s * pdf
    return cdf, first, second


_LEGENDRE_X, _LEGENDRE_W = np.polynomial.legendre.leggauss(96)


def shifted_relu_cross_moment(mu: float, s: float, rho: float) -> float:
    r""":math:`E[u_1^+ u_2^+]`, :math:`u_i = \mu + s z_i`, :math:`\mathrm{corr}(z_1, z_2) = \rho`.

    Conditioning on :math:`z_1`, :math:`u_2 \sim N(\mu + s\rho z_1, s^2(1-\rho^2))`, so the inner
    expectation is :func:`shifted_relu_moments`' closed form; the outer integral over
    :math:`z_1 > -\mu/s` is Gauss–Legendre on :math:`[-\mu/s, \max(-\mu/s, 0) + 12]` [D].

    Example:
        >>> round(shifted_relu_cross_moment(0.0, 1.0, 1.0), 8)
        0.5
    """
    if s <= 0:
        return max(mu, 0.0) ** 2
    lower = -mu / s
    upper = max(lower, 0.0) + 12.0
    z = 0.5 * (upper - lower) * _LEGENDRE_X + 0.5 * (upper + lower)
    weights = 0.5 * (upper - lower) * _LEGENDRE_W * np.exp(-0.5 * z * z) * _INV_SQRT_2PI
    _, inner, _ = shifted_relu_moments(mu + s * rho * z, s * np.sqrt(max(1.0 - rho * rho, 0.0)))
    return float(np.sum(weights * (mu + s * z) * inner))


def _reduced_moments(m: float, s: float, alpha: float) -> tuple[float, float, float, float]:
    """:math:`P(u>0)`, :math:`E[u^+]`, :math:`E[(u^+)^2]`, :math:`E[\\xi u^+]` for
    :math:`u = m\\xi + s z`, averaged over the Beta law of ξ."""
    nodes, weights = beta_quadrature(alpha)
    p, first, second = shifted_relu_moments(m * nodes, s)
    return (
        float(weights @ p),
        float(weights @ first),
        float(weights @ second),
        float(weights @ (nodes * first)),
    )


def _reduced_parameters(
    scheme: RowScheme, approximation: str, iterations: int = 200
) -> tuple[float, float, float]:
    """Self-consistent ``(m, s̃, r)`` of the approximated law
    :math:`u = m\\xi + \\tilde\\sigma z`."""
    if approximation not in APPROXIMATIONS:
        raise ValueError(f"approximation must be one of {APPROXIMATIONS}, got {approximation!r}")
    r = 1.0 / np.pi  # start from the ratio of a centred ReLU: E[φ]²/E[φ²] = 1/π
    for _ in range(iterations):
        m = 1.0 if approximation == "rms" else np.sqrt(r)
        s = np.sqrt(max(scheme.sigma_w2 * (scheme.a + scheme.b * r), 0.0))
        _, first, second, _ = _reduced_moments(m, s, scheme.alpha)
        updated = first * first / second
        if abs(updated - r) < 1e-14:
            r = updated
            break
        r = updated
    m = 1.0 if approximation == "rms" else np.sqrt(r)
    return m, float(np.sqrt(max(scheme.sigma_w2 * (scheme.a + scheme.b * r), 0.0))), r


@dataclass(frozen=True)
class ApproximateSlopes:
    """Slopes of the approximated maps (module docstring): ``length`` (:math:`\\chi_Q`, eqs.
    10/12), ``chaos`` (:math:`\\chi_c`, eq. 11, length at its fixed point), ``chaos_scale_free``
    (:math:`\\chi_c/\\chi_Q`), and the reduced law's ``m``, ``sigma_tilde``, ``r``."""

    length: float
    chaos: float
    chaos_scale_free: float
    m: float
    sigma_tilde: float
    r: float


def approximate_slopes(scheme: RowScheme, approximation: str = "rms") -> ApproximateSlopes:
    r""":math:`\chi_Q` and :math:`\chi_c` of the seed's approximated RAI/RAAI maps.

    Source: seed ``003_…`` appendices D.1 (eq. 10), D.2 (eq. 11), E (eq. 12); the
    self-consistent :math:`r` is [D] (module docstring).

    Args:
        scheme: an asymmetric :class:`RowScheme` (RAI: ``b = 0``; RAAI: ``b < 0``).
        approximation: ``"rms"`` (:math:`x_p \approx \sqrt Q`) or ``"mean"``
            (:math:`x_p \approx M`).

    Returns:
        :class:`ApproximateSlopes`.

    Example:
        >>> slopes = approximate_slopes(RowScheme(1.41, asymmetric=True))
        >>> round(slopes.chaos, 2)
        1.0
    """
    m, s, r = _reduced_parameters(scheme, approximation)
    p, _, second, xi_first = _reduced_moments(m, s, scheme.alpha)
    length = s * s * p + m * xi_first
    chaos = scheme.sigma_w2 * scheme.a * p
    return ApproximateSlopes(length, chaos, chaos / second, m, s, r)


def approximate_correlation_map(c: float, scheme: RowScheme, approximation: str = "rms") -> float:
    r"""One layer of the approximated correlation map :math:`c \mapsto c'` (module docstring;
    seed appendix C.2/D.2), :math:`c = Q_{12}/Q` the correlation of two inputs' activations.
    :math:`\rho = (ac + br)/(a + br)` is clipped to [−1, 1]: for :math:`b < 0` it reaches −1 at
    :math:`c = 2r - 1` (with :math:`a = -b`), below which no pair of activation laws exists.

    Example:
        >>> round(approximate_correlation_map(1.0, RowScheme(0.36, asymmetric=True)), 10)
        1.0
    """
    m, s, r = _reduced_parameters(scheme, approximation)
    nodes, weights = beta_quadrature(scheme.alpha, 24)
    rho = (scheme.a * c + scheme.b * r) / (scheme.a + scheme.b * r)
    rho = float(np.clip(rho, -1.0, 1.0))
    cross = sum(
        w * shifted_relu_cross_moment(m * xi, s, rho) for xi, w in zip(nodes, weights, strict=True)
    )
    _, _, second = shifted_relu_moments(m * nodes, s)
    return float(cross / (weights @ second))


@dataclass(frozen=True)
class ApproximateBoundaries:
    """σ_w² where the approximated length slope and chaos slope cross 1 (``nan`` if none in
    the bracket)."""

    length_limit: float
    chaos_onset: float
    chaos_onset_scale_free: float


def approximate_boundaries(
    scheme: RowScheme, approximation: str = "rms", bracket: tuple[float, float] = (0.05, 20.0)
) -> ApproximateBoundaries:
    r"""Solve :math:`\chi_Q = 1` and :math:`\chi_c = 1` for :math:`\sigma_w^2` (other fields of
    ``scheme`` kept). Seed Table 2 (RMS): RAI 0.57 (length, D.1), 1.41 (chaos, D.2).

    Example:
        >>> bounds = approximate_boundaries(RowScheme(1.0, asymmetric=True))
        >>> round(bounds.length_limit, 2), round(bounds.chaos_onset, 2)
        (0.57, 1.41)
    """

    def crossing(field: str) -> float:
        def excess(sigma_w2: float) -> float:
            slopes = approximate_slopes(replace(scheme, sigma_w2=sigma_w2), approximation)
            return getattr(slopes, field) - 1.0

        low, high = bracket
        if np.sign(excess(low)) == np.sign(excess(high)):
            return float("nan")
        return float(brentq(excess, low, high, xtol=1e-10))

    return ApproximateBoundaries(
        crossing("length"), crossing("chaos"), crossing("chaos_scale_free")
    )


@dataclass
class LayerLaws:
    """Per layer (index 0 = the first hidden layer) of the exact infinite-width law:
    ``inactive`` :math:`P(h \\le 0)`, ``pre_second_moment`` :math:`E[h^2]`,
    ``second_moment`` :math:`Q = E[\\phi(h)^2]`, ``mean`` :math:`M = E[\\phi(h)]`."""

    inactive: np.ndarray
    pre_second_moment: np.ndarray
    second_moment: np.ndarray
    mean: np.ndarray

    @property
    def growth(self) -> np.ndarray:
        """:math:`Q_l/Q_{l-1}` from the second layer on (length-map factor)."""
        return self.second_moment[1:] / self.second_moment[:-1]


def _input_law(q0: float, nodes: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Input coordinates :math:`N(0, q_0)` as Gauss–Hermite nodes (exact Gaussian moments)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    return np.sqrt(q0) * x, w / w.sum()


def layer_laws(
    scheme: RowScheme,
    depth: int,
    q0: float = 1.0,
    grid: int = 400,
    xi_nodes: int = 48,
) -> LayerLaws:
    r"""Propagate the exact infinite-width law of a unit's pre-activation (module docstring)
    through ``depth`` layers for one input whose coordinates are :math:`N(0, q_0)`.

    Each layer's activations are kept as an atom at 0 plus ``grid`` midpoints on
    :math:`(0, 10\sqrt{E[h^2]}]`; the moments of the next layer are closed forms
    (:func:`shifted_relu_moments`) over that discrete law and the Beta quadrature.

    Source: seed ``003_…`` appendix C.1, eq. 8 (exact form [D]). For Gaussian rows
    (``asymmetric=False``) it reduces to the length map of :mod:`relulab.theory.meanfield`
    with :math:`P(h \le 0) = 1/2`.

    Example:
        >>> laws = layer_laws(RowScheme(0.6007**2, asymmetric=True), depth=3)
        >>> laws.inactive.round(3).tolist()  # doctest: +SKIP
        [0.5, 0.347, 0.318]
    """
    values, weights = _input_law(q0)
    xi, xi_weights = (
        beta_quadrature(scheme.alpha, xi_nodes) if scheme.asymmetric else (np.zeros(1), np.ones(1))
    )
    records = []
    for _ in range(depth):
        s = np.sqrt(scheme.gaussian_variance(weights @ values**2, weights @ values))
        mu = (values[:, None] * xi[None, :]).ravel()
        mass = (weights[:, None] * xi_weights[None, :]).ravel()
        p, first, second = shifted_relu_moments(mu, s)
        pre_second = float(mass @ (mu * mu)) + s * s
        records.append(
            (1.0 - float(mass @ p), pre_second, float(mass @ second), float(mass @ first))
        )
        values, weights = _positive_part_law(mu, mass, s, records[-1][0], pre_second, grid)
    inactive, pre, second_moment, mean = (np.array(column) for column in zip(*records, strict=True))
    return LayerLaws(inactive, pre, second_moment, mean)


def _positive_part_law(
    mu: np.ndarray, mass: np.ndarray, s: float, inactive: float, pre_second: float, grid: int
) -> tuple[np.ndarray, np.ndarray]:
    """The law of :math:`\\phi(h)` for :math:`h \\sim \\sum_k m_k N(\\mu_k, s^2)`: an atom at 0
    and the density of the positive part at ``grid`` midpoints (mass renormalised)."""
    step = 10.0 * np.sqrt(pre_second) / grid
    y = (np.arange(grid) + 0.5) * step
    density = np.zeros(grid)
    for start in range(0, mu.size, 4096):  # bounded memory: (grid, 4096) at a time
        block = slice(start, start + 4096)
        z = (y[:, None] - mu[None, block]) / s
        density += np.exp(-0.5 * z * z) @ mass[block]
    weights = density * step * _INV_SQRT_2PI / s
    weights *= (1.0 - inactive) / weights.sum()
    return np.concatenate([[0.0], y]), np.concatenate([[inactive], weights])
