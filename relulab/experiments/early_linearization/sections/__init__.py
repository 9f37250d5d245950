"""The early-linearization claims, one module per part of seed 004: :mod:`.alignment` (§4 and
appendix C.3), :mod:`.mechanism` (§5), :mod:`.consequences` (§6) and :mod:`.bias_magnitude`
(appendix C.4). :mod:`relulab.experiments.early_linearization.claims` lists them in scorecard
order."""
