"""single-neuron (seed 001): each claim's criterion against its positive and its negative control,
each check against its construction, then the whole scorecard on stored results built by hand.

Positive controls feed the criterion data on which the seed's statement is true in the seed's
own sense: the seed's own numbers where its text gives them ("stuck around 0.02", "only reaches
0.1"), and otherwise an **independent simulation** of the seed's setup — the student
``w2·σ(w1·x + b1) + b2`` on 100 grid points of [−1, 1], MSE, full batch, float32, trained with a
plain torch autograd loop and a hand-written Adam step (PyTorch's formula), not relulab's batched
engine. The simulation reproduces the seed's figures: b2 = −1.1 converges, b2 = −1.2 sticks at
1/48, lr 0.2 converges, lr 0.4 dies at 5/48, SiLU sits on a saddle for ≈ 5000 steps and then
converges. The measurement under test (each spec's measure function) reads it as it reads a run.
Negative controls realise each claim's ``counterexample`` through the experiment itself: the
study's own unit function (``units.train_conditions``, relulab's batched engine) trains the
counter-setting — a learning rate, an init, a smaller push, the reparameterised neuron, a
horizon — beside the seed's own setting at the same small size (2000 steps), and the claim's
spec judges both: the counter-setting fails, the seed's setting holds (issue 42). Synthetic
numbers fed to a criterion stay only as extra assertions.

Three statements are checks, not claims (``check=``: identities of the setup); they keep their
tests, and the dead neuron's identity is shown on the engine too.

A criterion that fails its honest positive control is marked ``xfail(strict=True)`` with the
issue that fixes it (none since issue 29, which changed the irreversibility criterion).
"""

import copy
import dataclasses

import numpy as np
import pytest
import torch

from relulab.analysis import Estimate, boundary_bracket, plateau_level, proportion_ci
from relulab.engine import STATE_CODES
from relulab.experiments.claims import evaluate
from relulab.experiments.context import RunContext
from relulab.experiments.single_neuron import PRESETS, SingleNeuronConfig, units
from relulab.experiments.single_neuron.claims import CLAIMS, bracket, loss_levels, outcomes
from relulab.experiments.single_neuron.observations import (
    biases,
    learning_rate,
    plateaus,
    questions,
    silu,
)
from relulab.experiments.single_neuron.observations import (
    irreversibility as irreversal,
)
from relulab.experiments.single_neuron.units import Key, Neurons
from relulab.store import UnitResult
from relulab.theory import sample_constant_fit_loss, sample_linear_fit_loss

QUICK = PRESETS["quick"]
SILU_STEPS = 10_000  # SiLU converges at step ≈ 6400; the saddle criterion scales with the run
SILU_CONFIG = dataclasses.replace(QUICK, silu_steps=SILU_STEPS)
MAP_EVERY = QUICK.grid_record_every // QUICK.record_every  # the maps' records, as the study's


# ---------------------------------------------------------------------------------------------
# The independent simulation of the seed's setup
# ---------------------------------------------------------------------------------------------
def _condition(**overrides):
    base = {
        "w1": 1.0,
        "b1": 0.0,
        "w2": 1.0,
        "b2": 0.0,
        "lr": QUICK.lr,
        "activation": "relu",
        "teacher": "relu",
        "teacher_bias": 0.0,
        "parameterisation": "standard",
    }
    return {**base, **overrides}


def _teacher(x, condition):
    shape = torch.nn.functional.silu if condition["teacher"] == "silu" else torch.relu
    return shape(x) + condition["teacher_bias"]


def simulate(conditions, steps, record_every, n_points=100):
    """Train every condition (one activation and parameterisation for all) with autograd and
    Adam (β = 0.9, 0.999, ε = 1e-8, each network its own lr); record the loss, the parameters and
    the neuron's state (from the pre-activation at x = ±1) every ``record_every`` steps."""
    x = torch.linspace(-1.0, 1.0, n_points)
    theta = torch.tensor([[c[k] for k in ("w1", "b1", "w2", "b2")] for c in conditions])
    lr = torch.tensor([c["lr"] for c in conditions])[:, None]
    y = torch.stack([_teacher(x, c) for c in conditions])
    activation = torch.nn.functional.silu if conditions[0]["activation"] == "silu" else torch.relu
    reparam = conditions[0]["parameterisation"] == "reparam"

    def pre(th, points):
        return th[:, :1] * (points + th[:, 1:2]) if reparam else th[:, :1] * points + th[:, 1:2]

    m, v = torch.zeros_like(theta), torch.zeros_like(theta)
    losses, params = [], []
    for t in range(steps + 1):
        theta.requires_grad_(True)
        loss = ((theta[:, 2:3] * activation(pre(theta, x)) + theta[:, 3:] - y) ** 2).mean(1)
        if t % record_every == 0:
            losses.append(loss.detach())
            params.append(theta.detach().clone())
        if t == steps:
            break
        (grad,) = torch.autograd.grad(loss.sum(), theta)
        with torch.no_grad():
            m.lerp_(grad, 0.1)
            v.mul_(0.999).addcmul_(grad, grad, value=0.001)
            step = (m / (1 - 0.9 ** (t + 1))) / ((v / (1 - 0.999 ** (t + 1))).sqrt() + 1e-8)
            theta = theta.detach() - lr * step
    ends = torch.stack([pre(p, torch.tensor([-1.0, 1.0])) for p in params], 2)  # (S, 2, T)
    state = np.where((ends > 0).all(1), 2, np.where((ends <= 0).all(1), 0, 1)).astype(float)
    curves = {"loss": torch.stack(losses, 1).double().numpy(), "state": state}
    trajectory = torch.stack(params, 2).double().numpy()
    curves.update({k: trajectory[:, j] for j, k in enumerate(("w1", "b1", "w2", "b2"))})
    n = len(conditions)
    return UnitResult(
        list(conditions),
        np.arange(0, steps + 1, record_every),
        curves,
        {k: curve[:, -1].copy() for k, curve in curves.items()},
        np.zeros(n, bool),
        np.full(n, -1),
        {"x": x.double().numpy()},
    )


def _take(result, indices, every=1):
    """The networks ``indices`` of a simulated batch, every ``every``-th record."""
    curves = {k: c[indices][:, ::every] for k, c in result.curves.items()}
    return UnitResult(
        [result.conditions[i] for i in indices],
        result.steps[::every],
        curves,
        {k: c[:, -1].copy() for k, c in curves.items()},
        result.diverged[indices],
        result.diverged_step[indices],
        result.arrays,
    )


def _fine(key, values, parameterisation, **fixed):
    return [
        _condition(**fixed, **{key: float(v)}, parameterisation=parameterisation) for v in values
    ]


def _seed_units():
    """The conditions of the quick preset's sweeps, fine sweeps and (b2, lr) map."""
    c = QUICK
    b2_fine = np.linspace(*c.b2_boundary_range, c.boundary_points)
    lr_fine = np.geomspace(*c.lr_boundary_range, c.boundary_points)
    b2_axis = np.linspace(*c.grid_b2_range, c.grid_size)
    lr_axis = np.geomspace(*c.grid_lr_range, c.grid_size)
    standard = {
        Key.B1_SWEEP: [_condition(b1=v) for v in c.b1_sweep],
        Key.B2_SWEEP: [_condition(b2=v) for v in c.b2_sweep],
        Key.LR_SWEEP: [_condition(b2=-1.0, lr=v) for v in c.lr_sweep],
        Key.B2_BOUNDARY: _fine("b2", b2_fine, "standard"),
        Key.LR_BOUNDARY: _fine("lr", lr_fine, "standard", b2=-1.0),
        Key.TEACHER_BIAS: [_condition(teacher_bias=v) for v in c.teacher_bias_sweep],
        Key.MAP_B2_LR: [_condition(b2=float(b), lr=float(r)) for r in lr_axis for b in b2_axis],
    }
    reparam = {
        Key.B2_BOUNDARY: _fine("b2", b2_fine, "reparam"),
        Key.LR_BOUNDARY: _fine("lr", lr_fine, "reparam", b2=-1.0),
    }
    return standard, reparam


