"""The sample-variance study's metrics: the numbers beside the claims (the infinite-width
references, every scheme's gradient slope, per width the ratio's agreement with the theory and
the deep units' states, and the extremes the family claims used to judge)."""

from __future__ import annotations

import numpy as np

from relulab.experiments.base import Results
from relulab.experiments.sample_variance import readings as rd
from relulab.experiments.sample_variance.config import SampleVarianceConfig
from relulab.theory import batchnorm_gradient_slope, batchnorm_sample_std, sample_statistics

__all__ = ["metrics"]


def _tables(results: Results, config: SampleVarianceConfig) -> dict[int, np.ndarray]:
    return {w: rd.ratio_curves(results, w) for w in config.widths}


def _width_metrics(results: Results, config: SampleVarianceConfig) -> dict[str, float]:
    corrected = rd.corrected_theory(config)
    metrics = {}
    for width in config.widths:
        result = rd.width_result(results, width)
        measured = result.ratio.mean(0)
        metrics[f"fraction_below_sample_bias_corrected_theory_width_{width}"] = float(
            np.mean(measured <= corrected)
        )
        metrics[f"ratio_mean_abs_deviation_width_{width}"] = float(
            np.mean(np.abs(measured[1:] - corrected[1:]))
        )
        metrics[f"ratio_last_layer_width_{width}"] = float(measured[-1])
        metrics[f"saturation_layer_width_{width}"] = rd.saturation_layer(
            measured, config.saturation_level
        )
        metrics[f"on_or_off_last_layer_width_{width}"] = float(result.on_or_off_last.mean())
    return metrics


def _family_metrics(results: Results, config: SampleVarianceConfig) -> dict[str, float]:
    """The extremes the claims used to judge (now metrics): the largest excess of the
    network-mean r_l over the corrected theory (all widths, and per width), and the smallest
    network-mean rise of r through a ReLU over the layers."""
    tables = _tables(results, config)
    values = {"bound_largest_excess": rd.largest_excess(tables, config)}
    for width, table in tables.items():
        values[f"bound_largest_excess_width_{width}"] = rd.largest_excess({width: table}, config)
    kaiming = rd.gradient_unit(results, "kaiming")
    rise = (kaiming.activation_ratio / kaiming.linear_ratio).mean(0)
    values["relu_rise_smallest_over_layers"] = float(rise.min())
    return values


def metrics(results: Results, config: SampleVarianceConfig) -> dict[str, float]:
    """The infinite-width references, the slope of every scheme (and of scale+bias per trend
    width), per width the ratio's agreement with the theory, its last value, where it
    flattens and the deep units' states, and the extremes of the family claims."""
    theory = sample_statistics(config.depth)
    values = {
        "theory_m_over_v_last_layer": float(theory.mean_to_std_ratio[-1]),
        "theory_v_over_sigma_last_layer": float(theory.std_over_sigma[-1]),
        "predicted_gradient_slope": batchnorm_gradient_slope(),
        "sigma_s_theory": batchnorm_sample_std(),
    }
    for scheme, slope in rd.slope_estimates(results, config).items():
        values[f"gradient_slope_{scheme}"] = float(slope)
    for width, slope in rd.scale_bias_trend(results, config).items():
        values[f"gradient_slope_scale_bias_width_{width}"] = float(slope)
    values.update(_width_metrics(results, config))
    values.update(_family_metrics(results, config))
    return values
