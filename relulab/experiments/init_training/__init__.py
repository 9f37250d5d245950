"""Does preserving the sample variance at initialisation speed up training? (seed ``002_…``,
Luther & Seung, §3.3 and §5, on real convolutional networks.)

* **At initialisation** (§3.3, Fig. 2 middle/right): the sample mean/std ratio r_l of seed
  eq. 9 at every layer of ALL-CNN-C (CIFAR-10) and of a UNet (ISBI 2012), over 30 Kaiming
  initialisations on training images, against the wide-MLP theory.
* **Training** (§5, Fig. 4): Kaiming, *scale*, *scale+bias* (relulab.init's data-dependent
  schemes on 5 minibatches, per copy) and BatchNorm networks, SGD with momentum 0.9 and Adam
  over the seed's learning-rate grids, 3 seeds (8 at ``cpu``), the seed's augmentation; every
  learning rate ×
  seed of one init is one :class:`relulab.engine.FunctionalFamily` (``torch.func``) trained
  by the engine's batched optimisers. Loss curves with bands at each init's fastest-converging
  lr, per-layer ratios during training, time to a loss level.

A convolution's ratio pools each channel's statistics over samples *and* positions [I: the seed
does not say]; the per-(channel, position) reading is a metric. Verdicts follow Student-t
intervals: over the 30 networks at init, over the seeds' paired differences in training (a
verdict needs ≥ 8 paired seeds, else ``not tested``). BatchNorm's speed is a metric: the seed
plots it without ranking it.

``quick`` runs width-reduced networks on the bundled stand-ins (not the seed's data; say so with
every verdict) for 150 steps with 3 seeds: it checks the pipeline, and every claim says why it
is ``not tested`` there. ``cpu`` decides what one CPU can: §3.3 at width 1, and scale vs
scale+bias at width 1/4 with 8 paired seeds for 3000 SGD steps (on the stand-ins unless
``data_dir`` is given). ``paper`` needs ``--set data_dir=DIR`` with the real files and a GPU
(``--device cuda``) (``docs/experiments/init-training.md``).
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.init_training.claims import CLAIMS, analyse
from relulab.experiments.init_training.config import PRESETS, InitTrainingConfig, stand_in
from relulab.experiments.init_training.figures import figures
from relulab.experiments.init_training.units import estimate_bytes, plan, unit_keys, unit_views

__all__ = ["EXPERIMENT", "PRESETS", "InitTrainingConfig", "estimate_bytes"]

EXPERIMENT: Experiment[InitTrainingConfig] = Experiment(
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
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
    stand_in=stand_in,
)