def _train_units(units, steps, record_every):
    """Train the units' conditions as one batch and split them back into units."""
    batch = simulate([c for conditions in units.values() for c in conditions], steps, record_every)
    out, start = {}, 0
    for key, conditions in units.items():
        every = MAP_EVERY if key == Key.MAP_B2_LR else 1
        out[key] = _take(batch, list(range(start, start + len(conditions))), every)
        start += len(conditions)
    return out


def _join(first, second):
    """Two simulated units as one (the standard and the reparameterised halves of a sweep)."""
    return UnitResult(
        first.conditions + second.conditions,
        first.steps,
        {k: np.concatenate([first.curves[k], second.curves[k]]) for k in first.curves},
        {k: np.concatenate([first.final[k], second.final[k]]) for k in first.final},
        np.concatenate([first.diverged, second.diverged]),
        np.concatenate([first.diverged_step, second.diverged_step]),
        first.arrays,
    )


@pytest.fixture(scope="module")
def sim():
    """The seed's setup, simulated independently: every unit the claims read (the (b2, lr) map
    standard only), ≈ 10 s of CPU."""
    standard, reparam = _seed_units()
    results = _train_units(standard, QUICK.steps, QUICK.record_every)
    reparam = _train_units(reparam, QUICK.steps, QUICK.record_every)
    for key in reparam:
        results[key] = _join(results[key], reparam[key])
    early = [_condition(b2=-1.0, lr=lr) for lr in (QUICK.lr, 0.2, 0.4)]
    results[Key.LR_EARLY] = simulate(early, QUICK.early_steps, 1)
    relu = simulate([_condition(b2=-2.0)], SILU_STEPS, QUICK.record_every)
    silus = [_condition(b2=b2, activation="silu", teacher="silu") for b2 in (-2.0, 0.0)]
    smooth = simulate(silus, SILU_STEPS, QUICK.record_every)
    results[Key.SILU_VS_RELU] = _join(relu, _take(smooth, [0]))
    results["silu from b2 = 0"] = _take(smooth, [1])  # a negative control, not a study unit
    return results


def _measured(spec, results, config=QUICK):
    return spec.measure(results, config).measured


def _judged(spec, results, config=QUICK):
    return spec.judge(_measured(spec, results, config), config)


def _index(result, **match):
    return next(
        i for i, c in enumerate(result.conditions) if all(c[k] == v for k, v in match.items())
    )


# ---------------------------------------------------------------------------------------------
# The counter-settings, trained by the study's own unit function (relulab's engine)
# ---------------------------------------------------------------------------------------------
COUNTER = dataclasses.replace(QUICK, steps=2000, silu_steps=2000)
CONTEXT = RunContext(torch.device("cpu"), torch.float32, seed=0, quiet=True)
B2_FINE = np.round(np.linspace(-2.0, -0.6, 15), 6)  # steps of 0.1 over both boundaries
LR_FINE = np.round(np.arange(0.05, 1.0001, 0.05), 6)  # through the seed's 0.2 and 0.4
SEED_LRS = (QUICK.lr, 0.2, 0.4)  # the default lr and Observation 2's two


def _c(**overrides):
    return units._condition(COUNTER, **overrides)


def _both(conditions):
    return [{**c, "parameterisation": p} for p in ("standard", "reparam") for c in conditions]


def _counter_groups():
    """Each claim's counter-setting beside the seed's own setting, by name (2000 steps)."""
    teacher = QUICK.teacher_bias_sweep
    return {
        "b1 seed": [_c(b1=v) for v in (1.2, 1.5, 2.0)],
        "b1 lr 0.1": [_c(b1=v, lr=0.1) for v in (1.2, 1.5, 2.0)],
        "b1 dead": [_c(b1=v) for v in (-1.2, -1.5, -2.0)],
        "b2 seed": [_c(b2=v) for v in (-1.1, -1.2)],
        "b2 w1 0.5": [_c(b2=v, w1=0.5) for v in (-1.1, -1.2)],
        "b2 reparam": [_c(b2=-1.2, parameterisation="reparam")],
        "b2 fine seed": _both([_c(b2=float(v)) for v in B2_FINE]),
        "b2 fine w1 0.5": [_c(b2=float(v), w1=0.5) for v in B2_FINE],
        "b2 fine w1 2": _both([_c(b2=float(v), w1=2.0) for v in B2_FINE]),
        "teacher seed": [_c(teacher_bias=v) for v in teacher],
        "teacher mirrored": [_c(b2=-v) for v in teacher],
        "teacher lr 0.2 w1 2": [_c(teacher_bias=v, lr=0.2, w1=2.0) for v in teacher],
        "lr seed": [_c(b2=-1.0, lr=v) for v in SEED_LRS],
        "lr w2 4": [_c(b2=-1.0, lr=v, w2=4.0) for v in SEED_LRS],
        "lr b2 -0.5": [_c(b2=-0.5, lr=v) for v in SEED_LRS],
        "lr fine seed": [_c(b2=-1.0, lr=float(v)) for v in LR_FINE],
        "lr fine w2 4": [_c(b2=-1.0, lr=float(v), w2=4.0) for v in LR_FINE],
        "lr fine b2 -0.5": [_c(b2=-0.5, lr=float(v)) for v in LR_FINE],
        "map lr 0.2": [_c(b2=float(v), lr=0.2) for v in np.linspace(-2.5, -1.8, 8)],
        "hyper b2 0.65": [_c(b1=v, b2=0.65) for v in (1.25, 1.5, 1.75, 2.0)],
        "hyper b2 0": [_c(b1=v) for v in (1.25, 1.5, 1.75, 2.0)],
        "relu b2 -2": [_c(b2=-2.0)],
        "relu b2 -2 lr 0.2": [_c(b2=-2.0, lr=0.2)],
        "silu": [_c(b2=v, activation="silu", teacher="silu") for v in (-2.0, 0.0)],
    }


def _early_groups():
    """The lr sweep's first steps, recorded at every step, at the seed's push and a smaller one."""
    return {
        "early seed": [_c(b2=-1.0, lr=v) for v in SEED_LRS],
        "early b2 -0.5": [_c(b2=-0.5, lr=v) for v in SEED_LRS],
    }


def _train_groups(groups, steps, record_every):
    """One call of the study's unit function for every group, split back into groups."""
    conditions = [c for group in groups.values() for c in group]
    trained = units.train_conditions(
        conditions, steps, record_every, COUNTER, CONTEXT, "counter-settings"
    )
    out, start = {}, 0
    for name, group in groups.items():
        out[name] = _take(trained, list(range(start, start + len(group))))
        start += len(group)
    return out


@pytest.fixture(scope="module")
def counter():
    """Every counter-setting and its seed pair, trained once by the engine (≈ 5 s of CPU)."""
    trained = _train_groups(_counter_groups(), COUNTER.steps, COUNTER.record_every)
    trained.update(_train_groups(_early_groups(), COUNTER.early_steps, 1))
    return trained


def _silu_unit(counter, relu, silu_index):
    """A ``silu-vs-relu`` unit: one ReLU run and one of the SiLU runs (b2 = −2, 0)."""
    return _join(counter[relu], _take(counter["silu"], [silu_index]))


def _verdicts(spec, counter_units, seed_units, config=COUNTER):
    """The spec's verdict on the counter-setting's units and on the seed's, same size."""
    assert spec.kind == "claim" and spec.counterexample
    return spec.evaluate(counter_units, config).verdict, spec.evaluate(seed_units, config).verdict


# ---------------------------------------------------------------------------------------------
# Observation 0: b1-hyperactive-plateau, b1-dead-plateau
# ---------------------------------------------------------------------------------------------
def _seed_plateau(value):
    """The seed's own number for a stuck level, every run in the plateau's state."""
    return {"highest": value, "lowest": value, "other state": 0.0}


def test_b1_hyperactive_plateau_positive(sim):
    """Simulated b1 ∈ {1.2, 1.5, 2} at b2 = 0 all end hyperactive at 0.02125 (the least-squares
    line on 100 grid points); the seed's own reading: 'stuck around 0.02'."""
    assert biases.B1_HYPERACTIVE.judge(_measured(biases.B1_HYPERACTIVE, sim), QUICK) == "holds"
    assert biases.B1_HYPERACTIVE.judge(_seed_plateau(0.02), QUICK) == "holds"


