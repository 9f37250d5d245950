"""Adding a bias after ReLU (seed ``000_…``, Liu, *Optimization 3 / Depth 2*, section "Trick:
adding bias after ReLU").

Teacher–student on the post-LN residual toy (d = 50, hidden 200, 10 blocks, α = 1): a teacher
with b = 0 and its own weights; students with ReLU−b, b ∈ {0.0, …, 0.9}, several seeds — seed
``s`` gives the same student weights for every b (a paired design: b is the only difference).
Output = the final LN output (50-dim), MSE over all entries, full batch, Adam lr 1e-3. All
students of a variant train in one batched computation (``relulab.engine``).

Measured per student: Δ at initialisation (std over width of the per-unit mean output over
samples, seed 000 "Representation collapse"), the loss curve, and the FC1 neuron-state fractions
during training. A forward-only unit measures Δ at init on many more networks: per b on a fine
grid under both inits, Δ of the input, and a zero-mean-activation control (the seed's "origin"
hypothesis). Beyond the seed: the analytic centring shift b* = E[ReLU(z)] of the init ([D]: FC1
pre-activations have std s = 1/√3 under PyTorch's default init, so b* = s/√(2π) = 1/√(6π)
≈ 0.23; ≈ 0.56 for Kaiming-normal) against the located minimum of Δ; the same sweep under
Kaiming-normal init and under Pre-LN; students with per-neuron shifts calibrated on the data
(``BatchedResidualToy.calibrate_shifts_``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from scipy import stats

from relulab.analysis import argmin_ci, correlation_ci, group_means, mean_ci, where
from relulab.config import ConfigError, setting
from relulab.engine import (
    BatchedAdam,
    BatchedResidualToy,
    ResidualToySpec,
    SupervisedProblem,
    train,
)
from relulab.experiments.base import Analysis, Experiment, Figure, Results, Unit
from relulab.experiments.claims import Claim, above, below, correlated, inside, judged, within
from relulab.experiments.context import RunContext
from relulab.init import analytic_relu_shift
from relulab.nn.statistics import BATCHED_SAMPLE_DIMS, delta
from relulab.report.plotting import plt, save
from relulab.store import UnitResult

SOURCE = "seed 000, 'Trick: adding bias after ReLU'"
MAIN = "postln-default"  # the seed's setting: Post-LN, PyTorch's default init
VARIANTS = {  # name: (norm, init)
    "postln-default": ("post", "torch_default"),
    "postln-kaiming": ("post", "kaiming_normal"),
    "preln-default": ("pre", "torch_default"),
}


@dataclass(frozen=True)
class BiasAfterReLUConfig:
    """Settings with their provenance (:func:`relulab.config.setting`): stated by seed 000 or its
    residual-toy post, derived, inferred, or an implementation choice; ``seed_value`` is the
    seed's own value where the quick preset departs from it."""

    seed: int = 0
    dtype: Literal["float32", "float64"] = setting("float32", "choice")
    width: int = setting(50, "stated")
    hidden: int = setting(200, "stated")
    blocks: int = setting(10, "stated")
    alpha: float = setting(1.0, "stated")
    shifts: tuple[float, ...] = setting(
        (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9), "stated"
    )
    seeds_per_shift: int = setting(
        5, "inferred", note="trained students per b in the main sweep (the seed shows one)"
    )
    variant_seeds_per_shift: int = setting(
        2, "choice", note="trained students per b for Kaiming, Pre-LN and calibrated (metrics)"
    )
    init_seeds: int = setting(
        24, "choice", note="networks per b for the Δ-at-init claims (forward passes only)"
    )
    fine_shift_step: float = setting(
        0.025, "choice", note="grid of b for locating the minimum of Δ at init"
    )
    n_samples: int = setting(
        256, "inferred", seed_value=1000, note="the seed does not state N; the paper preset: 1000"
    )
    steps: int = setting(300, "stated", seed_value=1000, note="seed 000: 1000 steps (paper)")
    lr: float = setting(1e-3, "stated")
    record_every: int = setting(10, "choice")
    optimum_window: tuple[float, float] = setting(
        (0.2, 0.3), "stated", note="'b = 0.2, 0.3 yield low Δ'", sweep=False
    )
    shift_tolerance: float = setting(
        0.05, "inferred", note="analytic b* vs the located minimum: half the seed's b step"
    )
    clear_factor: float = setting(
        2.0, "inferred", note="'clearly deviates': Δ of the output above twice Δ of the input"
    )

    def validate(self) -> None:
        if min(self.width, self.hidden, self.blocks, self.n_samples, self.steps) < 1:
            raise ConfigError("width, hidden, blocks, n_samples and steps must be positive")
        if len(self.shifts) < 3 or self.seeds_per_shift < 1:
            raise ConfigError("need at least 3 shifts and 1 seed per shift")
        if self.variant_seeds_per_shift < 1 or self.init_seeds < 1:
            raise ConfigError("variant_seeds_per_shift and init_seeds must be positive")
        if not 0 < self.fine_shift_step <= 0.5:
            raise ConfigError(f"fine_shift_step must lie in (0, 0.5], got {self.fine_shift_step}")
        if self.lr <= 0 or self.record_every < 1:
            raise ConfigError("lr and record_every must be positive")
        low, high = self.optimum_window
        if not any(low - 1e-9 <= b <= high + 1e-9 for b in self.shifts):  # claims look there
            raise ConfigError(f"at least one shift must lie in optimum_window {low}…{high}")


