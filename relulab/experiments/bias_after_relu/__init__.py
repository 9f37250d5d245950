"""Adding a bias after ReLU (seed ``000_…``, Liu, *Optimization 3 / Depth 2*, section "Trick:
adding bias after ReLU").

Teacher–student on the post-LN residual toy (d = 50, hidden 200, 10 blocks, α = 1): a teacher
with b = 0 and its own weights; students with ReLU−b, b ∈ {0.0, …, 0.9}, several seeds — seed
``s`` gives the same student weights for every b (a paired design: b is the only difference).
Output = the final LN output (50-dim), MSE over all entries, full batch, Adam lr 1e-3. All
students of a variant train in one batched computation (``relulab.engine``).

Measured per student: Δ at initialisation (std over width of the per-unit mean output over
samples, seed 000 "Representation collapse"), the loss curve, and the FC1 neuron-state fractions
during training. A forward-only unit measures Δ at init on many more networks: per b on a fine
grid under both inits, Δ of the input, and a zero-mean-activation control (the seed's "origin"
hypothesis). The output's Δ against the input's and the zero-mean control are identities of the
setup, and b* against the located minimum is relulab's theory against its own simulation: those
four are *checks* (run and shown, never counted); the U-shape and the three training
statements are the claims.

Intervals: Student t over networks or seeds for means, the Bonferroni set of grid
points for where a curve is least, Fisher z for the correlation.

Beyond the seed (claims flagged ``beyond_seed``, or metrics): the analytic centring shift
b* = E[ReLU(z)] of the init ([D]: FC1 pre-activations have std s = 1/√3 under PyTorch's default
init, so b* = s/√(2π) = 1/√(6π) ≈ 0.23; ≈ 0.56 for Kaiming-normal) against the located minimum
of Δ; the same sweep under Kaiming-normal init and under Pre-LN; students with per-neuron shifts
calibrated on the data (``BatchedResidualToy.calibrate_shifts_``); the FC1 neuron states.
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.bias_after_relu.claims import CLAIMS, analyse
from relulab.experiments.bias_after_relu.config import PRESETS, BiasAfterReLUConfig, fine_shifts
from relulab.experiments.bias_after_relu.figures import figures
from relulab.experiments.bias_after_relu.readings import seed_by_shift
from relulab.experiments.bias_after_relu.units import (
    estimate_bytes,
    output_delta,
    plan,
    unit_keys,
    unit_views,
)

__all__ = [
    "EXPERIMENT",
    "PRESETS",
    "BiasAfterReLUConfig",
    "analyse",
    "fine_shifts",
    "output_delta",
    "plan",
    "seed_by_shift",
]

EXPERIMENT: Experiment[BiasAfterReLUConfig] = Experiment(
    name="bias-after-relu",
    title="Adding a bias after ReLU: Δ, training speed and the centring shift",
    seed="000",
    summary="teacher–student residual toy, b sweep; Δ U-shape, speed, analytic b*, Kaiming, Pre-LN",
    config=BiasAfterReLUConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
)