def test_b1_hyperactive_plateau_negative(sim, counter):
    """The counterexample, on the engine: at Adam lr 0.1 the neurons started hyperactive at
    b1 = 1.2 and 1.5 leave that state and converge (b1 = 2 stays); at the seed's lr 0.01 the
    same three stick. Extra: the simulated dead runs are not the hyperactive plateau."""
    assert _verdicts(
        biases.B1_HYPERACTIVE,
        {Key.B1_SWEEP: counter["b1 lr 0.1"]},
        {Key.B1_SWEEP: counter["b1 seed"]},
    ) == ("fails", "holds")
    b1s = Neurons.read(sim[Key.B1_SWEEP])
    dead = [i for i, c in enumerate(b1s.conditions) if c["b1"] < -1]
    reading = plateaus.stuck_reading(plateaus.HYPERACTIVE, b1s, dead, str, QUICK)
    assert biases.B1_HYPERACTIVE.judge(reading.measured, QUICK) == "fails"


def test_b1_dead_plateau_positive(sim):
    """Simulated b1 ∈ {−1.2, −1.5, −2} at b2 = 0 all end dead at 0.10626 (ReLU's variance on
    the grid); the seed's own reading: 'stuck around 0.1'."""
    assert biases.B1_DEAD.judge(_measured(biases.B1_DEAD, sim), QUICK) == "holds"
    assert biases.B1_DEAD.judge(_seed_plateau(0.1), QUICK) == "holds"


def test_b1_dead_plateau_negative(sim):
    """A check's criterion still separates: the simulated hyperactive runs (b1 > 1) are not the
    dead plateau."""
    b1s = Neurons.read(sim[Key.B1_SWEEP])
    hyper = [i for i, c in enumerate(b1s.conditions) if c["b1"] > 1]
    reading = plateaus.stuck_reading(plateaus.DEAD, b1s, hyper, str, QUICK)
    assert biases.B1_DEAD.judge(reading.measured, QUICK) == "fails"


# ---------------------------------------------------------------------------------------------
# Observation 1
# ---------------------------------------------------------------------------------------------
def test_b2_minus_1_1_converges_positive(sim):
    """Simulated b1 = 0, b2 = −1.1: the loss level is ≈ 1e-15 (the seed's figure 'loss.png')."""
    measured = _measured(biases.B2_CONVERGES, sim)
    assert measured < 1e-12
    assert biases.B2_CONVERGES.judge(measured, QUICK) == "holds"


def test_b2_minus_1_1_converges_negative(sim, counter):
    """The counterexample, on the engine: with the student's w1 started at 0.5 the b2 = −1.1
    neuron ends hyperactive at 1/48; started at the seed's w1 = 1 it converges. Extra: the
    simulated b2 = −1.2 run's level (0.021) is not convergence."""
    assert _verdicts(
        biases.B2_CONVERGES,
        {Key.B2_SWEEP: counter["b2 w1 0.5"], Key.B2_BOUNDARY: counter["b2 fine w1 0.5"]},
        {Key.B2_SWEEP: counter["b2 seed"], Key.B2_BOUNDARY: counter["b2 fine seed"]},
    ) == ("fails", "holds")
    b2s = sim[Key.B2_SWEEP]
    stuck = plateau_level(b2s.curves["loss"][_index(b2s, b2=-1.2)])
    assert biases.B2_CONVERGES.judge(stuck, QUICK) == "fails"


def test_b2_minus_1_2_sticks_positive(sim):
    """Simulated b2 = −1.2 ends hyperactive at 0.02125; the seed: 'stuck around 0.02'."""
    assert biases.B2_STICKS.judge(_measured(biases.B2_STICKS, sim), QUICK) == "holds"
    assert biases.B2_STICKS.judge(_seed_plateau(0.02), QUICK) == "holds"


def test_b2_minus_1_2_sticks_negative(sim, counter):
    """The counterexample, on the engine: the reparameterised neuron w·(x + b′) at b2 = −1.2
    converges; the seed's neuron sticks. Extra: the simulated b2 = −1.1 run is not stuck."""
    assert _verdicts(
        biases.B2_STICKS, {Key.B2_SWEEP: counter["b2 reparam"]}, {Key.B2_SWEEP: counter["b2 seed"]}
    ) == ("fails", "holds")
    b2s = Neurons.read(sim[Key.B2_SWEEP])
    reading = plateaus.stuck_reading(plateaus.HYPERACTIVE, b2s, [_index(b2s, b2=-1.1)], str, QUICK)
    assert biases.B2_STICKS.judge(reading.measured, QUICK) == "fails"


def test_b2_boundary_between_seed_points_positive(sim):
    """The simulated fine b2 sweep (61 points on [−2, −0.5], b1 = 0) changes outcome once,
    between −1.2 and −1.175; and the seed's own two points (−1.2 sticks, −1.1 converges) bracket
    a transition region [−1.2, −1.1]."""
    assert biases.B2_BOUNDARY.judge(_measured(biases.B2_BOUNDARY, sim), QUICK) == "holds"
    _, low, high, _ = boundary_bracket(np.array([-1.1, -1.2]), np.array([True, False]))
    assert biases.B2_BOUNDARY.judge(Estimate(-1.15, low, high, 2, 1.0), QUICK) == "holds"


def test_b2_boundary_between_seed_points_negative(sim, counter):
    """The counterexample, on the engine: with w1 started at 0.5 the fine b2 sweep changes
    outcome between −0.9 and −0.8, above −1.1; at the seed's w1 = 1 between −1.2 and −1.1.
    Extra: the simulated reparameterised neuron's region (≈ −1.54) is not there either."""
    assert _verdicts(
        biases.B2_BOUNDARY,
        {Key.B2_BOUNDARY: counter["b2 fine w1 0.5"]},
        {Key.B2_BOUNDARY: counter["b2 fine seed"]},
    ) == ("fails", "holds")
    region = biases.b2_region(sim, QUICK, "reparam")
    assert region.high < -1.2
    assert biases.B2_BOUNDARY.judge(region, QUICK) == "fails"


def test_kink_drifts_left_positive(sim):
    """In the simulation the kink −b1/w1 starts at 0; for b2 = −1.2 it passes −1 (≈ −1.09), for
    b2 = −1.1 it stops at ≈ −0.61 — the seed's 'moves left … when it moves past −1'."""
    assert biases.KINK.judge(_measured(biases.KINK, sim), QUICK) == "holds"


def test_kink_drifts_left_negative(sim, counter):
    """The counterexample, on the engine: with w1 started at 0.5 the b2 = −1.1 kink passes −1
    too; at w1 = 1 it stops short. Extra: the two simulated runs swapped, and a kink that does
    not start at 0, fail."""
    assert _verdicts(
        biases.KINK, {Key.B2_SWEEP: counter["b2 w1 0.5"]}, {Key.B2_SWEEP: counter["b2 seed"]}
    ) == ("fails", "holds")
    measured = _measured(biases.KINK, sim)
    swapped = {**measured, "b2 = -1.2": measured["b2 = -1.1"], "b2 = -1.1": measured["b2 = -1.2"]}
    assert biases.KINK.judge(swapped, QUICK) == "fails"
    assert biases.KINK.judge({**measured, "start": 0.5}, QUICK) == "fails"  # b1 = −0.5


def test_teacher_bias_pushes_hyperactive_positive(sim):
    """Simulated teacher ReLU(x) + c, student b1 = b2 = 0: c ≤ 1 converges, every c ≥ 1.5 ends
    hyperactive — the seed's 'if we increase the bias of the target function, the neuron also
    transitions from balanced to hyperactive'."""
    measured = _measured(biases.TEACHER_BIAS, sim)
    assert measured["threshold"] == 1.5
    assert biases.TEACHER_BIAS.judge(measured, QUICK) == "holds"


