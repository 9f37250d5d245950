"""bias-after-relu: each claim's criterion against its positive control (seed 000's toy at
initialisation, simulated here independently of relulab's engine, and loss curves built as the
seed describes them from that simulation's Δ) and its negative control (a counter-example);
then the whole scorecard on synthetic stored results, each behaviour removed in turn. No
training anywhere in this file."""

import math

import numpy as np
import pytest
import torch

from relulab.analysis import argmin_ci, mean_ci
from relulab.experiments.bias_after_relu import BiasAfterReLUConfig, claims, fine_shifts
from relulab.experiments.bias_after_relu.readings import per_student, roughness
from relulab.experiments.bias_after_relu.units import Key
from relulab.experiments.claims import evaluate
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


def test_delta_u_shaped_negative(simulated):
    """The same toy under Kaiming-normal init dips at b ≈ 0.6, outside 0.2–0.3; and a Δ that
    only falls with b has no U."""
    kaiming = _on_seed_grid(simulated["kaiming_normal"])
    assert claims.U_SHAPED.judge(claims.u_shape(kaiming, CONFIG), CONFIG) == "fails"
    rng = np.random.default_rng(0)
    falling = 1.0 - SHIFTS + 0.01 * rng.standard_normal((NETWORKS, len(SHIFTS)))
    assert claims.U_SHAPED.judge(claims.u_shape(falling, CONFIG), CONFIG) == "fails"


# --- output-delta-exceeds-input ----------------------------------------------------------------
def test_output_delta_exceeds_input_positive(simulated):
    """Seed 000's toy with plain ReLU: the output's feature means deviate from 0 (Δ ≈ 6× the
    input's), as the seed's histograms of x and y show."""
    measured = mean_ci(simulated["relu"])
    assert claims.OUTPUT_EXCEEDS_INPUT.judge(measured, CONFIG) == "holds"


def test_output_delta_exceeds_input_negative(simulated):
    """The same networks with tanh, odd and zero-mean: the output's Δ stays at the input's."""
    measured = mean_ci(simulated["tanh"])
    assert claims.OUTPUT_EXCEEDS_INPUT.judge(measured, CONFIG) == "fails"


# --- zero-mean-activation-removes-delta --------------------------------------------------------
def test_zero_mean_activation_removes_delta_positive(simulated):
    """The seed's origin, in closed form: each hidden unit's ReLU centred by its own
    E[ReLU(z)] = ‖w_j‖/√(2π) leaves Δ at the input's level."""
    measured = mean_ci(simulated["centred"])
    assert claims.ZERO_MEAN.judge(measured, CONFIG) == "holds"


def test_zero_mean_activation_removes_delta_negative(simulated):
    """Without the centring (plain ReLU in the control's place) Δ stays high."""
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
    """Plain ReLU (b = 0) trains fastest and every shift slows training down."""
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
    """Every curve monotone (no b rougher than another: a tie), and curves roughest where Δ is
    lowest."""
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
    """Curves that train faster the larger Δ: the final loss falls with Δ."""
    delta = _on_seed_grid(simulated["torch_default"])[: CONFIG.seeds_per_shift]
    results = {Key.SWEEP_POSTLN_DEFAULT: _sweep(delta, lambda d: 2 + 5 * d, lambda d: 0)}
    assert claims.FINAL_LOSS.judge(_measured(claims.FINAL_LOSS, results), CONFIG) == "fails"


# --- analytic-shift-finds-the-minimum (beyond the seed) ----------------------------------------
def test_analytic_shift_finds_the_minimum_positive(simulated):
    """The simulated toy under PyTorch's default init: Δ is least at b ≈ 0.225 on the fine
    grid, within 0.05 of b* = 1/√(6π) = 0.230."""
    measured = argmin_ci(FINE, simulated["torch_default"])
    assert claims.ANALYTIC_SHIFT.judge(measured, CONFIG) == "holds"


def test_analytic_shift_finds_the_minimum_negative(simulated):
    """Networks whose minimum lies elsewhere (Kaiming-normal's, at ≈ 0.575)."""
    measured = argmin_ci(FINE, simulated["kaiming_normal"])
    assert claims.ANALYTIC_SHIFT.judge(measured, CONFIG) == "fails"


# --- kaiming-moves-the-minimum (beyond the seed) -----------------------------------------------
def test_kaiming_moves_the_minimum_positive(simulated):
    """The simulated toy under Kaiming-normal init: Δ is least near b* = 1/√π = 0.564."""
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
    final = loss[:, -1].copy()
    if shuffle_final:
        final = rng.permutation(final)
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
    half = per_student(unit, 16)
    assert np.allclose(half["final_loss"], unit.curves["loss"][:, 15])
