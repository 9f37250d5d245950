r"""Which activation calls a forward pass makes, with each call's input before any in-place
write, its output, its unit axis and the layer that produced its input.

A *layer* of the probe is one activation **call**: a module called twice (ResNet's
``BasicBlock`` reuses one ``nn.ReLU(inplace=True)``) is two layers. The parts, each its own
module (every name is importable from here too):

* :mod:`relulab.probe.tables` — what is intercepted: the activation modules
  (:data:`ACTIVATION_MODULES`, the composite ones of :data:`COMPOSITE_ACTIVATIONS`), the
  activation functions (:data:`ACTIVATION_FUNCTIONS`) and the producers of a feature axis
  (:data:`PRODUCER_FUNCTIONS`, :data:`PRODUCER_MODULES`), each with its family;
* :mod:`relulab.probe.intercept` — how: :class:`CallRecorder` hooks every module and sees every
  torch function call, and names each activation call (``layer1.0.relu#1``,
  ``layers.0:relu#0``);
* :mod:`relulab.probe.unit_axis` — which axis of a call's input holds the units, from the layer
  that produced it (:func:`resolve_unit_axis`), and its kinks;
* :mod:`relulab.probe.batching` — how a call's tensors are reduced over positions and batches
  (:func:`unit_rows`, :class:`LayerAccumulator`), padded tokens left out (:func:`token_mask`).
  The probe and the monitor share these rules.
"""

from relulab.probe.batching import (
    LayerAccumulator,
    ProbeError,
    token_mask,
    unit_rows,
    zero_padding,
)
from relulab.probe.intercept import RECENT_PRODUCERS, CallRecorder
from relulab.probe.tables import (
    ACTIVATION_FUNCTIONS,
    ACTIVATION_MODULES,
    COMPOSITE_ACTIVATIONS,
    FAMILIES,
    PRODUCER_FUNCTIONS,
    PRODUCER_MODULES,
    activation_family,
    family_of,
)
from relulab.probe.unit_axis import Producer, resolve_unit_axis

__all__ = [
    "ACTIVATION_FUNCTIONS",
    "ACTIVATION_MODULES",
    "COMPOSITE_ACTIVATIONS",
    "FAMILIES",
    "PRODUCER_FUNCTIONS",
    "PRODUCER_MODULES",
    "RECENT_PRODUCERS",
    "CallRecorder",
    "LayerAccumulator",
    "ProbeError",
    "Producer",
    "activation_family",
    "family_of",
    "resolve_unit_axis",
    "token_mask",
    "unit_rows",
    "zero_padding",
]
