"""The bias-after-relu scorecard: seed 000's statements on Δ, speed, smoothness and final loss
as claims; the output's Δ against the input's, the zero-mean control and the analytic shift as
checks (identities of the setup, or relulab's theory against its own simulation: run and shown,
never counted); plus the metrics.

Δ at init is read from the ``init-delta`` unit (``init_seeds`` networks per b, the same weights
at every b); the training claims from the main sweep (``seeds_per_shift`` students per b). The
training claims also report their value at half the run (the trend towards the seed's 1000
steps) in their detail, and every student that diverged, per b, under the one divergence policy
(:data:`~relulab.experiments.bias_after_relu.readings.DIVERGENCE`: a diverged student ranks
last in every reading). Units are read through their typed views
(:class:`~relulab.experiments.bias_after_relu.units.Training`,
:class:`~relulab.experiments.bias_after_relu.units.InitDeltas`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relulab.analysis import (
    Estimate,
    argmin_ci,
    correlation_ci,
    divergence_text,
    group_means,
    mean_ci,
)
from relulab.experiments.base import Analysis, Results
from relulab.experiments.bias_after_relu.config import (
    MAIN,
    SOURCE,
    VARIANTS,
    BiasAfterReLUConfig,
    fine_shifts,
    in_window,
    scale,
)
from relulab.experiments.bias_after_relu.readings import (
    DIVERGENCE,
    argmin_shift,
    diverged_by_shift,
    init_table,
    per_student,
    seed_by_shift,
    zero_mean_deltas,
)
from relulab.experiments.bias_after_relu.units import InitDeltas, Key, Students, Training, sweep
from relulab.experiments.claims import ClaimSpec, PostHoc, Reading, evaluate
from relulab.experiments.criteria import Above, AllOf, Below, Correlated, Inside, Within
from relulab.init import analytic_relu_shift

__all__ = [
    "ANALYTIC_SHIFT",
    "CLAIMS",
    "FASTEST",
    "FINAL_LOSS",
    "KAIMING",
    "OUTPUT_EXCEEDS_INPUT",
    "ROUGHNESS_TIE",
    "SMOOTHEST",
    "U_SHAPED",
    "ZERO_MEAN",
    "analyse",
    "metrics",
    "training_tables",
    "u_shape",
    "u_shape_parts",
]

ROUGHNESS_TIE = 1e-3  # decades of log10 loss: below this two curves are equally smooth
FIGURE = "bias_after_relu.png"
B_STAR = analytic_relu_shift(scheme="torch_default")
B_STAR_KAIMING = analytic_relu_shift(scheme="kaiming_normal")


def _listing(shifts: Sequence[float], values: np.ndarray) -> str:
    return ", ".join(f"b={b:g}: {v:.3g}" for b, v in zip(shifts, values, strict=True))


def _init(results: Results) -> InitDeltas:
    return InitDeltas.read(results[Key.INIT_DELTA], Key.INIT_DELTA)


def _window(config: BiasAfterReLUConfig, quantity: str) -> Inside:
    """``quantity`` in the seed's low-Δ window (1e-9 of slack for rounding)."""
    low, high = config.optimum_window
    return Inside(quantity, low - 1e-9, high + 1e-9)


# ---------------------------------------------------------------------------------------------
# delta-u-shaped
# ---------------------------------------------------------------------------------------------
def u_shape_parts(config: BiasAfterReLUConfig) -> tuple[str, str, str]:
    """The names of the U-shape's three parts: where Δ is least, and its rise at the smallest
    and at the largest b of the sweep."""
    first, last = config.shifts[0], config.shifts[-1]
    return "least Δ", f"rise to b = {first:g}", f"rise to b = {last:g}"