PRESETS = {
    "quick": BiasAfterReLUConfig(),
    "paper": BiasAfterReLUConfig(
        seeds_per_shift=10, variant_seeds_per_shift=5, init_seeds=50, n_samples=1000, steps=1000
    ),
}


def output_delta(output: torch.Tensor) -> torch.Tensor:
    """Δ per network: std over width of the mean over samples of the output ``(S, N, d)``."""
    return delta(output, BATCHED_SAMPLE_DIMS)


def _spec(config: BiasAfterReLUConfig, norm: str) -> ResidualToySpec:
    return ResidualToySpec(config.width, config.hidden, config.blocks, norm, config.alpha)


def _inputs(config: BiasAfterReLUConfig, context: RunContext, stream: str) -> torch.Tensor:
    """``n_samples`` standard Gaussian inputs ``(N, width)`` from the run's named stream."""
    x = torch.randn(config.n_samples, config.width, generator=context.generator(stream))
    return x.to(context.dtype).to(context.device)


def _teacher_targets(
    config: BiasAfterReLUConfig, norm: str, init: str, x: torch.Tensor, context: RunContext
) -> torch.Tensor:
    teacher = BatchedResidualToy(
        _spec(config, norm),
        1,
        init=init,
        seeds=[10_000 + config.seed],
        dtype=context.dtype,
        device=context.device,
    )
    with torch.no_grad():
        return teacher.forward(x)[0]


def _train_students(
    config: BiasAfterReLUConfig,
    variant: str,
    conditions: list[dict[str, Any]],
    context: RunContext,
    calibrate: bool = False,
) -> UnitResult:
    norm, init = VARIANTS[variant]
    x = _inputs(config, context, "inputs")
    students = BatchedResidualToy(
        _spec(config, norm),
        len(conditions),
        init=init,
        seeds=[config.seed * 1000 + c["seed"] for c in conditions],
        relu_shift=[0.0 if calibrate else c["b"] for c in conditions],
        dtype=context.dtype,
        device=context.device,
    )
    if calibrate:
        students.calibrate_shifts_(x)
    with torch.no_grad():
        delta = output_delta(students.forward(x)).double().cpu().numpy()
    problem = SupervisedProblem(students, x, _teacher_targets(config, norm, init, x, context))
    with context.progress(config.steps, f"{variant}{' calibrated' if calibrate else ''}") as done:
        result = train(
            problem, BatchedAdam(problem.params, config.lr), config.steps, config.record_every, done
        )
    unit = UnitResult.from_training(result, conditions)
    unit.final["delta_init"] = delta
    return unit


