"""Initialisers: per-tensor functions in the style of ``torch.nn.init`` (in place, ``_`` suffix,
a ``generator`` argument), and model-level data-dependent ones."""

from relulab.init.correlated import correlated_

__all__ = ["correlated_"]
