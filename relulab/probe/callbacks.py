"""Training-framework callbacks over :class:`relulab.probe.Monitor`, imported lazily.

* :class:`RelulabLightningCallback` — a PyTorch Lightning ``Callback`` (``lightning.pytorch``,
  or the standalone ``pytorch_lightning`` when only that is installed);
* :class:`RelulabTrainerCallback` — a Hugging Face ``transformers.TrainerCallback``.

Each is built the first time it is named (a module ``__getattr__``), so importing
:mod:`relulab.probe` never imports Lightning or transformers, and relulab needs neither.
Both measure at the start of training (the global step, 0 for a fresh run) and after every
optimiser step whose global step is a multiple of ``every``; both measure on the main process
only. Give either the batch and the :class:`~relulab.probe.Monitor` options (the model is the
one being trained) — keywords such as ``thresholds=``, or ``config=`` a
:class:`~relulab.probe.MonitorConfig` — or a ready ``monitor=``. ``histograms=True`` adds
pre-activation histograms to the same TensorBoard writer (the trainer's logger, or
``log_dir=``) and W&B run as the scalars. The trainer's optimiser is given to the monitor
(unless ``optimizer=`` or ``learning_rate=`` is), so units that die during training are
reported with the learning rate then. ``callback.monitor`` holds the monitor (its
``history``, ``alerts``, ``learning_rates``) once training has started. A bad batch or option
(a batch of 0 samples, ``log_dir=""``, a misspelt option) is refused when the callback is made,
not at the start of training.

Example:
    >>> from relulab.probe.callbacks import RelulabLightningCallback    # doctest: +SKIP
    >>> trainer = lightning.Trainer(callbacks=[RelulabLightningCallback(x, every=50)])
    ... # doctest: +SKIP
    >>> from relulab.probe.callbacks import RelulabTrainerCallback      # doctest: +SKIP
    >>> trainer = transformers.Trainer(..., callbacks=[RelulabTrainerCallback(batch, every=50)])
    ... # doctest: +SKIP
"""

from __future__ import annotations

import functools
from typing import Any

from torch import nn

from relulab.probe.monitor import Monitor, _check_batch
from relulab.probe.monitor_config import monitor_config

# both built on first access by the module __getattr__ below
__all__ = ["RelulabLightningCallback", "RelulabTrainerCallback"]  # noqa: F822


class _MonitorHolder:
    """What both callbacks share: the monitor, made on first use from the trained model."""

    def __init__(
        self,
        batch: Any = None,
        every: int | None = None,
        *,
        monitor: Monitor | None = None,
        **options: Any,
    ) -> None:
        if (batch is None) == (monitor is None):
            raise ValueError("give the batch to monitor (with Monitor options), or monitor=")
        if monitor is not None and options:
            raise ValueError(f"options {sorted(options)} go to Monitor; monitor= is already made")
        if monitor is None:
            _check_options(batch, every, options)
        self.batch = batch
        self.every = every
        self.options = options
        self.monitor = monitor

    def _ensure(self, model: nn.Module, writer: Any = None, optimizer: Any = None) -> Monitor:
        if self.monitor is None:
            options = dict(self.options)
            if writer is not None and "writer" not in options and "log_dir" not in options:
                options["writer"] = writer
            given = {"optimizer", "learning_rate"} & set(options)
            config = options.get("config")
            from_config = config is not None and (
                config.optimizer is not None or config.learning_rate is not None
            )
            if optimizer is not None and not given and not from_config:
                options["optimizer"] = optimizer  # the trainer's: its lr at each measurement
            self.monitor = Monitor(model, self.batch, self.every, **options)
        return self.monitor


def _check_options(batch: Any, every: int | None, options: dict[str, Any]) -> None:
    """Refuse a bad batch or option when the callback is made, as :class:`Monitor` would at
    the start of training (an empty ``log_dir``, a batch of 0 samples, a misspelt option)."""
    _check_batch(batch)
    given = {key: value for key, value in options.items() if key != "config"}
    if every is not None:
        given["every"] = every
    monitor_config(options.get("config"), given)


def _logger_writer(trainer: Any) -> Any:
    """The Lightning logger's TensorBoard writer (``logger.experiment`` with ``add_scalar``)."""
    experiment = getattr(getattr(trainer, "logger", None), "experiment", None)
    return experiment if hasattr(experiment, "add_scalar") else None


def _lightning_base() -> type:
    """Lightning's ``Callback`` class: from ``lightning``, else ``pytorch_lightning``."""
    try:
        from lightning.pytorch import Callback
    except ImportError:
        pass
    else:
        return Callback
    try:
        from pytorch_lightning import Callback as LegacyCallback
    except ImportError:
        raise ImportError(
            "RelulabLightningCallback needs PyTorch Lightning: pip install 'relulab[lightning]'"
        ) from None
    return LegacyCallback


