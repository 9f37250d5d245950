"""Representation anisotropy from nonlinear functions (the post that seed ``000_…`` points to
from its section "Representation collapse").

:math:`H = \\sigma(XW)` with :math:`X` N×d Gaussian and :math:`W` d×D (``nn.Linear``'s default
init, [I]); the spectrum is the uncentred singular values of H normalised to sum 1. ReLU makes the
top singular value stand out — its right singular vector is the mean direction — tanh does not;
sweeping the leaky-ReLU slope p, σ1/σ2 falls to ≈ 1 at a critical p (the post reports ≈ 0.8).

The mean-shift explanation, in closed form [D]: the rows of H are i.i.d. with mean
:math:`\\mu_j = E[\\sigma(x\\cdot w_j)]` and covariance :math:`C_{jk}`, both given by the
Gaussian kernels of ``relulab.theory`` (:math:`q_j = \\lVert w_j\\rVert^2`,
:math:`q_{jk} = w_j\\cdot w_k`), so :math:`H^\\top H/N \\to \\mu\\mu^\\top + C` and
:math:`\\sigma_1 \\approx \\sqrt{N\\,\\lambda_1(\\mu\\mu^\\top + C)}` when the mean direction
dominates. That comparison is a *check* (relulab's theory against its own
simulation: the closed form is the exact second moment of the simulated rows), run and shown,
never counted.

Every stochastic reading is repeated over ``n_draws`` independent draws of (X, W) [I] and
reported with a Student-t confidence interval over the draws; verdicts follow the intervals.
"""

from __future__ import annotations

from relulab.experiments.anisotropy.claims import CLAIMS, analyse
from relulab.experiments.anisotropy.config import PRESETS, AnisotropyConfig
from relulab.experiments.anisotropy.figures import figures
from relulab.experiments.anisotropy.units import estimate_bytes, plan, unit_keys, unit_views
from relulab.experiments.base import Experiment

__all__ = ["EXPERIMENT", "PRESETS", "AnisotropyConfig"]

EXPERIMENT: Experiment[AnisotropyConfig] = Experiment(
    name="anisotropy",
    title="Representation anisotropy from ReLU: the mean-shift singular value",
    seed="000",
    summary="σ(XW) spectra for ReLU/linear/tanh/SiLU, leaky-slope crossover, closed-form σ1",
    config=AnisotropyConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
)
