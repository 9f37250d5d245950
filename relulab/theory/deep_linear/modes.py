r"""The modes of a data set for seed 004's deep-linear dynamics
(:mod:`relulab.theory.deep_linear`): its correlations, the aligned mode decomposition, the time
constant, the least-squares floor and the bias mode of one-hot items (Prop. 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "BiasMode",
    "LinearModes",
    "aligned_modes",
    "bias_mode",
    "data_correlations",
    "learning_time_constant",
    "least_squares_loss",
]


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
            zero (to rounding) when assumption (i) of :mod:`relulab.theory.deep_linear` holds.
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
