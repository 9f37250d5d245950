r"""How one activation call's tensors are reduced, batch after batch: every position of every
sample a row of units (:func:`unit_rows`), padded tokens left out, and the per-unit sums a
:class:`LayerAccumulator` keeps across the batches.

**Padding.** With a token mask ``(N, T)`` (the ``attention_mask`` of a language model's
inputs, 0 at padding; :func:`token_mask` reads and checks it), the positions of an activation
``(N, T, …)`` whose mask is 0 are left out of every statistic (:func:`unit_rows`). The probe and
the monitor share this rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from relulab.nn.catalogue import Family

__all__ = ["LayerAccumulator", "ProbeError", "token_mask", "unit_rows", "zero_padding"]


class ProbeError(ValueError):
    """The probe itself cannot measure a call (not the model failing): never reworded as a
    failure of the model on its data."""


def _float64(tensor: Tensor) -> Tensor:
    return tensor.detach().to(torch.float64)


def _token_axis(tensor: Tensor, unit_axis: int, mask: Tensor | None) -> int | None:
    """The axis a token mask ``(N, T)`` applies to: axis 1 (axis 2 when the units are on axis
    1), if ``tensor`` has the mask's N samples first and its T positions there; else ``None``."""
    if mask is None or tensor.dim() < 3:
        return None
    axis = 2 if unit_axis % tensor.dim() == 1 else 1
    if tuple(tensor.shape[:1]) + (tensor.shape[axis],) != tuple(mask.shape):
        return None
    return axis


def token_mask(batch: Any) -> Tensor | None:
    """The token mask of a batch of model arguments: its ``attention_mask`` when that is a
    2-D ``(N, T)`` tensor (1 = a token, 0 = padding), checked against the tokens it masks.

    Args:
        batch: a tensor, a sequence, or a mapping of model arguments (``input_ids``,
            ``attention_mask``, …); only a mapping carries a mask.

    Returns:
        The mask, or ``None`` when the batch carries none.

    Raises:
        ValueError: the mask's shape is not that of ``input_ids`` (or of ``inputs_embeds``'
            first two axes), or it keeps no token at all.

    Example:
        >>> ids = torch.zeros(2, 5, dtype=torch.long)
        >>> token_mask({"input_ids": ids, "attention_mask": torch.ones(2, 5)}).shape
        torch.Size([2, 5])
        >>> short = {"input_ids": ids, "attention_mask": torch.ones(2, 4)}  # one token short
        >>> token_mask(short)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: attention_mask has shape (2, 4) but input_ids (2, 5): ...
    """
    if not isinstance(batch, Mapping):
        return None
    mask = batch.get("attention_mask")
    if not isinstance(mask, Tensor) or mask.dim() != 2:
        return None
    for name, axes in (("input_ids", 2), ("inputs_embeds", 3)):
        tokens = batch.get(name)
        if isinstance(tokens, Tensor) and tokens.dim() == axes:
            if tuple(tokens.shape[:2]) != tuple(mask.shape):
                raise ValueError(
                    f"attention_mask has shape {tuple(mask.shape)} but {name} "
                    f"{tuple(tokens.shape)}: the mask needs one entry per token, (N, T) as {name}"
                )
            break
    if mask.numel() and not bool(mask.detach().bool().any()):
        raise ValueError(
            f"attention_mask {tuple(mask.shape)} is 0 everywhere: every position is padding, "
            "nothing is left to measure"
        )
    return mask


def unit_rows(tensor: Tensor, unit_axis: int, mask: Tensor | None = None) -> Tensor:
    """Every position of every sample as one row, the units as columns: ``(rows, units)``;
    with a token mask ``(N, T)`` (1 = a token, 0 = padding) only the positions it keeps.

    Args:
        tensor: an activation, samples first, e.g. ``(N, T, d)`` or ``(N, C, H, W)``.
        unit_axis: the unit axis.
        mask: optional ``(N, T)`` token mask, applied when ``tensor`` has N samples first and T
            positions on axis 1 (axis 2 when the units are on axis 1); otherwise ignored.

    Returns:
        The ``(rows, units)`` matrix, rows in sample-major order.

    Example:
        >>> h = torch.arange(12.0).reshape(2, 3, 2)  # N=2 sequences of T=3 tokens, 2 units
        >>> unit_rows(h, 2, torch.tensor([[1, 1, 0], [1, 0, 0]])).tolist()
        [[0.0, 1.0], [2.0, 3.0], [6.0, 7.0]]
    """
    axis = unit_axis % tensor.dim()
    units = tensor.shape[axis]
    token_axis = _token_axis(tensor, axis, mask)
    if token_axis is None or mask is None:  # (no mask: no token axis)
        return tensor.movedim(axis, -1).reshape(-1, units)
    moved = tensor.movedim((0, token_axis, axis), (0, 1, -1))
    return moved[mask.to(device=tensor.device, dtype=torch.bool)].reshape(-1, units)


