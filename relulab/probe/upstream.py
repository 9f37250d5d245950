r"""What comes before the activations: the inputs, non-finite values, the optimiser.

The advice (:mod:`relulab.probe.advice`) checks these first, before any init-level remedy,
because their fixes are simpler and the init-level statistics downstream of them mislead:

* **the inputs' location and scale** (:func:`summarise_inputs`, :class:`InputScale`) — per
  feature (the last axis; axis 1, the channels, when the model's first layer is a convolution)
  the sample mean :math:`\mu_j` and standard deviation :math:`\sigma_j` over the samples (and
  positions), then :math:`|\mu_j|/\sigma_j` (the mean in units of its spread), the inputs'
  sample-mean/variance ratio :math:`r = \sqrt{\langle\mu_j^2\rangle_j/\langle\sigma_j^2
  \rangle_j}` (seed ``002_…`` eq. 9, the probe's ``sample_mean_variance_ratio`` applied to the
  inputs, by the same functions of :mod:`relulab.nn.statistics`) and the spread of the feature
  scales :math:`\max_j\sigma_j/\min_j\sigma_j`. Features constant over the data (an image's
  border pixels) are counted and left out. The fix is :func:`standardise`.
* **non-finite values** (:func:`non_finite_parameters`) — the parameters and buffers holding
  NaN or :math:`\pm\infty`, by name, with counts.
* **units killed by the optimiser** (:func:`units_died`) — from a
  :class:`~relulab.probe.Monitor`'s history: a layer whose dead fraction was below its
  threshold at one measurement and at or above it at a later one, with the two steps and the
  learning rates recorded then.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import Tensor, nn

from relulab.nn.statistics import mean_variance_ratio, squared_mean_and_variance

__all__ = [
    "SHOWN_FEATURES",
    "Death",
    "InputScale",
    "deaths_since",
    "deaths_text",
    "feature_axis",
    "first_layer",
    "learning_rate_text",
    "non_finite_parameters",
    "standardise",
    "summarise_input",
    "summarise_inputs",
    "units_died",
]

#: How many features an :class:`InputScale` names, the most shifted first.
SHOWN_FEATURES = 4

_CONVOLUTIONS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


def first_layer(model: nn.Module) -> nn.Module | None:
    """The model's first ``nn.Linear``, ``nn.Conv1d``, ``nn.Conv2d`` or ``nn.Embedding`` in
    ``model.modules()`` order (``None`` when it has none): what takes the inputs.

    Example:
        >>> first_layer(nn.Sequential(nn.ReLU(), nn.Linear(3, 2)))
        Linear(in_features=3, out_features=2, bias=True)
    """
    kinds = nn.Linear | nn.Conv1d | nn.Conv2d | nn.Embedding
    return next((module for module in model.modules() if isinstance(module, kinds)), None)


def feature_axis(model: nn.Module | None, tensor: Tensor) -> int:
    """The axis of ``tensor`` whose entries are the input features: axis 1 (the channels) when
    the model's first layer is a convolution and the tensor has 3 or more axes, else the last.

    Args:
        model: the model the tensor goes into (``None``: the last axis).
        tensor: one input, samples first.

    Returns:
        A non-negative axis.

    Example:
        >>> feature_axis(nn.Conv2d(3, 8, 3), torch.zeros(4, 3, 8, 8))
        1
        >>> feature_axis(nn.Linear(5, 2), torch.zeros(4, 5))
        1
    """
    if tensor.dim() < 2:
        return 0
    convolution = model is not None and isinstance(first_layer(model), _CONVOLUTIONS)
    return 1 if convolution and tensor.dim() >= 3 else tensor.dim() - 1


def _feature_rows(tensor: Tensor, axis: int) -> Tensor:
    """``tensor`` as rows (samples × positions) × features, in float64."""
    if tensor.dim() < 2:
        return tensor.detach().double().reshape(-1, 1)
    return tensor.detach().double().movedim(axis, -1).reshape(-1, tensor.shape[axis])


def _moments(rows: Tensor) -> tuple[Tensor, Tensor]:
    """Per-feature mean and (population) standard deviation over the finite rows."""
    finite = rows[torch.isfinite(rows).all(dim=1)]
    if finite.shape[0] == 0:
        nan = torch.full((rows.shape[1],), math.nan, dtype=torch.float64)
        return nan, nan
    mean = finite.mean(dim=0)
    return mean, (finite - mean).square().mean(dim=0).sqrt()


def _constant(mean: Tensor, std: Tensor) -> Tensor:
    """Features whose spread is nil against their size (exactly constant, up to rounding)."""
    return std <= 1e-12 * mean.abs().clamp_min(1.0)


@dataclass(frozen=True)
class InputScale:
    r"""Where one floating-point input sits and how its features are scaled.

    Attributes:
        name: the input's name (``"input"`` for a tensor, the key of a mapping, ``"args[i]"``
            of a tuple).
        axis: its feature axis (:func:`feature_axis`).
        features: the number of features.
        constant: how many are constant over the data (left out of what follows).
        ratio: :math:`r = \sqrt{\langle\mu_j^2\rangle/\langle\sigma_j^2\rangle}` over the other
            features (NaN when none varies).
        median_shift: the median over features of :math:`|\mu_j|/\sigma_j`.
        shifted: the most shifted features, ``(index, |mean|/std)``, at most
            :data:`SHOWN_FEATURES`, the largest first.
        scale_spread: :math:`\max_j\sigma_j/\min_j\sigma_j` (1 for one feature).
        scale_range: ``((index, smallest σ), (index, largest σ))``.
        non_finite: how many values are NaN or infinite (their rows are left out).
    """

    name: str
    axis: int
    features: int
    constant: int
    ratio: float
    median_shift: float
    shifted: tuple[tuple[int, float], ...]
    scale_spread: float
    scale_range: tuple[tuple[int, float], tuple[int, float]]
    non_finite: int = 0

    def shift_text(self) -> str:
        """The location in a line: ``r`` and the most shifted features."""
        worst = ", ".join(f"{value:.3g} (feature {index})" for index, value in self.shifted)
        constant = f"; {self.constant} constant feature(s) left out" if self.constant else ""
        return (
            f"{self.name}: r = {self.ratio:.3g} over {self.features - self.constant} features, "
            f"|mean|/std median {self.median_shift:.3g}, largest {worst}{constant}"
        )

    def scale_text(self) -> str:
        """The scales in a line: their spread and the extreme features."""
        (low, small), (high, large) = self.scale_range
        return (
            f"{self.name}: feature std from {small:.3g} (feature {low}) to {large:.3g} "
            f"(feature {high}), a spread of {self.scale_spread:.3g}×"
        )


def summarise_input(
    tensor: Tensor, name: str = "input", model: nn.Module | None = None
) -> InputScale:
    """The :class:`InputScale` of one floating-point input.

    Args:
        tensor: the input, samples first.
        name: what to call it.
        model: the model it goes into (for :func:`feature_axis`).

    Returns:
        An :class:`InputScale`.

    Example:
        >>> found = summarise_input(torch.randn(1000, 4) + 10.0)
        >>> round(found.ratio), found.features, found.shifted[0][1] > 9
        (10, 4, True)
    """
    axis = feature_axis(model, tensor)
    rows = _feature_rows(tensor, axis)
    non_finite = int((~torch.isfinite(rows)).sum())
    mean, std = _moments(rows)
    varying = ~_constant(mean, std) & torch.isfinite(std)
    index = torch.nonzero(varying).flatten()
    m, s = mean[index], std[index]
    if index.numel() == 0:
        nan = math.nan
        return InputScale(
            name,
            axis,
            rows.shape[1],
            rows.shape[1],
            nan,
            nan,
            (),
            nan,
            ((0, nan), (0, nan)),
            non_finite,
        )
    m2, v2 = squared_mean_and_variance(m, s.square(), reduce="mean")
    shifts = m.abs() / s
    order = torch.argsort(shifts, descending=True)[:SHOWN_FEATURES]
    low, high = int(torch.argmin(s)), int(torch.argmax(s))
    return InputScale(
        name=name,
        axis=axis,
        features=rows.shape[1],
        constant=rows.shape[1] - index.numel(),
        ratio=float(mean_variance_ratio(m2, v2)),
        median_shift=float(shifts.median()),
        shifted=tuple((int(index[i]), float(shifts[i])) for i in order),
        scale_spread=float(s[high] / s[low]),
        scale_range=((int(index[low]), float(s[low])), (int(index[high]), float(s[high]))),
        non_finite=non_finite,
    )


_NOT_FEATURES = ("mask", "label", "position", "token_type")


def _named_inputs(data: Any) -> list[tuple[str, Tensor]]:
    """The floating-point inputs of a tensor, a mapping (its keys; masks and labels left out)
    or a tuple of positional arguments."""
    if isinstance(data, Tensor):
        named = [("input", data)]
    elif isinstance(data, Mapping):
        named = [
            (str(key), value)
            for key, value in data.items()
            if not any(word in str(key) for word in _NOT_FEATURES)
        ]
    elif isinstance(data, tuple | list):
        named = [(f"args[{i}]", value) for i, value in enumerate(data)]
    else:
        return []
    return [
        (name, value)
        for name, value in named
        if isinstance(value, Tensor) and value.is_floating_point() and value.numel() > 0
    ]


def summarise_inputs(data: Any, model: nn.Module | None = None) -> list[InputScale]:
    """The :class:`InputScale` of every floating-point input in ``data`` (a tensor, a mapping
    of model arguments — token ids, masks and labels are not features — or a tuple).

    Args:
        data: what the model is called on.
        model: the model (its first layer sets the feature axis).

    Returns:
        One :class:`InputScale` per floating-point input, in order (empty for token ids).

    Example:
        >>> ids = {"input_ids": torch.zeros(2, 5, dtype=torch.long)}
        >>> summarise_inputs(ids), len(summarise_inputs(torch.randn(8, 3)))
        ([], 1)
    """
    return [summarise_input(tensor, name, model) for name, tensor in _named_inputs(data)]


def standardise(
    data: Tensor,
    reference: Tensor | None = None,
    model: nn.Module | None = None,
) -> Tensor:
    r"""The inputs standardised per feature: :math:`(x - \mu_j)/\sigma_j`, with the mean and
    standard deviation of ``reference`` (the training set: the same numbers for every split),
    on the feature axis of :func:`feature_axis`; a feature constant over ``reference`` is only
    centred.

    Args:
        data: the inputs to transform, samples first.
        reference: the inputs the mean and std are measured on (default ``data``).
        model: the model they go into (its first layer sets the feature axis).

    Returns:
        A new tensor, ``data``'s shape and dtype.

    Example:
        >>> train = torch.randn(500, 3) * torch.tensor([1.0, 10.0, 100.0]) + 10.0
        >>> x = standardise(train)
        >>> means, stds = x.mean(dim=0).abs().tolist(), x.std(dim=0, unbiased=False).tolist()
        >>> [round(v, 5) for v in means], [round(v, 5) for v in stds]
        ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    """
    reference = data if reference is None else reference
    axis = feature_axis(model, reference)
    mean, std = _moments(_feature_rows(reference, axis))
    std = torch.where(_constant(mean, std), torch.ones_like(std), std)
    shape = [1] * data.dim()
    if data.dim() >= 2:
        shape[axis] = -1
    result = (data.double() - mean.reshape(shape)) / std.reshape(shape)
    return result.to(data.dtype)


def non_finite_parameters(model: nn.Module) -> dict[str, tuple[int, int]]:
    """The parameters and buffers of ``model`` holding NaN or ±inf: name → (non-finite, size).

    Args:
        model: any ``nn.Module``.

    Returns:
        In ``named_parameters`` then ``named_buffers`` order; empty when all are finite.

    Example:
        >>> model = nn.Linear(2, 3)
        >>> with torch.no_grad():
        ...     model.weight[0, 0] = float("nan")
        >>> non_finite_parameters(model)
        {'weight': (1, 6)}
    """
    found = {}
    named = [*model.named_parameters(), *model.named_buffers()]
    for name, tensor in named:
        if tensor.is_floating_point() or tensor.is_complex():
            bad = int((~torch.isfinite(tensor.detach())).sum())
            if bad:
                found[name] = (bad, tensor.numel())
    return found


@dataclass(frozen=True)
class Death:
    """A layer whose units died during training: its dead fraction below the threshold at one
    measurement and at or above it at the next.

    Attributes:
        layer: the activation call.
        before: the last step measured below the threshold.
        after: the first step measured at or above it.
        value_before: the dead fraction at ``before``.
        value_after: the dead fraction at ``after``.
        rates: the learning rates recorded from ``before`` to ``after`` (empty when unknown).
    """

    layer: str
    before: int
    after: int
    value_before: float
    value_after: float
    rates: tuple[float, ...] = ()

    def text(self) -> str:
        """``1#0: dead_fraction 0.02 at step 0 → 0.89 at step 25, learning rate 0.1``."""
        return (
            f"{self.layer}: dead_fraction {self.value_before:.3g} at step {self.before} → "
            f"{self.value_after:.3g} at step {self.after}, {learning_rate_text(self.rates)}"
        )


