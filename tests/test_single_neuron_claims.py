"""The single-neuron scorecard on synthetic runs: each claim holds where the seed's behaviour is
present and fails (or is inconclusive) where it is absent. No training: the stored results are
built by hand, so each counter-example changes exactly one behaviour."""

import dataclasses

import numpy as np
import pytest

from relulab.engine import STATE_CODES
from relulab.experiments.single_neuron import SingleNeuronConfig
from relulab.experiments.single_neuron.claims import bracket, claims, loss_levels
from relulab.store import UnitResult
from relulab.theory import sample_constant_fit_loss

CONFIG = SingleNeuronConfig(n_points=100, steps=1000, silu_steps=2000, early_steps=50)
X = np.linspace(-1, 1, CONFIG.n_points)
RELU = np.maximum(X, 0)
SLOPE, INTERCEPT = np.polyfit(X, RELU, 1)
LINE_LOSS = float(np.mean((SLOPE * X + INTERCEPT - RELU) ** 2))
CONSTANT_LOSS = sample_constant_fit_loss(X, RELU)
DEAD, BALANCED, HYPER = (STATE_CODES[k] for k in ("dead", "balanced", "hyperactive"))


def _condition(**overrides):
    base = {
        "w1": 1.0,
        "b1": 0.0,
        "w2": 1.0,
        "b2": 0.0,
        "lr": 0.01,
        "activation": "relu",
        "teacher": "relu",
        "teacher_bias": 0.0,
        "parameterisation": "standard",
    }
    return {**base, **overrides}


def _run(kind, records, leave_at=None):
    """Curves of one run: ``converged`` (balanced, loss → 1e-14), ``hyper`` or ``dead`` (stuck
    at the exact fit from record ``leave_at``, balanced before)."""
    leave_at = 0 if leave_at is None else leave_at
    t = np.arange(records)
    if kind == "converged":
        loss, state = np.maximum(np.exp(-t / 5.0), 1e-14), np.full(records, BALANCED)
    else:
        level = LINE_LOSS if kind == "hyper" else CONSTANT_LOSS
        loss = np.where(t < leave_at, 1.0, level)
        state = np.where(t < leave_at, BALANCED, HYPER if kind == "hyper" else DEAD)
    params = {"w1": 1.0, "b1": 0.0, "w2": 1.0, "b2": 0.0}
    if kind == "hyper":  # the least-squares line, neuron active on all of [-1, 1]
        params = {"w1": 1.0, "b1": 1.5, "w2": SLOPE, "b2": INTERCEPT - 1.5 * SLOPE}
    return loss, state.astype(float), params


def _unit(conditions, kinds, steps, leave_at=None, kink_b1=None):
    records = len(steps)
    runs = [_run(kind, records, leave_at) for kind in kinds]
    curves = {
        "loss": np.array([r[0] for r in runs]),
        "state": np.array([r[1] for r in runs]),
        "w1": np.ones((len(runs), records)),
        "b1": np.zeros((len(runs), records)) if kink_b1 is None else kink_b1,
    }
    final = {
        "loss": curves["loss"][:, -1],
        "state": curves["state"][:, -1],
        **{k: np.array([r[2][k] for r in runs]) for k in ("w1", "b1", "w2", "b2")},
    }
    n = len(conditions)
    return UnitResult(
        conditions, steps, curves, final, np.zeros(n, bool), np.full(n, -1), {"x": X.copy()}
    )