def u_shape(table: np.ndarray, config: BiasAfterReLUConfig) -> dict:
    """The U-shape's measurement on Δ at init ``(networks, shifts)`` on the seed's grid: the b of
    least mean Δ (Bonferroni set of grid points) and the paired rise of Δ from there to the
    smallest and the largest b (Student t over networks)."""
    where_min = argmin_ci(np.array(config.shifts), table)
    floor = table[:, int(np.argmin(table.mean(axis=0)))]
    least, to_first, to_last = u_shape_parts(config)
    return {
        least: where_min,
        to_first: mean_ci(table[:, 0] - floor),
        to_last: mean_ci(table[:, -1] - floor),
    }


def _u_shaped(results: Results, config: BiasAfterReLUConfig) -> Reading:
    table = init_table(_init(results), MAIN, np.array(config.shifts))
    return Reading(
        u_shape(table, config),
        detail="mean Δ: " + _listing(config.shifts, table.mean(axis=0)),
        scale=scale(config, trained=False),
    )


def _u_criterion(config: BiasAfterReLUConfig) -> AllOf:
    least, to_first, to_last = u_shape_parts(config)
    return AllOf(
        {
            least: _window(config, "b of least mean Δ at init on the seed's b grid"),
            to_first: Above(f"Δ(b = {config.shifts[0]:g}) − least Δ, paired", 0.0),
            to_last: Above(f"Δ(b = {config.shifts[-1]:g}) − least Δ, paired", 0.0),
        }
    )


U_SHAPED: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "delta-u-shaped",
    "Δ is U-shaped in b with low values at b = 0.2–0.3.",
    source=f"{SOURCE}, middle plot ('Δ exhibits a U-shaped dependence on b. Values b = 0.2, "
    "0.3 yield low Δ')",
    criterion=_u_criterion,
    measure=_u_shaped,
    scope="at initialisation (Δ's definition), Post-LN with PyTorch's default init, on the "
    "seed's b grid",
    note="the b of least Δ: Bonferroni set of grid points over networks; rises: Student t",
    figure=FIGURE,
    counterexample="Kaiming-normal init: FC1's pre-activations have std 1, not 1/√3, so Δ is "
    "least at b ≈ 0.55–0.6 (b* = 1/√π), outside 0.2–0.3",
)


# ---------------------------------------------------------------------------------------------
# output-delta-exceeds-input, zero-mean-activation-removes-delta
# ---------------------------------------------------------------------------------------------
def _input_delta(results: Results) -> float:
    return float(_init(results).input_delta[0])


def _relu_b0(results: Results) -> np.ndarray:
    return init_table(_init(results), MAIN, np.array([0.0]))[:, 0]


def _output_exceeds(results: Results, config: BiasAfterReLUConfig) -> Reading:
    input_delta, relu_b0 = _input_delta(results), _relu_b0(results)
    return Reading(
        mean_ci(relu_b0 / input_delta),
        detail=f"Δ(input) = {input_delta:.3g} (sampling noise 1/√N = "
        f"{1 / np.sqrt(config.n_samples):.3g}); Δ(output) = {mean_ci(relu_b0).describe()}",
        scale=scale(config, trained=False),
    )


OUTPUT_EXCEEDS_INPUT: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "output-delta-exceeds-input",
    "The input's features have means close to 0, the output's clearly deviate from 0: "
    "Δ of the output at init (b = 0) is well above Δ of the input.",
    source="seed 000, 'Representation collapse' (histograms of x and y)",
    criterion=lambda c: Above("Δ(output) / Δ(input) at init, b = 0", c.clear_factor),
    measure=_output_exceeds,
    scope="at initialisation",
    note="'clearly' read as more than clear_factor × [I]; Student t over networks",
    figure=FIGURE,
    check="an identity of the setup: the inputs are drawn with mean 0, so their Δ is only the "
    "sampling noise 1/√N, while every ReLU unit has E[ReLU(z)] = s/√(2π) > 0, which FC2 carries "
    "to output means of O(1) spread whatever the weights: the ratio grows like √N (2.2 at "
    "N = 64 and width 16, 6.7 at N = 256, 11.6 at N = 1000), so what decides it is N, the "
    "input's sampling noise, not anything the network does",
)


