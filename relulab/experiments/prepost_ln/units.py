"""The work of the prepost-ln study: one forward pass per (norm, α, toy), no training.

* ``forward-pre`` / ``forward-post`` — for every α of the config, ``n_networks`` toys with the
  same toy seeds under both norms: per layer the mean norm, the cosine to the next layer and the
  effective rank of the uncentred N×d stream.

Every reader reaches a unit through :class:`Key` (or :func:`forward`).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import torch

from relulab.engine import BatchedResidualToy, ResidualToySpec
from relulab.experiments.base import Unit
from relulab.experiments.context import RunContext
from relulab.experiments.prepost_ln.config import NORMS, PrePostConfig
from relulab.probe import effective_rank
from relulab.store import UnitResult

__all__ = ["Key", "estimate_bytes", "forward", "layer_statistics", "plan", "unit_keys"]


class Key(StrEnum):
    """The study's units, by name."""

    FORWARD_PRE = "forward-pre"
    FORWARD_POST = "forward-post"


def forward(norm: str) -> Key:
    """The forward unit of one norm (``"pre"`` or ``"post"``).

    Example:
        >>> forward("pre") is Key.FORWARD_PRE
        True
    """
    return Key(f"forward-{norm}")


def unit_keys(config: PrePostConfig) -> list[str]:
    """Every unit name a reader of this study may use."""
    return [key.value for key in Key]


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


def _forward_unit(config: PrePostConfig, norm: str) -> Unit:
    def run(context: RunContext) -> UnitResult:
        x = torch.randn(config.n_samples, config.width, generator=context.generator("inputs"))
        x = x.to(context.dtype).to(context.device)
        seeds = torch.randint(
            0, 2**62, (config.n_networks,), generator=context.generator("toys")
        ).tolist()
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


def plan(config: PrePostConfig) -> list[Unit]:
    """One forward unit per norm, Pre-LN first."""
    return [_forward_unit(config, norm) for norm in NORMS]


def estimate_bytes(config: PrePostConfig) -> int:
    """Peak memory in bytes: the blocks' weights (2·width·hidden each), the residual stream of
    every layer kept for the statistics plus its float64 copy, and every block's hidden
    pre-activations, which the batched forward keeps (N·hidden per block). Measured: 1786 MiB
    peak for an estimate of 1785 MiB (width 100, hidden 1600, 30 blocks, N = 8000)."""
    itemsize = 8 if config.dtype == "float64" else 4
    weights = config.blocks * 2 * config.width * config.hidden * itemsize
    stream = (config.blocks + 1) * config.n_samples * config.width * (itemsize + 8)
    hidden = config.blocks * config.n_samples * config.hidden * itemsize
    return weights + stream + hidden
