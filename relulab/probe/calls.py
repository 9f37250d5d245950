r"""Which activation calls a forward pass makes, with each call's input before any in-place
write, its output, its unit axis and the layer that produced its input.

A *layer* of the probe is one activation **call**: a module called twice (ResNet's
``BasicBlock`` reuses one ``nn.ReLU(inplace=True)``) is two layers. Two sources of calls:

* **activation modules** (:data:`ACTIVATION_MODULES`, plus the caller's own types): a forward
  pre-hook reduces the input :math:`z` *before* the module runs (so an in-place ReLU cannot
  overwrite it), a forward hook reads the output :math:`h`. Named ``{module path}#{k}``, the
  k-th call (from 0) of that module in one forward pass: ``layer1.0.relu#1``.
* **activation functions** (:data:`ACTIVATION_FUNCTIONS`: ``F.relu``, ``torch.relu``,
  ``Tensor.relu_``, ``F.gelu``, ``F.silu``, ``torch.tanh``, …) called anywhere but inside an
  activation module: a :class:`torch.overrides.TorchFunctionMode` sees each call, reduces its
  input before calling it and reads its result. Named ``{caller path}:{function}#{k}``, the
  caller being the innermost module whose forward is running (tracked by forward pre- and
  post-hooks on every module), the root's path empty: ``layers.0:relu#0``, ``:relu#2``.

The **unit axis** follows the layer that produced the input (the *producer*): the most recent
call in this forward pass of a function with a feature axis (:data:`PRODUCER_FUNCTIONS`) —
``F.linear`` (so ``nn.Linear``), ``F.embedding``, ``F.layer_norm``: the **last** axis at any
rank; ``F.conv*d``, ``F.batch_norm``, ``F.group_norm``, ``F.instance_norm``: axis **1**. The
rule, in order (:func:`resolve_unit_axis`):

1. ``unit_axis`` given by the caller: that axis;
2. the input has the producer's output rank and the producer's width on the producer's axis:
   that axis (this covers the producer's output itself, and a residual sum after it);
3. exactly one axis after the first has the producer's width (a transposed output): that axis;
4. otherwise axis 1 (channels-first), reported as ``unit_axis_rule = "default"``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (the name every PyTorch user reads)
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from relulab.nn.activations import ReLUMinusB
from relulab.nn.statistics import sample_dims_except

__all__ = [
    "ACTIVATION_FUNCTIONS",
    "ACTIVATION_MODULES",
    "FAMILIES",
    "PRODUCER_FUNCTIONS",
    "CallRecorder",
    "LayerAccumulator",
    "Producer",
    "family_of",
    "resolve_unit_axis",
]

Family = Literal["rectifier", "leaky", "smooth", "other"]

#: ``rectifier``: zero output and zero gradient for :math:`z \le 0` (dead units exist);
#: ``leaky``: a non-zero gradient below zero; ``smooth``: smooth, non-zero gradient almost
#: everywhere; ``other``: a module type the caller added, of unknown kind.
FAMILIES: tuple[str, ...] = ("rectifier", "leaky", "smooth", "other")

#: Activation module types and their family.
ACTIVATION_MODULES: dict[type[nn.Module], Family] = {
    nn.ReLU: "rectifier",
    ReLUMinusB: "rectifier",
    nn.ReLU6: "rectifier",
    nn.LeakyReLU: "leaky",
    nn.PReLU: "leaky",
    nn.RReLU: "leaky",
    nn.ELU: "leaky",
    nn.CELU: "leaky",
    nn.SELU: "leaky",
    nn.GELU: "smooth",
    nn.SiLU: "smooth",
    nn.Mish: "smooth",
    nn.Softplus: "smooth",
    nn.Tanh: "smooth",
}


def _functions() -> dict[Callable, tuple[str, Family]]:
    table: dict[Callable, tuple[str, Family]] = {}
    groups: list[tuple[Family, list[tuple[str, list[str]]]]] = [
        (
            "rectifier",
            [
                ("relu", ["F.relu", "F.relu_", "torch.relu", "torch.relu_"]),
                ("relu", ["Tensor.relu", "Tensor.relu_"]),
                ("relu6", ["F.relu6"]),
            ],
        ),
        (
            "leaky",
            [
                ("leaky_relu", ["F.leaky_relu", "F.leaky_relu_"]),
                ("prelu", ["F.prelu", "torch.prelu"]),
                ("rrelu", ["F.rrelu", "F.rrelu_"]),
                ("elu", ["F.elu", "F.elu_"]),
                ("celu", ["F.celu", "F.celu_"]),
                ("selu", ["F.selu", "F.selu_", "torch.selu", "torch.selu_"]),
            ],
        ),
        (
            "smooth",
            [
                ("gelu", ["F.gelu"]),
                ("silu", ["F.silu"]),
                ("mish", ["F.mish"]),
                ("softplus", ["F.softplus"]),
                ("tanh", ["torch.tanh", "torch.tanh_", "Tensor.tanh", "Tensor.tanh_"]),
            ],
        ),
    ]
    namespaces = {"F": F, "torch": torch, "Tensor": Tensor}
    for family, entries in groups:
        for short, dotted in entries:
            for path in dotted:
                space, _, attribute = path.partition(".")
                function = getattr(namespaces[space], attribute, None)
                if function is not None:
                    table.setdefault(function, (short, family))
    return table


#: The activation functions intercepted, each with its short name and family.
ACTIVATION_FUNCTIONS: dict[Callable, tuple[str, Family]] = _functions()

#: Functions whose output has a feature axis: name, axis (−1 last, 1 channels).
PRODUCER_FUNCTIONS: dict[Callable, tuple[str, int]] = {
    function: (name, axis)
    for name, axis, function in [
        ("linear", -1, F.linear),
        ("bilinear", -1, F.bilinear),
        ("embedding", -1, F.embedding),
        ("layer_norm", -1, F.layer_norm),
        ("rms_norm", -1, getattr(F, "rms_norm", None)),
        ("conv1d", 1, F.conv1d),
        ("conv2d", 1, F.conv2d),
        ("conv3d", 1, F.conv3d),
        ("conv_transpose1d", 1, F.conv_transpose1d),
        ("conv_transpose2d", 1, F.conv_transpose2d),
        ("conv_transpose3d", 1, F.conv_transpose3d),
        ("batch_norm", 1, F.batch_norm),
        ("group_norm", 1, F.group_norm),
        ("instance_norm", 1, F.instance_norm),
    ]
    if function is not None
}


def family_of(module_type: type[nn.Module]) -> Family:
    """The family of an activation module type: its own, that of the nearest known base
    class, or ``"other"``.

    Example:
        >>> family_of(nn.ReLU), family_of(nn.GELU), family_of(nn.Identity)
        ('rectifier', 'smooth', 'other')
    """
    for base in module_type.__mro__:
        if base in ACTIVATION_MODULES:
            return ACTIVATION_MODULES[base]
    return "other"


@dataclass
class Producer:
    """The most recent call of a :data:`PRODUCER_FUNCTIONS` function in this forward pass."""

    label: str
    function: str
    axis: int
    width: int
    ndim: int
    output: Tensor
    version: int
    weight: Tensor | None = None
    bias: Tensor | None = None


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
        ``"moved"`` or ``"default"``.

    Example:
        >>> linear = Producer("fc", "linear", 2, 64, 3, torch.zeros(0), 0)
        >>> resolve_unit_axis(torch.zeros(8, 10, 64), linear)  # a sequence (N, T, d)
        (2, 'producer')
        >>> resolve_unit_axis(torch.zeros(8, 64, 10), linear)  # transposed after the Linear
        (1, 'moved')
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
        matches = [axis for axis in range(1, z.dim()) if z.shape[axis] == producer.width]
        if len(matches) == 1:
            return matches[0], "moved"
    return 1, "default"


def _float64(tensor: Tensor) -> Tensor:
    return tensor.detach().to(torch.float64)


@dataclass
class LayerAccumulator:
    """Running per-unit sums of one activation call over the batches (float64, CPU): of
    :math:`z` (sum, sum of squares, min, max) and of :math:`h` (sum), the first rows of
    :math:`h` flattened per sample (for effective rank and R²) and the gradient sums."""

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
    samples: int = 0
    count: int = 0
    z_sum: Tensor | None = None
    z_sq_sum: Tensor | None = None
    z_max: Tensor | None = None
    z_min: Tensor | None = None
    h_sum: Tensor | None = None
    grad_sq_sum: float = 0.0
    grad_count: int = 0
    kept: list[Tensor] = field(default_factory=list)
    kept_rows: int = 0
    rows_aligned: bool = True

    @property
    def units(self) -> int:
        return 0 if self.z_sum is None else int(self.z_sum.numel())

    def add_input(self, z: Tensor, batch_size: int) -> None:
        """Reduce one call's pre-activation over every axis but the unit axis."""
        dims = sample_dims_except(z, self.unit_axis)
        if self.z_sum is not None and z.shape[self.unit_axis] != self.units:
            raise ValueError(
                f"activation call {self.name} had {self.units} units on axis {self.unit_axis} "
                f"and now {z.shape[self.unit_axis]}: the model calls its activations "
                "differently from batch to batch"
            )
        z64 = _float64(z)
        sums = (
            z64.sum(dim=dims).cpu(),
            z64.square().sum(dim=dims).cpu(),
            z64.amax(dim=dims).cpu(),
            z64.amin(dim=dims).cpu(),
        )
        self.count += z.numel() // z.shape[self.unit_axis]
        self.samples += batch_size
        self.rows_aligned = self.rows_aligned and z.shape[0] == batch_size
        if self.z_sum is None:
            self.z_sum, self.z_sq_sum, self.z_max, self.z_min = sums
            return
        self.z_sum += sums[0]
        self.z_sq_sum += sums[1]
        self.z_max = torch.maximum(self.z_max, sums[2])
        self.z_min = torch.minimum(self.z_min, sums[3])

    def add_output(self, h: Tensor, keep_rows: int) -> None:
        """Add one call's activation: per-unit sums, and rows kept for rank and R²."""
        if not isinstance(h, Tensor) or h.shape[self.unit_axis] != self.units:
            return
        h64 = _float64(h)
        total = h64.sum(dim=sample_dims_except(h, self.unit_axis)).cpu()
        self.h_sum = total if self.h_sum is None else self.h_sum + total
        wanted = keep_rows - self.kept_rows
        if self.rows_aligned and wanted > 0:
            rows = h64[:wanted].reshape(min(h.shape[0], wanted), -1).cpu().clone()
            self.kept.append(rows)
            self.kept_rows += rows.shape[0]

    def add_gradient(self, grad: Tensor, factor: float) -> None:
        """Add :math:`(\\text{factor}\\cdot\\partial L/\\partial h)^2` summed, and its count."""
        self.grad_sq_sum += float((_float64(grad) * factor).square().sum())
        self.grad_count += grad.numel()


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
    ) -> None:
        super().__init__()
        self.model = model
        self.names = {id(m): name for name, m in model.named_modules()}
        types = tuple(ACTIVATION_MODULES) + tuple(extra_types)
        self.activation_modules = {
            id(m): m for m in model.modules() if isinstance(m, types) and m is not model
        }
        self.unit_axis = unit_axis
        self.keep_rows = keep_rows
        self.layers: dict[tuple[str, str | None, int], LayerAccumulator] = {}
        self.gradient_factor = 1.0
        self._gradients = False
        self._stack: list[nn.Module] = []
        self._pending: list[tuple[LayerAccumulator | None, Tensor | None]] = []
        self._calls: Counter = Counter()
        self._producer: Producer | None = None
        self._batch_size = 0
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
        self._stack.append(module)
        if self._active and id(module) in self.activation_modules:
            z = _first_tensor(args, kwargs)
            if isinstance(z, Tensor):
                key = (self.names.get(id(module), ""), None)
                layer = self._layer(key, type(module).__name__, family_of(type(module)), z)
                layer.add_input(z, self._batch_size)
                self._pending.append((layer, z))
                return
        if id(module) in self.activation_modules:
            self._pending.append((None, None))

    def _post_hook(self, module: nn.Module, args: tuple, output: Any) -> None:
        if id(module) in self.activation_modules and self._pending:
            layer, _ = self._pending.pop()
            if layer is not None:
                self._output(layer, output)
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
        return bool(self._stack) and id(self._stack[-1]) in self.activation_modules

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
        layer.add_input(z, self._batch_size)  # before the call: an in-place call overwrites z
        output = func(*args, **kwargs)
        self._output(layer, output)
        return output

    def _set_producer(
        self, producer: tuple[str, int], args: tuple, kwargs: dict, output: Tensor
    ) -> None:
        function, axis = producer
        axis = axis % output.dim()
        path = self._caller_path()
        weight = bias = None
        if function == "linear":
            weight = _argument(args, kwargs, 1, "weight")
            bias = _argument(args, kwargs, 2, "bias")
        self._producer = Producer(
            label=f"{path or '(model)'} ({function})",
            function=function,
            axis=axis,
            width=output.shape[axis],
            ndim=output.dim(),
            output=output,
            version=output._version,
            weight=weight if isinstance(weight, Tensor) else None,
            bias=bias if isinstance(bias, Tensor) else None,
        )

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
        axis, rule = resolve_unit_axis(z, self._producer, self.unit_axis)
        producer = self._producer if rule in ("producer", "moved") else None
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
        )
        self.layers[full_key] = layer
        return layer

    def _output(self, layer: LayerAccumulator, output: Any) -> None:
        if not isinstance(output, Tensor):
            return
        layer.add_output(output, self.keep_rows)
        if self._gradients and output.requires_grad:
            output.register_hook(lambda grad: layer.add_gradient(grad, self.gradient_factor))

    # -- one forward pass ---------------------------------------------------------------------
    @contextmanager
    def recording(self, batch_size: int, gradients: bool = False) -> Iterator[None]:
        """Record the calls of one forward pass over a batch of ``batch_size`` samples; with
        ``gradients``, hook each output's gradient, scaled by :attr:`gradient_factor` when
        the backward pass delivers it."""
        self._calls.clear()
        self._stack.clear()
        self._pending.clear()
        self._producer = None
        self._batch_size = batch_size
        self._gradients = gradients
        self.gradient_factor = 1.0
        self._active = True
        try:
            with self:
                yield
        finally:
            self._active = False
            self._producer = None


def _kinks(producer: Producer, z: Tensor, axis: int) -> np.ndarray | None:
    r"""Per unit :math:`-b_j/\lVert w_j\rVert` when ``z`` is exactly a Linear layer's output."""
    if (
        producer.function != "linear"
        or producer.weight is None
        or z is not producer.output
        or z._version != producer.version
        or axis != producer.axis
    ):
        return None
    with torch.no_grad():
        weight = producer.weight.detach().to(torch.float64)
        norms = weight.norm(dim=1)
        bias = (
            producer.bias.detach().to(torch.float64)
            if producer.bias is not None
            else torch.zeros_like(norms)
        )
        return (-bias / norms).cpu().numpy()
