"""The batched computations: one :func:`relulab.engine.train` call per preprocessing × bias
variant × activation, all seeds of it at once.

The hidden bias is the appended constant pixel ``c`` (seed 004 §3); the bias-free variant has no
constant pixel. The preprocessing and the constant pixel change the inputs and the activation
changes the architecture, so they make separate units, each with its inputs shared by its
networks. Network ``k`` draws its initial weights and its own minibatch order from seed
``1000·seed + k`` (as in the toy-task experiment): the ReLU and the linear network of one seed
and variant start from the same weights and see the same batches, while different seeds are
independent samples. Each network stops on its own when its mean per-sample training loss (on a
fixed subset of ``loss_images`` training images) first reaches its stopping loss at a recording
(``stop_loss``, or ``substitute_stop_loss`` where set; frozen from then on, its step is kept);
the effective rank of the Gram matrix of its hidden representations of the held-out images
(uncentred, as eq. 1, and centred) is taken from its parameters at that point. Recordings come
every ``early_record_every`` steps over the first ``early_steps`` (the early phase the alignment
claims judge), every ``record_every`` after (:func:`relulab.engine.dense_then_sparse`, one
``train`` call).

Unit names are declared here once: :func:`unit_name` (one unit per preprocessing, bias variant
and activation), :func:`unit_keys` and :func:`pair`; every reader reaches a unit through them, as
the typed :class:`Training` view (:func:`unit_views`: every unit is one kind).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from relulab.engine import (
    BatchedMLP,
    BatchedSGD,
    MLPSpec,
    SupervisedProblem,
    dense_then_sparse,
    train,
)
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.linearization_images.config import (
    LinearizationImagesConfig,
    load_data,
    prepared_data,
)
from relulab.nn.statistics import effective_ranks
from relulab.records import UnitView, array, curve, final
from relulab.store import UnitResult

__all__ = [
    "ACTIVATIONS",
    "Training",
    "estimate_bytes",
    "pair",
    "plan",
    "schedule",
    "unit",
    "unit_keys",
    "unit_name",
    "unit_views",
]

ACTIVATIONS = ("relu", "linear")


def unit_name(norm: str, bias: bool, activation: str) -> str:
    """``"<normalisation>-<bias|nobias>-<activation>"``.

    Example:
        >>> unit_name("pixel_mean", True, "relu")
        'pixel_mean-bias-relu'
    """
    return f"{norm}-{'bias' if bias else 'nobias'}-{activation}"


def unit_keys(config: LinearizationImagesConfig) -> list[str]:
    """Every unit name a reader of this study may use (the config's preprocessings)."""
    return [
        unit_name(norm, bias, act)
        for norm in config.normalizations
        for bias in (True, False)
        for act in ACTIVATIONS
    ]


@dataclass(frozen=True)
class Training(UnitView):
    """What every unit of this study stores: its networks' training (one preprocessing, bias
    variant and activation, a network per seed).

    Attributes:
        full_loss: ``(S, T)`` the summed loss ½Σ‖y − ŷ‖² over the ``loss_images`` training
            images at each recorded step (constant after a network's stop: it is frozen).
        validation_error: ``(S,)`` the held-out test error at the end of training — at its stop
            for a network that stopped (frozen there).
        stopped_step: ``(S,)`` the step at which each network reached its stopping loss, −1 if
            it never did.
        rank_at_stop: ``(S,)`` the effective rank of the Gram matrix of its hidden
            representations of the held-out images, from its final parameters (at its stop for
            a network that stopped).
        centred_rank_at_stop: ``(S,)`` the same with the representations centred over the
            held-out images first (each unit's mean removed: the constant pixel's common offset
            no longer counts as a dimension).
    """

    full_loss: np.ndarray = curve()
    validation_error: np.ndarray = final()
    stopped_step: np.ndarray = array()
    rank_at_stop: np.ndarray = array()
    centred_rank_at_stop: np.ndarray = array()

    @property
    def stopped(self) -> np.ndarray:
        """``(S,)`` whether each network reached its stopping loss."""
        return np.asarray(self.stopped_step) >= 0


def unit_views(config: LinearizationImagesConfig) -> dict[str, type[UnitView]]:
    """Every unit :func:`plan` produces and its view (all are :class:`Training`).

    Example:
        >>> views = unit_views(LinearizationImagesConfig(real_data=False))
        >>> len(views), views["pixel_mean-bias-relu"].__name__
        (8, 'Training')
    """
    return {name: Training for name in unit_keys(config)}


def pair(results: Mapping[str, UnitResult], norm: str, bias: bool) -> tuple[Training, Training]:
    """``(ReLU unit, linear unit)`` of one preprocessing and bias variant, read as
    :class:`Training`: the same seeds, the same initial weights and batches."""
    return unit(results, norm, bias, "relu"), unit(results, norm, bias, "linear")


def unit(results: Mapping[str, UnitResult], norm: str, bias: bool, activation: str) -> Training:
    """One unit read as :class:`Training` (checked against its declaration first)."""
    name = unit_name(norm, bias, activation)
    return Training.read(results[name], name)


def schedule(config: LinearizationImagesConfig) -> tuple[int, int, int]:
    """``(training images, steps per epoch, steps)``: ``epochs`` over the training set in
    batches of ``batch_size`` (a partial last batch is dropped) [D]."""
    n_train = min(config.train_images, len(load_data(config).train_images))
    per_epoch = n_train // config.batch_size
    return n_train, per_epoch, max(1, math.ceil(config.epochs * per_epoch))


def _network_seed(config: LinearizationImagesConfig, k: int) -> int:
    return config.seed * 1000 + k


def _ranks(model: BatchedMLP, x_eval: torch.Tensor) -> dict[str, np.ndarray]:
    """Per network, the effective rank of the Gram matrix of its hidden representations of the
    held-out images (eq. 1, uncentred) and of the same representations centred over the images
    (each unit's mean removed), ``(S,)`` each."""
    with torch.no_grad():
        hidden = model.trace(x_eval).activations[0]  # (S, eval_images, width)
        centred = hidden - hidden.mean(dim=-2, keepdim=True)
        return {
            "rank_at_stop": effective_ranks(hidden @ hidden.transpose(-1, -2)).numpy(),
            "centred_rank_at_stop": effective_ranks(centred @ centred.transpose(-1, -2)).numpy(),
        }


def _train_unit(config: LinearizationImagesConfig, norm: str, bias: bool, activation: str) -> Unit:
    name = unit_name(norm, bias, activation)
    c = config.constant if bias else 0.0
    conditions = [
        {"normalization": norm, "c": c, "activation": activation, "seed": k}
        for k in range(config.seeds)
    ]
    seeds = [_network_seed(config, k) for k in range(config.seeds)]

    def run(context: RunContext) -> UnitResult:
        data = prepared_data(config, norm, c)
        x, y, x_eval, y_eval = (
            t.to(dtype=context.dtype, device=context.device)
            for t in (data.x, data.y, data.x_eval, data.y_eval)
        )
        index = data.loss_index.to(context.device)
        _, _, steps = schedule(config)
        spec = MLPSpec((x.shape[-1], config.width, y.shape[-1]), activation=activation, bias=False)
        model = BatchedMLP(
            spec,
            config.seeds,
            init="normal",
            init_scale=math.sqrt(config.init_variance),
            seeds=seeds,
            dtype=context.dtype,
            device=context.device,
        )
        problem = SupervisedProblem(
            model,
            x,
            y,
            config.minibatch_loss,
            batch_size=config.batch_size,
            validation=(x_eval, y_eval),
            order_seeds=seeds,
            record_error=True,
            observe_data=(x[index], y[index]),
        )
        level = config.stop_level * len(index)  # the sum loss at the per-sample stopping level

        def reached(values: dict[str, torch.Tensor]) -> torch.Tensor:
            return values["full_loss"] <= level

        with context.progress(steps, name) as progress:
            result = train(
                problem,
                BatchedSGD(problem.params, config.rate),
                steps,
                dense_then_sparse(
                    steps, config.early_steps, config.early_record_every, config.record_every
                ),
                progress,
                reached,
            )
        arrays = {"stopped_step": result.stopped_step.astype(np.int64)}
        arrays |= _ranks(model, x_eval)
        return UnitResult.from_training(result, conditions, arrays)

    return Unit(name, run)


def plan(config: LinearizationImagesConfig) -> list[Unit]:
    """Per preprocessing, with and without the constant pixel: a ReLU and a linear unit."""
    return [
        _train_unit(config, norm, bias, act)
        for norm in config.normalizations
        for bias in (True, False)
        for act in ACTIVATIONS
    ]


def estimate_bytes(config: LinearizationImagesConfig) -> int:
    """Peak memory in bytes: the full-data trace at a recording (pre-activations and
    activations of every network, float64 at most) and the inputs dominate."""
    n_train = min(config.train_images, 60_000)
    d_in = 1025 if config.dataset == "cifar10" else 785
    trace = 3 * 8 * config.seeds * min(config.loss_images, n_train) * config.width
    inputs = 8 * n_train * d_in * 3
    return trace + inputs + 100_000_000
