"""Seed 001's claims, one module per part of the seed: :mod:`.plateaus` (the stuck levels shared
by Observations 0–3, and their exact values), :mod:`.biases` (Observations 0 and 1),
:mod:`.learning_rate` (Observation 2 and the Takeaway), :mod:`.silu` (Observation 3) and
:mod:`.questions` (the seed's Question 1, beyond the seed). The scorecard's order is
``single_neuron.claims.CLAIMS``."""
