r"""The unit axis of an activation call: which axis of its input holds the units.

The **unit axis** follows the layer that produced the input (the *producer*): the call whose
output is the input itself when one of the last
:data:`~relulab.probe.intercept.RECENT_PRODUCERS` calls produced it (a time embedding computed
before a convolution and used after it), else the most recent call in this forward pass of a
function with a feature axis (:data:`~relulab.probe.tables.PRODUCER_FUNCTIONS`) — ``F.linear``
(so ``nn.Linear``), ``torch.addmm``, ``torch.matmul``, ``F.embedding``, ``F.layer_norm``: the
**last** axis at any rank; ``F.conv*d``, ``F.batch_norm``, ``F.group_norm``,
``F.instance_norm``: axis **1** — or the output of a producing module
(:data:`~relulab.probe.tables.PRODUCER_MODULES`: Hugging Face's ``Conv1D``, GPT-2's Linear,
last axis). The rule, in order (:func:`resolve_unit_axis`):

1. ``unit_axis`` given by the caller: that axis;
2. the input has the producer's output rank and the producer's width on the producer's axis:
   that axis (this covers the producer's output itself, and a residual sum after it);
3. a last-axis producer's 2-D output re-viewed (``x.view(-1, d)`` → ``addmm`` → ``.view(N, T,
   d')``): the input has the same number of elements and the producer's width last: the last
   axis (``"reshaped"``);
4. exactly one axis after the first has the producer's width (a transposed output): that axis;
5. otherwise axis 1 (channels-first), reported as ``unit_axis_rule = "default"`` — and
   :func:`relulab.probe.probe` warns (:class:`UnitAxisWarning`).

When the input is exactly the output of a producer with a weight per unit, its kinks
:math:`-b_j/\lVert w_j\rVert` are read from that weight and bias (:func:`kinks_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = ["Producer", "is_output_of", "kinks_of", "make_producer", "resolve_unit_axis"]


@dataclass
class Producer:
    """The most recent call of a :data:`~relulab.probe.tables.PRODUCER_FUNCTIONS` function (or
    output of a :data:`~relulab.probe.tables.PRODUCER_MODULES` module) in this forward pass;
    ``weight_layout`` says how ``weight`` holds unit j's weights (``"out_in"``: row j;
    ``"in_out"``: column j)."""

    label: str
    function: str
    axis: int
    width: int
    ndim: int
    output: Tensor
    version: int
    weight: Tensor | None = None
    bias: Tensor | None = None
    weight_layout: str = "out_in"


def resolve_unit_axis(
    z: Tensor, producer: Producer | None, given: int | None = None
) -> tuple[int, str]:
    """The unit axis of activation input ``z`` and the rule that chose it (module docstring).

    Args:
        z: the activation's input, at least 2-D (samples first).
        producer: the most recent producing call, or ``None``.
        given: an axis fixed by the caller.

    Returns:
        ``(axis, rule)``, the axis non-negative, the rule ``"given"``, ``"producer"``,
        ``"reshaped"``, ``"moved"`` or ``"default"``.

    Example:
        >>> linear = Producer("fc", "linear", 2, 64, 3, torch.zeros(0), 0)
        >>> resolve_unit_axis(torch.zeros(8, 10, 64), linear)  # a sequence (N, T, d)
        (2, 'producer')
        >>> resolve_unit_axis(torch.zeros(8, 64, 10), linear)  # transposed after the Linear
        (1, 'moved')
        >>> flat = Producer("c_fc", "addmm", 1, 64, 2, torch.zeros(80, 64), 0)
        >>> resolve_unit_axis(torch.zeros(8, 10, 64), flat)  # (N·T, d) re-viewed as (N, T, d)
        (2, 'reshaped')
        >>> resolve_unit_axis(torch.zeros(8, 16, 5, 5), None)
        (1, 'default')
    """
    if z.dim() < 2:
        raise ValueError(
            f"an activation input of shape {tuple(z.shape)} has no sample axis; probe batched "
            "data (samples on the first axis)"
        )
    if given is not None:
        if not -z.dim() <= given < z.dim():
            raise ValueError(f"unit_axis {given} is out of range for an input of rank {z.dim()}")
        return given % z.dim(), "given"
    if producer is not None:
        if z.dim() == producer.ndim and z.shape[producer.axis] == producer.width:
            return producer.axis, "producer"
        if (
            producer.axis == producer.ndim - 1
            and z.shape[-1] == producer.width
            and z.numel() == producer.output.numel()
        ):
            return z.dim() - 1, "reshaped"
        matches = [axis for axis in range(1, z.dim()) if z.shape[axis] == producer.width]
        if len(matches) == 1:
            return matches[0], "moved"
    return 1, "default"


def make_producer(
    path: str,
    function: str,
    axis: int,
    output: Tensor,
    weight: Any,
    bias: Any,
    layout: str | None,
) -> Producer:
    """A :class:`Producer` of ``output``; the weight and bias kept for kinks when ``layout``
    says how to read them and their shapes fit the output's width."""
    axis = axis % output.dim()
    width = output.shape[axis]
    weighted = (
        layout is not None
        and isinstance(weight, Tensor)
        and weight.dim() == 2
        and weight.shape[0 if layout == "out_in" else 1] == width
    )
    return Producer(
        label=f"{path or '(model)'} ({function})",
        function=function,
        axis=axis,
        width=width,
        ndim=output.dim(),
        output=output,
        version=output._version,
        weight=weight if weighted else None,
        bias=bias if weighted and isinstance(bias, Tensor) and bias.numel() == width else None,
        weight_layout=layout or "out_in",
    )


def is_output_of(producer: Producer, z: Tensor, axis: int) -> bool:
    """Whether ``z`` is exactly the producer's output (the same tensor, unmodified since)."""
    return z is producer.output and z._version == producer.version and axis == producer.axis


def kinks_of(producer: Producer, z: Tensor, axis: int) -> np.ndarray | None:
    r"""Per unit :math:`-b_j/\lVert w_j\rVert` when ``z`` is exactly the output of a layer
    with a weight per unit (``F.linear``, ``addmm``, Hugging Face's ``Conv1D``)."""
    if producer.weight is None or not is_output_of(producer, z, axis):
        return None
    with torch.no_grad():
        weight = producer.weight.detach().to(torch.float64)
        norms = weight.norm(dim=1 if producer.weight_layout == "out_in" else 0)
        bias = (
            producer.bias.detach().to(torch.float64).reshape(-1)
            if producer.bias is not None
            else torch.zeros_like(norms)
        )
        return (-bias / norms).cpu().numpy()
