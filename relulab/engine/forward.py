r"""Forward statistics of many wide, deep random ReLU networks (no training).

Seed ``002_…`` (Luther & Seung, *Sample variance decay*, §2.2 and §3.2): for a fixed network
and pre-activation :math:`u_i` of layer :math:`l`, over the samples :math:`t`,

.. math::
    m^2 = \sum_i \langle u_i\rangle_t^2,\qquad
    v^2 = \sum_i \left(\langle u_i^2\rangle_t - \langle u_i\rangle_t^2\right),\qquad
    r_l = \sqrt{m^2 / v^2}\quad\text{(seed eq. 9)},

computed by :mod:`relulab.nn.statistics` (:func:`~relulab.nn.statistics.sample_moments`,
:func:`~relulab.nn.statistics.squared_mean_and_variance`,
:func:`~relulab.nn.statistics.mean_variance_ratio`), the functions the probe uses.

Networks: equal width ``n``, ReLU, no biases, weights :math:`N(0, 2/n_{in})` (Kaiming) drawn
fresh for every layer of every network, so an ensemble of 30 width-3000 depth-50 nets never
holds more than one layer's weights. Network ``s`` draws its layers in order from a generator
seeded with ``seeds[s]``; the draws of different networks run in parallel threads.

With ``sampler="gram"`` no weight is drawn. Given the post-activations :math:`H` (``N`` samples
× :math:`n_{in}`), unit :math:`i`'s pre-activations over the samples, :math:`H w_i` with
:math:`w_i \sim N(0, \sigma^2 I)`, are :math:`N(0, \sigma^2 H H^\top)` and independent across
units, so the layer is sampled exactly in distribution as :math:`u = R Z` with
:math:`R R^\top = \sigma^2 H H^\top` (its Cholesky factor) and :math:`Z` an ``N × n`` standard
normal matrix: :math:`O(N^2 n)` work and :math:`N n` normals per layer instead of
:math:`O(N n\, n_{in})` and :math:`n\, n_{in}`. The random numbers differ from the weight
path's, the distribution of every statistic does not. Layers with :math:`n_{in} \le N` keep
drawing weights (they are cheap, and there :math:`H H^\top` is singular anyway).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from relulab.engine.counter import RNGS, counter_normal
from relulab.engine.device import synchronise
from relulab.engine.family import BatchedFamily
from relulab.nn.statistics import (
    BATCHED_SAMPLE_DIMS,
    mean_variance_ratio,
    sample_moments,
    squared_mean_and_variance,
)

__all__ = ["ForwardStatistics", "activation_gradient_profile", "forward_statistics"]


@dataclass
class ForwardStatistics:
    r"""What :func:`forward_statistics` measured.

    Attributes:
        mean_sq: :math:`m^2` per network and layer ``(S, depth)``.
        sample_var: :math:`v^2`, ``(S, depth)``.
        ratio: :math:`r = \sqrt{m^2/v^2}`, ``(S, depth)``.
        timings: seconds drawing weights (``generate_s``) and propagating (``propagate_s``).
        units: for each kept layer, the pre-activations of the first kept units
            ``(S, N, units)``.

    Example:
        >>> stats = forward_statistics(2, 64, 3, torch.randn(10, 16))
        >>> stats.ratio.shape
        (2, 3)
    """

    mean_sq: np.ndarray
    sample_var: np.ndarray
    ratio: np.ndarray
    timings: dict[str, float] = field(default_factory=dict)
    units: dict[int, np.ndarray] = field(default_factory=dict)  # layer → (S, N, kept units)


def forward_statistics(
    n_networks: int,
    width: int,
    depth: int,
    inputs: Tensor,
    seeds: Sequence[int] | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    generation_threads: int | None = None,
    keep_layers: Sequence[int] = (),
    keep_units: int = 0,
    sampler: str = "weights",
    rng: str = "generator",
) -> ForwardStatistics:
    r"""Propagate ``inputs`` ``(N, n_0)`` through S fresh Kaiming ReLU nets of ``depth`` layers.

    Layer 1's pre-activation is :math:`u^1 = W^1 x`; then :math:`u^{l+1} = W^{l+1}\,
    \mathrm{ReLU}(u^l)`. Returns the statistics of :math:`u^1 … u^{depth}` and the time spent
    drawing weights (``generate_s``) and propagating (``propagate_s``). For each layer index in
    ``keep_layers`` (0-based) the pre-activations of the first ``keep_units`` units are kept.

    Args:
        n_networks: S.
        width: every layer's width :math:`n`.
        depth: the number of layers.
        inputs: ``(N, n_0)``, shared by the networks.
        seeds: one per network (default ``0 … S−1``).
        dtype: the dtype of the propagation.
        device: where it runs (with ``rng="generator"`` weights are drawn on the CPU).
        generation_threads: threads drawing the weights (default: torch's thread count).
        keep_layers: layer indices whose pre-activations to keep.
        keep_units: how many units of those to keep.
        sampler: ``"weights"`` draws every weight matrix; ``"gram"`` samples each layer's
            pre-activations from their exact Gaussian law given the layer's input (see the
            module docstring): the same distributions, ≈ ``n_in / (2N)`` times less arithmetic
            and ``n_in / N`` times fewer random numbers.
        rng: ``"generator"`` draws network ``s``'s numbers from a ``torch.Generator`` seeded
            with ``seeds[s]`` on the CPU (threads over the networks) and copies them to
            ``device``; ``"counter"`` computes them on ``device`` from a counter-based stream
            (:func:`~relulab.engine.counter.counter_normal`, stream = layer index), so no
            weight crosses the bus and a network's draws do not depend on the batch. Other
            numbers than ``"generator"``'s, the same law.

    Returns:
        :class:`ForwardStatistics`.

    Example:
        >>> stats = forward_statistics(3, 200, 10, torch.randn(50, 200))
        >>> bool(stats.ratio[:, -1].mean() > stats.ratio[:, 1].mean())  # the mean takes over
        True
        >>> wide = forward_statistics(3, 2000, 10, torch.randn(50, 200), sampler="gram")
        >>> wide.ratio.shape  # no 2000 × 2000 weight matrix was drawn
        (3, 10)
    """
    seeds = _checked_seeds(n_networks, seeds, sampler, rng)
    generators = [torch.Generator().manual_seed(int(seed)) for seed in seeds]
    threads = generation_threads or torch.get_num_threads()
    mean_sq = torch.empty(n_networks, depth, dtype=torch.float64)
    sample_var = torch.empty_like(mean_sq)
    timings = {"generate_s": 0.0, "propagate_s": 0.0}
    kept: dict[int, np.ndarray] = {}
    h = inputs.to(dtype=dtype, device=device)
    n_samples, fan_in = h.shape[-2], h.shape[-1]
    buffer: Tensor | None = None
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for layer in range(depth):
            started = time.perf_counter()
            std = math.sqrt(2.0 / fan_in)
            by_gram = sampler == "gram" and fan_in > n_samples
            # weights (S, width, fan_in), or the Gram path's normals (S, N, width)
            shape = (n_samples, width) if by_gram else (width, fan_in)
            where = device if rng == "counter" else "cpu"
            buffer = _reused(buffer, (n_networks, *shape), dtype, where)
            if rng == "counter":
                counter_normal(seeds, shape, stream=layer, dtype=dtype, device=device, out=buffer)
                if not by_gram:
                    buffer.mul_(std)
            else:
                _draw_normals(pool, generators, buffer, 1.0 if by_gram else std)
            drawn = buffer.to(device)
            synchronise(device)  # so the drawing's time is not counted as the propagation's
            middle = time.perf_counter()
            if by_gram:
                u = torch.matmul(_gram_root(h, std), drawn)
            else:
                u = torch.matmul(h, drawn.transpose(1, 2))
            m2, v2 = squared_mean_and_variance(*sample_moments(u, BATCHED_SAMPLE_DIMS))
            if layer in keep_layers and keep_units:
                kept[layer] = u[:, :, :keep_units].double().cpu().numpy()
            mean_sq[:, layer], sample_var[:, layer] = m2.double().cpu(), v2.double().cpu()
            h = torch.relu(u)
            fan_in = width
            synchronise(device)
            timings["generate_s"] += middle - started
            timings["propagate_s"] += time.perf_counter() - middle
    ratio = mean_variance_ratio(mean_sq, sample_var)
    return ForwardStatistics(mean_sq.numpy(), sample_var.numpy(), ratio.numpy(), timings, kept)


def _checked_seeds(
    n_networks: int, seeds: Sequence[int] | None, sampler: str, rng: str
) -> list[int]:
    """One seed per network (default ``0 … S−1``), after checking ``sampler`` and ``rng``."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if rng not in RNGS:
        raise ValueError(f"rng must be one of {RNGS}, got {rng!r}")
    seeds = list(range(n_networks)) if seeds is None else list(seeds)
    if len(seeds) != n_networks:
        raise ValueError(f"seeds needs one entry per network ({n_networks}), got {len(seeds)}")
    return seeds


def _reused(
    buffer: Tensor | None, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str
) -> Tensor:
    """``buffer`` again when it has ``shape``, else a new empty one: one buffer for every layer
    of the same shape, since a fresh buffer is mapped anew by the allocator and each of its pages
    faults in on first write (W3 of relulab bench: 66 against 39 ms a layer)."""
    if buffer is None or tuple(buffer.shape) != shape:
        return torch.empty(*shape, dtype=dtype, device=device)
    return buffer


#: How :func:`forward_statistics` samples a layer: draw the weights, or the pre-activations'
#: exact Gaussian law given the layer's input.
SAMPLERS = ("weights", "gram")


def _draw_normals(
    pool: ThreadPoolExecutor, generators: list[torch.Generator], out: Tensor, std: float
) -> None:
    """Fill ``out[s]`` with ``N(0, std²)`` values from ``generators[s]``, networks in parallel."""

    def draw(s: int) -> None:
        torch.randn(out.shape[1:], generator=generators[s], dtype=out.dtype, out=out[s])
        if std != 1.0:
            out[s].mul_(std)

    list(pool.map(draw, range(len(generators))))


def _gram_root(h: Tensor, std: float) -> Tensor:
    r"""A square root :math:`R` of :math:`\sigma^2 H H^\top` per network, ``(S, N, N)``.

    :math:`H H^\top` in the propagation's dtype, its Cholesky factor in float64 (forming the
    Gram matrix in float64 too moved the statistics of 10 width-3000 depth-50 networks by at
    most 5e-6 relative, float32 rounding, and cost 43 % more time); where Cholesky fails (the
    Gram matrix is only positive semidefinite, and nearly singular once the sample variance has
    decayed) :math:`R = V \sqrt{\max(\Lambda, 0)}` from its eigendecomposition.
    """
    gram = torch.matmul(h, h.transpose(-1, -2)).double() * std**2
    root, info = torch.linalg.cholesky_ex(gram)
    failed = info != 0
    if bool(failed.any()):
        eigenvalues, eigenvectors = torch.linalg.eigh(gram[failed])
        root[failed] = eigenvectors * eigenvalues.clamp(min=0.0).sqrt().unsqueeze(-2)
    return root.to(h.dtype)


def activation_gradient_profile(model: BatchedFamily, x: Tensor) -> tuple[Tensor, Tensor]:
    r"""Per network and hidden layer: :math:`\langle(\partial L/\partial x^l)^2\rangle` and the
    per-feature sample std of the pre-activations *before* any BatchNorm.

    Seed ``002_…`` §4 (Fig. 3): :math:`L = \sum_t \mathbf w\cdot \mathbf x^L_t`, the model's
    linear readout (no bias) being the random :math:`\mathbf w`; :math:`x^l` is the activation of
    hidden layer :math:`l`. Averages run over units and samples.

    Args:
        model: a batched family whose output is the readout, e.g. a
            :class:`~relulab.engine.BatchedMLP` with a 1-unit linear output layer.
        x: the inputs ``(N, d)``.

    Returns:
        Two ``(S, n_hidden)`` tensors: the gradient second moments and the pre-activation stds.

    Example:
        >>> from relulab.engine import BatchedMLP, MLPSpec
        >>> model = BatchedMLP(MLPSpec((8, 8, 8, 1), bias=False), n_networks=2)
        >>> [t.shape for t in activation_gradient_profile(model, torch.randn(16, 8))]
        [torch.Size([2, 2]), torch.Size([2, 2])]
    """
    with torch.enable_grad():
        trace = model.trace(x)
        grads = torch.autograd.grad(trace.output.sum(), trace.activations)
    grad_sq = torch.stack([g.detach().square().mean(dim=(1, 2)) for g in grads], dim=1)
    with torch.no_grad():
        raw = [u.detach() for u in trace.linear_outputs]
        pre_std = torch.stack([u.std(dim=1, unbiased=False).mean(dim=1) for u in raw], dim=1)
    return grad_sq, pre_std