def test_teacher_bias_pushes_hyperactive_negative(counter):
    """The counterexample, on the engine: at Adam lr 0.2 with w1 started at 2 every target up to
    ReLU(x) + 3 is learnt, none ends hyperactive; at the seed's setting c ≥ 1.5 ends
    hyperactive. Extra: no threshold, or hyperactive already at c = 0, fail."""
    assert _verdicts(
        biases.TEACHER_BIAS,
        {Key.TEACHER_BIAS: counter["teacher lr 0.2 w1 2"]},
        {Key.TEACHER_BIAS: counter["teacher seed"]},
    ) == ("fails", "holds")
    never = {"threshold": float("nan"), "at zero": 0.0, "start": 0.0}
    assert biases.TEACHER_BIAS.judge(never, QUICK) == "fails"
    always = {"threshold": 0.0, "at zero": 1.0, "start": 0.0}
    assert biases.TEACHER_BIAS.judge(always, QUICK) == "fails"


def test_stuck_solution_is_least_squares_line_positive(sim):
    """The simulated b2 = −1.2 student ends hyperactive with slope w2·w1 and intercept
    w2·b1 + b2 equal to np.polyfit's line through ReLU (0.5, 0.2525) to < 1e-6 — the seed's
    figure 'large_b2_init'."""
    measured = _measured(biases.LEAST_SQUARES, sim)
    assert measured["deviation"] < 1e-5
    assert biases.LEAST_SQUARES.judge(measured, QUICK) == "holds"


def test_stuck_solution_is_least_squares_line_negative(sim):
    """A check's criterion still separates: a student that fits ReLU exactly (the simulated
    b2 = −1.1 run: slope 1, intercept 0, balanced) put in the b2 = −1.2 slot is not the
    least-squares line."""
    b2s = copy.deepcopy(sim[Key.B2_SWEEP])
    stuck, fine = _index(b2s, b2=-1.2), _index(b2s, b2=-1.1)
    for key in ("w1", "b1", "w2", "b2", "state"):
        b2s.final[key][stuck] = b2s.final[key][fine]
    measured = biases.LEAST_SQUARES.measure({Key.B2_SWEEP: b2s}, QUICK).measured
    assert biases.LEAST_SQUARES.judge(measured, QUICK) == "fails"


def test_the_checks_are_identities_of_the_setup(counter):
    """What makes b1-dead-plateau, stuck-solution-is-least-squares-line and
    plateaus-are-exact-fits checks, on the engine: a dead ReLU neuron's w1, b1 and w2 never move
    (their gradients are exactly 0) and its loss is the constant fit's; a neuron stuck
    hyperactive ends on the least-squares line."""
    assert {spec.id for spec in CLAIMS if spec.kind == "check"} == {
        "b1-dead-plateau",
        "stuck-solution-is-least-squares-line",
        "plateaus-are-exact-fits",
    }
    dead = Neurons.read(counter["b1 dead"])
    assert (dead.state == STATE_CODES["dead"]).all()
    for frozen in (dead.w1, dead.b1, dead.w2):
        assert (frozen == frozen[:, :1]).all()
    exact = sample_constant_fit_loss(dead.x, np.maximum(dead.x, 0))
    assert np.allclose(loss_levels(dead), exact, rtol=1e-5)
    measured = biases.LEAST_SQUARES.measure({Key.B2_SWEEP: counter["b2 seed"]}, COUNTER).measured
    assert measured["deviation"] < 1e-5 and measured["other state"] == 0


