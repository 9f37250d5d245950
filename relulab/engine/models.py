r"""Batched model families: S networks of one architecture as stacked weight tensors.

Every parameter has the network index first — weights ``(S, out, in)``, biases ``(S, out)`` —
and activations flow as ``(S, B, features)``; one ``torch.baddbmm``/``matmul`` per layer serves
all S networks. Inputs may be shared ``(B, d)`` or per network ``(S, B, d)``.

Families
--------
* :class:`BatchedMLP` — any depth and width; bias on/off; activation ReLU, ReLU−b (a
  per-network shift ``b`` subtracted after every hidden ReLU, seed ``000_…``), leaky ReLU, SiLU,
  tanh or linear; optional BatchNorm (per-feature centring and scaling by batch statistics, no
  affine, as ``nn.BatchNorm1d`` in training mode). The two-layer nets of seed ``004_…`` are the
  depth-2 case, with the hidden bias as a bias or as a constant input column (``tasks``).
* :class:`BatchedResidualToy` — Liu's residual toy (the "depth-1" model seed ``000_…``
  §Motivation builds on): width ``d``, blocks of ``FC1: d→hidden``, ReLU−b, ``FC2: hidden→d``,
  no biases, FC2's output scaled by ``α``; with
  :math:`u(v) = \alpha\,\mathrm{FC2}(\mathrm{ReLU}(\mathrm{FC1}\,v) - b)`:
  Post-LN :math:`h \leftarrow \mathrm{LN}(h + u(h))`,
  Pre-LN :math:`h \leftarrow h + u(\mathrm{LN}(h))` (no final LN). LN has no affine and eps 1e-5.
  The block is :func:`relulab.nn.residual_block`, shared with :class:`relulab.nn.ResidualToy`.

Both are :class:`~relulab.engine.family.BatchedFamily`: ``forward(x)`` returns the outputs,
``trace(x)`` a :class:`~relulab.engine.family.Trace` of every layer; :class:`BatchedMLP`
without BatchNorm declares ``manual_backward`` and computes its gradients by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal, Protocol, overload

import torch
from torch import Tensor

from relulab.engine.family import (
    BatchedFamily,
    LossName,
    Trace,
    batched_linear,
    batched_matmul,
    shared_input_grads,
)
from relulab.engine.init import init_weight_stack, per_network
from relulab.engine.losses import squared_error_scale
from relulab.nn.activations import get_activation
from relulab.nn.models import MLP, ResidualToy, residual_block
from relulab.nn.statistics import BATCHED_SAMPLE_DIMS, centring_shift

__all__ = ["BatchedMLP", "BatchedResidualToy", "MLPSpec", "ResidualToySpec"]

BN_EPS = 1e-5
LN_EPS = 1e-5


def _batchnorm(z: Tensor) -> Tensor:
    r"""BatchNorm without affine, per network and feature over the batch.

    :math:`(z - \bar z)/\sqrt{\mathrm{Var}_B z + \epsilon}` (Ioffe & Szegedy 2015).
    """
    mean = z.mean(dim=1, keepdim=True)
    var = z.var(dim=1, unbiased=False, keepdim=True)
    return (z - mean) / torch.sqrt(var + BN_EPS)


def _shift_vector(shift: float | Sequence[float] | Tensor, n_networks: int, like: Tensor) -> Tensor:
    values = per_network(shift, n_networks, "relu_shift")
    return torch.tensor(values, dtype=like.dtype, device=like.device).reshape(-1, 1, 1)


def _input_major(weight: Tensor) -> Tensor:
    """The same ``(S, out, in)`` weights laid out in memory as ``(in, S·out)``: the operand
    :func:`~relulab.engine.family.batched_linear` multiplies shared inputs by, as it stands,
    and the layout of the weight gradient :func:`~relulab.engine.family.shared_input_grads`
    computes, so the optimiser's elementwise update runs over matching contiguous memory (a
    gradient of another layout made the SGD update of W1's first layer 7× slower)."""
    laid_out = weight.detach().permute(2, 0, 1).contiguous().permute(1, 2, 0)
    return laid_out.requires_grad_(weight.requires_grad)


