"""Initialisers: per-tensor functions in the style of ``torch.nn.init`` (in place, ``_`` suffix,
a ``generator`` argument), and model-level data-dependent ones."""

from relulab.init.correlated import correlated_
from relulab.init.data_dependent import LayerInitReport, scale_init_batched_

__all__ = ["LayerInitReport", "correlated_", "scale_init_batched_"]
