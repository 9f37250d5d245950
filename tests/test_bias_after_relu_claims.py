"""The bias-after-relu scorecard on synthetic results: each claim holds where seed 000's
behaviour is present, fails where it is absent, and is inconclusive where noise decides. No
training: the stored results are built by hand, one behaviour changed per counter-example."""

import numpy as np

from relulab.experiments.bias_after_relu import BiasAfterReLUConfig, claims, fine_shifts
from relulab.init import analytic_relu_shift
from relulab.store import UnitResult

CONFIG = BiasAfterReLUConfig(seeds_per_shift=6, init_seeds=12, steps=300, record_every=10)
SHIFTS = np.array(CONFIG.shifts)
B_STAR = {
    "postln-default": analytic_relu_shift(scheme="torch_default"),
    "postln-kaiming": analytic_relu_shift(scheme="kaiming_normal"),
}
INPUT_DELTA = 1 / np.sqrt(CONFIG.n_samples)


def _delta(b, centre, rng, noise=0.003):
    return 0.05 + np.abs(b - centre) + noise * rng.standard_normal()


def _init_unit(centres=B_STAR, noise=0.003, zero_mean=1.1 * INPUT_DELTA, profile=None):
    rng = np.random.default_rng(0)
    conditions, deltas = [], []
    for variant, centre in centres.items():
        for b in fine_shifts(CONFIG):
            for s in range(CONFIG.init_seeds):
                conditions.append({"variant": variant, "b": float(b), "seed": s})
                value = profile(b) if profile else _delta(b, centre, rng, noise)
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
            deltas.append(_delta(b, B_STAR["postln-default"], rng))
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
    results = {"sweep-postln-default": _sweep_unit(), "init-delta": _init_unit()}
    results.update(changes)
    return results


def _verdicts(results):
    return {claim.id: claim.verdict for claim in claims(results, CONFIG)}


def test_every_claim_holds_where_seed_000s_behaviour_is_present():
    scorecard = claims(seedlike(), CONFIG)
    assert {c.id: c.verdict for c in scorecard} == {c.id: "holds" for c in scorecard}
    assert len(scorecard) == 8
    for claim in scorecard:  # every claim says its scale, n and interval
        assert "N = 256 inputs (seed: not stated; read as 1000)" in claim.scale
        assert claim.n is not None and claim.ci_low <= claim.ci_high, claim.id
    fastest = next(c for c in scorecard if c.id == "low-delta-trains-fastest")
    assert "300 steps (seed: 1000)" in fastest.scale and "at step 150" in fastest.detail


def test_delta_without_a_dip_in_the_window_fails():
    falling = _init_unit(profile=lambda b: 1.0 - b)  # least Δ at the largest b
    verdicts = _verdicts(seedlike(**{"init-delta": falling}))
    assert verdicts["delta-u-shaped"] == "fails"
    assert verdicts["analytic-shift-finds-the-minimum"] == "fails"


def test_noise_that_hides_the_minimum_is_inconclusive():
    noisy = _init_unit(noise=0.5)
    assert _verdicts(seedlike(**{"init-delta": noisy}))["delta-u-shaped"] == "inconclusive"


def test_minimum_away_from_the_analytic_shift_fails():
    moved = _init_unit(centres={"postln-default": 0.4, "postln-kaiming": 0.2})
    verdicts = _verdicts(seedlike(**{"init-delta": moved}))
    assert verdicts["analytic-shift-finds-the-minimum"] == "fails"
    assert verdicts["kaiming-moves-the-minimum"] == "fails"


def test_output_at_the_inputs_level_fails_and_a_control_with_delta_fails():
    flat = _init_unit(profile=lambda b: INPUT_DELTA)
    assert _verdicts(seedlike(**{"init-delta": flat}))["output-delta-exceeds-input"] == "fails"
    shifted = _init_unit(zero_mean=0.28)  # the 'zero-mean' activation keeps ReLU's Δ
    verdict = _verdicts(seedlike(**{"init-delta": shifted}))["zero-mean-activation-removes-delta"]
    assert verdict == "fails"


def test_monotone_curves_everywhere_fail_smoothness_and_a_fast_end_fails_speed():
    monotone = _sweep_unit(rough_from=10.0)  # no b is rougher than the window: a tie fails
    assert _verdicts(seedlike(**{"sweep-postln-default": monotone}))[
        "low-delta-trains-smoothest"
    ] == ("fails")
    fast_end = _sweep_unit(best=0.9)
    assert _verdicts(seedlike(**{"sweep-postln-default": fast_end}))[
        "low-delta-trains-fastest"
    ] == ("fails")


def test_final_loss_unrelated_to_delta_is_not_a_positive_correlation():
    shuffled = _sweep_unit(shuffle_final=True)
    verdict = _verdicts(seedlike(**{"sweep-postln-default": shuffled}))[
        "final-loss-rises-with-delta"
    ]
    assert verdict in ("inconclusive", "fails")
