r"""Which activation calls a forward pass makes, with each call's input before any in-place
write, its output, its unit axis and the layer that produced its input.

A *layer* of the probe is one activation **call**: a module called twice (ResNet's
``BasicBlock`` reuses one ``nn.ReLU(inplace=True)``) is two layers. Two sources of calls:

* **activation modules** (:data:`ACTIVATION_MODULES`; the *composite* ones of
  :data:`COMPOSITE_ACTIVATIONS`, matched by class name — Hugging Face's ``NewGELUActivation``,
  ``GELUActivation``, ``GELUTanh``, …; plus the caller's own types): a forward pre-hook reduces
  the input :math:`z` *before* the module runs (so an in-place ReLU cannot overwrite it), a
  forward hook reads the output :math:`h`. Named ``{module path}#{k}``, the k-th call (from 0)
  of that module in one forward pass: ``layer1.0.relu#1``. Whatever runs inside an activation
  module — the ``torch.tanh`` inside GPT-2's ``gelu_new`` formula, a nested ``nn.ReLU`` — is
  part of that one activation, never a layer of its own.
* **activation functions** (:data:`ACTIVATION_FUNCTIONS`: ``F.relu``, ``torch.relu``,
  ``Tensor.relu_``, ``F.gelu``, ``F.silu``, ``torch.tanh``, …) called anywhere but inside an
  activation module: a :class:`torch.overrides.TorchFunctionMode` sees each call, reduces its
  input before calling it and reads its result. Named ``{caller path}:{function}#{k}``, the
  caller being the innermost module whose forward is running (tracked by forward pre- and
  post-hooks on every module), the root's path empty: ``layers.0:relu#0``, ``:relu#2``.

The **unit axis** follows the layer that produced the input (the *producer*): the call whose
output is the input itself when one of the last :data:`RECENT_PRODUCERS` calls produced it (a
time embedding computed before a convolution and used after it), else the most recent
call in this forward pass of a function with a feature axis (:data:`PRODUCER_FUNCTIONS`) —
``F.linear`` (so ``nn.Linear``), ``torch.addmm``, ``torch.matmul``, ``F.embedding``,
``F.layer_norm``: the **last** axis at any rank; ``F.conv*d``, ``F.batch_norm``,
``F.group_norm``, ``F.instance_norm``: axis **1** — or the output of a producing module
(:data:`PRODUCER_MODULES`: Hugging Face's ``Conv1D``, GPT-2's Linear, last axis). The rule, in
order (:func:`resolve_unit_axis`):

1. ``unit_axis`` given by the caller: that axis;
2. the input has the producer's output rank and the producer's width on the producer's axis:
   that axis (this covers the producer's output itself, and a residual sum after it);
3. a last-axis producer's 2-D output re-viewed (``x.view(-1, d)`` → ``addmm`` → ``.view(N, T,
   d')``): the input has the same number of elements and the producer's width last: the last
   axis (``"reshaped"``);
4. exactly one axis after the first has the producer's width (a transposed output): that axis;
5. otherwise axis 1 (channels-first), reported as ``unit_axis_rule = "default"`` — and
   :func:`relulab.probe.probe` warns (:class:`UnitAxisWarning`).

**Padding.** With a token mask ``(N, T)`` (the ``attention_mask`` of a language model's
inputs, 0 at padding; :func:`token_mask` reads and checks it), the positions of an activation
``(N, T, …)`` whose mask is 0 are left out of every statistic (:func:`unit_rows`). The probe and
the monitor share this rule.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from relulab.nn import catalogue
from relulab.nn.catalogue import Family

__all__ = [
    "ACTIVATION_FUNCTIONS",
    "ACTIVATION_MODULES",
    "COMPOSITE_ACTIVATIONS",
    "FAMILIES",
    "PRODUCER_FUNCTIONS",
    "PRODUCER_MODULES",
    "CallRecorder",
    "LayerAccumulator",
    "ProbeError",
    "Producer",
    "activation_family",
    "family_of",
    "resolve_unit_axis",
    "token_mask",
    "unit_rows",
    "zero_padding",
]

#: ``rectifier``: zero output and zero gradient for :math:`z \le 0` (dead units exist);
#: ``leaky``: a non-zero gradient below zero; ``smooth``: smooth, non-zero gradient almost
#: everywhere; ``other``: a module type the caller added, of unknown kind.
FAMILIES: tuple[str, ...] = ("rectifier", "leaky", "smooth", "other")

# Every table below is built from the one declaration per kind in relulab.nn.catalogue.

#: Activation module types and their family.
ACTIVATION_MODULES: dict[type[nn.Module], Family] = {
    module: kind.family for kind in catalogue.ACTIVATIONS for module in kind.modules
}

#: Composite activation modules — one activation written as several operations (GPT-2's
#: ``gelu_new`` is ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``) — by the qualified name of
#: their class (or of a base class), so that no library needs importing to recognise them:
#: Hugging Face ``transformers``' ``activations`` module (5.x and 4.x names) and BLOOM's GELU.
#: Their input is the pre-activation; the operations inside are not layers of their own.
COMPOSITE_ACTIVATIONS: dict[str, Family] = {
    name: kind.family for kind in catalogue.ACTIVATIONS for name in kind.classes
}


def activation_family(module_type: type) -> Family | None:
    """The family of a recognised activation module type — one of :data:`ACTIVATION_MODULES`
    or :data:`COMPOSITE_ACTIVATIONS`, or a subclass — else ``None``.

    Args:
        module_type: a module's class.

    Returns:
        ``"rectifier"``, ``"leaky"``, ``"smooth"``, or ``None`` when not an activation.

    Example:
        >>> activation_family(nn.ReLU), activation_family(nn.Linear)
        ('rectifier', None)
        >>> where = {"__module__": "transformers.activations"}  # matched by name: no import
        >>> activation_family(type("NewGELUActivation", (nn.Module,), where))
        'smooth'
    """
    kind = catalogue.activation_kind(module_type)
    return None if kind is None else kind.family


def _functions() -> dict[Callable, tuple[str, Family]]:
    table: dict[Callable, tuple[str, Family]] = {}
    for kind in catalogue.ACTIVATIONS:
        for path in kind.functions:
            function = catalogue.function(path)
            if function is not None:
                table.setdefault(function, (kind.name, kind.family))
    return table


#: The activation functions intercepted, each with its short name and family.
ACTIVATION_FUNCTIONS: dict[Callable, tuple[str, Family]] = _functions()

#: Functions whose output has a feature axis: name, axis (−1 last, 1 channels).
PRODUCER_FUNCTIONS: dict[Callable, tuple[str, int]] = {
    function: (path.partition(".")[2], kind.unit_axis)
    for kind in catalogue.LAYERS
    for path in kind.functions
    for function in [catalogue.function(path)]
    if function is not None
}


#: How many of the latest producing calls are kept to find the one whose output is an
#: activation's input itself (a choice: deep enough for a time embedding or a skip branch
#: computed a block earlier, small enough to hold few outputs alive).
RECENT_PRODUCERS = 64

#: Modules whose output is a producer's (last axis), by qualified class name, with the layout
#: of their ``weight``: Hugging Face's ``Conv1D`` (GPT-2's Linear: ``x @ W + b`` with ``W``
#: stored ``(in, out)``, computed by ``torch.addmm`` on the flattened input and re-viewed).
PRODUCER_MODULES: dict[str, tuple[str, str]] = {
    name: (kind.label, kind.layout or "out_in")
    for kind in catalogue.LAYERS
    if kind.module_output
    for name in kind.classes
}

#: Producers whose weight gives each unit a hyperplane ``w_j·x + b_j``, and its layout:
#: ``out_in`` (``F.linear``: row j) or ``in_out`` (``addmm(b, x, W)``: column j).
_WEIGHTED = {
    **{
        path.partition(".")[2]: kind.layout
        for kind in catalogue.LAYERS
        if kind.weight_argument is not None
        for path in kind.functions
    },
    **{kind.label: kind.layout for kind in catalogue.LAYERS if kind.module_output},
}

#: The weight and bias arguments of those producers: ``(position, keyword)`` each.
_ARGUMENTS = {
    path.partition(".")[2]: (kind.weight_argument, kind.bias_argument)
    for kind in catalogue.LAYERS
    if kind.weight_argument is not None
    for path in kind.functions
}


def family_of(module_type: type[nn.Module]) -> Family:
    """The family of an activation module type: its own, that of the nearest known base
    class (:func:`activation_family`), or ``"other"``.

    Example:
        >>> family_of(nn.ReLU), family_of(nn.GELU), family_of(nn.Identity)
        ('rectifier', 'smooth', 'other')
    """
    return activation_family(module_type) or "other"


class ProbeError(ValueError):
    """The probe itself cannot measure a call (not the model failing): never reworded as a
    failure of the model on its data."""


@dataclass
class Producer:
    """The most recent call of a :data:`PRODUCER_FUNCTIONS` function (or output of a
    :data:`PRODUCER_MODULES` module) in this forward pass; ``weight_layout`` says how
    ``weight`` holds unit j's weights (``"out_in"``: row j; ``"in_out"``: column j)."""

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