def seedlike():
    """Stored results in which every behaviour of seed 001 is present."""
    c = CONFIG
    steps = np.arange(0, c.steps + 1, c.record_every)
    records = len(steps)
    b1s = [-2.0, -1.5, 0.0, 1.5, 2.0]
    b2s = [0.0, -1.1, -1.2, -2.0]
    lrs = [0.01, 0.2, 0.4]
    kink = np.zeros((len(b2s), records))
    kink[1] = -np.linspace(0, 0.6, records)  # b2 = -1.1: the kink stops short of -1
    kink[2] = -np.linspace(0, 1.2, records)  # b2 = -1.2: past -1
    kink[3] = -np.linspace(0, 1.5, records)
    b2_fine = np.linspace(-2.0, -0.5, 16)  # boundary between -1.2 and -1.1; reparam lower
    lr_fine = np.geomspace(0.05, 1.0, 16)  # boundary between 0.2 and 0.4
    silu_steps = np.arange(0, c.silu_steps + 1, c.record_every)
    silu_loss = np.where(silu_steps < 1000, 0.02, 1e-14)
    silu = _unit(
        [_condition(b2=-2.0), _condition(b2=-2.0, activation="silu", teacher="silu")],
        ["hyper", "converged"],
        silu_steps,
    )
    silu.curves["loss"][1] = silu_loss
    early_steps = np.arange(c.early_steps + 1)
    early = _unit([_condition(b2=-1.0, lr=lr) for lr in lrs], ["converged"] * 3, early_steps)
    early.curves["loss"][0] = np.linspace(1.0, 0.4, len(early_steps))  # default lr: slow
    early.curves["loss"][2, :20] = np.linspace(1.0, 0.01, 20)  # lr 0.4: fast, then dead
    early.curves["loss"][2, 20:] = CONSTANT_LOSS
    early.curves["state"][2, 20:] = DEAD
    return {
        "b1-sweep": _unit(
            [_condition(b1=b) for b in b1s],
            ["dead", "dead", "converged", "hyper", "hyper"],
            steps,
        ),
        "b2-sweep": _unit(
            [_condition(b2=b) for b in b2s],
            ["converged", "converged", "hyper", "hyper"],
            steps,
            leave_at=10,
            kink_b1=-kink,
        ),
        "lr-sweep": _unit(
            [_condition(b2=-1.0, lr=lr) for lr in lrs],
            ["converged", "converged", "dead"],
            steps,
            leave_at=2,
        ),
        "b2-boundary": _unit(
            [_condition(b2=b) for b in b2_fine]
            + [_condition(b2=b, parameterisation="reparam") for b in b2_fine],
            ["converged" if b > -1.15 else "hyper" for b in b2_fine]
            + ["converged" if b > -1.6 else "hyper" for b in b2_fine],
            steps,
            leave_at=10,
        ),
        "lr-boundary": _unit(
            [
                _condition(b2=-1.0, lr=lr, parameterisation=p)
                for p in ("standard", "reparam")
                for lr in lr_fine
            ],
            ["converged" if lr < 0.3 else "dead" for lr in lr_fine] * 2,
            steps,
            leave_at=2,
        ),
        "teacher-bias": _unit(
            [_condition(teacher_bias=v) for v in (0.0, 1.0, 2.0)],
            ["converged", "hyper", "hyper"],
            steps,
            leave_at=10,
        ),
        "lr-early": early,
        "silu-vs-relu": silu,
        "map-b1-b2": _unit(
            [_condition(b1=0.0, b2=-3.0 - k / 100) for k in range(80)], ["hyper"] * 80, steps, 5
        ),
    }


def _by_id(results, config=CONFIG):
    return {claim.id: claim for claim in claims(results, config)}


def test_every_claim_holds_where_the_seeds_behaviour_is_present():
    verdicts = {k: c.verdict for k, c in _by_id(seedlike()).items()}
    assert set(verdicts.values()) == {"holds"}, verdicts
    assert len(verdicts) == 18
    assert all(c.scale for c in claims(seedlike(), CONFIG))


def test_convergence_reads_the_tail_median_not_the_final_value():
    results = seedlike()
    lr = results["lr-sweep"]
    lr.curves["loss"][1, -20:] = 1e-2  # stuck high over the tail ...
    lr.curves["loss"][1, -1] = 1e-12  # ... but one lucky final value
    lr.final["loss"][1] = 1e-12
    assert _by_id(results)["lr-0.2-converges"].verdict == "fails"
    assert loss_levels(lr)[1] == pytest.approx(1e-2)


