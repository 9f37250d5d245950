"""Pre-LN vs Post-LN in Liu's residual toy, forward only (the "Depth 1 -- Understanding Pre-LN
and Post-LN" post that seed ``000_…`` builds on: its toy model is the one seed 000 trains).

For d = 100, hidden 400, 100 blocks and α ∈ {1, 10, 100}, with N = 1000 Gaussian inputs [I]:
per layer (layer l = the output of block l) the per-sample cosine between consecutive layers
averaged over samples, the mean norm ‖h_l‖, and the effective rank of the uncentred N×d matrix
(``relulab.probe.effective_rank``, [I, strong]). Two forward-only probes on the first
``probe_samples`` inputs: Pre-LN over ``long_blocks`` = 1000 blocks at α = 1, and the gain of a
perturbation of an early layer h^l on every later layer (forward-mode differentiation).

Every reading is taken on ``n_networks`` independently drawn toys per (norm, α) [I] and reported
with a Student-t confidence interval over them. Each claim is judged where the post puts it
(issue 29): the √l and 1/l laws are "asymptotic behaviors", so they are fitted over layers
≥ ``asymptotic_factor`` × l₀ (l₀ = a/b of ‖h_l‖² ≈ a + b·l, ≈ 18 layers at α = 1), on the long
stream where that lies beyond 100 blocks; Post-LN's cosine "does not approach 1" (its gap does
not shrink as a power of l); its rank collapse is judged at the figure's α = 100; and
Observation 2's vanishing influence of early layers is measured against Pre-LN on the same
weights. That Post-LN pins the norm at √d is LayerNorm's definition, not a finding: it is a test
(``tests/experiments/prepost_ln/test_prepost_ln.py``) and a metric, not a claim; for the same reason
Post-LN's flat cosine is a check (run and shown, never counted): LayerNorm and independently drawn
blocks make how far one block turns a sample the same at every depth.
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.prepost_ln.claims import CLAIMS, analyse
from relulab.experiments.prepost_ln.config import PRESETS, PrePostConfig
from relulab.experiments.prepost_ln.figures import figures
from relulab.experiments.prepost_ln.units import estimate_bytes, plan, unit_keys, unit_views

__all__ = ["EXPERIMENT", "PRESETS", "PrePostConfig", "analyse", "plan"]

EXPERIMENT: Experiment[PrePostConfig] = Experiment(
    name="prepost-ln",
    title="Pre-LN vs Post-LN in a deep residual toy (forward)",
    seed="000",
    summary="norm ~ √l and 1 − cos ~ 1/l for Pre-LN; rank collapse and early-layer influence "
    "for Post-LN",
    config=PrePostConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
)
