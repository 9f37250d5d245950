r"""Exact learning dynamics of two-layer linear networks (seed ``004_…`` §5 and appendix B).

Seed 004 (*Bias-mediated early linearization drives simplicity bias in ReLU networks*) compares
ReLU networks with the closed-form dynamics of deep linear networks (Saxe, McClelland & Ganguli
2014; 2019). This module is that theory, in NumPy float64.

**Setting** (seed §5.1). Inputs :math:`X \in \mathbb{R}^{n_{in} \times P}` and targets
:math:`Y \in \mathbb{R}^{n_{out} \times P}` hold the samples as *columns* (seed eq. 3); for the
sample-major arrays of :mod:`relulab.tasks` pass ``X = inputs.T``. The hidden bias is an input
constant :math:`c` appended to every sample, :math:`\tilde x_i = [c; x_i]`, so a bias-free
first layer :math:`\tilde W^1 = [b\ W^1]` carries it. The loss is the *sum*

.. math::
    \mathcal{L} = \tfrac12 \sum_{i=1}^{P} \lVert y_i - W^2 W^1 x_i \rVert^2,

trained by full-batch gradient descent with learning rate :math:`\epsilon`; one GD step is one
unit of time :math:`t`. The data enter through

.. math::
    \Sigma^{yx} = \tfrac1P Y X^\top = U S V^\top, \qquad \Sigma^{x} = \tfrac1P X X^\top.

**Time constant** [derived, checked by simulation in the tests]. The gradient of the sum loss is
:math:`-P\,W^{2\top}(\Sigma^{yx} - W^2 W^1 \Sigma^x)`, so in the small-step limit

.. math::
    \tau \dot W^1 = W^{2\top}(\Sigma^{yx} - W^2W^1\Sigma^x),\quad
    \tau \dot W^2 = (\Sigma^{yx} - W^2W^1\Sigma^x) W^{1\top},\qquad \tau = \frac{1}{P\epsilon}

(seed eq. 18; the seed's eq. 22 writes :math:`N` for :math:`P`). With the mean loss instead,
:math:`\tau = 1/\epsilon` — a factor :math:`P` slower; the tests show the sum-loss
:math:`\tau` is the one a simulation follows.

**Assumptions behind the mode dynamics.** (i) *Aligned inputs*: the right singular vectors
:math:`V` of :math:`\Sigma^{yx}` also diagonalise :math:`\Sigma^x = V D V^\top` (seed eq. 4).
Whitened inputs are the special case :math:`D = I`; one-hot items with or without the constant
satisfy it (seed Prop. 1, :func:`bias_mode`); XOR-like inputs generally do not
(:func:`aligned_modes` measures the violation). (ii) *Aligned weights*: each mode
:math:`\alpha` owns hidden vectors :math:`r^1_\alpha = W^1 v_\alpha`,
:math:`r^2_\alpha = W^{2\top} u_\alpha`, orthogonal to other modes' (exact for the decoupled
initialisation :math:`W^1 = R\bar W^1 V^\top`, :math:`W^2 = U\bar W^2 R^\top`; approximately
reached from small random weights, the "silent alignment"). (iii) *Balance*:
:math:`r^1_\alpha = r^2_\alpha` gives seed eq. 7 (:func:`mode_strength`); any imbalance is
covered exactly by :func:`mode_strength_unbalanced`. (iv) Gradient flow: GD with step
:math:`\epsilon` deviates by :math:`O(P\epsilon s_\alpha)` in relative time.

The mode strength :math:`a_\alpha = r^2_\alpha \cdot r^1_\alpha = (U^\top W^2 W^1 V)_{\alpha
\alpha}` then obeys :math:`\tau \dot a_\alpha = 2 a_\alpha (s_\alpha - d_\alpha a_\alpha)`
(balanced) and the network map is :math:`W^2 W^1 = U A(t) V^\top` (seed eq. 6, 23).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "BiasMode",
    "GatedLinearPrediction",
    "LinearModes",
    "aligned_modes",
    "bias_mode",
    "data_correlations",
    "function_mode_strengths",
    "gated_linear_prediction",
    "hitting_time",
    "learning_time_constant",
    "least_squares_loss",
    "mode_components",
    "mode_loss",
    "mode_projections",
    "mode_strength",
    "mode_strength_unbalanced",
    "modes_to_map",
    "relu_hitting_delay",
]

ArrayLike = np.ndarray | float


def _as_data(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    if X.shape[1] != Y.shape[1]:
        raise ValueError(
            f"X and Y must hold the P samples as columns: got X {X.shape}, Y {Y.shape} "
            "(sample-major task arrays need a transpose)"
        )
    return X, Y


def data_correlations(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Input–output and input correlations :math:`\Sigma^{yx} = YX^\top/P`, :math:`\Sigma^x =
    XX^\top/P`.

    Seed 004 eq. 3 (eq. 16 in appendix B). Samples are columns.

    Args:
        X: inputs, shape ``(n_in, P)`` (augmented by the constant where the network has a bias).
        Y: targets, shape ``(n_out, P)``.

    Returns:
        ``(sigma_yx, sigma_x)`` of shapes ``(n_out, n_in)`` and ``(n_in, n_in)``.

    Example:
        >>> sigma_yx, sigma_x = data_correlations(np.eye(4), np.ones((1, 4)))
        >>> float(sigma_x[0, 0]), float(sigma_yx[0, 0])
        (0.25, 0.25)
    """
    X, Y = _as_data(X, Y)
    n_samples = X.shape[1]
    return Y @ X.T / n_samples, X @ X.T / n_samples


