"""Pre-LN vs Post-LN in Liu's residual toy, forward only (the "Depth 1 -- Understanding Pre-LN
and Post-LN" post that seed ``000_…`` builds on: its toy model is the one seed 000 trains).

For d = 100, hidden 400, 100 blocks and α ∈ {1, 10, 100}, with N = 1000 Gaussian inputs [I]:
per layer (layer l = the output of block l) the per-sample cosine between consecutive layers
averaged over samples, the mean norm ‖h_l‖, and the effective rank of the uncentred N×d matrix
(``relulab.probe.effective_rank``, [I, strong]). Exponents are least-squares slopes on
log–log axes over layers ≥ ``fit_from``.

Every reading is taken on ``n_networks`` independently drawn toys per (norm, α) [I] and reported
with a Student-t confidence interval over them. Each claim is judged at every α of the config
(one part per α: it fails if any α fails and is inconclusive if any α's interval straddles the
criterion). The post states its Pre-LN laws as *asymptotic* ("two asymptotic behaviors") and
shows its effective-rank figure at α = 100; the claims say so in their scope, but today's
criteria still judge every α over layers ≥ ``fit_from`` — at α = 1 the random walk
‖h_l‖² ≈ ‖h_0‖² + l·d·α²/18 forgets its start only after l₀ ≈ 18 layers, so the √l and 1/l
laws fail there over 100 blocks although the toy reproduces the post's figure (issue 29). That
Post-LN pins the norm at √d is LayerNorm's definition, not a finding: it is a test
(``tests/test_prepost_ln.py``) and a metric, not a claim.
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.prepost_ln.claims import CLAIMS, analyse
from relulab.experiments.prepost_ln.config import PRESETS, PrePostConfig
from relulab.experiments.prepost_ln.figures import figures
from relulab.experiments.prepost_ln.units import estimate_bytes, plan, unit_keys

__all__ = ["EXPERIMENT", "PRESETS", "PrePostConfig", "analyse", "plan"]

EXPERIMENT = Experiment(
    name="prepost-ln",
    title="Pre-LN vs Post-LN in a deep residual toy (forward)",
    seed="000",
    summary="norm ~ √l and 1 − cos ~ 1/l for Pre-LN; constant norm, rank collapse for Post-LN",
    config=PrePostConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
)
