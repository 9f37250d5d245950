r"""What the probe intercepts (:mod:`relulab.probe.calls`): the activation modules, composite
activations and activation functions it records, each with its family, and the producers —
functions and modules whose output has a feature axis — that fix an activation's unit axis
(:mod:`relulab.probe.unit_axis`).

Every table here is built from the one declaration per kind in :mod:`relulab.nn.catalogue`.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from relulab.nn import catalogue
from relulab.nn.catalogue import Family

__all__ = [
    "ACTIVATION_FUNCTIONS",
    "ACTIVATION_MODULES",
    "COMPOSITE_ACTIVATIONS",
    "FAMILIES",
    "PRODUCER_ARGUMENTS",
    "PRODUCER_FUNCTIONS",
    "PRODUCER_MODULES",
    "WEIGHTED_PRODUCERS",
    "activation_family",
    "family_of",
]

#: ``rectifier``: zero output and zero gradient for :math:`z \le 0` (dead units exist);
#: ``leaky``: a non-zero gradient below zero; ``smooth``: smooth, non-zero gradient almost
#: everywhere; ``other``: a module type the caller added, of unknown kind.
FAMILIES: tuple[str, ...] = ("rectifier", "leaky", "smooth", "other")

#: Activation module types and their family.
ACTIVATION_MODULES: dict[type[nn.Module], Family] = {
    module: kind.family for kind in catalogue.ACTIVATIONS for module in kind.modules
}

#: Composite activation modules — one activation written as several operations (GPT-2's
#: ``gelu_new`` is ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``) — by the qualified name of
#: their class (or of a base class), so that no library needs importing to recognise them:
#: Hugging Face ``transformers``' ``activations`` module (5.x and 4.x names) and BLOOM's GELU.
#: Their input is the pre-activation; the operations inside are not layers of their own.
COMPOSITE_ACTIVATIONS: dict[str, Family] = {
    name: kind.family for kind in catalogue.ACTIVATIONS for name in kind.classes
}


def activation_family(module_type: type) -> Family | None:
    """The family of a recognised activation module type — one of :data:`ACTIVATION_MODULES`
    or :data:`COMPOSITE_ACTIVATIONS`, or a subclass — else ``None``.

    Args:
        module_type: a module's class.

    Returns:
        ``"rectifier"``, ``"leaky"``, ``"smooth"``, or ``None`` when not an activation.

    Example:
        >>> activation_family(nn.ReLU), activation_family(nn.Linear)
        ('rectifier', None)
        >>> where = {"__module__": "transformers.activations"}  # matched by name: no import
        >>> activation_family(type("NewGELUActivation", (nn.Module,), where))
        'smooth'
    """
    kind = catalogue.activation_kind(module_type)
    return None if kind is None else kind.family


def _functions() -> dict[Callable, tuple[str, Family]]:
    table: dict[Callable, tuple[str, Family]] = {}
    for kind in catalogue.ACTIVATIONS:
        for path in kind.functions:
            function = catalogue.function(path)
            if function is not None:
                table.setdefault(function, (kind.name, kind.family))
    return table


#: The activation functions intercepted, each with its short name and family.
ACTIVATION_FUNCTIONS: dict[Callable, tuple[str, Family]] = _functions()

#: Functions whose output has a feature axis: name, axis (−1 last, 1 channels).
PRODUCER_FUNCTIONS: dict[Callable, tuple[str, int]] = {
    function: (path.partition(".")[2], kind.unit_axis)
    for kind in catalogue.LAYERS
    for path in kind.functions
    for function in [catalogue.function(path)]
    if function is not None
}


#: Modules whose output is a producer's (last axis), by qualified class name, with the layout
#: of their ``weight``: Hugging Face's ``Conv1D`` (GPT-2's Linear: ``x @ W + b`` with ``W``
#: stored ``(in, out)``, computed by ``torch.addmm`` on the flattened input and re-viewed).
PRODUCER_MODULES: dict[str, tuple[str, str]] = {
    name: (kind.label, kind.layout or "out_in")
    for kind in catalogue.LAYERS
    if kind.module_output
    for name in kind.classes
}

#: Producers whose weight gives each unit a hyperplane ``w_j·x + b_j``, and its layout:
#: ``out_in`` (``F.linear``: row j) or ``in_out`` (``addmm(b, x, W)``: column j).
WEIGHTED_PRODUCERS = {
    **{
        path.partition(".")[2]: kind.layout
        for kind in catalogue.LAYERS
        if kind.weight_argument is not None
        for path in kind.functions
    },
    **{kind.label: kind.layout for kind in catalogue.LAYERS if kind.module_output},
}

#: The weight and bias arguments of those producers: ``(position, keyword)`` each.
PRODUCER_ARGUMENTS = {
    path.partition(".")[2]: (kind.weight_argument, kind.bias_argument)
    for kind in catalogue.LAYERS
    if kind.weight_argument is not None
    for path in kind.functions
}


def family_of(module_type: type[nn.Module]) -> Family:
    """The family of an activation module type: its own, that of the nearest known base
    class (:func:`activation_family`), or ``"other"``.

    Example:
        >>> family_of(nn.ReLU), family_of(nn.GELU), family_of(nn.Identity)
        ('rectifier', 'smooth', 'other')
    """
    return activation_family(module_type) or "other"
