"""Activations (ReLU−b, …) and swapping them in and out of any model
(:func:`replace_activations`), model families as ordinary ``torch.nn`` modules, and the activation
statistics shared by the probe and the engine (:mod:`relulab.nn.statistics`)."""

from relulab.nn.activations import ACTIVATION_NAMES, Activation, ReLUMinusB, get_activation
from relulab.nn.convnets import AllCNNC, UNet
from relulab.nn.models import (
    MLP,
    ResidualBlockStep,
    ResidualToy,
    activation_module,
    residual_block,
)
from relulab.nn.replace import (
    ActivationReplacementWarning,
    Replaced,
    Replacement,
    replace_activations,
    restore_activations,
)
from relulab.nn.single_neuron import SingleNeuron

__all__ = [
    "ACTIVATION_NAMES",
    "MLP",
    "Activation",
    "ReLUMinusB",
    "ResidualBlockStep",
    "ResidualToy",
    "SingleNeuron",
    "activation_module",
    "residual_block",
    "get_activation",
    "AllCNNC",
    "UNet",
    "ActivationReplacementWarning",
    "Replaced",
    "Replacement",
    "replace_activations",
    "restore_activations",
]
