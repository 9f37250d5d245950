"""The work of the prepost-ln study: one forward pass per (norm, α, toy), no training.

* ``forward-pre`` / ``forward-post`` — for every α of the config, ``n_networks`` toys with the
  same toy seeds under both norms: per layer the mean norm, the cosine to the next layer and the
  effective rank of the uncentred N×d stream.
* ``forward-pre-long`` — Pre-LN only, for each α of ``long_alphas`` among ``alphas``, the same
  toys' seeds over ``long_blocks`` blocks (at least ``blocks``) on the first ``probe_samples``
  inputs (at most N): per layer the mean norm and the
  cosine to the next layer (no rank, nothing kept but the current layer). Planned only when
  one of ``long_alphas`` is among ``alphas``.
* ``influence`` — both norms on the same weights, every α: a perturbation of h^l
  (l = ``influence_layer``, one random unit direction per input) carried to every later layer
  by forward-mode differentiation; per layer m > l the mean over inputs of ‖∂h^m/∂h^l · v‖.

Every reader reaches a unit through :class:`Key` (or :func:`forward`), and what it stores
through its typed view (:class:`Walk`, :class:`Stream`, :class:`Influence`; :func:`unit_views`),
never by a string typed where it is read. A unit's final values are its curves' last layer, so
the views declare the curves only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import partial

import numpy as np
import torch
import torch.autograd.forward_ad as fwad

from relulab.engine import BatchedResidualToy, ResidualToySpec
from relulab.engine.family import batched_linear
from relulab.engine.models import LN_EPS
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.prepost_ln.config import (
    NORMS,
    Norm,
    PrePostConfig,
    long_alphas,
    long_depth,
    probe_count,
)
from relulab.nn.models import residual_block
from relulab.probe import effective_rank
from relulab.records import UnitView, curve, final
from relulab.store import UnitResult

__all__ = [
    "Influence",
    "Key",
    "Stream",
    "Walk",
    "estimate_bytes",
    "forward",
    "layer_statistics",
    "plan",
    "unit_keys",
    "unit_views",
]


class Key(StrEnum):
    """The study's units, by name."""

    FORWARD_PRE = "forward-pre"
    FORWARD_POST = "forward-post"
    FORWARD_PRE_LONG = "forward-pre-long"
    INFLUENCE = "influence"


def forward(norm: str) -> Key:
    """The forward unit of one norm (``"pre"`` or ``"post"``).

    Example:
        >>> forward("pre") is Key.FORWARD_PRE
        True
    """
    return Key(f"forward-{norm}")


def unit_keys(config: PrePostConfig) -> list[str]:
    """Every unit name a reader of this study may use (the long unit only with ``long_alphas``)."""
    return [key.value for key in Key if long_alphas(config) or key is not Key.FORWARD_PRE_LONG]


@dataclass(frozen=True)
class Walk(UnitView):
    """Per toy and layer ``(S, layers)``: the mean norm ‖h_l‖ and the cosine to the next layer
    (NaN at the last). What the long Pre-LN stream stores, and what the asymptotic laws read
    from either Pre-LN unit."""

    norm: np.ndarray = curve()
    cosine: np.ndarray = curve()


@dataclass(frozen=True)
class Stream(Walk):
    """A forward unit (``forward-pre``, ``forward-post``): :class:`Walk` plus the effective rank
    of the uncentred N×d stream per toy and layer."""

    effective_rank: np.ndarray = curve()
    final_rank: np.ndarray = final(key="effective_rank")  # the last layer's, as stored


@dataclass(frozen=True)
class Influence(UnitView):
    """The influence probe: per toy and layer m > l ``(S, blocks − l)`` the mean over inputs of
    ‖∂h^m/∂h^l·v‖; ``output_gain`` is the gain to the output (float64, as stored)."""

    gain: np.ndarray = curve()
    output_gain: np.ndarray = final(key="gain")


def unit_views(config: PrePostConfig) -> dict[str, type[UnitView]]:
    """Every unit name :func:`plan` produces, with the view of what it stores.

    Example:
        >>> views = unit_views(PrePostConfig())
        >>> views["forward-post"].__name__, views["forward-pre-long"].__name__
        ('Stream', 'Walk')
    """
    views: dict[Key, type[UnitView]] = {
        Key.FORWARD_PRE: Stream,
        Key.FORWARD_POST: Stream,
        Key.FORWARD_PRE_LONG: Walk,
    }
    views[Key.INFLUENCE] = Influence
    return {name: views[Key(name)] for name in unit_keys(config)}


