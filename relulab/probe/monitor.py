r"""Watch a model's activations during training: :class:`Monitor` probes one fixed batch every
``every`` steps, keeps a tidy history, writes TensorBoard (and W&B) scalars and warns once per
layer when a threshold is crossed, with what to try.

A *layer* is one activation **call**, named as :func:`relulab.probe.probe` names it
(``{module path}#{k}`` for an activation module, ``{caller path}:{function}#{k}`` for a
functional one); its input :math:`z` (taken before an in-place write) is the pre-activation,
its output :math:`h`. The unit axis follows the layer that produced :math:`z` (the last axis
after a Linear, axis 1 after a convolution), as in the probe. Every statistic is the function of
:mod:`relulab.nn.statistics` the probe uses, on one forward pass over the batch:

* ``dead_fraction``, ``always_on_fraction``, ``balanced_fraction`` (rectifiers: ReLU, ReLU−b,
  ReLU6), or ``never_positive_fraction``, ``always_positive_fraction``,
  ``mixed_sign_fraction`` (leaky and smooth activations);
* ``squared_sample_mean``, ``sample_variance``, ``sample_variance_fraction``,
  ``sample_mean_variance_ratio`` of :math:`z` (seed ``002_…`` eq. 9);
* ``delta``: Δ, the std over units of each unit's mean of :math:`h` (seed ``000_…``), and
  ``delta_relative``: Δ over the root mean within-unit sample std of :math:`h`,
  :math:`\Delta / \sqrt{\langle \mathrm{Var}_t h_i\rangle_i}` — Δ in units of how much the
  samples vary, so one threshold fits every scale (relulab's normalisation, not a seed's);
* with ``effective_rank=True``: ``effective_rank_uncentred`` and ``effective_rank_centred``
  of :math:`h` (seed ``004_…`` eq. 1).

**Cost.** Between measurements the model carries no hooks at all and :meth:`Monitor.step` is
one modulo. A measurement is one ``torch.no_grad`` forward pass over the batch with hooks
attached for its duration; each activation call is reduced on its own device in its own
precision (float32 for half types) to per-unit minimum, maximum, mean and variance, and the
results cross to the CPU once, at the end. :func:`relulab.probe.probe` instead accumulates
float64 sums on the CPU call by call and keeps rows for the rank.

**Nothing changes.** The model's parameters, their ``.grad``, every buffer (BatchNorm's running
statistics and batch counts), every module's training flag, torch's random state (CPU and the
model's CUDA devices) and the module hooks are the same, bit for bit, after a measurement —
in ``mode="train"`` (batch statistics, dropout on: what the optimiser sees; the default, as in
the probe) or ``mode="eval"``.

Definitions, thresholds and the advice, with their sources: ``docs/monitor.md``.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from relulab.nn.run import model_device, to_device
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
from relulab.probe import calls
from relulab.probe.advice import STATISTIC_FINDINGS, Thresholds, one_line
from relulab.probe.calls import ACTIVATION_FUNCTIONS, ACTIVATION_MODULES, PRODUCER_FUNCTIONS
from relulab.probe.core import preserved

__all__ = [
    "ADVICE",
    "HISTORY_COLUMNS",
    "STATISTICS",
    "Alert",
    "Monitor",
    "MonitorWarning",
    "Thresholds",
    "default_forward",
]

#: The columns of :attr:`Monitor.history`, in order.
HISTORY_COLUMNS = ("step", "layer", "statistic", "value")

#: Every statistic a :class:`Monitor` can record (module docstring); a call gets the unit states
#: of its family, and the effective ranks only with ``effective_rank=True``.
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
)

#: What to try when a threshold is crossed, each naming its source: the remedies of
#: :data:`relulab.probe.advice.REMEDIES` in one line (defined once, there).
ADVICE: dict[str, str] = {
    statistic: one_line(finding) for statistic, finding in STATISTIC_FINDINGS.items()
}


#: The thresholds a :class:`Monitor` warns at unless told otherwise.
DEFAULT_THRESHOLDS = Thresholds()


class MonitorWarning(UserWarning):
    """A layer crossed one of the :class:`Thresholds` of a :class:`Monitor`."""


@dataclass(frozen=True)
class Alert:
    """One threshold crossing: where, when, how far, and what to try (:data:`ADVICE`)."""

    step: int
    layer: str
    statistic: str
    value: float
    threshold: float
    advice: str

    def message(self) -> str:
        """The warning's text, one line.

        Example:
            >>> Alert(50, "fc#0", "dead_fraction", 0.25, 0.1, "try X").message()
            'relulab monitor, step 50, fc#0: dead_fraction = 0.25 (>= 0.1). Try: try X'
        """
        return (
            f"relulab monitor, step {self.step}, {self.layer}: {self.statistic} = "
            f"{self.value:.3g} (>= {self.threshold:g}). Try: {self.advice}"
        )


# ---------------------------------------------------------------------------------------------
# The light recorder: per-unit reductions on the device, for one forward pass.
# ---------------------------------------------------------------------------------------------
@dataclass
class _Call:
    """One activation call's per-unit reductions (tensors on the model's device)."""

    name: str
    family: str
    axis: int
    z_min: Tensor
    z_max: Tensor
    z_mean: Tensor
    z_var: Tensor
    h_mean: Tensor | None = None
    h_var: Tensor | None = None
    rows: Tensor | None = None


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


def _family(module_type: type) -> str | None:
    """The family of an activation module type, as the probe reads it: a type of
    ``ACTIVATION_MODULES``, or one named in the probe's ``COMPOSITE_ACTIVATIONS`` (Hugging
    Face's GELU modules, matched by qualified class name), or a subclass; else ``None``."""
    composite = getattr(calls, "COMPOSITE_ACTIVATIONS", {})
    for base in module_type.__mro__:
        if base in ACTIVATION_MODULES:
            return ACTIVATION_MODULES[base]
        family = composite.get(f"{base.__module__}.{base.__qualname__}")
        if family is not None:
            return family
    return None