def test_teacher_bias_is_the_b2_sweep_mirrored(counter):
    """The loss depends on b2 − c only: a target raised by c trains exactly as the student
    started at b2 = −c (same w1, b1, w2, same outcome) — teacher-bias-pushes-hyperactive
    re-reads Observation 1's b2 sweep rather than adding independent evidence."""
    raised, mirrored = (
        Neurons.read(counter["teacher seed"]),
        Neurons.read(counter["teacher mirrored"]),
    )
    assert (
        outcomes(raised, COUNTER.converge_tol) == outcomes(mirrored, COUNTER.converge_tol)
    ).all()
    for a, b in ((raised.w1, mirrored.w1), (raised.b1, mirrored.b1), (raised.w2, mirrored.w2)):
        assert np.allclose(a[:, :50], b[:, :50], atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Observation 2 and the Takeaway
# ---------------------------------------------------------------------------------------------
def test_lr_0_2_converges_positive(sim):
    """Simulated b1 = 0, b2 = −1, lr 0.2: the loss reaches ≈ 1e-8 or below and stays there —
    'the model's loss can be optimized to zero' — read at its lowest level and, at this
    horizon, at the end alike (the post-hoc-free reading)."""
    assert _judged(learning_rate.LR_CONVERGES, sim) == "holds"
    claim = learning_rate.LR_CONVERGES.evaluate(sim, QUICK)
    assert [p.verdict for p in claim.post_hoc] == ["holds"]


def test_lr_0_2_converges_negative(sim, counter):
    """The counterexample, on the engine: with the student's w2 started at 4 the lr 0.2 neuron
    dies (5/48); at the seed's w2 = 1 it converges. Extra: the simulated lr 0.4 level (0.106)
    is not convergence."""
    assert _verdicts(
        learning_rate.LR_CONVERGES,
        {Key.LR_SWEEP: counter["lr w2 4"], Key.LR_BOUNDARY: counter["lr fine w2 4"]},
        {Key.LR_SWEEP: counter["lr seed"], Key.LR_BOUNDARY: counter["lr fine seed"]},
    ) == ("fails", "holds")
    lrs = sim[Key.LR_SWEEP]
    dead = plateau_level(lrs.curves["loss"][_index(lrs, lr=0.4)])
    assert learning_rate.LR_CONVERGES.judge(dead, QUICK) == "fails"
    reached = plateaus.converges_reading(
        Neurons.read(lrs), {"lr": 0.4}, Estimate(0.3, 0.2, 0.4, 2, 1.0), (0.2, 0.4), QUICK
    )
    assert learning_rate.LR_CONVERGES.judge(reached.measured, QUICK) == "fails"  # never reached


def test_lr_0_4_kills_positive(sim):
    """Simulated lr 0.4 ends dead at 0.10626; the seed: 'the loss only reaches 0.1'."""
    assert learning_rate.LR_KILLS.judge(_measured(learning_rate.LR_KILLS, sim), QUICK) == "holds"
    assert learning_rate.LR_KILLS.judge(_seed_plateau(0.1), QUICK) == "holds"


def test_lr_0_4_kills_negative(sim, counter):
    """The counterexample, on the engine: pushed less, from b2 = −0.5, the lr 0.4 neuron
    converges; from the seed's b2 = −1 it dies. Extra: the simulated lr 0.2 run is not
    killed."""
    assert _verdicts(
        learning_rate.LR_KILLS,
        {Key.LR_SWEEP: counter["lr b2 -0.5"]},
        {Key.LR_SWEEP: counter["lr seed"]},
    ) == ("fails", "holds")
    lrs = Neurons.read(sim[Key.LR_SWEEP])
    reading = plateaus.stuck_reading(plateaus.DEAD, lrs, [_index(lrs, lr=0.2)], str, QUICK)
    assert learning_rate.LR_KILLS.judge(reading.measured, QUICK) == "fails"


def test_lr_boundary_between_seed_points_positive(sim):
    """The simulated fine lr sweep (61 log-spaced points on [0.05, 1], b2 = −1): the runs whose
    loss reached zero and those killed before it did change over once, inside [0.2, 0.4]; read
    at the end instead, its chaotic band of runs thrown off after converging lies inside too
    (≈ [0.21, 0.39]); and the seed's own two points (0.2 converges, 0.4 kills) bracket
    [0.2, 0.4]."""
    assert _judged(learning_rate.LR_BOUNDARY, sim) == "holds"
    claim = learning_rate.LR_BOUNDARY.evaluate(sim, QUICK)
    assert claim.ci_low > 0.3 and [p.verdict for p in claim.post_hoc] == ["holds"], claim.detail
    _, low, high, _ = boundary_bracket(np.array([0.2, 0.4]), np.array([True, False]))
    assert learning_rate.LR_BOUNDARY.judge(Estimate(0.3, low, high, 2, 1.0), QUICK) == "holds"


def test_lr_boundary_between_seed_points_negative(counter):
    """The counterexample, on the engine: pushed from b2 = −0.5 the fine lr sweep changes
    outcome between lr 0.45 and 0.5, above 0.4; from b2 = −1 between 0.35 and 0.4. Extra: a
    neuron converging up to lr 0.6 fails."""
    assert _verdicts(
        learning_rate.LR_BOUNDARY,
        {Key.LR_BOUNDARY: counter["lr fine b2 -0.5"]},
        {Key.LR_BOUNDARY: counter["lr fine seed"]},
    ) == ("fails", "holds")
    lrs = np.geomspace(0.05, 1.0, 31)
    _, low, high, _ = boundary_bracket(lrs, lrs < 0.65)
    assert learning_rate.LR_BOUNDARY.judge(Estimate(0.65, low, high, 31, 1.0), QUICK) == "fails"


def test_lr_0_4_falls_fast_then_dies_positive(sim):
    """Simulated at every step: at lr 0.4 the loss falls from 1 to ≈ 0.006 within a few steps,
    far below both lr 0.01's loss then and the 0.106 it ends at, and the neuron is dead from
    step ≈ 19 to the end — the seed's 'the loss may decrease quickly, but at the cost of killing
    some neurons'."""
    measured = _measured(learning_rate.FALLS_THEN_DIES, sim)
    assert learning_rate.FALLS_THEN_DIES.judge(measured, QUICK) == "holds"


def test_lr_0_4_falls_fast_then_dies_negative(sim, counter):
    """The counterexample, on the engine: pushed from b2 = −0.5, at lr 0.4 the loss falls fast
    and the neuron never dies; from b2 = −1 it falls, then dies. Extra: the simulated lr 0.4
    record with its loss held at 1 until it dies, and one that never dies, fail."""
    assert _verdicts(
        learning_rate.FALLS_THEN_DIES,
        {Key.LR_EARLY: counter["early b2 -0.5"], Key.LR_SWEEP: counter["lr b2 -0.5"]},
        {Key.LR_EARLY: counter["early seed"], Key.LR_SWEEP: counter["lr seed"]},
    ) == ("fails", "holds")
    results = {k: copy.deepcopy(sim[k]) for k in (Key.LR_EARLY, Key.LR_SWEEP)}
    early = results[Key.LR_EARLY]
    fast = _index(early, lr=0.4)
    t_d = learning_rate.death_step(early.curves["state"][fast].astype(int))
    early.curves["loss"][fast, :t_d] = 1.0
    assert _judged(learning_rate.FALLS_THEN_DIES, results) == "fails"
    results = {k: copy.deepcopy(sim[k]) for k in (Key.LR_EARLY, Key.LR_SWEEP)}
    early = results[Key.LR_EARLY]
    early.curves["state"][fast] = early.curves["state"][_index(early, lr=0.2)]
    assert _judged(learning_rate.FALLS_THEN_DIES, results) == "fails"


def _map_returns(result):
    """Per run of a (b2, lr) map that leaves the balanced state and is balanced again later:
    its lr, and whether it came back for good (balanced at the end, loss level off its
    plateau)."""
    out = []
    unit = Neurons.read(result)
    for i, condition in enumerate(unit.conditions):
        left, returned, good = irreversal.network_returns(unit, i, QUICK.plateau_rtol)
        if left and returned:
            out.append((condition["lr"], good))
    return out


def test_irreversibility_returns_on_the_map_are_flickers_or_beyond_the_seeds_lr(sim):
    """What the old count called a return on the simulated (b2, lr) map: runs balanced again at
    some record that do not come back for good (a kink sitting at the domain edge crosses one
    grid point; the run ends stuck), most of them at lr > 0.4, beyond the seed's learning rates.
    None comes back for good within lr 0.01–0.4."""
    returns = _map_returns(sim[Key.MAP_B2_LR])
    assert returns, "the simulated map shows no return at all"
    assert not [lr for lr, good in returns if good and lr <= 0.4]
    assert [lr for lr, _ in returns if lr > 0.4]


def test_leaving_balanced_is_irreversible_positive(sim):
    """The independent simulation of the seed's runs (every unit the claims read; the (b2, lr)
    map as the quick preset records it): within the seed's learning rates no standard neuron
    that leaves the balanced state, or starts hyperactive (b1 > 1 at b2 = 0, Observation 0),
    comes back for good — 0 of 124, whose Clopper–Pearson interval lies below 5 %: the seed's
    "very hard to return". The neurons that start dead are left out (they cannot move)."""
    measured, detail = irreversal.irreversibility(sim, QUICK)
    assert measured.n > 100 and measured.value == 0.0, detail
    assert measured.low == 0.0 < measured.high < QUICK.recovery_bound  # an interval, n = 124
    assert "started hyperactive: 0 of 3" in detail and "started dead: 0 of 4" in detail
    assert irreversal.IRREVERSIBLE.judge(measured, QUICK) == "holds"


def test_leaving_balanced_is_irreversible_negative(sim, counter):
    """The counterexamples, on the engine: neurons started hyperactive with a positive output
    bias (b1 = 1.25 … 2, b2 = 0.65): the output is too high everywhere, b1 falls, the kink
    enters the domain and every one converges — 4 of 4 back for good; at the seed's b2 = 0 the
    same starts stay stuck. And the (b2, lr) map's corner b2 = −2.5 … −1.8 at lr 0.2, recorded
    every 10 steps — Adam's first large steps carry the kink past −1, the neuron is hyperactive
    for 10–60 steps, then comes back and converges: every leaver returns for good. Recorded
    every 250 steps, as the quick map is, none is seen to leave. Extra: the simulated SiLU
    student at b2 = −2 (the seed's own neuron that comes back), 1 of 1, is no evidence of
    irreversibility."""
    spec = irreversal.IRREVERSIBLE
    assert spec.kind == "claim" and spec.counterexample
    claim = spec.evaluate({Key.MAP_B1_B2: counter["hyper b2 0.65"]}, COUNTER)
    assert claim.verdict == "fails" and claim.n == 4 and claim.measured == 1.0, claim.detail
    stuck = spec.evaluate({Key.MAP_B1_B2: counter["hyper b2 0"]}, COUNTER)
    assert stuck.n == 4 and stuck.measured == 0.0, stuck.detail
    claim = spec.evaluate({Key.MAP_B2_LR: counter["map lr 0.2"]}, COUNTER)
    assert claim.verdict == "fails" and claim.n == 8 and claim.measured == 1.0, claim.detail
    sparse = _take(counter["map lr 0.2"], list(range(8)), MAP_EVERY)
    assert spec.evaluate({Key.MAP_B2_LR: sparse}, COUNTER).verdict == "not tested"
    silus = Neurons.read(sim[Key.SILU_VS_RELU])
    i = _index(silus, activation="silu")
    left, returned, good = irreversal.network_returns(silus, i, QUICK.plateau_rtol)
    assert left and returned and good
    assert spec.judge(proportion_ci(int(good), int(left)), QUICK) != "holds"
    assert spec.judge(irreversal.exact_fraction(int(good), int(left)), QUICK) == "fails"


def test_neurons_that_start_outside_the_balanced_state_are_counted_and_dead_ones_left_out(
    counter,
):
    """Issue 43: a neuron that starts hyperactive and reaches the balanced state is a return
    (:func:`network_fate`); one that starts dead is not counted — on the engine its w1, b1 and w2
    never move, so it could not have come back."""
    unit = Neurons.read(counter["hyper b2 0.65"])
    fates = [irreversal.network_fate(unit, i, QUICK.plateau_rtol) for i in range(4)]
    assert all(f.start == "hyperactive" and f.left and f.again and f.good for f in fates)
    dead = Neurons.read(counter["b1 dead"])
    fates = [irreversal.network_fate(dead, i, QUICK.plateau_rtol) for i in range(3)]
    assert all(f.start == "dead" and not f.again for f in fates)
    claim = irreversal.IRREVERSIBLE.evaluate({Key.B1_SWEEP: counter["b1 dead"]}, COUNTER)
    assert claim.verdict == "not tested" and "started dead: 0 of 3" in claim.detail


def test_the_reparameterised_neurons_returns_are_mostly_flickers_too(sim):
    """The old negative control, the simulated reparameterised neuron on the fine lr sweep, is
    balanced again after leaving in most runs, but few of those returns last: it is no longer
    a counter-example (a metric: the reparameterised neuron is not the seed's)."""
    lrs = Neurons.read(sim[Key.LR_BOUNDARY])
    reparam = [i for i, c in enumerate(lrs.conditions) if c["parameterisation"] == "reparam"]
    counts = np.array([irreversal.network_returns(lrs, i, QUICK.plateau_rtol) for i in reparam])
    left, again, good = counts.sum(0)
    assert left > 20 and again / left > 0.2
    assert good < again / 2


# ---------------------------------------------------------------------------------------------
# Observation 3
# ---------------------------------------------------------------------------------------------
def test_relu_stuck_at_b2_minus_2_positive(sim):
    """The simulated ReLU student at b2 = −2 ends hyperactive at 0.02125 after 10 000 steps."""
    assert _judged(silu.RELU_STUCK, sim, SILU_CONFIG) == "holds"


def test_relu_stuck_at_b2_minus_2_negative(sim, counter):
    """The counterexample, on the engine: at Adam lr 0.2 the ReLU student at b2 = −2 passes
    through the hyperactive state and back, and converges; at lr 0.01 it stays. Extra: the
    simulated SiLU student beside it is not stuck."""
    assert _verdicts(
        silu.RELU_STUCK,
        {Key.SILU_VS_RELU: _silu_unit(counter, "relu b2 -2 lr 0.2", 0)},
        {Key.SILU_VS_RELU: _silu_unit(counter, "relu b2 -2", 0)},
    ) == ("fails", "holds")
    unit = Neurons.read(sim[Key.SILU_VS_RELU])
    reading = plateaus.stuck_reading(
        plateaus.HYPERACTIVE, unit, [_index(unit, activation="silu")], str, SILU_CONFIG
    )
    assert silu.RELU_STUCK.judge(reading.measured, SILU_CONFIG) == "fails"


def test_silu_recovers_positive(sim):
    """The simulated SiLU student (SiLU teacher, b2 = −2) falls below 1e-4 at step ≈ 6400 and
    keeps falling (≈ 3e-6 over the last 10 % of 10 000 steps, ≈ 1e-10 by 20 000) — the seed's
    'the loss can eventually reach zero (up to machine precision)'."""
    assert _judged(silu.SILU_RECOVERS, sim, SILU_CONFIG) == "holds"


def test_silu_recovers_negative(sim, counter):
    """The counterexample, on the engine: a horizon shorter than the saddle, 2000 steps — the
    SiLU student at b2 = −2 is still on it (its 10 000-step simulation, the positive control,
    recovers). Extra: the ReLU student's level (0.021) is not zero."""
    spec = silu.SILU_RECOVERS
    assert spec.kind == "claim" and spec.counterexample
    short = {Key.SILU_VS_RELU: _silu_unit(counter, "relu b2 -2", 0)}
    assert spec.evaluate(short, COUNTER).verdict == "fails"
    unit = sim[Key.SILU_VS_RELU]
    stuck = plateau_level(unit.curves["loss"][_index(unit, activation="relu")])
    assert silu.SILU_RECOVERS.judge(stuck, SILU_CONFIG) == "fails"


def test_silu_long_saddle_positive(sim):
    """The simulated SiLU student sits on a flat loss for ≈ 4900 steps before it converges at
    step ≈ 6400: three quarters of its training, which the saddle makes ≈ 4 times longer — the
    seed's 'stuck at saddle points for very long time, reducing training efficiency'. The
    saddle is the same at every horizon past convergence, so the share is too; the
    post-hoc-free reading (≥ 10 % of the run) holds at this horizon."""
    measured = _measured(silu.SILU_SADDLE, sim, SILU_CONFIG)
    assert measured > 0.7
    assert silu.SILU_SADDLE.judge(measured, SILU_CONFIG) == "holds"
    claim = silu.SILU_SADDLE.evaluate(sim, SILU_CONFIG)
    assert [p.verdict for p in claim.post_hoc] == ["holds"], claim.detail


def test_silu_long_saddle_negative(sim, counter):
    """The counterexample, on the engine: SiLU started unpushed (silu_b2 = 0) converges without
    a saddle; started at b2 = −2 it sits on one for most of the same 2000 steps. Extra: the
    same in the independent simulation."""
    assert _verdicts(
        silu.SILU_SADDLE,
        {Key.SILU_VS_RELU: _silu_unit(counter, "relu b2 -2", 1)},
        {Key.SILU_VS_RELU: _silu_unit(counter, "relu b2 -2", 0)},
    ) == ("fails", "holds")
    unit = sim["silu from b2 = 0"]
    measured = _measured(silu.SILU_SADDLE, {Key.SILU_VS_RELU: unit}, SILU_CONFIG)
    assert silu.SILU_SADDLE.judge(measured, SILU_CONFIG) == "fails"


# ---------------------------------------------------------------------------------------------
# Observations 0–2: the plateaus are exact fits; Question 1: the reparameterised neuron
# ---------------------------------------------------------------------------------------------
def test_plateaus_are_exact_fits_positive(sim):
    """Every simulated stuck run of the three sweeps sits at the exact least-squares loss on its
    100 inputs to ≈ 1e-7 (float32)."""
    assert plateaus.EXACT_FITS.judge(_measured(plateaus.EXACT_FITS, sim), QUICK) == "holds"


def test_plateaus_are_exact_fits_negative(sim):
    """A check's criterion still separates: the continuum plateaus 1/48 and 5/48 are not the
    fits on 100 grid points (≈ 2 % off)."""
    x = sim[Key.B1_SWEEP].arrays["x"]
    relu = np.maximum(x, 0)
    off = max(
        abs(1 / 48 / sample_linear_fit_loss(x, relu) - 1),
        abs(5 / 48 / sample_constant_fit_loss(x, relu) - 1),
    )
    assert plateaus.EXACT_FITS.judge(off, QUICK) == "fails"


def test_reparam_converges_from_lower_b2_positive(sim):
    """Simulated on the same fine b2 sweep, the reparameterised neuron converges down to
    b2 ≈ −1.53, the standard one only to ≈ −1.19: a gap of ≈ 0.33."""
    assert questions.REPARAM.judge(_measured(questions.REPARAM, sim), QUICK) == "holds"


def test_reparam_converges_from_lower_b2_negative(sim, counter):
    """The counterexample, on the engine: with w1 started at 2 the standard neuron converges
    from b2 as low as the reparameterised one (≈ −1.6): no gap; at w1 = 1 the gap is ≈ 0.3.
    Extra: the standard neuron against itself."""
    assert _verdicts(
        questions.REPARAM,
        {Key.B2_BOUNDARY: counter["b2 fine w1 2"], Key.LR_BOUNDARY: counter["lr fine seed"]},
        {Key.B2_BOUNDARY: counter["b2 fine seed"], Key.LR_BOUNDARY: counter["lr fine seed"]},
    ) == ("fails", "holds")
    region = biases.b2_region(sim, QUICK)
    assert questions.REPARAM.judge(questions.b2_reparam_gap(region, region), QUICK) == "fails"


# ---------------------------------------------------------------------------------------------
# The whole scorecard on stored results built by hand (no training)
# ---------------------------------------------------------------------------------------------
CONFIG = SingleNeuronConfig(n_points=100, steps=1000, silu_steps=2000, early_steps=50)
X = np.linspace(-1, 1, CONFIG.n_points)
RELU = np.maximum(X, 0)
SLOPE, INTERCEPT = np.polyfit(X, RELU, 1)
LINE_LOSS = float(np.mean((SLOPE * X + INTERCEPT - RELU) ** 2))
CONSTANT_LOSS = sample_constant_fit_loss(X, RELU)
DEAD, BALANCED, HYPER = (STATE_CODES[k] for k in ("dead", "balanced", "hyperactive"))


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
        **{k: np.array([np.full(records, r[2][k]) for r in runs]) for k in ("w2", "b2")},
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


def _silu_and_early(c):
    silu_steps = np.arange(0, c.silu_steps + 1, c.record_every)
    silu_unit = _unit(
        [_condition(b2=-2.0), _condition(b2=-2.0, activation="silu", teacher="silu")],
        ["hyper", "converged"],
        silu_steps,
    )
    silu_unit.curves["loss"][1] = np.where(silu_steps < 1000, 0.02, 1e-14)
    early_steps = np.arange(c.early_steps + 1)
    early = _unit(
        [_condition(b2=-1.0, lr=lr) for lr in (0.01, 0.2, 0.4)], ["converged"] * 3, early_steps
    )
    early.curves["loss"][0] = np.linspace(1.0, 0.4, len(early_steps))  # default lr: slow
    early.curves["loss"][2, :20] = np.linspace(1.0, 0.01, 20)  # lr 0.4: fast, then dead
    early.curves["loss"][2, 20:] = CONSTANT_LOSS
    early.curves["state"][2, 20:] = DEAD
    return silu_unit, early


def _boundaries(steps):
    b2_fine = np.linspace(-2.0, -0.5, 16)  # boundary between -1.2 and -1.1; reparam lower
    lr_fine = np.geomspace(0.05, 1.0, 16)  # boundary between 0.2 and 0.4
    b2_boundary = _unit(
        [_condition(b2=b) for b in b2_fine]
        + [_condition(b2=b, parameterisation="reparam") for b in b2_fine],
        ["converged" if b > -1.15 else "hyper" for b in b2_fine]
        + ["converged" if b > -1.6 else "hyper" for b in b2_fine],
        steps,
        leave_at=10,
    )
    lr_boundary = _unit(
        [
            _condition(b2=-1.0, lr=lr, parameterisation=p)
            for p in ("standard", "reparam")
            for lr in lr_fine
        ],
        ["converged" if lr < 0.3 else "dead" for lr in lr_fine] * 2,
        steps,
        leave_at=2,
    )
    return b2_boundary, lr_boundary


def seedlike():
    """Stored results in which every behaviour of seed 001 is present."""
    c = CONFIG
    steps = np.arange(0, c.steps + 1, c.record_every)
    b2s = [0.0, -1.1, -1.2, -2.0]
    kink = np.zeros((len(b2s), len(steps)))
    kink[1] = -np.linspace(0, 0.6, len(steps))  # b2 = -1.1: the kink stops short of -1
    kink[2] = -np.linspace(0, 1.2, len(steps))  # b2 = -1.2: past -1
    kink[3] = -np.linspace(0, 1.5, len(steps))
    silu_unit, early = _silu_and_early(c)
    b2_boundary, lr_boundary = _boundaries(steps)
    return {
        Key.B1_SWEEP: _unit(
            [_condition(b1=b) for b in (-2.0, -1.5, 0.0, 1.5, 2.0)],
            ["dead", "dead", "converged", "hyper", "hyper"],
            steps,
        ),
        Key.B2_SWEEP: _unit(
            [_condition(b2=b) for b in b2s],
            ["converged", "converged", "hyper", "hyper"],
            steps,
            leave_at=10,
            kink_b1=-kink,
        ),
        Key.LR_SWEEP: _unit(
            [_condition(b2=-1.0, lr=lr) for lr in (0.01, 0.2, 0.4)],
            ["converged", "converged", "dead"],
            steps,
            leave_at=2,
        ),
        Key.B2_BOUNDARY: b2_boundary,
        Key.LR_BOUNDARY: lr_boundary,
        Key.TEACHER_BIAS: _unit(
            [_condition(teacher_bias=v) for v in (0.0, 1.0, 2.0)],
            ["converged", "hyper", "hyper"],
            steps,
            leave_at=10,
        ),
        Key.LR_EARLY: early,
        Key.SILU_VS_RELU: silu_unit,
        Key.MAP_B1_B2: _unit(
            [_condition(b1=0.0, b2=-3.0 - k / 100) for k in range(80)], ["hyper"] * 80, steps, 5
        ),
    }


def _by_id(results, config=CONFIG):
    return {claim.id: claim for claim in evaluate(CLAIMS, results, config)}


def test_every_claim_holds_where_the_seeds_behaviour_is_present():
    claims = evaluate(CLAIMS, seedlike(), CONFIG)
    verdicts = {c.id: c.verdict for c in claims}
    assert set(verdicts.values()) == {"holds"}, verdicts
    assert len(verdicts) == 18
    assert all(c.scale and c.source.startswith("seed 001") for c in claims)


def test_beyond_the_seed_are_the_located_boundaries_and_the_reparameterised_neuron():
    beyond = [spec.id for spec in CLAIMS if spec.beyond_seed]
    assert beyond == [
        "b2-boundary-between-seed-points",
        "lr-boundary-between-seed-points",
        "reparam-converges-from-lower-b2",
    ]


def test_convergence_reads_a_median_over_a_stretch_not_one_value():
    results = seedlike()
    lr = results[Key.LR_SWEEP]
    lr.curves["loss"][1, :] = 1e-2  # never near zero ...
    lr.curves["loss"][1, -1] = 1e-12  # ... but one lucky final value
    lr.curves["loss"][1, 30] = 1e-12  # ... and one lucky dip
    lr.final["loss"][1] = 1e-12
    claim = _by_id(results)["lr-0.2-converges"]
    assert claim.verdict == "fails" and claim.measured == pytest.approx(1e-2)
    assert loss_levels(Neurons.read(lr))[1] == pytest.approx(1e-2)


def test_a_run_that_reached_zero_and_was_thrown_off_later_converged():
    """Issue 43: 'the loss can be optimized to zero' is read as the loss reaching zero. A run
    that sat at zero and was thrown off to the dead plateau later — the lr 0.2 neuron at 20 000
    steps — holds, its end is in the detail, and the post-hoc-free reading (the level at the
    end) fails."""
    results = seedlike()
    lr = results[Key.LR_SWEEP]
    lr.curves["loss"][1, -30:] = CONSTANT_LOSS
    lr.curves["state"][1, -30:] = DEAD
    lr.final["state"][1] = DEAD
    claim = _by_id(results)["lr-0.2-converges"]
    assert claim.verdict == "holds" and "at the end: loss level 0.1" in claim.detail
    assert "dead" in claim.detail and [p.verdict for p in claim.post_hoc] == ["fails"]


def test_boundary_outside_the_seed_points_fails_and_a_chaotic_band_is_inconclusive():
    results = seedlike()
    fine = results[Key.B2_BOUNDARY]
    shift = [i for i, c in enumerate(fine.conditions) if c["parameterisation"] == "standard"]
    for i in shift:  # converge down to -1.5: the boundary is no longer between -1.2 and -1.1
        if fine.conditions[i]["b2"] > -1.5:
            fine.curves["loss"][i] = 1e-14
            fine.curves["state"][i] = BALANCED
    assert _by_id(results)["b2-boundary-between-seed-points"].verdict == "fails"
    results = seedlike()
    lr = results[Key.LR_BOUNDARY]
    flip = [
        i
        for i, c in enumerate(lr.conditions)
        if c["lr"] > 0.5 and c["parameterisation"] == "standard"
    ][0]
    lr.curves["loss"][flip] = 1e-14  # converges again above 0.4: the band straddles 0.4
    region = bracket(Neurons.read(lr), "lr", False, "standard", CONFIG.converge_tol)
    assert region.low < 0.4 < region.high
    assert _by_id(results)["lr-boundary-between-seed-points"].verdict == "inconclusive"


def test_teacher_bias_that_leaves_the_neuron_balanced_fails():
    results = seedlike()
    unit = results[Key.TEACHER_BIAS]
    unit.curves["loss"][:] = 1e-14
    unit.curves["state"][:] = BALANCED
    unit.final["state"][:] = BALANCED
    assert _by_id(results)["teacher-bias-pushes-hyperactive"].verdict == "fails"


def test_neurons_that_come_back_make_irreversibility_fail():
    """Outside the balanced state within lr 0.01–0.4: 80 leavers on the (b1, b2) map, 2 + 1 + 2
    in the b2, lr and teacher-bias sweeps, 9 + 2 on the fine sweeps (lr-early repeats
    lr-sweep's runs), and 3 that start hyperactive: 2 in the b1 sweep (its 2 dead starts are
    left out) and the SiLU comparison's ReLU run, hyperactive from its first record here."""
    results = seedlike()
    unit = results[Key.MAP_B1_B2]
    unit.curves["state"][:40, -5:] = BALANCED  # half the leavers return and converge
    unit.curves["loss"][:40, -5:] = 1e-14
    claim = _by_id(results)["leaving-balanced-is-irreversible"]
    assert claim.verdict == "fails" and claim.n == 80 + 5 + 11 + 3


def test_a_neuron_that_starts_hyperactive_and_converges_is_a_return():
    """Issue 43: the b1 sweep's two hyperactive starts converge — 2 returns among 99 neurons
    outside the balanced state (96 leavers, 3 hyperactive starts), where only leavers counted
    they were 0 of 96; a dead start that 'converges' (impossible on the engine) would not
    count."""
    results = seedlike()
    b1s = results[Key.B1_SWEEP]
    for i in (0, 3, 4):  # b1 = −2 (dead start), 1.5 and 2 (hyperactive starts)
        b1s.curves["state"][i, 5:] = BALANCED
        b1s.curves["loss"][i, 5:] = 1e-14
    claim = _by_id(results)["leaving-balanced-is-irreversible"]
    assert claim.n == 99 and claim.measured == pytest.approx(2 / 99), claim.detail
    assert "started dead: 1 of 2 back (not counted" in claim.detail
    without = {p.what.split(" (")[0]: p for p in claim.post_hoc}
    assert without["neurons that start hyperactive counted"].measured == 0.0  # 0 of 96 left
    assert without["neurons that start dead left out"].measured == pytest.approx(3 / 101)


def test_flickers_and_returns_beyond_the_seeds_lr_do_not_count():
    results = seedlike()
    unit = results[Key.MAP_B1_B2]
    unit.curves["state"][:40, -3] = BALANCED  # balanced at one record, still on the plateau
    assert _by_id(results)["leaving-balanced-is-irreversible"].verdict == "holds"
    unit.curves["state"][:40, -5:] = BALANCED  # ... balanced at the end, loss on the plateau
    assert _by_id(results)["leaving-balanced-is-irreversible"].verdict == "holds"
    for condition in unit.conditions:
        condition["lr"] = 0.5  # beyond the seed's learning rates: a metric
    unit.curves["loss"][:40, -5:] = 1e-14
    claim = _by_id(results)["leaving-balanced-is-irreversible"]
    assert claim.measured == 0.0 and claim.n == 5 + 11 + 3  # too few to hold at 95 %
    assert claim.verdict == "inconclusive" and claim.ci_high > CONFIG.recovery_bound
    assert "beyond lr 0.01–0.4 40/40/85" in claim.detail  # + 5 on the fine lr sweep


def test_a_diverged_network_counts_as_diverged_in_every_claim_that_reads_it():
    """One divergence policy: the b2 = −1.2 run frozen by the engine with a non-finite loss is
    diverged in every claim and check that reads it — counted in each one's divergence counts,
    never a sentinel loss in one and a drop in another — and it ranks last: not stuck, not a
    line, no kink reading, not back."""
    results = seedlike()
    b2s = results[Key.B2_SWEEP]
    i = [k for k, c in enumerate(b2s.conditions) if c["b2"] == -1.2][0]
    b2s.diverged[i], b2s.diverged_step[i] = True, 500
    b2s.curves["loss"][i, 50:] = np.nan
    by_id = _by_id(results)
    expected = {
        "b2-minus-1.2-sticks": (1, 1),
        "kink-drifts-left": (1, 2),
        "stuck-solution-is-least-squares-line": (1, 1),
        "plateaus-are-exact-fits": (1, 4),
        "leaving-balanced-is-irreversible": (1, 4),
    }
    for claim_id, counts in expected.items():
        claim = by_id[claim_id]
        assert claim.diverged[Key.B2_SWEEP] == counts, claim_id
        assert "diverged: " in claim.detail and "b2-sweep 1/" in claim.detail, claim_id
    for claim_id in (
        "b2-minus-1.2-sticks",
        "kink-drifts-left",
        "stuck-solution-is-least-squares-line",
    ):
        assert by_id[claim_id].verdict == "fails", claim_id
    assert by_id["b2-minus-1.1-converges"].diverged[Key.B2_SWEEP] == (0, 1)
    assert by_id["b2-minus-1.1-converges"].verdict == "holds"


def test_irreversibility_without_leavers_is_not_tested():
    results = {Key.B2_SWEEP: seedlike()[Key.B2_SWEEP]}
    results[Key.B2_SWEEP].curves["state"][:] = BALANCED
    reading = irreversal.IRREVERSIBLE.measure(results, CONFIG)
    assert reading.untested and reading.measured.n == 0


def test_a_stuck_line_off_the_least_squares_line_fails():
    results = seedlike()
    i = [k for k, c in enumerate(results[Key.B2_SWEEP].conditions) if c["b2"] == -1.2][0]
    results[Key.B2_SWEEP].final["b2"][i] += 0.05
    assert _by_id(results)["stuck-solution-is-least-squares-line"].verdict == "fails"


def test_lr_04_that_dies_at_once_or_never_fails():
    results = seedlike()
    early = results[Key.LR_EARLY]
    early.curves["state"][2] = BALANCED  # never dies
    assert _by_id(results)["lr-0.4-falls-fast-then-dies"].verdict == "fails"
    results = seedlike()
    early = results[Key.LR_EARLY]
    early.curves["loss"][2, :20] = 1.0  # dies without the loss falling first
    assert _by_id(results)["lr-0.4-falls-fast-then-dies"].verdict == "fails"
    results = seedlike()
    results[Key.LR_EARLY].curves["state"][2] = DEAD  # dead from the first record on
    claim = _by_id(results)["lr-0.4-falls-fast-then-dies"]
    assert claim.verdict == "fails" and np.isfinite(claim.measured)  # the contract: finite


def test_reparam_boundary_not_below_the_standard_one_fails():
    results = seedlike()
    fine = results[Key.B2_BOUNDARY]
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
    results[Key.B1_SWEEP].curves["loss"][0] *= 1.2
    by_id = _by_id(results)
    assert by_id["b1-dead-plateau"].verdict == "fails"
    assert by_id["plateaus-are-exact-fits"].verdict == "fails"


def test_missing_seed_points_fail_rather_than_raise():
    results = seedlike()
    b2s = results[Key.B2_SWEEP]
    for condition in b2s.conditions:
        condition["b2"] = condition["b2"] - 10.0  # no -1.1, no -1.2
    by_id = _by_id(results)
    for claim_id in (
        "b2-minus-1.2-sticks",
        "kink-drifts-left",
        "stuck-solution-is-least-squares-line",
    ):
        assert by_id[claim_id].verdict == "fails", claim_id


def test_config_tolerances_are_the_criteria():
    strict = dataclasses.replace(CONFIG, fit_rtol=1e-12)
    results = seedlike()
    results[Key.B2_SWEEP].final["b2"][2] += 1e-6
    assert _by_id(results, strict)["stuck-solution-is-least-squares-line"].verdict == "fails"


def test_single_field_ranges_are_declared_with_their_settings():
    from relulab.config import ConfigError, apply_overrides

    for assignment, message in (
        ("n_points=1", "n_points must be at least 2"),
        ("steps=0", "steps must be positive"),
        ("betas=0.9,1.0", "betas must be less than 1"),
        ("grid_b2_range=1,-1", "grid_b2_range must be strictly increasing"),
        ("lr_boundary_range=0,1", "lr_boundary_range must be positive"),
        ("lr_sweep=0.1,-0.2", "lr_sweep must be positive"),
    ):
        with pytest.raises(ConfigError, match=message):
            apply_overrides(QUICK, [assignment])
