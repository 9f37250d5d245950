"""Diagnostics via forward/backward hooks, usable on any ``nn.Module`` with ReLU-family
activations: unit states, kinks, Δ, sample-mean/variance ratios, gradients, effective rank, R²."""

from relulab.probe.core import ACTIVATION_TYPES, LayerProbe, ProbeResult, effective_rank, probe

__all__ = ["ACTIVATION_TYPES", "LayerProbe", "ProbeResult", "effective_rank", "probe"]
