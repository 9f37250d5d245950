r"""Supervised training of a batched model family on shared data.

Loss per network :math:`s` on a batch of :math:`B` samples with outputs :math:`\hat y_s`:

* ``mse``: :math:`L_s = \frac{1}{B\,d_{out}} \sum_{i,k} (\hat y_{s,ik} - y_{ik})^2`
  (the residual-toy and teacher–student studies);
* ``half_sum``: :math:`L_s = \frac12 \sum_{i,k} (\hat y_{s,ik} - y_{ik})^2` (seed ``004_…``).

Gradients come from the model's own explicit backpropagation where it has one (MLPs without
BatchNorm: no autograd graph to build, which dominates the cost of tiny networks), else from
autograd on :math:`\sum_s L_s`: networks share no parameters, so each network's gradient is
exactly that of its own loss, and a NaN in one network cannot reach the others' gradients.
Minibatches (``batch_size``) follow one shuffled order per epoch shared by all networks,
drawn from the problem's generator.

Observables at recording steps, computed on the full data: for models exposing hidden
pre-activations, the fraction of hidden units that are *dead* (pre-activation ≤ 0 on every
sample) and *always on* (> 0 on every sample), over all hidden layers; with minibatches also the
full-data loss.
"""

from __future__ import annotations

from typing import Literal, Protocol

import torch
from torch import Tensor

__all__ = ["BatchedModel", "SupervisedProblem"]

LossName = Literal["mse", "half_sum"]


class BatchedModel(Protocol):
    n_networks: int
    params: list[Tensor]

    def forward(self, x: Tensor) -> Tensor: ...


def _per_network_loss(output: Tensor, target: Tensor, loss: LossName) -> Tensor:
    squared = (output - target).square()
    if loss == "mse":
        return squared.mean(dim=(1, 2))
    return 0.5 * squared.sum(dim=(1, 2))


class SupervisedProblem:
    """S networks of one family on data ``(x, y)``; see the module docstring."""

    def __init__(
        self,
        model: BatchedModel,
        x: Tensor,
        y: Tensor,
        loss: LossName = "mse",
        batch_size: int | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        if loss not in ("mse", "half_sum"):
            raise ValueError(f"loss must be 'mse' or 'half_sum', got {loss!r}")
        n_samples = x.shape[-2]
        if y.shape[-2] != n_samples:
            raise ValueError(f"x has {n_samples} samples but y has {y.shape[-2]}")
        if batch_size is not None and not 1 <= batch_size <= n_samples:
            raise ValueError(f"batch_size must lie in [1, {n_samples}], got {batch_size}")
        self.model = model
        self.params = model.params
        self.n_networks = model.n_networks
        self.x, self.y = x, y
        self.loss_name: LossName = loss
        self.batch_size = batch_size
        self.generator = generator or torch.Generator().manual_seed(0)
        self._order: Tensor | None = None
        self._cursor = 0

    def _next_batch(self) -> tuple[Tensor, Tensor]:
        if self.batch_size is None:
            return self.x, self.y
        n_samples = self.x.shape[-2]
        if self._order is None or self._cursor + self.batch_size > n_samples:
            self._order = torch.randperm(n_samples, generator=self.generator).to(self.x.device)
            self._cursor = 0
        index = self._order[self._cursor : self._cursor + self.batch_size]
        self._cursor += self.batch_size
        return self.x.index_select(-2, index), self.y.index_select(-2, index)

    def loss_and_grads(self) -> tuple[Tensor, list[Tensor]]:
        x, y = self._next_batch()
        if getattr(self.model, "has_manual_backward", False):
            return self.model.loss_and_grads(x, y, self.loss_name)
        with torch.enable_grad():
            losses = _per_network_loss(self.model.forward(x), y, self.loss_name)
            grads = torch.autograd.grad(losses.sum(), self.params)
        return losses.detach(), list(grads)

    @torch.no_grad()
    def observe(self) -> dict[str, Tensor]:
        observed: dict[str, Tensor] = {}
        try:
            output, preactivations = self.model.forward(self.x, return_preactivations=True)
        except TypeError:  # a family without hidden pre-activations
            output, preactivations = self.model.forward(self.x), []
        if self.batch_size is not None:
            observed["full_loss"] = _per_network_loss(output, self.y, self.loss_name)
        if preactivations:
            dead = torch.cat([(z <= 0).all(dim=1) for z in preactivations], dim=1)
            always_on = torch.cat([(z > 0).all(dim=1) for z in preactivations], dim=1)
            observed["dead_fraction"] = dead.to(output.dtype).mean(dim=1)
            observed["always_on_fraction"] = always_on.to(output.dtype).mean(dim=1)
        return observed
