"""Training dynamics of a single ReLU neuron (seed ``001_…``, Liu 2026).

Student :math:`f(x) = w_2\\,\\sigma(w_1 x + b_1) + b_2` fits the teacher ``ReLU(x)`` on
``x ∈ [-1, 1]`` with MSE and Adam, starting from ``w1 = w2 = 1`` and chosen biases. Every
condition of every sweep is one network of a batched computation (``relulab.engine``).

Reproduced: the b1 sweep at b2 = 0, the b2 sweep at b1 = 0, the learning-rate sweep at
(b1, b2) = (0, −1), SiLU vs ReLU at b2 = −2, the plateaus against the exact 1/48 and 5/48, the
kink ``x_t = −b1/w1`` and the neuron state over time. Beyond the seed: fine 1-D sweeps that
locate the b2 and learning-rate boundaries, phase maps over (b1, b2) and (b2, lr), and the
reparameterised neuron ``w·(x + b')`` (the seed's open question) on the same grids.

Three statements are checks, not claims — identities of the setup, run and shown, never counted:
the dead plateau (a dead ReLU neuron has no gradient but b2's), the stuck solution being the
least-squares line, and the plateaus being the exact fits. Every claim names the setting of the
simulated system under which it fails (``counterexample``), and every unit is read through its
typed view (:class:`.units.Neurons`).

The package reads top to bottom: :mod:`.config` (settings with provenance tags, presets),
:mod:`.units` (the unit names and the batched computations), :mod:`.readings` (loss levels,
outcomes, kinks, transition regions), :mod:`.observations` (one claim spec per statement, a
module per part of the seed), :mod:`.claims` (the scorecard in order, and the metrics),
:mod:`.figures`.
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.single_neuron.claims import CLAIMS, analyse
from relulab.experiments.single_neuron.config import PRESETS, SingleNeuronConfig
from relulab.experiments.single_neuron.figures import figures
from relulab.experiments.single_neuron.units import estimate_bytes, plan, unit_keys, unit_views

__all__ = ["EXPERIMENT", "PRESETS", "SingleNeuronConfig", "analyse", "figures", "plan"]

EXPERIMENT: Experiment[SingleNeuronConfig] = Experiment(
    name="single-neuron",
    title="Training dynamics of a single ReLU neuron",
    seed="001",
    summary="b1/b2/lr sweeps, SiLU saddle, exact plateaus, phase maps, reparameterised neuron",
    config=SingleNeuronConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
)
