r"""Swap a model's activation modules for others — ``nn.ReLU`` for ReLU−b — and back.

:func:`replace_activations` puts a fresh module (its own copy, so per-layer state such as
ReLU−b's shift can be calibrated layer by layer, e.g. by
:func:`relulab.init.calibrate_relu_shift_`) in place of every activation *module* of the given
types, and returns a :class:`Replaced` record; :func:`restore_activations` (or
:meth:`Replaced.undo`) puts the very same original modules back, so the model computes exactly
what it computed before.

Module replacement cannot reach an activation written as a *function* inside a ``forward``
(``F.relu(x)``, ``torch.relu``, ``x.relu()``): those calls keep computing the old activation.
:func:`replace_activations` reads the source of the model's own ``forward`` methods for such
calls (nothing runs), and, given an example input, counts the activation calls one forward pass
makes that are not modules (:func:`relulab.nn.call_count.activation_calls`, the probe's call
naming without its measurements); either finding is recorded and warned
about (:class:`ActivationReplacementWarning`).
"""

from __future__ import annotations

import copy
import inspect
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

from torch import Tensor, nn

from relulab.nn.call_count import activation_calls
from relulab.nn.catalogue import ACTIVATIONS
from relulab.nn.run import model_device

__all__ = [
    "ActivationReplacementWarning",
    "Replaced",
    "Replacement",
    "replace_activations",
    "restore_activations",
]

#: A factory of replacements: called with the site's qualified name and the module it replaces.
ModuleFactory = Callable[[str, nn.Module], nn.Module]

#: The functional forms of the activation modules (the probe's short names): each catalogued
#: kind with both module types and functions (:data:`relulab.nn.catalogue.ACTIVATIONS`).
_FUNCTION_NAMES: dict[type[nn.Module], tuple[str, ...]] = {
    module: (kind.name,) for kind in ACTIVATIONS if kind.functions for module in kind.modules
}


class ActivationReplacementWarning(UserWarning):
    """Some activations of the model were not replaced: functional calls inside ``forward``,
    or one module called several times per forward pass (one replacement serves every call)."""


@dataclass(frozen=True)
class Replacement:
    """One replaced site: ``parent.<key>`` (qualified name ``name``) held ``original`` and now
    holds ``replacement``."""

    name: str
    parent: nn.Module
    key: str
    original: nn.Module
    replacement: nn.Module


@dataclass
class Replaced:
    """What :func:`replace_activations` did, and what it could not do.

    Attributes:
        model: the model whose modules were replaced.
        replacements: one :class:`Replacement` per site, in module order.
        functional_sources: calls of the replaced activation written as functions in the
            source of the model's own ``forward`` methods (``"block (Block.forward): F.relu"``),
            found without running anything.
        functional_calls: the activation calls of one forward pass on the example input that
            are not modules (probe layer names, ``"layer1.0:relu#0"``); ``None`` when no
            example input was given.
        repeated_calls: replaced modules called more than once per forward pass (name → calls):
            every call shares the one replacement. Empty without an example input.
        restored: whether :meth:`undo` has put the originals back.

    A ``Replaced`` is a context manager: leaving the ``with`` block restores the originals.
    """

    model: nn.Module
    replacements: list[Replacement]
    functional_sources: list[str] = field(default_factory=list)
    functional_calls: list[str] | None = None
    repeated_calls: dict[str, int] = field(default_factory=dict)
    restored: bool = False

    def __len__(self) -> int:
        return len(self.replacements)

    @property
    def names(self) -> list[str]:
        """The qualified names of the replaced sites."""
        return [r.name for r in self.replacements]

    @property
    def modules(self) -> dict[str, nn.Module]:
        """Name → the module now at that site."""
        return {r.name: r.replacement for r in self.replacements}

    @property
    def complete(self) -> bool:
        """No functional activation call was found, by reading the source or by running."""
        return not self.functional_sources and not self.functional_calls

    def notes(self) -> list[str]:
        """One sentence per finding that leaves activations unreplaced or shared."""
        notes = []
        if self.functional_sources:
            notes.append(
                "functional activation calls in forward cannot be replaced by module "
                "replacement and keep the old activation: " + ", ".join(self.functional_sources)
            )
        if self.functional_calls:
            notes.append(
                f"{len(self.functional_calls)} activation call(s) of a forward pass are "
                "functions, not modules, and were not replaced: " + ", ".join(self.functional_calls)
            )
        for name, calls in self.repeated_calls.items():
            notes.append(
                f"module {name!r} is called {calls} times per forward pass: its one replacement "
                "serves every call (give each call its own module for per-call state)"
            )
        return notes

    def undo(self) -> None:
        """Put every original module back where it was (a no-op once restored).

        Raises:
            RuntimeError: a site no longer holds its replacement (the model was changed
                since); nothing is restored then.
        """
        if self.restored:
            return
        for r in self.replacements:
            if r.parent._modules.get(r.key) is not r.replacement:
                raise RuntimeError(
                    f"{r.name or 'the model'} no longer holds the module put there by "
                    "replace_activations; nothing was restored"
                )
        for r in reversed(self.replacements):
            setattr(r.parent, r.key, r.original)
        self.restored = True

    def __enter__(self) -> Replaced:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()


