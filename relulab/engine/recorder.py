"""Metric recording every k steps without a host synchronisation per step.

The recorder preallocates one ``(T, S)`` tensor per metric on the training device and writes a
row at each recording step; the only transfer to the host happens once, in :meth:`to_numpy`.
A metric may also be a per-network tensor ``(S, …)`` (e.g. a parameter snapshot); its buffer is
then ``(T, S, …)`` and its curve ``(S, T, …)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch
from torch import Tensor

__all__ = ["Recorder", "dense_then_sparse", "recording_steps"]


def recording_steps(steps: int, every: int | Sequence[int] | np.ndarray) -> np.ndarray:
    """The recording grid: steps ``0, k, 2k, …`` plus the final step (0 is the initialisation);
    or, for an explicit grid, its steps plus 0 and the final step (e.g. dense early, sparse
    late: :func:`dense_then_sparse`).

    Args:
        steps: the number of training steps.
        every: ``k``, or the recording steps themselves (each in ``[0, steps]``).

    Returns:
        The steps, ascending, without repeats.

    Example:
        >>> recording_steps(10, 4).tolist()
        [0, 4, 8, 10]
        >>> recording_steps(10, [2, 3, 7]).tolist()
        [0, 2, 3, 7, 10]
    """
    if not np.isscalar(every):
        grid = np.asarray(every, dtype=np.int64).ravel()
        if grid.size and (grid.min() < 0 or grid.max() > steps):
            raise ValueError(f"recording steps must lie in [0, {steps}]")
        return np.unique(np.concatenate([[0], grid, [steps]]))
    step = cast(int, every)  # a scalar: np.isscalar does not narrow the type
    if step <= 0:
        raise ValueError(f"record_every must be positive, got {step}")
    grid = np.arange(0, steps + 1, step)
    if grid[-1] != steps:
        grid = np.append(grid, steps)
    return grid


def dense_then_sparse(steps: int, early: int, early_every: int, every: int) -> np.ndarray:
    """A recording grid every ``early_every`` steps up to step ``early``, then every ``every``
    (counted from ``early``), and the final step — for curves that move fast at first.

    Example:
        >>> dense_then_sparse(20, 4, 2, 5).tolist()
        [0, 2, 4, 9, 14, 19, 20]
    """
    if early_every <= 0 or every <= 0:
        raise ValueError("recording intervals must be positive")
    early = min(early, steps)
    grid = np.concatenate([np.arange(0, early + 1, early_every), [early]])
    return recording_steps(steps, np.concatenate([grid, np.arange(early, steps + 1, every)]))


class Recorder:
    """Preallocated per-metric buffers of shape ``(T, S)`` on the training device (module
    docstring); a metric's buffer appears at its first :meth:`record`.

    Args:
        steps: the number of training steps.
        every: record every ``every`` steps (and at the last), or at these steps
            (:func:`recording_steps`).
        n_networks: S.
        device: where the buffers live.
        dtype: their dtype.

    Example:
        >>> recorder = Recorder(steps=4, every=2, n_networks=2, device="cpu")
        >>> for step in range(5):
        ...     if recorder.wants(step):
        ...         recorder.record(step, {"loss": torch.full((2,), float(step))})
        >>> recorder.to_numpy()["loss"].tolist()
        [[0.0, 2.0, 4.0], [0.0, 2.0, 4.0]]
    """

    def __init__(
        self,
        steps: int,
        every: int | Sequence[int] | np.ndarray,
        n_networks: int,
        device: torch.device | str,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.steps = recording_steps(steps, every)
        self._row_of_step = {int(s): i for i, s in enumerate(self.steps)}
        self.n_networks = n_networks
        self.device = device
        self.dtype = dtype
        self._buffers: dict[str, Tensor] = {}

    def wants(self, step: int) -> bool:
        """Whether ``step`` is a recording step."""
        return step in self._row_of_step

    def record(self, step: int, values: dict[str, Tensor]) -> None:
        """Write ``{name: (S,) or (S, …)}`` into the row of ``step`` (on the device, no host
        sync)."""
        row = self._row_of_step[step]
        for name, value in values.items():
            buffer = self._buffers.get(name)
            if buffer is None:
                buffer = torch.full(
                    (len(self.steps), *value.shape),
                    float("nan"),
                    dtype=self.dtype,
                    device=self.device,
                )
                self._buffers[name] = buffer
            buffer[row].copy_(value.detach())

    def hold(self, step: int) -> None:
        """Copy the row of ``step`` into every later row (the networks stopped changing).

        Example:
            >>> recorder = Recorder(steps=4, every=2, n_networks=1, device="cpu")
            >>> recorder.record(0, {"loss": torch.ones(1)})
            >>> recorder.hold(0)
            >>> recorder.to_numpy()["loss"].tolist()
            [[1.0, 1.0, 1.0]]
        """
        row = self._row_of_step[step]
        for buffer in self._buffers.values():
            buffer[row + 1 :] = buffer[row]

    def state_dict(self) -> dict[str, Tensor]:
        """The recordings so far (copies of the buffers), for a training checkpoint."""
        return {name: buffer.clone() for name, buffer in self._buffers.items()}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        """Continue from :meth:`state_dict` (same steps, networks and metrics)."""
        self._buffers = {name: b.to(self.device, self.dtype) for name, b in state.items()}

    def to_numpy(self) -> dict[str, np.ndarray]:
        """Curves as ``{name: array (S, T)}`` (``(S, T, …)`` for tensor metrics) on the host."""
        return {name: buf.movedim(0, 1).cpu().numpy() for name, buf in self._buffers.items()}