def _float64(tensor: Tensor) -> Tensor:
    return tensor.detach().to(torch.float64)


def _token_axis(tensor: Tensor, unit_axis: int, mask: Tensor | None) -> int | None:
    """The axis a token mask ``(N, T)`` applies to: axis 1 (axis 2 when the units are on axis
    1), if ``tensor`` has the mask's N samples first and its T positions there; else ``None``."""
    if mask is None or tensor.dim() < 3:
        return None
    axis = 2 if unit_axis % tensor.dim() == 1 else 1
    if tuple(tensor.shape[:1]) + (tensor.shape[axis],) != tuple(mask.shape):
        return None
    return axis


def token_mask(batch: Any) -> Tensor | None:
    """The token mask of a batch of model arguments: its ``attention_mask`` when that is a
    2-D ``(N, T)`` tensor (1 = a token, 0 = padding), checked against the tokens it masks.

    Args:
        batch: a tensor, a sequence, or a mapping of model arguments (``input_ids``,
            ``attention_mask``, …); only a mapping carries a mask.

    Returns:
        The mask, or ``None`` when the batch carries none.

    Raises:
        ValueError: the mask's shape is not that of ``input_ids`` (or of ``inputs_embeds``'
            first two axes), or it keeps no token at all.

    Example:
        >>> ids = torch.zeros(2, 5, dtype=torch.long)
        >>> token_mask({"input_ids": ids, "attention_mask": torch.ones(2, 5)}).shape
        torch.Size([2, 5])
        >>> short = {"input_ids": ids, "attention_mask": torch.ones(2, 4)}  # one token short
        >>> token_mask(short)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: attention_mask has shape (2, 4) but input_ids (2, 5): ...
    """
    if not isinstance(batch, Mapping):
        return None
    mask = batch.get("attention_mask")
    if not isinstance(mask, Tensor) or mask.dim() != 2:
        return None
    for name, axes in (("input_ids", 2), ("inputs_embeds", 3)):
        tokens = batch.get(name)
        if isinstance(tokens, Tensor) and tokens.dim() == axes:
            if tuple(tokens.shape[:2]) != tuple(mask.shape):
                raise ValueError(
                    f"attention_mask has shape {tuple(mask.shape)} but {name} "
                    f"{tuple(tokens.shape)}: the mask needs one entry per token, (N, T) as {name}"
                )
            break
    if mask.numel() and not bool(mask.detach().bool().any()):
        raise ValueError(
            f"attention_mask {tuple(mask.shape)} is 0 everywhere: every position is padding, "
            "nothing is left to measure"
        )
    return mask