def learning_time_constant(n_samples: int, lr: float) -> float:
    r"""Time constant :math:`\tau = 1/(P\epsilon)` in GD steps for the sum loss.

    Seed 004 eq. 18 (appendix B). Derived from
    :math:`\mathcal{L} = \frac12\sum_i\lVert y_i - \hat y_i\rVert^2`; for the mean loss
    :math:`\frac1{2P}\sum_i` the time constant would be :math:`1/\epsilon`.

    Args:
        n_samples: :math:`P`, the number of training samples in the (full) batch.
        lr: :math:`\epsilon`, the GD learning rate.

    Example:
        >>> learning_time_constant(8, 2e-4)
        625.0
    """
    if n_samples < 1 or lr <= 0:
        raise ValueError(f"need n_samples ≥ 1 and lr > 0, got {n_samples}, {lr}")
    return 1.0 / (n_samples * lr)


@dataclass(frozen=True)
class LinearModes:
    r"""The learnable modes of a data set: :math:`\Sigma^{yx} = U S V^\top`, :math:`V^\top
    \Sigma^x V = D`.

    Only modes with :math:`s_\alpha > 0` are kept (``m`` of them); the network map outside them
    has no target and is taken as zero.

    Attributes:
        U: output singular vectors, ``(n_out, m)``.
        s: singular values :math:`s_\alpha`, descending, ``(m,)``.
        V: input singular vectors, ``(n_in, m)``.
        d: :math:`d_\alpha = v_\alpha^\top \Sigma^x v_\alpha`, ``(m,)``.
        n_samples: :math:`P`.
        output_power: :math:`\operatorname{tr}\Sigma^y = \lVert Y\rVert_F^2 / P`.
        misalignment: largest off-diagonal entry of :math:`V_{full}^\top \Sigma^x V_{full}`
            (over *all* input directions), relative to :math:`\lVert\Sigma^x\rVert_2`;
            zero (to rounding) when assumption (i) of the module docstring holds.
    """

    U: np.ndarray
    s: np.ndarray
    V: np.ndarray
    d: np.ndarray
    n_samples: int
    output_power: float
    misalignment: float

    @property
    def n_modes(self) -> int:
        return int(self.s.size)

    @property
    def asymptotes(self) -> np.ndarray:
        r""":math:`s_\alpha / d_\alpha`, the strength each mode converges to (seed eq. 7)."""
        with np.errstate(divide="ignore"):
            return np.where(self.d > 0, self.s / np.where(self.d > 0, self.d, 1.0), np.inf)


def _clusters(values: np.ndarray, rtol: float) -> list[np.ndarray]:
    """Index groups of (descending) values equal within ``rtol`` of the largest."""
    scale = max(float(np.max(np.abs(values), initial=0.0)), np.finfo(float).tiny)
    groups, start = [], 0
    for i in range(1, values.size + 1):
        if i == values.size or values[start] - values[i] > rtol * scale:
            groups.append(np.arange(start, i))
            start = i
    return groups


