"""Sample-variance decay in random ReLU nets (seed ``002_…``, Luther & Seung, §2–4).

* Infinite width: m, v, σ per layer and m/v against depth (``relulab.theory``): the reference
  the simulated readings are compared with.
* Finite width: 30 Kaiming nets per width, 100 Gaussian inputs, the ratio r_l of seed eq. 9,
  the total second moment m² + v², and the unit states at the first and last layer
  (``engine.forward_statistics``, ``nn.statistics``).
* Gradients vs layer under the random linear loss for Kaiming, scale+bias and BatchNorm, with
  fitted slopes against ln σ_s² (``engine.activation_gradient_profile``, ``init``), and, from
  the same networks, the ratio before and after every matrix multiplication and every ReLU
  (seed §3.4) and under BatchNorm (§4). The scale+bias slope is also measured at smaller widths,
  to show its trend towards the seed's width.
* Per-neuron vs pooled pre-activation histograms at an early and a deep layer.

Every claim is a reading of simulated networks with n and a confidence interval over networks
(Student t for means, the jackknife with t quantiles for statistics of the network-mean curve)
and names the setting under which it fails; five statements the experiment could not fail
(identities of the setup, or relulab's theory against its own simulation) are checks, run and
shown but never counted (issue 42). Identities of the infinite-width theory (m/v increasing,
sub-exponential approach) are tests (``tests/experiments/sample_variance/test_sample_variance.py``).
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.sample_variance.claims import CLAIMS, analyse, metrics
from relulab.experiments.sample_variance.config import (
    PRESETS,
    SCHEMES,
    SEED,
    SampleVarianceConfig,
)
from relulab.experiments.sample_variance.figures import figures
from relulab.experiments.sample_variance.readings import network_slopes, saturation_layer
from relulab.experiments.sample_variance.units import (
    Key,
    estimate_bytes,
    plan,
    unit_keys,
    unit_views,
)

__all__ = [
    "CLAIMS",
    "EXPERIMENT",
    "PRESETS",
    "SCHEMES",
    "SEED",
    "Key",
    "SampleVarianceConfig",
    "analyse",
    "estimate_bytes",
    "figures",
    "metrics",
    "network_slopes",
    "plan",
    "saturation_layer",
    "unit_keys",
    "unit_views",
]

EXPERIMENT: Experiment[SampleVarianceConfig] = Experiment(
    name="sample-variance",
    title="Sample variance decay in random ReLU networks",
    seed="002",
    summary="m/v per layer, finite-width ratios, BN / scale+bias gradient slopes, histograms",
    config=SampleVarianceConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
)
