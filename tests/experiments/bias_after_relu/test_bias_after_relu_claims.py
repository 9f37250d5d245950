"""bias-after-relu: each claim's criterion against its positive control (seed 000's toy at
initialisation, simulated here independently of relulab's engine, and loss curves built as the
seed describes them from that simulation's Δ) and its negative control: the claim's
``counterexample``, a setting of the toy run through the study's own units at a small size
(Kaiming-normal init; a horizon before any curve oscillates) and judged by the claim's own
measurement, with the earlier synthetic counter-examples kept as extra assertions; then the
whole scorecard on synthetic stored results, each behaviour removed in turn, and the one
divergence policy. The output's Δ against the input's, the zero-mean control and the analytic
shift are checks (identities of the setup, relulab's theory against its own simulation): they
keep their controls and are never counted. Training here is tiny (16 or 20 students, ≤ 100
steps)."""

import copy
import math

import numpy as np
import pytest
import torch

from relulab.analysis import argmin_ci, mean_ci
from relulab.config import apply_overrides
from relulab.experiments.bias_after_relu import BiasAfterReLUConfig, claims, fine_shifts, units
from relulab.experiments.bias_after_relu.readings import per_student, roughness
from relulab.experiments.bias_after_relu.units import Key, Training
from relulab.experiments.claims import evaluate
from relulab.experiments.context import RunContext
from relulab.init import analytic_relu_shift
from relulab.store import UnitResult

CONFIG = BiasAfterReLUConfig(seeds_per_shift=6, init_seeds=12, steps=300, record_every=10)
SHIFTS = np.array(CONFIG.shifts)
FINE = fine_shifts(CONFIG)
B_STAR = {
    "postln-default": analytic_relu_shift(scheme="torch_default"),
    "postln-kaiming": analytic_relu_shift(scheme="kaiming_normal"),
}
INPUT_DELTA = 1 / np.sqrt(CONFIG.n_samples)
NETWORKS = 12
CONTEXT = RunContext(torch.device("cpu"), torch.float32, seed=0, quiet=True)
TINY = [  # the toy shrunk for the negative controls: 4 seeds × 4 shifts, one in the window
    "width=16",
    "hidden=32",
    "blocks=3",
    "n_samples=64",
    "steps=100",
    "seeds_per_shift=4",
    "variant_seeds_per_shift=4",
    "shifts=0,0.25,0.55,0.9",
]


def _trained(variant: str, *overrides: str) -> tuple:
    """One trained sweep of ``variant``, run by the study's own unit with ``overrides``, stored
    in the main sweep's slot (what the training claims read)."""
    config = apply_overrides(BiasAfterReLUConfig(), list(overrides))
    unit = units._sweep_unit(config, variant).run(CONTEXT)
    return config, {Key.SWEEP_POSTLN_DEFAULT: unit}


def test_claims_declare_where_they_fail_and_the_identities_are_checks():
    kinds = {spec.id: spec.kind for spec in claims.CLAIMS}
    assert [k for k, v in kinds.items() if v == "claim"] == [
        "delta-u-shaped",
        "low-delta-trains-fastest",
        "low-delta-trains-smoothest",
        "final-loss-rises-with-delta",
    ]
    for spec in claims.CLAIMS:
        assert bool(spec.counterexample) == (spec.kind == "claim"), spec.id
    assert "identity of the setup" in claims.OUTPUT_EXCEEDS_INPUT.check
    assert "identity of the setup" in claims.ZERO_MEAN.check
    assert "own simulation" in claims.ANALYTIC_SHIFT.check == claims.KAIMING.check