def layer_statistics(stream: list[torch.Tensor]) -> dict[str, np.ndarray]:
    """Per layer: mean norm, cosine to the next layer (NaN for the last), effective rank."""
    norms = np.array([float(h.norm(dim=1).mean()) for h in stream])
    cosines = [
        float(torch.nn.functional.cosine_similarity(a, b, dim=1).mean())
        for a, b in zip(stream[:-1], stream[1:], strict=True)
    ]
    ranks = np.array([effective_rank(h) for h in stream])
    return {"norm": norms, "cosine": np.array(cosines + [np.nan]), "effective_rank": ranks}


def _toy_stream(
    config: PrePostConfig, spec: ResidualToySpec, seed: int, x: torch.Tensor, context: RunContext
) -> dict[str, np.ndarray]:
    """The layer statistics of one toy (one at a time: a trace keeps every block's tensors)."""
    model = BatchedResidualToy(
        spec, 1, init=config.init, seeds=[seed], dtype=context.dtype, device=context.device
    )
    with torch.no_grad():
        stream = model.trace(x).stream
    return layer_statistics([h[0].double().cpu() for h in stream])


def _inputs_and_seeds(config: PrePostConfig, context: RunContext) -> tuple[torch.Tensor, list]:
    """The run's N inputs and its ``n_networks`` toy seeds, the same in every unit."""
    x = torch.randn(config.n_samples, config.width, generator=context.generator("inputs"))
    x = x.to(context.dtype).to(context.device)
    seeds = torch.randint(0, 2**62, (config.n_networks,), generator=context.generator("toys"))
    return x, seeds.tolist()


Layer = Callable[[torch.Tensor], torch.Tensor]


