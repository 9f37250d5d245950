r"""Which activation calls one forward pass makes, named as the probe names them, measuring
nothing: what :func:`relulab.nn.replace_activations` needs to find the activations it could not
replace, without importing :mod:`relulab.probe` (a higher floor).

A call is a catalogued activation module (:func:`relulab.nn.catalogue.activation_kind`, or
one of ``extra_types``) called outside another activation module, named ``{module path}#{k}``;
or a catalogued activation function (``F.relu``, ``torch.tanh``, …) called outside every
activation module on an input with a sample axis, named ``{caller path}:{name}#{k}`` — the
rules of :class:`relulab.probe.intercept.CallRecorder`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from relulab.nn import catalogue
from relulab.nn.run import cuda_devices, model_device, preserved, to_device

__all__ = ["ActivationCall", "activation_calls"]

_FUNCTIONS = {
    function: kind.name
    for kind in catalogue.ACTIVATIONS
    for path in kind.functions
    for function in [catalogue.function(path)]
    if function is not None
}


@dataclass(frozen=True)
class ActivationCall:
    """One activation call: its ``name`` (``layer1.0.relu#1``, ``layers.0:relu#0``), the
    ``module`` path, the ``call`` index k, and the ``kind`` (the module's class name, or
    ``F.{name}`` for a function)."""

    name: str
    module: str
    call: int
    kind: str


class _Counter(TorchFunctionMode):
    def __init__(self, model: nn.Module, extra_types: tuple[type[nn.Module], ...]) -> None:
        super().__init__()
        self.model = model
        self.names = {id(m): name for name, m in model.named_modules()}
        self.activations = {
            id(m)
            for m in model.modules()
            if m is not model
            and (catalogue.activation_kind(type(m)) is not None or isinstance(m, extra_types))
        }
        self.stack: list[nn.Module] = []
        self.counts: Counter = Counter()
        self.calls: list[ActivationCall] = []

    def _inside(self) -> bool:
        return any(id(module) in self.activations for module in self.stack)

    def _record(self, path: str, function: str | None, kind: str) -> None:
        call = self.counts[(path, function)]
        self.counts[(path, function)] += 1
        name = f"{path}#{call}" if function is None else f"{path}:{function}#{call}"
        self.calls.append(ActivationCall(name, path, call, kind))

    def pre(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        outermost = not self._inside()
        self.stack.append(module)
        z = args[0] if args else next(iter(kwargs.values()), None)
        if id(module) in self.activations and outermost and isinstance(z, Tensor):
            self._record(self.names.get(id(module), ""), None, type(module).__name__)

    def post(self, module: nn.Module, args: tuple, output: Any) -> None:
        if self.stack and self.stack[-1] is module:
            self.stack.pop()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            short = _FUNCTIONS.get(func)
        except TypeError:  # an unhashable callable
            short = None
        z = args[0] if args else next(iter(kwargs.values()), None)
        if short is not None and not self._inside() and isinstance(z, Tensor) and z.dim() >= 2:
            caller = self.stack[-1] if self.stack else self.model
            self._record(self.names.get(id(caller), ""), short, f"F.{short}")
        return func(*args, **kwargs)


def activation_calls(
    model: nn.Module, x: Tensor, extra_types: tuple[type[nn.Module], ...] = ()
) -> list[ActivationCall]:
    """The activation calls of one forward pass ``model(x)``, in call order, the model left as
    it was found (:func:`relulab.nn.run.preserved`) and in its own train/eval mode.

    Args:
        model: any ``nn.Module``.
        x: a batch, samples first (moved to the model's device).
        extra_types: further module types counted as activations.

    Returns:
        One :class:`ActivationCall` per call.

    Example:
        >>> relu = nn.ReLU()
        >>> model = nn.Sequential(nn.Linear(2, 2), relu, nn.Linear(2, 2), relu)
        >>> [c.name for c in activation_calls(model, torch.randn(3, 2))]
        ['1#0', '1#1']
    """
    counter = _Counter(model, tuple(extra_types))
    handles = []
    with preserved(model, cuda_devices([x])), torch.no_grad():
        model.train(model.training)
        for module in model.modules():
            handles.append(module.register_forward_pre_hook(counter.pre, with_kwargs=True))
            handles.append(module.register_forward_hook(counter.post, always_call=True))
        try:
            with counter:
                model(to_device(x, model_device(model)))
        finally:
            for handle in handles:
                handle.remove()
    return counter.calls