def deaths_text(deaths: Iterable[Death], shown: int = 4) -> str:
    """Deaths in one line, grouped by when they happened and at which learning rate.

    Args:
        deaths: the :class:`Death` s.
        shown: the layers named per group (the rest counted).

    Returns:
        ``between step 0 and step 25, learning rate 0.1: 3#0 (dead 0 → 0.84), …``.

    Example:
        >>> deaths_text([Death("1#0", 0, 25, 0.0, 0.5, (0.1, 0.1)),
        ...              Death("3#0", 0, 25, 0.02, 0.9, (0.1, 0.1))])
        'between step 0 and step 25, learning rate 0.1: 1#0 (dead 0 → 0.5), 3#0 (dead 0.02 → 0.9)'
    """
    groups: dict[tuple[int, int, str], list[Death]] = {}
    for death in deaths:
        key = (death.before, death.after, learning_rate_text(death.rates))
        groups.setdefault(key, []).append(death)
    parts = []
    for (before, after, rate), group in groups.items():
        named = ", ".join(
            f"{d.layer} (dead {d.value_before:.3g} → {d.value_after:.3g})" for d in group[:shown]
        )
        more = f" and {len(group) - shown} more" if len(group) > shown else ""
        parts.append(f"between step {before} and step {after}, {rate}: {named}{more}")
    return "; ".join(parts)


