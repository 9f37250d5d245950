"""Diagnostics via forward/backward hooks, usable on any ``nn.Module`` with ReLU-family
activations: unit states, kinks, Δ, sample-mean/variance ratios, gradients, effective rank, R².

The statistics themselves are defined once, in :mod:`relulab.nn.statistics`; ``effective_rank``
is re-exported here for convenience."""

from relulab.nn.statistics import effective_rank
from relulab.probe.core import ACTIVATION_TYPES, LayerProbe, ProbeResult, probe

__all__ = ["ACTIVATION_TYPES", "LayerProbe", "ProbeResult", "effective_rank", "probe"]
