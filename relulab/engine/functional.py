r"""A batched family for any ``nn.Module``: S independently initialised copies of a user's model
trained as one computation through PyTorch's functional API (``torch.func``).

The copies are built by calling the user's factory S times (copy ``s`` under its own seed, then
optionally a :data:`relulab.init.SCHEMES` initialisation — the data-dependent ``scale`` /
``scale_bias`` of seed ``002_…`` §5.1 measured on each copy's own data), and their parameters
and buffers are stacked with ``torch.func.stack_module_state``: every tensor gets the network
index first, ``(S, …)``, the layout of the engine's optimisers
(:class:`~relulab.engine.BatchedSGD`, :class:`~relulab.engine.BatchedAdam`). One step is

.. math::
    (L_s, \nabla_{\theta_s} L_s)_{s=1}^{S} =
    \mathrm{vmap}\big(\mathrm{grad\_and\_value}(\theta, \beta, x, y \mapsto
    \ell(f(\theta, \beta; x), y))\big)(\Theta, B, x, y),

``f`` the module run by ``torch.func.functional_call`` on a parameter-free (meta) copy, ``β``
its buffers. Networks share no parameters, so a NaN in one cannot reach the others' gradients;
:func:`~relulab.engine.train` then freezes it and flags it as it does for every family.

**Two executions of a step** (``execution=``): the ``vmap`` call above, which turns S
convolutions into one grouped convolution, or a loop over the copies as plain modules whose
parameters are views of the stacked tensors (:mod:`relulab.engine.copies`) — the same
parameters, optimiser and data stream, equal to rounding; the loop also in channels-last
memory. ``"auto"`` takes the fastest on the device, as measured by ``relulab bench``'s W5
(docs/performance.md): the channels-last loop on the CPU, ``vmap`` on CUDA.

**BatchNorm.** Buffers are stacked too and passed to ``functional_call`` per network
(``in_dims=0``), so a training-mode forward updates *each copy's own* running mean, variance and
batch count in place, exactly as ``nn.BatchNorm`` does in a plain loop (checked in
``tests/engine/test_engine_functional.py``); :meth:`FunctionalFamily.eval` makes the forward use
them. Observation (:meth:`FunctionalFamily.forward` with ``update_buffers=False``,
:meth:`FunctionalFamily.trace`, :meth:`FunctionalFamily.layer_statistics`) runs on copies of the
buffers and leaves them as they were. A network whose loss is non-finite keeps its buffers from
before that step (it is frozen whole). :func:`~relulab.engine.train` evaluates the loss at steps
0 … ``steps``, so a BatchNorm copy sees ``steps + 1`` training-mode batches: its running
statistics are those of a plain loop that also evaluates the loss after its last step.

**Trace.** Forward hooks on the (meta) module record, in call order, the input and output of
every ``nn.Linear`` / ``nn.Conv{1,2,3}d`` call (``inputs``, ``linear_outputs``) and the input and
output of every activation module of :data:`relulab.nn.catalogue.ACTIVATIONS` (``preactivations``,
``activations``); functional activations (``F.relu``) are not seen by the trace (the probe sees
them, one network at a time).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad_and_value, stack_module_state, vmap

from relulab.engine.copies import (
    CHANNELS_LAST,
    EXECUTIONS,
    aliased_copies,
    channels_last_stack,
    default_execution,
    loop_loss_and_grads,
)
from relulab.engine.family import BatchedFamily, Trace
from relulab.engine.losses import LOSSES, LossName, get_loss
from relulab.engine.streams import minibatches
from relulab.init import InitReport, apply_init_, get_scheme
from relulab.nn.catalogue import ACTIVATIONS, layer_module_types
from relulab.nn.statistics import sample_moments_from_sums

__all__ = [
    "FUNCTIONAL_LOSSES",
    "FunctionalFamily",
    "FunctionalProblem",
    "LayerSums",
    "minibatches",
]

#: The layers whose calls the trace records (catalogue kinds ``linear`` and ``conv``).
LAYER_TYPES: tuple[type[nn.Module], ...] = layer_module_types("linear", "conv")

#: The activation modules whose calls the trace records: every catalogued activation type.
ACTIVATION_TYPES: tuple[type[nn.Module], ...] = tuple(
    module for kind in ACTIVATIONS for module in kind.modules
)

#: The losses of :data:`relulab.engine.losses.LOSSES` with a per-network form (one network's
#: output and targets → a scalar), by name.
FUNCTIONAL_LOSSES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    name: loss.per_network for name, loss in LOSSES.items() if loss.per_network is not None
}

InitData = Tensor | Callable[[int], Tensor] | None


def _build_copy(
    factory: Callable[[], nn.Module],
    seed: int,
    index: int,
    init: str | None,
    init_data: InitData,
    dtype: torch.dtype,
    device: torch.device,
) -> tuple[nn.Module, InitReport | None]:
    """Copy ``index``: ``factory()`` under torch's global seed ``seed`` (restored afterwards),
    in ``dtype``, then the scheme ``init`` drawn from a generator seeded with ``seed``.

    Per-tensor schemes draw on the CPU (relulab.init's float64 draws), so a copy is the same
    on every device. Data-dependent schemes run forward passes: they run on ``device`` with a
    generator there (on CUDA their N(0, 1) draw comes from the CUDA generator)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = factory().to(dtype)
    if init is None:
        return module.to(device), None
    if not get_scheme(init).data_dependent:
        report = apply_init_(module, init, generator=torch.Generator().manual_seed(seed))
        return module.to(device), report
    module = module.to(device)
    data = init_data(index) if callable(init_data) else init_data
    if data is not None:
        data = data.to(device=device, dtype=dtype)
    generator = torch.Generator(device=device).manual_seed(seed)
    return module, apply_init_(module, init, data, generator=generator)


class FunctionalFamily(BatchedFamily):
    r"""S copies of any ``nn.Module`` as one batched family (module docstring).

    Args:
        factory: builds one copy, e.g. ``lambda: nn.Sequential(...)``; called S times on the
            CPU, copy ``s`` under ``torch.manual_seed(seeds[s])``.
        n_networks: S.
        seeds: one per copy (default ``0 … S−1``); copy ``s`` is the same in any batch.
        init: ``None`` (the factory's own initialisation) or a scheme of
            :data:`relulab.init.SCHEMES`, applied to each copy with a generator seeded by its
            seed (:func:`relulab.init.apply_init_`).
        init_data: data-dependent schemes (``scale``, ``scale_bias``, ``lsuv``): the samples
            to measure, shared by all copies, or a function ``index → samples`` giving each
            copy its own (seed ``002_…`` §5.1: 5 minibatches).
        dtype: the parameters' dtype.
        device: their device.
        execution: how a training step runs: ``"vmap"`` (one ``vmap(grad_and_value(...))``
            call for all copies), ``"loop"`` (the copies one after the other as plain modules
            over the same stacked tensors, :mod:`relulab.engine.copies`),
            ``"loop-channels-last"`` (the loop with convolution weights and inputs in
            channels-last memory) or ``"auto"``, the fastest on ``device``
            (:func:`~relulab.engine.copies.default_execution`: the channels-last loop on the
            CPU, ``vmap`` on CUDA). All give the same parameters to rounding; observation
            (``forward``, ``trace``, ``layer_statistics``) runs through ``vmap`` in every case.

    Attributes:
        names: the parameter names, in the order of :attr:`params`.
        params: stacked trainable tensors ``(S, …)`` (what the optimisers step).
        buffers: stacked buffers ``{name: (S, …)}`` (BatchNorm statistics).
        init_reports: per copy, the :class:`~relulab.init.InitReport` of ``init`` (or ``None``).
        execution: the path a training step takes, one of
            :data:`~relulab.engine.copies.EXECUTIONS` (``"auto"`` resolved).

    Example:
        >>> family = FunctionalFamily(lambda: nn.Sequential(nn.Linear(3, 8), nn.ReLU(),
        ...                           nn.Linear(8, 2)), n_networks=4)
        >>> family.forward(torch.randn(5, 3)).shape
        torch.Size([4, 5, 2])
        >>> [tuple(p.shape) for p in family.params]
        [(4, 8, 3), (4, 8), (4, 2, 8), (4, 2)]
    """

    manual_backward = False

    def __init__(
        self,
        factory: Callable[[], nn.Module],
        n_networks: int,
        seeds: Sequence[int] | None = None,
        init: str | None = None,
        init_data: InitData = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
        execution: Literal["auto", "vmap", "loop", "loop-channels-last"] = "auto",
    ) -> None:
        if execution not in ("auto", *EXECUTIONS):
            choices = ", ".join(map(repr, ("auto", *EXECUTIONS)))
            raise ValueError(f"execution must be one of {choices}, got {execution!r}")
        if n_networks < 1:
            raise ValueError(f"n_networks must be positive, got {n_networks}")
        seeds = list(range(n_networks)) if seeds is None else [int(s) for s in seeds]
        if len(seeds) != n_networks:
            raise ValueError(f"{len(seeds)} seeds for {n_networks} networks")
        device = torch.device(device)
        built = [
            _build_copy(factory, seed, index, init, init_data, dtype, device)
            for index, seed in enumerate(seeds)
        ]
        copies = [module for module, _ in built]
        self.init_reports = [report for _, report in built]
        self.n_networks = n_networks
        self.seeds = seeds
        self.device = device
        self._template = copy.deepcopy(copies[0]).train()
        self._base = copy.deepcopy(copies[0]).to("meta").train()
        params, buffers = stack_module_state(copies)
        self.names = list(params)
        self.execution = default_execution(device) if execution == "auto" else execution
        layout = channels_last_stack if self.execution == CHANNELS_LAST else (lambda t: t)
        # leaves that require grad, as the other families': autograd on forward() works too
        self.params = [
            layout(params[name].detach().to(self.device)).requires_grad_(True)
            for name in self.names
        ]
        self.buffers = {name: value.to(self.device) for name, value in buffers.items()}
        self.training = True
        self._copies: tuple[tuple[int, ...], list[nn.Module]] | None = None

    # -- modes -------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> FunctionalFamily:
        """Training mode (BatchNorm on batch statistics, updating its buffers), as
        ``nn.Module.train``; returns the family."""
        self.training = mode
        self._base.train(mode)
        return self

    def eval(self) -> FunctionalFamily:
        """Inference mode (BatchNorm on its running statistics); returns the family."""
        return self.train(False)

    # -- the functional call -----------------------------------------------------------------
    def _param_dict(self, params: Sequence[Tensor] | None = None) -> dict[str, Tensor]:
        """Name → stacked tensor for ``functional_call`` under ``vmap``; channels-last weights
        as contiguous copies (``vmap``'s batching of pooling falls back to a slow path, with a
        warning, on channels-last activations)."""
        params = self.params if params is None else params
        if self.execution == CHANNELS_LAST:
            params = [p.contiguous() for p in params]
        return dict(zip(self.names, params, strict=True))

    def _call(self, params: dict[str, Tensor], buffers: dict[str, Tensor], x: Tensor) -> Tensor:
        return functional_call(self._base, (params, buffers), (x,))

    def _buffers_for_observation(self, update_buffers: bool) -> dict[str, Tensor]:
        if update_buffers:
            return self.buffers
        return {name: value.clone() for name, value in self.buffers.items()}

    def forward(self, x: Tensor, per_network: bool = False, update_buffers: bool = False) -> Tensor:
        """Outputs ``(S, B, …)`` of every copy.

        Args:
            x: inputs ``(B, …)`` shared by all copies, or ``(S, B, …)`` with ``per_network``.
            per_network: whether ``x`` has the network axis first.
            update_buffers: let a training-mode forward update the BatchNorm statistics (a
                plain module's behaviour); by default they are left as they were.

        Differentiable when grad mode is on (:class:`~relulab.engine.SupervisedProblem`'s
        autograd path trains the family this way, without updating BatchNorm statistics;
        :class:`FunctionalProblem` is the ``torch.func`` path that does).
        """
        buffers = self._buffers_for_observation(update_buffers)
        in_dims = (0, 0, 0 if per_network else None)
        return vmap(self._call, in_dims=in_dims)(self._param_dict(), buffers, x)

    def trace(self, x: Tensor, per_network: bool = False) -> Trace:
        """The forward pass with every Linear/Conv call's input and output and every
        activation module's input and output (module docstring), each ``(S, B, …)``; buffers
        are left as they were."""
        return self._traced(x, per_network, everything=True)[0]

    def _traced(self, x: Tensor, per_network: bool, everything: bool) -> tuple[Trace, list[bool]]:
        """The trace (only the Linear/Conv outputs unless ``everything``) and, per Linear/Conv
        call, whether it was a Linear (features on the last axis) or a convolution (axis 1)."""
        layers, activations = self._hooked_modules()
        linear: list[bool] = []  # filled once: vmap runs the function once

        def traced(params: dict[str, Tensor], buffers: dict[str, Tensor], x: Tensor):
            records: dict[str, list[Tensor]] = {"in": [], "out": [], "z": [], "h": []}
            linear.clear()

            def keep_layer(module: nn.Module, inputs: tuple, output: Tensor) -> None:
                linear.append(isinstance(module, nn.Linear))
                if everything:
                    records["in"].append(inputs[0])
                records["out"].append(output.clone())  # an in-place activation may follow

            def keep_preactivation(module: nn.Module, inputs: tuple) -> None:
                records["z"].append(inputs[0].clone())

            def keep_activation(module: nn.Module, inputs: tuple, output: Tensor) -> None:
                records["h"].append(output)

            hooks = [m.register_forward_hook(keep_layer) for m in layers]
            if everything:
                hooks += [m.register_forward_pre_hook(keep_preactivation) for m in activations]
                hooks += [m.register_forward_hook(keep_activation) for m in activations]
            try:
                output = self._call(params, buffers, x)
            finally:
                for hook in hooks:
                    hook.remove()
            return output, tuple(tuple(records[k]) for k in ("in", "out", "z", "h"))

        in_dims = (0, 0, 0 if per_network else None)
        with torch.no_grad():
            output, (inputs, outputs, pre, post) = vmap(traced, in_dims=in_dims)(
                self._param_dict(), self._buffers_for_observation(False), x
            )
        return Trace(output, inputs, outputs, pre, post), list(linear)

    def _hooked_modules(self) -> tuple[list[nn.Module], list[nn.Module]]:
        modules = list(self._base.modules())
        layers = [m for m in modules if isinstance(m, LAYER_TYPES)]
        activations = [m for m in modules if isinstance(m, ACTIVATION_TYPES)]
        return layers, activations

    @torch.no_grad()
    def layer_outputs(self, x: Tensor, batch_size: int | None = None) -> Iterator[list[Tensor]]:
        """Per batch of ``x``, every Linear/Conv call's output, features on axis 2: a
        convolution's ``(S, B, channels, …)`` as it is, a Linear's ``(S, B, …, d)`` with its
        feature axis moved there — without the rest of the trace, so a pass keeps one tensor per
        layer. What :meth:`layer_statistics` accumulates; for other per-layer readings.

        Args:
            x: shared inputs ``(N, …)``.
            batch_size: samples per forward pass (default: all).

        Yields:
            One list per batch, one ``(S, B, features, …)`` tensor per Linear/Conv call.

        Example:
            >>> family = FunctionalFamily(lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU(),
            ...                           nn.Linear(4, 2)), n_networks=2)
            >>> [u.shape for u in next(family.layer_outputs(torch.randn(5, 3)))]
            [torch.Size([2, 5, 4]), torch.Size([2, 5, 2])]
        """
        batch_size = batch_size or len(x)
        for start in range(0, len(x), batch_size):
            trace, linear = self._traced(x[start : start + batch_size], False, everything=False)
            yield [
                u.movedim(-1, 2) if linear[k] else u  # a Linear's features: its last axis
                for k, u in enumerate(trace.linear_outputs)
            ]

    @torch.no_grad()
    def layer_statistics(self, x: Tensor, batch_size: int | None = None) -> LayerSums:
        r"""Per copy and per Linear/Conv call, the squared sample mean and sample variance of
        its output over ``x`` (seed ``002_…`` §2.2, eq. 9), accumulated batch by batch
        (:func:`relulab.nn.statistics.sample_moments_from_sums`) so large data fit.

        A feature is a Linear output's last axis (at any rank: a sequence ``(N, T, d)`` has d
        features) or a convolution's channel (axis 1); statistics run over samples and
        positions. Buffers are left as they were.

        Args:
            x: shared inputs ``(N, …)``.
            batch_size: samples per forward pass (default: all).

        Returns:
            :class:`LayerSums`.

        Example:
            >>> family = FunctionalFamily(lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(),
            ...                           nn.Conv2d(4, 2, 3)), n_networks=3)
            >>> sums = family.layer_statistics(torch.randn(10, 1, 8, 8), batch_size=4)
            >>> sums.ratio().shape
            torch.Size([3, 2])
        """
        total: list[Tensor] = []
        square: list[Tensor] = []
        count: list[int] = []
        for outputs in self.layer_outputs(x, batch_size):
            for k, u in enumerate(outputs):
                dims = (1,) + tuple(range(3, u.dim()))
                u64 = u.to(torch.float64)
                if k == len(total):
                    total.append(
                        torch.zeros(u.shape[0], u.shape[2], dtype=torch.float64, device=u.device)
                    )
                    square.append(torch.zeros_like(total[k]))
                    count.append(0)
                total[k] += u64.sum(dim=dims)
                square[k] += u64.square().sum(dim=dims)
                count[k] += u[0].numel() // u.shape[2]
        return LayerSums(total, square, count)

    # -- one step ------------------------------------------------------------------------------
    def loss_and_grads_with(
        self,
        x: Tensor,
        y: Tensor,
        loss: Callable[[Tensor, Tensor], Tensor],
        per_network: bool = False,
    ) -> tuple[Tensor, list[Tensor]]:
        """Per-network losses ``(S,)`` on ``(x, y)`` and their gradients matching
        :attr:`params`, by ``vmap(grad_and_value(...))`` (module docstring) or, with
        :attr:`execution` ``"loop"``, one copy after the other; a training-mode forward updates
        each copy's BatchNorm statistics, except where the loss is non-finite.

        Args:
            x: inputs, shared ``(B, …)`` or ``(S, B, …)`` with ``per_network``.
            y: targets, likewise.
            loss: one network's ``(output, target) → scalar``.
            per_network: whether ``x`` and ``y`` have the network axis first.
        """

        before = {n: b.clone() for n, b in self.buffers.items()} if self.training else {}
        if self.execution != "vmap":
            losses, grads = loop_loss_and_grads(
                self.loop_copies(),
                self.names,
                self.params,
                x,
                y,
                loss,
                per_network,
                channels_last=self.execution == CHANNELS_LAST,
            )
        else:
            losses, grads = self._vmap_loss_and_grads(x, y, loss, per_network)
        if before:
            self._restore_buffers_where(~torch.isfinite(losses), before)
        return losses, grads

    def _vmap_loss_and_grads(
        self, x: Tensor, y: Tensor, loss: Callable[[Tensor, Tensor], Tensor], per_network: bool
    ) -> tuple[Tensor, list[Tensor]]:
        """:meth:`loss_and_grads_with` as one ``vmap(grad_and_value(...))`` call."""

        def network_loss(params: dict[str, Tensor], buffers: dict[str, Tensor], x, y):
            return loss(self._call(params, buffers, x), y)

        data_dim = 0 if per_network else None
        losses_grads = vmap(grad_and_value(network_loss), in_dims=(0, 0, data_dim, data_dim))
        with torch.no_grad():  # torch.func.grad differentiates inside; no outer graph is built
            grads, losses = losses_grads(self._param_dict(), self.buffers, x, y)
        return losses.detach(), [grads[name] for name in self.names]

    def loop_copies(self) -> list[nn.Module]:
        """The copies as plain modules over the stacked tensors (views of slice ``s``,
        :func:`~relulab.engine.copies.aliased_copies`), in the family's mode; made once, and
        again if :attr:`params` or :attr:`buffers` were given other tensors."""
        key = tuple(map(id, self.params)) + tuple(map(id, self.buffers.values()))
        if self._copies is None or self._copies[0] != key:
            copies = aliased_copies(self._template, self.names, self.params, self.buffers)
            self._copies = (key, copies)
        for module in self._copies[1]:
            if module.training != self.training:
                module.train(self.training)
        return self._copies[1]

    @torch.no_grad()
    def _restore_buffers_where(self, frozen: Tensor, before: dict[str, Tensor]) -> None:
        for name, buffer in self.buffers.items():
            keep = frozen.reshape((-1,) + (1,) * (buffer.dim() - 1))
            buffer.copy_(torch.where(keep, before[name], buffer))

    # -- back to plain modules -----------------------------------------------------------------
    @torch.no_grad()
    def module(self, s: int) -> nn.Module:
        """Copy ``s`` as a plain ``nn.Module`` (on the family's device) with its current
        parameters and buffers."""
        module = copy.deepcopy(self._template).to(self.device)
        state = {name: p[s] for name, p in zip(self.names, self.params, strict=True)}
        state.update({name: b[s] for name, b in self.buffers.items()})
        module.load_state_dict(state)
        return module.train(self.training)


class LayerSums:
    """Per-copy, per-layer sums of a layer's outputs over samples (and positions), from which
    :meth:`FunctionalFamily.layer_statistics` gets the seed ``002_…`` split.

    Attributes:
        total: per layer ``(S, features)`` sums of ``u``.
        square: per layer ``(S, features)`` sums of ``u²``.
        count: per layer, the samples × positions summed.
    """

    def __init__(self, total: list[Tensor], square: list[Tensor], count: list[int]) -> None:
        self.total, self.square, self.count = total, square, count

    def moments(self) -> list[tuple[Tensor, Tensor]]:
        """Per layer the per-feature sample mean and variance ``(S, features)`` each."""
        return [
            sample_moments_from_sums(t, q, n)
            for t, q, n in zip(self.total, self.square, self.count, strict=True)
        ]

    def ratio(self) -> Tensor:
        r""":math:`r = \sqrt{\sum_i \langle u_i\rangle^2 / \sum_i \mathrm{Var}_t u_i}` per copy and
        layer, ``(S, layers)`` (:func:`relulab.nn.statistics.mean_variance_ratio`)."""
        from relulab.nn.statistics import mean_variance_ratio, squared_mean_and_variance

        ratios = [
            mean_variance_ratio(*squared_mean_and_variance(mean, variance))
            for mean, variance in self.moments()
        ]
        return torch.stack(ratios, dim=1)


class FunctionalProblem:
    """A :class:`~relulab.engine.FunctionalFamily` with its data stream and loss: a
    :class:`~relulab.engine.BatchedProblem` for :func:`~relulab.engine.train`.

    Args:
        family: the copies.
        batches: an iterator of ``(x, y)`` minibatches (e.g. :func:`minibatches`), shared by
            all copies, or with the network axis first when ``per_network``.
        loss: a name of :data:`FUNCTIONAL_LOSSES` (``mse`` and ``cross_entropy``: means over the
            batch, and over positions for dense targets; ``half_sum``: half the summed squared
            error, :mod:`relulab.engine.losses`) or one network's ``(output, target) → scalar``.
        per_network: whether each batch has the network axis first.
        observe_fn: ``family → {name: (S,)}``, extra observables at recording steps.

    Example:
        >>> from relulab.engine import BatchedSGD, train
        >>> family = FunctionalFamily(lambda: nn.Linear(3, 2), n_networks=2)
        >>> x, y = torch.randn(16, 3), torch.randn(16, 2)
        >>> problem = FunctionalProblem(family, minibatches(x, y, 8, torch.Generator()), "mse")
        >>> train(problem, BatchedSGD(problem.params, 0.1), 4, 2).curves["loss"].shape
        (2, 3)
    """

    def __init__(
        self,
        family: FunctionalFamily,
        batches: Iterator[tuple[Tensor, Tensor]],
        loss: LossName | Callable[[Tensor, Tensor], Tensor] = "mse",
        per_network: bool = False,
        observe_fn: Callable[[FunctionalFamily], dict[str, Tensor]] | None = None,
    ) -> None:
        if isinstance(loss, str):
            loss = get_loss(loss, "per_network", alternative="a callable")
        self.family = family
        self.params = family.params
        self.n_networks = family.n_networks
        self.batches = batches
        self.loss = loss
        self.per_network = per_network
        self.observe_fn = observe_fn

    def loss_and_grads(self) -> tuple[Tensor, list[Tensor]]:
        """Per-network losses ``(S,)`` on the next batch and their gradients."""
        x, y = next(self.batches)
        return self.family.loss_and_grads_with(x, y, self.loss, self.per_network)

    def observe(self) -> dict[str, Tensor]:
        """The observables of ``observe_fn`` (none by default)."""
        return {} if self.observe_fn is None else self.observe_fn(self.family)