def aligned_modes(
    X: np.ndarray,
    Y: np.ndarray,
    rtol: float = 1e-9,
    require_aligned: bool = True,
) -> LinearModes:
    r"""Mode decomposition of a data set for the deep-linear dynamics (seed 004 eq. 4, 16).

    Computes the full SVD :math:`\Sigma^{yx} = U S V^\top` and, inside every group of equal
    singular values (including the null space of :math:`\Sigma^{yx}`), rotates :math:`V` (and
    :math:`U` with it) to diagonalise :math:`\Sigma^x` there, so that degenerate modes get the
    basis the theory needs. Then :math:`d_\alpha = (V^\top\Sigma^x V)_{\alpha\alpha}` and the
    remaining off-diagonal of :math:`V^\top\Sigma^x V` measures how far the inputs are from the
    aligned case (:attr:`LinearModes.misalignment`).

    Args:
        X: inputs ``(n_in, P)``, samples as columns (augmented by the constant if wanted).
        Y: targets ``(n_out, P)``.
        rtol: relative tolerance for equal singular values, zero singular values and the
            alignment check.
        require_aligned: raise ``ValueError`` when :math:`V` does not diagonalise
            :math:`\Sigma^x` (XOR-like data); with ``False`` the diagonal is returned anyway
            and the violation is recorded.

    Returns:
        :class:`LinearModes` with the ``m`` modes of positive singular value.

    Example:
        >>> X = np.vstack([np.ones(4), np.eye(4)])  # one-hot items with c = 1 (first row)
        >>> modes = aligned_modes(X, np.eye(4))
        >>> modes.n_modes, round(float(modes.d[0]), 6)
        (4, 1.25)
    """
    X, Y = _as_data(X, Y)
    sigma_yx, sigma_x = data_correlations(X, Y)
    n_out, n_in = sigma_yx.shape
    U_full, s_svd, Vt_full = np.linalg.svd(sigma_yx, full_matrices=True)
    V_full = Vt_full.T.copy()
    s_all = np.zeros(n_in)
    s_all[: s_svd.size] = s_svd
    U_cols = U_full[:, : min(n_out, n_in)].copy()
    for group in _clusters(s_all, rtol):
        block = V_full[:, group]
        _, rotation = np.linalg.eigh(block.T @ sigma_x @ block)
        rotation = rotation[:, ::-1]  # larger d first within a group
        V_full[:, group] = block @ rotation
        paired = group[group < U_cols.shape[1]]
        if s_all[group[0]] > rtol * max(s_all[0], np.finfo(float).tiny) and paired.size:
            U_cols[:, paired] = U_cols[:, paired] @ rotation
    projected = V_full.T @ sigma_x @ V_full
    scale = max(float(np.linalg.norm(sigma_x, 2)), np.finfo(float).tiny)
    off_diagonal = projected - np.diag(np.diag(projected))
    misalignment = float(np.max(np.abs(off_diagonal), initial=0.0)) / scale
    if require_aligned and misalignment > max(rtol, 1e3 * np.finfo(float).eps):
        raise ValueError(
            "inputs are not aligned: the right singular vectors of Σyx do not diagonalise Σx "
            f"(largest relative off-diagonal {misalignment:.3g}); the mode dynamics of seed 004 "
            "eq. 7 do not apply (pass require_aligned=False to inspect)"
        )
    keep = np.flatnonzero(s_all[: U_cols.shape[1]] > rtol * max(s_all[0], np.finfo(float).tiny))
    return LinearModes(
        U=U_cols[:, keep],
        s=s_all[keep],
        V=V_full[:, keep],
        d=np.diag(projected)[keep].copy(),
        n_samples=X.shape[1],
        output_power=float(np.sum(Y * Y)) / X.shape[1],
        misalignment=misalignment,
    )


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
    (i)–(iii) of the module docstring; ``t`` in GD steps with :math:`\tau` from
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

    With :math:`r^1 = W^1 v_\alpha`, :math:`r^2 = W^{2\top}u_\alpha` (assumption (ii) of the
    module docstring) the flow is :math:`\tau\dot r^1 = r^2 (s - d a)`,
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