def unit_rows(tensor: Tensor, unit_axis: int, mask: Tensor | None = None) -> Tensor:
    """Every position of every sample as one row, the units as columns: ``(rows, units)``;
    with a token mask ``(N, T)`` (1 = a token, 0 = padding) only the positions it keeps.

    Args:
        tensor: an activation, samples first, e.g. ``(N, T, d)`` or ``(N, C, H, W)``.
        unit_axis: the unit axis.
        mask: optional ``(N, T)`` token mask, applied when ``tensor`` has N samples first and T
            positions on axis 1 (axis 2 when the units are on axis 1); otherwise ignored.

    Returns:
        The ``(rows, units)`` matrix, rows in sample-major order.

    Example:
        >>> h = torch.arange(12.0).reshape(2, 3, 2)  # N=2 sequences of T=3 tokens, 2 units
        >>> unit_rows(h, 2, torch.tensor([[1, 1, 0], [1, 0, 0]])).tolist()
        [[0.0, 1.0], [2.0, 3.0], [6.0, 7.0]]
    """
    axis = unit_axis % tensor.dim()
    units = tensor.shape[axis]
    token_axis = _token_axis(tensor, axis, mask)
    if token_axis is None:
        return tensor.movedim(axis, -1).reshape(-1, units)
    moved = tensor.movedim((0, token_axis, axis), (0, 1, -1))
    return moved[mask.to(device=tensor.device, dtype=torch.bool)].reshape(-1, units)


