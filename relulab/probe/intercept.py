r"""Which activation calls a forward pass makes, with each call's input before any in-place
write, its output, its unit axis and the layer that produced its input (:class:`CallRecorder`).

A *layer* of the probe is one activation **call**: a module called twice (ResNet's
``BasicBlock`` reuses one ``nn.ReLU(inplace=True)``) is two layers. Two sources of calls:

* **activation modules** (:data:`~relulab.probe.tables.ACTIVATION_MODULES`; the *composite*
  ones of :data:`~relulab.probe.tables.COMPOSITE_ACTIVATIONS`, matched by class name — Hugging
  Face's ``NewGELUActivation``, ``GELUActivation``, ``GELUTanh``, …; plus the caller's own
  types): a forward pre-hook reduces the input :math:`z` *before* the module runs (so an
  in-place ReLU cannot overwrite it), a forward hook reads the output :math:`h`. Named
  ``{module path}#{k}``, the k-th call (from 0) of that module in one forward pass:
  ``layer1.0.relu#1``. Whatever runs inside an activation module — the ``torch.tanh`` inside
  GPT-2's ``gelu_new`` formula, a nested ``nn.ReLU`` — is part of that one activation, never a
  layer of its own.
* **activation functions** (:data:`~relulab.probe.tables.ACTIVATION_FUNCTIONS`: ``F.relu``,
  ``torch.relu``, ``Tensor.relu_``, ``F.gelu``, ``F.silu``, ``torch.tanh``, …) called anywhere
  but inside an activation module: a :class:`torch.overrides.TorchFunctionMode` sees each call,
  reduces its input before calling it and reads its result. Named
  ``{caller path}:{function}#{k}``, the caller being the innermost module whose forward is
  running (tracked by forward pre- and post-hooks on every module), the root's path empty:
  ``layers.0:relu#0``, ``:relu#2``.

The recorder remembers the producing calls it sees (:mod:`relulab.probe.unit_axis` picks each
call's unit axis from them) and reduces each call into a
:class:`~relulab.probe.batching.LayerAccumulator`.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from relulab.nn import catalogue
from relulab.nn.catalogue import Family
from relulab.probe.batching import LayerAccumulator, ProbeError
from relulab.probe.tables import (
    ACTIVATION_FUNCTIONS,
    PRODUCER_ARGUMENTS,
    PRODUCER_FUNCTIONS,
    WEIGHTED_PRODUCERS,
    activation_family,
    family_of,
)
from relulab.probe.unit_axis import (
    Producer,
    is_output_of,
    kinks_of,
    make_producer,
    resolve_unit_axis,
)

__all__ = ["RECENT_PRODUCERS", "CallRecorder"]

#: How many of the latest producing calls are kept to find the one whose output is an
#: activation's input itself (a choice: deep enough for a time embedding or a skip branch
#: computed a block earlier, small enough to hold few outputs alive).
RECENT_PRODUCERS = 64


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
        if function in PRODUCER_ARGUMENTS:  # F.linear(x, W, b); addmm(b, x, W): W stored (in, out)
            (w_position, w_name), bias_argument = PRODUCER_ARGUMENTS[function]
            weight = _argument(args, kwargs, w_position, w_name)
            if bias_argument is not None:  # a layer kind may declare no bias argument
                bias = _argument(args, kwargs, *bias_argument)
        layout = WEIGHTED_PRODUCERS.get(function)
        path = self._caller_path()
        self._remember(make_producer(path, function, axis, output, weight, bias, layout))

    def _set_module_producer(self, module: nn.Module, output: Tensor) -> None:
        function, layout = self.producer_modules[id(module)]
        weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
        path = self.names.get(id(module), "")
        self._remember(make_producer(path, function, -1, output, weight, bias, layout))

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
            kinks=kinks_of(producer, z, axis) if producer is not None else None,
            after_batch_norm=producer is not None
            and producer.function == "batch_norm"
            and is_output_of(producer, z, axis),
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
