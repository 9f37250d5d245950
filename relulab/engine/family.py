r"""The face every batched model family shows: what training, observation and experiments use.

A *family* holds S networks of one architecture as stacked tensors (network index first). It
offers

* :meth:`BatchedFamily.forward` — the outputs ``(S, B, d_out)``, nothing else;
* :meth:`BatchedFamily.trace` — a :class:`Trace`: the outputs with every layer's input,
  pre-activation and activation (and, for residual families, the stream after every block), for
  observation and diagnostics;
* :attr:`BatchedFamily.manual_backward` — a declared capability: when true,
  :meth:`BatchedFamily.loss_and_grads` computes every network's loss and gradients by explicit
  backpropagation, without an autograd graph; when false, callers use autograd on ``forward``;
* :attr:`BatchedFamily.differentiable_trace` — a declared capability: when true, autograd
  runs through :meth:`BatchedFamily.trace` as through ``forward``, so a recording step can take
  its gradients and its observations from one pass.

:func:`batched_linear` is the one batched affine map every family is built from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

__all__ = ["BatchedFamily", "LossName", "Trace", "batched_linear", "shared_input_grads"]

LossName = Literal["mse", "half_sum"]


def batched_linear(h: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    r""":math:`h W_s^\top + b_s` for every network :math:`s` at once.

    Args:
        h: inputs ``(S, B, in)``, or ``(B, in)`` shared by all networks.
        weight: ``(S, out, in)``.
        bias: ``(S, out)`` or ``None``.

    Returns:
        ``(S, B, out)``: one ``torch.bmm``/``torch.baddbmm`` for all S networks; for shared
        inputs one 2-D GEMM :math:`x\,[W_1; \dots; W_S]^\top` over the ``S·out`` stacked rows
        instead (the ``(S, B, out)`` view of a ``(B, S, out)`` result), which is both faster
        than S small products and, under autograd, gives the weight gradient as one GEMM too.

    Example:
        >>> batched_linear(torch.ones(4, 3), torch.ones(2, 5, 3), torch.zeros(2, 5)).shape
        torch.Size([2, 4, 5])
    """
    if h.dim() == 2:
        return _shared_input_linear(h, weight, bias)
    if bias is None:
        return torch.bmm(h, weight.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))


def _shared_input_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    n_networks, n_out, n_in = weight.shape
    rows = weight.reshape(n_networks * n_out, n_in).t()
    flat = torch.mm(x, rows) if bias is None else torch.addmm(bias.reshape(-1), x, rows)
    return flat.view(x.shape[0], n_networks, n_out).transpose(0, 1)


def shared_input_grads(
    grad_out: Tensor, x: Tensor, bias: Tensor | None
) -> tuple[Tensor, list[Tensor]]:
    r"""Weight and bias gradients of :func:`batched_linear` on inputs ``x (B, in)`` shared by
    all S networks: :math:`\partial W_s = g_s^\top x` for every s as one 2-D GEMM
    :math:`(x^\top G)^\top`, with :math:`G` the ``(B, S·out)`` output gradients side by side,
    and :math:`\partial b_s = \sum_i g_{s,i}` (backpropagation through an affine map).

    Args:
        grad_out: the gradient of the loss with respect to the outputs, ``(S, B, out)``.
        x: the shared inputs ``(B, in)``.
        bias: the bias ``(S, out)`` or ``None`` (then no bias gradient).

    Returns:
        The weight gradient ``(S, out, in)``, laid out in memory as ``(in, S·out)`` (the layout
        of :class:`~relulab.engine.BatchedMLP`'s first weights), and ``[bias gradient (S, out)]``
        or ``[]``.

    Example:
        >>> g, x = torch.ones(2, 4, 5), torch.ones(4, 3)
        >>> weight_grad, (bias_grad,) = shared_input_grads(g, x, torch.zeros(2, 5))
        >>> weight_grad.shape, float(weight_grad[0, 0, 0]), float(bias_grad[1, 2])
        (torch.Size([2, 5, 3]), 4.0, 4.0)
    """
    n_networks, n_samples, n_out = grad_out.shape
    side_by_side = grad_out.transpose(0, 1).reshape(n_samples, n_networks * n_out)
    weight_grad = torch.mm(x.t(), side_by_side).t().reshape(n_networks, n_out, x.shape[1])
    bias_grad = [] if bias is None else [side_by_side.sum(dim=0).view(n_networks, n_out)]
    return weight_grad, bias_grad


@dataclass(frozen=True)
class Trace:
    """One forward pass of S networks, layer by layer (tensors keep the network axis first).

    Attributes:
        output: ``(S, B, d_out)``, what :meth:`BatchedFamily.forward` returns.
        inputs: per weight matrix, in the order of the family's weights, the tensor it
            multiplies (the first may be the shared input ``(B, d_in)``).
        linear_outputs: per hidden layer, :math:`W h + b` before any normalisation.
        preactivations: per hidden layer, what the activation receives (after BatchNorm, if
            any; otherwise the same tensors as ``linear_outputs``) ``(S, B, units)``.
        activations: per hidden layer, the activation's output :math:`\\sigma(z) - b`.
        stream: residual families: the residual stream after every block; else empty.

    Example:
        >>> from relulab.engine import BatchedMLP, MLPSpec
        >>> trace = BatchedMLP(MLPSpec((3, 5, 5, 1)), n_networks=2).trace(torch.randn(7, 3))
        >>> len(trace.inputs), len(trace.preactivations), trace.activations[1].shape
        (3, 2, torch.Size([2, 7, 5]))
    """

    output: Tensor
    inputs: tuple[Tensor, ...]
    linear_outputs: tuple[Tensor, ...]
    preactivations: tuple[Tensor, ...]
    activations: tuple[Tensor, ...]
    stream: tuple[Tensor, ...] = ()


class BatchedFamily(ABC):
    """S networks of one architecture; see the module docstring.

    Attributes:
        n_networks: S.
        params: the trainable stacked tensors, in a fixed order (what optimisers step).
        manual_backward: whether :meth:`loss_and_grads` is available.
        differentiable_trace: whether autograd differentiates :meth:`trace`'s output.

    Example:
        >>> from relulab.engine import BatchedMLP, MLPSpec
        >>> model = BatchedMLP(MLPSpec((3, 5, 1)), n_networks=2)
        >>> isinstance(model, BatchedFamily), model.manual_backward
        (True, True)
        >>> losses, grads = model.loss_and_grads(torch.randn(7, 3), torch.randn(7, 1), "mse")
        >>> losses.shape, [g.shape for g in grads] == [p.shape for p in model.params]
        (torch.Size([2]), True)
    """

    n_networks: int
    params: list[Tensor]
    manual_backward: bool = False
    differentiable_trace: bool = False

    @abstractmethod
    def forward(self, x: Tensor) -> Tensor:
        """Outputs ``(S, B, d_out)`` for inputs ``(B, d_in)`` (shared) or ``(S, B, d_in)``."""

    def gradient_forward(self, x: Tensor) -> Tensor:
        """:meth:`forward` for one first-order backward pass (what
        :meth:`~relulab.engine.SupervisedProblem.loss_and_grads` differentiates): a family may
        make it cheaper by overwriting intermediates that pass does not need again (the
        residual toy's in-place ReLU). Double backward, forward mode and ``torch.func`` need
        :meth:`forward`."""
        return self.forward(x)

    @abstractmethod
    def trace(self, x: Tensor) -> Trace:
        """The forward pass with every intermediate (:class:`Trace`); for observation."""

    def loss_and_grads(self, x: Tensor, y: Tensor, loss: LossName) -> tuple[Tensor, list[Tensor]]:
        """Per-network losses ``(S,)`` and gradients matching :attr:`params`, by explicit
        backpropagation; only where :attr:`manual_backward` is true."""
        raise NotImplementedError(f"{type(self).__name__} has no manual backward: use autograd")

    def module(self, s: int) -> nn.Module:
        """Network ``s`` as a plain ``nn.Module`` with its current weights."""
        raise NotImplementedError(f"{type(self).__name__} has no nn.Module counterpart")
