"""Diagnostics of any ``nn.Module``'s activations, one layer per activation call (modules and
functions alike): unit states, kinks, Δ, sample-mean/variance ratios, per-sample gradients,
effective rank, R² — in the train or eval mode, the model left as it was found.

The statistics themselves are defined once, in :mod:`relulab.nn.statistics`; ``effective_rank``
is re-exported here for convenience. Definitions, unit axis, call naming and modes:
``docs/probe.md``."""

from relulab.nn.statistics import effective_rank
from relulab.probe.calls import ACTIVATION_FUNCTIONS, ACTIVATION_MODULES, resolve_unit_axis
from relulab.probe.core import ACTIVATION_TYPES, MODES, LayerProbe, ProbeResult, preserved, probe

__all__ = [
    "ACTIVATION_FUNCTIONS",
    "ACTIVATION_MODULES",
    "ACTIVATION_TYPES",
    "MODES",
    "LayerProbe",
    "ProbeResult",
    "effective_rank",
    "preserved",
    "probe",
    "resolve_unit_axis",
]