def test_boundary_outside_the_seed_points_fails_and_a_chaotic_band_is_inconclusive():
    results = seedlike()
    fine = results["b2-boundary"]
    shift = [i for i, c in enumerate(fine.conditions) if c["parameterisation"] == "standard"]
    for i in shift:  # converge down to -1.5: the boundary is no longer between -1.2 and -1.1
        if fine.conditions[i]["b2"] > -1.5:
            fine.curves["loss"][i] = 1e-14
            fine.curves["state"][i] = BALANCED
    assert _by_id(results)["b2-boundary-between-seed-points"].verdict == "fails"
    results = seedlike()
    lr = results["lr-boundary"]
    flip = [
        i
        for i, c in enumerate(lr.conditions)
        if c["lr"] > 0.5 and c["parameterisation"] == "standard"
    ][0]
    lr.curves["loss"][flip] = 1e-14  # converges again above 0.4: the band straddles 0.4
    region = bracket(lr, "lr", False, "standard", CONFIG.converge_tol)
    assert region.low < 0.4 < region.high
    assert _by_id(results)["lr-boundary-between-seed-points"].verdict == "inconclusive"


def test_teacher_bias_that_leaves_the_neuron_balanced_fails():
    results = seedlike()
    unit = results["teacher-bias"]
    unit.curves["loss"][:] = 1e-14
    unit.curves["state"][:] = BALANCED
    unit.final["state"][:] = BALANCED
    assert _by_id(results)["teacher-bias-pushes-hyperactive"].verdict == "fails"


def test_neurons_that_come_back_make_irreversibility_fail():
    results = seedlike()
    states = results["map-b1-b2"].curves["state"]
    states[:40, -5:] = BALANCED  # half the leavers return
    claim = _by_id(results)["leaving-balanced-is-irreversible"]
    assert claim.verdict == "fails" and claim.n == 80 + 6 + 16


def test_a_stuck_line_off_the_least_squares_line_fails():
    results = seedlike()
    i = [k for k, c in enumerate(results["b2-sweep"].conditions) if c["b2"] == -1.2][0]
    results["b2-sweep"].final["b2"][i] += 0.05
    assert _by_id(results)["stuck-solution-is-least-squares-line"].verdict == "fails"


def test_lr_04_that_dies_at_once_or_never_fails():
    results = seedlike()
    early = results["lr-early"]
    early.curves["state"][2] = BALANCED  # never dies
    assert _by_id(results)["lr-0.4-falls-fast-then-dies"].verdict == "fails"
    results = seedlike()
    early = results["lr-early"]
    early.curves["loss"][2, :20] = 1.0  # dies without the loss falling first
    assert _by_id(results)["lr-0.4-falls-fast-then-dies"].verdict == "fails"


def test_reparam_boundary_not_below_the_standard_one_fails():
    results = seedlike()
    fine = results["b2-boundary"]
    standard = {
        c["b2"]: i for i, c in enumerate(fine.conditions) if c["parameterisation"] == "standard"
    }
    for i, c in enumerate(fine.conditions):
        if c["parameterisation"] == "reparam":  # the same outcomes as the standard neuron
            j = standard[c["b2"]]
            fine.curves["loss"][i], fine.curves["state"][i] = (
                fine.curves["loss"][j],
                fine.curves["state"][j],
            )
            fine.final["state"][i] = fine.final["state"][j]
    assert _by_id(results)["reparam-converges-from-lower-b2"].verdict == "fails"


def test_plateaus_away_from_the_exact_fits_fail():
    results = seedlike()
    results["b1-sweep"].curves["loss"][0] *= 1.2
    by_id = _by_id(results)
    assert by_id["b1-dead-plateau"].verdict == "fails"
    assert by_id["plateaus-are-exact-fits"].verdict == "fails"


def test_config_tolerances_are_the_criteria():
    strict = dataclasses.replace(CONFIG, fit_rtol=1e-12)
    results = seedlike()
    results["b2-sweep"].final["b2"][2] += 1e-6
    assert _by_id(results, strict)["stuck-solution-is-least-squares-line"].verdict == "fails"
