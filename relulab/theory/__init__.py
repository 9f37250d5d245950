"""Closed forms and mean-field maps, in NumPy/SciPy float64. Never imports torch.

* :mod:`~relulab.theory.deep_linear` — seed 004's exact two-layer linear dynamics: modes of
  the data, mode strengths (balanced and not), hitting times, the bias mode, the gated model;
* :mod:`~relulab.theory.kernels` — Gaussian expectations of activations (ReLU family exact,
  erf exact, smooth ones by quadrature, a Monte-Carlo path);
* :mod:`~relulab.theory.meanfield` — length/correlation maps with correlated weights, fixed
  points, χ1, depth scales, phase diagrams;
* :mod:`~relulab.theory.sample_variance` — seed 002's sample mean/variance split per layer;
* :mod:`~relulab.theory.single_neuron` — seed 001's exact loss plateaus.
"""

from relulab.theory.deep_linear import (
    BiasMode,
    GatedLinearPrediction,
    LinearModes,
    aligned_modes,
    bias_mode,
    data_correlations,
    function_mode_strengths,
    gated_linear_prediction,
    hitting_time,
    learning_time_constant,
    least_squares_loss,
    mode_components,
    mode_loss,
    mode_projections,
    mode_strength,
    mode_strength_unbalanced,
    modes_to_map,
    relu_hitting_delay,
)
from relulab.theory.kernels import (
    ActivationKernel,
    QuadratureKernel,
    ReLUFamilyKernel,
    arccos_j1,
    arccos_kernel,
    correlation_angle,
    get_kernel,
    monte_carlo_cross,
)
from relulab.theory.meanfield import (
    PhaseDiagram,
    chi1,
    correlation_depth_scale,
    correlation_fixed_point,
    correlation_map,
    correlation_trajectory,
    covariance_map,
    length_fixed_point,
    length_map,
    phase_diagram,
    relu_bounded_limit,
    relu_family_length_fixed_point,
)
from relulab.theory.sample_variance import (
    SampleStatistics,
    batchnorm_gradient_slope,
    batchnorm_sample_std,
    normalised_arccos_kernel,
    normalised_arccos_kernel_derivative,
    sample_statistics,
)
from relulab.theory.single_neuron import (
    best_constant_fit_loss,
    best_linear_fit_loss,
    plateau_losses,
    sample_constant_fit_loss,
    sample_linear_fit_loss,
)

__all__ = [
    "ActivationKernel",
    "BiasMode",
    "GatedLinearPrediction",
    "LinearModes",
    "PhaseDiagram",
    "QuadratureKernel",
    "ReLUFamilyKernel",
    "SampleStatistics",
    "arccos_j1",
    "aligned_modes",
    "arccos_kernel",
    "batchnorm_gradient_slope",
    "batchnorm_sample_std",
    "best_constant_fit_loss",
    "best_linear_fit_loss",
    "bias_mode",
    "chi1",
    "correlation_angle",
    "correlation_depth_scale",
    "correlation_fixed_point",
    "correlation_map",
    "correlation_trajectory",
    "covariance_map",
    "data_correlations",
    "function_mode_strengths",
    "gated_linear_prediction",
    "get_kernel",
    "hitting_time",
    "learning_time_constant",
    "least_squares_loss",
    "length_fixed_point",
    "length_map",
    "mode_components",
    "mode_loss",
    "mode_projections",
    "mode_strength",
    "mode_strength_unbalanced",
    "modes_to_map",
    "monte_carlo_cross",
    "normalised_arccos_kernel",
    "normalised_arccos_kernel_derivative",
    "phase_diagram",
    "plateau_losses",
    "relu_bounded_limit",
    "relu_family_length_fixed_point",
    "relu_hitting_delay",
    "sample_constant_fit_loss",
    "sample_linear_fit_loss",
    "sample_statistics",
]