def _seeds(config: BiasAfterReLUConfig, variant: str) -> int:
    """Trained students per b: the main sweep carries the claims, the variants only metrics."""
    return config.seeds_per_shift if variant == MAIN else config.variant_seeds_per_shift


def _sweep_unit(config: BiasAfterReLUConfig, variant: str) -> Unit:
    conditions = [
        {"variant": variant, "b": b, "seed": s}
        for s in range(_seeds(config, variant))
        for b in config.shifts
    ]
    return Unit(
        f"sweep-{variant}", lambda context: _train_students(config, variant, conditions, context)
    )


def _calibrated_unit(config: BiasAfterReLUConfig) -> Unit:
    conditions = [
        {"variant": "calibrated", "b": -1.0, "seed": s}
        for s in range(config.variant_seeds_per_shift)
    ]
    return Unit(
        "calibrated",
        lambda context: _train_students(
            config, "postln-default", conditions, context, calibrate=True
        ),
    )


def fine_shifts(config: BiasAfterReLUConfig) -> np.ndarray:
    """The fine grid of b for Δ at init: 0 to the largest swept b in ``fine_shift_step``
    steps, plus the swept b themselves.

    Example:
        >>> fine_shifts(BiasAfterReLUConfig(shifts=(0.0, 0.2, 0.5), fine_shift_step=0.1)).tolist()
        [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    """
    top = max(config.shifts)
    grid = np.arange(0.0, top + config.fine_shift_step / 2, config.fine_shift_step)
    return np.unique(np.round(np.concatenate([grid, config.shifts]), 9))


INIT_CHUNK = 64  # networks per forward pass in the init unit (bounds its memory)


def _init_deltas(config: BiasAfterReLUConfig, context: RunContext) -> UnitResult:
    """Δ at init, no training: Δ of the input; Δ of the output for every b of the fine grid and
    ``init_seeds`` networks under both inits; the zero-mean control (per-neuron shifts centred on
    a held-out draw of the inputs, so the activation has zero mean in expectation, not by
    construction on the measured sample)."""
    x = _inputs(config, context, "inputs")
    held_out = _inputs(config, context, "calibration")
    groups = {
        variant: [
            {"variant": variant, "b": float(b), "seed": s}
            for b in fine_shifts(config)
            for s in range(config.init_seeds)
        ]
        for variant in ("postln-default", "postln-kaiming")
    }
    groups["zero-mean"] = [
        {"variant": "zero-mean", "b": -1.0, "seed": s} for s in range(config.init_seeds)
    ]
    conditions, deltas = [], []
    total = sum(len(g) for g in groups.values())
    with context.progress(total, "Δ at init") as done:
        for variant, group in groups.items():
            for start in range(0, len(group), INIT_CHUNK):
                chunk = group[start : start + INIT_CHUNK]
                deltas.append(_chunk_deltas(config, variant, chunk, x, held_out, context))
                conditions += chunk
                done(len(chunk))
    input_delta = output_delta(x.unsqueeze(0)).double().cpu().numpy()
    return UnitResult.forward_only(
        conditions,
        np.zeros(1),
        {},
        {"delta_init": np.concatenate(deltas)},
        {"input_delta": input_delta},
    )


def _chunk_deltas(
    config: BiasAfterReLUConfig,
    variant: str,
    chunk: list[dict[str, Any]],
    x: torch.Tensor,
    held_out: torch.Tensor,
    context: RunContext,
) -> np.ndarray:
    """Δ of the output at init of one batch of networks of one variant."""
    zero_mean = variant == "zero-mean"
    toy = BatchedResidualToy(
        _spec(config, "post"),
        len(chunk),
        init=VARIANTS[MAIN if zero_mean else variant][1],
        seeds=[config.seed * 1000 + c["seed"] for c in chunk],
        relu_shift=[0.0 if zero_mean else c["b"] for c in chunk],
        dtype=context.dtype,
        device=context.device,
    )
    if zero_mean:
        toy.calibrate_shifts_(held_out)
    with torch.no_grad():
        return output_delta(toy.forward(x)).double().cpu().numpy()