class _StackedNetworks(BatchedFamily):
    """Set-up shared by the families: trainable weight stacks and the per-network ReLU shift."""

    differentiable_trace = True  # trace() is forward() keeping its intermediates

    def _set_up(
        self,
        n_networks: int,
        shapes: list[tuple[int, int]],
        biases: bool | list[bool],
        init: str | Sequence[str],
        init_scale: float | Sequence[float],
        seeds: Sequence[int] | None,
        relu_shift: float | Sequence[float] | Tensor,
        dtype: torch.dtype,
        device: torch.device | str,
        init_options: Mapping[str, float] | Sequence[Mapping[str, float]] | None = None,
    ) -> list[tuple[Tensor, Tensor | None]]:
        self.n_networks = n_networks
        stack = init_weight_stack(
            shapes, n_networks, init, init_scale, seeds, biases, dtype, device, init_options
        )
        self.params = [t for pair in stack for t in pair if t is not None]
        for p in self.params:
            p.requires_grad_(True)
        self.shift = _shift_vector(relu_shift, n_networks, stack[0][0])
        self.has_shift = bool(self.shift.any())
        return stack


@dataclass(frozen=True)
class MLPSpec:
    """Architecture of a fully connected net.

    Attributes:
        widths: ``(d_in, h_1, …, d_out)``; ``len(widths) - 2`` hidden layers.
        activation: ``relu`` (ReLU−b with a shift), ``leaky_relu``, ``silu``, ``tanh`` or
            ``linear``.
        bias: biases in the hidden layers.
        output_bias: a bias in the readout (default: ``bias``).
        batchnorm: BatchNorm (batch statistics, no affine) before every hidden activation.
        leaky_slope: the negative slope of ``leaky_relu``.

    Example:
        >>> spec = MLPSpec((8, 64, 15), output_bias=False)  # seed 004's two-layer net
        >>> spec.layer_shapes, spec.layer_biases
        ([(64, 8), (15, 64)], [True, False])
    """

    widths: tuple[int, ...]
    activation: str = "relu"
    bias: bool = True
    output_bias: bool | None = None  # default: same as ``bias``
    batchnorm: bool = False
    leaky_slope: float = 0.01

    def __post_init__(self) -> None:
        if len(self.widths) < 2 or min(self.widths) < 1:
            raise ValueError(
                f"widths must list at least input and output sizes ≥ 1, got {self.widths}"
            )
        get_activation(self.activation, self.leaky_slope)  # validates the name

    @property
    def layer_shapes(self) -> list[tuple[int, int]]:
        return [(out, inp) for inp, out in zip(self.widths[:-1], self.widths[1:], strict=True)]

    @property
    def layer_biases(self) -> list[bool]:
        output_bias = self.bias if self.output_bias is None else self.output_bias
        return [self.bias] * (len(self.widths) - 2) + [output_bias]


