"""Minibatch streams that can say where they are: endless, seeded, and resumable.

A stream's position is its whole state — the generator's state, the epoch's shuffled order
and the next batch's start — so :meth:`Minibatches.state_dict` taken between two batches and
loaded into a fresh stream over the same data makes it yield exactly the batches the original
would have yielded next (augmentation included: it draws from the same generator). A training
checkpoint (:func:`relulab.engine.train`'s ``checkpoint``) keeps it beside the parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["Minibatches", "PerNetworkBatches", "minibatches"]

Transform = Callable[[Tensor, Tensor, torch.Generator], tuple[Tensor, Tensor]]


class Minibatches:
    """An endless stream of minibatches: one shuffled order per epoch (drawn on the CPU from
    ``generator``), batches of ``batch_size`` (the epoch's remainder is dropped), each passed
    through ``transform(x, y, generator)`` (augmentation) if given.

    Args:
        x: inputs ``(N, …)``.
        y: targets ``(N, …)``.
        batch_size: samples per batch, in ``[1, N]``.
        generator: the CPU generator of the shuffles and of ``transform``'s draws.
        transform: ``(x, y, generator) → (x, y)`` per batch, or ``None``.

    Example:
        >>> stream = Minibatches(torch.arange(6.0)[:, None], torch.arange(6), 4,
        ...                      torch.Generator().manual_seed(0))
        >>> [tuple(b[0].shape) for b, _ in zip(stream, range(3))]
        [(4, 1), (4, 1), (4, 1)]
    """

    def __init__(
        self,
        x: Tensor,
        y: Tensor,
        batch_size: int,
        generator: torch.Generator,
        transform: Transform | None = None,
    ) -> None:
        if not 1 <= batch_size <= len(x):
            raise ValueError(f"batch_size must lie in [1, {len(x)}], got {batch_size}")
        self.x, self.y, self.batch_size = x, y, batch_size
        self.generator, self.transform = generator, transform
        self._order: Tensor | None = None  # this epoch's order (on the CPU)
        self._start = 0  # where the next batch starts in it

    def __iter__(self) -> Minibatches:
        return self

    def __next__(self) -> tuple[Tensor, Tensor]:
        if self._order is None or self._start + self.batch_size > len(self.x):
            self._order = torch.randperm(len(self.x), generator=self.generator)
            self._start = 0
        index = self._order[self._start : self._start + self.batch_size].to(self.x.device)
        self._start += self.batch_size
        xb, yb = self.x[index], self.y[index]
        return self.transform(xb, yb, self.generator) if self.transform is not None else (xb, yb)

    def state_dict(self) -> dict[str, Any]:
        """The stream's position: generator state, the epoch's order, the next start.

        Example:
            >>> a = Minibatches(torch.arange(5.0), torch.arange(5), 2, torch.Generator())
            >>> _ = next(a); state = a.state_dict(); expected = next(a)[0]
            >>> b = Minibatches(torch.arange(5.0), torch.arange(5), 2, torch.Generator())
            >>> b.load_state_dict(state); torch.equal(next(b)[0], expected)
            True
        """
        order = None if self._order is None else self._order.clone()
        return {"generator": self.generator.get_state(), "order": order, "start": self._start}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a position :meth:`state_dict` gave (same data, batch size and
        transform)."""
        self.generator.set_state(state["generator"])
        self._order = None if state["order"] is None else state["order"].clone()
        self._start = int(state["start"])


def minibatches(
    x: Tensor,
    y: Tensor,
    batch_size: int,
    generator: torch.Generator,
    transform: Transform | None = None,
) -> Minibatches:
    """:class:`Minibatches` over ``(x, y)`` (the function the engine has always offered).

    Example:
        >>> stream = minibatches(torch.arange(6.0)[:, None], torch.arange(6), 4,
        ...                      torch.Generator().manual_seed(0))
        >>> [tuple(b[0].shape) for b, _ in zip(stream, range(3))]
        [(4, 1), (4, 1), (4, 1)]
    """
    return Minibatches(x, y, batch_size, generator, transform)


class PerNetworkBatches:
    """Per step one batch from each of several streams, laid out per network ``(S, B, …)``:
    network ``s`` gets the batch of stream ``index[s]`` (networks of one index share it).

    Args:
        streams: :class:`Minibatches` (or anything with ``__next__``, ``state_dict`` and
            ``load_state_dict``), one per index.
        index: per network, the stream it reads.

    Example:
        >>> streams = [Minibatches(torch.arange(4.0) + 10 * j, torch.arange(4), 2,
        ...                        torch.Generator().manual_seed(0)) for j in range(2)]
        >>> xb, yb = next(PerNetworkBatches(streams, [0, 1, 1]))
        >>> xb.shape, bool((xb[1] == xb[2]).all())
        (torch.Size([3, 2]), True)
    """

    def __init__(self, streams: Sequence[Any], index: Sequence[int]) -> None:
        self.streams = list(streams)
        self.index = torch.tensor(list(index))

    def __iter__(self) -> PerNetworkBatches:
        return self

    def __next__(self) -> tuple[Tensor, Tensor]:
        batches = [next(stream) for stream in self.streams]
        xs = torch.stack([b[0] for b in batches])
        ys = torch.stack([b[1] for b in batches])
        return xs[self.index.to(xs.device)], ys[self.index.to(ys.device)]

    def state_dict(self) -> dict[str, Any]:
        """Every stream's position."""
        return {"streams": [stream.state_dict() for stream in self.streams]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue every stream from ``state`` (:meth:`state_dict`)."""
        for stream, position in zip(self.streams, state["streams"], strict=True):
            stream.load_state_dict(position)
