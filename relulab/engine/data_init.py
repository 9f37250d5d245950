r"""Data-dependent initialisation of batched MLPs (the engine's counterpart of
:func:`relulab.init.scale_bias_` for any ``nn.Module``; seed ``002_…`` §5.1, eqs. 13–14).

Layer by layer, in forward order (layer :math:`l` is set after layer :math:`l-1`, on the
activations the already-initialised layers produce), for every network of the batch separately:

* **scale** (seed eq. 13): :math:`W^l \leftarrow W^l/\sqrt{(\sigma_B^l)^2 + \epsilon}` with
  :math:`(\sigma_B^l)^2 = \frac{1}{n^l T}\sum_{i,t} (u^l_{ti})^2`, so pre-activations have unit
  second moment over features and samples; biases 0.
* **scale+bias** (seed eq. 14, then eq. 13): per feature :math:`b^l_i \leftarrow -\mu_i`
  (the sample mean of :math:`u^l_i`), then the layer's scale on the centred
  pre-activations, applied to weights **and** biases. Scaling only the weights after
  centring would bring the means back (the LSUV-with-bias pitfall).

:math:`\epsilon = 10^{-5}`. One layer's arithmetic is :func:`relulab.init.rescale_layer_`, the
function the ``nn.Module`` initialisers use too. The statistics come from the given samples
``x`` (the seed uses 5 minibatches; pass them concatenated). Only the hidden layers are set;
the readout is left.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from relulab.engine.family import batched_linear
from relulab.engine.models import BatchedMLP
from relulab.init.model import rescale_layer_

__all__ = ["LayerInitReport", "scale_init_batched_"]


@dataclass(frozen=True)
class LayerInitReport:
    """What :func:`scale_init_batched_` applied to one hidden layer.

    Attributes:
        layer: the hidden layer's index.
        scale: the factor of every network ``(S,)``.
        centred: whether the biases centred the features first (scale+bias).

    Example:
        >>> LayerInitReport(0, torch.ones(2), centred=True).centred
        True
    """

    layer: int
    scale: Tensor
    centred: bool


@torch.no_grad()
def scale_init_batched_(
    model: BatchedMLP, x: Tensor, with_bias: bool, eps: float = 1e-5
) -> list[LayerInitReport]:
    r"""Apply *scale* (``with_bias=False``) or *scale+bias* to every hidden layer, in place.

    Args:
        model: a :class:`~relulab.engine.BatchedMLP` without BatchNorm (with hidden biases for
            scale+bias).
        x: the samples ``(N, d_in)``.
        with_bias: centre every feature through its bias first (scale+bias).
        eps: :math:`\epsilon`.

    Returns:
        One :class:`LayerInitReport` per hidden layer.

    Example:
        >>> from relulab.engine import MLPSpec
        >>> model = BatchedMLP(MLPSpec((4, 16, 16, 1)), n_networks=3, init="normal")
        >>> [r.scale.shape for r in scale_init_batched_(model, torch.randn(64, 4), with_bias=True)]
        [torch.Size([3]), torch.Size([3])]
    """
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
        u = batched_linear(h, weight, bias)
        u, factor = rescale_layer_(weight, bias, u, centre=with_bias, eps=eps, batch_dims=1)
        reports.append(LayerInitReport(layer, factor, with_bias))
        h = model.activate(u)
    return reports