def plan(config: BiasAfterReLUConfig) -> list[Unit]:
    return [
        *(_sweep_unit(config, variant) for variant in VARIANTS),
        _calibrated_unit(config),
        Unit("init-delta", lambda context: _init_deltas(config, context)),
    ]


# ---------------------------------------------------------------------------------------------
# Analysis.
# ---------------------------------------------------------------------------------------------
ROUGHNESS_TIE = 1e-3  # decades of log10 loss: below this two curves are equally smooth


def _per_student(result: UnitResult, records: int | None = None) -> dict[str, np.ndarray]:
    """Δ, final loss, speed (mean log10 loss over training) and roughness per student, over the
    first ``records`` records (all by default: a shorter prefix shows the trend with length)."""
    log_loss = np.log10(np.maximum(result.curves["loss"][:, :records], 1e-30))
    roughness = np.abs(np.diff(log_loss, axis=1)).sum(axis=1) - np.abs(
        log_loss[:, -1] - log_loss[:, 0]
    )
    return {
        "delta": result.final["delta_init"],
        "final_loss": result.final["loss"] if records is None else 10 ** log_loss[:, -1],
        "mean_log_loss": log_loss.mean(axis=1),
        "roughness": roughness,
        "b": np.array([c["b"] for c in result.conditions]),
        "seed": np.array([c["seed"] for c in result.conditions]),
    }


def _argmin_shift(values: np.ndarray, shifts: tuple[float, ...]) -> float:
    return float(shifts[int(np.argmin(values))])


def _in_window(b: float, config: BiasAfterReLUConfig) -> bool:
    low, high = config.optimum_window
    return low - 1e-9 <= b <= high + 1e-9


def seed_by_shift(
    values: np.ndarray, b: np.ndarray, seed: np.ndarray, shifts: np.ndarray | tuple[float, ...]
) -> np.ndarray:
    """Per-network values arranged as ``(seeds, shifts)``: row s holds seed s at every b (the
    paired design: one seed's weights at every shift). Seeds missing a shift are dropped.

    Example:
        >>> seed_by_shift(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.0, 0.1, 0.0, 0.1]),
        ...               np.array([0, 0, 1, 1]), (0.0, 0.1)).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    rows = []
    for s in np.unique(seed):
        row = [values[(seed == s) & np.isclose(b, shift)] for shift in shifts]
        if all(len(cell) == 1 for cell in row):
            rows.append([float(cell[0]) for cell in row])
    return np.array(rows).reshape(-1, len(shifts))


def _init_table(init: UnitResult, variant: str, shifts: np.ndarray) -> np.ndarray:
    """Δ at init of one variant as ``(init_seeds, len(shifts))``."""
    idx = where(init.conditions, variant=variant)
    b = np.array([init.conditions[i]["b"] for i in idx])
    seed = np.array([init.conditions[i]["seed"] for i in idx])
    return seed_by_shift(init.final["delta_init"][idx], b, seed, shifts)


def _scale(config: BiasAfterReLUConfig, trained: bool) -> str:
    """The scale a verdict was measured at, next to the seed's where it differs."""
    n = f"N = {config.n_samples} inputs" + (
        "" if config.n_samples == 1000 else " (seed: not stated; read as 1000)"
    )
    if not trained:
        return f"{n}; {config.init_seeds} networks per b at init"
    steps = f"{config.steps} steps" + ("" if config.steps == 1000 else " (seed: 1000)")
    return f"{n}; {steps}; {config.seeds_per_shift} trained students per b"


