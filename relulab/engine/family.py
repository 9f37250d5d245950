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

import torch
from torch import Tensor, nn

from relulab.engine.losses import LossName

__all__ = [
    "COMPILED_SMALL_PRODUCT",
    "BatchedFamily",
    "LossName",
    "Trace",
    "batched_linear",
    "batched_matmul",
    "shared_input_grads",
]


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
        Inside ``torch.compile``, products under :data:`COMPILED_SMALL_PRODUCT` multiply–adds
        per network are broadcast sums instead (see :func:`batched_matmul`); the shared-input
        result is then a contiguous ``(S, B, out)`` tensor.

    Example:
        >>> batched_linear(torch.ones(4, 3), torch.ones(2, 5, 3), torch.zeros(2, 5)).shape
        torch.Size([2, 4, 5])
    """
    if h.dim() == 2:
        return _shared_input_linear(h, weight, bias)
    if bias is None:
        return batched_matmul(h, weight.transpose(1, 2))
    if _compiled_small(h.shape[1] * weight.shape[1] * weight.shape[2]):
        return batched_matmul(h, weight.transpose(1, 2)) + bias.unsqueeze(1)
    return torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))


#: Multiply–adds per network of one product below which, inside ``torch.compile``,
#: :func:`batched_matmul` and the shared-input products write it as a broadcast multiply and a
#: sum instead of a call into the BLAS. Measured with compiled 10-step chunks of W1's two-layer
#: nets (8 inputs, 8 samples, 15 outputs; median network-steps/s, fused against BLAS, one
#: thread / two): 64 hidden units (largest product 7.7 k) 40 nets 670 k / 1.0 M against 490 k /
#: 270 k, 400 nets 518 k / 840 k against 459 k / 689 k, 4000 nets 298 k / 603 k against 268 k /
#: 376 k; 128 units (15 k) 355 k / 596 k against 272 k / 356 k; 256 units (31 k) every product
#: fused 123 k / 137 k against 133 k / 194 k, those under the threshold fused 149 k / 248 k;
#: 512 units (61 k) 57 k / 71 k against 59 k / 104 k.
COMPILED_SMALL_PRODUCT = 20_000


def _compiled_small(multiply_adds: int) -> bool:
    return multiply_adds < COMPILED_SMALL_PRODUCT and torch.compiler.is_compiling()


def batched_matmul(a: Tensor, b: Tensor) -> Tensor:
    r""":math:`a_s b_s` for every network :math:`s`: ``(S, M, K) @ (S, K, N) → (S, M, N)``.

    Eagerly, and for products of at least :data:`COMPILED_SMALL_PRODUCT` multiply–adds per
    network, one
    ``torch.bmm``. Inside ``torch.compile`` a smaller product becomes a broadcast multiply and a
    sum over K, which inductor fuses with the step's elementwise work into its own C++ loops:
    a BLAS call has a fixed cost of microseconds that dominates products this small. The sum
    runs along K where K is contiguous in both operands (one dot product per output) and across
    K, vectorised along the contiguous N, otherwise; a product whose operands fit neither stays
    a ``torch.bmm`` (W1's step written as such sums against strided operands ran 28× slower
    than with the BLAS, on two threads).

    Args:
        a: ``(S, M, K)``.
        b: ``(S, K, N)``.

    Returns:
        ``(S, M, N)``, equal to ``torch.bmm(a, b)`` up to the order of the additions.

    Example:
        >>> a, b = torch.randn(3, 4, 5), torch.randn(3, 5, 2)
        >>> torch.allclose(batched_matmul(a, b), torch.bmm(a, b))
        True
    """
    n_networks, rows, inner = a.shape
    if b.shape[0] != n_networks or b.shape[1] != inner:
        raise ValueError(f"batched_matmul needs (S, M, K) @ (S, K, N), got {a.shape} @ {b.shape}")
    if _compiled_small(rows * inner * b.shape[-1]):
        if a.stride(-1) == 1 and b.stride(-2) == 1:
            return (a.unsqueeze(-2) * b.transpose(-1, -2).unsqueeze(-3)).sum(-1)
        if b.stride(-1) == 1:
            return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)
    return torch.bmm(a, b)


def _input_major_memory(weight: Tensor) -> Tensor | None:
    """``weight (S, out, in)`` as the contiguous ``(in, S, out)`` block it is laid out as
    (:class:`~relulab.engine.BatchedMLP`'s first layer), else ``None``."""
    memory = weight.permute(2, 0, 1)
    return memory if memory.is_contiguous() else None


def _shared_input_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    n_networks, n_out, n_in = weight.shape
    memory = _input_major_memory(weight)
    if memory is not None and _compiled_small(x.shape[0] * n_out * n_in):
        # z[s, b, o] = Σ_d x[b, d] W[d, s, o], vectorised along o and laid out (S, B, out): in
        # the BLAS result's layout, (B, S, out), W1's compiled step ran 545 k instead of 680 k
        # network-steps/s on one thread
        z = (x[None, :, :, None] * memory.transpose(0, 1).unsqueeze(1)).sum(2)
        return z if bias is None else z + bias.unsqueeze(1)
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
    if grad_out.stride(-1) == 1 and _compiled_small(n_samples * n_out * x.shape[1]):
        # ∂W[d, s, o] = Σ_b x[b, d] g[s, b, o], in the input-major layout (see batched_matmul)
        by_input = (x[:, :, None, None] * grad_out.transpose(0, 1).unsqueeze(1)).sum(0)
        bias_grad = [] if bias is None else [grad_out.sum(dim=1)]
        return by_input.permute(1, 2, 0), bias_grad
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
