"""Batched training of many small networks: one computation per step for all of them.

Every model family is a :class:`BatchedFamily`: ``forward(x)`` gives the outputs, ``trace(x)``
a :class:`Trace` of every layer, and ``manual_backward`` declares hand-written gradients
(``loss_and_grads``). :func:`batched_linear` is the batched affine map they are built from.
"""

from relulab.engine.data_init import LayerInitReport, scale_init_batched_
from relulab.engine.family import BatchedFamily, LossName, Trace, batched_linear
from relulab.engine.forward import (
    ForwardStatistics,
    activation_gradient_profile,
    forward_statistics,
)
from relulab.engine.functional import (
    FUNCTIONAL_LOSSES,
    FunctionalFamily,
    FunctionalProblem,
    LayerSums,
)
from relulab.engine.init import INIT_SCHEMES, init_weight_stack
from relulab.engine.models import BatchedMLP, BatchedResidualToy, MLPSpec, ResidualToySpec
from relulab.engine.optim import BatchedAdam, BatchedSGD
from relulab.engine.recorder import Recorder, dense_then_sparse, recording_steps
from relulab.engine.single_neuron import STATE_CODES, BatchedSingleNeuron
from relulab.engine.streams import Minibatches, PerNetworkBatches, minibatches
from relulab.engine.supervised import SupervisedProblem
from relulab.engine.train import BatchedProblem, TrainResult, train

__all__ = [
    "INIT_SCHEMES",
    "STATE_CODES",
    "BatchedFamily",
    "ForwardStatistics",
    "LossName",
    "Trace",
    "activation_gradient_profile",
    "batched_linear",
    "forward_statistics",
    "BatchedMLP",
    "BatchedResidualToy",
    "MLPSpec",
    "ResidualToySpec",
    "SupervisedProblem",
    "LayerInitReport",
    "init_weight_stack",
    "scale_init_batched_",
    "BatchedAdam",
    "BatchedProblem",
    "BatchedSGD",
    "BatchedSingleNeuron",
    "Recorder",
    "TrainResult",
    "dense_then_sparse",
    "recording_steps",
    "train",
    "FUNCTIONAL_LOSSES",
    "FunctionalFamily",
    "FunctionalProblem",
    "LayerSums",
    "Minibatches",
    "PerNetworkBatches",
    "minibatches",
]
