r"""Four-point Boolean tasks of seed ``004_…``: XOR (fig. 2C), XOR with a linear feature (fig. 5A),
and the parallel simple/complex task (fig. 6A, appendix D).

All arrays are NumPy float64, sample-major: ``X`` is ``(4, n_in)``, ``Y`` is ``(4, n_out)``
(transpose for the column convention of :mod:`relulab.theory.deep_linear`). Labels are one-hot,
as the seed's appendix E states for these tasks ("[1, 0], [1, 0], [0, 1], [0, 1]").

The seed's figures, which define the coordinates, were lost; the choices below are ours and
are tagged [I]. The XOR coordinates default to the **centred** levels :math:`\pm 1`: on
:math:`\{0, 1\}^2` the inputs' mean :math:`(\tfrac12, \tfrac12)` acts as an input constant —
a bias in disguise, the very effect the seed removes by mean-centring (§3) — and the point
:math:`(0, 0)` is the origin, where a *bias-free* ReLU network outputs exactly 0 whatever its
weights. ``levels=(0, 1)`` gives the uncentred square. :func:`xor_linear_task` keeps its points
off the origin for :math:`\Delta > 0`, and :func:`parallel_task` uses the centred square.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "PARALLEL_COMPLEX",
    "PARALLEL_SIMPLE",
    "parallel_task",
    "xor_linear_task",
    "xor_task",
]

#: Seed 004 appendix D: the simple (linear) target of the parallel task, per input.
PARALLEL_SIMPLE = np.array([1.0, 1.0, 0.0, 0.0])
#: Seed 004 appendix D: the complex (non-linear) target of the parallel task, per input.
PARALLEL_COMPLEX = np.array([1.0, 0.0, 0.0, 1.0])


def _one_hot(labels: np.ndarray) -> np.ndarray:
    return np.stack([1.0 - labels, labels], axis=1)


def _xor_points(levels: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = (float(v) for v in levels)
    if lo == hi:
        raise ValueError(f"levels must differ, got {levels}")
    points = np.array([[lo, lo], [hi, hi], [lo, hi], [hi, lo]])
    return points, np.array([0.0, 0.0, 1.0, 1.0])


def xor_task(levels: tuple[float, float] = (-1.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    r"""XOR on the square (seed 004 fig. 2C, 2D, 9B), inputs ordered by class.

    With ``levels = (lo, hi)``, ``X`` rows :math:`(lo,lo), (hi,hi), (lo,hi), (hi,lo)` — class 0
    (:math:`x_1 = x_2`) first — and ``Y`` the one-hot labels :math:`[1,0], [1,0], [0,1],
    [0,1]` (appendix E). Ordering the inputs by class is what makes the seed's label list an
    XOR [I]. The default :math:`\pm 1` is centred (no input constant, §3) [I]; ``(0, 1)`` is
    the uncentred square.

    Args:
        levels: the two values of each coordinate; they set the XOR's scale.

    Returns:
        ``X`` ``(4, 2)``, ``Y`` ``(4, 2)``.

    Example:
        >>> X, Y = xor_task()
        >>> X.tolist(), Y[:, 1].tolist()
        ([[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [1.0, -1.0]], [0.0, 0.0, 1.0, 1.0])
        >>> xor_task(levels=(0, 1))[0].mean(axis=0).tolist()
        [0.5, 0.5]
    """
    points, labels = _xor_points(levels)
    return points, _one_hot(labels)


def xor_linear_task(
    margin_delta: float = 0.5,
    center: float = 0.0,
    levels: tuple[float, float] = (-1.0, 1.0),
) -> tuple[np.ndarray, np.ndarray]:
    r"""XOR plus a third, linearly separating coordinate (seed 004 fig. 5A, §6.1, fig. 11).

    The first two coordinates are :func:`xor_task`'s; the third is :math:`\text{center} - \Delta`
    for class 0 and :math:`\text{center} + \Delta` for class 1 [I]. The classes are then split
    by the plane :math:`x_3 = \text{center}` with a gap of :math:`2\Delta` between them (the
    seed's "margin 2Δ"), and are linearly separable iff :math:`\Delta > 0` (seed §6.1). No
    point sits at the origin. The XOR : x3 scale, :math:`(hi - lo)/(2\Delta)`, decides which
    feature a bias-free ReLU network uses (issue 30): 2 with the default centred levels
    :math:`\pm 1` and :math:`\Delta = 0.5`; ``levels=(0, 1)`` gives the unit box
    :math:`[0,1]^2 \times [-\tfrac12, \tfrac12]` (ratio 1).

    Args:
        margin_delta: :math:`\Delta \ge 0` (seed default 0.5; fig. 11 sweeps it).
        center: where the third coordinate's two values are centred.
        levels: the XOR coordinates' two values (default centred, [I]).

    Returns:
        ``X`` ``(4, 3)``, ``Y`` ``(4, 2)`` (one-hot by class, as :func:`xor_task`).

    Example:
        >>> X, _ = xor_linear_task(0.5)
        >>> X[:, 2].tolist()
        [-0.5, -0.5, 0.5, 0.5]
    """
    if margin_delta < 0:
        raise ValueError(f"margin_delta must be ≥ 0, got {margin_delta}")
    points, labels = _xor_points(levels)
    third = center + margin_delta * (2.0 * labels - 1.0)
    return np.column_stack([points, third]), _one_hot(labels)


def parallel_task(
    one_hot: bool = True, levels: tuple[float, float] = (-1.0, 1.0)
) -> tuple[np.ndarray, np.ndarray]:
    r"""A linear and a non-linear problem on the same four points (seed 004 fig. 6A, appendix D).

    Inputs :math:`(-1,-1), (-1,1), (1,-1), (1,1)` [I] (``levels`` replaces −1 and 1). The
    simple target :math:`s = [1,1,0,0] = (1 - x_1)/2` is affine in the inputs; the complex
    target :math:`c = [1,0,0,1] = (1 + x_1 x_2)/2` (XNOR) is not — its best affine fit is the
    constant 1/2. The square is centred so that no input sits at the origin: the seed reports
    bias-free ReLU networks at "zero loss on both tasks" (§6.2), which a bias-free network
    cannot reach on :math:`\{0,1\}^2` (its output at the origin is 0). With ``one_hot``
    (default [I], following appendix E's one-hot labels) the outputs are both problems' one-hot
    codes :math:`[s, 1-s, c, 1-c]`; otherwise :math:`[s, c]`.

    Returns:
        ``X`` ``(4, 2)``, ``Y`` ``(4, 4)`` or ``(4, 2)``. The regressors of appendix D are
        :data:`PARALLEL_SIMPLE` and :data:`PARALLEL_COMPLEX`.

    Example:
        >>> X, Y = parallel_task(one_hot=False)
        >>> X[:, 0].tolist(), Y.T.tolist()
        ([-1.0, -1.0, 1.0, 1.0], [[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
    """
    lo, hi = (float(v) for v in levels)
    if lo == hi:
        raise ValueError(f"levels must differ, got {levels}")
    X = np.array([[lo, lo], [lo, hi], [hi, lo], [hi, hi]])
    s, c = PARALLEL_SIMPLE, PARALLEL_COMPLEX
    Y = np.column_stack([s, 1.0 - s, c, 1.0 - c] if one_hot else [s, c])
    return X, Y
