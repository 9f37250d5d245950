"""Diagnose a user's model: build it from a factory, feed it data, probe it under several inits.

``module.path:factory`` names a callable returning an ``nn.Module``; like ``python -m``, the
current directory is searched first, so ``relulab diagnose mypkg.models:make_net`` finds
``./mypkg``. Data come from a file or are relulab's guess from the model's first layer
(:mod:`relulab.probe.datafiles`: :func:`load_data`, :func:`guess_inputs`). Each init is
applied to a fresh model and probed in the given mode (``train`` by default: what the first
training steps see); an init that cannot apply to the model (e.g. ``scale_bias`` or ``rai`` on
bias-free layers) is skipped with a one-line note — unless ``bias_free`` (``--bias-free add`` or
``scale``) says what to do with such layers. A note that holds for several inits is given once.

Whatever the user hands over may be broken; each such case is a ``ValueError`` with one clear
message: a module that fails to import (syntax error, an exception at import time), a factory
that is missing, not callable, needs arguments, raises or returns no ``nn.Module``; a data file
that is not a NumPy/torch file, is damaged, holds strings or objects, a single number, no
samples, tensors of different lengths, or non-finite values.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch
from torch import nn

from relulab import init
from relulab.errors import describe_error
from relulab.init.tensor import BiasFree
from relulab.probe.advice import AdviceList
from relulab.probe.core import ProbeData, ProbeResult, UnitAxisWarning, probe
from relulab.probe.datafiles import (
    DEFAULT_SEQUENCE_LENGTH,
    InputGuess,
    default_shape,
    guess_inputs,
    load_data,
)

__all__ = [
    "DEFAULT_SEQUENCE_LENGTH",
    "KEY_METRICS",
    "Diagnosis",
    "InputGuess",
    "build_model",
    "comparison_table",
    "default_shape",
    "diagnose",
    "guess_inputs",
    "key_metrics",
    "load_activation_types",
    "load_data",
]

#: The metrics ``relulab diagnose`` tabulates, those the probed calls have, in this order
#: (unit states of rectifiers, then sign states of leaky and smooth activations).
KEY_METRICS = (
    "dead_fraction",
    "always_on_fraction",
    "never_positive_fraction",
    "always_positive_fraction",
    "sample_mean_variance_ratio",
    "effective_rank_centred",
    "effective_rank_token_centred",
    "delta",
)


@contextmanager
def _current_directory_on_path() -> Iterator[None]:
    """The current directory first on ``sys.path`` while importing and building the user's
    model, as ``python -m`` has it."""
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _import_attribute(spec: str, what: str = "factory") -> object:
    """The object ``module.path:name`` names, the current directory first on the path."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected module.path:{what}, got {spec!r}")
    try:
        with _current_directory_on_path():
            module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(
            f"cannot load {spec!r}: {error} (searched the current directory {os.getcwd()} "
            "and sys.path; run from the directory that holds the package or set PYTHONPATH)"
        ) from None
    except (Exception, SystemExit) as error:  # the user's module failed while importing
        raise ValueError(
            f"cannot load {spec!r}: importing {module_name} failed ({describe_error(error)})"
        ) from None
    if not hasattr(module, attribute):
        raise ValueError(f"cannot load {spec!r}: {module_name} has no attribute {attribute!r}")
    return getattr(module, attribute)


def build_model(spec: str) -> Callable[[], nn.Module]:
    """Resolve ``module.path:factory`` to a factory that returns a fresh ``nn.Module``.

    Raises ``ValueError`` (one line) for a bad spec, a module that cannot be imported, a
    missing or non-callable factory; the returned factory raises ``ValueError`` when the
    user's factory raises or returns something else than an ``nn.Module``.
    """
    factory = _import_attribute(spec)
    if not callable(factory):
        raise ValueError(f"{spec} is of type {type(factory).__name__}, not a factory to call")

    def make() -> nn.Module:
        try:
            with _current_directory_on_path():
                model = factory()
        except (Exception, SystemExit) as error:
            raise ValueError(
                f"calling {spec}() failed ({describe_error(error)}); the factory must build "
                "a model without arguments"
            ) from None
        if not isinstance(model, nn.Module):
            raise ValueError(f"{spec} returned {type(model).__name__}, not an nn.Module")
        return model

    return make