# ---------------------------------------------------------------------------------------------
# Seed 000's toy at initialisation, simulated independently: Post-LN, d = 50, hidden 200,
# 10 blocks, α = 1, no biases, N = 256 Gaussian inputs.
# ---------------------------------------------------------------------------------------------
def _weights(init: str, generator: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One network's (FC1, FC2) per block: nn.Linear's default U(±1/√fan_in), or
    Kaiming-normal N(0, 2/fan_in)."""
    d, hidden = CONFIG.width, CONFIG.hidden

    def draw(rows: int, fan_in: int) -> torch.Tensor:
        if init == "torch_default":
            return (torch.rand(rows, fan_in, generator=generator) * 2 - 1) / math.sqrt(fan_in)
        return torch.randn(rows, fan_in, generator=generator) * math.sqrt(2 / fan_in)

    return [(draw(hidden, d), draw(d, hidden)) for _ in range(CONFIG.blocks)]


def _output(x, weights, shift=0.0, activation=torch.relu, centre=False) -> torch.Tensor:
    """y = the final LN output of ``h ← LN(h + FC2(σ(FC1 h) − b))``; ``shift`` a number or a
    ``(B, 1, 1)`` tensor of b (one output per b). With ``centre`` each hidden unit subtracts
    its own E[ReLU(z)] = ‖w_j‖/√(2π) instead (z = w_j·h ~ N(0, ‖w_j‖²) on the unit-variance
    stream): the activation has zero mean by the closed form, not by fitting the sample."""
    h = x
    for w1, w2 in weights:
        z = h @ w1.T
        b = w1.norm(dim=1) / math.sqrt(2 * math.pi) if centre else shift
        h = torch.nn.functional.layer_norm(h + (activation(z) - b) @ w2.T, (h.shape[-1],))
    return h


def _delta(y: torch.Tensor) -> np.ndarray:
    """Δ: std over width of the mean over samples (the seed's definition), per leading index."""
    return y.mean(dim=-2).std(dim=-1, unbiased=False).double().numpy()


@pytest.fixture(scope="module")
def simulated():
    """Δ at init of ``NETWORKS`` networks per init on the fine grid of b (each network at every
    b: the paired design), the input's Δ, and per default-init network the ratios
    Δ(output)/Δ(input) with ReLU (b = 0), with the closed-form centred ReLU, and with tanh."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(CONFIG.n_samples, CONFIG.width, generator=generator)
    b = torch.tensor(FINE, dtype=torch.float32).view(-1, 1, 1)
    input_delta = float(_delta(x))
    out = {"input": input_delta, "relu": [], "centred": [], "tanh": []}
    with torch.no_grad():
        for init in ("torch_default", "kaiming_normal"):
            rows = []
            for _ in range(NETWORKS):
                weights = _weights(init, generator)
                rows.append(_delta(_output(x, weights, b)))
                if init == "torch_default":
                    out["relu"].append(float(_delta(_output(x, weights))) / input_delta)
                    centred = _output(x, weights, centre=True)
                    out["centred"].append(float(_delta(centred)) / input_delta)
                    tanh = _output(x, weights, activation=torch.tanh)
                    out["tanh"].append(float(_delta(tanh)) / input_delta)
            out[init] = np.array(rows)
    return out


def _on_seed_grid(table: np.ndarray) -> np.ndarray:
    """The columns of a fine-grid table at the seed's b."""
    return table[:, [int(np.argmin(np.abs(FINE - b))) for b in SHIFTS]]


def test_simulation_is_the_seeds_toy(simulated):
    """The independent toy's Δ at b = 0 is well above the input's, its least Δ at ≈ 0.23."""
    assert simulated["input"] == pytest.approx(INPUT_DELTA, rel=0.1)  # sampling noise 1/√N
    assert 4 < np.mean(simulated["relu"]) < 10
    least = FINE[np.argmin(simulated["torch_default"].mean(axis=0))]
    assert least == pytest.approx(0.225, abs=0.03)


# --- delta-u-shaped ----------------------------------------------------------------------------
def test_delta_u_shaped_positive(simulated):
    """Seed 000's toy at init on the seed's b grid: Δ dips at b = 0.2 (the middle plot's U)."""
    table = _on_seed_grid(simulated["torch_default"])
    assert claims.U_SHAPED.judge(claims.u_shape(table, CONFIG), CONFIG) == "holds"


@pytest.fixture(scope="module")
def init_small():
    """The study's init unit at a small size (width 16, 4 blocks, 6 networks per b, a 0.05
    grid): both inits' networks at every b (≈ 0.5 s)."""
    config = apply_overrides(
        BiasAfterReLUConfig(),
        [
            "width=16",
            "hidden=32",
            "blocks=4",
            "n_samples=64",
            "init_seeds=6",
            "fine_shift_step=0.05",
        ],
    )
    return config, {Key.INIT_DELTA: units.plan(config)[-1].run(CONTEXT)}


def test_delta_u_shaped_negative(simulated, init_small):
    """The counter-setting run by the study's init unit: its Kaiming-normal networks in the
    seed's slot (variants relabelled) dip at b ≈ 0.55–0.6, outside 0.2–0.3 — the claim fails,
    where the same unit's default-init networks hold. Extra assertions on the criterion: the
    independent toy under Kaiming-normal init, and a Δ that only falls with b."""
    config, results = init_small
    assert claims.U_SHAPED.evaluate(results, config).verdict == "holds"
    relabelled = copy.deepcopy(results)
    swap = {"postln-default": "postln-kaiming", "postln-kaiming": "postln-default"}
    for condition in relabelled[Key.INIT_DELTA].conditions:
        condition["variant"] = swap.get(condition["variant"], condition["variant"])
    record = claims.U_SHAPED.evaluate(relabelled, config)
    assert record.verdict == "fails" and record.measured >= 0.5, record.detail
    kaiming = _on_seed_grid(simulated["kaiming_normal"])
    assert claims.U_SHAPED.judge(claims.u_shape(kaiming, CONFIG), CONFIG) == "fails"
    rng = np.random.default_rng(0)
    falling = 1.0 - SHIFTS + 0.01 * rng.standard_normal((NETWORKS, len(SHIFTS)))
    assert claims.U_SHAPED.judge(claims.u_shape(falling, CONFIG), CONFIG) == "fails"


# --- output-delta-exceeds-input ----------------------------------------------------------------
def test_output_delta_exceeds_input_positive(simulated):
    """A check's positive control. Seed 000's toy with plain ReLU: the output's feature means
    deviate from 0 (Δ ≈ 6× the input's), as the seed's histograms of x and y show."""
    measured = mean_ci(simulated["relu"])
    assert claims.OUTPUT_EXCEEDS_INPUT.judge(measured, CONFIG) == "holds"


def test_output_delta_exceeds_input_negative(simulated):
    """A check's negative control (criterion only). The same networks with tanh, odd and
    zero-mean: the output's Δ stays at the input's."""
    measured = mean_ci(simulated["tanh"])
    assert claims.OUTPUT_EXCEEDS_INPUT.judge(measured, CONFIG) == "fails"


# --- zero-mean-activation-removes-delta --------------------------------------------------------
def test_zero_mean_activation_removes_delta_positive(simulated):
    """A check's positive control. The seed's origin, in closed form: each hidden unit's ReLU
    centred by its own E[ReLU(z)] = ‖w_j‖/√(2π) leaves Δ at the input's level."""
    measured = mean_ci(simulated["centred"])
    assert claims.ZERO_MEAN.judge(measured, CONFIG) == "holds"


def test_zero_mean_activation_removes_delta_negative(simulated):
    """A check's negative control (criterion only). Without the centring (plain ReLU in the
    control's place) Δ stays high."""
    measured = mean_ci(simulated["relu"])
    assert claims.ZERO_MEAN.judge(measured, CONFIG) == "fails"


# ---------------------------------------------------------------------------------------------
# Loss curves as the seed describes them: 'b = 0.2, 0.3 yield low Δ, which correspond to fast
# and smooth learning curves … the final loss correlates with Δ'.
# ---------------------------------------------------------------------------------------------
def _sweep(delta: np.ndarray, rate, wobble, jitter: float = 0.0) -> UnitResult:
    """A main-sweep unit, one student per (network, b) of ``delta`` ``(seeds, shifts)``: its
    log10 loss falls at ``rate(Δ)`` decades over the run (times a lognormal factor of spread
    ``jitter``: students differ beyond their Δ) and alternates by ``wobble(Δ)``."""
    rng = np.random.default_rng(3)
    steps = np.arange(0, CONFIG.steps + 1, CONFIG.record_every)
    t = np.linspace(0, 1, len(steps))
    conditions, curves = [], []
    for s, row in enumerate(delta):
        for b, value in zip(SHIFTS, row, strict=True):
            speed = rate(value) * math.exp(jitter * rng.standard_normal())
            log_loss = -speed * t + wobble(value) * (np.arange(len(t)) % 2)
            conditions.append({"variant": "postln-default", "b": float(b), "seed": s})
            curves.append(10**log_loss)
    loss = np.array(curves)
    n = len(conditions)
    final = {"loss": loss[:, -1].copy(), "delta_init": delta.ravel().copy()}
    return UnitResult(conditions, steps, {"loss": loss}, final, np.zeros(n, bool), np.full(n, -1))


def _seed_like(simulated) -> dict:
    """Lower Δ, faster and smoother: 5/(1 + 10Δ) decades over the run, ±20 % from student to
    student, and an alternation of Δ/2 decades (≈ 0.04 at b = 0.2, ≈ 0.4 at b = 0.9)."""
    delta = _on_seed_grid(simulated["torch_default"])[: CONFIG.seeds_per_shift]
    unit = _sweep(delta, lambda d: 5 / (1 + 10 * d), lambda d: d / 2, jitter=0.2)
    return {Key.SWEEP_POSTLN_DEFAULT: unit}


def _measured(spec, results):
    return spec.measure(results, CONFIG).measured


# --- low-delta-trains-fastest ------------------------------------------------------------------
def test_low_delta_trains_fastest_positive(simulated):
    """Curves whose speed follows the simulated Δ at init, as the seed says."""
    assert claims.FASTEST.judge(_measured(claims.FASTEST, _seed_like(simulated)), CONFIG) == "holds"


def test_low_delta_trains_fastest_negative(simulated):
    """The counter-setting run by the study's units: Kaiming-normal students (the tiny toy, lr
    0.01) train fastest at b = 0.55, where their Δ is least — outside 0.2–0.3, the claim fails;
    the same toy with the default init is fastest at 0.25. Extra assertion on the criterion:
    curves on which plain ReLU (b = 0) trains fastest and every shift slows training down."""
    config, results = _trained("postln-kaiming", *TINY, "lr=0.01")
    record = claims.FASTEST.evaluate(results, config)
    assert record.verdict == "fails" and record.measured == 0.55, record.detail
    config, results = _trained("postln-default", *TINY, "lr=0.01")
    assert claims.FASTEST.evaluate(results, config).verdict == "holds"
    delta = _on_seed_grid(simulated["torch_default"])[: CONFIG.seeds_per_shift]
    slower_with_b = np.broadcast_to(SHIFTS, delta.shape)
    results = {Key.SWEEP_POSTLN_DEFAULT: _sweep(slower_with_b, lambda b: 5 - 4 * b, lambda b: 0)}
    assert claims.FASTEST.judge(_measured(claims.FASTEST, results), CONFIG) == "fails"


# --- low-delta-trains-smoothest ----------------------------------------------------------------
def test_low_delta_trains_smoothest_positive(simulated):
    """Curves whose roughness follows the simulated Δ at init, as the seed says."""
    measured = _measured(claims.SMOOTHEST, _seed_like(simulated))
    assert claims.SMOOTHEST.judge(measured, CONFIG) == "holds"


def test_low_delta_trains_smoothest_negative(simulated):
    """The counter-setting run by the study's units: a horizon before any curve oscillates
    (100 Adam steps at the seed's lr 1e-3, the tiny toy): every loss curve is monotone, no b is
    rougher than the window — a tie, the claim fails (also without its post-hoc tie margin: the
    differences are float noise, ≈ 1e-7). Extra assertions on the criterion: synthetic monotone
    curves, and curves roughest where Δ is lowest."""
    config, results = _trained("postln-default", *TINY)
    record = claims.SMOOTHEST.evaluate(results, config)
    assert record.verdict == "fails" and abs(record.measured) < 1e-5, record.detail
    delta = _on_seed_grid(simulated["torch_default"])[: CONFIG.seeds_per_shift]
    monotone = {Key.SWEEP_POSTLN_DEFAULT: _sweep(delta, lambda d: 5 / (1 + 10 * d), lambda d: 0)}
    assert claims.SMOOTHEST.judge(_measured(claims.SMOOTHEST, monotone), CONFIG) == "fails"
    inverted = {Key.SWEEP_POSTLN_DEFAULT: _sweep(delta, lambda d: 3, lambda d: 0.05 / d)}
    assert claims.SMOOTHEST.judge(_measured(claims.SMOOTHEST, inverted), CONFIG) == "fails"


# --- final-loss-rises-with-delta ---------------------------------------------------------------
def test_final_loss_rises_with_delta_positive(simulated):
    """Final losses of curves that train slower the larger Δ (the seed's right plot)."""
    measured = _measured(claims.FINAL_LOSS, _seed_like(simulated))
    assert claims.FINAL_LOSS.judge(measured, CONFIG) == "holds"


def test_final_loss_rises_with_delta_negative(simulated):
    """The counter-setting run by the study's units: Kaiming-normal students at the seed's
    sizes (N = 128, 20 students) read before training (a horizon of one step): the loss falls
    with Δ (ρ ≈ −0.5), the claim fails. (Under the default init the loss correlates with Δ
    already at step 1.) Extra assertion on the criterion: curves that train faster the larger Δ.
    """
    config, results = _trained(
        "postln-kaiming", "n_samples=128", "steps=1", "record_every=1", "variant_seeds_per_shift=2"
    )
    record = claims.FINAL_LOSS.evaluate(results, config)
    assert record.verdict == "fails" and record.n == 20, record.detail
    delta = _on_seed_grid(simulated["torch_default"])[: CONFIG.seeds_per_shift]
    results = {Key.SWEEP_POSTLN_DEFAULT: _sweep(delta, lambda d: 2 + 5 * d, lambda d: 0)}
    assert claims.FINAL_LOSS.judge(_measured(claims.FINAL_LOSS, results), CONFIG) == "fails"


# --- analytic-shift-finds-the-minimum (beyond the seed) ----------------------------------------
def test_analytic_shift_finds_the_minimum_positive(simulated):
    """A check's positive control. The simulated toy under PyTorch's default init: Δ is least
    at b ≈ 0.225 on the fine grid, within 0.05 of b* = 1/√(6π) = 0.230."""
    measured = argmin_ci(FINE, simulated["torch_default"])
    assert claims.ANALYTIC_SHIFT.judge(measured, CONFIG) == "holds"


def test_analytic_shift_finds_the_minimum_negative(simulated):
    """Networks whose minimum lies elsewhere (Kaiming-normal's, at ≈ 0.575)."""
    measured = argmin_ci(FINE, simulated["kaiming_normal"])
    assert claims.ANALYTIC_SHIFT.judge(measured, CONFIG) == "fails"


# --- kaiming-moves-the-minimum (beyond the seed) -----------------------------------------------
def test_kaiming_moves_the_minimum_positive(simulated):
    """A check's positive control. The simulated toy under Kaiming-normal init: Δ is least
    near b* = 1/√π = 0.564."""
    measured = argmin_ci(FINE, simulated["kaiming_normal"])
    assert claims.KAIMING.judge(measured, CONFIG) == "holds"


def test_kaiming_moves_the_minimum_negative(simulated):
    """Kaiming-normal networks whose minimum did not move (the default init's, at ≈ 0.225)."""
    measured = argmin_ci(FINE, simulated["torch_default"])
    assert claims.KAIMING.judge(measured, CONFIG) == "fails"


def test_beyond_the_seed_flags():
    """The analytic b* and Kaiming-normal are relulab's extensions; the rest is the seed's."""
    flagged = {spec.id for spec in claims.CLAIMS if spec.beyond_seed}
    assert flagged == {"analytic-shift-finds-the-minimum", "kaiming-moves-the-minimum"}


def test_roughness_is_zero_for_monotone_curves():
    assert roughness(np.array([[0.0, -1.0, -1.5, -3.0]])).tolist() == [0.0]
    assert roughness(np.array([[0.0, -1.0, -0.5, -3.0]])).tolist() == [1.0]


# ---------------------------------------------------------------------------------------------
# The whole scorecard on synthetic stored results (seed-like, then one behaviour removed).
# ---------------------------------------------------------------------------------------------
def _profile_delta(b, centre, rng, noise=0.003):
    return 0.05 + np.abs(b - centre) + noise * rng.standard_normal()


def _init_unit(centres=B_STAR, noise=0.003, zero_mean=1.1 * INPUT_DELTA, profile=None):
    rng = np.random.default_rng(0)
    conditions, deltas = [], []
    for variant, centre in centres.items():
        for b in FINE:
            for s in range(CONFIG.init_seeds):
                conditions.append({"variant": variant, "b": float(b), "seed": s})
                value = profile(b) if profile else _profile_delta(b, centre, rng, noise)
                deltas.append(value + (noise * rng.standard_normal() if profile else 0.0))
    for s in range(CONFIG.init_seeds):
        conditions.append({"variant": "zero-mean", "b": -1.0, "seed": s})
        deltas.append(zero_mean * (1 + 0.01 * rng.standard_normal()))
    return UnitResult.forward_only(
        conditions,
        np.zeros(1),
        {},
        {"delta_init": np.array(deltas)},
        {"input_delta": np.array([INPUT_DELTA])},
    )


def _sweep_unit(best=0.23, rough_from=0.5, shuffle_final=False):
    """Students whose log10 loss falls fastest near ``best`` and oscillates for b ≥
    ``rough_from``; Δ at init rises away from b*."""
    rng = np.random.default_rng(1)
    steps = np.arange(0, CONFIG.steps + 1, CONFIG.record_every)
    t = np.linspace(0, 1, len(steps))
    conditions, curves, deltas = [], [], []
    for s in range(CONFIG.seeds_per_shift):
        for b in SHIFTS:
            rate = 5 * (1 - abs(b - best)) + 0.05 * rng.standard_normal()
            log_loss = -rate * t
            if b >= rough_from:
                log_loss = log_loss + 0.3 * (np.arange(len(t)) % 2)
            conditions.append({"variant": "postln-default", "b": float(b), "seed": s})
            curves.append(10**log_loss)
            deltas.append(_profile_delta(b, B_STAR["postln-default"], rng))
    loss = np.array(curves)
    if shuffle_final:  # whole curves change hands: the final loss no longer follows Δ
        loss = rng.permutation(loss)
    final = loss[:, -1].copy()
    n = len(conditions)
    return UnitResult(
        conditions,
        steps,
        {"loss": loss},
        {"loss": final, "delta_init": np.array(deltas)},
        np.zeros(n, bool),
        np.full(n, -1),
    )


def seedlike(**changes):
    results = {Key.SWEEP_POSTLN_DEFAULT: _sweep_unit(), Key.INIT_DELTA: _init_unit()}
    results.update({Key(name.replace("_", "-")): unit for name, unit in changes.items()})
    return results


def _scorecard(results):
    return evaluate(claims.CLAIMS, results, CONFIG)


def _verdicts(results):
    return {claim.id: claim.verdict for claim in _scorecard(results)}


def test_every_claim_holds_where_seed_000s_behaviour_is_present():
    scorecard = _scorecard(seedlike())
    assert {c.id: c.verdict for c in scorecard} == {c.id: "holds" for c in scorecard}
    assert len(scorecard) == 8
    for claim in scorecard:  # every claim says its scale, n and interval
        assert "N = 256 inputs (seed: not stated; read as 1000)" in claim.scale
        assert claim.n is not None and claim.ci_low <= claim.ci_high, claim.id
    fastest = next(c for c in scorecard if c.id == "low-delta-trains-fastest")
    assert "300 steps (seed: 1000)" in fastest.scale and "at step 150" in fastest.detail


def test_delta_without_a_dip_in_the_window_fails():
    falling = _init_unit(profile=lambda b: 1.0 - b)  # least Δ at the largest b
    verdicts = _verdicts(seedlike(init_delta=falling))
    assert verdicts["delta-u-shaped"] == "fails"
    assert verdicts["analytic-shift-finds-the-minimum"] == "fails"


def test_noise_that_hides_the_minimum_is_inconclusive():
    noisy = _init_unit(noise=0.5)
    assert _verdicts(seedlike(init_delta=noisy))["delta-u-shaped"] == "inconclusive"


def test_minimum_away_from_the_analytic_shift_fails():
    moved = _init_unit(centres={"postln-default": 0.4, "postln-kaiming": 0.2})
    verdicts = _verdicts(seedlike(init_delta=moved))
    assert verdicts["analytic-shift-finds-the-minimum"] == "fails"
    assert verdicts["kaiming-moves-the-minimum"] == "fails"


def test_output_at_the_inputs_level_fails_and_a_control_with_delta_fails():
    flat = _init_unit(profile=lambda b: INPUT_DELTA)
    assert _verdicts(seedlike(init_delta=flat))["output-delta-exceeds-input"] == "fails"
    shifted = _init_unit(zero_mean=0.28)  # the 'zero-mean' activation keeps ReLU's Δ
    verdict = _verdicts(seedlike(init_delta=shifted))["zero-mean-activation-removes-delta"]
    assert verdict == "fails"


def test_monotone_curves_everywhere_fail_smoothness_and_a_fast_end_fails_speed():
    monotone = _sweep_unit(rough_from=10.0)  # no b is rougher than the window: a tie fails
    assert _verdicts(seedlike(sweep_postln_default=monotone))["low-delta-trains-smoothest"] == (
        "fails"
    )
    fast_end = _sweep_unit(best=0.9)
    assert _verdicts(seedlike(sweep_postln_default=fast_end))["low-delta-trains-fastest"] == (
        "fails"
    )


def test_final_loss_unrelated_to_delta_is_not_a_positive_correlation():
    shuffled = _sweep_unit(shuffle_final=True)
    verdict = _verdicts(seedlike(sweep_postln_default=shuffled))["final-loss-rises-with-delta"]
    assert verdict in ("inconclusive", "fails")


def test_per_student_reads_the_half_run_prefix():
    unit = _sweep_unit()
    half = per_student(Training.read(unit), 16)
    assert np.allclose(half["final_loss"], unit.curves["loss"][:, 15])


# ---------------------------------------------------------------------------------------------
# One divergence policy: a diverged student counts the same in every training claim.
# ---------------------------------------------------------------------------------------------
def _with_diverged(b: float, seed: int = 0) -> dict:
    """The seed-like results with the student (``b``, ``seed``) diverged at mid-run: the engine
    flags it and its loss turns non-finite."""
    results = seedlike()
    unit = results[Key.SWEEP_POSTLN_DEFAULT]
    i = next(
        k for k, c in enumerate(unit.conditions) if c["seed"] == seed and np.isclose(c["b"], b)
    )
    half = unit.curves["loss"].shape[1] // 2
    unit.curves["loss"][i, half:] = np.nan
    unit.final["loss"][i] = np.nan
    unit.diverged[i], unit.diverged_step[i] = True, int(unit.steps[half])
    return results


def test_a_diverged_student_counts_the_same_in_every_training_claim():
    """Diverged at b = 0.2 (in the window): every training claim reports it under b = 0.2, and
    each ranks it last — speed: b = 0.2 leaves the set of fastest b (0.3, the next, is still in
    the window); smoothness: its seed's difference is unbounded (inconclusive); final loss: it
    has the largest loss."""
    records = {c.id: c for c in _scorecard(_with_diverged(0.2))}
    training = (
        "low-delta-trains-fastest",
        "low-delta-trains-smoothest",
        "final-loss-rises-with-delta",
    )
    for claim_id in training:
        record = records[claim_id]
        assert record.diverged["b=0.2"] == (1, CONFIG.seeds_per_shift), claim_id
        assert sum(d for d, _ in record.diverged.values()) == 1, claim_id
        assert "diverged: b=0 0/6" in record.detail, claim_id
    fastest = records["low-delta-trains-fastest"]  # b = 0.2 is beaten: 0.3 is the fastest
    assert fastest.measured == 0.3 and fastest.ci_low > 0.2, fastest.detail
    assert records["low-delta-trains-smoothest"].verdict == "inconclusive"
    values = per_student(Training.read(_with_diverged(0.2)[Key.SWEEP_POSTLN_DEFAULT]))
    assert np.isinf(values["final_loss"]).sum() == 1 and values["diverged"].sum() == 1
    for record in records.values():  # Δ at init reads no trained student: nothing to count
        if record.id not in training:
            assert record.diverged == {}


def test_smoothness_records_its_verdict_without_the_tie_margin():
    """The tie margin was chosen after the first run: the record carries the verdict without it
    (a plain 'rougher outside than inside', bound 0)."""
    record = next(c for c in _scorecard(seedlike()) if c.id == "low-delta-trains-smoothest")
    (without,) = record.post_hoc
    assert "ROUGHNESS_TIE" in without.what and without.verdict == "holds"
    assert without.measured == pytest.approx(record.measured)
