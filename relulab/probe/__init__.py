"""Diagnostics of any ``nn.Module``'s activations, one layer per activation call (modules and
functions alike, Hugging Face's composite activations as one): unit states, kinks, Δ,
sample-mean/variance ratios, per-sample gradients, effective rank (per sample and per token),
R² — on tensors or a language model's token inputs (padding left out), in the train or eval
mode, the model left as it was found — and what to try for them, from the inputs inward, each
remedy offered only where relulab's remedies benchmark measured it to help
(:mod:`relulab.probe.advice`, :mod:`relulab.probe.upstream`, :mod:`relulab.probe.evidence`).

The statistics themselves are defined once, in :mod:`relulab.nn.statistics`; ``effective_rank``
is re-exported here for convenience. Definitions, unit axis, call naming and modes:
``docs/probe.md``."""

from relulab.nn.statistics import effective_rank
from relulab.probe.advice import Advice, AdviceList, AdviceThresholds, Withheld, advise
from relulab.probe.core import (
    ACTIVATION_TYPES,
    MODES,
    LayerProbe,
    ModelRunError,
    NonFiniteWarning,
    ProbeData,
    ProbeResult,
    UnitAxisWarning,
    preserved,
    probe,
    rank_at_sample_cap,
    unit_states_by_batch_norm,
)
from relulab.probe.monitor import Monitor, MonitorConfig, MonitorWarning, Thresholds
from relulab.probe.tables import (
    ACTIVATION_FUNCTIONS,
    ACTIVATION_MODULES,
    COMPOSITE_ACTIVATIONS,
    PRODUCER_MODULES,
    activation_family,
)
from relulab.probe.unit_axis import resolve_unit_axis
from relulab.probe.upstream import InputScale, standardise

__all__ = [
    "ACTIVATION_FUNCTIONS",
    "ACTIVATION_MODULES",
    "ACTIVATION_TYPES",
    "COMPOSITE_ACTIVATIONS",
    "MODES",
    "Advice",
    "AdviceList",
    "AdviceThresholds",
    "InputScale",
    "PRODUCER_MODULES",
    "LayerProbe",
    "ModelRunError",
    "NonFiniteWarning",
    "Monitor",
    "MonitorConfig",
    "MonitorWarning",
    "ProbeData",
    "ProbeResult",
    "Thresholds",
    "UnitAxisWarning",
    "Withheld",
    "activation_family",
    "advise",
    "effective_rank",
    "preserved",
    "probe",
    "rank_at_sample_cap",
    "resolve_unit_axis",
    "standardise",
    "unit_states_by_batch_norm",
]
