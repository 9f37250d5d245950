"""One module (or package) per study: presets, the work to run, figures and the claims scorecard."""

from __future__ import annotations

from relulab.experiments import (
    anisotropy,
    bias_after_relu,
    correlated_init,
    early_linearization,
    init_training,
    linearization_images,
    prepost_ln,
    sample_variance,
    single_neuron,
)
from relulab.experiments.base import Analysis, Claim, Experiment, Figure, Unit

__all__ = ["Analysis", "Claim", "Experiment", "Figure", "Unit", "REGISTRY", "get_experiment"]

REGISTRY: dict[str, Experiment] = {
    e.name: e
    for e in (
        single_neuron.EXPERIMENT,
        sample_variance.EXPERIMENT,
        prepost_ln.EXPERIMENT,
        anisotropy.EXPERIMENT,
        bias_after_relu.EXPERIMENT,
        correlated_init.EXPERIMENT,
        early_linearization.EXPERIMENT,
        init_training.EXPERIMENT,
        linearization_images.EXPERIMENT,
    )
}


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(REGISTRY)}") from None
