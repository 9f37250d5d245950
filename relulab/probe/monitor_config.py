"""How a :class:`relulab.probe.Monitor` measures, where it writes and when it warns: its
options, one frozen :class:`MonitorConfig`, and how it calls the model on the batch."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from torch import nn

from relulab.files import check_path_name
from relulab.probe.advice import Thresholds
from relulab.probe.measurement import STATISTICS

__all__ = ["DEFAULT_THRESHOLDS", "MonitorConfig", "default_forward", "monitor_config"]

#: The thresholds a :class:`Monitor` warns at unless told otherwise.
DEFAULT_THRESHOLDS = Thresholds()


def default_forward(model: nn.Module, batch: Any) -> Any:
    """Call ``model`` on ``batch``: a mapping as keyword arguments (a Hugging Face batch), a
    tuple or list as positional arguments, anything else as the one argument.

    Example:
        >>> import torch
        >>> default_forward(nn.Identity(), torch.ones(2)).tolist()
        [1.0, 1.0]
    """
    if isinstance(batch, Mapping):
        return model(**batch)
    if isinstance(batch, tuple | list):
        return model(*batch)
    return model(batch)


@dataclass(frozen=True)
class MonitorConfig:
    """How a :class:`Monitor` measures, where it writes and when it warns.

    Attributes:
        every: measure at the steps divisible by ``every``.
        mode: ``"train"`` (batch statistics, dropout on) or ``"eval"``.
        writer: a TensorBoard ``SummaryWriter`` (anything with ``add_scalar``).
        log_dir: or a directory to create one in (closed by :meth:`Monitor.close`); an empty
            string is a ``ValueError`` (not the working directory).
        wandb: ``"auto"`` logs to the active ``wandb.run`` if wandb is imported, ``True`` the
            same (warns if wandb is missing), ``False`` never, or a run object.
        thresholds: when to warn (:class:`Thresholds`; ``None`` for no threshold warnings — a
            non-finite layer still warns).
        statistics: record only these of :data:`STATISTICS` (default: all).
        effective_rank: also the effective ranks of ``h`` (an SVD per call: dearer).
        activation_types: further module types to treat as activations.
        unit_axis: the unit axis of every call, instead of the producer rule.
        forward: ``forward(model, batch)`` instead of :func:`default_forward`.
        prefix: the first part of the TensorBoard tags and W&B keys.
        histograms: also log a histogram of each call's pre-activation :math:`z` (padding
            left out) to TensorBoard (``add_histogram_raw``) and W&B, tagged
            ``{prefix}/pre_activation/{layer}``; off by default (one synchronisation per call).
        optimizer: the training's optimiser: its learning rate (the first parameter group's)
            is recorded at each measurement (:attr:`Monitor.learning_rates`), so that units
            that die during training are reported with the learning rate then.
        learning_rate: or the learning rate itself: a number, or ``learning_rate(step)``
            (a schedule); used instead of ``optimizer``'s.

    Example:
        >>> MonitorConfig(every=10, thresholds=None).every
        10
        >>> MonitorConfig(every=0)
        Traceback (most recent call last):
            ...
        ValueError: every must be a positive integer, got 0
    """

    every: int = 50
    mode: Literal["train", "eval"] = "train"
    writer: Any = None
    log_dir: str | Path | None = None
    wandb: Any = "auto"
    thresholds: Thresholds | None = DEFAULT_THRESHOLDS
    statistics: Sequence[str] | None = None
    effective_rank: bool = False
    activation_types: Sequence[type[nn.Module]] = ()
    unit_axis: int | None = None
    forward: Callable[[nn.Module, Any], Any] | None = None
    prefix: str = "relulab"
    histograms: bool = False
    optimizer: Any = None
    learning_rate: float | Callable[[int], float] | None = None

    def __post_init__(self) -> None:
        every = self.every
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        if self.mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', got {self.mode!r}")
        if self.writer is not None and self.log_dir is not None:
            raise ValueError("give a writer or a log_dir, not both")
        _check_names(self)
        unknown = sorted(set(self.statistics or ()) - set(STATISTICS))
        if unknown:
            raise ValueError(f"unknown statistics {unknown}; choose from {', '.join(STATISTICS)}")
        if self.statistics is not None:
            object.__setattr__(self, "statistics", tuple(self.statistics))
        if self.optimizer is not None and not hasattr(self.optimizer, "param_groups"):
            raise ValueError(
                f"optimizer must be a torch optimiser (with param_groups), got "
                f"{type(self.optimizer).__name__}; or give learning_rate="
            )
        object.__setattr__(self, "activation_types", tuple(self.activation_types))


def _check_names(config: MonitorConfig) -> None:
    """Refuse an empty ``log_dir`` (it would mean the working directory, silently), an empty
    ``prefix`` (tags starting with "/") and a ``statistics`` that is empty (nothing recorded)
    or a single string (its letters would be read as names)."""
    if config.log_dir is not None:
        check_path_name(config.log_dir, "log_dir")
    if not isinstance(config.prefix, str) or not config.prefix.strip():
        raise ValueError(f"prefix must be a non-empty string, got {config.prefix!r}")
    statistics = config.statistics
    if isinstance(statistics, str):
        raise ValueError(
            f"statistics must be a list of names, got the string {statistics!r}; "
            f"write statistics=[{statistics!r}]"
        )
    if statistics is not None and hasattr(statistics, "__len__") and not len(statistics):
        raise ValueError(
            "statistics is empty: nothing would be recorded; give at least one of "
            f"{', '.join(STATISTICS)}, or None for all"
        )


_OPTIONS = tuple(item.name for item in dataclasses.fields(MonitorConfig))


def monitor_config(config: MonitorConfig | None, options: dict[str, Any]) -> MonitorConfig:
    """``config`` (default :class:`MonitorConfig`) with the keyword ``options`` put in."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(
            f"Monitor got unexpected keyword argument(s) {', '.join(unknown)}; its options are "
            f"MonitorConfig's: {', '.join(_OPTIONS)}"
        )
    return dataclasses.replace(config or MonitorConfig(), **options)