def _u_shape(table: np.ndarray, config: BiasAfterReLUConfig) -> dict[str, Any]:
    """``judged`` arguments for "Δ is U-shaped in b, lowest at 0.2–0.3" on the seed's grid."""
    shifts = np.array(config.shifts)
    low, high = config.optimum_window
    where_min = argmin_ci(shifts, table)
    floor = table[:, int(np.argmin(table.mean(axis=0)))]
    rises = [mean_ci(table[:, k] - floor) for k in (0, -1)]
    in_window = low - 1e-9 <= where_min.low and where_min.high <= high + 1e-9
    outside = where_min.high < low - 1e-9 or where_min.low > high + 1e-9
    if in_window and all(r.low > 0 for r in rises):
        holds: bool | None = True
    elif outside or any(r.high <= 0 for r in rises):
        holds = False
    else:
        holds = None
    means = table.mean(axis=0)
    return {
        "expected": f"b of least mean Δ in [{low:g}, {high:g}] (whole 95 % bootstrap interval) "
        f"and Δ at b = {shifts[0]:g} and b = {shifts[-1]:g} above that least Δ (paired 95 % "
        "intervals above 0); measured: the b of least mean Δ",
        "measured": where_min,
        "holds": holds,
        "detail": f"argmin {where_min.describe()}; rise to b = {shifts[0]:g}: "
        f"{rises[0].describe()}, to b = {shifts[-1]:g}: {rises[-1].describe()}; mean Δ: "
        + ", ".join(f"b={b:g}: {v:.3g}" for b, v in zip(shifts, means, strict=True)),
    }


