r"""Reading recorded curves: plateaus, first crossings, slopes, power laws and boundaries.

Pure NumPy/SciPy functions of 1-D arrays, shared by every experiment's analysis:

* :func:`plateau_level` — the level a loss curve is stuck at (median of its tail);
* :func:`longest_plateau` — the longest stretch where a loss curve stays flat;
* :func:`first_below` — the first recorded step at which a curve is below a threshold;
* :func:`interpolated_crossing` — where a curve first falls below a threshold, interpolated
  linearly between grid points;
* :func:`locate_boundary` — where a sweep's outcome first flips, and how often it flips;
* :func:`fit_log_slope` — the least-squares slope of :math:`\ln y` against :math:`x`
  (exponential growth or decay per unit of x);
* :func:`power_law_exponent` — the least-squares slope of :math:`\ln y` against :math:`\ln x`;
* :func:`running_mean` — a centred running mean over a window in steps (so that one noisy
  recording does not decide an argmax).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = [
    "first_below",
    "fit_log_slope",
    "interpolated_crossing",
    "locate_boundary",
    "longest_plateau",
    "plateau_level",
    "power_law_exponent",
    "running_mean",
    "tail_range",
    "boundary_bracket",
]


def plateau_level(curve: np.ndarray, tail: float = 0.1) -> float:
    r"""The level a run is stuck at: the median of the last ``tail`` fraction of its curve.

    .. math:: \mathrm{median}\{\ell_t : t > (1 - \text{tail})\,T\}

    A single final step is not a plateau: at large learning rates Adam makes occasional spikes
    on a plateau (its second-moment estimate decays while gradients vanish), and the last
    recorded step can land on one. Used for the stuck losses of seed 001, Observations 0–2.

    Args:
        curve: the recorded values of one run, ``(T,)``.
        tail: the fraction of the record to take the median over (at least one point).

    Returns:
        The median over the tail.

    Example:
        >>> plateau_level(np.array([1.0, 0.5, 0.1, 0.1, 0.1, 9.0, 0.1, 0.1, 0.1, 0.1]), tail=0.5)
        0.1
    """
    curve = np.asarray(curve)
    n_tail = max(1, int(round(tail * len(curve))))
    return float(np.median(curve[-n_tail:]))


def longest_plateau(
    steps: np.ndarray,
    loss: np.ndarray,
    floor: float,
    window_steps: int = 500,
    rtol: float = 0.05,
) -> int:
    r"""The longest stretch, in steps, where a loss stays above ``floor`` and nearly constant.

    With the lag :math:`k = \max(1, \lfloor \text{window\_steps}/\delta \rfloor)` records
    (:math:`\delta` the recording interval), a record t is *flat* when

    .. math:: |\ln \ell_{t+k} - \ln \ell_t| < \ln(1 + \text{rtol}) \quad\text{and}\quad
              \ell_t > \text{floor},

    i.e. the loss changes by less than ``rtol`` over one window and has not yet converged. The
    result is the longest run of consecutive flat records times :math:`\delta`, plus the window
    itself (0 when no record is flat). It measures the saddle of seed 001, Observation 3.

    Args:
        steps: the recorded steps, evenly spaced, ``(T,)``.
        loss: the loss at those steps, ``(T,)``.
        floor: losses at or below it count as converged, not as a plateau.
        window_steps: the window over which the loss must stay within ``rtol``.
        rtol: the relative change allowed over one window.

    Returns:
        The length of the longest plateau in steps.

    Example:
        >>> steps = np.arange(0, 3000, 100)
        >>> loss = np.where(steps < 2000, 0.5, 1e-9)
        >>> longest_plateau(steps, loss, floor=1e-4)
        2000
    """
    spacing = int(steps[1] - steps[0])
    lag = max(1, window_steps // spacing)
    log_loss = np.log(np.maximum(loss, 1e-30))
    flat = (np.abs(log_loss[lag:] - log_loss[:-lag]) < np.log1p(rtol)) & (loss[:-lag] > floor)
    best = run = 0
    for is_flat in flat:
        run = run + 1 if is_flat else 0
        best = max(best, run)
    return best * spacing + (window_steps if best else 0)


def first_below(steps: np.ndarray, values: np.ndarray, threshold: float) -> float:
    """The first recorded step at which ``values`` is below ``threshold`` (NaN if never).

    Args:
        steps: the recorded steps (or any grid), ``(T,)``.
        values: the curve on that grid, ``(T,)``.
        threshold: the level to fall below (strictly).

    Returns:
        ``steps[t]`` for the first ``t`` with ``values[t] < threshold``, as a float; NaN if there
        is none.

    Example:
        >>> first_below(np.array([0, 10, 20]), np.array([1.0, 0.1, 0.01]), 0.5)
        10.0
    """
    below = np.flatnonzero(np.asarray(values) < threshold)
    return float(steps[below[0]]) if len(below) else float("nan")


def interpolated_crossing(x: np.ndarray, y: np.ndarray, threshold: float) -> float:
    r"""Where ``y`` first falls below ``threshold``, interpolated linearly between grid points.

    With :math:`i` the first index where :math:`y_i < \theta`,

    .. math:: x^* = x_{i-1} + \frac{y_{i-1} - \theta}{y_{i-1} - y_i}\,(x_i - x_{i-1}),

    and :math:`x^* = x_0` when already :math:`y_0 < \theta`. A grid point alone would make a
    verdict depend on the grid's spacing; used for the leaky-ReLU slope at which
    :math:`\sigma_1/\sigma_2` reaches ≈ 1 (seed 000's anisotropy post).

    Args:
        x: the grid, increasing, ``(n,)``.
        y: the values on it, ``(n,)``.
        threshold: the level :math:`\theta`.

    Returns:
        :math:`x^*`, or NaN if ``y`` never falls below the threshold.

    Example:
        >>> interpolated_crossing(np.array([0.0, 0.5, 1.0]), np.array([3.0, 2.0, 1.0]), 1.5)
        0.75
    """
    below = np.flatnonzero(y < threshold)
    if not len(below):
        return float("nan")
    i = below[0]
    if i == 0:
        return float(x[0])
    fraction = (y[i - 1] - threshold) / (y[i - 1] - y[i])
    return float(x[i - 1] + fraction * (x[i] - x[i - 1]))


def locate_boundary(values: np.ndarray, outcome: np.ndarray) -> tuple[float, int]:
    """Where a sweep's boolean outcome first changes, and how many times it changes.

    Used to locate, e.g., the b2 below which a single neuron stops converging (seed 001,
    Observation 1) from a fine sweep ordered from the converging side.

    Args:
        values: the swept setting, in sweep order, ``(n,)``.
        outcome: the outcome per value (e.g. converged), ``(n,)`` bool.

    Returns:
        The midpoint between the last value before the first change and the first value after
        it (NaN if the outcome never changes), and the number of changes along the sweep (1 for
        a clean boundary).

    Example:
        >>> locate_boundary(np.array([0.0, 1.0, 2.0, 3.0]), np.array([True, True, False, False]))
        (1.5, 1)
    """
    flips = np.flatnonzero(outcome[1:] != outcome[:-1])
    if len(flips) == 0:
        return float("nan"), 0
    first = flips[0]
    return float(0.5 * (values[first] + values[first + 1])), int(len(flips))


def fit_log_slope(x: np.ndarray, y: np.ndarray) -> float:
    r"""Least-squares slope of :math:`\ln y` against :math:`x`.

    For :math:`y = A e^{s x}` it returns :math:`s`: the growth rate per unit of x, e.g. the slope
    of :math:`\ln\langle(\partial L/\partial x^l)^2\rangle` against the layer l in seed 002 §4,
    Fig. 3: under BatchNorm it is predicted to be :math:`\ln \sigma_s^2 \approx -0.383` with
    :math:`\sigma_s \approx 0.826`.

    Args:
        x: the abscissae, ``(n,)``.
        y: positive values, ``(n,)``.

    Returns:
        The ordinary least-squares slope (:func:`scipy.stats.linregress`).

    Example:
        >>> layers = np.arange(10.0)
        >>> round(fit_log_slope(layers, 2.0 * np.exp(-0.38 * layers)), 6)
        -0.38
    """
    return float(stats.linregress(x, np.log(y)).slope)


def power_law_exponent(x: np.ndarray, y: np.ndarray) -> float:
    r"""Least-squares slope of :math:`\ln y` against :math:`\ln x`.

    For :math:`y = A x^{p}` it returns :math:`p`, e.g. :math:`p = 1/2` for a Pre-LN residual
    stream whose norm grows like :math:`\sqrt{l}` (seed 000's Pre-LN/Post-LN post).

    Args:
        x: positive abscissae (layers), ``(n,)``.
        y: positive values, ``(n,)``.

    Returns:
        The exponent :math:`p` (:func:`numpy.polyfit` of degree 1 on the logarithms).

    Example:
        >>> layers = np.arange(1.0, 50.0)
        >>> round(power_law_exponent(layers, 3 * layers**0.5), 6)
        0.5
    """
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def tail_range(curve: np.ndarray, tail: float = 0.1) -> tuple[float, float]:
    r"""The lowest and highest value over the last ``tail`` fraction of a curve.

    The same window as :func:`plateau_level`, so a claim that reads a run's level there can show
    how far the run strays from it (e.g. Adam's spikes on a converged or stuck run).

    Args:
        curve: the recorded values of one run, ``(T,)``.
        tail: the fraction of the record (at least one point).

    Returns:
        ``(min, max)`` over the tail.

    Example:
        >>> tail_range(np.array([1.0, 0.5, 0.1, 0.1, 0.1, 9.0, 0.1, 0.1, 0.1, 0.1]), tail=0.5)
        (0.1, 9.0)
    """
    curve = np.asarray(curve)
    window = curve[-max(1, int(round(tail * len(curve)))) :]
    return float(window.min()), float(window.max())


def boundary_bracket(values: np.ndarray, outcome: np.ndarray) -> tuple[float, float, float, int]:
    r"""The transition region of a sweep's boolean outcome, bracketed by grid points.

    With the sweep ordered from one side (e.g. converging at small learning rates), the region
    runs from the last value before the first change to the first value after the last change:
    outside it the outcome is the same at every grid point, inside it the outcome may flip back
    and forth (a chaotic band). A single change gives a bracket one grid step wide. This is the
    located boundary of seed 001's Observations 1 and 2 (b2 between −1.1 and −1.2, lr between
    0.2 and 0.4), with its uncertainty from the grid and from the flips.

    Args:
        values: the swept setting, in sweep order, ``(n,)``.
        outcome: the outcome per value, ``(n,)`` bool.

    Returns:
        ``(midpoint, low, high, changes)``: the midpoint of the first change
        (:func:`locate_boundary`), the bracket's smaller and larger end, and the number of
        changes; NaNs and 0 if the outcome never changes.

    Example:
        >>> boundary_bracket(np.array([0.0, 1, 2, 3, 4]), np.array([1, 1, 0, 1, 0], bool))
        (1.5, 1.0, 4.0, 3)
    """
    values, outcome = np.asarray(values, dtype=np.float64), np.asarray(outcome, dtype=bool)
    midpoint, changes = locate_boundary(values, outcome)
    if not changes:
        return float("nan"), float("nan"), float("nan"), 0
    flips = np.flatnonzero(outcome[1:] != outcome[:-1])
    ends = values[flips[0]], values[flips[-1] + 1]
    return midpoint, float(min(ends)), float(max(ends)), changes


def running_mean(steps: np.ndarray, curve: np.ndarray, window_steps: float) -> np.ndarray:
    """Centred running mean of ``curve`` over ``window_steps`` on the (evenly spaced) recording
    grid ``steps``: at least one recording, an odd number of them, the ends padded with the end
    values.

    Args:
        steps: recording steps ``(T,)``, evenly spaced.
        curve: the recorded values ``(T,)``.
        window_steps: the window's length in steps.

    Returns:
        ``(T,)`` the smoothed curve.

    Example:
        >>> running_mean(np.arange(5.0), np.array([0, 1, 0, 1, 0.0]), 3).round(3).tolist()
        [0.333, 0.333, 0.667, 0.333, 0.333]
    """
    spacing = float(steps[1] - steps[0]) if len(steps) > 1 else 1.0
    width = max(1, int(round(window_steps / spacing)))
    width += 1 - width % 2  # odd: centred
    padded = np.pad(np.asarray(curve, np.float64), width // 2, mode="edge")
    return np.convolve(padded, np.ones(width) / width, mode="valid")