def zero_padding(tensor: Tensor, unit_axis: int, mask: Tensor | None) -> Tensor:
    """``tensor`` with its padded positions set to 0 (for the per-sample rank rows): the
    positions :func:`unit_rows` leaves out; ``tensor`` itself when the mask does not apply.

    Example:
        >>> h = torch.ones(2, 3, 2)  # N=2 sequences of T=3 tokens, 2 units
        >>> zero_padding(h, 2, torch.tensor([[1, 1, 0], [1, 0, 0]]))[:, :, 0].tolist()
        [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    token_axis = _token_axis(tensor, unit_axis, mask)
    if token_axis is None:
        return tensor
    shape = [1] * tensor.dim()
    shape[0], shape[token_axis] = mask.shape
    return tensor * mask.to(device=tensor.device, dtype=tensor.dtype).reshape(shape)


@dataclass
class LayerAccumulator:
    """Running per-unit sums of one activation call over the batches (float64, CPU): of
    :math:`z` (sum, sum of squares, min, max) and of :math:`h` (sum, sum of squares) over the
    kept positions, the first rows of :math:`h` flattened per sample (for effective rank and
    R²), the first position rows ``(tokens, units)`` (for the per-token rank) and the gradient
    sums. ``after_batch_norm``: the input is exactly a BatchNorm's output (``F.batch_norm``)."""

    index: int
    name: str
    module: str
    call: int
    kind: str
    family: Family
    function: str | None
    unit_axis: int
    unit_axis_rule: str
    producer: str | None
    kinks: np.ndarray | None = None
    after_batch_norm: bool = False
    samples: int = 0
    count: int = 0
    z_sum: Tensor | None = None
    z_sq_sum: Tensor | None = None
    z_max: Tensor | None = None
    z_min: Tensor | None = None
    h_sum: Tensor | None = None
    h_sq_sum: Tensor | None = None
    grad_sq_sum: float = 0.0
    grad_count: int = 0
    kept: list[Tensor] = field(default_factory=list)
    kept_rows: int = 0
    rows_aligned: bool = True
    token_kept: list[Tensor] = field(default_factory=list)
    token_kept_rows: int = 0

    @property
    def units(self) -> int:
        return 0 if self.z_sum is None else int(self.z_sum.numel())

    def add_input(self, z: Tensor, batch_size: int, mask: Tensor | None = None) -> None:
        """Reduce one call's pre-activation over every axis but the unit axis (over the kept
        positions only, with a token ``mask``)."""
        if self.z_sum is not None and z.shape[self.unit_axis] != self.units:
            raise ProbeError(
                f"activation call {self.name} had {self.units} units on axis {self.unit_axis} "
                f"and now {z.shape[self.unit_axis]}: the model calls its activations "
                "differently from batch to batch"
            )
        rows = unit_rows(_float64(z), self.unit_axis, mask)
        sums = (rows.sum(dim=0).cpu(), rows.square().sum(dim=0).cpu(), *_extremes(rows))
        self.count += rows.shape[0]
        self.samples += batch_size
        self.rows_aligned = self.rows_aligned and z.shape[0] == batch_size
        if self.z_sum is None:
            self.z_sum, self.z_sq_sum, self.z_max, self.z_min = sums
            return
        self.z_sum += sums[0]
        self.z_sq_sum += sums[1]
        self.z_max = torch.maximum(self.z_max, sums[2])
        self.z_min = torch.minimum(self.z_min, sums[3])

    def add_output(
        self,
        h: Tensor,
        keep_rows: int,
        mask: Tensor | None = None,
        keep_token_rows: int | None = None,
    ) -> None:
        """Add one call's activation: per-unit sums over the kept positions, the first
        ``keep_rows`` samples flattened for the rank and R² (padded positions set to 0) and the
        first ``keep_token_rows`` (default ``keep_rows``) kept positions for the per-token
        rank."""
        if not isinstance(h, Tensor) or h.dim() <= self.unit_axis:
            return
        if h.shape[self.unit_axis] != self.units:
            return
        h64 = _float64(h)
        rows = unit_rows(h64, self.unit_axis, mask)
        total, square = rows.sum(dim=0).cpu(), rows.square().sum(dim=0).cpu()
        self.h_sum = total if self.h_sum is None else self.h_sum + total
        self.h_sq_sum = square if self.h_sq_sum is None else self.h_sq_sum + square
        wanted = keep_rows - self.kept_rows
        if self.rows_aligned and wanted > 0:
            flat = zero_padding(h64[:wanted], self.unit_axis, _head(mask, wanted))
            flat = flat.reshape(min(h.shape[0], wanted), -1).cpu().clone()
            self.kept.append(flat)
            self.kept_rows += flat.shape[0]
        wanted = (keep_rows if keep_token_rows is None else keep_token_rows) - self.token_kept_rows
        if h.dim() > 2 and wanted > 0:
            self.token_kept.append(rows[:wanted].cpu().clone())
            self.token_kept_rows += self.token_kept[-1].shape[0]

    def add_gradient(self, grad: Tensor, factor: float, mask: Tensor | None = None) -> None:
        """Add :math:`(\\text{factor}\\cdot\\partial L/\\partial h)^2` summed over the kept
        positions, and its count."""
        rows = unit_rows(_float64(grad), self.unit_axis, mask)
        self.grad_sq_sum += float((rows * factor).square().sum())
        self.grad_count += rows.numel()