def _zero_mean(results: Results, config: BiasAfterReLUConfig) -> Reading:
    input_delta = _input_delta(results)
    zero_mean = zero_mean_deltas(_init(results))
    return Reading(
        mean_ci(zero_mean / input_delta),
        detail=f"Δ(output): zero-mean activation {mean_ci(zero_mean).describe()}, ReLU "
        f"{mean_ci(_relu_b0(results)).describe()}; Δ(input) = {input_delta:.3g}",
        scale=scale(config, trained=False),
    )


ZERO_MEAN: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "zero-mean-activation-removes-delta",
    "Δ comes from ReLU shifting distributions to the positive side: with an activation "
    "of zero mean, Δ of the output stays at the input's level.",
    source="seed 000, 'Representation collapse' (Origin: 'ReLU inducing distribution shifts')",
    criterion=lambda c: Below(
        "Δ(output) / Δ(input) at init with ReLU(z) − E[ReLU(z)] per neuron", c.clear_factor
    ),
    measure=_zero_mean,
    scope="at initialisation",
    note="control: per-neuron means estimated on a held-out draw of inputs; the same factor as "
    "'output-delta-exceeds-input' [I]; Student t over networks",
    figure=FIGURE,
    check="an identity of the setup: ReLU(z) − E[ReLU(z)] has zero mean by construction, so the "
    "blocks add no mean and the output's feature means are sampling noise like the input's; the "
    "held-out estimate of each E[ReLU(z)] only adds noise of the same order (ratio ≈ 1.1–1.2 at "
    "any N)",
)


# ---------------------------------------------------------------------------------------------
# low-delta-trains-fastest, low-delta-trains-smoothest, final-loss-rises-with-delta
# ---------------------------------------------------------------------------------------------
def training_tables(results: Results, config: BiasAfterReLUConfig) -> dict:
    """The main sweep's students at the end and at half the run: ``{"end": …, "half": …}``, each
    with the per-student readings (``students``) and the mean log10 loss and roughness as
    ``(seeds, shifts)`` tables; and ``half_step``, the step of the half-run record."""
    trained = Training.read(results[Key.SWEEP_POSTLN_DEFAULT], Key.SWEEP_POSTLN_DEFAULT)
    half = max(2, (trained.loss.shape[1] + 1) // 2)  # records up to mid-run
    tables: dict = {"half_step": int(trained.steps[half - 1])}
    for when, values in (("end", per_student(trained)), ("half", per_student(trained, half))):
        tables[when] = {"students": values} | {
            key: seed_by_shift(values[key], values["b"], values["seed"], config.shifts)
            for key in ("mean_log_loss", "roughness")
        }
    tables["diverged"] = diverged_by_shift(tables["end"]["students"], config.shifts)
    return tables


def _diverged_detail(tables: dict) -> str:
    """The divergence counts per b, for a training claim's detail."""
    policy = DIVERGENCE.describe().removeprefix("diverged: ")
    return f"{divergence_text(tables['diverged'])} ({policy}; ranked last)"


def _fastest(results: Results, config: BiasAfterReLUConfig) -> Reading:
    tables = training_tables(results, config)
    shifts = np.array(config.shifts)
    with np.errstate(invalid="ignore"):  # two diverged students of one seed: inf − inf
        at_half = argmin_ci(shifts, tables["half"]["mean_log_loss"])
        at_end = argmin_ci(shifts, tables["end"]["mean_log_loss"])
    return Reading(
        at_end,
        detail=f"at step {tables['half_step']} (half the run): {at_half.describe()}; mean "
        "log10 loss: "
        + _listing(config.shifts, tables["end"]["mean_log_loss"].mean(axis=0))
        + f"; {_diverged_detail(tables)}",
        scale=scale(config, trained=True),
        diverged=tables["diverged"],
    )


FASTEST: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "low-delta-trains-fastest",
    "The b with low Δ give the fastest loss curves.",
    source=f"{SOURCE}, left plot ('b = 0.2, 0.3 … correspond to fast … learning curves')",
    criterion=lambda c: _window(
        c, "b of the lowest mean log10 loss over training (mean over seeds)"
    ),
    measure=_fastest,
    scope="training with Adam, lr 1e-3, over the seed's 1000 steps",
    note="speed measure [I]; Bonferroni set of grid points over seeds; a diverged student ranks "
    "last (its b is beaten by every b whose student of that seed trained)",
    figure=FIGURE,
    counterexample="Kaiming-normal init: Δ's minimum moves to b ≈ 0.55 and the fastest b moves "
    "with it (0.5 for the quick preset's Kaiming students; 0.55 [0.55, 0.9] at width 16, "
    "3 blocks, lr 0.01)",
)


