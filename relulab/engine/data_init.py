r"""Data-dependent initialisation of batched MLPs (the engine's counterpart of
:func:`relulab.init.scale_bias_` for any ``nn.Module``) (seed ``002_…`` §5.1; SETUPS.md §3).

Layer by layer, in forward order (layer :math:`l` is set after layer :math:`l-1`, on the
activations the already-initialised layers produce), for every network of the batch separately:

* **scale** (seed eq. 13): :math:`W^l \leftarrow W^l/\sqrt{(\sigma_B^l)^2 + \epsilon}` with
  :math:`(\sigma_B^l)^2 = \frac{1}{n^l T}\sum_{i,t} (u^l_{ti})^2`, so pre-activations have unit
  second moment over features and samples; biases 0.
* **scale+bias** (seed eq. 14, then eq. 13): per feature :math:`b^l_i \leftarrow -\mu_i`
  (the sample mean of :math:`u^l_i`), then the layer's scale on the centred
  pre-activations, applied to weights **and** biases. Scaling only the weights after
  centring would bring the means back (the LSUV-with-bias pitfall).

:math:`\epsilon = 10^{-5}`. The statistics come from the given samples ``x`` (the seed uses 5
minibatches; pass them concatenated). Only the hidden layers are set; the readout is left.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from relulab.engine.models import BatchedMLP, _linear

__all__ = ["LayerInitReport", "scale_init_batched_"]


@dataclass(frozen=True)
class LayerInitReport:
    """What was applied to one layer: the per-network scale factors (and whether biases moved)."""

    layer: int
    scale: Tensor
    centred: bool


@torch.no_grad()
def scale_init_batched_(
    model: BatchedMLP, x: Tensor, with_bias: bool, eps: float = 1e-5
) -> list[LayerInitReport]:
    """Apply *scale* (``with_bias=False``) or *scale+bias* to every hidden layer, in place."""
    if model.spec.batchnorm:
        raise ValueError(
            "data-dependent scaling of a BatchNorm network has no effect; build it without"
        )
    if with_bias and any(b is None for b in model.biases[:-1]):
        raise ValueError("scale+bias needs hidden biases (MLPSpec(bias=True))")
    reports = []
    h = x
    for layer, (weight, bias) in enumerate(zip(model.weights[:-1], model.biases[:-1], strict=True)):
        if bias is not None:
            bias.zero_()
        u = _linear(h, weight, bias)
        if with_bias:
            mean = u.mean(dim=1)
            bias.sub_(mean)
            u = u - mean.unsqueeze(1)
        factor = torch.rsqrt(u.square().mean(dim=(1, 2)) + eps)
        weight.mul_(factor.reshape(-1, 1, 1))
        if bias is not None:
            bias.mul_(factor.reshape(-1, 1))
        reports.append(LayerInitReport(layer, factor, with_bias))
        h = model._activate(u * factor.reshape(-1, 1, 1))
    return reports