class BatchedMLP(_StackedNetworks):
    """S fully connected networks of one :class:`MLPSpec` (module docstring).

    Args:
        spec: the architecture.
        n_networks: S.
        init: a per-tensor scheme of :data:`relulab.init.SCHEMES`, or one per network.
        init_scale: multiplies every drawn weight and bias (per network or shared).
        seeds: one per network (default ``0 … S−1``); network ``s`` is the same in any batch.
        relu_shift: the ReLU−b shift :math:`b`, shared or per network.
        dtype: the parameters' dtype.
        device: their device.
        init_options: keyword options of the scheme's initialiser (e.g. ``{"sigma_w2": 2.0,
            "k": -1.0}`` for ``correlated``), shared or one mapping per network.

    Example:
        >>> model = BatchedMLP(MLPSpec((3, 16, 1)), n_networks=4, relu_shift=0.2)
        >>> model.forward(torch.randn(10, 3)).shape
        torch.Size([4, 10, 1])
        >>> [z.shape for z in model.trace(torch.randn(10, 3)).preactivations]
        [torch.Size([4, 10, 16])]
    """

    def __init__(
        self,
        spec: MLPSpec,
        n_networks: int,
        init: str | Sequence[str] = "kaiming_normal",
        init_scale: float | Sequence[float] = 1.0,
        seeds: Sequence[int] | None = None,
        relu_shift: float | Sequence[float] | Tensor = 0.0,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
        init_options: Mapping[str, float] | Sequence[Mapping[str, float]] | None = None,
    ) -> None:
        self.spec = spec
        self.activation = get_activation(spec.activation, spec.leaky_slope)
        stack = self._set_up(
            n_networks,
            spec.layer_shapes,
            spec.layer_biases,
            init,
            init_scale,
            seeds,
            relu_shift,
            dtype,
            device,
            init_options,
        )
        self.weights = [w for w, _ in stack]
        self.biases = [b for _, b in stack]
        self.weights[0] = self.params[0] = _input_major(self.weights[0])
        #: hand-written backprop covers every activation without BatchNorm
        self.manual_backward = not spec.batchnorm

    @torch.no_grad()
    def module(self, s: int) -> MLP:
        """Network ``s`` as a plain :class:`relulab.nn.MLP` with its current weights, on the
        batched model's device."""
        spec = self.spec
        module = MLP(
            spec.widths,
            spec.activation,
            spec.bias,
            spec.output_bias,
            spec.batchnorm,
            float(self.shift[s]),
            spec.leaky_slope,
        ).to(dtype=self.weights[0].dtype, device=self.weights[0].device)
        linears = [m for m in module if isinstance(m, torch.nn.Linear)]
        for linear, weight, bias in zip(linears, self.weights, self.biases, strict=True):
            linear.weight.copy_(weight[s])
            if bias is not None:
                linear.bias.copy_(bias[s])
        return module

    def activate(self, z: Tensor) -> Tensor:
        r"""The hidden activation :math:`\sigma(z) - b` of every network, ``z`` ``(S, B, units)``;
        the subtraction (a pass over the tensor) is skipped when b ≡ 0."""
        return self.activation.fn(z) - self.shift if self.has_shift else self.activation.fn(z)

    def _forward(self, x: Tensor) -> tuple[Tensor, list[Tensor], list[Tensor], list[Tensor]]:
        """Output, hidden pre-activations (after BatchNorm, if any), every layer's input, and —
        with BatchNorm only — the hidden layers' outputs before it. The lean pass that
        :meth:`loss_and_grads` runs every step: no tensor op beyond the forward itself."""
        h = x
        preactivations: list[Tensor] = []
        inputs: list[Tensor] = []
        before_norm: list[Tensor] = []
        last = len(self.weights) - 1
        for layer, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            inputs.append(h)
            z = batched_linear(h, weight, bias)
            if layer == last:
                return z, preactivations, inputs, before_norm
            if self.spec.batchnorm:
                before_norm.append(z)
                z = _batchnorm(z)
            preactivations.append(z)
            h = self.activate(z)
        raise AssertionError("unreachable")

    def forward(self, x: Tensor) -> Tensor:
        """Outputs ``(S, B, d_out)`` for inputs ``(B, d_in)`` (shared) or ``(S, B, d_in)``."""
        return self._forward(x)[0]

    def trace(self, x: Tensor) -> Trace:
        """The forward pass with every layer's input, linear output, pre-activation (after
        BatchNorm) and activation; see :class:`~relulab.engine.family.Trace`."""
        output, preactivations, inputs, before_norm = self._forward(x)
        return Trace(
            output=output,
            inputs=tuple(inputs),
            linear_outputs=tuple(before_norm if self.spec.batchnorm else preactivations),
            preactivations=tuple(preactivations),
            activations=tuple(inputs[1:]),
        )

    @torch.no_grad()
    def loss_and_grads(self, x: Tensor, y: Tensor, loss: LossName) -> tuple[Tensor, list[Tensor]]:
        r"""Per-network loss and gradients by explicit backpropagation (no autograd graph).

        With :math:`r = \hat y - y` and :math:`g_L = \partial L/\partial \hat y` (:math:`r` for
        ``half_sum``, :math:`2r/(B\,d_{out})` for ``mse``), going down the layers:
        :math:`\partial W_l = g_l^\top h_{l-1}`, :math:`\partial b_l = \sum_i g_l`,
        :math:`g_{l-1} = (g_l W_l) \odot \sigma'(z_{l-1})`; the shift of ReLU−b does not enter.
        Checked against torch autograd + optimisers in ``tests/engine/test_engine_families.py``.
        """
        output, preactivations, inputs, _ = self._forward(x)
        residual = output - y
        squared_sum = residual.square().sum(dim=(1, 2))
        scale = squared_error_scale(loss, residual.shape[1], residual.shape[2])
        losses = squared_sum * scale
        g = residual if 2.0 * scale == 1.0 else residual * (2.0 * scale)  # half_sum: g = r
        grads: list[Tensor] = []
        for layer in range(len(self.weights) - 1, -1, -1):
            h, bias = inputs[layer], self.biases[layer]
            if h.dim() == 2:
                weight_grad, bias_grad = shared_input_grads(g, h, bias)
            else:  # layer 0 as (hᵀg)ᵀ: the gradient in the weights' input-major layout
                weight_grad = (
                    batched_matmul(h.transpose(1, 2), g).transpose(1, 2)
                    if layer == 0
                    else batched_matmul(g.transpose(1, 2), h)
                )
                bias_grad = [] if bias is None else [g.sum(dim=1)]
            grads[:0] = [weight_grad, *bias_grad]
            if layer:
                g_hidden = batched_matmul(g, self.weights[layer])
                g = self._activation_backward(g_hidden, preactivations[layer - 1])
        return losses, grads

    def _activation_backward(self, grad: Tensor, z: Tensor) -> Tensor:
        if self.spec.activation == "relu":
            return torch.ops.aten.threshold_backward(grad, z, 0.0)
        return grad * self.activation.grad(z)