def mode_components(
    W2: np.ndarray, W1: np.ndarray, modes: LinearModes, gate: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Per-mode :math:`(a_0, p_0, q_0)` of a network's weights, for
    :func:`mode_strength_unbalanced`.

    :math:`r^1_\alpha = G W^1 v_\alpha`, :math:`r^2_\alpha = G W^{2\top} u_\alpha`,
    :math:`a_\alpha = r^2_\alpha\cdot r^1_\alpha = (U^\top W^2 G W^1 V)_{\alpha\alpha}`,
    :math:`p_\alpha = \lVert r^1_\alpha + r^2_\alpha\rVert^2/4`,
    :math:`q_\alpha = \lVert r^1_\alpha - r^2_\alpha\rVert^2/4`. For i.i.d.
    :math:`\mathcal N(0,\sigma^2)` weights and :math:`N` hidden units
    :math:`E[p_\alpha] = E[q_\alpha] = N\sigma^2/2` [derived].

    Args:
        W2: readout ``(n_out, N)``.
        W1: first layer ``(N, n_in)`` (augmented :math:`\tilde W^1 = [b\ W^1]` with the
            constant in the same input position as in the data).
        modes: from :func:`aligned_modes`.
        gate: optional 0/1 (or boolean) vector of length ``N``, :math:`G = \mathrm{diag}(g)`.

    Returns:
        ``(a0, p0, q0)``, each ``(m,)``.

    Example:
        >>> X = np.vstack([np.eye(4), np.ones(4)])  # one-hot items + constant c = 1
        >>> modes = aligned_modes(X, np.eye(4))
        >>> W1, W2 = 0.1 * modes.V.T, 0.1 * modes.U  # aligned, balanced, 4 hidden units
        >>> [v.round(6).tolist() for v in mode_components(W2, W1, modes)][0]
        [0.01, 0.01, 0.01, 0.01]
    """
    W2 = np.asarray(W2, dtype=np.float64)
    W1 = np.asarray(W1, dtype=np.float64)
    g = np.ones(W1.shape[0]) if gate is None else np.asarray(gate, dtype=np.float64)
    r1 = g[:, None] * (W1 @ modes.V)
    r2 = g[:, None] * (W2.T @ modes.U)
    a0 = np.sum(r1 * r2, axis=0)
    p0 = np.sum((r1 + r2) ** 2, axis=0) / 4.0
    q0 = np.sum((r1 - r2) ** 2, axis=0) / 4.0
    return a0, p0, q0


def modes_to_map(modes: LinearModes, strengths: np.ndarray) -> np.ndarray:
    r"""Network map :math:`W^2W^1 = U\,\mathrm{diag}(a)\,V^\top` (seed eq. 6, 23).

    Args:
        modes: from :func:`aligned_modes`.
        strengths: :math:`a_\alpha`, shape ``(..., m)`` (e.g. ``(T, m)`` over time).

    Returns:
        Maps of shape ``(..., n_out, n_in)``; apply to augmented inputs
        :math:`\hat y_i = M \tilde x_i`.

    Example:
        >>> X = np.vstack([np.eye(4), np.ones(4)])  # one-hot items + constant c = 1
        >>> modes = aligned_modes(X, np.eye(4))
        >>> bool(np.allclose(modes_to_map(modes, modes.asymptotes) @ X, np.eye(4)))
        True
    """
    a = np.asarray(strengths, dtype=np.float64)
    return np.einsum("om,...m,im->...oi", modes.U, a, modes.V)


def mode_loss(modes: LinearModes, strengths: np.ndarray) -> np.ndarray:
    r"""Sum loss of the map :math:`U\,\mathrm{diag}(a)\,V^\top` on the data (seed §5.1 loss).

    .. math::
        \mathcal{L} = \frac P2 \Big(\operatorname{tr}\Sigma^y
            - \sum_\alpha a_\alpha (2 s_\alpha - d_\alpha a_\alpha)\Big)

    exact for aligned data [derived]; it is :math:`\frac12\sum_i\lVert y_i - M\tilde x_i\rVert^2`.

    Args:
        modes: from :func:`aligned_modes`.
        strengths: ``(..., m)``.

    Returns:
        Loss of shape ``(...)``.

    Example:
        >>> X = np.vstack([np.eye(4), np.ones(4)])  # one-hot items + constant c = 1
        >>> modes = aligned_modes(X, np.eye(4))
        >>> float(mode_loss(modes, np.zeros(4)))  # nothing learned: ½‖Y‖²
        2.0
        >>> abs(float(mode_loss(modes, modes.asymptotes))) < 1e-12  # all learned
        True
    """
    a = np.asarray(strengths, dtype=np.float64)
    gain = np.sum(a * (2.0 * modes.s - modes.d * a), axis=-1)
    return 0.5 * modes.n_samples * (modes.output_power - gain)


def least_squares_loss(X: np.ndarray, Y: np.ndarray) -> float:
    r"""Smallest sum loss any linear map reaches: :math:`\min_M \frac12\lVert Y - MX\rVert_F^2`.

    .. math::
        \mathcal L^\ast = \frac P2\left(\operatorname{tr}\Sigma^y
            - \operatorname{tr}\big(\Sigma^{yx}\,\Sigma^{x+}\,\Sigma^{xy}\big)\right),

    the asymptote of a linear network with enough hidden units; on aligned data it equals
    :func:`mode_loss` at :math:`a_\alpha = s_\alpha/d_\alpha`. On seed 004's parallel task
    (fig. 6B) it is the dotted "linear task solved" line. Computed by ``numpy.linalg.lstsq``.

    Args:
        X: inputs ``(n_in, P)`` (append the constant for an affine fit).
        Y: targets ``(n_out, P)``.

    Example:
        >>> X = np.array([[0.0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1]])  # XOR + constant
        >>> least_squares_loss(X, np.array([[0.0, 1, 1, 0]]))
        0.5
    """
    X, Y = _as_data(X, Y)
    coef, *_ = np.linalg.lstsq(X.T, Y.T, rcond=None)
    residual = Y.T - X.T @ coef
    return 0.5 * float(np.sum(residual * residual))


def mode_projections(
    W2: np.ndarray,
    W1: np.ndarray,
    modes: LinearModes,
    gate: np.ndarray | None = None,
    full: bool = False,
) -> np.ndarray:
    r"""Projection of a network onto the data's modes, :math:`U^\top W^2 G\,\tilde W^1 V`.

    Seed 004 §5.4: :math:`a_\alpha = (U^\top P V)_{\alpha\alpha}` with
    :math:`P = W^2 G \tilde W^1` (:math:`G = I` for a linear network). Works on a stack of
    networks: leading dimensions of ``W2`` and ``W1`` broadcast (e.g. ``(S, n_out, N)`` and
    ``(S, N, n_in)`` for S networks, or over recorded times).

    Args:
        W2: readout ``(..., n_out, N)``.
        W1: augmented first layer ``(..., N, n_in)``.
        modes: from :func:`aligned_modes`.
        gate: optional ``(..., N)`` 0/1 vector, :math:`G = \mathrm{diag}(g)`.
        full: return the whole ``(..., m, m)`` matrix instead of its diagonal ``(..., m)``
            (the off-diagonal shows how far the network is from alignment).

    Example:
        >>> X = np.vstack([np.eye(4), np.ones(4)])  # one-hot items + constant c = 1
        >>> modes = aligned_modes(X, np.eye(4))
        >>> W1, W2 = np.ones((3, 16, 5)), np.ones((3, 4, 16))  # three networks
        >>> mode_projections(W2, W1, modes).shape
        (3, 4)
    """
    W2 = np.asarray(W2, dtype=np.float64)
    W1 = np.asarray(W1, dtype=np.float64)
    if gate is not None:
        W1 = np.asarray(gate, dtype=np.float64)[..., :, None] * W1
    matrix = (modes.U.T @ W2) @ (W1 @ modes.V)
    return matrix if full else np.diagonal(matrix, axis1=-2, axis2=-1).copy()


def function_mode_strengths(outputs: np.ndarray, X: np.ndarray, modes: LinearModes) -> np.ndarray:
    r"""Mode strengths of *any* network read from its outputs on the training inputs.

    .. math::
        a_\alpha = \frac{u_\alpha^\top\,\Sigma^{\hat y x}\,v_\alpha}{d_\alpha},\qquad
        \Sigma^{\hat y x} = \tfrac1P \hat Y X^\top .

    For a linear network on aligned data, :math:`\hat Y = U A V^\top X` gives
    :math:`\Sigma^{\hat yx} = U A D V^\top`, so this equals :func:`mode_projections` exactly
    [derived]; for a ReLU network it is the strength of each mode in the function it computes
    on the data — unlike :math:`U^\top W^2\tilde W^1 V`, which ignores the gating. Use it to
    measure hitting times and delays per mode (seed 004 §5.4, eq. 13–14).

    Args:
        outputs: :math:`\hat Y`, ``(..., n_out, P)``.
        X: inputs ``(n_in, P)`` as used for ``modes``.
        modes: from :func:`aligned_modes` (:math:`d_\alpha > 0` for every kept mode).

    Returns:
        ``(..., m)``.

    Example:
        >>> X = np.vstack([np.eye(4), np.ones(4)])  # one-hot items + constant c = 1
        >>> modes = aligned_modes(X, np.eye(4))
        >>> bool(np.allclose(function_mode_strengths(np.eye(4), X, modes), modes.asymptotes))
        True
    """
    outputs = np.asarray(outputs, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    correlation = outputs @ X.T / X.shape[1]
    projected = np.diagonal(modes.U.T @ correlation @ modes.V, axis1=-2, axis2=-1)
    return projected / modes.d


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


@dataclass(frozen=True)
class BiasMode:
    r"""Seed 004 Prop. 1 for one-hot items with a constant input :math:`c`.

    Attributes:
        eigenvalues: spectrum of :math:`\tilde\Sigma^x`, descending:
            :math:`c^2 + 1/P`, then :math:`1/P` (:math:`P-1` times), then 0.
        eigenvector: unit top eigenvector :math:`\propto [1;\ \mathbf 1/(cP)]` (constant
            coordinate placed as requested).
        s0: :math:`\sqrt{c^2 + 1/P}\,\lVert\bar y\rVert`.
    """

    eigenvalues: np.ndarray
    eigenvector: np.ndarray
    s0: float


def bias_mode(n_items: int, c: float, mean_target: np.ndarray, constant_last: bool = True):
    r"""The bias mode of seed 004 Prop. 1 (eq. 5, proof in appendix F.1).

    For :math:`X = I_P` augmented with a constant :math:`c \ne 0`,

    .. math::
        \operatorname{spec}\tilde\Sigma^x = \{c^2 + \tfrac1P,\ \underbrace{\tfrac1P, \dots,
        \tfrac1P}_{P-1},\ 0\},\qquad
        \tilde v_0 \propto [1;\ \tfrac{1}{cP}\mathbf 1],\qquad
        s_0 = \lVert\tilde\Sigma^{yx}\hat v_0\rVert = \sqrt{c^2 + \tfrac1P}\,\lVert\bar y\rVert.

    .. note::
        The seed's proof computes :math:`\lVert\tilde\Sigma^{yx}\hat v_0\rVert`, a lower bound
        on the top singular value. It is a singular value of :math:`\tilde\Sigma^{yx}` (and the
        mode aligned in the sense of eq. 4) exactly when :math:`y_i^\top\bar y` is the same for
        every item — true for the trees and for balanced one-hot classes — and the *top* one
        when in addition the mean direction dominates the centred targets.

    Args:
        n_items: :math:`P`.
        c: the constant input, :math:`c \ne 0`.
        mean_target: :math:`\bar y = \frac1P\sum_i y_i`.
        constant_last: place the constant coordinate last in :attr:`BiasMode.eigenvector` (as
            :func:`relulab.tasks.append_constant` does) instead of first (as the seed writes).

    Example:
        >>> bias_mode(4, 1.0, np.array([1.0])).eigenvalues.tolist()
        [1.25, 0.25, 0.25, 0.25, 0.0]
    """
    if n_items < 1:
        raise ValueError(f"n_items must be ≥ 1, got {n_items}")
    if c == 0:
        raise ValueError("Prop. 1 needs c ≠ 0 (without the constant there is no bias mode)")
    P = n_items
    top = c * c + 1.0 / P
    eigenvalues = np.concatenate([[top], np.full(P - 1, 1.0 / P), [0.0]])
    vector = np.concatenate([[1.0], np.full(P, 1.0 / (c * P))])
    vector /= np.linalg.norm(vector)
    if constant_last:
        vector = np.roll(vector, -1)
    s0 = float(np.sqrt(top) * np.linalg.norm(np.asarray(mean_target, dtype=np.float64)))
    return BiasMode(eigenvalues=eigenvalues, eigenvector=vector, s0=s0)


@dataclass(frozen=True)
class GatedLinearPrediction:
    r"""Result of :func:`gated_linear_prediction`.

    Attributes:
        times: steps after :math:`t^\ast` at which the prediction is given, ``(T,)``.
        start: :math:`a_\alpha(t^\ast) = (U^\top W^2 G\tilde W^1 V)_{\alpha\alpha}`, ``(m,)``.
        strengths: :math:`a_\alpha(t^\ast + t)`, ``(T, m)``.
        loss: :func:`mode_loss` of the predicted map, ``(T,)``.
        off_diagonal: Frobenius norm of the off-diagonal part of :math:`U^\top P(t^\ast) V`
            relative to the whole — how much of the gated map the mode picture leaves out.
    """

    times: np.ndarray
    start: np.ndarray
    strengths: np.ndarray
    loss: np.ndarray
    off_diagonal: float


def gated_linear_prediction(
    W2: np.ndarray,
    W1: np.ndarray,
    gate: np.ndarray,
    modes: LinearModes,
    times: np.ndarray,
    tau: float,
    method: Literal["seed", "unbalanced"] = "seed",
) -> GatedLinearPrediction:
    r"""Gated linear model from the linearization time :math:`t^\ast` on (seed 004 §5.4, eq. 15).

    At :math:`t^\ast` (first time the always-on fraction reaches its maximum) the ReLU network
    is approximated by :math:`\hat y_i \approx W^2 G \tilde W^1 \tilde x_i = P\tilde x_i` with
    :math:`G = \mathrm{diag}(g)`, :math:`g_j = 1` for units active on every input at
    :math:`t^\ast`. Its modes start at :math:`a_\alpha(t^\ast) = (U^\top P V)_{\alpha\alpha}` and
    follow the closed-form dynamics afterwards:

    * ``method="seed"``: seed eq. 7 from :math:`a_0 = a_\alpha(t^\ast)`, as the seed does; it
      needs every :math:`a_\alpha(t^\ast) > 0` and raises otherwise;
    * ``method="unbalanced"``: :func:`mode_strength_unbalanced` from the gated hidden vectors
      (:func:`mode_components`), exact for decoupled modes of any balance and sign.

    Args:
        W2: readout at :math:`t^\ast`, ``(n_out, N)``.
        W1: augmented first layer at :math:`t^\ast`, ``(N, n_in)``.
        gate: ``(N,)`` 0/1 or boolean, the always-on units at :math:`t^\ast`.
        modes: from :func:`aligned_modes` on the (augmented) data.
        times: steps after :math:`t^\ast`, ``(T,)``, :math:`\ge 0`.
        tau: time constant :math:`1/(P\epsilon)`.
        method: see above.

    Returns:
        :class:`GatedLinearPrediction`.

    Example:
        >>> X = np.vstack([np.eye(4), np.ones(4)])  # one-hot items + constant c = 1
        >>> modes = aligned_modes(X, np.eye(4))
        >>> W1, W2 = 0.1 * modes.V.T, 0.1 * modes.U
        >>> pred = gated_linear_prediction(W2, W1, np.ones(4), modes, [0.0, 1e6], tau=10.0)
        >>> pred.start.round(6).tolist(), abs(float(pred.loss[-1])) < 1e-9
        ([0.01, 0.01, 0.01, 0.01], True)
    """
    times = np.asarray(times, dtype=np.float64)
    matrix = mode_projections(W2, W1, modes, gate=gate, full=True)
    start = np.diagonal(matrix).copy()
    total = float(np.linalg.norm(matrix))
    off = float(np.linalg.norm(matrix - np.diag(start))) / total if total > 0 else 0.0
    if method == "seed":
        if np.any(start <= 0):
            raise ValueError(
                f"seed eq. 7 needs a_α(t*) > 0, got {start.round(8).tolist()}; "
                "use method='unbalanced'"
            )
        strengths = mode_strength(times[:, None], modes.s, modes.d, start, tau)
    elif method == "unbalanced":
        _, p0, q0 = mode_components(W2, W1, modes, gate=gate)
        strengths = mode_strength_unbalanced(times[:, None], modes.s, modes.d, p0, q0, tau)[0]
    else:
        raise ValueError(f"method must be 'seed' or 'unbalanced', got {method!r}")
    return GatedLinearPrediction(
        times=times,
        start=start,
        strengths=strengths,
        loss=mode_loss(modes, strengths),
        off_diagonal=off,
    )