class _Recorder(TorchFunctionMode):
    """Hooks for one forward pass: a pre- and a post-hook on every module (the caller path and
    the activation modules) and a torch-function mode (functional activations, producers)."""

    def __init__(
        self,
        model: nn.Module,
        extra_types: tuple[type[nn.Module], ...],
        unit_axis: int | None,
        keep_rows: bool,
    ) -> None:
        super().__init__()
        self.model = model
        self.names = {id(m): name for name, m in model.named_modules()}
        self.families = {
            id(m): _family(type(m)) or ("other" if isinstance(m, extra_types) else None)
            for m in model.modules()
            if m is not model
        }
        self.activations = {key for key, family in self.families.items() if family is not None}
        self.unit_axis = unit_axis
        self.keep_rows = keep_rows
        self.calls: list[_Call] = []
        self._stack: list[tuple[nn.Module, _Call | None]] = []
        self._counts: Counter = Counter()
        self._producer: calls.Producer | None = None
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
        if id(module) in self.activations:
            z = args[0] if args else next(iter(kwargs.values()), None)
            key = (self.names.get(id(module), ""), None)
            call = self._open(key, self.families[id(module)], z)
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
            self._producer = calls.Producer(
                "", producer[0], axis, output.shape[axis], output.dim(), output, 0
            )
        return output

    def _inside_activation(self) -> bool:
        return bool(self._stack) and id(self._stack[-1][0]) in self.activations

    def _caller(self) -> str:
        caller = self._stack[-1][0] if self._stack else self.model
        return self.names.get(id(caller), "")

    # -- reductions ---------------------------------------------------------------------------
    def _open(self, key: tuple[str, str | None], family: str, z: Any) -> _Call | None:
        """Reduce input ``z`` of the call ``key`` over its sample axes; ``None`` when it has
        none (not a tensor, or under 2-D)."""
        call_index = self._counts[key]
        self._counts[key] += 1
        if not isinstance(z, Tensor) or z.dim() < 2 or not z.is_floating_point():
            return None
        path, function = key
        name = f"{path}#{call_index}" if function is None else f"{path}:{function}#{call_index}"
        given = None if self.unit_axis is None else self.unit_axis % z.dim()
        axis, _ = calls.resolve_unit_axis(z, self._producer, given)  # the probe's rule
        w = _working(z)
        dims = sample_dims_except(w, axis)
        mean, variance = _mean_variance(w, dims)
        call = _Call(name, family, axis, w.amin(dim=dims), w.amax(dim=dims), mean, variance)
        self.calls.append(call)
        return call

    def _close(self, call: _Call, output: Any) -> None:
        """Reduce output ``h`` of ``call`` (skipped unless it has the input's units)."""
        if not isinstance(output, Tensor) or output.dim() <= call.axis:
            return
        if output.shape[call.axis] != call.z_mean.numel() or not output.is_floating_point():
            return
        h = _working(output)
        dims = sample_dims_except(h, call.axis)
        call.h_mean, call.h_var = _mean_variance(h, dims)
        if self.keep_rows:
            call.rows = h.reshape(h.shape[0], -1).clone()


