"""The work of ``init-training``: at-init ratio profiles, then one training unit per task,
optimiser and initialisation (all learning rates and seeds in one batched computation).

* ``ratios-{task}``: ``ratio_networks`` Kaiming-initialised copies (relulab.init's
  ``kaiming_normal``: :math:`W \\sim N(0, 2/\\text{fan-in})`, biases 0, seed eq. 2) of the
  task's architecture; per copy and per Linear/Conv layer the ratio of seed eq. 9 over the
  first ``ratio_images`` training images (:meth:`relulab.engine.FunctionalFamily.layer_statistics`).
* ``train-{task}-{optimiser}-{init}``: copies for every learning rate × seed, trained as one
  :class:`relulab.engine.FunctionalFamily` (``torch.func``) by the engine's batched SGD
  (momentum 0.9) or Adam with per-network learning rates. Copies of seed ``j`` share their data
  stream (minibatch order and augmentation) and, for ``scale`` and ``scale_bias``, the N(0, 1)
  draw before the data-dependent rescaling — so the two inits are compared pairwise by seed.
  ``scale`` / ``scale_bias`` measure each copy on ``init_batches`` minibatches of its own
  stream (seed §5.1). ``kaiming`` and ``batchnorm`` use ``kaiming_normal``. Recorded: the
  minibatch loss and, on ``probe_images`` fixed training images, every layer's ratio. A
  training checkpoints itself in the run directory (``context.checkpoint``): a killed unit
  resumes from its last checkpoint and ends bit for bit as an uninterrupted one.

Unit names are declared here once: :class:`Key` names the two kinds of unit and
:func:`ratios_key` / :func:`train_key` build a unit's name from its task (optimiser, init);
every reader reaches a unit through them, and reads it through its declared view
(:func:`unit_views`): :class:`AtInit` for a ratio unit, :func:`training_view` (the loss, every
layer's ratio, the label entropy) for a training unit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, make_dataclass
from enum import StrEnum
from functools import partial
from typing import ClassVar

import numpy as np
import torch
from torch import Tensor

from relulab.engine import (
    BatchedAdam,
    BatchedSGD,
    FunctionalFamily,
    FunctionalProblem,
    LayerSums,
    PerNetworkBatches,
    TrainResult,
    train,
)
from relulab.engine.streams import Minibatches, Transform, minibatches
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.init_training.config import (
    LAYERS,
    InitTrainingConfig,
    TaskData,
    isbi_share,
    lr_grid,
    task_data,
    width,
)
from relulab.nn import AllCNNC, UNet
from relulab.records import UnitView, array, curve, final
from relulab.store import UnitResult
from relulab.tasks.images import isbi_augment, pad_and_crop

__all__ = [
    "AtInit",
    "Key",
    "Training",
    "architecture",
    "estimate_bytes",
    "layer_ratios",
    "plan",
    "ratio_images",
    "ratios_key",
    "seeds_of",
    "train_key",
    "training_view",
    "unit_keys",
    "unit_views",
]

DTYPES = {"float32": torch.float32, "float64": torch.float64}


class Key(StrEnum):
    """The study's kinds of unit; a unit's name is its kind and its parameters."""

    RATIOS = "ratios"
    TRAIN = "train"


def ratios_key(task: str) -> str:
    """The at-init ratio unit of ``task``.

    Example:
        >>> ratios_key("cifar10")
        'ratios-cifar10'
    """
    return f"{Key.RATIOS}-{task}"


def train_key(task: str, optimiser: str, init: str) -> str:
    """The training unit of ``task``, ``optimiser`` and ``init`` (every lr × seed).

    Example:
        >>> train_key("isbi2012", "adam", "scale_bias")
        'train-isbi2012-adam-scale_bias'
    """
    return f"{Key.TRAIN}-{task}-{optimiser}-{init}"


def unit_keys(config: InitTrainingConfig) -> list[str]:
    """Every unit name a reader of this study may use at ``config``."""
    keys = [ratios_key(task) for task in config.tasks]
    if config.train:
        keys += [
            train_key(task, optimiser, init)
            for task in config.tasks
            for optimiser in config.optimisers
            for init in config.inits
        ]
    return keys


# ---------------------------------------------------------------------------------------------
# What each kind of unit stores.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AtInit(UnitView):
    """A ratio unit: per network and Linear/Conv layer the ratio r of seed eq. 9 with a
    channel's statistics over samples and positions, and with a feature per (channel,
    position) (absent from units stored before it was recorded)."""

    ratio: np.ndarray = curve()
    ratio_per_position: np.ndarray | None = curve(optional=True)
    last: np.ndarray = final()


def _ratio_field(layer: int) -> str:
    return f"ratio_{layer}"


@dataclass(frozen=True)
class Training(UnitView):
    """A training unit: per network (every lr × seed) the minibatch loss, and the label
    entropy of the task's training labels; :func:`training_view` adds every layer's ratio."""

    layers: ClassVar[int] = 0  # the network's Linear/Conv layers (set by training_view)
    loss: np.ndarray = curve()
    label_entropy: np.ndarray = array()

    def layer_ratios(self, rows: np.ndarray) -> np.ndarray:
        """Every layer's ratio during training for ``rows``: ``(runs, layers, T)``."""
        return np.stack(
            [getattr(self, _ratio_field(k))[rows] for k in range(1, self.layers + 1)], axis=1
        )