def smoother_outside(roughness: np.ndarray, config: BiasAfterReLUConfig) -> np.ndarray:
    """Per seed: mean roughness over the b outside the window minus that inside (a diverged
    student's roughness is ``+inf``: its seed's difference is ``+inf`` outside the window,
    ``-inf`` inside, undefined with both, and the claim's interval is then unbounded:
    inconclusive)."""
    window = np.array([in_window(b, config) for b in config.shifts])
    with np.errstate(invalid="ignore"):
        return roughness[:, ~window].mean(axis=1) - roughness[:, window].mean(axis=1)


def _smoothest(results: Results, config: BiasAfterReLUConfig) -> Reading:
    tables = training_tables(results, config)
    at_half = _unbounded_if_diverged(smoother_outside(tables["half"]["roughness"], config))
    return Reading(
        _unbounded_if_diverged(smoother_outside(tables["end"]["roughness"], config)),
        detail=f"at step {tables['half_step']} (half the run): {at_half.describe()}; mean "
        "roughness: "
        + _listing(config.shifts, tables["end"]["roughness"].mean(axis=0))
        + f"; {_diverged_detail(tables)}",
        scale=scale(config, trained=True),
        diverged=tables["diverged"],
    )


def _unbounded_if_diverged(differences: np.ndarray) -> Estimate:
    """The mean per-seed difference with its Student-t interval; a seed with a diverged
    student (a non-finite difference) makes the interval unbounded (inconclusive)."""
    if np.all(np.isfinite(differences)):
        return mean_ci(differences)
    value = float(np.mean(differences)) if not np.isnan(differences).any() else math.nan
    return Estimate(value, -math.inf, math.inf, len(differences), method="a seed diverged")


SMOOTHEST: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "low-delta-trains-smoothest",
    "The b with low Δ give the smoothest loss curves.",
    source=f"{SOURCE}, left plot ('b = 0.2, 0.3 … correspond to fast and smooth learning curves')",
    criterion=lambda c: Above(
        "mean excess variation of log10 loss (total variation minus net change) over b "
        f"outside [{c.optimum_window[0]:g}, {c.optimum_window[1]:g}] minus that inside, per seed",
        ROUGHNESS_TIE,
    ),
    measure=_smoothest,
    scope="training with Adam, lr 1e-3, over the seed's 1000 steps",
    note=f"a difference below {ROUGHNESS_TIE:g} decades is a tie (no b rougher); measure [I]; "
    "Student t over seeds; a diverged student is the roughest (its seed's difference is "
    "unbounded: inconclusive)",
    figure=FIGURE,
    counterexample="a horizon before any curve oscillates: after 100 Adam steps (lr 1e-3) every "
    "loss curve is still monotone, so no b is rougher than the window — a tie, which fails",
    post_hoc=(
        PostHoc(
            f"the tie margin ROUGHNESS_TIE = {ROUGHNESS_TIE:g} decades (a difference below it "
            "fails)",
            "made explicit after the first run (9285cd8, 22 Nov), where monotone curves tied at "
            "exactly 0 and the argmin picked float noise; it makes the claim harder to hold",
            criterion=lambda c: Above(
                "mean excess variation of log10 loss (total variation minus net change) over b "
                f"outside [{c.optimum_window[0]:g}, {c.optimum_window[1]:g}] minus that inside, "
                "per seed",
                0.0,
            ),
        ),
    ),
)