# ---------------------------------------------------------------------------------------------
# Statistics of the reductions.
# ---------------------------------------------------------------------------------------------
_REDUCTIONS = ("z_min", "z_max", "z_mean", "z_var", "h_mean", "h_var")


def _on_cpu(calls: list[_Call]) -> list[dict[str, Tensor]]:
    """Every call's per-unit reductions on the CPU in float64, moved in one transfer."""
    parts = [
        (index, name, getattr(call, name))
        for index, call in enumerate(calls)
        for name in _REDUCTIONS
        if getattr(call, name) is not None
    ]
    if not parts:
        return []
    flat = torch.cat([tensor.reshape(-1) for _, _, tensor in parts]).cpu().double()
    pieces = flat.split([tensor.numel() for _, _, tensor in parts])
    result: list[dict[str, Tensor]] = [{} for _ in calls]
    for (index, name, _), piece in zip(parts, pieces, strict=True):
        result[index][name] = piece
    return result


def _call_statistics(family: str, r: dict[str, Tensor]) -> dict[str, float]:
    """The statistics of one call from its reductions ``r`` (module docstring)."""
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


def _statistics(calls: list[_Call]) -> dict[str, dict[str, float]]:
    """Every call's statistics as floats, by layer name."""
    result = {}
    for call, reductions in zip(calls, _on_cpu(calls), strict=True):
        stats = _call_statistics(call.family, reductions)
        if call.rows is not None:
            rows = call.rows.cpu().double()
            stats["effective_rank_uncentred"] = _effective_rank(rows, centred=False)
            stats["effective_rank_centred"] = _effective_rank(rows, centred=True)
        result[call.name] = stats
    return result


# ---------------------------------------------------------------------------------------------
# Leaving the model as it was.
# ---------------------------------------------------------------------------------------------
def default_forward(model: nn.Module, batch: Any) -> Any:
    """Call ``model`` on ``batch``: a mapping as keyword arguments (a Hugging Face batch), a
    tuple or list as positional arguments, anything else as the one argument.

    Example:
        >>> default_forward(nn.Identity(), torch.ones(2)).tolist()
        [1.0, 1.0]
    """
    if isinstance(batch, Mapping):
        return model(**batch)
    if isinstance(batch, tuple | list):
        return model(*batch)
    return model(batch)


# ---------------------------------------------------------------------------------------------
# Where the numbers go.
# ---------------------------------------------------------------------------------------------
def _summary_writer(log_dir: str | Path) -> Any:
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(log_dir=str(log_dir))


def _wandb_run(option: Any) -> Any:
    """The W&B run to log to: ``option`` itself if it is a run; with ``"auto"`` or ``True``
    the active ``wandb.run`` (``"auto"`` never imports wandb: a user with a run has)."""
    if option is False or option is None:
        return None
    if isinstance(option, str) and option == "auto":
        module = sys.modules.get("wandb")
        return getattr(module, "run", None) if module is not None else None
    if option is True:
        try:
            import wandb
        except ImportError:
            warnings.warn("wandb=True but wandb is not installed; not logging to W&B", stacklevel=3)
            return None
        return wandb.run
    return option


# ---------------------------------------------------------------------------------------------
# The monitor.
# ---------------------------------------------------------------------------------------------
@dataclass
class _State:
    rows: list[tuple[int, str, str, float]] = field(default_factory=list)
    frame: pd.DataFrame | None = None
    warned: set[tuple[str, str]] = field(default_factory=set)
    alerts: list[Alert] = field(default_factory=list)
    last_step: int | None = None
    batch_device: torch.device | None = None
    batch: Any = None
    wandb_runs: set[int] = field(default_factory=set)