@functools.cache
def training_view(layers: int) -> type[Training]:
    """The view of a training unit of a network with ``layers`` Linear/Conv layers: the loss
    and ``ratio_1`` … ``ratio_<layers>``.

    Example:
        >>> training_view(10).schema().curves[-1]
        'ratio_10'
    """
    view = make_dataclass(
        f"Training{layers}",
        [(_ratio_field(k), np.ndarray, curve()) for k in range(1, layers + 1)],
        bases=(Training,),
        frozen=True,
        namespace={"layers": layers},
    )
    view.__module__ = __name__
    return view


def unit_views(config: InitTrainingConfig) -> dict[str, type[UnitView]]:
    """Every unit :func:`plan` produces and its view.

    Example:
        >>> from relulab.experiments.init_training.config import PRESETS
        >>> views = unit_views(PRESETS["quick"])
        >>> views["ratios-cifar10"].__name__, views["train-isbi2012-sgd-scale"].__name__
        ('AtInit', 'Training23')
    """
    views: dict[str, type[UnitView]] = {ratios_key(task): AtInit for task in config.tasks}
    if config.train:
        views |= {
            train_key(task, optimiser, init): training_view(LAYERS[task])
            for task in config.tasks
            for optimiser in config.optimisers
            for init in config.inits
        }
    return views


def architecture(
    config: InitTrainingConfig, task: str, batchnorm: bool = False, training: bool = False
) -> Callable[[], torch.nn.Module]:
    """The factory of the task's network (ALL-CNN-C for CIFAR-10, the UNet for ISBI), at its
    at-init width or, with ``training``, its training width (:func:`config.width`)."""
    data = task_data(config, task)
    channels = data.x.shape[1]
    build = AllCNNC if task == "cifar10" else UNet
    return partial(build, width(config, task, training), channels, data.n_classes, batchnorm)


def ratio_images(config: InitTrainingConfig, task: str) -> int:
    """How many training images the at-init ratio is measured on."""
    if task == "cifar10":
        return config.ratio_images
    return isbi_share(config.ratio_images, 10, 2)


