r"""Finite-sample behaviour of the estimators the experiments report.

* :func:`sample_bias_corrected_ratio` — what the sample mean-to-std ratio :math:`r_l` of seed
  002 (eq. 9) reads on n samples when its infinite-sample value is r.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sample_bias_corrected_ratio"]


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
