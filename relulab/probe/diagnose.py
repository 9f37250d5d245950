"""Diagnose a user's model: build it from a factory, feed it data, probe it under several inits.

``module.path:factory`` names a callable returning an ``nn.Module``; like ``python -m``, the
current directory is searched first, so ``relulab diagnose mypkg.models:make_net`` finds
``./mypkg``. Data come from a ``.npy`` or ``.pt`` file, or are Gaussian :math:`N(0, 1)` samples
shaped for the model's first layer (``--input-shape`` for convolutions; 3×32×32 by default [I]).
Each init is applied to a fresh model and probed in the given mode (``train`` by default: what
the first training steps see); an init that cannot apply to the model (e.g. ``scale_bias`` or
``rai`` on bias-free layers) is skipped with a one-line note.

Whatever the user hands over may be broken; each such case is a ``ValueError`` with one clear
message: a module that fails to import (syntax error, an exception at import time), a factory
that is missing, not callable, needs arguments, raises or returns no ``nn.Module``; a data file
that is not a NumPy/torch file, is damaged, holds strings or objects, a single number, no
samples, or non-finite values.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from relulab import init
from relulab.errors import describe_error
from relulab.probe import probe

__all__ = [
    "KEY_METRICS",
    "Diagnosis",
    "build_model",
    "comparison_table",
    "default_shape",
    "diagnose",
    "key_metrics",
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


def build_model(spec: str) -> Callable[[], nn.Module]:
    """Resolve ``module.path:factory`` to a factory that returns a fresh ``nn.Module``.

    Raises ``ValueError`` (one line) for a bad spec, a module that cannot be imported, a
    missing or non-callable factory; the returned factory raises ``ValueError`` when the
    user's factory raises or returns something else than an ``nn.Module``.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected module.path:factory, got {spec!r}")
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
    factory = getattr(module, attribute)
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


def default_shape(model: nn.Module, input_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """``input_shape`` if given, else the per-sample shape the model's first layer takes."""
    if input_shape:
        return input_shape
    for module in model.modules():
        if isinstance(module, nn.Linear):
            return (module.in_features,)
        if isinstance(module, nn.Conv2d):
            return (module.in_channels, 32, 32)
        if isinstance(module, nn.Conv1d):
            return (module.in_channels, 64)
    raise ValueError("cannot infer the input shape; pass --input-shape")


def load_data(
    path: str | None,
    model: nn.Module,
    samples: int,
    input_shape: tuple[int, ...] | None,
    generator: torch.Generator,
) -> torch.Tensor:
    """The data to probe with: a file's array, or Gaussian samples."""
    if path is None:
        return torch.randn((samples, *default_shape(model, input_shape)), generator=generator)
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"no data file at {file}")
    if file.suffix == ".npy":
        array = _read_npy(file)
    elif file.suffix == ".pt":
        array = _read_pt(file)
    else:
        raise ValueError(f"data must be a .npy or .pt file, got {file.name}")
    _check_samples(array, file)
    return array[:samples]


_NPY_MAGIC = b"\x93NUMPY"


def _read_npy(file: Path) -> torch.Tensor:
    with file.open("rb") as handle:
        if handle.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
            raise ValueError(f"{file} is not a .npy file (no NumPy header)")
    try:
        array = np.load(file, allow_pickle=False)
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise ValueError(f"{file} holds Python objects, expected an array of numbers") from None
        raise ValueError(f"{file} is a damaged .npy file ({describe_error(error)})") from None
    except Exception as error:
        raise ValueError(f"{file} is a damaged .npy file ({describe_error(error)})") from None
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{file} holds {array.dtype} data, expected numbers")
    return torch.from_numpy(np.asarray(array, dtype=np.float32))


_PT_MAGICS = (b"PK\x03\x04", b"\x80")  # torch.save's zip archive; its legacy pickle


def _read_pt(file: Path) -> torch.Tensor:
    with file.open("rb") as handle:
        head = handle.read(4)
    if not any(head.startswith(magic) for magic in _PT_MAGICS):
        raise ValueError(f"{file} is not a .pt file (neither a torch zip archive nor a pickle)")
    try:
        array = torch.load(file, weights_only=True)
    except Exception as error:
        first_sentence = describe_error(error).split(". ")[0]
        raise ValueError(f"{file} is a damaged or unsafe .pt file ({first_sentence})") from None
    if not isinstance(array, torch.Tensor):
        raise ValueError(f"{file} holds a {type(array).__name__}, expected a tensor")
    if array.is_complex():
        raise ValueError(f"{file} holds {array.dtype} data, expected real numbers")
    return array.detach().float()


def _check_samples(array: torch.Tensor, file: Path) -> None:
    if array.ndim == 0:
        raise ValueError(f"{file} holds a single number; expected samples along the first axis")
    if array.shape[0] == 0 or array.numel() == 0:
        raise ValueError(f"{file} holds no samples (shape {tuple(array.shape)})")
    finite = torch.isfinite(array)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        raise ValueError(
            f"{file} contains {bad} NaN or infinite value(s) of {array.numel()}; "
            "the probe needs finite data"
        )


@dataclass
class Diagnosis:
    """What ``diagnose`` measured.

    Attributes:
        frame: tidy, one row per init, call and metric (``init``, ``layer``, ``name``,
            ``module``, ``kind``, ``metric``, ``value``).
        mode: the forward mode probed in (``"train"`` or ``"eval"``).
        names: per layer index, the call's label (``layer1.0.relu#1 (ReLU)``).
        skipped: per init that could not apply, why (one line).
    """

    frame: pd.DataFrame
    mode: str
    names: dict[int, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def inits(self) -> list[str]:
        """The inits probed, in order."""
        return list(dict.fromkeys(self.frame["init"]))


def diagnose(
    factory: Callable[[], nn.Module],
    data: torch.Tensor,
    inits: list[str],
    seed: int = 0,
    mode: str = "train",
) -> Diagnosis:
    """Probe a fresh model per init (in ``mode``); an init that cannot apply to the model
    (:class:`~relulab.init.InitNotApplicableError`) is skipped and noted.

    Example:
        >>> from relulab.nn.examples import deep_mlp
        >>> found = diagnose(lambda: deep_mlp(depth=2, width=8), torch.randn(32, 64),
        ...                  ["default", "kaiming_normal"])
        >>> found.inits, found.mode, found.names[0]
        (['default', 'kaiming_normal'], 'train', '1#0 (ReLU)')
    """
    frames, skipped, names = [], {}, {}
    for name in inits:
        model = factory()
        try:
            if name != "default":
                init.apply_init_(model, name, data, torch.Generator().manual_seed(seed))
        except init.InitNotApplicableError as error:
            skipped[name] = str(error)
            continue
        result = probe(model, data, mode=mode)
        names.update({layer.index: f"{layer.name} ({layer.kind})" for layer in result.layers})
        frame = result.frame
        frame.insert(0, "init", name)
        frames.append(frame)
    if not frames:
        raise ValueError(
            "no init applies to this model: "
            + "; ".join(f"{name}: {why}" for name, why in skipped.items())
        )
    return Diagnosis(pd.concat(frames, ignore_index=True), mode, names, skipped)


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
