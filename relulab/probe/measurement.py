r"""One measurement of :class:`relulab.probe.Monitor`: a light recorder for one forward pass and
the statistics of what it recorded.

The recorder hooks every module and runs a torch-function mode for the pass, as the probe's
:class:`relulab.probe.intercept.CallRecorder` does, and names the calls, chooses their unit axis and
leaves out padded tokens by the same rules (:func:`relulab.probe.unit_axis.resolve_unit_axis`,
:func:`relulab.probe.batching.unit_rows`). Unlike the probe it reduces each call on its own device,
in its own precision (float32 for half types), to per-unit minimum, maximum, mean and variance;
everything crosses to the CPU once, at the end (:func:`measured`), where the statistics are
those of :mod:`relulab.nn.statistics`.

A call whose reductions are not finite (a NaN or an infinity in its input or output, or a sum
that overflowed) is **non-finite**: every statistic of it is NaN — never the "0 dead, 100 %
balanced" that comparisons with NaN would give —, its ``non_finite`` flag is 1.0 (0.0 for a
finite call) and :attr:`Measured.non_finite` names it. A call that no row reached (a batch of 0
samples, from a nested batch or a ``forward=`` that drops them) is left out and named in
:attr:`Measured.empty`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from relulab.nn.statistics import (
    delta_from_means,
    mean_variance_ratio,
    relative_delta,
    sample_dims_except,
    sample_variance_fraction,
    squared_mean_and_variance,
    unit_states_from_extremes,
)
from relulab.nn.statistics import effective_rank as _effective_rank
from relulab.probe.batching import ProbeError, unit_rows, zero_padding
from relulab.probe.tables import ACTIVATION_FUNCTIONS, PRODUCER_FUNCTIONS, activation_family
from relulab.probe.unit_axis import Producer, resolve_unit_axis

__all__ = [
    "HISTOGRAM_BINS",
    "STATISTICS",
    "Histogram",
    "Measured",
    "Recorder",
    "measured",
]

#: Every statistic a :class:`~relulab.probe.Monitor` can record (``docs/monitor.md``); a call
#: gets the unit states of its family, and the effective ranks only with
#: ``effective_rank=True``.
STATISTICS = (
    "dead_fraction",
    "always_on_fraction",
    "balanced_fraction",
    "never_positive_fraction",
    "always_positive_fraction",
    "mixed_sign_fraction",
    "squared_sample_mean",
    "sample_variance",
    "sample_variance_fraction",
    "sample_mean_variance_ratio",
    "delta",
    "delta_relative",
    "effective_rank_uncentred",
    "effective_rank_centred",
    "non_finite",
)

_RECTIFIER_STATES = ("dead_fraction", "always_on_fraction", "balanced_fraction")
_SIGN_STATES = ("never_positive_fraction", "always_positive_fraction", "mixed_sign_fraction")

#: The bins of a pre-activation histogram (``histograms=True``), evenly spread over the
#: call's range on the batch.
HISTOGRAM_BINS = 64


@dataclass
class _Call:
    """One activation call's per-unit reductions (tensors on the model's device); ``count`` is
    the rows each unit was reduced over (samples × kept positions)."""

    name: str
    family: str
    axis: int
    count: int
    z_min: Tensor
    z_max: Tensor
    z_mean: Tensor
    z_var: Tensor
    h_mean: Tensor | None = None
    h_var: Tensor | None = None
    rows: Tensor | None = None
    histogram: Tensor | None = None
    edges: tuple[float, float] | None = None


@dataclass(frozen=True)
class Histogram:
    """One call's pre-activation histogram over the kept positions, with what TensorBoard's
    ``add_histogram_raw`` needs.

    Attributes:
        counts: the count of each bin.
        edges: the bins' edges (one more than the counts).
        num: the number of values.
        sum: their sum.
        sum_squares: the sum of their squares.
    """

    counts: np.ndarray
    edges: np.ndarray
    num: int
    sum: float
    sum_squares: float


@dataclass
class Measured:
    """What one measurement found.

    Attributes:
        statistics: ``{layer: {statistic: value}}``, in call order.
        families: the family of each layer (``"rectifier"``, ``"leaky"``, ``"smooth"``,
            ``"other"``).
        non_finite: the layers whose activations or reductions were not finite (their
            statistics are NaN), in call order.
        histograms: with ``histograms=True``, each finite layer's :class:`Histogram`.
        empty: the layers whose input had no rows (0 samples, or every position padding):
            left out of ``statistics``, in call order.
    """

    statistics: dict[str, dict[str, float]]
    families: dict[str, str]
    non_finite: list[str] = field(default_factory=list)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    empty: list[str] = field(default_factory=list)


def _working(tensor: Tensor) -> Tensor:
    """``tensor`` detached, half types raised to float32 for the reductions."""
    tensor = tensor.detach()
    return tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor


def _mean_variance(w: Tensor, dims: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Per-unit mean and (biased) variance over ``dims``, in two passes (no cancellation when
    the mean dwarfs the spread; several times faster than ``torch.var_mean`` on the CPU)."""
    mean = w.mean(dim=dims, keepdim=True)
    centred = w - mean
    return mean.reshape(-1), centred.mul_(centred).mean(dim=dims)