def _extremes(rows: Tensor) -> tuple[Tensor, Tensor]:
    """Per-column maximum and minimum of ``rows`` on the CPU (−∞ and +∞ for no rows: every
    position of the batch was padding)."""
    if rows.shape[0] == 0:
        units = rows.shape[1]
        return torch.full((units,), -torch.inf, dtype=rows.dtype), torch.full(
            (units,), torch.inf, dtype=rows.dtype
        )
    return rows.amax(dim=0).cpu(), rows.amin(dim=0).cpu()


def _head(mask: Tensor | None, rows: int) -> Tensor | None:
    return None if mask is None else mask[:rows]


def _first_tensor(args: tuple, kwargs: dict) -> Any:
    if args:
        return args[0]
    return next(iter(kwargs.values()), None)


def _argument(args: tuple, kwargs: dict, position: int, name: str) -> Any:
    if len(args) > position:
        return args[position]
    return kwargs.get(name)


class CallRecorder(TorchFunctionMode):
    """Records every activation call of ``model`` while active (module docstring).

    Use :meth:`attach` (hooks on every module), then :meth:`recording` around each forward
    pass, then :meth:`detach`. Statistics go to :attr:`layers`, keyed by call, in the order
    the calls were first made.
    """

    def __init__(
        self,
        model: nn.Module,
        extra_types: tuple[type[nn.Module], ...] = (),
        unit_axis: int | None = None,
        keep_rows: int = 0,
        keep_token_rows: int | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.names = {id(m): name for name, m in model.named_modules()}
        self.activation_modules = {
            id(m): m
            for m in model.modules()
            if m is not model
            and (activation_family(type(m)) is not None or isinstance(m, tuple(extra_types)))
        }
        self.producer_modules = {
            id(m): (kind.label, kind.layout or "out_in")
            for m in model.modules()
            for kind in [catalogue.layer_kind(m)]
            if kind is not None and kind.module_output
        }
        self.unit_axis = unit_axis
        self.keep_rows = keep_rows
        self.keep_token_rows = keep_rows if keep_token_rows is None else keep_token_rows
        self.layers: dict[tuple[str, str | None, int], LayerAccumulator] = {}
        self.gradient_factor = 1.0
        self._gradients = False
        self._stack: list[nn.Module] = []
        self._pending: list[LayerAccumulator | None] = []
        self._calls: Counter = Counter()
        self._producer: Producer | None = None
        self._recent: deque[Producer] = deque(maxlen=RECENT_PRODUCERS)
        self._batch_size = 0
        self._mask: Tensor | None = None
        self._active = False
        self._handles: list[Any] = []

    # -- hooks --------------------------------------------------------------------------------
    def attach(self) -> None:
        """Register a forward pre-hook and an always-called forward hook on every module."""
        for module in self.model.modules():
            self._handles.append(module.register_forward_pre_hook(self._pre_hook, with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post_hook, always_call=True))

    def detach(self) -> None:
        """Remove every hook this recorder registered."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _pre_hook(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        outermost = not self._inside_activation_module()
        self._stack.append(module)
        if id(module) not in self.activation_modules:
            return
        z = _first_tensor(args, kwargs)
        if not (self._active and outermost and isinstance(z, Tensor)):
            self._pending.append(None)  # nested in another activation: part of that one
            return
        key = (self.names.get(id(module), ""), None)
        layer = self._layer(key, type(module).__name__, family_of(type(module)), z)
        layer.add_input(z, self._batch_size, self._mask)
        self._pending.append(layer)

    def _post_hook(self, module: nn.Module, args: tuple, output: Any) -> None:
        if id(module) in self.activation_modules and self._pending:
            layer = self._pending.pop()
            if layer is not None:
                self._output(layer, output)
        if self._active and id(module) in self.producer_modules and isinstance(output, Tensor):
            self._set_module_producer(module, output)
        if self._stack and self._stack[-1] is module:
            self._stack.pop()

    # -- torch functions ---------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self._active:
            return func(*args, **kwargs)
        try:
            activation = ACTIVATION_FUNCTIONS.get(func)
            producer = PRODUCER_FUNCTIONS.get(func)
        except TypeError:  # an unhashable callable
            return func(*args, **kwargs)
        if activation is not None and not self._inside_activation_module():
            return self._functional_activation(func, activation, args, kwargs)
        output = func(*args, **kwargs)
        if producer is not None and isinstance(output, Tensor) and output.dim() >= 1:
            self._set_producer(producer, args, kwargs, output)
        return output

    def _inside_activation_module(self) -> bool:
        return any(id(module) in self.activation_modules for module in self._stack)

    def _caller_path(self) -> str:
        caller = self._stack[-1] if self._stack else self.model
        return self.names.get(id(caller), "")

    def _functional_activation(
        self, func: Callable, activation: tuple[str, Family], args: tuple, kwargs: dict
    ) -> Any:
        short, family = activation
        z = _first_tensor(args, kwargs)
        if not isinstance(z, Tensor) or z.dim() < 2:
            return func(*args, **kwargs)
        layer = self._layer((self._caller_path(), short), f"F.{short}", family, z)
        layer.add_input(z, self._batch_size, self._mask)  # before an in-place call writes z
        output = func(*args, **kwargs)
        self._output(layer, output)
        return output

    def _set_producer(
        self, producer: tuple[str, int], args: tuple, kwargs: dict, output: Tensor
    ) -> None:
        function, axis = producer
        weight = bias = None
        if function in _ARGUMENTS:  # F.linear(x, W, b); addmm(b, x, W): W stored (in, out)
            (w_position, w_name), (b_position, b_name) = _ARGUMENTS[function]
            weight = _argument(args, kwargs, w_position, w_name)
            bias = _argument(args, kwargs, b_position, b_name)
        self._remember(
            _producer(
                self._caller_path(), function, axis, output, weight, bias, _WEIGHTED.get(function)
            )
        )

    def _set_module_producer(self, module: nn.Module, output: Tensor) -> None:
        function, layout = self.producer_modules[id(module)]
        weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
        path = self.names.get(id(module), "")
        self._remember(_producer(path, function, -1, output, weight, bias, layout))

    def _remember(self, producer: Producer) -> None:
        self._producer = producer
        self._recent.append(producer)

    def _producer_of(self, z: Tensor) -> Producer | None:
        """The recent producer whose output is ``z`` itself, else the most recent one."""
        for producer in reversed(self._recent):
            if producer.output is z:
                return producer
        return self._producer

    # -- layers -------------------------------------------------------------------------------
    def _layer(
        self, key: tuple[str, str | None], kind: str, family: Family, z: Tensor
    ) -> LayerAccumulator:
        call = self._calls[key]
        self._calls[key] += 1
        full_key = (*key, call)
        layer = self.layers.get(full_key)
        if layer is not None:
            return layer
        path, function = key
        name = f"{path}#{call}" if function is None else f"{path}:{function}#{call}"
        try:
            source = self._producer_of(z)
            axis, rule = resolve_unit_axis(z, source, self.unit_axis)
        except ValueError as error:
            raise ProbeError(f"activation call {name}: {error}") from None
        producer = source if rule in ("producer", "reshaped", "moved") else None
        layer = LayerAccumulator(
            index=len(self.layers),
            name=name,
            module=path,
            call=call,
            kind=kind,
            family=family,
            function=function,
            unit_axis=axis,
            unit_axis_rule=rule,
            producer=producer.label if producer is not None else None,
            kinks=_kinks(producer, z, axis) if producer is not None else None,
            after_batch_norm=producer is not None
            and producer.function == "batch_norm"
            and _is_output_of(producer, z, axis),
        )
        self.layers[full_key] = layer
        return layer

    def _output(self, layer: LayerAccumulator, output: Any) -> None:
        if not isinstance(output, Tensor):
            return
        layer.add_output(output, self.keep_rows, self._mask, self.keep_token_rows)
        if self._gradients and output.requires_grad:
            mask = self._mask
            output.register_hook(lambda grad: layer.add_gradient(grad, self.gradient_factor, mask))

    # -- one forward pass ---------------------------------------------------------------------
    @contextmanager
    def recording(
        self, batch_size: int, gradients: bool = False, mask: Tensor | None = None
    ) -> Iterator[None]:
        """Record the calls of one forward pass over a batch of ``batch_size`` samples; with
        ``gradients``, hook each output's gradient, scaled by :attr:`gradient_factor` when
        the backward pass delivers it; with a token ``mask`` ``(N, T)``, leave the positions
        where it is 0 (padding) out of every statistic."""
        self._calls.clear()
        self._stack.clear()
        self._pending.clear()
        self._producer = None
        self._recent.clear()
        self._batch_size = batch_size
        self._mask = None if mask is None else mask.detach()
        self._gradients = gradients
        self.gradient_factor = 1.0
        self._active = True
        try:
            with self:
                yield
        finally:
            self._active = False
            self._producer = None
            self._recent.clear()
            self._mask = None


def _producer(
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


def _is_output_of(producer: Producer, z: Tensor, axis: int) -> bool:
    """Whether ``z`` is exactly the producer's output (the same tensor, unmodified since)."""
    return z is producer.output and z._version == producer.version and axis == producer.axis


def _kinks(producer: Producer, z: Tensor, axis: int) -> np.ndarray | None:
    r"""Per unit :math:`-b_j/\lVert w_j\rVert` when ``z`` is exactly the output of a layer
    with a weight per unit (``F.linear``, ``addmm``, Hugging Face's ``Conv1D``)."""
    if producer.weight is None or not _is_output_of(producer, z, axis):
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
