"""Anti-correlated and asymmetric initialisations (seed ``003_…``, Singh & Sreejith).

Mean field against simulation (relulab's theory against its own simulation: checks, not claims;
the seed's statements about what the networks do are the claims): phases of deep ReLU networks
whose weights into a node are correlated — ordered, bounded chaotic (only with
anti-correlation) and unbounded — probed by wide random networks on both sides of each boundary;
seed 003's Fig. 3 as a sweep over σ_w² (correlation after many layers, the stability change at
χ1 = 1, the length); gradients growing by χ1 per layer. Dead nodes (Table 1): the per-input
inactive probability and the units dead on every input under He, ACI, RAI, RAAI and a
positively correlated control. Teacher–student training (§4–5, appendix B): students
initialised He/ACI/RAI/RAAI and a sweep of correlation strengths, on three teachers, with SGD
and Adam, every init × seed one batched computation; inits compared by the probability that
one's student ends better than another's, a student that diverged (one policy for every claim)
ranked last.

The package reads top to bottom: :mod:`.config` (settings with provenance tags, presets),
:mod:`.inits` (the compared inits, their bias-matched companions and output-matched twins,
issue 45), :mod:`.networks` (the random networks measured at initialisation), :mod:`.training`
(the teachers and the students' training), :mod:`.units` (the unit names,
:class:`~.units.Key`, the batched computations and each unit's declared view), :mod:`.theory`
(the mean-field curves each measurement is compared with), :mod:`.readings` (readings shared
by claims and figures: the one divergence policy, the probability of superiority), the claims
of each section of the seed — :mod:`.claims_phases` (§2), :mod:`.claims_asymmetric` (§3's
RAI/RAAI phases, appendices D.1, E.1, E.2), :mod:`.claims_dead_nodes` (Table 1),
:mod:`.claims_training` (§5–6), :mod:`.claims_appendix_b` (appendix B),
:mod:`.claims_overfitting` (§5's deeper students) — gathered in :mod:`.claims` (``CLAIMS``,
metrics, ``analyse``), and :mod:`.figures`.
"""

from __future__ import annotations

from relulab.experiments.base import Experiment
from relulab.experiments.correlated_init.claims import CLAIMS, analyse
from relulab.experiments.correlated_init.config import PRESETS, CorrelatedInitConfig
from relulab.experiments.correlated_init.figures import figures
from relulab.experiments.correlated_init.units import (
    estimate_bytes,
    plan,
    unit_keys,
    unit_views,
)

__all__ = ["EXPERIMENT", "PRESETS", "CorrelatedInitConfig", "analyse", "figures", "plan"]

EXPERIMENT: Experiment[CorrelatedInitConfig] = Experiment(
    name="correlated-init",
    title="Anti-correlated and asymmetric initialisations: phases, dead nodes, training",
    seed="003",
    summary="phases probed by simulation, Fig. 3 sweep, gradients, Table 1 dead nodes, "
    "teacher–student training of He/ACI/RAI/RAAI",
    config=CorrelatedInitConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
    claims=CLAIMS,
    unit_keys=unit_keys,
    unit_views=unit_views,
)