class Monitor:
    """Probe a fixed batch every ``every`` steps of training, cheaply and without a trace.

    Call :meth:`step` once per training step (a no-op unless ``step % every == 0``); the
    Lightning and Hugging Face callbacks of :mod:`relulab.probe.callbacks` do it for you.
    Each measurement adds rows to :attr:`history`, writes one scalar per layer and statistic to
    TensorBoard (``{prefix}/{statistic}/{layer}``) and W&B, and warns once per layer and
    statistic that crosses its threshold, with what to try (:data:`ADVICE`).

    Args:
        model: any ``nn.Module``; never changed (module docstring).
        batch: the fixed inputs: a tensor, a mapping (keyword arguments: a Hugging Face batch)
            or a tuple (positional arguments); moved to the model's device when measured.
        every: measure at the steps divisible by ``every``.
        mode: ``"train"`` (batch statistics, dropout on) or ``"eval"``.
        writer: a TensorBoard ``SummaryWriter`` (anything with ``add_scalar``).
        log_dir: or a directory to create one in (closed by :meth:`close`).
        wandb: ``"auto"`` logs to the active ``wandb.run`` if wandb is imported, ``True`` the
            same (warns if wandb is missing), ``False`` never, or a run object.
        thresholds: when to warn (:class:`Thresholds`; ``None`` for no warnings).
        statistics: record only these of :data:`STATISTICS` (default: all).
        effective_rank: also the effective ranks of ``h`` (an SVD per call: dearer).
        activation_types: further module types to treat as activations.
        unit_axis: the unit axis of every call, instead of the producer rule.
        forward: ``forward(model, batch)`` instead of :func:`default_forward`.
        prefix: the first part of the TensorBoard tags and W&B keys.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> monitor = Monitor(model, torch.randn(32, 4), every=10)
        >>> for step in range(25):
        ...     _ = monitor.step(step)  # then the training step
        >>> sorted(monitor.history["step"].unique().tolist())
        [0, 10, 20]
        >>> list(monitor.history.columns)
        ['step', 'layer', 'statistic', 'value']
    """

    def __init__(
        self,
        model: nn.Module,
        batch: Any,
        every: int = 50,
        *,
        mode: Literal["train", "eval"] = "train",
        writer: Any = None,
        log_dir: str | Path | None = None,
        wandb: Any = "auto",
        thresholds: Thresholds | None = DEFAULT_THRESHOLDS,
        statistics: Sequence[str] | None = None,
        effective_rank: bool = False,
        activation_types: Sequence[type[nn.Module]] = (),
        unit_axis: int | None = None,
        forward: Callable[[nn.Module, Any], Any] | None = None,
        prefix: str = "relulab",
    ) -> None:
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        if mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
        if writer is not None and log_dir is not None:
            raise ValueError("give a writer or a log_dir, not both")
        unknown = sorted(set(statistics or ()) - set(STATISTICS))
        if unknown:
            raise ValueError(f"unknown statistics {unknown}; choose from {', '.join(STATISTICS)}")
        self.model = model
        self.batch = batch
        self.every = every
        self.mode = mode
        self.thresholds = thresholds
        self.statistics = None if statistics is None else frozenset(statistics)
        self.effective_rank = effective_rank
        self.activation_types = tuple(activation_types)
        self.unit_axis = unit_axis
        self.forward = forward or default_forward
        self.prefix = prefix
        self.wandb = wandb
        self.log_dir = log_dir
        self.writer = _summary_writer(log_dir) if log_dir is not None else writer
        self._state = _State()

    # -- the public loop ----------------------------------------------------------------------
    def step(self, step: int) -> dict[str, dict[str, float]] | None:
        """Measure if ``step`` is a multiple of :attr:`every` (and not the step measured last).

        Args:
            step: the training step (global step of Lightning / Hugging Face).

        Returns:
            :meth:`measure`'s result, or ``None`` when nothing was measured.
        """
        step = int(step)
        if step % self.every or step == self._state.last_step:
            return None
        return self.measure(step)

    def measure(self, step: int) -> dict[str, dict[str, float]]:
        """Probe the batch now and record, log and check the result, whatever the step.

        Args:
            step: the step to file the measurement under.

        Returns:
            ``{layer: {statistic: value}}``.

        Raises:
            ValueError: the forward pass made no activation call.
        """
        calls = self._record_forward()
        if not calls:
            raise ValueError(
                f"the monitored {type(self.model).__name__} made no activation call on the "
                "batch; give your activation types as activation_types=(…)"
            )
        result = self._select(_statistics(calls))
        self._state.last_step = step
        self._store(step, result)
        self._log(step, result)
        self._check(step, result)
        return result

    @property
    def history(self) -> pd.DataFrame:
        """Every measurement, tidy: one row per step, layer and statistic
        (:data:`HISTORY_COLUMNS`)."""
        state = self._state
        if state.frame is None or len(state.frame) != len(state.rows):
            frame = pd.DataFrame(state.rows, columns=list(HISTORY_COLUMNS))
            state.frame = frame.astype({"step": "int64", "value": "float64"})
        return state.frame.copy()

    def table(self, step: int | None = None) -> pd.DataFrame:
        """One measurement as a layer × statistic table (default: the last one).

        Args:
            step: the measured step.

        Returns:
            A DataFrame indexed by layer, in call order, one column per statistic.
        """
        history = self.history
        if history.empty:
            return pd.DataFrame()
        step = int(history["step"].iloc[-1]) if step is None else step
        rows = history[history["step"] == step]
        layers = list(dict.fromkeys(rows["layer"]))
        wide = rows.pivot(index="layer", columns="statistic", values="value")
        return wide.loc[layers].rename_axis(columns=None)

    @property
    def alerts(self) -> list[Alert]:
        """Every threshold crossing warned about, in order."""
        return list(self._state.alerts)

    def flush(self) -> None:
        """Flush the TensorBoard writer."""
        if self.writer is not None and hasattr(self.writer, "flush"):
            self.writer.flush()

    def close(self) -> None:
        """Flush the writer, and close it if the monitor created it (from ``log_dir``; a later
        measurement opens a new one there)."""
        self.flush()
        if self.log_dir is not None and self.writer is not None:
            self.writer.close()
            self.writer = None

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the parts ----------------------------------------------------------------------------
    def _device_batch(self) -> Any:
        device = model_device(self.model)
        state = self._state
        if device is None:
            return self.batch
        if state.batch_device != device:
            state.batch, state.batch_device = to_device(self.batch, device), device
        return state.batch

    def _record_forward(self) -> list[_Call]:
        recorder = _Recorder(
            self.model, self.activation_types, self.unit_axis, keep_rows=self.effective_rank
        )
        batch = self._device_batch()
        with preserved(self.model), torch.no_grad():
            self.model.train(self.mode == "train")
            with recorder.attached():
                self.forward(self.model, batch)
        return recorder.calls

    def _select(self, result: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        if self.statistics is None:
            return result
        return {
            layer: {k: v for k, v in stats.items() if k in self.statistics}
            for layer, stats in result.items()
        }

    def _store(self, step: int, result: dict[str, dict[str, float]]) -> None:
        self._state.rows.extend(
            (step, layer, name, value)
            for layer, stats in result.items()
            for name, value in stats.items()
        )

    def _log(self, step: int, result: dict[str, dict[str, float]]) -> None:
        scalars = {
            f"{self.prefix}/{name}/{layer}": value
            for layer, stats in result.items()
            for name, value in stats.items()
        }
        if self.writer is None and self.log_dir is not None:
            self.writer = _summary_writer(self.log_dir)
        if self.writer is not None:
            for tag, value in scalars.items():
                self.writer.add_scalar(tag, value, step)
            self.flush()
        run = _wandb_run(self.wandb)
        if run is not None:
            self._wandb_axis(run)
            run.log({**scalars, f"{self.prefix}/step": step})

    def _wandb_axis(self, run: Any) -> None:
        """Once per run: plot the monitor's scalars against ``{prefix}/step``, not W&B's own
        step counter (which each ``log`` call advances)."""
        if id(run) in self._state.wandb_runs or not hasattr(run, "define_metric"):
            return
        self._state.wandb_runs.add(id(run))
        run.define_metric(f"{self.prefix}/step")
        run.define_metric(f"{self.prefix}/*", step_metric=f"{self.prefix}/step")

    def _check(self, step: int, result: dict[str, dict[str, float]]) -> None:
        if self.thresholds is None:
            return
        for layer, stats in result.items():
            for name, value, threshold in self.thresholds.crossed(stats):
                if (layer, name) in self._state.warned:
                    continue
                self._state.warned.add((layer, name))
                alert = Alert(step, layer, name, value, threshold, ADVICE[name])
                self._state.alerts.append(alert)
                warnings.warn(alert.message(), MonitorWarning, stacklevel=4)
