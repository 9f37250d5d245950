"""Bias-mediated early linearization on toy tasks (seed ``004_…``, §4–§6, appendices B–F).

Two-layer networks, hidden 64, linear ``ŷ = W2 (W̃1 x̃)`` and ReLU ``ŷ = W2 σ(W̃1 x̃)``, where the
hidden bias is an input constant ``c`` appended to x (``c = 0``: no bias); sum loss
``½ Σ ‖y − ŷ‖²``, full-batch GD, lr 2e-4, weights ``N(0, 2e-4)``. Tasks: the hierarchy (one-hot
items), XOR, XOR + a linear feature, the parallel simple/complex task. Measured: alignment of
ReLU and linear losses with and without bias; the data's modes with the exact deep-linear
dynamics; the bias mode learned first; norms, unit states and kinks; the linearization time
and the gated linear model; hitting-time delays; preferential linear learning; simple before
complex (effective rank, representational R²); the c sweep; MDS; and, beyond the seed, the
alignment over (σ², c).

Every claim is a :class:`~relulab.experiments.claims.ClaimSpec` judged on a 95 % Student-t
interval over seeds, with the setting of the simulated system under which it fails
(``counterexample``); statements the experiment could not fail are *checks* (``check=``), run
and shown, never counted. A network that diverges ranks last in every claim that reads it
(:mod:`.scoring`). The alignment claims share their criterion and settings with
``linearization-images`` (:mod:`relulab.experiments.seed004`).

The package reads top to bottom: :mod:`.config`, :mod:`.units`, :mod:`.measure`,
:mod:`.readouts`, :mod:`.scoring`, :mod:`.sections` (the claims, one module per part of the
seed), :mod:`.claims`, :mod:`.figures`.
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.early_linearization.claims import CLAIMS, analyse
from relulab.experiments.early_linearization.config import PRESETS, EarlyLinearizationConfig
from relulab.experiments.early_linearization.figures import figures
from relulab.experiments.early_linearization.units import (
    estimate_bytes,
    plan,
    unit_keys,
    unit_views,
)

__all__ = [
    "CLAIMS",
    "EXPERIMENT",
    "PRESETS",
    "EarlyLinearizationConfig",
    "analyse",
    "figures",
    "plan",
]

EXPERIMENT: Experiment[EarlyLinearizationConfig] = Experiment(
    name="early-linearization",
    title="Bias-mediated early linearization in ReLU networks (toy tasks)",
    seed="004",
    summary="ReLU vs linear alignment with/without bias, exact linear modes, mechanism, t*, "
    "gated model, XOR + linear, simple before complex, c sweep, (σ², c) map",
    config=EarlyLinearizationConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
)