def load_activation_types(text: str | None) -> tuple[type[nn.Module], ...]:
    """Module classes named ``module.path:Class`` (or ``module.path.Class``), comma-separated,
    imported as the model is (current directory first).

    Args:
        text: the comma-separated names (``--activation-types``), or ``None``.

    Returns:
        The classes, in order (empty for ``None``); a name that cannot be imported or is not an
        ``nn.Module`` class is a one-line ``ValueError``.

    Example:
        >>> [cls.__name__ for cls in load_activation_types("torch.nn:Hardswish,torch.nn.Mish")]
        ['Hardswish', 'Mish']
    """
    found = []
    for spec in (part.strip() for part in (text or "").split(",")):
        if not spec:
            continue
        if ":" not in spec:
            spec = ":".join(spec.rsplit(".", 1))
        cls = _import_attribute(spec, "Class")
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            raise ValueError(f"activation type {spec} is not an nn.Module class")
        found.append(cls)
    return tuple(found)


@dataclass
class Diagnosis:
    """What ``diagnose`` measured.

    Attributes:
        frame: tidy, one row per init, call and metric (``init``, ``layer``, ``name``,
            ``module``, ``kind``, ``units``, ``unit_axis``, ``unit_axis_rule``, ``metric``,
            ``value``).
        mode: the forward mode probed in (``"train"`` or ``"eval"``).
        names: per layer index, the call's label (``layer1.0.relu#1 (ReLU)``).
        skipped: per init that could not apply, why (one line).
        calls: one row per activation call (``layer``, ``name``, ``kind``, ``units``,
            ``unit_axis``, ``unit_axis_rule``, ``producer``), as the first init probed found them.
        notes: one line each: calls whose unit axis is the default rule's, calls whose centred
            effective rank sits at the N − 1 sample cap, calls right after a train-mode
            BatchNorm (unit states 0 by construction).
        flags: one row per init and call (``init``, ``layer``, ``rank_at_sample_cap``,
            ``unit_states_by_batch_norm``): the readings to discount.
        advice: per init probed, its :meth:`~relulab.probe.ProbeResult.advice`.
    """

    frame: pd.DataFrame
    mode: str
    names: dict[int, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    calls: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)
    flags: pd.DataFrame = field(default_factory=pd.DataFrame)
    advice: dict[str, AdviceList] = field(default_factory=dict)

    @property
    def inits(self) -> list[str]:
        """The inits probed, in order."""
        return list(dict.fromkeys(self.frame["init"]))


_CALL_COLUMNS = ["layer", "name", "kind", "units", "unit_axis", "unit_axis_rule", "producer"]


