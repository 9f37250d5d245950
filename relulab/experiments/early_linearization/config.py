"""Settings of the early-linearization study (seed ``004_…``, toy tasks) and its presets.

Provenance tags: [S] stated by seed 004 (§5.1, appendix E), [D] derived from stated values,
[I] inferred where the seed is silent (a documented, configurable parameter). Beyond-the-seed
settings (the (σ², c) map) are tagged [I] too. Each field declares its own range in
:func:`relulab.config.setting`; :meth:`EarlyLinearizationConfig.validate` keeps the rules that
tie several fields together (and "the c sweep includes 0"). The alignment settings are shared
with ``linearization-images`` (:mod:`relulab.experiments.seed004`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from relulab.config import ConfigError, setting
from relulab.experiments import seed004

__all__ = ["PRESETS", "EarlyLinearizationConfig", "scale"]

_HORIZON = (
    "a horizon (the seed gives none), the same at both presets: the claims read windows "
    "inside it (the early window, t*, the plateaus); another length looks longer or shorter, "
    "it is not another reading of a seed value"
)
_BEYOND = "beyond the seed (the (σ², c, width) map): no reading of the seed to vary"


@dataclass(frozen=True)
class EarlyLinearizationConfig:
    """Settings; [S] stated by seed 004, [D] derived, [I] inferred and configurable."""

    seed: int = setting(0, "choice", note="the run seed: every unit's generator derives from it")
    hidden: int = setting(
        64, "stated", positive=True, note="hidden units, seed 004 §5.1 / appendix E"
    )  # [S]
    init_variance: float = setting(
        2e-4, "stated", positive=True, note="weights N(0, σ²), appendix E"
    )  # [S]
    lr: float = setting(
        2e-4, "stated", positive=True, note="full-batch GD on the sum loss, appendix E"
    )  # [S]
    constant: float = setting(
        1.0, "stated", positive=True, note="input constant c carrying the bias, §5.1"
    )  # [S]
    n_items: Literal[4, 8] = setting(
        4,
        "inferred",
        alternatives=(8,),
        note="hierarchy tree: 4-item (default) or 8-item; fig. 2A not recoverable (alternative: "
        "the 8-item binary tree, the other reading of the lost figure; §4's task is only "
        "'similar to those considered by Saxe et al. (2019)')",
    )  # [I]
    margin_delta: float = setting(0.5, "stated", note="XOR + linear feature margin 2Δ, §6.1")  # [S]
    xor_levels: tuple[float, ...] = setting(
        (-1.0, 1.0),
        "inferred",
        alternatives=((0.0, 1.0), (-0.5, 0.5)),
        note="the XOR coordinates' two values: centred, so that their mean is no input constant "
        "(§3 removes it by mean-centring); (0, 1) is the uncentred alternative (a metric). "
        "Alternatives: (0, 1), the common binary XOR (0,0)…(1,1) (XOR : x3 scale 1), and "
        "(−½, ½), centred at that scale (the scale (hi − lo)/(2Δ) apart from the centring)",
    )  # [I]
    seeds: int = setting(
        10, "stated", at_least=3, note="networks per variant; fig. 6 uses 10 seeds"
    )  # [S]
    hierarchy_steps: int = setting(
        24_000,
        "inferred",
        at_least=10,
        no_alternative=_HORIZON,
        note="GD steps on the hierarchy (≈ 19 τ for P = 4)",
    )  # [I]
    xor_steps: int = setting(
        40_000,
        "inferred",
        at_least=10,
        no_alternative=_HORIZON,
        note="GD steps on XOR (bias-ReLU converges)",
    )  # [I]
    xor_linear_steps: int = setting(
        30_000,
        "inferred",
        at_least=10,
        no_alternative=_HORIZON,
        note="GD steps on XOR + linear",
    )  # [I]
    parallel_steps: int = setting(
        30_000,
        "inferred",
        at_least=10,
        no_alternative=_HORIZON,
        note="GD steps on the parallel task",
    )  # [I]
    record_every: int = setting(100, "choice", positive=True, note="recording interval in GD steps")
    constants: tuple[float, ...] = setting(
        (0.0, 0.1, 0.3, 1.0, 3.0),
        "inferred",
        at_least=0.0,
        alternatives=((0.0, 0.01, 0.1, 1.0, 10.0),),
        note="c sweep of fig. 10 (values not recoverable; alternative: a decade grid reaching "
        "smaller c — §5.2's 'even for small values of c' — and larger)",
    )  # [I]
    deltas: tuple[float, ...] = setting(
        (0.05, 0.1, 0.2, 0.3, 0.5, 1.0),
        "inferred",
        at_least=0.0,
        no_alternative="metrics only: 'relatively small values of Δ' (§6.1) has no value in "
        "the seed, so the Δ sweep decides no claim",
        note="Δ sweep of fig. 11 (values lost)",
    )  # [I]
    map_variances: tuple[float, ...] = setting(
        (2e-4, 2e-3, 2e-2, 2e-1),
        "inferred",
        positive=True,
        no_alternative=_BEYOND,
        note="beyond the seed: σ² axis of the map",
    )  # [I]
    map_constants: tuple[float, ...] = setting(
        (0.0, 0.1, 1.0, 3.0),
        "inferred",
        at_least=0.0,
        no_alternative=_BEYOND,
        note="beyond the seed: c axis of the map",
    )  # [I]
    map_seeds: int = setting(
        3,
        "inferred",
        positive=True,
        no_alternative=_BEYOND,
        note="beyond the seed: networks per map cell",
    )  # [I]
    map_widths: tuple[int, ...] = setting(
        (16, 256),
        "inferred",
        positive=True,
        no_alternative=_BEYOND,
        note="beyond the seed: hidden widths besides `hidden`",
    )  # [I]
    alignment_tolerance: float = seed004.alignment_tolerance(
        "largest |Δ ln L| still called aligned ('almost perfect match')"
    )  # [I]
    window_fraction: float = seed004.window_fraction()  # [I]
    max_shift: float = seed004.max_shift()  # [I] (the additive-shift gap, a metric)
    max_rescale: float = seed004.max_rescale()  # [I] (the claims' alignment)
    rescale_bound: Literal["max_rescale", "eq14"] = setting(
        "max_rescale",
        "inferred",
        judging=True,
        alternatives=("eq14",),
        note="how slow the ReLU curve may run in the alignment: up to κ = 1 + max_rescale, or "
        "up to eq. 14's own slow-down of the variant (alternative: the 'slight time shift' "
        "taken at the size §5.4 derives, κ ≈ 1.06 on the hierarchy and 1.02–1.03 on XOR, XOR + "
        "linear and the parallel task at the preset; metrics eq14_rescale_*)",
    )  # [I]
    majority: float = setting(0.5, "derived", note="'most units': a share above one half")  # [D]
    vast_majority: float = setting(
        0.8,
        "inferred",
        judging=True,
        alternatives=(0.7, 0.9),
        note="'vast majority' of the live units' kinks (alternatives: a looser and a stricter "
        "reader)",
    )  # [I]
    small_subset: float = setting(
        0.25,
        "inferred",
        greater_than=0.0,
        less_than=1.0,
        judging=True,
        alternatives=(0.2, 0.5),
        note="'a small subset' of units dead at t*: at most a quarter (F.4's mechanism: "
        "1/(P+1) = 0.2 dead at init at c = 1; alternatives: that 0.2, and a minority, 0.5)",
    )  # [I]
    smooth_steps: int = setting(
        1000,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(500, 2000),
        note="running-mean window (GD steps) of the always-on share before t* and the plateau "
        "are read off it (alternatives: half and twice)",
    )  # [I]
    near_loss: float = setting(
        0.1,
        "inferred",
        judging=True,
        alternatives=(0.05, 0.2),
        note="relative band around the linear-task loss counted as waiting (alternatives: half "
        "and twice)",
    )  # [I]
    loss_floor: float = setting(
        1e-3,
        "inferred",
        judging=True,
        no_alternative="a metric since issue 45: the gated model is judged over its early "
        "window (the alignment claims' convention), the log gap down to the floor decides no "
        "claim",
        note="the metric gated_gap_mean reads the log gap down to this share of L(0)",
    )  # [I]
    delay_factor: float = setting(
        2.0,
        "inferred",
        judging=True,
        alternatives=(1.5, 3.0),
        note="measured/predicted hitting delay within this factor (alternatives: a stricter "
        "and a looser reader)",
    )  # [I]
    mds_points: int = setting(6, "choice", note="snapshots in the MDS figure")

    def validate(self) -> None:
        """The rules that tie fields together (single-field ranges are in the settings)."""
        if 0.0 not in self.constants:
            raise ConfigError("constants must include 0 (the bias-free reference of fig. 10)")
        if self.map_seeds > self.seeds:
            raise ConfigError("map_seeds must not exceed seeds (the width map reuses them)")
        steps = (self.hierarchy_steps, self.xor_steps, self.xor_linear_steps, self.parallel_steps)
        if self.record_every > min(steps) // 10:
            raise ConfigError("every horizon needs ≥ 10 steps and ≥ 10 recordings")
        if len(self.xor_levels) != 2 or self.xor_levels[0] == self.xor_levels[1]:
            raise ConfigError("xor_levels must be two different values")

    @property
    def all_constants(self) -> tuple[float, ...]:
        """The c sweep with the main value c included, ascending [D]."""
        return tuple(sorted(set(self.constants) | {self.constant}))

    @property
    def all_deltas(self) -> tuple[float, ...]:
        """The Δ sweep with the main Δ included, ascending [D]."""
        return tuple(sorted(set(self.deltas) | {self.margin_delta}))


PRESETS = {
    # quick: 5 seeds instead of 10 and coarser recording; horizons, sizes and rates as the seed's
    "quick": replace(EarlyLinearizationConfig(), seeds=5, record_every=200, map_seeds=2),
    "paper": EarlyLinearizationConfig(),
}


def scale(config: EarlyLinearizationConfig) -> str:
    """The scale every claim was measured at."""
    return f"{config.seeds} seeds, hidden {config.hidden}, {config.n_items}-item tree"