def _ratio_batch(config: InitTrainingConfig, task: str) -> int:
    return config.ratio_batch if task == "cifar10" else max(1, config.ratio_batch // 10)


def _probe_count(config: InitTrainingConfig, task: str) -> int:
    return config.probe_images if task == "cifar10" else isbi_share(config.probe_images, 16, 1)


def seeds_of(context: RunContext, name: str, count: int) -> list[int]:
    """``count`` network seeds drawn from the run's generator for ``name``."""
    return torch.randint(0, 2**62, (count,), generator=context.generator(name)).tolist()


# ---------------------------------------------------------------------------------------------
# At initialisation.
# ---------------------------------------------------------------------------------------------
GRID = 32  # the per-(channel, position) ratio reads at most GRID × GRID positions of a map


def _grid(u: Tensor) -> Tensor:
    """A convolution's output ``(S, N, C, H, W)`` on a regular grid of at most GRID × GRID
    positions, flattened to ``(S, N, features)`` with a feature per (channel, position); a
    Linear's ``(S, N, d)`` as it is."""
    if u.dim() < 5:
        return u
    step_h, step_w = -(-u.shape[-2] // GRID), -(-u.shape[-1] // GRID)
    return u[..., ::step_h, ::step_w].flatten(2)


def layer_ratios(family: FunctionalFamily, x: Tensor, batch_size: int) -> tuple[Tensor, Tensor]:
    """Per copy and Linear/Conv layer, ``(S, layers)`` each, from one traced pass over ``x``:
    the ratio of seed eq. 9 with a convolution's feature its channel, statistics over samples
    *and* positions (exactly :meth:`FunctionalFamily.layer_statistics`), and with a feature one
    (channel, position), statistics over samples only (on :func:`_grid`'s positions)."""
    pooled: list[list] = [[], [], []]
    per_position: list[list] = [[], [], []]
    for outputs in family.layer_outputs(x, batch_size):
        for k, u in enumerate(outputs):
            u = u.to(torch.float64)
            grid = _grid(u)
            dims = (1,) + tuple(range(3, u.dim()))
            parts = (
                (pooled, u.sum(dim=dims), u.square().sum(dim=dims), u[0].numel() // u.shape[2]),
                (per_position, grid.sum(dim=1), grid.square().sum(dim=1), grid.shape[1]),
            )
            for sums, total, square, count in parts:
                if k == len(sums[0]):
                    sums[0].append(torch.zeros_like(total))
                    sums[1].append(torch.zeros_like(total))
                    sums[2].append(0)
                sums[0][k] += total
                sums[1][k] += square
                sums[2][k] += count
    return LayerSums(*pooled).ratio(), LayerSums(*per_position).ratio()


def _ratio_unit(config: InitTrainingConfig, task: str) -> Unit:
    def run(context: RunContext) -> UnitResult:
        data = task_data(config, task)
        x = data.x[: ratio_images(config, task)].to(context.device, context.dtype)
        seeds = seeds_of(context, ratios_key(task), config.ratio_networks)
        chunks = [
            seeds[i : i + config.ratio_chunk] for i in range(0, len(seeds), config.ratio_chunk)
        ]
        ratios, per_position = [], []
        with context.progress(len(chunks), f"{task}: ratio at init, {len(seeds)} nets") as done:
            for chunk in chunks:
                family = FunctionalFamily(
                    architecture(config, task),
                    len(chunk),
                    seeds=chunk,
                    init="kaiming_normal",
                    dtype=context.dtype,
                    device=context.device,
                )
                pooled, positions = layer_ratios(family, x, _ratio_batch(config, task))
                ratios.append(pooled.cpu().numpy())
                per_position.append(positions.cpu().numpy())
                done(1)
        ratio = np.concatenate(ratios)
        layers = np.arange(1, ratio.shape[1] + 1)
        conditions = [{"task": task, "seed": s} for s in seeds]
        curves = {"ratio": ratio, "ratio_per_position": np.concatenate(per_position)}
        return UnitResult.forward_only(conditions, layers, curves, {"last": ratio[:, -1]})

    return Unit(ratios_key(task), run)


# ---------------------------------------------------------------------------------------------
# Training.
# ---------------------------------------------------------------------------------------------
def _augmenter(config: InitTrainingConfig, task: str) -> Transform | None:
    if not config.augment:
        return None
    if task == "cifar10":
        return lambda x, y, g: (pad_and_crop(x, 4, generator=g), y)  # seed §5.2
    return lambda x, y, g: isbi_augment(x, y, generator=g)  # seed §5.2


def _streams(
    config: InitTrainingConfig,
    task: str,
    data: TaskData,
    context: RunContext,
    device: torch.device,
    dtype: torch.dtype,
) -> list[Minibatches]:
    """One minibatch stream per seed index (the same for every init and optimiser)."""
    batch = config.cifar_batch if task == "cifar10" else config.isbi_batch
    batch = min(batch, len(data.x))
    x, y = data.x.to(device, dtype), data.y.to(device)
    streams = []
    for j in range(config.n_seeds):
        generator = context.generator(f"data-{task}-{j}")
        streams.append(minibatches(x, y, batch, generator, _augmenter(config, task)))
    return streams


def _init_samples(
    config: InitTrainingConfig,
    task: str,
    data: TaskData,
    context: RunContext,
    device: torch.device,
    dtype: torch.dtype,
) -> list[Tensor]:
    """Per seed index, ``init_batches`` minibatches of its own stream (seed §5.1)."""
    streams = _streams(config, task, data, context, device, dtype)
    return [torch.cat([next(stream)[0] for _ in range(config.init_batches)]) for stream in streams]


def _optimiser(
    config: InitTrainingConfig, optimiser: str, params: Sequence[Tensor], lrs: Sequence[float]
) -> BatchedSGD | BatchedAdam:
    if optimiser == "sgd":
        return BatchedSGD(params, lrs, momentum=config.momentum)
    return BatchedAdam(params, lrs, betas=config.adam_betas, eps=config.adam_eps)


def _observer(x_probe: Tensor) -> Callable[[FunctionalFamily], dict[str, Tensor]]:
    """Every layer's ratio (seed eq. 9) on the fixed probe images, per network."""

    def observe(family: FunctionalFamily) -> dict[str, Tensor]:
        ratio = family.layer_statistics(x_probe).ratio()
        return {
            f"ratio_{k + 1}": ratio[:, k].to(family.params[0].dtype) for k in range(ratio.shape[1])
        }

    return observe


def _train_unit(config: InitTrainingConfig, task: str, optimiser: str, init: str) -> Unit:
    name = train_key(task, optimiser, init)

    def run(context: RunContext) -> UnitResult:
        device, dtype = context.device, context.dtype
        data = task_data(config, task)
        lrs = lr_grid(config, optimiser)
        net_seeds = seeds_of(context, f"nets-{task}", config.n_seeds)  # shared by every init
        grid = [(lr, j) for lr in lrs for j in range(config.n_seeds)]
        init_samples = _init_samples(config, task, data, context, device, dtype)
        scheme = init if init in ("scale", "scale_bias") else "kaiming_normal"
        chunk = config.train_chunk or len(grid)
        probe = data.x[: _probe_count(config, task)].to(device, dtype)
        results = []
        with context.progress(config.steps * len(grid), name) as done:
            for start in range(0, len(grid), chunk):
                part = grid[start : start + chunk]
                seed_index = [j for _, j in part]
                family = FunctionalFamily(
                    architecture(config, task, batchnorm=init == "batchnorm", training=True),
                    len(part),
                    seeds=[net_seeds[j] for j in seed_index],
                    init=scheme,
                    init_data=partial(_sample_of, init_samples, seed_index),
                    dtype=dtype,
                    device=device,
                )
                streams = _streams(config, task, data, context, device, dtype)
                for stream in streams:  # skip the minibatches the init measured
                    for _ in range(config.init_batches):
                        next(stream)
                problem = FunctionalProblem(
                    family,
                    PerNetworkBatches(streams, seed_index),  # resumable: checkpoints
                    "cross_entropy",
                    per_network=True,
                    observe_fn=_observer(probe),
                )
                opt = _optimiser(config, optimiser, problem.params, [lr for lr, _ in part])
                results.append(
                    train(
                        problem,
                        opt,
                        config.steps,
                        config.record_every,
                        progress=partial(_advance, done, len(part)),
                        checkpoint=context.checkpoint(f"networks-{start}"),
                    )
                )
        result = _concatenate(results)
        conditions = [
            {"task": task, "optimiser": optimiser, "init": init, "lr": lr, "seed_index": j}
            for lr, j in grid
        ]
        arrays = {"label_entropy": np.array([data.label_entropy])}
        return UnitResult.from_training(result, conditions, arrays)

    return Unit(name, run)


def _sample_of(samples: list[Tensor], seed_index: list[int], s: int) -> Tensor:
    """Network ``s`` of a chunk: the init-time minibatch of its seed index."""
    return samples[seed_index[s]]


def _advance(done: Callable[[int], None], networks: int, steps: int) -> None:
    done(steps * networks)


def _concatenate(results: list[TrainResult]) -> TrainResult:
    """One TrainResult from chunks trained one after the other (same recording grid)."""
    if len(results) == 1:
        return results[0]
    first = results[0]

    def join(key: str) -> dict[str, np.ndarray]:
        return {
            k: np.concatenate([getattr(r, key)[k] for r in results]) for k in getattr(first, key)
        }

    return type(first)(
        first.steps,
        join("curves"),
        join("final"),
        np.concatenate([r.diverged for r in results]),
        np.concatenate([r.diverged_step for r in results]),
    )


def plan(config: InitTrainingConfig) -> list[Unit]:
    units = [_ratio_unit(config, task) for task in config.tasks]
    if config.train:
        units += [
            _train_unit(config, task, optimiser, init)
            for task in config.tasks
            for optimiser in config.optimisers
            for init in config.inits
        ]
    return units


def estimate_bytes(config: InitTrainingConfig) -> int:
    """Peak memory in bytes, to within a small factor: the activations kept for backward by
    the largest training chunk (or the at-init trace), ~4 tensors of every feature map.

    ALL-CNN-C keeps ≈ 5.2 × 10⁵ values per 32×32 image at width 1 (96·32² · 3 + 192·16² · 3 +
    the rest), the UNet ≈ 2.2 × 10³ per pixel at width 1 (64 … 1024 channels over 5 levels) on
    512×512 slices (the stand-in's are 128×128)."""
    itemsize = 8 if config.dtype == "float64" else 4
    per_image = {"cifar10": 5.2e5, "isbi2012": 2.2e3 * (512 if config.data_dir else 128) ** 2}
    worst = 0.0
    for task in config.tasks:
        batch = config.cifar_batch if task == "cifar10" else config.isbi_batch
        lrs = max(len(lr_grid(config, optimiser)) for optimiser in config.optimisers)
        networks = config.train_chunk or lrs * config.n_seeds
        train_image = per_image[task] * width(config, task, training=True)
        train = 4 * networks * batch * train_image if config.train else 0.0
        images = _ratio_batch(config, task)
        trace = 4 * config.ratio_chunk * images * per_image[task] * width(config, task)
        worst = max(worst, train, trace)
    return int(worst * itemsize) + 2**28