def _probe_quietly(
    model: nn.Module, data: ProbeData, **options: Any
) -> tuple[ProbeResult, list[str]]:
    """The probe and the one-line texts of its warnings (the default-rule unit axis)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnitAxisWarning)
        result = probe(model, data, **options)
    for warning in caught:
        if not issubclass(warning.category, UnitAxisWarning):
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return result, [str(w.message) for w in caught if issubclass(w.category, UnitAxisWarning)]


def _rank_note(result: ProbeResult) -> str | None:
    """What the rank note says of one init's probe (the calls whose centred per-sample rank
    sits at its N − 1 cap), without the init: the inits it holds for are named once."""
    capped = [layer for layer in result.layers if layer.rank_at_sample_cap]
    if not capped:
        return None
    cap = int(capped[0].metrics["effective_rank_centred_cap"])
    shown = ", ".join(layer.name for layer in capped[:6])
    more = f" and {len(capped) - 6} more" if len(capped) > 6 else ""
    return (
        f"the centred effective rank of {len(capped)} of {len(result.layers)} "
        f"call(s) sits at its sample cap N − 1 = {cap} ({shown}{more}): each sample's "
        "activation is one flattened row, so the number of samples bounds it; read "
        "effective_rank_token_centred (one row per token) or probe more samples"
    )


def _once(by_text: dict[str, list[str]], total: int) -> list[str]:
    """One line per distinct note, naming the inits it holds for (``every init`` when all)."""
    lines = []
    for text, names in by_text.items():
        which = "every init" if len(names) == total > 1 else "init " + ", ".join(names)
        lines.append(f"{which}: {text}")
    return lines


def _bias_free_note(bias_free: str, handled: dict[str, list[str]], skipped: list[str]) -> str:
    """One line on what the inits that set biases did with the bias-free layers."""
    if skipped:
        return (
            f"init {', '.join(skipped)} set every layer's bias and the model has bias-free "
            "layers: skipped; --bias-free add (a zero bias first) or --bias-free scale (without "
            "one: RAI / RAAI draw the weights alone, scale_bias scales uncentred) probes them"
        )
    how = {
        "add": "each got a zero bias parameter first, then was set with the others",
        "scale": "left without a bias: RAI / RAAI drew their weights alone, scale_bias scaled "
        "them uncentred",
    }[bias_free]
    counts = ", ".join(f"{name} {len(layers)}" for name, layers in handled.items())
    return f"bias-free layers (init: layers) {counts}, --bias-free {bias_free}: {how}"


def _bias_free_notes(
    bias_free: str, handled: dict[str, list[str]], skipped: list[str]
) -> list[str]:
    """The bias-free note, when an init handled bias-free layers or was skipped for them."""
    unbiased = [name for name in skipped if init.get_scheme(name).requires_bias]
    return [_bias_free_note(bias_free, handled, unbiased)] if handled or unbiased else []


def _batch_norm_note(table: pd.DataFrame) -> str | None:
    """One line naming the calls right after a train-mode BatchNorm, whose unit states are set
    by construction (:func:`relulab.probe.unit_states_by_batch_norm`); ``table`` is the probe
    result's :meth:`~relulab.probe.ProbeResult.table`."""
    chosen = table[table["unit_states_by_batch_norm"]]
    if chosen.empty:
        return None
    shown = ", ".join(chosen["name"].head(6))
    more = f" and {len(chosen) - 6} more" if len(chosen) > 6 else ""
    return (
        f"{len(chosen)} of {len(table)} call(s) take a BatchNorm's output in train mode "
        f"({shown}{more}): BatchNorm centres every unit over the batch, so their dead and "
        "always-on (never / always positive) fractions are 0 by construction while its shift "
        "β is near 0, as at init, and say nothing about the layers before; marked BN in the "
        "tables (--mode eval reads a trained model's running statistics instead)"
    )


_FLAG_COLUMNS = ["layer", "rank_at_sample_cap", "unit_states_by_batch_norm"]

#: The report notes of a bias-free layer an init handled (``bias_free="add"`` / ``"scale"``).
_BIAS_FREE_NOTES = ("bias added", "no bias: scaled, not centred", "no bias: weights drawn alone")


def _apply_init(
    model: nn.Module, name: str, data: ProbeData, seed: int, bias_free: BiasFree
) -> list[str]:
    """Apply init ``name`` to ``model`` (nothing for ``"default"``); the bias-free layers it
    handled by ``bias_free``. Raises :class:`~relulab.init.InitNotApplicableError`."""
    if name == "default":
        return []
    generator = torch.Generator().manual_seed(seed)
    report = init.apply_init_(model, name, data, generator, bias_free=bias_free)
    return [row.layer for row in report if row.note in _BIAS_FREE_NOTES]


