r"""Batched initialisation of S networks' weight stacks, each network from its own seed.

Network :math:`s` draws every tensor from a generator seeded with ``seeds[s]``, layer by
layer in a fixed order, so its initial parameters do not depend on S or on its position in a
sweep: the same seed gives the same network in any batch, and in a plain per-network loop.
The draws are written straight into preallocated ``(S, …)`` tensors (no modules are built).

Schemes are the per-tensor ones of the registry :data:`relulab.init.SCHEMES` (listed in
:data:`INIT_SCHEMES`: ``torch_default``, ``kaiming_normal``, ``kaiming_uniform``,
``lecun_normal``, ``normal``, ``orthogonal``, ``rai``, ``raai``, ``correlated``), each layer
drawn by the scheme's own fill in float64 with the scheme's keyword ``options`` (per network);
``scale`` multiplies the weights and biases (for ``normal`` it is the std σ: seed ``004_…``
appendix E uses σ² = 2e-4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from relulab.engine.counter import RNGS, counter_normal
from relulab.init.schemes import INIT_SCHEMES, get_scheme

__all__ = ["COUNTER_SCHEMES", "INIT_SCHEMES", "init_weight_stack", "per_network"]

#: The schemes ``rng="counter"`` draws: :math:`N(0, v/n_{in})` weights with zero biases, by
#: :math:`v` (``normal``: :math:`N(0, 1)`, its scale the std).
COUNTER_SCHEMES = {"kaiming_normal": 2.0, "lecun_normal": 1.0, "normal": None}


def per_network(value: object, n_networks: int, name: str) -> list:
    """Broadcast a scalar (or check a sequence) to one entry per network; a string or a mapping
    is a scalar, a tensor a sequence of its values."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value] * n_networks
    if len(value) != n_networks:
        raise ValueError(f"{name} needs one entry per network ({n_networks}), got {len(value)}")
    return list(value)


def _draw_layer(
    scheme: str,
    shape: tuple[int, int],
    has_bias: bool,
    generator: torch.Generator,
    options: Mapping[str, float] | None = None,
) -> tuple[Tensor, Tensor | None]:
    """One network's layer in float64, weight then bias, by the scheme's fill."""
    weight = torch.empty(shape, dtype=torch.float64)
    bias = torch.zeros(shape[0], dtype=torch.float64) if has_bias else None
    get_scheme(scheme).fill(weight, bias, generator, **(options or {}))
    return weight, bias


