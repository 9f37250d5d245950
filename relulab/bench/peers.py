"""What a user would otherwise write, to compare the engine against (measured in the same run).

* the naive loop: one ``nn.Module`` and one ``torch.optim`` optimiser per network, trained one
  network after the other;
* JAX (optional, ``pip install relulab[jax]``): ``jit(vmap(train_one))`` with the steps in a
  ``lax.scan``, the idiomatic way to train an ensemble of small nets in JAX.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from importlib.util import find_spec

import numpy as np
import torch
from torch import nn

from relulab.engine.losses import get_loss

__all__ = ["jax_available", "jax_two_layer_gd", "naive_loop"]


def naive_loop(
    modules: Sequence[nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    make_optimiser: Callable[[Iterator[nn.Parameter]], torch.optim.Optimizer],
    loss: str,
) -> float:
    """Train each module for ``steps`` full-batch steps, one after the other; wall seconds."""
    loss_fn = get_loss(loss, "per_network")
    started = time.perf_counter()
    for module in modules:
        optimiser = make_optimiser(module.parameters())
        for _ in range(steps):
            optimiser.zero_grad()
            loss_fn(module(x), y).backward()
            optimiser.step()
    return time.perf_counter() - started


def jax_available() -> bool:
    return find_spec("jax") is not None


def jax_two_layer_gd(
    weights: Sequence[np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    steps: int,
    lr: float,
    repeats: int = 1,
) -> tuple[float, float, list[np.ndarray]]:
    """Two-layer ReLU nets ``W2 relu(W1 x + b)``, ½-sum loss, full-batch GD, in JAX.

    ``weights`` = ``(W1 (S,h,d), b (S,h), W2 (S,o,h))``. Returns (compile + first run seconds,
    the fastest of ``repeats`` steady runs in seconds, final weights).
    """
    import jax
    import jax.numpy as jnp

    x_j, y_j = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)

    def loss(params):
        w1, b, w2 = params
        hidden = jax.nn.relu(x_j @ w1.T + b)
        return 0.5 * jnp.sum((hidden @ w2.T - y_j) ** 2)

    def train_one(params):
        def step(params, _):
            grads = jax.grad(loss)(params)
            return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), None

        return jax.lax.scan(step, params, None, length=steps)[0]

    train_all = jax.jit(jax.vmap(train_one))
    params = tuple(jnp.asarray(w, jnp.float32) for w in weights)
    started = time.perf_counter()
    jax.block_until_ready(train_all(params))
    first = time.perf_counter() - started
    steady = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        final = jax.block_until_ready(train_all(params))
        steady = min(steady, time.perf_counter() - started)
    return first, steady, [np.asarray(w) for w in final]
