r"""Networks seen through the data's modes (:mod:`relulab.theory.deep_linear`): a network's
projection onto them, read from its weights or from its outputs, the map and loss of given
mode strengths, and the gated linear model of a ReLU network from the linearization time on
(seed §5.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from relulab.theory.deep_linear.dynamics import mode_strength, mode_strength_unbalanced
from relulab.theory.deep_linear.modes import LinearModes

__all__ = [
    "GatedLinearPrediction",
    "function_mode_strengths",
    "gated_linear_prediction",
    "mode_components",
    "mode_loss",
    "mode_projections",
    "modes_to_map",
]


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
        >>> from relulab.theory.deep_linear import aligned_modes
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
        >>> from relulab.theory.deep_linear import aligned_modes
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
        >>> from relulab.theory.deep_linear import aligned_modes
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
        >>> from relulab.theory.deep_linear import aligned_modes
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
        >>> from relulab.theory.deep_linear import aligned_modes
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
        >>> from relulab.theory.deep_linear import aligned_modes
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