def zero_padding(tensor: Tensor, unit_axis: int, mask: Tensor | None) -> Tensor:
    """``tensor`` with its padded positions set to 0 (for the per-sample rank rows): the
    positions :func:`unit_rows` leaves out; ``tensor`` itself when the mask does not apply.

    Example:
        >>> h = torch.ones(2, 3, 2)  # N=2 sequences of T=3 tokens, 2 units
        >>> zero_padding(h, 2, torch.tensor([[1, 1, 0], [1, 0, 0]]))[:, :, 0].tolist()
        [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    token_axis = _token_axis(tensor, unit_axis, mask)
    if token_axis is None or mask is None:  # (no mask: no token axis)
        return tensor
    shape = [1] * tensor.dim()
    shape[0], shape[token_axis] = mask.shape
    return tensor * mask.to(device=tensor.device, dtype=tensor.dtype).reshape(shape)


@dataclass
class LayerAccumulator:
    """Running per-unit sums of one activation call over the batches (float64, CPU): of
    :math:`z` (sum, sum of squares, min, max) and of :math:`h` (sum, sum of squares) over the
    kept positions, the first rows of :math:`h` flattened per sample (for effective rank and
    R²), the first position rows ``(tokens, units)`` (for the per-token rank) and the gradient
    sums. ``after_batch_norm``: the input is exactly a BatchNorm's output (``F.batch_norm``)."""

    index: int
    name: str
    module: str
    call: int
    kind: str
    family: Family
    function: str | None
    unit_axis: int
    unit_axis_rule: str
    producer: str | None
    kinks: np.ndarray | None = None
    after_batch_norm: bool = False
    samples: int = 0
    count: int = 0
    z_sum: Tensor | None = None
    z_sq_sum: Tensor | None = None
    z_max: Tensor | None = None
    z_min: Tensor | None = None
    h_sum: Tensor | None = None
    h_sq_sum: Tensor | None = None
    grad_sq_sum: float = 0.0
    grad_count: int = 0
    kept: list[Tensor] = field(default_factory=list)
    kept_rows: int = 0
    rows_aligned: bool = True
    token_kept: list[Tensor] = field(default_factory=list)
    token_kept_rows: int = 0

    @property
    def units(self) -> int:
        return 0 if self.z_sum is None else int(self.z_sum.numel())

    def add_input(self, z: Tensor, batch_size: int, mask: Tensor | None = None) -> None:
        """Reduce one call's pre-activation over every axis but the unit axis (over the kept
        positions only, with a token ``mask``)."""
        if self.z_sum is not None and z.shape[self.unit_axis] != self.units:
            raise ProbeError(
                f"activation call {self.name} had {self.units} units on axis {self.unit_axis} "
                f"and now {z.shape[self.unit_axis]}: the model calls its activations "
                "differently from batch to batch"
            )
        rows = unit_rows(_float64(z), self.unit_axis, mask)
        sums = (rows.sum(dim=0).cpu(), rows.square().sum(dim=0).cpu(), *_extremes(rows))
        self.count += rows.shape[0]
        self.samples += batch_size
        self.rows_aligned = self.rows_aligned and z.shape[0] == batch_size
        if self.z_sum is None or self.z_sq_sum is None or self.z_max is None or self.z_min is None:
            self.z_sum, self.z_sq_sum, self.z_max, self.z_min = sums  # the first batch: all four
            return
        self.z_sum += sums[0]
        self.z_sq_sum += sums[1]
        self.z_max = torch.maximum(self.z_max, sums[2])
        self.z_min = torch.minimum(self.z_min, sums[3])

    def add_output(
        self,
        h: Tensor,
        keep_rows: int,
        mask: Tensor | None = None,
        keep_token_rows: int | None = None,
    ) -> None:
        """Add one call's activation: per-unit sums over the kept positions, the first
        ``keep_rows`` samples flattened for the rank and R² (padded positions set to 0) and the
        first ``keep_token_rows`` (default ``keep_rows``) kept positions for the per-token
        rank."""
        if not isinstance(h, Tensor) or h.dim() <= self.unit_axis:
            return
        if h.shape[self.unit_axis] != self.units:
            return
        h64 = _float64(h)
        rows = unit_rows(h64, self.unit_axis, mask)
        total, square = rows.sum(dim=0).cpu(), rows.square().sum(dim=0).cpu()
        self.h_sum = total if self.h_sum is None else self.h_sum + total
        self.h_sq_sum = square if self.h_sq_sum is None else self.h_sq_sum + square
        wanted = keep_rows - self.kept_rows
        if self.rows_aligned and wanted > 0:
            flat = zero_padding(h64[:wanted], self.unit_axis, _head(mask, wanted))
            flat = flat.reshape(min(h.shape[0], wanted), -1).cpu().clone()
            self.kept.append(flat)
            self.kept_rows += flat.shape[0]
        wanted = (keep_rows if keep_token_rows is None else keep_token_rows) - self.token_kept_rows
        if h.dim() > 2 and wanted > 0:
            self.token_kept.append(rows[:wanted].cpu().clone())
            self.token_kept_rows += self.token_kept[-1].shape[0]

    def add_gradient(self, grad: Tensor, factor: float, mask: Tensor | None = None) -> None:
        """Add :math:`(\\text{factor}\\cdot\\partial L/\\partial h)^2` summed over the kept
        positions, and its count."""
        rows = unit_rows(_float64(grad), self.unit_axis, mask)
        self.grad_sq_sum += float((rows * factor).square().sum())
        self.grad_count += rows.numel()


def _extremes(rows: Tensor) -> tuple[Tensor, Tensor]:
    """Per-column maximum and minimum of ``rows`` on the CPU (−∞ and +∞ for no rows: every
    position of the batch was padding)."""
    if rows.shape[0] == 0:
        units = rows.shape[1]
        return torch.full((units,), -torch.inf, dtype=rows.dtype), torch.full(
            (units,), torch.inf, dtype=rows.dtype
        )
    return rows.amax(dim=0).cpu(), rows.amin(dim=0).cpu()


def _head(mask: Tensor | None, rows: int) -> Tensor | None:
    return None if mask is None else mask[:rows]
