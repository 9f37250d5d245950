"""The checks every initialiser of :mod:`relulab.init` shares, defined once: no initialiser
leaves NaN or ±inf in a weight silently.

* :func:`check_data`: a data-dependent scheme (``scale_``, ``scale_bias_``, ``lsuv_``,
  ``calibrate_relu_shift_``) refuses data without samples or holding NaN or ±inf before it
  changes anything — a NaN in the data would spread to every weight set after it.
* :func:`check_fan_in`: RAI, RAAI and the correlated rows scale by :math:`1/\\sqrt{n_{in}}`;
  a weight of fan-in 0 is refused (not a ``ZeroDivisionError``).
* :func:`check_finite_numbers`: a scheme parameter (``std``, ``gain``, ``mean``) that is NaN or
  ±inf is refused before anything is drawn.
* :func:`check_finite_values`: what an initialiser computed is finite, or it is refused,
  naming the parameter.

Each raises a ``ValueError`` naming the scheme, the argument or parameter, and how many values
are not finite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torch import Tensor

__all__ = [
    "check_data",
    "check_fan_in",
    "check_finite_numbers",
    "check_finite_values",
    "non_finite_count",
]


def non_finite_count(tensor: Tensor) -> int:
    """How many entries of ``tensor`` are NaN or ±inf (0 for an integer tensor).

    Example:
        >>> import torch
        >>> non_finite_count(torch.tensor([1.0, float("nan"), float("inf")]))
        2
    """
    if not (tensor.is_floating_point() or tensor.is_complex()) or tensor.is_meta:
        return 0
    return int(tensor.numel() - tensor.isfinite().sum())


def _named_tensors(batch: Any) -> list[tuple[str, Tensor]]:
    if isinstance(batch, Tensor):
        return [("", batch)]
    if isinstance(batch, Mapping):
        return [(f" {key!r}", v) for key, v in batch.items() if isinstance(v, Tensor)]
    return []


def check_data(batch: Any, scheme: str, name: str = "data") -> None:
    """Refuse data a data-dependent scheme cannot measure: no samples, or NaN or ±inf.

    Args:
        batch: the gathered model input (a tensor, or a mapping of model arguments).
        scheme: the scheme, for the message.
        name: the argument's name, for the message.

    Raises:
        ValueError: a tensor of the batch has 0 samples (first axis), or a floating-point one
            holds NaN or ±inf (counted).

    Example:
        >>> import torch
        >>> check_data(torch.tensor([[1.0, float("nan")]]), "scale")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: scale: data holds 1 non-finite value (NaN or ±inf) of 2; ...
    """
    for key, tensor in _named_tensors(batch):
        shape = tuple(tensor.shape)
        if tensor.dim() >= 1 and shape[0] == 0:
            raise ValueError(
                f"{scheme}: {name}{key} has 0 samples (shape {shape}): there is nothing to "
                "measure; give at least one sample, samples on the first axis"
            )
        bad = non_finite_count(tensor)
        if bad:
            plural = "" if bad == 1 else "s"
            raise ValueError(
                f"{scheme}: {name}{key} holds {bad} non-finite value{plural} (NaN or ±inf) of "
                f"{tensor.numel()}; every weight set from it would be NaN: drop or fix those "
                "samples first (torch.isfinite(x).all(dim=1) selects the finite rows)"
            )


def check_fan_in(weight: Tensor, scheme: str) -> None:
    """Refuse a weight of fan-in 0 for a scheme whose scale is :math:`1/\\sqrt{n_{in}}`.

    Args:
        weight: a weight ``(out, in, *kernel)``.
        scheme: the scheme, for the message.

    Example:
        >>> import torch
        >>> check_fan_in(torch.empty(4, 0), "rai_")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: rai_: the weight of shape (4, 0) has fan-in 0 (no inputs)...
    """
    fan_in = math.prod(weight.shape[1:])
    if fan_in == 0:
        raise ValueError(
            f"{scheme}: the weight of shape {tuple(weight.shape)} has fan-in 0 (no inputs), so "
            "its scale 1/√fan_in is undefined; give the layer at least one input"
        )


def check_finite_numbers(scheme: str, **values: float | None) -> None:
    """Refuse a scheme parameter that is NaN or ±inf (``None`` is left alone).

    Example:
        >>> check_finite_numbers("kaiming_normal_", gain=float("inf"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: kaiming_normal_: gain must be a finite number, got inf ...
    """
    for name, value in values.items():
        if value is not None and not math.isfinite(float(value)):
            raise ValueError(
                f"{scheme}: {name} must be a finite number, got {value!r} (every weight drawn "
                "with it would be NaN or ±inf)"
            )


def check_finite_values(scheme: str, values: Mapping[str, Tensor | None]) -> None:
    """Refuse what an initialiser computed when it holds NaN or ±inf, naming the parameter.

    Args:
        scheme: the scheme, for the message.
        values: parameter name → the values to be written (or written); ``None`` skipped.

    Example:
        >>> import torch
        >>> nan = {"weight": torch.tensor([float("nan")])}
        >>> check_finite_values("rai_", nan)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: rai_ would leave 1 non-finite value (NaN or ±inf) of 1 in weight...
    """
    for name, tensor in values.items():
        if tensor is None:
            continue
        bad = non_finite_count(tensor)
        if bad:
            plural = "" if bad == 1 else "s"
            raise ValueError(
                f"{scheme} would leave {bad} non-finite value{plural} (NaN or ±inf) of "
                f"{tensor.numel()} in {name}; refused, {name} left as it was"
            )
