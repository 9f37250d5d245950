r"""Watch a model's activations during training: :class:`Monitor` probes one fixed batch every
``every`` steps, keeps a tidy history, writes TensorBoard (and W&B) scalars — and, when asked,
pre-activation histograms — and warns in one line per measurement when something new crosses
a threshold or turns non-finite, with what to try.

A *layer* is one activation **call**, named as :func:`relulab.probe.probe` names it
(``{module path}#{k}`` for an activation module, ``{caller path}:{function}#{k}`` for a
functional one); its input :math:`z` (taken before an in-place write) is the pre-activation,
its output :math:`h`. The unit axis follows the layer that produced :math:`z` (the last axis
after a Linear, axis 1 after a convolution), and a batch's ``attention_mask`` leaves its padded
tokens out, both as in the probe. Every statistic is the function of
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

A layer whose activations are not finite (NaN or ±inf) has every statistic NaN and its
``non_finite`` flag 1.0 (0.0 when finite: a row of the history, a scalar of TensorBoard and
W&B), and is warned about once, with the layer and the step — never read as healthy. A layer no
sample reached (a batch of 0 samples) is left out with one warning; a measurement that reached
no layer is skipped, not raised: a training hook does not stop the training.

**Cost.** Between measurements the model carries no hooks at all and :meth:`Monitor.step` is
one modulo. A measurement is one ``torch.no_grad`` forward pass over the batch with hooks
attached for its duration (:mod:`relulab.probe.measurement`): each activation call is reduced
on its own device to per-unit minimum, maximum, mean and variance, and the results cross to the
CPU once, at the end.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import Tensor, nn

from relulab.nn.run import model_device, to_device
from relulab.probe.advice import AdviceList, Thresholds
from relulab.probe.alerts import ADVICE, SHOWN, Alert, Context, MonitorWarning, review
from relulab.probe.batching import ProbeError, token_mask
from relulab.probe.core import MODEL_ERRORS, model_run_error, preserved
from relulab.probe.measurement import STATISTICS, Measured, Recorder, measured
from relulab.probe.monitor_advice import monitor_advice
from relulab.probe.monitor_config import (
    DEFAULT_THRESHOLDS,
    MonitorConfig,
    default_forward,
    monitor_config,
)
from relulab.probe.upstream import (
    InputScale,
    deaths_since,
    non_finite_parameters,
    summarise_inputs,
)

__all__ = [
    "ADVICE",
    "DEFAULT_THRESHOLDS",
    "HISTORY_COLUMNS",
    "STATISTICS",
    "Alert",
    "Monitor",
    "MonitorConfig",
    "MonitorWarning",
    "Thresholds",
    "default_forward",
]

#: The columns of :attr:`Monitor.history`, in order.
HISTORY_COLUMNS = ("step", "layer", "statistic", "value")


def _tensors(batch: Any) -> list[Tensor]:
    """Every tensor of ``batch``, nested mappings, tuples and lists included."""
    if isinstance(batch, Tensor):
        return [batch]
    if isinstance(batch, Mapping):
        batch = list(batch.values())
    if isinstance(batch, tuple | list):
        return [tensor for value in batch for tensor in _tensors(value)]
    return []


def _check_batch(batch: Any) -> None:
    """Refuse a batch without samples, or with a token mask that does not fit its tokens."""
    for tensor in _tensors(batch):
        if tensor.dim() >= 1 and tensor.shape[0] == 0:
            raise ValueError(
                f"the monitored batch has no samples: got a batch of 0 samples (a tensor of "
                f"shape {tuple(tensor.shape)}); give at least one sample, samples on the first "
                "axis"
            )
    token_mask(batch)


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


@dataclass
class _State:
    rows: list[tuple[int, str, str, float]] = field(default_factory=list)
    frame: pd.DataFrame | None = None
    warned: set[tuple[str, str]] = field(default_factory=set)
    alerts: list[Alert] = field(default_factory=list)
    last_step: int | None = None
    batch_device: torch.device | None = None
    batch: Any = None
    mask: Tensor | None = None
    wandb_runs: set[int] = field(default_factory=set)
    learning_rates: dict[int, float] = field(default_factory=dict)
    last: Measured | None = None
    dead: dict[str, tuple[int, float]] = field(default_factory=dict)
    inputs: list[InputScale] | None = None


class Monitor:
    """Probe a fixed batch every ``every`` steps of training, cheaply and without a trace.

    Call :meth:`step` once per training step (a no-op unless ``step % every == 0``); the
    Lightning and Hugging Face callbacks of :mod:`relulab.probe.callbacks` do it for you.
    Each measurement adds rows to :attr:`history`, writes one scalar per layer and statistic to
    TensorBoard (``{prefix}/{statistic}/{layer}``) and W&B, and — when some layer crosses a
    threshold for the first time or its activations are not finite — gives one
    :class:`MonitorWarning`: a line saying how many layers are flagged, by what, and what to
    try (the remedies of :func:`relulab.probe.advise` that fit their activations).

    Args:
        model: any ``nn.Module``; never changed (module docstring).
        batch: the fixed inputs: a tensor, a mapping (keyword arguments: a Hugging Face batch,
            whose ``attention_mask`` leaves padding out) or a tuple (positional arguments —
            inputs only, not an ``(inputs, targets)`` pair); moved to the model's device when
            measured. A batch without samples, or a mask of another shape than
            ``input_ids``, is a ``ValueError``.
        every: measure at the steps divisible by ``every`` (a :class:`MonitorConfig` field,
            also taken positionally).
        config: the options (:class:`MonitorConfig`; default its defaults).
        **options: any :class:`MonitorConfig` field by name (``mode=``, ``log_dir=``,
            ``thresholds=``, …), put into ``config``.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> monitor = Monitor(model, torch.randn(32, 4), every=10)
        >>> for step in range(25):
        ...     _ = monitor.step(step)  # then the training step
        >>> sorted(monitor.history["step"].unique().tolist())
        [0, 10, 20]
        >>> list(monitor.history.columns)
        ['step', 'layer', 'statistic', 'value']
        >>> Monitor(model, torch.randn(32, 4), config=MonitorConfig(every=5)).every
        5
    """

    def __init__(
        self,
        model: nn.Module,
        batch: Any,
        every: int | None = None,
        *,
        config: MonitorConfig | None = None,
        **options: Any,
    ) -> None:
        if every is not None:
            options["every"] = every
        self.config = monitor_config(config, options)
        _check_batch(batch)
        self.model = model
        self.batch = batch
        log_dir = self.config.log_dir
        self.writer = _summary_writer(log_dir) if log_dir is not None else self.config.writer
        self._state = _State()

    # -- the options, read from the config ----------------------------------------------------
    @property
    def every(self) -> int:
        """Measure at the steps divisible by this."""
        return self.config.every

    @property
    def mode(self) -> str:
        """``"train"`` or ``"eval"``."""
        return self.config.mode

    @property
    def thresholds(self) -> Thresholds | None:
        """When to warn (``None``: about non-finite layers only)."""
        return self.config.thresholds

    @property
    def log_dir(self) -> str | Path | None:
        """The directory of the writer the monitor made, or ``None``."""
        return self.config.log_dir

    @property
    def statistics(self) -> frozenset[str] | None:
        """The statistics recorded (``None``: all of :data:`STATISTICS`)."""
        chosen = self.config.statistics
        return None if chosen is None else frozenset(chosen)

    @property
    def forward(self) -> Callable[[nn.Module, Any], Any]:
        """How the model is called on the batch."""
        return self.config.forward or default_forward

    # -- the public loop ----------------------------------------------------------------------
    def step(self, step: int) -> dict[str, dict[str, float]] | None:
        """Measure if ``step`` is a multiple of :attr:`every` (and not the step measured last).

        Args:
            step: the training step (global step of Lightning / Hugging Face).

        Returns:
            :meth:`measure`'s result, or ``None`` when nothing was measured.
        """
        step = int(step)
        if step % self.config.every or step == self._state.last_step:
            return None
        return self.measure(step)

    def measure(self, step: int) -> dict[str, dict[str, float]]:
        """Probe the batch now and record, log and check the result, whatever the step.

        Args:
            step: the step to file the measurement under.

        A layer whose activations hold NaN or ±inf has every statistic NaN and ``non_finite``
        1.0 (0.0 for a finite layer), and is warned about once. A layer that no sample reached
        (a batch of 0 samples, e.g. a nested batch or a ``forward=`` that drops them) is left
        out, with one :class:`MonitorWarning` naming it the first time; when no layer was
        reached the step is skipped (``{}``) — a training hook does not stop the training.

        Returns:
            ``{layer: {statistic: value}}`` (NaN throughout, ``non_finite`` 1.0, for a
            non-finite layer).

        Raises:
            ModelRunError: the model failed on the batch (the probe's error, with the batch's
                shapes and what the model takes).
            ValueError: the forward pass made no activation call.
        """
        found = self._record_forward()
        self._warn_empty(step, found.empty)
        if not found.statistics and found.empty:  # nothing reached: skip, training goes on
            self._state.last_step = step
            return {}
        if not found.statistics:
            raise ValueError(
                f"the monitored {type(self.model).__name__} made no activation call on the "
                "batch; give your activation types as activation_types=(…)"
            )
        result = self._select(found.statistics)
        self._state.last_step = step
        self._state.last = found
        rate = self._learning_rate(step)
        if rate is not None:
            self._state.learning_rates[step] = rate
        self._store(step, result)
        self._log(step, result, found)
        self._check(step, found)
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
    def learning_rates(self) -> dict[int, float]:
        """The learning rate at each measured step (``optimizer=`` or ``learning_rate=``;
        empty when neither was given)."""
        return dict(self._state.learning_rates)

    def advice(self, validated: bool = True) -> AdviceList:
        """What to try for what the monitor has seen, from the input inward
        (:func:`relulab.probe.monitor_advice.monitor_advice`): the batch's inputs, non-finite
        layers and parameters at the last measurement, units that died during training (with
        the steps and the learning rate), then the last measurement's other crossings — each
        remedy offered only where relulab's remedies benchmark supports it.

        Args:
            validated: offer only the remedies the benchmark supports (``False``: every
                candidate, as the benchmark tries them).

        Returns:
            An :class:`~relulab.probe.AdviceList` (empty before the first measurement).
        """
        thresholds = self.config.thresholds or Thresholds(None, None, None)
        return monitor_advice(
            self._state.last,
            self.history,
            self._state.learning_rates,
            self._state.inputs or summarise_inputs(self.batch, self.model),
            non_finite_parameters(self.model),
            thresholds,
            validated,
        )

    @property
    def alerts(self) -> list[Alert]:
        """Every layer's first crossing of each threshold (and first non-finite measurement),
        in order; the warnings summarise them one line per measurement."""
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
    def _device_batch(self) -> tuple[Any, Tensor | None]:
        """The batch on the model's device, and its token mask there (``None`` when it keeps
        every position): moved and read once, then kept."""
        device = model_device(self.model)
        state = self._state
        if state.batch is None or state.batch_device != device:
            batch = self.batch if device is None else to_device(self.batch, device)
            mask = token_mask(batch)
            state.mask = None if mask is None or bool(mask.bool().all()) else mask
            state.batch, state.batch_device = batch, device
        return state.batch, state.mask

    def _record_forward(self) -> Measured:
        batch, mask = self._device_batch()
        recorder = Recorder(
            self.model,
            tuple(self.config.activation_types),  # a tuple already (MonitorConfig makes it one)
            self.config.unit_axis,
            keep_rows=self.config.effective_rank,
            mask=mask,
            histograms=self.config.histograms,
        )
        with preserved(self.model), torch.no_grad():
            self.model.train(self.config.mode == "train")
            with recorder.attached():
                try:
                    self.forward(self.model, batch)
                except ProbeError:
                    raise
                except MODEL_ERRORS as error:
                    raise model_run_error(self.model, self.batch, error) from None
        return measured(recorder.calls, self.config.effective_rank, recorder.empty)

    def _warn_empty(self, step: int, empty: list[str]) -> None:
        """One :class:`MonitorWarning` naming the layers that no sample reached, each the first
        time only."""
        new = [layer for layer in empty if (layer, "empty") not in self._state.warned]
        if not new:
            return
        self._state.warned.update((layer, "empty") for layer in new)
        more = f", … {len(new) - SHOWN} more" if len(new) > SHOWN else ""
        shown = ", ".join(new[:SHOWN]) + more
        warnings.warn(
            f"relulab monitor, step {step}: {shown} got a batch of 0 samples (no row to "
            "measure): left out of this measurement; give the monitor a batch whose samples "
            "reach every activation",
            MonitorWarning,
            stacklevel=4,
        )

    def _select(self, result: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        chosen = self.statistics
        if chosen is None:
            return result
        return {
            layer: {k: v for k, v in stats.items() if k in chosen}
            for layer, stats in result.items()
        }

    def _store(self, step: int, result: dict[str, dict[str, float]]) -> None:
        self._state.rows.extend(
            (step, layer, name, value)
            for layer, stats in result.items()
            for name, value in stats.items()
        )

    def _log(self, step: int, result: dict[str, dict[str, float]], found: Measured) -> None:
        prefix = self.config.prefix
        scalars = {
            f"{prefix}/{name}/{layer}": value
            for layer, stats in result.items()
            for name, value in stats.items()
        }
        if self.writer is None and self.log_dir is not None:
            self.writer = _summary_writer(self.log_dir)
        if self.writer is not None:
            for tag, value in scalars.items():
                self.writer.add_scalar(tag, value, step)
            self._tensorboard_histograms(step, found)
            self.flush()
        run = _wandb_run(self.config.wandb)
        if run is not None:
            self._wandb_axis(run)
            run.log({**scalars, **self._wandb_histograms(found), f"{prefix}/step": step})

    def _tensorboard_histograms(self, step: int, found: Measured) -> None:
        if not hasattr(self.writer, "add_histogram_raw"):
            return
        for layer, histogram in found.histograms.items():
            self.writer.add_histogram_raw(
                f"{self.config.prefix}/pre_activation/{layer}",
                min=float(histogram.edges[0]),
                max=float(histogram.edges[-1]),
                num=histogram.num,
                sum=histogram.sum,
                sum_squares=histogram.sum_squares,
                bucket_limits=histogram.edges[1:].tolist(),
                bucket_counts=histogram.counts.tolist(),
                global_step=step,
            )

    def _wandb_histograms(self, found: Measured) -> dict[str, Any]:
        """W&B histograms (``wandb.Histogram``) of the pre-activations, if wandb is imported."""
        make = getattr(sys.modules.get("wandb"), "Histogram", None)
        if make is None or not found.histograms:
            return {}
        return {
            f"{self.config.prefix}/pre_activation/{layer}": make(
                np_histogram=(histogram.counts, histogram.edges)
            )
            for layer, histogram in found.histograms.items()
        }

    def _wandb_axis(self, run: Any) -> None:
        """Once per run: plot the monitor's scalars against ``{prefix}/step``, not W&B's own
        step counter (which each ``log`` call advances)."""
        prefix = self.config.prefix
        if id(run) in self._state.wandb_runs or not hasattr(run, "define_metric"):
            return
        self._state.wandb_runs.add(id(run))
        run.define_metric(f"{prefix}/step")
        run.define_metric(f"{prefix}/*", step_metric=f"{prefix}/step")

    def _learning_rate(self, step: int) -> float | None:
        """The learning rate now: ``learning_rate`` (a number or a schedule), else the
        optimiser's first parameter group's."""
        given = self.config.learning_rate
        if given is not None:
            return float(given(step) if callable(given) else given)
        optimizer = self.config.optimizer
        if optimizer is not None and optimizer.param_groups:
            return float(optimizer.param_groups[0]["lr"])
        return None

    def _context(self, step: int, found: Measured) -> Context:
        """The deaths at this step, the batch's inputs (first measurement only), the
        non-finite parameters (when a layer is non-finite) and the learning rate."""
        thresholds = self.config.thresholds
        state = self._state
        threshold = None if thresholds is None else thresholds.dead_fraction
        died = deaths_since(state.dead, step, found.statistics, state.learning_rates, threshold)
        if state.inputs is None:  # the batch is fixed: its inputs are summarised once
            state.inputs = summarise_inputs(self.batch, self.model)
        return Context(
            died=died,
            inputs=state.inputs,
            parameters=non_finite_parameters(self.model) if found.non_finite else {},
            learning_rate=state.learning_rates.get(step),
        )

    def _check(self, step: int, found: Measured) -> None:
        context = self._context(step, found)
        alerts, line = review(step, found, self.config.thresholds, self._state.warned, context)
        self._state.alerts.extend(alerts)
        if line is not None:
            warnings.warn(line, MonitorWarning, stacklevel=4)
