"""Settings of the prepost-ln study, with their provenance, and its presets.

Provenance: [S] stated by the "Depth 1 -- Understanding Pre-LN and Post-LN" post that seed 000
builds on, [I] inferred (the most likely reading; configurable), or an implementation choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from relulab.config import ConfigError, setting

__all__ = [
    "NORMS",
    "PRESETS",
    "SOURCE",
    "PrePostConfig",
    "long_alphas",
    "long_depth",
    "probe_count",
    "scale",
]

SOURCE = "the Pre-LN/Post-LN post ('Depth 1') that seed 000 builds on"
Norm = Literal["post", "pre"]  # where the toy puts its LayerNorm
NORMS: tuple[Norm, ...] = ("pre", "post")
POST_SIZES = (100, 400, 100)  # width, hidden, blocks of the post


@dataclass(frozen=True)
class PrePostConfig:
    """Settings with their provenance (:func:`relulab.config.setting`)."""

    seed: int = setting(0, "choice", note="the run seed: every unit's generator derives from it")
    dtype: Literal["float32", "float64"] = setting("float32", "choice")
    width: int = setting(100, "stated", at_least=2)
    hidden: int = setting(400, "stated", at_least=2)
    blocks: int = setting(100, "stated")
    alphas: tuple[float, ...] = setting((1.0, 10.0, 100.0), "stated", positive=True)
    n_samples: int = setting(
        1000,
        "inferred",
        at_least=2,
        alternatives=(100, 10_000),
        note="N Gaussian inputs (alternatives: N = d = 100, the smallest batch whose N × d "
        "matrix can have full rank; 10 000, the N of the author's anisotropy post)",
    )
    init: Literal["torch_default", "kaiming_normal"] = setting(
        "torch_default",
        "inferred",
        no_alternative="the post's figure pins it: Kaiming normal gives ‖h_1‖ ≈ √(3d) ≈ 17 at "
        "α = 1, not the figure's ≈ 10.25 (the default init's 10.27)",
        note="strong: Kaiming normal does not give the post's figures",
    )
    n_networks: int = setting(
        8,
        "choice",
        positive=True,
        note="toys drawn per (norm, α) behind every CI; the post shows one",
    )
    fit_from: int = setting(
        10,
        "inferred",
        alternatives=(1, 20),
        note="first layer of the power-law and trend fits (alternatives: every layer, as a "
        "plain fit of the figure reads it; 20, a later start)",
    )
    exponent_tolerance: float = setting(
        0.1,
        "inferred",
        judging=True,
        at_least=0.0,
        alternatives=(0.05, 0.2),
        note="±0.1 on the √l exponent, twice that on the 1/l one (alternatives: half and twice)",
    )
    collapse_factor: float = setting(
        0.5,
        "inferred",
        judging=True,
        positive=True,
        alternatives=(0.25, 0.75),
        note="'collapsing': last-layer rank below this × first-layer rank, at figure_alpha "
        "(alternatives: a stricter reader, to a quarter; a looser one, by a quarter)",
    )
    figure_alpha: float = setting(
        100.0, "stated", positive=True, note="the α of the post's effective-rank figure"
    )
    asymptotic_factor: float = setting(
        10.0,
        "inferred",
        judging=True,
        greater_than=1.0,
        alternatives=(5.0, 20.0),
        note="'asymptotic' read as l ≫ l₀: the √l and 1/l laws are fitted over layers ≥ this "
        "× l₀ (and ≥ fit_from), l₀ = a/b of the fit ‖h_l‖² ≈ a + b·l (alternatives: ≫ read "
        "as 5× and as 20×)",
    )
    long_blocks: int = setting(
        1000,
        "choice",
        at_least=1,
        note="depth (at least `blocks` are run) of the Pre-LN stream on which the asymptotic "
        "laws are read for long_alphas (at α = 1, l ≫ l₀ ≈ 18 lies beyond the post's 100 "
        "blocks)",
    )
    long_alphas: tuple[float, ...] = setting(
        (1.0,),
        "choice",
        positive=True,
        note="the α whose asymptotic range (l₀ ≈ 18/α², derived) lies beyond `blocks`; those "
        "not among `alphas` are not run",
    )
    probe_samples: int = setting(
        100,
        "choice",
        at_least=2,
        note="the first this many inputs (at most n_samples) feed the long stream and the "
        "influence probe: they read per-sample averages, whose spread is from toy to toy",
    )
    influence_layer: int = setting(
        1,
        "inferred",
        at_least=1,
        alternatives=(10,),
        note="the early layer l whose perturbation is followed to the output h^L ('early "
        "layers' in the post's Observation 2; alternative: layer 10, the end of the first "
        "tenth of the stack)",
    )
    vanishing_gain: float = setting(
        0.1,
        "inferred",
        judging=True,
        greater_than=0.0,
        less_than=1.0,
        alternatives=(0.01, 0.5),
        note="'vanishing influence on the output': an early signal has vanished when it "
        "reaches the output at most this fraction of its size (a decade lost; the post's own "
        "mechanism, the residual copy that LayerNorm shrinks by √(1 + α²/18) at every block, "
        "leaves 0.07 of it at α = 1 after 99 blocks and nothing at α ≥ 10; alternatives: a "
        "stricter reader, two decades — stricter than that mechanism at α = 1 —, and a looser "
        "one, halved)",
    )

    def validate(self) -> None:
        if self.blocks < self.fit_from + 3:
            raise ConfigError(
                f"blocks must be at least fit_from + 3 = {self.fit_from + 3} (the fits need 3 "
                f"layers), got {self.blocks}"
            )
        if self.influence_layer >= self.blocks:
            raise ConfigError(
                f"influence_layer must be below blocks = {self.blocks} (its perturbation is "
                f"followed to the last layer), got {self.influence_layer}"
            )


def long_alphas(config: PrePostConfig) -> tuple[float, ...]:
    """The α of the run that get the long Pre-LN stream: ``long_alphas`` among ``alphas``.

    Example:
        >>> long_alphas(PrePostConfig(alphas=(1.0, 10.0), long_alphas=(1.0, 5.0)))
        (1.0,)
    """
    return tuple(a for a in config.alphas if any(math.isclose(a, b) for b in config.long_alphas))


def long_depth(config: PrePostConfig) -> int:
    """The long stream's depth: ``long_blocks``, and never less than ``blocks``."""
    return max(config.long_blocks, config.blocks)


def probe_count(config: PrePostConfig) -> int:
    """The inputs of the long stream and the influence probe: the first ``probe_samples``."""
    return min(config.probe_samples, config.n_samples)


PRESETS = {"quick": PrePostConfig(), "paper": PrePostConfig(n_networks=30)}


def scale(config: PrePostConfig) -> str:
    """The scale a verdict was measured at, against the post's sizes."""
    sizes = (config.width, config.hidden, config.blocks)
    which = "the post's sizes" if sizes == POST_SIZES else "not the post's 100/400/100"
    long = ", ".join(f"{a:g}" for a in long_alphas(config))
    deep = f"Pre-LN at α = {long} also over {long_depth(config)} blocks; " if long else ""
    return (
        f"d = {config.width}, hidden {config.hidden}, {config.blocks} blocks ({which}); {deep}"
        f"N = {config.n_samples} ({probe_count(config)} for the long stream and the influence "
        f"probe); {config.n_networks} toys per (norm, α)"
    )