class Recorder(TorchFunctionMode):
    """Hooks for one forward pass: a pre- and a post-hook on every module (the caller path and
    the activation modules) and a torch-function mode (functional activations, producers).

    Args:
        model: the model measured.
        extra_types: further module types to treat as activations (family ``"other"``).
        unit_axis: the unit axis of every call, instead of the producer rule.
        keep_rows: keep each call's output flattened per sample, for the effective ranks.
        mask: a token mask ``(N, T)`` on the model's device (0 = padding), or ``None``.
        histograms: also bin each call's pre-activation (:data:`HISTOGRAM_BINS` bins).
    """

    def __init__(
        self,
        model: nn.Module,
        extra_types: tuple[type[nn.Module], ...] = (),
        unit_axis: int | None = None,
        keep_rows: bool = False,
        mask: Tensor | None = None,
        histograms: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        self.names = {id(m): name for name, m in model.named_modules()}
        self.families = {
            id(m): activation_family(type(m)) or ("other" if isinstance(m, extra_types) else None)
            for m in model.modules()
            if m is not model
        }
        self.activations = {key for key, family in self.families.items() if family is not None}
        self.unit_axis = unit_axis
        self.keep_rows = keep_rows
        self.mask = None if mask is None else mask.detach().bool()
        self.histograms = histograms
        self.calls: list[_Call] = []
        self.empty: list[str] = []
        self._stack: list[tuple[nn.Module, _Call | None]] = []
        self._counts: Counter = Counter()
        self._producer: Producer | None = None
        self._handles: list[Any] = []

    @contextmanager
    def attached(self) -> Iterator[None]:
        """Hooks and the function mode on for the block, removed after it, whatever happens."""
        for module in self.model.modules():
            self._handles.append(module.register_forward_pre_hook(self._pre, with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post, always_call=True))
        try:
            with self:
                yield
        finally:
            for handle in self._handles:
                handle.remove()
            self._handles.clear()

    # -- modules ------------------------------------------------------------------------------
    def _pre(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        call = None
        family = self.families.get(id(module))
        if family is not None:  # an activation (self.activations holds exactly these)
            z = args[0] if args else next(iter(kwargs.values()), None)
            key = (self.names.get(id(module), ""), None)
            call = self._open(key, family, z)
        self._stack.append((module, call))

    def _post(self, module: nn.Module, args: tuple, output: Any) -> None:
        if self._stack and self._stack[-1][0] is module:
            _, call = self._stack.pop()
            if call is not None:
                self._close(call, output)

    # -- functions ----------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            activation = ACTIVATION_FUNCTIONS.get(func)
            producer = PRODUCER_FUNCTIONS.get(func)
        except TypeError:  # an unhashable callable
            return func(*args, **kwargs)
        if activation is not None and not self._inside_activation():
            short, family = activation
            z = args[0] if args else next(iter(kwargs.values()), None)
            call = self._open((self._caller(), short), family, z)  # before an in-place write
            output = func(*args, **kwargs)
            if call is not None:
                self._close(call, output)
            return output
        output = func(*args, **kwargs)
        if producer is not None and isinstance(output, Tensor) and output.dim() >= 1:
            axis = producer[1] % output.dim()
            self._producer = Producer(
                "", producer[0], axis, output.shape[axis], output.dim(), output, 0
            )
        return output

    def _inside_activation(self) -> bool:
        return bool(self._stack) and id(self._stack[-1][0]) in self.activations

    def _caller(self) -> str:
        caller = self._stack[-1][0] if self._stack else self.model
        return self.names.get(id(caller), "")

    # -- reductions ---------------------------------------------------------------------------
    def _rows(self, w: Tensor, axis: int) -> tuple[Tensor, tuple[int, ...]]:
        """``w`` and the dims to reduce over: as it is, over every axis but the unit axis;
        with a token mask, its kept positions as rows ``(rows, units)``, over dim 0."""
        if self.mask is None:
            return w, sample_dims_except(w, axis)
        return unit_rows(w, axis, self.mask), (0,)

    def _open(self, key: tuple[str, str | None], family: str, z: Any) -> _Call | None:
        """Reduce input ``z`` of the call ``key`` over its sample axes (the kept positions);
        ``None`` when it has none (not a floating-point tensor of 2 or more dimensions)."""
        call_index = self._counts[key]
        self._counts[key] += 1
        if not isinstance(z, Tensor) or z.dim() < 2 or not z.is_floating_point():
            return None
        path, function = key
        name = f"{path}#{call_index}" if function is None else f"{path}:{function}#{call_index}"
        try:
            axis, _ = resolve_unit_axis(z, self._producer, self.unit_axis)  # the probe's
        except ValueError as error:
            raise ProbeError(f"activation call {name}: {error}") from None
        w, dims = self._rows(_working(z), axis)
        count = math.prod(w.shape[d] for d in dims)
        if count == 0:  # no sample reached this call: nothing to reduce (amin would raise)
            self.empty.append(name)
            return None
        mean, variance = _mean_variance(w, dims)
        call = _Call(name, family, axis, count, w.amin(dim=dims), w.amax(dim=dims), mean, variance)
        if self.histograms and count:
            self._bin(call, w)
        self.calls.append(call)
        return call

    def _bin(self, call: _Call, w: Tensor) -> None:
        """The histogram of the call's values; one synchronisation (its range), opt-in only."""
        low, high = torch.stack([call.z_min.min(), call.z_max.max()]).tolist()
        if not (math.isfinite(low) and math.isfinite(high)):
            return
        high = high if high > low else low + 1.0
        call.histogram = torch.histc(w.float(), HISTOGRAM_BINS, min=low, max=high)
        call.edges = (low, high)

    def _close(self, call: _Call, output: Any) -> None:
        """Reduce output ``h`` of ``call`` (skipped unless it has the input's units)."""
        if not isinstance(output, Tensor) or output.dim() <= call.axis:
            return
        if output.shape[call.axis] != call.z_mean.numel() or not output.is_floating_point():
            return
        h = _working(output)
        rows, dims = self._rows(h, call.axis)
        call.h_mean, call.h_var = _mean_variance(rows, dims)
        if self.keep_rows:
            call.rows = zero_padding(h, call.axis, self.mask).reshape(h.shape[0], -1).clone()


# ---------------------------------------------------------------------------------------------
# Statistics of the reductions.
# ---------------------------------------------------------------------------------------------
_REDUCTIONS = ("z_min", "z_max", "z_mean", "z_var", "h_mean", "h_var", "histogram")


def _on_cpu(recorded: list[_Call]) -> tuple[list[dict[str, Tensor]], list[bool]]:
    """Every call's per-unit reductions on the CPU in float64, moved in one transfer, and
    whether each call's are all finite (histogram counts aside)."""
    parts = [
        (index, name, getattr(call, name))
        for index, call in enumerate(recorded)
        for name in _REDUCTIONS
        if getattr(call, name) is not None
    ]
    result: list[dict[str, Tensor]] = [{} for _ in recorded]
    if not parts:
        return result, [True] * len(recorded)
    flat = torch.cat([tensor.reshape(-1) for _, _, tensor in parts]).cpu().double()
    pieces = flat.split([tensor.numel() for _, _, tensor in parts])
    for (index, name, _), piece in zip(parts, pieces, strict=True):
        result[index][name] = piece
    if bool(torch.isfinite(flat).all()):  # the usual case: one check for every call
        return result, [True] * len(recorded)
    finite = [
        all(bool(torch.isfinite(t).all()) for name, t in r.items() if name != "histogram")
        for r in result
    ]
    return result, finite


def _call_statistics(family: str, r: dict[str, Tensor]) -> dict[str, float]:
    """The statistics of one call from its reductions ``r`` (``docs/monitor.md``)."""
    states = unit_states_from_extremes(r["z_min"], r["z_max"])
    named = (
        states.fractions(torch.float64)
        if family == "rectifier"
        else states.sign_fractions(torch.float64)
    )
    m2, v2 = squared_mean_and_variance(r["z_mean"], r["z_var"], reduce="mean")
    out = dict(named)
    out["squared_sample_mean"] = m2
    out["sample_variance"] = v2
    out["sample_variance_fraction"] = sample_variance_fraction(m2, v2)
    out["sample_mean_variance_ratio"] = mean_variance_ratio(m2, v2)
    if "h_mean" in r:
        out["delta"] = delta_from_means(r["h_mean"])
        out["delta_relative"] = relative_delta(r["h_mean"], r["h_var"])
    return {name: float(value) for name, value in out.items()}


def _non_finite_statistics(call: _Call, effective_rank: bool) -> dict[str, float]:
    """Every statistic the call would have, each NaN."""
    names = [*(_RECTIFIER_STATES if call.family == "rectifier" else _SIGN_STATES)]
    names += [s for s in STATISTICS[6:12] if call.h_mean is not None or "delta" not in s]
    if effective_rank:
        names += ["effective_rank_uncentred", "effective_rank_centred"]
    return dict.fromkeys(names, math.nan)


def _histogram(call: _Call, r: dict[str, Tensor]) -> Histogram:
    if call.edges is None:
        raise ProbeError(f"activation call {call.name} has no histogram edges")
    low, high = call.edges
    mean, variance = r["z_mean"], r["z_var"]
    return Histogram(
        counts=r["histogram"].numpy(),
        edges=np.linspace(low, high, HISTOGRAM_BINS + 1),
        num=call.count * mean.numel(),
        sum=float(call.count * mean.sum()),
        sum_squares=float(call.count * (variance + mean.square()).sum()),
    )


def measured(
    recorded: list[_Call], effective_rank: bool = False, empty: list[str] | None = None
) -> Measured:
    """Every recorded call's statistics as floats, by layer name — ``non_finite`` 1.0 and every
    other statistic NaN for a call whose values were not finite, ``non_finite`` 0.0 otherwise —
    with the layers that were not finite and, where binned, the histograms.

    Args:
        recorded: the :attr:`Recorder.calls` of one forward pass.
        effective_rank: whether the calls kept rows for the effective ranks.
        empty: the :attr:`Recorder.empty` calls of the pass (no rows, not measured).

    Returns:
        A :class:`Measured`.

    Example:
        >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
        >>> recorder = Recorder(model)
        >>> with torch.no_grad(), recorder.attached():
        ...     _ = model(torch.randn(8, 3))
        >>> result = measured(recorder.calls)
        >>> list(result.statistics), result.families, result.non_finite
        (['1#0'], {'1#0': 'rectifier'}, [])
    """
    result = Measured({}, {}, empty=list(empty or ()))
    reductions_by_call, finite_by_call = _on_cpu(recorded)
    for call, reductions, finite in zip(recorded, reductions_by_call, finite_by_call, strict=True):
        result.families[call.name] = call.family
        if not finite:
            result.non_finite.append(call.name)
            result.statistics[call.name] = _non_finite_statistics(call, effective_rank)
            result.statistics[call.name]["non_finite"] = 1.0
            continue
        stats = _call_statistics(call.family, reductions)
        if call.rows is not None:
            rows = call.rows.cpu().double()
            stats["effective_rank_uncentred"] = _effective_rank(rows, centred=False)
            stats["effective_rank_centred"] = _effective_rank(rows, centred=True)
        stats["non_finite"] = 0.0
        result.statistics[call.name] = stats
        if call.histogram is not None:
            result.histograms[call.name] = _histogram(call, reductions)
    return result