@functools.cache
def _lightning_callback() -> type:
    Callback = _lightning_base()

    # a base class found at run time, which mypy cannot check
    class RelulabLightningCallback(_MonitorHolder, Callback):  # type: ignore[misc, valid-type]
        """A Lightning ``Callback`` that runs a :class:`~relulab.probe.Monitor` on the
        ``LightningModule`` being fitted.

        Measures at ``on_train_start`` and at each ``on_train_batch_end`` whose
        ``trainer.global_step`` (optimiser steps) is a multiple of ``every`` — once per step
        under gradient accumulation. Without ``writer=`` or ``log_dir=`` it writes to the
        trainer's TensorBoard logger when there is one (``use_logger``).

        Args:
            batch: the fixed inputs, passed to the module as :class:`~relulab.probe.Monitor`
                does (a tensor as the one argument, a tuple unpacked, a mapping as keywords).
            every: measure every ``every`` optimiser steps (default: the ``config=``'s, else
                50).
            monitor: or a ready monitor (then no other option).
            use_logger: write to ``trainer.logger.experiment`` if it has ``add_scalar``.
            **options: :class:`~relulab.probe.Monitor`'s keyword options.

        Example:
            >>> callback = RelulabLightningCallback(torch.randn(64, 8), every=50)  # doctest: +SKIP
            >>> lightning.Trainer(callbacks=[callback]).fit(module, loader)        # doctest: +SKIP
            >>> callback.monitor.history                                           # doctest: +SKIP
        """

        def __init__(
            self,
            batch: Any = None,
            every: int | None = None,
            *,
            monitor: Monitor | None = None,
            use_logger: bool = True,
            **options: Any,
        ) -> None:
            _MonitorHolder.__init__(self, batch, every, monitor=monitor, **options)
            self.use_logger = use_logger

        def on_train_start(self, trainer: Any, pl_module: nn.Module) -> None:
            writer = _logger_writer(trainer) if self.use_logger else None
            optimizers = getattr(trainer, "optimizers", None) or [None]
            monitor = self._ensure(pl_module, writer, optimizers[0])
            if trainer.is_global_zero:
                monitor.step(trainer.global_step)

        def on_train_batch_end(
            self, trainer: Any, pl_module: nn.Module, outputs: Any, batch: Any, batch_idx: int
        ) -> None:
            if self.monitor is not None and trainer.is_global_zero:
                self.monitor.step(trainer.global_step)

        def on_train_end(self, trainer: Any, pl_module: nn.Module) -> None:
            if self.monitor is not None:
                self.monitor.close()

    RelulabLightningCallback.__qualname__ = "RelulabLightningCallback"
    return RelulabLightningCallback


@functools.cache
def _trainer_callback() -> type:
    try:
        from transformers import TrainerCallback
    except ImportError:
        raise ImportError(
            "RelulabTrainerCallback needs Hugging Face transformers: pip install transformers"
        ) from None

    class RelulabTrainerCallback(_MonitorHolder, TrainerCallback):
        """A Hugging Face ``TrainerCallback`` that runs a :class:`~relulab.probe.Monitor` on
        the model the ``Trainer`` trains.

        Measures at ``on_train_begin`` and at each ``on_step_end`` whose ``state.global_step``
        is a multiple of ``every``, on the main process only. The batch is a mapping of model
        inputs (``input_ids``, ``attention_mask``, …), called as ``model(**batch)`` and moved
        to the model's device.

        Args:
            batch: the fixed inputs.
            every: measure every ``every`` optimiser steps (default: the ``config=``'s, else
                50).
            monitor: or a ready monitor (then no other option).
            **options: :class:`~relulab.probe.Monitor`'s keyword options (``log_dir=``,
                ``writer=``, ``mode=``, ``thresholds=``, …).

        Example:
            >>> callback = RelulabTrainerCallback({"input_ids": ids}, every=50)   # doctest: +SKIP
            >>> Trainer(model, args, train_dataset=data, callbacks=[callback]).train()
            ... # doctest: +SKIP
        """

        def __init__(
            self,
            batch: Any = None,
            every: int | None = None,
            *,
            monitor: Monitor | None = None,
            **options: Any,
        ) -> None:
            _MonitorHolder.__init__(self, batch, every, monitor=monitor, **options)

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            monitor = self._ensure(kwargs["model"], optimizer=kwargs.get("optimizer"))
            if state.is_world_process_zero:
                monitor.step(state.global_step)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.monitor is not None and state.is_world_process_zero:
                self.monitor.step(state.global_step)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.monitor is not None:
                self.monitor.close()

    RelulabTrainerCallback.__qualname__ = "RelulabTrainerCallback"
    return RelulabTrainerCallback


_BUILDERS = {
    "RelulabLightningCallback": _lightning_callback,
    "RelulabTrainerCallback": _trainer_callback,
}


def __dir__() -> list[str]:
    return sorted([*globals(), *_BUILDERS])


def __getattr__(name: str) -> type:
    if name in _BUILDERS:
        return _BUILDERS[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