def _final_loss(results: Results, config: BiasAfterReLUConfig) -> Reading:
    tables = training_tables(results, config)
    end, half = tables["end"]["students"], tables["half"]["students"]
    rho_half = correlation_ci(half["delta"], half["final_loss"])
    return Reading(
        correlation_ci(end["delta"], end["final_loss"], "spearman"),
        detail=f"at step {tables['half_step']} (half the run): ρ = {rho_half.describe()}; "
        + _diverged_detail(tables),
        scale=scale(config, trained=True),
        diverged=tables["diverged"],
    )


FINAL_LOSS: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "final-loss-rises-with-delta",
    "The final loss correlates positively with Δ.",
    source=f"{SOURCE}, right plot ('the final loss correlates with Δ, revealing a clear "
    "positive correlation')",
    criterion=Correlated("ρ(Δ at init, final loss) over all students"),
    measure=_final_loss,
    scope="the final loss after the seed's 1000 Adam steps",
    note="Fisher-z interval; a diverged student's final loss ranks last (+inf)",
    figure=FIGURE,
    counterexample="Kaiming-normal init read before training (a horizon of one step): the loss "
    "falls with Δ, ρ = −0.55 [−0.72, −0.31] over the quick preset's 50 students",
)


# ---------------------------------------------------------------------------------------------
# analytic-shift-finds-the-minimum, kaiming-moves-the-minimum (beyond the seed)
# ---------------------------------------------------------------------------------------------
_THEORY_CHECK = (
    "relulab's theory against its own simulation: b* = E[ReLU(z)] is derived for the very toy "
    "the init unit simulates (z Gaussian on LayerNorm's unit-variance stream, its std fixed by "
    "the init), so the located minimum of Δ tests the derivation against relulab's own forward "
    "pass, not a statement of the seed"
)


def _minimum(results: Results, config: BiasAfterReLUConfig, variant: str) -> Reading:
    table = init_table(_init(results), variant, fine_shifts(config))
    return Reading(
        argmin_ci(fine_shifts(config), table),
        detail=f"least mean Δ {table.mean(axis=0).min():.3g}",
        scale=scale(config, trained=False),
    )


ANALYTIC_SHIFT: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "analytic-shift-finds-the-minimum",
    "The centring shift b* = E[ReLU(z)] of the init predicts where Δ is smallest.",
    source=f"{SOURCE}; b* derived [D]",
    criterion=lambda c: Within(
        f"b of least mean Δ at init on a {c.fine_shift_step:g} grid", B_STAR, c.shift_tolerance
    ),
    measure=lambda results, config: _minimum(results, config, MAIN),
    scope="at initialisation, PyTorch's default init",
    note=f"b* = 1/√(6π) = {B_STAR:.3f} for PyTorch's default init, derived [D]; Bonferroni set "
    "of grid points over networks",
    figure=FIGURE,
    beyond_seed=True,
    check=_THEORY_CHECK,
)

KAIMING: ClaimSpec[BiasAfterReLUConfig] = ClaimSpec(
    "kaiming-moves-the-minimum",
    f"Under Kaiming-normal init the optimal shift moves to b* ≈ {B_STAR_KAIMING:.2f}.",
    source=f"{SOURCE}; b* derived [D]",
    criterion=lambda c: Within(
        f"b of least mean Δ at init under Kaiming-normal, {c.fine_shift_step:g} grid",
        B_STAR_KAIMING,
        c.shift_tolerance,
    ),
    measure=lambda results, config: _minimum(results, config, "postln-kaiming"),
    scope="at initialisation, Kaiming-normal init (an init the seed does not use)",
    note="b* derived [D]; Bonferroni set of grid points over networks",
    figure=FIGURE,
    beyond_seed=True,
    check=_THEORY_CHECK,
)