def replace_activations(
    model: nn.Module,
    factory_or_module: nn.Module | type[nn.Module] | ModuleFactory,
    types: Sequence[type[nn.Module]] = (nn.ReLU,),
    *,
    example_input: Tensor | None = None,
    warn: bool = True,
) -> Replaced:
    r"""Replace every activation module of ``types`` in ``model`` (in place) by a new module.

    Every site — every attribute of a parent module that holds an instance of ``types`` —
    gets its own new module: a deep copy of ``factory_or_module`` when it is a module, a fresh
    instance when it is a module class, else ``factory_or_module(name, original)``. A module
    registered at two sites gets two replacements; the root and the inside of a replaced module
    are left alone. Each replacement is moved to the device of the surrounding parameters and
    set to the original's train/eval mode.

    Activations written as functions in ``forward`` (``F.relu(x)``) cannot be replaced this
    way: the source of the model's own ``forward`` methods is read for them, and with
    ``example_input`` one forward pass (:func:`relulab.nn.call_count.activation_calls`, the
    model left as found)
    counts the activation calls that are not modules and the replaced modules called more than
    once. Findings go to the record (:meth:`Replaced.notes`) and, with ``warn``, to an
    :class:`ActivationReplacementWarning`.

    Args:
        model: the ``nn.Module`` to change in place.
        factory_or_module: a module to copy, a module class, or a callable
            ``(name, original) -> nn.Module``.
        types: the activation module types to replace (instances of subclasses too).
        example_input: a batch ``(N, …)`` to count non-module activation calls on; default:
            run nothing.
        warn: warn about what could not be replaced.

    Returns:
        A :class:`Replaced` record; :func:`restore_activations` (or :meth:`Replaced.undo`, or
        leaving ``with record:``) puts the originals back.

    Examples:
        >>> from relulab.nn import ReLUMinusB
        >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU())
        >>> record = replace_activations(model, ReLUMinusB(0.2))
        >>> record.names, model[1] is model[3]
        (['1', '3'], False)
        >>> restore_activations(model, record)
        >>> type(model[1]).__name__
        'ReLU'
    """
    types = _checked_types(types)
    if isinstance(model, types):
        raise ValueError(
            f"the model itself is a {type(model).__name__}: replace_activations changes the "
            "modules inside a model, not the model"
        )
    replacements = [
        _replace(name, parent, key, original, factory_or_module)
        for name, parent, key, original in list(_sites(model, types))
    ]
    record = Replaced(model, replacements)
    replaced_ids = {id(m) for r in replacements for m in r.replacement.modules()}
    record.functional_sources = _functional_sources(model, types, replaced_ids)
    if example_input is not None:
        record.functional_calls, record.repeated_calls = _count_calls(
            model, example_input, types, replacements
        )
    if warn and record.notes():
        warnings.warn("; ".join(record.notes()), ActivationReplacementWarning, stacklevel=2)
    return record


def restore_activations(model: nn.Module, record: Replaced) -> None:
    r"""Undo :func:`replace_activations`: put the original modules back, the same objects at
    the same places, so the model computes exactly what it did before.

    Args:
        model: the model ``record`` was made for.
        record: what :func:`replace_activations` returned.

    Raises:
        ValueError: ``record`` belongs to another model.
        RuntimeError: a site was changed since the replacement (nothing is restored).

    Examples:
        >>> model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        >>> original = model[1]
        >>> restore_activations(model, replace_activations(model, nn.Tanh))
        >>> model[1] is original
        True
    """
    if record.model is not model:
        raise ValueError("this record was made for another model")
    record.undo()


def _checked_types(
    types: type[nn.Module] | Sequence[type[nn.Module]],
) -> tuple[type[nn.Module], ...]:
    checked = (types,) if isinstance(types, type) else tuple(types)
    if not checked or not all(isinstance(t, type) and issubclass(t, nn.Module) for t in checked):
        raise TypeError(f"types must be nn.Module classes, got {checked!r}")
    return checked