def init_weight_stack(
    shapes: Sequence[tuple[int, int]],
    n_networks: int,
    scheme: str | Sequence[str] = "kaiming_normal",
    scale: float | Sequence[float] = 1.0,
    seeds: Sequence[int] | None = None,
    bias: bool | Sequence[bool] = True,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    options: Mapping[str, float] | Sequence[Mapping[str, float]] | None = None,
    rng: str = "generator",
) -> list[tuple[Tensor, Tensor | None]]:
    """Weights ``(S, out, in)`` and biases ``(S, out)`` (or ``None``) for each ``(out, in)``:
    network ``s`` draws its layers in order from a generator seeded with ``seeds[s]`` by the
    registry's fill of its scheme (:data:`relulab.init.SCHEMES`), then multiplies them by
    ``scale[s]``. Draws are made in float64 and cast, so float32 and float64 runs start from the
    same numbers.

    Args:
        shapes: ``(out, in)`` per layer.
        n_networks: S.
        scheme: a per-tensor scheme (:data:`INIT_SCHEMES`), or one per network.
        scale: a multiplier, or one per network.
        seeds: one per network (default ``0 … S−1``).
        bias: whether layers have biases, for all or per layer.
        dtype: the dtype of the stacks.
        device: their device.
        options: keyword options of the scheme's initialiser (e.g. ``sigma_w2``, ``k`` of
            ``correlated``), one mapping for all networks or one per network.
        rng: ``"generator"`` (each network's ``torch.Generator`` on the CPU, the scheme's own
            fill) or ``"counter"``: the layers drawn on ``device`` from a counter-based stream
            (:func:`~relulab.engine.counter.counter_normal`, stream = layer index), so no
            weight crosses the bus and a network's draws do not depend on the batch; for the
            Gaussian schemes with zero biases and no options (:data:`COUNTER_SCHEMES`). Other
            numbers than ``"generator"``'s, the same law.

    Returns:
        ``[(weight, bias), …]`` per layer.

    Example:
        >>> ((w, b),) = init_weight_stack([(3, 4)], n_networks=2, scheme="torch_default")
        >>> w.shape, b.shape
        (torch.Size([2, 3, 4]), torch.Size([2, 3]))
    """
    schemes = per_network(scheme, n_networks, "scheme")
    unknown = sorted(set(schemes) - set(INIT_SCHEMES))
    if unknown:
        raise ValueError(f"unknown init scheme(s) {unknown}; choose from {', '.join(INIT_SCHEMES)}")
    scales = per_network(scale, n_networks, "scale")
    option_sets = per_network(options or {}, n_networks, "options")
    seeds = list(range(n_networks)) if seeds is None else per_network(seeds, n_networks, "seeds")
    biases = (
        per_network(bias, len(shapes), "bias")
        if not isinstance(bias, bool)
        else [bias] * len(shapes)
    )
    if rng not in RNGS:
        raise ValueError(f"rng must be one of {RNGS}, got {rng!r}")
    if rng == "counter":
        return _counter_stack(shapes, schemes, scales, seeds, biases, option_sets, dtype, device)
    stack = [
        (
            torch.empty((n_networks, *shape), dtype=dtype, device=device),
            torch.empty((n_networks, shape[0]), dtype=dtype, device=device) if has_bias else None,
        )
        for shape, has_bias in zip(shapes, biases, strict=True)
    ]
    for s in range(n_networks):
        generator = torch.Generator().manual_seed(int(seeds[s]))
        for (weight, bias_tensor), shape in zip(stack, shapes, strict=True):
            drawn_weight, drawn_bias = _draw_layer(
                schemes[s], shape, bias_tensor is not None, generator, option_sets[s]
            )
            weight[s] = drawn_weight * scales[s]
            if bias_tensor is not None:
                bias_tensor[s] = drawn_bias * scales[s]
    return stack


def _counter_stack(
    shapes: Sequence[tuple[int, int]],
    schemes: list[str],
    scales: list,
    seeds: list,
    biases: list[bool],
    option_sets: list,
    dtype: torch.dtype,
    device: torch.device | str,
) -> list[tuple[Tensor, Tensor | None]]:
    """:func:`init_weight_stack`'s ``rng="counter"``: each layer's standard normals for all
    networks in one pass on ``device``, times each network's std."""
    unsupported = sorted(set(schemes) - set(COUNTER_SCHEMES))
    if unsupported or any(option_sets):
        raise ValueError(
            f"rng='counter' draws {', '.join(COUNTER_SCHEMES)} without options; got schemes "
            f"{sorted(set(schemes))}" + (" with options" if any(option_sets) else "")
        )
    variance = [COUNTER_SCHEMES[name] for name in schemes]
    stack = []
    for layer, ((fan_out, fan_in), has_bias) in enumerate(zip(shapes, biases, strict=True)):
        weight = counter_normal(seeds, (fan_out, fan_in), stream=layer, dtype=dtype, device=device)
        std = [
            float(scale) * (1.0 if v is None else (v / fan_in) ** 0.5)
            for scale, v in zip(scales, variance, strict=True)
        ]
        weight.mul_(torch.tensor(std, dtype=dtype, device=device).view(-1, 1, 1))
        bias = torch.zeros((len(seeds), fan_out), dtype=dtype, device=device) if has_bias else None
        stack.append((weight, bias))
    return stack
