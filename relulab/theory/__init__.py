"""Closed forms and mean-field maps, in NumPy/SciPy float64. Never imports torch."""

from relulab.theory.single_neuron import (
    best_constant_fit_loss,
    best_linear_fit_loss,
    plateau_losses,
    sample_constant_fit_loss,
    sample_linear_fit_loss,
)

__all__ = [
    "best_constant_fit_loss",
    "best_linear_fit_loss",
    "plateau_losses",
    "sample_constant_fit_loss",
    "sample_linear_fit_loss",
]