CLAIMS = (
    U_SHAPED,
    OUTPUT_EXCEEDS_INPUT,
    ZERO_MEAN,
    FASTEST,
    SMOOTHEST,
    FINAL_LOSS,
    ANALYTIC_SHIFT,
    KAIMING,
)


def _variant_metrics(results: Results, config: BiasAfterReLUConfig) -> dict[str, float]:
    """Per trained variant: the b of least Δ and of least final loss, and those least values."""
    values: dict[str, float] = {}
    for variant in VARIANTS:
        students = per_student(Training.read(results[sweep(variant)], sweep(variant)))
        delta = group_means(students["delta"], students["b"], config.shifts)
        final = group_means(students["final_loss"], students["b"], config.shifts)
        values[f"{variant}_argmin_delta"] = argmin_shift(delta, config.shifts)
        values[f"{variant}_min_delta"] = float(delta.min())
        values[f"{variant}_best_final_loss"] = float(final.min())
        values[f"{variant}_argmin_final_loss"] = argmin_shift(final, config.shifts)
    return values


def _state_metrics(results: Results, config: BiasAfterReLUConfig) -> dict[str, float]:
    """Dead and always-on FC1 fractions at init for the smallest and the largest b."""
    main = Students.read(results[Key.SWEEP_POSTLN_DEFAULT], Key.SWEEP_POSTLN_DEFAULT)
    b = np.array([c["b"] for c in main.conditions])
    values: dict[str, float] = {}
    for shift in (config.shifts[0], config.shifts[-1]):
        rows = np.isclose(b, shift)
        values[f"dead_fraction_init_b_{shift:g}"] = float(main.dead_fraction[rows, 0].mean())
        values[f"always_on_fraction_init_b_{shift:g}"] = float(
            main.always_on_fraction[rows, 0].mean()
        )
    return values


def metrics(results: Results, config: BiasAfterReLUConfig) -> dict[str, float]:
    """The numbers behind the claims and the variants beyond the seed (Kaiming-normal, Pre-LN,
    per-neuron calibrated shifts, neuron states)."""
    values: dict[str, float] = {
        "analytic_shift_default": B_STAR,
        "analytic_shift_kaiming": B_STAR_KAIMING,
    }
    values.update(_variant_metrics(results, config))
    calibrated = Training.read(results[Key.CALIBRATED], Key.CALIBRATED)
    values["calibrated_delta"] = float(calibrated.delta_init.mean())
    values["calibrated_final_loss"] = float(calibrated.final_loss.mean())
    values.update(_state_metrics(results, config))
    init = _init(results)
    values["input_delta"] = _input_delta(results)
    values["output_delta_b0_mean"] = float(_relu_b0(results).mean())
    values["zero_mean_output_delta_mean"] = float(zero_mean_deltas(init).mean())
    fine = fine_shifts(config)
    for variant in ("postln-default", "postln-kaiming"):
        table = init_table(init, variant, fine)
        values[f"{variant}_fine_argmin_delta"] = argmin_shift(table.mean(axis=0), tuple(fine))
    trained = [Training.read(results[key], key) for key in Key if key is not Key.INIT_DELTA]
    values["diverged_students"] = float(
        sum(int(DIVERGENCE.diverged(view.diverged, view.loss).sum()) for view in trained)
    )
    return values


def analyse(results: Results, config: BiasAfterReLUConfig) -> Analysis:
    """Claims and metrics from the stored results."""
    return Analysis(evaluate(CLAIMS, results, config), metrics(results, config))
