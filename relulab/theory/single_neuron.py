r"""Exact loss plateaus of a single ReLU neuron fitting a ReLU teacher.

Seed ``001_…`` (Liu, *Training dynamics of a single ReLU neuron*): the student
:math:`f(x) = w_2\,\sigma(w_1 x + b_1) + b_2` fits the teacher :math:`\mathrm{ReLU}(x)` on
:math:`x \in [-1, 1]` with the mean squared error. When the neuron is stuck

* **dead** (pre-activation negative on every input) the student is a constant, and the
  best constant leaves the loss :math:`\mathrm{Var}[\mathrm{ReLU}(x)]`;
* **hyperactive** (pre-activation positive on every input) the student is affine, and the best
  line leaves :math:`\mathrm{Var}[\mathrm{ReLU}(x)] - \mathrm{Cov}[x, \mathrm{ReLU}(x)]^2 /
  \mathrm{Var}[x]`.

For :math:`x \sim U[-1, 1]` these are exactly 5/48 and 1/48 [D] (the seed reports the
plateaus as "around 0.1" and "around 0.02"). The functions
here give the closed form for any interval :math:`[lo, hi]` with :math:`lo < 0 < hi`, and an
independent least-squares path on a finite sample (what a full-batch run actually sees).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "best_constant_fit_loss",
    "best_linear_fit_loss",
    "plateau_losses",
    "sample_constant_fit_loss",
    "sample_linear_fit_loss",
]


def _uniform_relu_moments(lo: float, hi: float) -> tuple[float, float, float, float, float]:
    r"""Moments of :math:`x \sim U[lo, hi]` and :math:`r = \mathrm{ReLU}(x)`, ``lo < 0 < hi``.

    :math:`E[x^k\,1\{x>0\}] = hi^{k+1} / ((k+1)(hi-lo))`. Returns
    ``(E[x], E[x^2], E[r], E[r^2], E[x r])``.
    """
    if not lo < 0.0 < hi:
        raise ValueError(f"need lo < 0 < hi for a kink inside the domain, got [{lo}, {hi}]")
    width = hi - lo
    mean_x = (hi + lo) / 2.0
    mean_x2 = (hi**3 - lo**3) / (3.0 * width)
    mean_r = hi**2 / (2.0 * width)
    mean_r2 = hi**3 / (3.0 * width)
    mean_xr = mean_r2  # x·ReLU(x) = ReLU(x)^2
    return mean_x, mean_x2, mean_r, mean_r2, mean_xr


def best_constant_fit_loss(lo: float = -1.0, hi: float = 1.0) -> float:
    r"""Dead-neuron plateau :math:`\mathrm{Var}[\mathrm{ReLU}(x)]`, :math:`x \sim U[lo, hi]`.

    Equals 5/48 on :math:`[-1, 1]` (seed 001, Observation 0: "stuck around 0.1").

    Args:
        lo: the interval's lower end (< 0).
        hi: its upper end (> 0).

    Returns:
        The loss of the best constant fit.

    Example:
        >>> round(best_constant_fit_loss() * 48, 12)
        5.0
    """
    _, _, mean_r, mean_r2, _ = _uniform_relu_moments(lo, hi)
    return mean_r2 - mean_r**2


def best_linear_fit_loss(lo: float = -1.0, hi: float = 1.0) -> float:
    r"""Hyperactive-neuron plateau: residual of the best affine fit to ReLU on :math:`U[lo, hi]`.

    :math:`\mathrm{Var}[r] - \mathrm{Cov}[x, r]^2/\mathrm{Var}[x]`; equals 1/48 on
    :math:`[-1, 1]` (seed 001, Observation 0: "stuck around 0.02").

    Args:
        lo: the interval's lower end (< 0).
        hi: its upper end (> 0).

    Returns:
        The loss of the best affine fit.

    Example:
        >>> round(best_linear_fit_loss() * 48, 12)
        1.0
    """
    mean_x, mean_x2, mean_r, mean_r2, mean_xr = _uniform_relu_moments(lo, hi)
    var_x = mean_x2 - mean_x**2
    cov_xr = mean_xr - mean_x * mean_r
    return (mean_r2 - mean_r**2) - cov_xr**2 / var_x


def plateau_losses(lo: float = -1.0, hi: float = 1.0) -> dict[str, float]:
    """Both plateaus on :math:`U[lo, hi]`, keyed by the neuron state that produces them.

    Args:
        lo: the interval's lower end (< 0).
        hi: its upper end (> 0).

    Returns:
        ``{"dead": best_constant_fit_loss, "hyperactive": best_linear_fit_loss}``.

    Example:
        >>> {k: round(v * 48, 9) for k, v in plateau_losses().items()}
        {'dead': 5.0, 'hyperactive': 1.0}
    """
    return {"dead": best_constant_fit_loss(lo, hi), "hyperactive": best_linear_fit_loss(lo, hi)}


def sample_constant_fit_loss(x: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error of the best constant fit to ``y`` on a finite sample (its variance):
    the dead plateau a full-batch run sees.

    Args:
        x: the inputs (unused: a constant ignores them; kept for symmetry).
        y: the targets.

    Returns:
        :math:`\\frac1N\\sum (y - \\bar y)^2`.

    Example:
        >>> x = np.linspace(-1, 1, 100_001)
        >>> round(sample_constant_fit_loss(x, np.maximum(x, 0)) * 48, 3)
        5.0
    """
    y = np.asarray(y, dtype=np.float64)
    return float(np.mean((y - y.mean()) ** 2))


def sample_linear_fit_loss(x: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error of the least-squares line through ``(x, y)``
    (``numpy.linalg.lstsq``): the hyperactive plateau a full-batch run sees.

    Args:
        x: the inputs.
        y: the targets.

    Returns:
        The residual mean square.

    Example:
        >>> x = np.linspace(-1, 1, 100_001)
        >>> round(sample_linear_fit_loss(x, np.maximum(x, 0)) * 48, 3)
        1.0
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    design = np.stack([x, np.ones_like(x)], axis=1)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(np.mean((design @ coef - y) ** 2))
