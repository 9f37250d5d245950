"""Batched training of many small networks: one computation per step for all of them."""

from relulab.engine.optim import BatchedAdam, BatchedSGD
from relulab.engine.recorder import Recorder, recording_steps
from relulab.engine.single_neuron import STATE_CODES, BatchedSingleNeuron
from relulab.engine.train import BatchedProblem, TrainResult, train

__all__ = [
    "STATE_CODES",
    "BatchedAdam",
    "BatchedProblem",
    "BatchedSGD",
    "BatchedSingleNeuron",
    "Recorder",
    "TrainResult",
    "recording_steps",
    "train",
]
