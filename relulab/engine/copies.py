r"""The per-network loop of a :class:`~relulab.engine.FunctionalFamily`: its S copies as plain
``nn.Module`` objects whose parameters and buffers *are* the family's stacked tensors (each
copy's tensors are views of slice ``s``), stepped one network after the other.

A step is what a per-network ``torch.optim`` loop does, without the optimiser:

.. math::
    L_s = \ell(f_s(x_s), y_s), \qquad \nabla_{\theta_s} L_s
    = \mathrm{autograd.grad}(L_s, \theta_s), \qquad s = 1, \dots, S,

each gradient written into slice ``s`` of a stacked ``(S, …)`` gradient, so the family's
batched optimisers (:class:`~relulab.engine.BatchedSGD`, :class:`~relulab.engine.BatchedAdam`)
step all copies at once as on the ``vmap`` path. A training-mode forward updates a copy's
BatchNorm statistics in place, in its slice of the stacked buffers. Each copy's computation is
the plain module's, so a copy trains bit for bit as it would alone (and as in any batch); it
equals the ``vmap`` path's grouped convolution to rounding
(``tests/engine/test_engine_functional.py``). Which path is faster depends on the device
(:func:`default_execution`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence

import torch
from torch import Tensor, nn

__all__ = [
    "CHANNELS_LAST",
    "EXECUTIONS",
    "aliased_copies",
    "channels_last_stack",
    "default_execution",
    "loop_loss_and_grads",
]

#: the loop with every convolution in channels-last memory (weights, inputs, activations)
CHANNELS_LAST = "loop-channels-last"
#: the ways a FunctionalFamily computes a step: one ``vmap`` call, or a loop over its copies
#: (with the tensors' own layout, or channels-last)
EXECUTIONS = ("vmap", "loop", CHANNELS_LAST)


def default_execution(device: torch.device | str) -> str:
    """The faster path on ``device``, as measured by ``relulab bench``'s W5 (ALL-CNN-C at the
    init-training sizes, docs/performance.md): on the CPU the loop in channels-last memory,
    where oneDNN runs one network's convolution faster than the grouped convolution ``vmap``
    makes of S of them, and faster in channels-last than in the default layout;
    ``"vmap"`` elsewhere (an H100 ran W5's ``vmap`` family 5.1× the per-network loop, which
    is launch-bound there).

    Example:
        >>> default_execution("cpu")
        'loop-channels-last'
    """
    return CHANNELS_LAST if torch.device(device).type == "cpu" else "vmap"


def channels_last_stack(stacked: Tensor) -> Tensor:
    """A copy of stacked convolution weights ``(S, out, in, kh, kw)`` laid out in memory as
    ``(S, out, kh, kw, in)``, so every copy's slice is a channels-last 4-D tensor (what
    ``module.to(memory_format=torch.channels_last)`` makes of one network); a tensor of
    another rank is returned as it is.

    Example:
        >>> w = channels_last_stack(torch.randn(2, 4, 3, 5, 5))
        >>> w[1].is_contiguous(memory_format=torch.channels_last), w.shape
        (True, torch.Size([2, 4, 3, 5, 5]))
    """
    if stacked.dim() != 5:
        return stacked
    n, out, inputs, kh, kw = stacked.shape
    memory = torch.empty(
        (n, out, kh, kw, inputs), dtype=stacked.dtype, device=stacked.device
    ).permute(0, 1, 4, 2, 3)
    return memory.copy_(stacked)


def _place(module: nn.Module, name: str, tensor: Tensor, parameter: bool) -> None:
    """Register ``tensor`` as the parameter (or buffer) ``name`` (dotted) of ``module``."""
    owner_name, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner_name)
    if parameter:
        owner.register_parameter(leaf, nn.Parameter(tensor, requires_grad=True))
    else:
        owner.register_buffer(leaf, tensor)


def aliased_copies(
    template: nn.Module,
    names: Sequence[str],
    params: Sequence[Tensor],
    buffers: Mapping[str, Tensor],
) -> list[nn.Module]:
    """S copies of ``template`` whose parameter ``names[i]`` is a view of ``params[i][s]`` and
    whose buffer ``name`` is ``buffers[name][s]``: an in-place change to the stacked tensors
    (an optimiser step) is the copies' change, and a copy's in-place BatchNorm update is the
    stacked buffer's.

    Args:
        template: one copy (its own parameter values are not used).
        names: the parameter names, in the order of ``params``.
        params: stacked parameters ``(S, …)``.
        buffers: stacked buffers ``{name: (S, …)}``.

    Returns:
        The S modules, in network order.

    Example:
        >>> stacked = [torch.zeros(2, 3, 4), torch.zeros(2, 3)]
        >>> copies = aliased_copies(nn.Linear(4, 3), ["weight", "bias"], stacked, {})
        >>> _ = stacked[1][1].fill_(1.0)  # network 1's bias, changed in place
        >>> copies[1](torch.zeros(1, 4)).tolist()
        [[1.0, 1.0, 1.0]]
    """
    copies = []
    for s in range(params[0].shape[0]):
        module = copy.deepcopy(template)
        for name, stacked in zip(names, params, strict=True):
            _place(module, name, stacked.detach()[s], parameter=True)
        for name, stacked in buffers.items():
            _place(module, name, stacked[s], parameter=False)
        copies.append(module)
    return copies


def _gradients(value: Tensor, parameters: Sequence[Tensor]) -> list[Tensor]:
    """``∂value/∂parameters``, zeros for a parameter the output does not use (as ``vmap``'s
    ``grad`` gives)."""
    grads = torch.autograd.grad(value, parameters, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(parameters, grads, strict=True)]


def loop_loss_and_grads(
    copies: Sequence[nn.Module],
    names: Sequence[str],
    params: Sequence[Tensor],
    x: Tensor,
    y: Tensor,
    loss: Callable[[Tensor, Tensor], Tensor],
    per_network: bool,
    channels_last: bool = False,
) -> tuple[Tensor, list[Tensor]]:
    """Per-network losses ``(S,)`` and stacked gradients matching ``params``, one copy after
    the other (module docstring).

    Args:
        copies: from :func:`aliased_copies` over ``params``.
        names: the parameter names, in the order of ``params``.
        params: the stacked parameters (the gradients' shapes and layouts).
        x: inputs, shared ``(B, …)`` or ``(S, B, …)`` with ``per_network``.
        y: targets, likewise.
        loss: one network's ``(output, target) → scalar``.
        per_network: whether ``x`` and ``y`` have the network axis first.
        channels_last: give a copy 4-D inputs in channels-last memory (for weights laid out
            by :func:`channels_last_stack`).

    Returns:
        The losses (detached) and one ``(S, …)`` gradient per parameter, each in its
        parameter's memory layout.
    """
    grads = [torch.empty_like(p, requires_grad=False) for p in params]
    losses = []
    if channels_last and not per_network and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.enable_grad():
        for s, module in enumerate(copies):
            xs, ys = (x[s], y[s]) if per_network else (x, y)
            if channels_last and xs.dim() == 4:
                xs = xs.contiguous(memory_format=torch.channels_last)
            value = loss(module(xs), ys)
            parameters = [module.get_parameter(name) for name in names]
            for stacked, g in zip(grads, _gradients(value, parameters), strict=True):
                stacked[s].copy_(g)
            losses.append(value.detach())
    return torch.stack(losses), grads