def learning_rate_text(rates: tuple[float, ...]) -> str:
    """``learning rate 0.1``, ``learning rate 0.001–0.1`` or, unknown, how to have it named.

    Example:
        >>> learning_rate_text((0.1, 0.1)), learning_rate_text(())[:24]
        ('learning rate 0.1', 'learning rate not known ')
    """
    if not rates:
        return "learning rate not known (give the Monitor optimizer= or learning_rate=)"
    low, high = min(rates), max(rates)
    return f"learning rate {low:.3g}" if low == high else f"learning rate {low:.3g}–{high:.3g}"


def _rates(learning_rates: Mapping[int, float], before: int, after: int) -> tuple[float, ...]:
    """The learning rates recorded from step ``before`` to step ``after``, in step order."""
    return tuple(float(r) for at, r in sorted(learning_rates.items()) if before <= at <= after)


def deaths_since(
    previous: dict[str, tuple[int, float]],
    step: int,
    statistics: Mapping[str, Mapping[str, float]],
    learning_rates: Mapping[int, float],
    threshold: float | None,
) -> dict[str, Death]:
    """The layers whose ``dead_fraction`` crossed ``threshold`` since their previous
    measurement — the monitor's incremental form of :func:`units_died` (no history table is
    built at each measurement). ``previous`` (layer → (step, dead fraction)) is updated in place
    with this measurement's finite values.

    Args:
        previous: each layer's last measured step and dead fraction (updated).
        step: this measurement's step.
        statistics: this measurement's ``{layer: {statistic: value}}``.
        learning_rates: the learning rate at each measured step.
        threshold: the dead fraction at or above which a layer is flagged (``None``: none).

    Returns:
        ``{layer: Death}``, in the measurement's layer order.

    Example:
        >>> seen = {}
        >>> deaths_since(seen, 0, {"1#0": {"dead_fraction": 0.0}}, {0: 0.1}, 0.1)
        {}
        >>> found = deaths_since(seen, 25, {"1#0": {"dead_fraction": 0.5}}, {0: 0.1, 25: 0.1}, 0.1)
        >>> deaths_text(found.values())
        'between step 0 and step 25, learning rate 0.1: 1#0 (dead 0 → 0.5)'
    """
    found = {}
    for layer, stats in statistics.items():
        value = stats.get("dead_fraction")
        if value is None or not math.isfinite(value):
            continue
        before = previous.get(layer)
        if threshold is not None and before is not None and before[1] < threshold <= value:
            rates = _rates(learning_rates, before[0], step)
            found[layer] = Death(layer, before[0], step, before[1], value, rates)
        previous[layer] = (step, value)
    return found


