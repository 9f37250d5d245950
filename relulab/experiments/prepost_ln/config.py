"""Settings of the prepost-ln study, with their provenance, and its presets.

Provenance: [S] stated by the "Depth 1 -- Understanding Pre-LN and Post-LN" post that seed 000
builds on, [I] inferred (the most likely reading; configurable), or an implementation choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relulab.config import ConfigError, setting

__all__ = ["NORMS", "PRESETS", "SOURCE", "PrePostConfig", "scale"]

SOURCE = "the Pre-LN/Post-LN post ('Depth 1') that seed 000 builds on"
NORMS = ("pre", "post")
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
    n_samples: int = setting(1000, "inferred", at_least=2, note="N Gaussian inputs")
    init: Literal["torch_default", "kaiming_normal"] = setting(
        "torch_default", "inferred", note="strong: Kaiming normal does not give the post's figures"
    )
    n_networks: int = setting(
        8,
        "choice",
        positive=True,
        note="toys drawn per (norm, α) behind every CI; the post shows one",
    )
    fit_from: int = setting(10, "inferred", note="first layer of the power-law and trend fits")
    exponent_tolerance: float = setting(
        0.1, "inferred", at_least=0.0, note="±0.1 on the √l exponent, twice that on the 1/l one"
    )
    flat_tolerance: float = setting(
        0.05,
        "inferred",
        at_least=0.0,
        note="'flat': |trend of cos × ln(blocks/fit_from)| below this",
    )
    collapse_factor: float = setting(
        0.5, "inferred", note="'collapsing': last-layer rank below this × first-layer rank"
    )

    def validate(self) -> None:
        if self.blocks < self.fit_from + 3:
            raise ConfigError(
                f"blocks must be at least fit_from + 3 = {self.fit_from + 3} (the fits need 3 "
                f"layers), got {self.blocks}"
            )


PRESETS = {"quick": PrePostConfig(), "paper": PrePostConfig(n_networks=30)}


def scale(config: PrePostConfig) -> str:
    """The scale a verdict was measured at, against the post's sizes."""
    sizes = (config.width, config.hidden, config.blocks)
    which = "the post's sizes" if sizes == POST_SIZES else "not the post's 100/400/100"
    return (
        f"d = {config.width}, hidden {config.hidden}, {config.blocks} blocks ({which}); "
        f"N = {config.n_samples}; {config.n_networks} toys per (norm, α)"
    )
