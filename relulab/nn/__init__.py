"""Activations (ReLU−b, …) and model families as ordinary ``torch.nn`` modules."""

from relulab.nn.activations import ACTIVATION_NAMES, Activation, ReLUMinusB, get_activation
from relulab.nn.models import MLP, ResidualToy, activation_module
from relulab.nn.single_neuron import SingleNeuron

__all__ = [
    "ACTIVATION_NAMES",
    "MLP",
    "Activation",
    "ReLUMinusB",
    "ResidualToy",
    "SingleNeuron",
    "activation_module",
    "get_activation",
]
