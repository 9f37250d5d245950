r"""Finite-sample behaviour of the estimators the experiments report.

* :func:`sample_bias_corrected_ratio` — what the sample mean-to-std ratio :math:`r_l` of seed
  002 (eq. 9) reads on n samples when its infinite-sample value is r.
* :func:`same_sign_fraction` — the share of units that are dead or always on over n samples,
  given the ratio r of their layer.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sample_bias_corrected_ratio", "same_sign_fraction"]


def sample_bias_corrected_ratio(ratio: np.ndarray | float, n_samples: int) -> np.ndarray:
    r"""The ratio seed 002's estimator (eq. 9) returns on ``n`` samples when the true one is r.

    Per unit, the sample mean over n i.i.d. samples adds :math:`v^2/n` to the squared mean
    :math:`m^2`, and the (biased, divide-by-n) sample variance has expectation
    :math:`v^2 (n-1)/n`. Pooled over many units [derived]:

    .. math::
        E[r_{\mathrm{emp}}^2] \approx \frac{m^2 + v^2/n}{v^2 (n-1)/n}
        = \frac{n r^2 + 1}{n - 1}, \qquad r = m/v.

    So even units with zero mean show :math:`r_{\mathrm{emp}} \approx 1/\sqrt{n-1}`; at n = 100
    samples (seed 002 §3.2) the measured ratio sits above the infinite-sample one.

    Args:
        ratio: the infinite-sample ratio(s) :math:`r`.
        n_samples: the number of samples n the estimator sees (at least 2).

    Returns:
        :math:`\sqrt{(n r^2 + 1)/(n - 1)}`, elementwise.

    Example:
        >>> float(sample_bias_corrected_ratio(0.0, 101))
        0.1
    """
    ratio = np.asarray(ratio)
    return np.sqrt((n_samples * ratio**2 + 1) / (n_samples - 1))


def same_sign_fraction(ratio: np.ndarray | float, n_samples: int) -> np.ndarray:
    r"""The fraction of units that keep one sign on all of n samples (dead or always on), for
    units whose sample mean is spread over the network as :math:`N(0, m^2)` and whose values
    over the samples are :math:`N(\mu, v^2)` around it, with :math:`r = m/v`.

    Seed 002 §1, §6: in deep layers "the preactivation has small fluctuations about a large
    positive mean or a large negative mean": such units are always on or always off. With
    :math:`\mu = m z`, :math:`z \sim N(0, 1)` and i.i.d. samples [derived, infinite width]:

    .. math::
        f(r) = E_z\left[\Phi(r z)^n + \Phi(-r z)^n\right] = 2\,E_z\left[\Phi(r z)^n\right],

    by Gauss–Hermite quadrature (200 nodes). :math:`f(0) = 2^{1-n}`, :math:`f \to 1` as
    :math:`r \to \infty`.

    Args:
        ratio: the ratio(s) :math:`r = m/v` of the layer.
        n_samples: the number of samples n the unit states are read on.

    Returns:
        :math:`f(r)`, elementwise.

    Example:
        >>> round(float(same_sign_fraction(0.0, 2)), 12)
        0.5
    """
    from numpy.polynomial.hermite_e import hermegauss
    from scipy.stats import norm

    nodes, weights = hermegauss(200)
    weights = weights / weights.sum()
    ratio = np.asarray(ratio, dtype=np.float64)
    values = norm.cdf(np.multiply.outer(ratio, nodes)) ** n_samples
    return 2.0 * values @ weights