def claims(results: Results, config: BiasAfterReLUConfig) -> list[Claim]:
    """Seed 000's statements on Δ, speed, smoothness and final loss, the origin control and the
    analytic shift, as claims."""
    c = config
    shifts = np.array(c.shifts)
    low, high = c.optimum_window
    trained = results[f"sweep-{MAIN}"]
    half = max(2, (trained.curves["loss"].shape[1] + 1) // 2)  # records up to mid-run
    at_end, at_half = _per_student(trained), _per_student(trained, half)
    half_step = int(trained.steps[half - 1])
    tables = {
        when: {
            key: seed_by_shift(values[key], values["b"], values["seed"], shifts)
            for key in ("mean_log_loss", "roughness")
        }
        for when, values in (("end", at_end), ("half", at_half))
    }
    window = np.array([_in_window(b, c) for b in shifts])
    init = results["init-delta"]
    input_delta = float(init.arrays["input_delta"][0])
    fine = fine_shifts(c)
    default_fine = _init_table(init, MAIN, fine)
    kaiming_fine = _init_table(init, "postln-kaiming", fine)
    zero_mean = init.final["delta_init"][where(init.conditions, variant="zero-mean")]
    relu_b0 = _init_table(init, MAIN, np.array([0.0]))[:, 0]
    b_star = analytic_relu_shift(scheme="torch_default")
    b_star_kaiming = analytic_relu_shift(scheme="kaiming_normal")
    fast = {w: argmin_ci(shifts, tables[w]["mean_log_loss"]) for w in tables}
    smoother = {
        w: mean_ci(
            tables[w]["roughness"][:, ~window].mean(axis=1)
            - tables[w]["roughness"][:, window].mean(axis=1)
        )
        for w in tables
    }
    rho_half = correlation_ci(at_half["delta"], at_half["final_loss"])
    fmt = lambda values: ", ".join(f"b={b:g}: {v:.3g}" for b, v in zip(shifts, values, strict=True))  # noqa: E731
    trend = f"at step {half_step} (half the run): "
    at_init, by_training = _scale(c, trained=False), _scale(c, trained=True)
    return [
        judged(
            "delta-u-shaped",
            "Δ is U-shaped in b with low values at b = 0.2–0.3.",
            source=f"{SOURCE} (middle plot)",
            scale=at_init,
            **_u_shape(_init_table(init, MAIN, shifts), c),
        ),
        above(
            "output-delta-exceeds-input",
            "The input's features have means close to 0, the output's clearly deviate from 0: "
            "Δ of the output at init (b = 0) is well above Δ of the input.",
            quantity="Δ(output) / Δ(input) at init, b = 0",
            measured=mean_ci(relu_b0 / input_delta),
            bound=c.clear_factor,
            source="seed 000, 'Representation collapse' (histograms of x and y)",
            note=f"'clearly' read as more than {c.clear_factor:g}× [I]",
            detail=f"Δ(input) = {input_delta:.3g} (sampling noise 1/√N = "
            f"{1 / np.sqrt(c.n_samples):.3g}); Δ(output) = {mean_ci(relu_b0).describe()}",
            scale=at_init,
        ),
        below(
            "zero-mean-activation-removes-delta",
            "Δ comes from ReLU shifting distributions to the positive side: with an activation "
            "of zero mean, Δ of the output stays at the input's level.",
            quantity="Δ(output) / Δ(input) at init with ReLU(z) − E[ReLU(z)] per neuron",
            measured=mean_ci(zero_mean / input_delta),
            bound=c.clear_factor,
            source="seed 000, 'Representation collapse' (Origin: 'ReLU inducing distribution "
            "shifts')",
            note="control: per-neuron means estimated on a held-out draw of inputs; the same "
            f"factor {c.clear_factor:g} as 'output-delta-exceeds-input' [I]",
            detail=f"Δ(output): zero-mean activation {mean_ci(zero_mean).describe()}, ReLU "
            f"{mean_ci(relu_b0).describe()}; Δ(input) = {input_delta:.3g}",
            scale=at_init,
        ),
        inside(
            "low-delta-trains-fastest",
            "The b with low Δ give the fastest loss curves.",
            quantity="b of the lowest mean log10 loss over training (mean over seeds)",
            measured=fast["end"],
            low=low - 1e-9,
            high=high + 1e-9,
            source=f"{SOURCE} (left plot)",
            note="speed measure [I]; bootstrap over seeds",
            detail=f"{trend}{fast['half'].describe()}; mean log10 loss: "
            + fmt(tables["end"]["mean_log_loss"].mean(axis=0)),
            scale=by_training,
        ),
        above(
            "low-delta-trains-smoothest",
            "The b with low Δ give the smoothest loss curves.",
            quantity="mean excess variation of log10 loss (total variation minus net change) "
            f"over b outside [{low:g}, {high:g}] minus that inside, per seed",
            measured=smoother["end"],
            bound=ROUGHNESS_TIE,
            source=f"{SOURCE} (left plot)",
            note=f"a difference below {ROUGHNESS_TIE:g} decades is a tie (no b rougher); "
            "measure [I]",
            detail=f"{trend}{smoother['half'].describe()}; mean roughness: "
            + fmt(tables["end"]["roughness"].mean(axis=0)),
            scale=by_training,
        ),
        correlated(
            "final-loss-rises-with-delta",
            "The final loss correlates positively with Δ.",
            quantity="ρ(Δ at init, final loss) over all students",
            x=at_end["delta"],
            y=at_end["final_loss"],
            source=f"{SOURCE} (right plot)",
            detail=f"{trend}ρ = {rho_half.describe()}",
            scale=by_training,
        ),
        within(
            "analytic-shift-finds-the-minimum",
            "The centring shift b* = E[ReLU(z)] of the init predicts where Δ is smallest.",
            quantity=f"b of least mean Δ at init on a {c.fine_shift_step:g} grid",
            measured=argmin_ci(fine, default_fine),
            target=b_star,
            tolerance=c.shift_tolerance,
            source=SOURCE,
            note=f"b* = 1/√(6π) = {b_star:.3f} for PyTorch's default init, derived [D]; "
            "bootstrap over networks",
            detail=f"least mean Δ {default_fine.mean(axis=0).min():.3g}",
            scale=at_init,
        ),
        within(
            "kaiming-moves-the-minimum",
            f"Under Kaiming-normal init the optimal shift moves to b* ≈ {b_star_kaiming:.2f}.",
            quantity=f"b of least mean Δ at init under Kaiming-normal, {c.fine_shift_step:g} grid",
            measured=argmin_ci(fine, kaiming_fine),
            target=b_star_kaiming,
            tolerance=c.shift_tolerance,
            source=SOURCE,
            note="b* derived [D]; bootstrap over networks",
            detail=f"least mean Δ {kaiming_fine.mean(axis=0).min():.3g}",
            scale=at_init,
        ),
    ]


def _metrics(results: Results, config: BiasAfterReLUConfig) -> dict[str, float]:
    metrics: dict[str, float] = {
        "analytic_shift_default": analytic_relu_shift(scheme="torch_default"),
        "analytic_shift_kaiming": analytic_relu_shift(scheme="kaiming_normal"),
    }
    for variant in VARIANTS:
        values = _per_student(results[f"sweep-{variant}"])
        delta = group_means(values["delta"], values["b"], config.shifts)
        final = group_means(values["final_loss"], values["b"], config.shifts)
        metrics[f"{variant}_argmin_delta"] = _argmin_shift(delta, config.shifts)
        metrics[f"{variant}_min_delta"] = float(delta.min())
        metrics[f"{variant}_best_final_loss"] = float(final.min())
        metrics[f"{variant}_argmin_final_loss"] = _argmin_shift(final, config.shifts)
    calibrated = results["calibrated"]
    metrics["calibrated_delta"] = float(calibrated.final["delta_init"].mean())
    metrics["calibrated_final_loss"] = float(calibrated.final["loss"].mean())
    main = results["sweep-postln-default"]
    b = np.array([c["b"] for c in main.conditions])
    for shift in (config.shifts[0], config.shifts[-1]):
        rows = np.isclose(b, shift)
        metrics[f"dead_fraction_init_b_{shift:g}"] = float(
            main.curves["dead_fraction"][rows, 0].mean()
        )
        metrics[f"always_on_fraction_init_b_{shift:g}"] = float(
            main.curves["always_on_fraction"][rows, 0].mean()
        )
    init = results["init-delta"]
    metrics["input_delta"] = float(init.arrays["input_delta"][0])
    metrics["output_delta_b0_mean"] = float(_init_table(init, MAIN, np.array([0.0]))[:, 0].mean())
    metrics["zero_mean_output_delta_mean"] = float(
        init.final["delta_init"][where(init.conditions, variant="zero-mean")].mean()
    )
    for variant in ("postln-default", "postln-kaiming"):
        table = _init_table(init, variant, fine_shifts(config))
        metrics[f"{variant}_fine_argmin_delta"] = _argmin_shift(
            table.mean(axis=0), tuple(fine_shifts(config))
        )
    metrics["diverged_students"] = float(sum(int(r.diverged.sum()) for r in results.values()))
    return metrics


def analyse(results: Results, config: BiasAfterReLUConfig) -> Analysis:
    return Analysis(claims(results, config), _metrics(results, config))


# ---------------------------------------------------------------------------------------------
# Figures.
# ---------------------------------------------------------------------------------------------
def _figure_main(results: Results, config: BiasAfterReLUConfig, out_dir: Path) -> Figure:
    result = results["sweep-postln-default"]
    values = _per_student(result)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    colours = plt.cm.viridis(np.linspace(0, 0.95, len(config.shifts)))
    for colour, shift in zip(colours, config.shifts, strict=True):
        rows = np.isclose(values["b"], shift)
        axes[0].semilogy(
            result.steps,
            result.curves["loss"][rows].mean(axis=0),
            color=colour,
            label=f"b={shift:g}",
        )
    calibrated = results["calibrated"]
    axes[0].semilogy(
        calibrated.steps, calibrated.curves["loss"].mean(axis=0), "k--", label="per-neuron b"
    )
    axes[0].set(xlabel="step", ylabel="MSE", title="loss (mean over seeds)")
    axes[0].legend(ncol=2)
    for variant, marker in (
        ("postln-default", "o-"),
        ("postln-kaiming", "s-"),
        ("preln-default", "^-"),
    ):
        v = _per_student(results[f"sweep-{variant}"])
        axes[1].plot(
            config.shifts, group_means(v["delta"], v["b"], config.shifts), marker, label=variant
        )
    for scheme, colour in (("torch_default", "tab:blue"), ("kaiming_normal", "tab:orange")):
        axes[1].axvline(
            analytic_relu_shift(scheme=scheme), color=colour, ls=":", lw=1.2, label=f"b* {scheme}"
        )
    init, fine = results["init-delta"], fine_shifts(config)
    for variant, colour in (("postln-default", "tab:blue"), ("postln-kaiming", "tab:orange")):
        table = _init_table(init, variant, fine)
        low, high = np.percentile(table, [2.5, 97.5], axis=0)
        axes[1].fill_between(fine, low, high, color=colour, alpha=0.2, lw=0)
        axes[1].plot(fine, table.mean(axis=0), color=colour, lw=1, label=f"{variant} (init unit)")
    axes[1].axhline(
        float(init.arrays["input_delta"][0]), color="k", ls="--", lw=1, label="Δ of the input"
    )
    axes[1].set(xlabel="b", ylabel="Δ at init", title="Δ vs b", yscale="log")
    axes[1].legend()
    rho = stats.spearmanr(values["delta"], values["final_loss"])[0]
    axes[2].scatter(values["delta"], values["final_loss"], c=values["b"], cmap="viridis")
    axes[2].set(
        xlabel="Δ at init",
        ylabel="final loss",
        xscale="log",
        yscale="log",
        title=f"final loss vs Δ (Spearman ρ = {rho:.2f})",
    )
    return save(
        fig,
        out_dir,
        "bias_after_relu.png",
        "Post-LN students (default init): loss curves per b and with per-neuron calibrated "
        "shifts; Δ vs b for the three variants with the analytic b* marked, and on the fine "
        "grid of the init unit (mean and 95 % of networks) next to Δ of the input; final loss "
        "vs Δ coloured by b.",
    )


def _figure_states(results: Results, config: BiasAfterReLUConfig, out_dir: Path) -> Figure:
    result = results["sweep-postln-default"]
    b = np.array([c["b"] for c in result.conditions])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key in zip(axes, ("dead_fraction", "always_on_fraction"), strict=True):
        for column, label in ((0, "init"), (-1, "end")):
            ax.plot(
                config.shifts,
                group_means(result.curves[key][:, column], b, config.shifts),
                "o-",
                label=label,
            )
        ax.set(xlabel="b", ylabel=key.replace("_", " "), title=f"FC1 units: {key.split('_')[0]}")
        ax.legend()
    return save(
        fig,
        out_dir,
        "neuron_states.png",
        "Fraction of FC1 units dead (never active on the data) and always on, at initialisation "
        "and after training, against b.",
    )


def figures(results: Results, config: BiasAfterReLUConfig, out_dir: Path) -> list[Figure]:
    return [_figure_main(results, config, out_dir), _figure_states(results, config, out_dir)]


def estimate_bytes(config: BiasAfterReLUConfig) -> int:
    """Peak memory in bytes of the largest unit (one sweep, S = shifts × seeds students): the
    weights with their gradients and Adam moments (4 × 2·width·hidden per block) and the
    activations kept for the backward pass (≈ N·(4·hidden + 4·width) per block). Measured:
    929 MiB peak for an estimate of 989 MiB (6 students, width 100, hidden 400, 10 blocks,
    N = 2000)."""
    itemsize = 8 if config.dtype == "float64" else 4
    students = len(config.shifts) * config.seeds_per_shift
    per_block = 4 * 2 * config.width * config.hidden + config.n_samples * (
        4 * config.hidden + 4 * config.width
    )
    return itemsize * students * config.blocks * per_block


EXPERIMENT = Experiment(
    name="bias-after-relu",
    title="Adding a bias after ReLU: Δ, training speed and the centring shift",
    seed="000",
    summary="teacher–student residual toy, b sweep; Δ U-shape, speed, analytic b*, Kaiming, Pre-LN",
    config=BiasAfterReLUConfig,
    presets=PRESETS,
    plan=plan,
    analyse=analyse,
    figures=figures,
    estimate_bytes=estimate_bytes,
)