class _ReLUInPlace(torch.autograd.Function):
    """ReLU written over its input, and a backward that masks the incoming gradient in place.

    For an FC1 output that nothing else holds (the residual toy's ``gradient_forward``): each of
    the two passes then writes into memory already in use instead of a new ``(S, B, hidden)``
    tensor. Measured on W2 (``relulab bench``), a forward and backward took 236 ms instead of
    248 ms. The saved output decides the mask (``out > 0`` exactly where ``z > 0``).
    """

    @staticmethod
    def forward(ctx, z: Tensor) -> Tensor:
        z.relu_()
        ctx.mark_dirty(z)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (out,) = ctx.saved_tensors
        # a gradient that may be someone else's, or a backward that builds a graph
        # (create_graph: the out= form is not differentiable): the ordinary backward
        if grad._base is not None or not grad.is_contiguous() or torch.is_grad_enabled():
            return torch.ops.aten.threshold_backward(grad, out, 0.0)
        return torch.ops.aten.threshold_backward.grad_input(grad, out, 0.0, grad_input=grad)


def _relu_in_place(z: Tensor) -> Tensor:
    """ReLU over ``z`` itself where that is safe (a tensor of its own, not a view)."""
    return torch.relu(z) if z._base is not None else _ReLUInPlace.apply(z)


class _BlockActivation(Protocol):
    """The activation of one residual block: ``block`` picks its per-neuron shifts."""

    def __call__(self, z: Tensor, block: int) -> Tensor: ...


