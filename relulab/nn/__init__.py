"""Activations (ReLU−b, …) and model families as ordinary ``torch.nn`` modules."""

from relulab.nn.activations import ACTIVATION_NAMES, Activation, ReLUMinusB, get_activation
from relulab.nn.single_neuron import SingleNeuron

__all__ = ["ACTIVATION_NAMES", "Activation", "ReLUMinusB", "SingleNeuron", "get_activation"]
