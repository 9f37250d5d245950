r"""Supervised training of a batched model family on shared data.

Loss per network :math:`s` on a batch of :math:`B` samples with outputs :math:`\hat y_s`:

* ``mse``: :math:`L_s = \frac{1}{B\,d_{out}} \sum_{i,k} (\hat y_{s,ik} - y_{ik})^2`
  (the residual-toy and teacher–student studies);
* ``half_sum``: :math:`L_s = \frac12 \sum_{i,k} (\hat y_{s,ik} - y_{ik})^2` (seed ``004_…``).

Gradients come from the model's own explicit backpropagation where it declares one
(``model.manual_backward``: MLPs without BatchNorm; no autograd graph to build, which dominates
the cost of tiny networks), else from
autograd on :math:`\sum_s L_s`: networks share no parameters, so each network's gradient is
exactly that of its own loss, and a NaN in one network cannot reach the others' gradients.
Minibatches (``batch_size``) follow one shuffled order per epoch shared by all networks,
drawn from the problem's generator; with ``order_seeds`` each network draws its own order from
its own generator instead (networks are then independent samples, and network ``s`` sees the
batches a lone network with generator seed ``order_seeds[s]`` would see).

Observables at recording steps, computed on the full data (or on ``observe_data``, e.g. a
fixed subset of a large training set, when given) from the model's
:meth:`~relulab.engine.family.BatchedFamily.trace`: the fraction of hidden units that are *dead*
(pre-activation ≤ 0 on every sample) and *always on* (> 0 on every sample), over all hidden
layers (:func:`relulab.nn.statistics.unit_states`); with minibatches also the full-data loss;
with held-out ``validation`` data ``(x, y)`` also the loss on it (``validation_loss``) and,
with ``record_error``, its classification error (``validation_error``: the share of samples
whose largest output is not at the target's largest entry, e.g. one-hot labels);
with ``record_parameters`` also a snapshot of every parameter, ``param_0``, ``param_1``, … in
the order of ``model.params`` (curves ``(S, T, …)``: the weight trajectories seed ``004_…``
projects onto its data modes).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from relulab.engine.family import BatchedFamily, Trace
from relulab.engine.losses import LossName, get_loss
from relulab.nn.statistics import BATCHED_SAMPLE_DIMS, UnitStates, unit_states

__all__ = ["SupervisedProblem"]


def _gather_rows(data: Tensor, index: Tensor) -> Tensor:
    """Rows ``index[s]`` of ``data`` for every network s: ``(S, B, d)`` from shared ``(N, d)``
    or per-network ``(S, N, d)`` data and ``(S, B)`` indices."""
    if data.dim() == 2:
        return data[index]
    return torch.gather(data, 1, index.unsqueeze(-1).expand(-1, -1, data.shape[-1]))


class SupervisedProblem:
    """S networks of one family on shared data ``(x, y)`` (module docstring): a
    :class:`~relulab.engine.BatchedProblem` for :func:`~relulab.engine.train`.

    Args:
        model: a :class:`~relulab.engine.BatchedFamily`.
        x: inputs ``(N, d_in)`` (or per network ``(S, N, d_in)``).
        y: targets ``(N, d_out)`` (or ``(S, N, d_out)``).
        loss: ``"mse"`` or ``"half_sum"``.
        batch_size: minibatch size (default: full batch).
        generator: draws the minibatch order (default: seeded with 0).
        validation: held-out ``(x, y)``; its loss is recorded as ``validation_loss``.
        record_parameters: also observe a copy of every parameter (module docstring).
        order_seeds: one generator seed per network for its own minibatch order (default:
            one order shared by all networks, from ``generator``).
        record_error: also observe the validation classification error (module docstring).
        observe_data: ``(x, y)`` on which :meth:`observe` measures ``full_loss`` and the unit
            states instead of the training data (e.g. a fixed subset of it).

    Example:
        >>> from relulab.engine import BatchedMLP, MLPSpec
        >>> problem = SupervisedProblem(BatchedMLP(MLPSpec((3, 8, 1)), 2), torch.randn(16, 3),
        ...                             torch.randn(16, 1), batch_size=4)
        >>> sorted(problem.observe())
        ['always_on_fraction', 'dead_fraction', 'full_loss']
    """

    def __init__(
        self,
        model: BatchedFamily,
        x: Tensor,
        y: Tensor,
        loss: LossName = "mse",
        batch_size: int | None = None,
        generator: torch.Generator | None = None,
        validation: tuple[Tensor, Tensor] | None = None,
        record_parameters: bool = False,
        order_seeds: Sequence[int] | None = None,
        record_error: bool = False,
        observe_data: tuple[Tensor, Tensor] | None = None,
    ) -> None:
        self._loss = get_loss(loss, "batched")  # ValueError for a name it does not know
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
        self.validation = validation
        self.record_parameters = record_parameters
        self.record_error = record_error
        self.observe_data = (x, y) if observe_data is None else observe_data
        if order_seeds is not None and len(order_seeds) != model.n_networks:
            raise ValueError(f"{len(order_seeds)} order seeds for {model.n_networks} networks")
        self._generators = (
            None
            if order_seeds is None
            else [torch.Generator().manual_seed(int(seed)) for seed in order_seeds]
        )
        self._order: Tensor | None = None
        self._cursor = 0

    def _next_batch(self) -> tuple[Tensor, Tensor]:
        if self.batch_size is None:
            return self.x, self.y
        n_samples = self.x.shape[-2]
        if self._order is None or self._cursor + self.batch_size > n_samples:
            self._order = self._new_order(n_samples)
            self._cursor = 0
        index = self._order[..., self._cursor : self._cursor + self.batch_size]
        self._cursor += self.batch_size
        if self._generators is None:
            return self.x.index_select(-2, index), self.y.index_select(-2, index)
        return _gather_rows(self.x, index), _gather_rows(self.y, index)

    def _new_order(self, n_samples: int) -> Tensor:
        """One epoch's order: ``(N,)`` shared, or ``(S, N)`` from the per-network generators."""
        if self._generators is None:
            return torch.randperm(n_samples, generator=self.generator).to(self.x.device)
        orders = [torch.randperm(n_samples, generator=g) for g in self._generators]
        return torch.stack(orders).to(self.x.device)

    @property
    def work_per_step(self) -> int:
        """Multiply–adds of one step's forward pass, all networks (batch rows × parameters):
        what :func:`~relulab.engine.train` sizes its thread count by."""
        rows = self.x.shape[-2] if self.batch_size is None else self.batch_size
        return rows * sum(p.numel() for p in self.params)

    @property
    def compilable(self) -> bool:
        """Whether a step is a pure function of the parameters (full batch, the model's manual
        backward), so that :func:`~relulab.engine.train` may compile several into one call."""
        return self.batch_size is None and bool(self.model.manual_backward)

    def loss_and_grads(self) -> tuple[Tensor, list[Tensor]]:
        """Per-network losses ``(S,)`` on the next batch and their gradients (the model's
        manual backward where it declares one, else autograd)."""
        x, y = self._next_batch()
        if self.model.manual_backward:
            return self.model.loss_and_grads(x, y, self.loss_name)
        with torch.enable_grad():
            losses = self._loss(self.model.gradient_forward(x), y)
            grads = torch.autograd.grad(losses.sum(), self.params)
        return losses.detach(), list(grads)

    def recording_step(
        self, with_grads: bool = True
    ) -> tuple[Tensor, list[Tensor] | None, dict[str, Tensor]]:
        """What :func:`~relulab.engine.train` needs at a recording step: the losses and (with
        ``with_grads``; not after the last step) gradients of :meth:`loss_and_grads`, and the
        observables of :meth:`observe`, at the same parameters.

        Full batch on the observed data with an autograd model: one traced forward pass gives
        all three (W2 of ``relulab bench``: 110 ms of a separate observation saved per
        recording). Otherwise, or where a subclass redefines :meth:`loss_and_grads` or
        :meth:`observe`, the separate calls, and no backward pass without ``with_grads``.

        Args:
            with_grads: whether to compute the gradients (false after the last step).

        Returns:
            ``(losses (S,), gradients or None, observables)``.

        Example:
            >>> from relulab.engine import BatchedResidualToy, ResidualToySpec
            >>> toy = BatchedResidualToy(ResidualToySpec(4, 8, 2), n_networks=3)
            >>> problem = SupervisedProblem(toy, torch.randn(16, 4), torch.randn(16, 4))
            >>> losses, grads, observed = problem.recording_step()
            >>> losses.shape, len(grads) == len(problem.params), sorted(observed)
            (torch.Size([3]), True, ['always_on_fraction', 'dead_fraction'])
        """
        x_obs, y_obs = self.observe_data
        shared_pass = (
            self.batch_size is None
            and x_obs is self.x
            and y_obs is self.y
            and not self.model.manual_backward
            and self.model.differentiable_trace
            and not self._redefines_loss_and_grads
            and not self._redefines_observe
        )
        if not shared_pass:
            if with_grads or self._redefines_loss_and_grads:
                losses, grads = self.loss_and_grads()
            else:
                losses, grads = self._loss_without_grads(), None
            return losses, (grads if with_grads else None), self.observe()
        with torch.enable_grad() if with_grads else torch.no_grad():
            trace = self.model.trace(self.x)
            losses = self._loss(trace.output, self.y)
            grads = list(torch.autograd.grad(losses.sum(), self.params)) if with_grads else None
        with torch.no_grad():
            return losses.detach(), grads, self._observe_trace(trace)

    @property
    def _redefines_loss_and_grads(self) -> bool:
        """Whether a subclass redefines :meth:`loss_and_grads`: the shared traced pass would
        bypass its version, so it gets the separate calls."""
        return type(self).loss_and_grads is not SupervisedProblem.loss_and_grads

    @property
    def _redefines_observe(self) -> bool:
        """Whether a subclass redefines :meth:`observe` (as :attr:`_redefines_loss_and_grads`)."""
        return type(self).observe is not SupervisedProblem.observe

    def _loss_without_grads(self) -> Tensor:
        x, y = self._next_batch()
        if self.model.manual_backward:  # its own loss arithmetic; the explicit backward is cheap
            return self.model.loss_and_grads(x, y, self.loss_name)[0]
        with torch.no_grad():
            return self._loss(self.model.forward(x), y)

    @torch.no_grad()
    def observe(self) -> dict[str, Tensor]:
        """Per-network observables on the full data: dead and always-on fractions of the hidden
        units (and the full-data loss with minibatches, the validation loss with held-out
        data)."""
        return self._observe_trace(self.model.trace(self.observe_data[0]))

    def _observe_trace(self, trace: Trace) -> dict[str, Tensor]:
        """:meth:`observe` given the forward pass on the observed data."""
        observed: dict[str, Tensor] = {}
        y_obs = self.observe_data[1]
        if self.batch_size is not None:
            observed["full_loss"] = self._loss(trace.output, y_obs)
        if self.validation is not None:
            x_val, y_val = self.validation
            output = self.model.forward(x_val)
            observed["validation_loss"] = self._loss(output, y_val)
            if self.record_error:
                wrong = output.argmax(dim=-1) != y_val.argmax(dim=-1)
                observed["validation_error"] = wrong.to(output.dtype).mean(dim=-1)
        if trace.preactivations:
            layers = [unit_states(z, BATCHED_SAMPLE_DIMS) for z in trace.preactivations]
            states = UnitStates(
                dead=torch.cat([layer.dead for layer in layers], dim=1),
                always_on=torch.cat([layer.always_on for layer in layers], dim=1),
            )
            fractions = states.fractions(trace.output.dtype)
            observed["dead_fraction"] = fractions["dead_fraction"]
            observed["always_on_fraction"] = fractions["always_on_fraction"]
        if self.record_parameters:
            observed.update({f"param_{k}": p.detach() for k, p in enumerate(self.params)})
        return observed