def units_died(
    history: pd.DataFrame,
    learning_rates: Mapping[int, float],
    threshold: float,
    step: int | None = None,
) -> dict[str, Death]:
    """The layers of a :class:`~relulab.probe.Monitor` history whose ``dead_fraction`` crossed
    ``threshold`` after a measurement below it (the first such crossing of each layer).

    Args:
        history: ``Monitor.history`` (``step``, ``layer``, ``statistic``, ``value``).
        learning_rates: the learning rate at each measured step (``Monitor.learning_rates``).
        threshold: the dead fraction at or above which a layer is flagged.
        step: only crossings at this step (default: any).

    Returns:
        ``{layer: Death}`` in the history's layer order.

    Example:
        >>> history = pd.DataFrame({"step": [0, 25], "layer": ["1#0", "1#0"],
        ...                         "statistic": "dead_fraction", "value": [0.0, 0.5]})
        >>> units_died(history, {0: 0.1, 25: 0.1}, 0.1)["1#0"].text()
        '1#0: dead_fraction 0 at step 0 → 0.5 at step 25, learning rate 0.1'
    """
    dead = history[history["statistic"] == "dead_fraction"]
    found: dict[str, Death] = {}
    for layer, rows in dead.groupby("layer", sort=False):
        rows = rows.sort_values("step")
        steps, values = rows["step"].to_numpy(), rows["value"].to_numpy()
        for i in range(1, len(steps)):
            if not (values[i - 1] < threshold <= values[i]):
                continue
            if step is None or steps[i] == step:
                before, after = int(steps[i - 1]), int(steps[i])
                rates = _rates(learning_rates, before, after)
                found[str(layer)] = Death(
                    str(layer), before, after, float(values[i - 1]), float(values[i]), rates
                )
            break
    return found
