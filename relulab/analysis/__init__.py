"""Analysis of stored results, shared by every experiment: pure NumPy/SciPy functions.

* :mod:`relulab.analysis.intervals` — measured values with confidence intervals.
"""

from relulab.analysis.intervals import (
    Estimate,
    correlation_ci,
    mean_ci,
    proportion_ci,
    statistic_ci,
)

__all__ = [
    "Estimate",
    "correlation_ci",
    "mean_ci",
    "proportion_ci",
    "statistic_ci",
]