@dataclass(frozen=True)
class ResidualToySpec:
    """Liu's residual toy (the "depth-1" model seed ``000_…`` builds on): width ``d``,
    ``blocks`` MLP blocks of ``hidden`` units, LayerNorm ``"post"`` or ``"pre"``, the block
    output scaled by ``alpha``.

    Example:
        >>> ResidualToySpec(width=50, hidden=200, blocks=10)  # seed 000's teacher and students
        ResidualToySpec(width=50, hidden=200, blocks=10, norm='post', alpha=1.0)
    """

    width: int
    hidden: int
    blocks: int
    norm: Literal["post", "pre"] = "post"
    alpha: float = 1.0

    def __post_init__(self) -> None:
        if min(self.width, self.hidden, self.blocks) < 1:
            raise ValueError("width, hidden and blocks must be positive")
        if self.norm not in ("post", "pre"):
            raise ValueError(f"norm must be 'post' or 'pre', got {self.norm!r}")


class BatchedResidualToy(_StackedNetworks):
    """S residual toys of one :class:`ResidualToySpec` (module docstring); weights in
    PyTorch's default init unless told otherwise ([I, strong]: Kaiming-normal does not give seed
    ``000_…``'s figures).

    Args:
        spec: the architecture.
        n_networks: S.
        init: a per-tensor scheme of :data:`relulab.init.SCHEMES`, or one per network.
        init_scale: multiplies every drawn weight.
        seeds: one per network (default ``0 … S−1``).
        relu_shift: the ReLU−b shift :math:`b`, shared or per network.
        dtype: the parameters' dtype.
        device: their device.

    Example:
        >>> toy = BatchedResidualToy(ResidualToySpec(8, 32, 4), n_networks=3, relu_shift=0.25)
        >>> trace = toy.trace(torch.randn(20, 8))
        >>> trace.output.shape, len(trace.stream), trace.preactivations[0].shape
        (torch.Size([3, 20, 8]), 4, torch.Size([3, 20, 32]))
    """

    def __init__(
        self,
        spec: ResidualToySpec,
        n_networks: int,
        init: str | Sequence[str] = "torch_default",
        init_scale: float | Sequence[float] = 1.0,
        seeds: Sequence[int] | None = None,
        relu_shift: float | Sequence[float] | Tensor = 0.0,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        self.spec = spec
        shapes = [(spec.hidden, spec.width), (spec.width, spec.hidden)] * spec.blocks
        self._set_up(n_networks, shapes, False, init, init_scale, seeds, relu_shift, dtype, device)
        self.neuron_shifts: list[Tensor] | None = None  # per block (S, 1, hidden), if calibrated

    @torch.no_grad()
    def module(self, s: int) -> ResidualToy:
        """Network ``s`` as a plain :class:`relulab.nn.ResidualToy` with its current weights, on
        the batched model's device."""
        if self.neuron_shifts is not None:
            raise ValueError("per-neuron shifts have no nn.ResidualToy counterpart")
        spec = self.spec
        module = ResidualToy(
            spec.width, spec.hidden, spec.blocks, spec.norm, spec.alpha, float(self.shift[s])
        ).to(dtype=self.params[0].dtype, device=self.params[0].device)
        for linear, weight in zip(
            [*module.fc1, *module.fc2], [*self.params[0::2], *self.params[1::2]], strict=True
        ):
            linear.weight.copy_(weight[s])
        return module

    def _activation(self, z: Tensor, block: int, in_place: bool = False) -> Tensor:
        """ReLU−b with the network's scalar shift, or the block's per-neuron shifts if calibrated;
        the subtraction (a full pass over the hidden tensor) is skipped when b ≡ 0. With
        ``in_place`` the ReLU overwrites ``z`` (callers that keep no pre-activation)."""
        relu = _relu_in_place(z) if in_place else torch.relu(z)
        if self.neuron_shifts is not None:
            return relu - self.neuron_shifts[block]
        return relu - self.shift if self.has_shift else relu

    def _layer_norm(self, h: Tensor) -> Tensor:
        return torch.nn.functional.layer_norm(h, (self.spec.width,), eps=LN_EPS)

    @overload
    def _run(self, x: Tensor, activate: _BlockActivation, record: Literal[False]) -> Tensor: ...
    @overload
    def _run(self, x: Tensor, activate: _BlockActivation, record: Literal[True]) -> Trace: ...
    def _run(self, x: Tensor, activate: _BlockActivation, record: bool) -> Trace | Tensor:
        """The blocks in order (:func:`relulab.nn.residual_block`); a :class:`Trace` if
        ``record``, else only the output (no intermediate kept)."""
        # shared inputs stay (B, d) into the first block: its FC1 is then one 2-D GEMM
        # (batched_linear) and the residual sum broadcasts them
        h = x
        inputs, preactivations, activations, stream = [], [], [], []
        for block, (fc1, fc2) in enumerate(zip(self.params[0::2], self.params[1::2], strict=True)):
            step = residual_block(
                h,
                partial(batched_linear, weight=fc1, bias=None),
                partial(batched_linear, weight=fc2, bias=None),
                partial(activate, block=block),
                self.spec.norm,
                self.spec.alpha,
                self._layer_norm,
            )
            h = step.stream
            if record:
                inner = step.inner
                if inner.dim() == 2:  # the trace keeps the network axis first, as documented
                    inner = inner.expand(self.n_networks, *inner.shape)
                inputs += [inner, step.activation]
                preactivations.append(step.preactivation)
                activations.append(step.activation)
                stream.append(h)
        if not record:
            return h
        return Trace(
            output=h,
            inputs=tuple(inputs),
            linear_outputs=tuple(preactivations),
            preactivations=tuple(preactivations),
            activations=tuple(activations),
            stream=tuple(stream),
        )

    def forward(self, x: Tensor) -> Tensor:
        """Outputs ``(S, B, d)`` for inputs ``(B, d)`` (shared) or ``(S, B, d)``."""
        return self._run(x, self._activation, record=False)

    def gradient_forward(self, x: Tensor) -> Tensor:
        """:meth:`forward` with each ReLU written over FC1's output and its backward masking
        the incoming gradient in place (first-order reverse mode only; see
        :meth:`~relulab.engine.family.BatchedFamily.gradient_forward`)."""
        return self._run(x, partial(self._activation, in_place=True), record=False)

    def trace(self, x: Tensor) -> Trace:
        """The forward pass with, per block, FC1's input and output (the pre-activations the
        neuron-state probes need), the ReLU−b output, and the residual stream after the block."""
        return self._run(x, self._activation, record=True)

    @torch.no_grad()
    def calibrate_shifts_(self, x: Tensor) -> list[Tensor]:
        r"""Per-neuron shifts :math:`b_{kj} = \langle \mathrm{ReLU}(z_{kj})\rangle_{\text{data}}`
        (:func:`relulab.nn.statistics.centring_shift`), block by block in forward order (each
        block sees the already-shifted earlier blocks), so every hidden unit's output is centred
        on ``x``. Afterwards the toy uses them instead of its scalar shift.

        Args:
            x: the data ``(N, d)`` or ``(S, N, d)``.

        Returns:
            The shifts of every block, each ``(S, 1, hidden)``.

        Example:
            >>> toy = BatchedResidualToy(ResidualToySpec(4, 8, 2), n_networks=3)
            >>> [b.shape for b in toy.calibrate_shifts_(torch.randn(16, 4))]
            [torch.Size([3, 1, 8]), torch.Size([3, 1, 8])]
        """
        shifts: list[Tensor] = []
        self.neuron_shifts = shifts  # _activation reads them, block by block, as they are added

        def calibrated(z: Tensor, block: int) -> Tensor:
            shifts.append(centring_shift(z, BATCHED_SAMPLE_DIMS, keepdim=True))
            return self._activation(z, block)

        self._run(x, calibrated, record=False)
        return shifts