def diagnose(
    factory: Callable[[], nn.Module],
    data: ProbeData,
    inits: list[str],
    seed: int = 0,
    mode: str = "train",
    *,
    unit_axis: int | None = None,
    activation_types: Sequence[type[nn.Module]] = (),
    batch_size: int | None = None,
    progress: Callable[[str, str], None] | None = None,
    bias_free: BiasFree = "error",
) -> Diagnosis:
    """Probe a fresh model per init (in ``mode``); an init that cannot apply to the model
    (:class:`~relulab.init.InitNotApplicableError`) is skipped and noted. A note that holds
    for several inits is given once, naming them.

    Args:
        factory: builds a fresh model.
        data: a tensor or a mapping of model arguments (:func:`relulab.probe.probe`).
        inits: init names (``"default"``: as built).
        seed: the seed of the inits' generator.
        mode: ``"train"`` or ``"eval"``.
        unit_axis: the unit axis of every call, instead of the producer rule.
        activation_types: further module types to probe as activations.
        batch_size: probe in batches of this size.
        progress: called as ``progress(init, outcome)`` after each init, the outcome
            ``"probed"`` or ``"skipped"`` (progress lines).
        bias_free: what the inits that set every bias (``rai``, ``raai``, ``scale_bias``) do
            with a bias-free layer: ``"error"`` (skip the init, noted), ``"add"`` (a zero bias
            first) or ``"scale"`` (without one: weights drawn alone, or scaled uncentred);
            :func:`~relulab.init.init_model_`, :func:`~relulab.init.scale_bias_`.

    Returns:
        A :class:`Diagnosis`.

    Example:
        >>> from relulab.nn.examples import deep_mlp
        >>> found = diagnose(lambda: deep_mlp(depth=2, width=8), torch.randn(32, 64),
        ...                  ["default", "kaiming_normal"])
        >>> found.inits, found.mode, found.names[0]
        (['default', 'kaiming_normal'], 'train', '1#0 (ReLU)')
        >>> found.calls.loc[0, "units"], found.calls.loc[0, "unit_axis_rule"]
        (np.int64(8), 'producer')
    """
    options = {
        "mode": mode,
        "unit_axis": unit_axis,
        "activation_types": tuple(activation_types),
        "batch_size": batch_size,
    }
    frames: list[pd.DataFrame] = []
    flags, skipped, names, notes, advice = [], {}, {}, [], {}
    ranks: dict[str, list[str]] = {}
    bias_free_layers: dict[str, list[str]] = {}
    calls = pd.DataFrame(columns=_CALL_COLUMNS)
    for name in inits:
        model = factory()
        try:
            handled = _apply_init(model, name, data, seed, bias_free)
        except init.InitNotApplicableError as error:
            skipped[name] = str(error)
            if progress is not None:
                progress(name, "skipped")
            continue
        if handled:
            bias_free_layers[name] = handled
        result, axis_notes = _probe_quietly(model, data, **options)
        table = result.table()
        if not frames:
            calls = table[_CALL_COLUMNS]
            notes.extend([*axis_notes, *filter(None, [_batch_norm_note(table)])])
        rank = _rank_note(result)
        if rank:
            ranks.setdefault(rank, []).append(name)
        names.update({layer.index: f"{layer.name} ({layer.kind})" for layer in result.layers})
        advice[name] = result.advice()
        frames.append(_with_init(result.frame, name))
        flags.append(table[_FLAG_COLUMNS].assign(init=name))
        if progress is not None:
            progress(name, "probed")
    if not frames:
        raise ValueError(
            "no init applies to this model: "
            + "; ".join(f"{name}: {why}" for name, why in skipped.items())
        )
    notes.extend(_once(ranks, len(frames)))
    notes.extend(_bias_free_notes(bias_free, bias_free_layers, list(skipped)))
    frame = pd.concat(frames, ignore_index=True)
    flag_frame = pd.concat(flags, ignore_index=True)[["init", *_FLAG_COLUMNS]]
    return Diagnosis(frame, mode, names, skipped, calls, notes, flag_frame, advice)


def _with_init(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """``frame`` with the init's name as its first column (inserted in place)."""
    frame.insert(0, "init", name)
    return frame


def key_metrics(frame: pd.DataFrame) -> list[str]:
    """The :data:`KEY_METRICS` present in a probe frame, in order.

    Example:
        >>> key_metrics(pd.DataFrame({"metric": ["delta", "never_positive_fraction"]}))
        ['never_positive_fraction', 'delta']
    """
    present = set(frame["metric"])
    return [metric for metric in KEY_METRICS if metric in present]


def comparison_table(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows: activation calls; columns: inits; values: one metric."""
    chosen = frame[frame["metric"] == metric]
    return chosen.pivot_table(index="layer", columns="init", values="value", sort=False)
