"""Analysis of stored results, shared by every experiment: pure NumPy/SciPy functions.

* :mod:`relulab.analysis.intervals` — measured values with confidence intervals.
* :mod:`relulab.analysis.multiplicity` — many intervals judged together (Holm, Bonferroni).
* :mod:`relulab.analysis.selection` — picking networks by their condition, group means.
* :mod:`relulab.analysis.curves` — plateaus, first crossings, log and power-law slopes,
  interpolated crossings, boundaries of a sweep.
* :mod:`relulab.analysis.estimators` — finite-sample bias of the reported estimators.
* :mod:`relulab.analysis.divergence` — which trained networks diverged, and comparisons in which
  a diverged network ranks last.
* :mod:`relulab.analysis.alignment` — how closely two loss curves follow each other; variance
  of a representation explained by features.
"""

from relulab.analysis.alignment import (
    LossAlignment,
    early_window,
    loss_alignment,
    paired_alignments,
    variance_explained,
)
from relulab.analysis.curves import (
    boundary_bracket,
    first_below,
    fit_log_slope,
    interpolated_crossing,
    locate_boundary,
    longest_plateau,
    plateau_level,
    power_law_exponent,
    running_mean,
    tail_range,
)
from relulab.analysis.divergence import (
    DivergencePolicy,
    divergence_counts,
    divergence_text,
    ranked_last,
    superiority_ci,
)
from relulab.analysis.estimators import same_sign_fraction, sample_bias_corrected_ratio
from relulab.analysis.intervals import (
    Estimate,
    argmin_ci,
    correlation_ci,
    mean_ci,
    mean_difference_ci,
    proportion_ci,
    rows_statistic_ci,
    statistic_ci,
)
from relulab.analysis.multiplicity import holm, p_beyond, simultaneous_level
from relulab.analysis.selection import first_match, group_means, where

__all__ = [
    "DivergencePolicy",
    "divergence_counts",
    "divergence_text",
    "ranked_last",
    "superiority_ci",
    "Estimate",
    "correlation_ci",
    "first_below",
    "first_match",
    "fit_log_slope",
    "group_means",
    "interpolated_crossing",
    "locate_boundary",
    "longest_plateau",
    "mean_ci",
    "plateau_level",
    "power_law_exponent",
    "running_mean",
    "proportion_ci",
    "sample_bias_corrected_ratio",
    "statistic_ci",
    "where",
    "argmin_ci",
    "holm",
    "p_beyond",
    "boundary_bracket",
    "tail_range",
    "rows_statistic_ci",
    "simultaneous_level",
    "same_sign_fraction",
    "mean_difference_ci",
    "LossAlignment",
    "early_window",
    "loss_alignment",
    "paired_alignments",
    "variance_explained",
]
