"""Does preserving the sample variance at initialisation speed up training? (seed ``002_…``,
Luther & Seung, §3.3 and §5, on real convolutional networks.)

* **At initialisation** (§3.3, Fig. 2 middle/right): the sample mean/std ratio r_l of seed
  eq. 9 at every layer of ALL-CNN-C (CIFAR-10) and of a UNet (ISBI 2012), over 30 Kaiming
  initialisations on training images, against the wide-MLP theory.
* **Training** (§5, Fig. 4): Kaiming, *scale*, *scale+bias* (relulab.init's data-dependent
  schemes on 5 minibatches, per copy) and BatchNorm networks, SGD with momentum 0.9 and Adam
  over the seed's learning-rate grids, 3 seeds, the seed's augmentation; every learning rate ×
  seed of one init is one :class:`relulab.engine.FunctionalFamily` (``torch.func``) trained
  by the engine's batched optimisers. Loss curves with bands at each init's fastest-converging
  lr, per-layer ratios during training, time to a loss level.

``quick`` runs width-reduced networks on the bundled stand-ins (not the seed's data; say so with
every verdict); ``paper`` needs ``--set data_dir=DIR`` with the real files and a GPU
(``--device cuda``).
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.init_training.claims import analyse
from relulab.experiments.init_training.config import PRESETS, InitTrainingConfig
from relulab.experiments.init_training.figures import figures
from relulab.experiments.init_training.units import plan

__all__ = ["EXPERIMENT", "PRESETS", "InitTrainingConfig", "estimate_bytes"]


def estimate_bytes(config: InitTrainingConfig) -> int:
    """Peak memory in bytes, to within a small factor: the activations kept for backward by
    the largest training chunk (or the at-init trace), ~4 tensors of every feature map.

    ALL-CNN-C keeps ≈ 5.2 × 10⁵ values per 32×32 image at width 1 (96·32² · 3 + 192·16² · 3 +
    the rest), the UNet ≈ 2.2 × 10³ per pixel at width 1 (64 … 1024 channels over 5 levels) on
    512×512 slices (the stand-in's are 128×128)."""
    itemsize = 8 if config.dtype == "float64" else 4
    per_image = {
        "cifar10": 5.2e5 * config.allcnn_width,
        "isbi2012": 2.2e3 * (512 if config.data_dir else 128) ** 2 * config.unet_width,
    }
    worst = 0.0
    for task in config.tasks:
        batch = config.cifar_batch if task == "cifar10" else config.isbi_batch
        lrs = max(len(config.sgd_lrs), len(config.adam_lrs))
        networks = config.train_chunk or lrs * config.n_seeds
        train = 4 * networks * batch * per_image[task] if config.train else 0.0
        images = config.ratio_batch if task == "cifar10" else max(1, config.ratio_batch // 10)
        trace = 4 * config.ratio_chunk * images * per_image[task]
        worst = max(worst, train, trace)
    return int(worst * itemsize) + 2**28


EXPERIMENT = Experiment(
    name="init-training",
    title="Sample-variance-preserving init vs training speed on ALL-CNN-C and a UNet",
    seed="002",
    summary="at-init ratio profiles of real convnets; scale vs scale+bias vs BatchNorm training",
    config=InitTrainingConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
)