def _blocks(model: BatchedResidualToy) -> Iterator[Callable[[torch.Tensor], torch.Tensor]]:
    """The toy's blocks in order, each a map of the stream (every toy of the batch at once)."""
    spec = model.spec

    def layer_norm(h: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(h, (spec.width,), eps=LN_EPS)

    for fc1, fc2 in zip(model.params[0::2], model.params[1::2], strict=True):
        linear1 = partial(batched_linear, weight=fc1, bias=None)
        linear2 = partial(batched_linear, weight=fc2, bias=None)

        def block(h: torch.Tensor, a: Layer = linear1, b: Layer = linear2) -> torch.Tensor:
            return residual_block(h, a, b, torch.relu, spec.norm, spec.alpha, layer_norm).stream

        yield block


def _forward_unit(config: PrePostConfig, norm: Norm) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x, seeds = _inputs_and_seeds(config, context)
        rows, conditions = [], []
        total = len(config.alphas) * len(seeds)
        with context.progress(total, f"{norm}-LN forward") as done:
            for alpha in config.alphas:
                spec = ResidualToySpec(config.width, config.hidden, config.blocks, norm, alpha)
                for seed in seeds:
                    rows.append(_toy_stream(config, spec, seed, x, context))
                    conditions.append({"norm": norm, "alpha": alpha, "seed": seed})
                    done(1)
        curves = {key: np.stack([r[key] for r in rows]) for key in rows[0]}
        final = {"norm": curves["norm"][:, -1], "effective_rank": curves["effective_rank"][:, -1]}
        return UnitResult.forward_only(conditions, np.arange(1, config.blocks + 1), curves, final)

    return Unit(forward(norm), run)


def _long_stream(model: BatchedResidualToy, x: torch.Tensor) -> dict[str, np.ndarray]:
    """Per toy and layer: mean norm and cosine to the next layer (NaN for the last), keeping
    only the current layer."""
    norms, cosines = [], []
    h = x
    with torch.no_grad():
        for block in _blocks(model):
            h_next = block(h)
            norms.append(h_next.norm(dim=-1).double().mean(dim=-1).cpu().numpy())
            if len(norms) > 1:
                cos = torch.nn.functional.cosine_similarity(h, h_next, dim=-1)
                cosines.append(cos.double().mean(dim=-1).cpu().numpy())
            h = h_next
    cosines.append(np.full_like(norms[0], np.nan))
    return {"norm": np.stack(norms, axis=1), "cosine": np.stack(cosines, axis=1)}


WEIGHT_BUDGET = 256 * 2**20  # bytes of weights the probes hold at once (toys in chunks)


def _probe(
    config: PrePostConfig,
    context: RunContext,
    spec: ResidualToySpec,
    seeds: list,
    read: Callable[[BatchedResidualToy], dict[str, np.ndarray]],
) -> dict[str, np.ndarray]:
    """``read(model)`` on the toys of ``seeds`` in chunks whose weights fit
    :data:`WEIGHT_BUDGET` (a 1000-block toy holds 320 MB of float32 weights), stacked in order.
    Every toy's weights come from its own seed, so chunking changes nothing."""
    itemsize = 8 if context.dtype == torch.float64 else 4
    per_toy = spec.blocks * 2 * spec.width * spec.hidden * itemsize
    size = max(1, WEIGHT_BUDGET // per_toy)
    rows = []
    for start in range(0, len(seeds), size):
        chunk = seeds[start : start + size]
        model = BatchedResidualToy(
            spec,
            len(chunk),
            init=config.init,
            seeds=chunk,
            dtype=context.dtype,
            device=context.device,
        )
        rows.append(read(model))
    return {key: np.concatenate([r[key] for r in rows]) for key in rows[0]}


def _long_unit(config: PrePostConfig) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x, seeds = _inputs_and_seeds(config, context)
        x = x[: probe_count(config)]
        rows, conditions = [], []
        with context.progress(len(long_alphas(config)), "pre-LN long forward") as done:
            for alpha in long_alphas(config):
                spec = ResidualToySpec(
                    config.width, config.hidden, long_depth(config), "pre", alpha
                )
                rows.append(_probe(config, context, spec, seeds, partial(_long_stream, x=x)))
                conditions += [{"norm": "pre", "alpha": alpha, "seed": s} for s in seeds]
                done(1)
        curves = {key: np.concatenate([r[key] for r in rows]) for key in rows[0]}
        steps = np.arange(1, long_depth(config) + 1)
        return UnitResult.forward_only(conditions, steps, curves, {"norm": curves["norm"][:, -1]})

    return Unit(Key.FORWARD_PRE_LONG, run)


def influence_gains(
    model: BatchedResidualToy, x: torch.Tensor, layer: int, direction: torch.Tensor
) -> np.ndarray:
    """``(toys, blocks − layer)``: for m = layer + 1 … blocks the mean over inputs of
    ‖∂h^m/∂h^layer · v‖, v = ``direction`` (one unit vector per input), by forward-mode
    differentiation (forward only: no graph is kept)."""
    gains = []
    h = x
    with torch.no_grad(), fwad.dual_level():
        for k, block in enumerate(_blocks(model)):
            if k == layer:
                h = fwad.make_dual(h, direction.expand_as(h).contiguous())
            h = block(h)
            if k >= layer:
                tangent = fwad.unpack_dual(h).tangent
                gains.append(tangent.norm(dim=-1).double().mean(dim=-1).cpu().numpy())
    return np.stack(gains, axis=1)


def _influence_unit(config: PrePostConfig) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x, seeds = _inputs_and_seeds(config, context)
        x = x[: probe_count(config)]
        v = torch.randn(x.shape, generator=context.generator("directions"))
        v = (v / v.norm(dim=-1, keepdim=True)).to(context.dtype).to(context.device)
        rows, conditions = [], []
        with context.progress(len(NORMS) * len(config.alphas), "influence") as done:
            for norm in NORMS:
                for alpha in config.alphas:
                    spec = ResidualToySpec(config.width, config.hidden, config.blocks, norm, alpha)

                    def read(model: BatchedResidualToy) -> dict[str, np.ndarray]:
                        return {"gain": influence_gains(model, x, config.influence_layer, v)}

                    rows.append(_probe(config, context, spec, seeds, read)["gain"])
                    conditions += [{"norm": norm, "alpha": alpha, "seed": s} for s in seeds]
                    done(1)
        gains = np.concatenate(rows)
        steps = np.arange(config.influence_layer + 1, config.blocks + 1)
        return UnitResult.forward_only(conditions, steps, {"gain": gains}, {"gain": gains[:, -1]})

    return Unit(Key.INFLUENCE, run)


def plan(config: PrePostConfig) -> list[Unit]:
    """One forward unit per norm (Pre-LN first), the long Pre-LN stream, the influence probe."""
    units = [_forward_unit(config, norm) for norm in NORMS]
    if long_alphas(config):
        units.append(_long_unit(config))
    return [*units, _influence_unit(config)]


def estimate_bytes(config: PrePostConfig) -> int:
    """Peak memory in bytes: the blocks' weights (2·width·hidden each), the residual stream of
    every layer kept for the statistics plus its float64 copy, and every block's hidden
    pre-activations, which the batched forward keeps (N·hidden per block). Measured: 1786 MiB
    peak for an estimate of 1785 MiB (width 100, hidden 1600, 30 blocks, N = 8000). The probes
    (long stream, influence) hold at most :data:`WEIGHT_BUDGET` of weights, or one toy's, and
    one layer of their stream at a time: the larger of the two."""
    itemsize = 8 if config.dtype == "float64" else 4
    weights = config.blocks * 2 * config.width * config.hidden * itemsize
    stream = (config.blocks + 1) * config.n_samples * config.width * (itemsize + 8)
    hidden = config.blocks * config.n_samples * config.hidden * itemsize
    per_toy = long_depth(config) * 2 * config.width * config.hidden * itemsize
    probe = max(per_toy, min(WEIGHT_BUDGET, per_toy * config.n_networks))
    return max(weights + stream + hidden, probe)
