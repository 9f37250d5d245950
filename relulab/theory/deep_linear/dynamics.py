r"""Closed-form mode dynamics (:mod:`relulab.theory.deep_linear`): the strength of a mode over
time, balanced (seed eq. 7) and not, the time it takes to reach a threshold (eq. 13) and the
delay a ReLU gate adds to it (eq. 14)."""

from __future__ import annotations

import numpy as np

__all__ = [
    "ArrayLike",
    "hitting_time",
    "mode_strength",
    "mode_strength_unbalanced",
    "relu_hitting_delay",
]


ArrayLike = np.ndarray | float


def _relaxation(rate: np.ndarray, t: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`E = e^{-2\,\mathrm{rate}\,t/\tau}` and :math:`\varphi = (1-E)/\mathrm{rate}`,
    with :math:`\varphi \to 2t/\tau` as :math:`\mathrm{rate} \to 0` (no cancellation)."""
    x = 2.0 * rate * t / tau
    E = np.exp(-x)
    safe = np.where(rate > 0, rate, 1.0)
    phi = np.where(rate > 0, -np.expm1(-x) / safe, 2.0 * t / tau)
    return E, phi


def mode_strength(t: ArrayLike, s: ArrayLike, d: ArrayLike, a0: ArrayLike, tau: float):
    r"""Balanced mode strength :math:`a_\alpha(t)` of a two-layer linear network (seed eq. 7).

    .. math::
        a(t) = \frac{s/d}{1 - \left(1 - \frac{s}{d\,a_0}\right) e^{-2 s t/\tau}}
             = \frac{a_0}{E + d\,a_0\,(1-E)/s}, \qquad E = e^{-2st/\tau},

    the solution of :math:`\tau\dot a = 2a(s - d a)`, :math:`a(0) = a_0` (seed eq. 21 with
    :math:`d`). The second form is evaluated, so the limits are exact: :math:`s \to 0` gives
    :math:`a_0/(1 + 2 d a_0 t/\tau)`, :math:`d = 0` gives unsaturated growth
    :math:`a_0 e^{2st/\tau}`, whitened inputs are :math:`d = 1`. Assumptions
    (i)–(iii) of :mod:`relulab.theory.deep_linear`; ``t`` in GD steps with :math:`\tau` from
    :func:`learning_time_constant`. Arguments broadcast.

    Args:
        t: time(s) in GD steps, :math:`t \ge 0`.
        s: singular value(s) :math:`s_\alpha \ge 0` of :math:`\Sigma^{yx}`.
        d: eigenvalue(s) :math:`d_\alpha \ge 0` of :math:`\Sigma^x` along :math:`v_\alpha`.
        a0: initial strength(s) :math:`a_0 \ge 0` (a balanced mode cannot be negative; use
            :func:`mode_strength_unbalanced` for a measured projection of any sign).
        tau: time constant :math:`\tau`.

    Returns:
        ``np.ndarray`` of the broadcast shape.

    Example:
        >>> a = mode_strength(np.array([0.0, 1e9]), s=2.0, d=0.5, a0=1e-3, tau=100.0)
        >>> a.round(6).tolist()
        [0.001, 4.0]
    """
    t, s, d, a0 = (np.asarray(v, dtype=np.float64) for v in (t, s, d, a0))
    if np.any(a0 < 0):
        raise ValueError(
            "seed eq. 7 needs a0 ≥ 0 (balanced mode); for a measured projection of any sign "
            "use mode_strength_unbalanced"
        )
    if np.any(s < 0) or np.any(d < 0) or np.any(t < 0):
        raise ValueError("need s ≥ 0, d ≥ 0 and t ≥ 0")
    E, phi = _relaxation(s, t, tau)
    return a0 / (E + d * a0 * phi)


def mode_strength_unbalanced(
    t: ArrayLike, s: ArrayLike, d: ArrayLike, p0: ArrayLike, q0: ArrayLike, tau: float
):
    r"""Mode strength for any initial hidden vectors of the mode, balanced or not.

    With :math:`r^1 = W^1 v_\alpha`, :math:`r^2 = W^{2\top}u_\alpha` (assumption (ii) of
    :mod:`relulab.theory.deep_linear`) the flow is :math:`\tau\dot r^1 = r^2 (s - d a)`,
    :math:`\tau\dot r^2 = r^1 (s - d a)`, :math:`a = r^1\cdot r^2`. The sum
    :math:`r^1 + r^2` grows and the difference shrinks along fixed directions, so with
    :math:`p = \lVert r^1+r^2\rVert^2/4`, :math:`q = \lVert r^1-r^2\rVert^2/4`:
    :math:`a = p - q`, :math:`pq = \kappa^2` is conserved, and

    .. math::
        \tau \dot p = 2(s p - d p^2 + d\kappa^2),\qquad
        p(t) = \frac{p_0 (1 - \rho E) + 2 d \kappa^2 \varphi}{E + 2 d p_0 \varphi - \rho},

    with :math:`\Delta = \sqrt{s^2 + 4 d^2\kappa^2}`, :math:`E = e^{-2\Delta t/\tau}`,
    :math:`\varphi = (1-E)/(s+\Delta)`, :math:`\rho = (s-\Delta)/(s+\Delta)` [derived: the
    Riccati equation between its roots :math:`p_\pm = (s\pm\Delta)/2d`; cf. the
    :math:`\lambda`-balanced solutions of Dominé et al. 2024]. :math:`q_0 = 0` is seed eq. 7
    with :math:`a_0 = p_0`. A projection :math:`a_0 < 0` (anti-aligned start) is learned
    after a delay instead of blowing up as eq. 7 would. Use :func:`mode_components` to get
    :math:`p_0, q_0` from weights. Arguments broadcast.

    Args:
        t: time(s) in GD steps, :math:`t \ge 0`.
        s: singular value(s) :math:`s_\alpha \ge 0`.
        d: :math:`d_\alpha \ge 0`.
        p0: :math:`\lVert r^1+r^2\rVert^2/4 \ge 0` at :math:`t = 0`.
        q0: :math:`\lVert r^1-r^2\rVert^2/4 \ge 0` at :math:`t = 0`.
        tau: time constant :math:`\tau`.

    Returns:
        ``(a, p, q)`` arrays of the broadcast shape, :math:`a = p - q`.

    Example:
        >>> a, p, q = mode_strength_unbalanced([0.0, 1e9], s=1.0, d=1.0, p0=1e-3, q0=2e-3,
        ...                                     tau=10.0)
        >>> a.round(6).tolist()
        [-0.001, 1.0]
    """
    t, s, d, p0, q0 = (np.asarray(v, dtype=np.float64) for v in (t, s, d, p0, q0))
    if np.any(p0 < 0) or np.any(q0 < 0):
        raise ValueError("p0 and q0 are squared norms / 4 and must be ≥ 0")
    if np.any(s < 0) or np.any(d < 0) or np.any(t < 0):
        raise ValueError("need s ≥ 0, d ≥ 0 and t ≥ 0")
    kappa2 = p0 * q0
    delta = np.sqrt(s * s + 4.0 * d * d * kappa2)
    total = s + delta
    positive = total > 0
    safe_total = np.where(positive, total, 1.0)
    x = 2.0 * delta * t / tau
    E = np.exp(-x)
    phi = np.where(positive, -np.expm1(-x) / safe_total, 2.0 * t / tau)
    rho = np.where(positive, (s - delta) / safe_total, -1.0)
    p = (p0 * (1.0 - rho * E) + 2.0 * d * kappa2 * phi) / (E + 2.0 * d * p0 * phi - rho)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(p > 0, kappa2 / np.where(p > 0, p, 1.0), 0.0)
    return p - q, p, q


def hitting_time(rho: ArrayLike, s: ArrayLike, d: ArrayLike, a0: ArrayLike, tau: float):
    r"""Time at which a balanced mode reaches strength :math:`\rho` (seed eq. 13, appendix F.3).

    .. math::
        \hat t = \frac{\tau}{2 s}\,
            \ln\frac{s\rho - d a_0 \rho}{s a_0 - d a_0 \rho},
        \qquad a_0 \le \rho < s/d,

    the inverse of :func:`mode_strength` (``mode_strength(hitting_time(ρ)) == ρ``). For
    :math:`d = 0` it is :math:`(\tau/2s)\ln(\rho/a_0)`. Outside the range (the mode never gets
    there) the result is ``inf``; at :math:`\rho = a_0` it is 0.

    Args:
        rho: threshold(s) :math:`\rho > 0`.
        s, d, a0: as in :func:`mode_strength` (:math:`s > 0`, :math:`a_0 > 0`).
        tau: time constant.

    Example:
        >>> t = hitting_time(0.5, s=1.0, d=1.0, a0=1e-3, tau=10.0)
        >>> round(float(mode_strength(t, s=1.0, d=1.0, a0=1e-3, tau=10.0)), 12)
        0.5
    """
    rho, s, d, a0 = (np.asarray(v, dtype=np.float64) for v in (rho, s, d, a0))
    if np.any(s <= 0) or np.any(a0 <= 0) or np.any(rho <= 0):
        raise ValueError("hitting_time needs s > 0, a0 > 0 and rho > 0")
    reachable = (rho >= a0) & (d * rho < s)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (s * rho - d * a0 * rho) / (s * a0 - d * a0 * rho)
        t = tau / (2.0 * s) * np.log(ratio)
    return np.where(reachable, t, np.inf)


def relu_hitting_delay(
    s: ArrayLike, d: ArrayLike, a0: ArrayLike, tau: float, kept_fraction: ArrayLike
):
    r"""Delay of a ReLU network's mode behind the linear one from gating (seed eq. 14, F.4).

    Seed appendix F.4 treats the ReLU network as the linear one with a fixed gate
    :math:`G = \mathrm{diag}(g)`, :math:`g_j = 1` for the units it keeps, so a mode starts at
    :math:`a_0\bar g` instead of :math:`a_0`, where :math:`\bar g = \frac1N\sum_j g_j`
    (isotropic init: :math:`\sum_j g_j r_j^2 \approx \bar g`). Eq. 13 at both starts gives

    .. math::
        \hat t_{relu} - \hat t_{lin}
            = \frac{\tau}{2s}\ln\frac{s - d a_0\bar g}{\bar g\,(s - d a_0)}
            \;\xrightarrow{a_0\to 0}\; \frac{\tau}{2s}\ln\frac1{\bar g},

    the seed's eq. 14 with the common factor :math:`\rho` cancelled: the delay does **not**
    depend on the threshold :math:`\rho`, and it is positive whenever :math:`\bar g < 1` and
    :math:`a_0 < s/d` (the seed's condition :math:`s > d\rho` is not needed).

    .. note::
        The seed names :math:`\bar g` the "dead neuron rate", but its derivation uses it as
        the fraction of units the gate **keeps** (:math:`a_0 \to a_0\bar g`). This function
        takes the kept fraction, i.e. ``1 - dead_fraction`` for units dead at initialisation.

    Args:
        s, d, a0: as in :func:`mode_strength`.
        tau: time constant.
        kept_fraction: :math:`\bar g \in (0, 1]`.

    Returns:
        The delay in GD steps.

    Example:
        >>> round(float(relu_hitting_delay(1.0, 1.0, 1e-6, tau=10.0, kept_fraction=0.5)), 4)
        3.4657
    """
    s, d, a0, g = (np.asarray(v, dtype=np.float64) for v in (s, d, a0, kept_fraction))
    if np.any(g <= 0) or np.any(g > 1):
        raise ValueError("kept_fraction must lie in (0, 1]")
    if np.any(s <= 0) or np.any(a0 <= 0) or np.any(d * a0 >= s):
        raise ValueError("relu_hitting_delay needs s > 0 and 0 < a0 < s/d")
    return tau / (2.0 * s) * np.log((s - d * a0 * g) / (g * (s - d * a0)))