def _sites(
    model: nn.Module, types: tuple[type[nn.Module], ...]
) -> Iterator[tuple[str, nn.Module, str, nn.Module]]:
    """``(name, parent, key, module)`` for every child of ``types``, parents visited once, not
    descending into a matched module."""
    visited: set[int] = set()

    def walk(parent: nn.Module, prefix: str) -> Iterator[tuple[str, nn.Module, str, nn.Module]]:
        if id(parent) in visited:
            return
        visited.add(id(parent))
        for key, child in parent._modules.items():
            if child is None:
                continue
            name = f"{prefix}.{key}" if prefix else key
            if isinstance(child, types):
                yield name, parent, key, child
            else:
                yield from walk(child, name)

    yield from walk(model, "")


def _replace(
    name: str,
    parent: nn.Module,
    key: str,
    original: nn.Module,
    factory_or_module: nn.Module | type[nn.Module] | ModuleFactory,
) -> Replacement:
    new = _new_module(name, original, factory_or_module)
    device = model_device(parent)
    if device is not None:
        new.to(device=device)
    new.train(original.training)
    setattr(parent, key, new)
    return Replacement(name, parent, key, original, new)


def _new_module(
    name: str, original: nn.Module, factory_or_module: nn.Module | type[nn.Module] | ModuleFactory
) -> nn.Module:
    if isinstance(factory_or_module, nn.Module):
        return copy.deepcopy(factory_or_module)
    if isinstance(factory_or_module, type) and issubclass(factory_or_module, nn.Module):
        return factory_or_module()
    factory = cast(ModuleFactory, factory_or_module)  # neither a module nor a module class
    new = factory(name, original)
    if not isinstance(new, nn.Module):
        raise TypeError(f"the factory returned {type(new).__name__} for {name!r}, not a module")
    return new


def _names_of(types: tuple[type[nn.Module], ...]) -> tuple[str, ...] | None:
    """The functional names of ``types`` (``None``: a type with no known function)."""
    names: list[str] = []
    for module_type in types:
        known = next((v for t, v in _FUNCTION_NAMES.items() if issubclass(module_type, t)), None)
        if known is None:
            return None
        names.extend(known)
    return tuple(names)


def _source_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Function calls ``F.relu(``, ``torch.relu_(``, … and tensor methods ``.relu()``."""
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(
        rf"\b(?:F|functional|torch|nn\.functional)\.(?:{alternatives})_?\s*\("
        rf"|\.(?:{alternatives})_?\(\s*\)"
    )


def _call_text(match: str) -> str:
    """``"F.relu("`` → ``"F.relu"``; ``".relu_()"`` → ``"Tensor.relu_"``."""
    text = match.rstrip("( )")
    return f"Tensor{text}" if text.startswith(".") else text


def _functional_sources(
    model: nn.Module, types: tuple[type[nn.Module], ...], skip: set[int]
) -> list[str]:
    """Functional calls of the replaced activation in the source of the model's own
    ``forward`` methods (not torch's, not the activations' own)."""
    names = _names_of(types)
    if names is None:
        return []
    pattern = _source_pattern(names)
    found, seen = [], set()
    for path, module in model.named_modules():
        cls = type(module)
        if id(module) in skip or isinstance(module, types) or cls in seen:
            continue
        seen.add(cls)
        if cls.forward.__module__.startswith("torch."):
            continue
        try:
            source = inspect.getsource(cls.forward)
        except (OSError, TypeError):  # defined where no source is kept (a REPL, exec)
            continue
        calls = sorted({_call_text(m.group(0)) for m in pattern.finditer(source)})
        if calls:
            where = f"{path or 'the model'} ({cls.__qualname__}.forward)"
            found.append(f"{where}: {', '.join(calls)}")
    return found


def _count_calls(
    model: nn.Module,
    example_input: Tensor,
    types: tuple[type[nn.Module], ...],
    replacements: list[Replacement],
) -> tuple[list[str], dict[str, int]]:
    """One probed forward pass: the functional calls of the replaced activation (all of them
    for a type with no known function), and the replaced modules called more than once."""
    own_types = tuple({type(r.replacement) for r in replacements})
    calls = activation_calls(model, example_input, own_types)
    names = _names_of(types)
    functional = [
        call.name
        for call in calls
        if call.kind.startswith("F.") and (names is None or call.kind[2:] in names)
    ]
    replaced = {r.name for r in replacements}
    counts: dict[str, int] = {}
    for call in calls:
        if call.module in replaced and not call.kind.startswith("F."):
            counts[call.module] = max(counts.get(call.module, 0), call.call + 1)
    return functional, {name: n for name, n in counts.items() if n > 1}
