"""early-linearization (seed 004, toy tasks): each claim's criterion on its positive control (data
on which the seed's statement is true in the seed's own sense) and its negative control (a
counter-example); then the pipeline end to end, the declarative config checks, the closed-form
modes against the batched engine, and the engine against a plain loop.

Where do the positive data come from?

* **Closed forms of the seed's own mechanism** (``relulab.theory.deep_linear``): eq. 7 for the
  linear network and, for the ReLU network, the gated linear model of appendix F.4 — every mode
  starts at ``a0·ḡ`` with ``ḡ`` the share of units alive at initialisation (eq. 14's delay).
  For one-hot items with the constant ``c`` that share is exact: unit j is dead when
  ``w_ji + c·b_j < 0`` on every item, ``E_b[Φ(−c·b/σ)^P]`` (= 1/(P+1) = 0.2 at c = 1).
* **The seed's setup re-simulated here** (:func:`_simulate`: plain full-batch GD on the sum loss
  in torch, independent of the relulab engine), scored by the study's own measure functions —
  the seed's figures come from this setup. To keep the file fast the runs take 5× the seed's
  learning rate for 1/5 of its steps, recorded every 1/5 as often: the same gradient flow (the
  seed's theory is the flow, appendix B, eq. 18), discretised 5× more coarsely
  (``P·lr·s ≈ 0.6 %`` a step); the quick preset's numbers are reproduced to a few percent.
* **Constructions that obey the statement exactly** (a linear solution, a bias-free ReLU
  network built by hand that solves XOR).

Issue 30 changed the criteria whose positive controls failed (one additive shift for every
mode, the mean target timed off the plateau, kinks over dead units, the gated model on a log
scale at the loss floor); every control now passes, none is marked xfail.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from relulab.analysis import Estimate, early_window, mean_ci, running_mean
from relulab.cli import main
from relulab.config import alternatives
from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.experiments.context import RunContext
from relulab.experiments.early_linearization import CLAIMS, measure, rescaling
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.units import (
    Family,
    Key,
    augmented_task,
    pair,
    plan,
    unit_views,
)
from relulab.store import UnitResult
from relulab.tasks import (
    append_constant,
    hierarchical_task,
    parallel_task,
    xor_linear_task,
    xor_task,
)
from relulab.theory.deep_linear import (
    aligned_modes,
    bias_mode,
    gated_linear_prediction,
    learning_time_constant,
    mode_loss,
    mode_projections,
    mode_strength,
    modes_to_map,
    relu_hitting_delay,
)

F64 = torch.float64
CONFIG = EarlyLinearizationConfig()  # the paper preset: thresholds as the scorecard's
SPEC = {spec.id: spec for spec in CLAIMS}
FASTER = 5  # the simulations' step size, in units of the seed's learning rate
SIM = replace(
    CONFIG,
    lr=CONFIG.lr * FASTER,
    hierarchy_steps=CONFIG.hierarchy_steps // FASTER,
    xor_steps=CONFIG.xor_steps // FASTER,
    xor_linear_steps=CONFIG.xor_linear_steps // FASTER,
    parallel_steps=CONFIG.parallel_steps // FASTER,
    record_every=200 // FASTER,  # the quick preset's grid
    smooth_steps=CONFIG.smooth_steps // FASTER,  # the same window in gradient-flow time
)
A0 = CONFIG.hidden * CONFIG.init_variance / 2  # E[p_α] at init, each mode's starting strength
TINY = [
    "hidden=8",
    "seeds=3",
    "lr=0.02",
    "init_variance=0.0004",
    "hierarchy_steps=400",
    "xor_steps=400",
    "xor_linear_steps=400",
    "parallel_steps=400",
    "record_every=20",
    "constants=0,1",
    "deltas=0.5",
    "map_variances=0.0004",
    "map_constants=0,1",
    "map_seeds=1",
    "map_widths=4",
    "mds_points=3",
]


# =============================================================================================
# The seed's setup, re-simulated (independent of relulab.engine), and its closed forms.
# =============================================================================================
def _simulate(
    X, Y, constants, activation, seeds, steps, *, delta=0.0, readout_bias=False, keep="all"
) -> UnitResult:
    """Seed 004 §5.1: ``ŷ = W2 σ(W̃1 x̃) (+ b2)``, x̃ = [x; c], weights N(0, σ² = 2e-4), hidden
    64, full-batch GD on ``½ Σ‖y − ŷ‖²`` at :data:`SIM`'s rate; one network per (c, seed).
    ``activation``: "relu", "linear", or "gated" — the linear network with the units dead at
    initialisation removed (appendix F.4's model). ``keep``: parameter snapshots, "all",
    "final" or "none"."""
    conditions = [
        {"c": float(c), "delta": delta, "seed": k, "variance": CONFIG.init_variance}
        for c in constants
        for k in range(seeds)
    ]
    x = torch.tensor(np.stack([np.hstack([X, np.full((len(X), 1), r["c"])]) for r in conditions]))
    scale = math.sqrt(CONFIG.init_variance)
    draws = [np.random.default_rng(1000 + r["seed"]) for r in conditions]
    W1 = torch.tensor(np.stack([g.normal(0, scale, (CONFIG.hidden, x.shape[-1])) for g in draws]))
    W2 = torch.tensor(np.stack([g.normal(0, scale, (Y.shape[1], CONFIG.hidden)) for g in draws]))
    b2 = torch.tensor(np.stack([g.normal(0, scale, (Y.shape[1], 1)) for g in draws]))
    b2 = b2 if readout_bias else torch.zeros_like(b2)
    y = torch.tensor(Y.T.copy())
    alive = ((W1 @ x.transpose(1, 2)).amax(dim=2, keepdim=True) > 0).to(F64)  # at init
    record = []
    xt = x.transpose(1, 2)
    for step in range(steps + 1):
        z = W1 @ xt
        if activation == "relu":
            active = (z > 0).to(F64)
        else:  # linear: every unit passes; gated: the units alive at init
            active = alive if activation == "gated" else 1.0
        error = W2 @ (z * active) + b2 - y
        if step % SIM.record_every == 0:
            record.append((0.5 * error.square().sum(dim=(1, 2)), z, W1, W2))
        W1, W2, b2 = (
            W1 - SIM.lr * ((W2.transpose(1, 2) @ error) * active) @ x,
            W2 - SIM.lr * error @ (z * active).transpose(1, 2),
            b2 - SIM.lr * error.sum(dim=2, keepdim=True) * readout_bias,
        )
    return _unit(conditions, record, keep)


def _unit(conditions, record, keep) -> UnitResult:
    loss = np.stack([r[0].numpy() for r in record], axis=1)
    curves = {
        "loss": loss,
        "always_on_fraction": np.stack(
            [(r[1].amin(dim=2) > 0).to(F64).mean(dim=1).numpy() for r in record], axis=1
        ),
        "dead_fraction": np.stack(
            [(r[1].amax(dim=2) <= 0).to(F64).mean(dim=1).numpy() for r in record], axis=1
        ),
    }
    arrays = {}
    if keep != "none":
        for k, index in (("param_0", 2), ("param_1", 3)):
            trajectory = np.stack([r[index].numpy() for r in record], axis=1)
            arrays[k] = trajectory if keep == "all" else trajectory[:, -1]
    n = len(conditions)
    steps = np.arange(len(record)) * SIM.record_every
    final = {k: v[:, -1] for k, v in curves.items()}
    return UnitResult(conditions, steps, curves, final, np.zeros(n, bool), np.full(n, -1), arrays)


@pytest.fixture(scope="module")
def hierarchy():
    """The 4-item hierarchy at c = 1 and c = 0, ReLU and linear, 30 seeds (fig. 2B, 3, 4)."""
    X, Y = hierarchical_task(4)
    relu = _simulate(X, Y, (0.0, 1.0), "relu", 30, SIM.hierarchy_steps)
    linear = _simulate(X, Y, (0.0, 1.0), "linear", 30, SIM.hierarchy_steps)
    return {Key.HIERARCHY_RELU: relu, Key.HIERARCHY_LINEAR: linear}


@pytest.fixture(scope="module")
def c_sweep():
    """The bias-ReLU hierarchy at every c of the sweep, 10 seeds (fig. 10)."""
    X, Y = hierarchical_task(4)
    relu = _simulate(X, Y, CONFIG.all_constants, "relu", 10, SIM.hierarchy_steps, keep="none")
    return {Key.HIERARCHY_RELU: relu}


@pytest.fixture(scope="module")
def centred_targets():
    """The hierarchy with ȳ = 0 (targets minus their mean, appendix F.2): no bias mode."""
    X, Y = hierarchical_task(4)
    Y = Y - Y.mean(axis=0)
    return {
        Key.HIERARCHY_RELU: _simulate(X, Y, (1.0,), "relu", 5, SIM.hierarchy_steps),
        Key.HIERARCHY_LINEAR: _simulate(X, Y, (1.0,), "linear", 5, SIM.hierarchy_steps),
    }


# =============================================================================================
# Counter-settings, run through the study's own units (``plan``, the relulab engine): every
# claim's negative control realises its ``counterexample`` here. 10× the seed's rate for 1/10
# of its steps (the same gradient flow, ≈ 1.2 % a step; the quick preset's verdicts and
# numbers are reproduced to a few percent), 5 seeds.
# =============================================================================================
FAST = 10
RUN = replace(
    CONFIG,
    lr=CONFIG.lr * FAST,
    hierarchy_steps=CONFIG.hierarchy_steps // FAST,
    xor_steps=CONFIG.xor_steps // FAST,
    xor_linear_steps=CONFIG.xor_linear_steps // FAST,
    parallel_steps=CONFIG.parallel_steps // FAST,
    record_every=200 // FAST,
    smooth_steps=CONFIG.smooth_steps // FAST,
    seeds=5,
    constants=(0.0, 0.01, 0.1, 3.0),  # with constant = 1: the sweep reaches c = 0.01
    deltas=(1.0,),
)
WEAK = replace(RUN, constant=0.01)  # a hidden bias too weak to push the units on
CONTEXT = RunContext(torch.device("cpu"), F64, seed=0, quiet=True)


def _run_units(config: EarlyLinearizationConfig, *names: str) -> dict:
    """The study's own units ``names`` of ``plan(config)``, run."""
    units = {unit.name: unit for unit in plan(config)}
    return {name: units[name].run(CONTEXT) for name in names}


def _verdict(claim_id: str, results: dict, config: EarlyLinearizationConfig, **settings) -> str:
    """The claim's verdict through its spec (measure, criterion, post-hoc readings) on
    ``results`` at ``config`` with ``settings``."""
    return SPEC[claim_id].evaluate(results, replace(config, **settings)).verdict


@pytest.fixture(scope="module")
def sweep_run():
    """The hierarchy, ReLU and linear, at c = 0, 0.01, 0.1, 1 and 3 (``RUN``)."""
    return _run_units(RUN, Key.HIERARCHY_RELU, Key.HIERARCHY_LINEAR)


@pytest.fixture(scope="module")
def weak_run():
    """Every other task's units with the hidden bias c = 0.01 (``WEAK``; XOR + linear at
    Δ = 0.5 and 1)."""
    families = (Family.XOR, Family.XOR_BOTH, Family.HIERARCHY_BOTH, Family.XOR_PLUS_LINEAR)
    names = [
        f"{family}-{act}" for family in (*families, Family.PARALLEL) for act in ("relu", "linear")
    ]
    return _run_units(WEAK, *names)


def _rows(steps, losses, references, additive: bool = False) -> np.ndarray:
    """The alignment claims' per-pair rows (best rescaling t → κt; ``additive``: the one-shift
    gap kept as a metric), :func:`measure.alignment_table`."""
    return measure.alignment_table(
        steps, np.atleast_2d(losses), np.atleast_2d(references), CONFIG, additive
    )


def _pair_rows(relu: UnitResult, linear: UnitResult) -> np.ndarray:
    return _rows(relu.steps, relu.curves["loss"], linear.curves["loss"])


def _pair_gaps(relu: UnitResult, linear: UnitResult) -> Estimate:
    """The alignment claims' measurement: mean gap over seeds with its t interval."""
    return mean_ci(_pair_rows(relu, linear)[:, 0])


def _alive_at_init(c: float, n_items: int = 4) -> float:
    """ḡ: the expected share of units alive at init on one-hot items with constant ``c``,
    ``1 − E_b[Φ(−c b)^P]`` (b ~ N(0, 1); weights and bias share σ)."""
    dead, _ = integrate.quad(
        lambda b: stats.norm.pdf(b) * stats.norm.cdf(-c * b) ** n_items, -12, 12
    )
    return 1.0 - dead


def _closed_form_losses(c: float, kept: float, every: float = 200.0):
    """Steps and the losses of the bias-linear network (eq. 7) and of appendix F.4's ReLU
    network (every mode from a0·ḡ) on the hierarchy at the seed's rate, on the quick grid."""
    X, modes = measure.hierarchy_modes(CONFIG, c)
    tau = learning_time_constant(X.shape[0], CONFIG.lr)
    steps = np.arange(0.0, CONFIG.hierarchy_steps + 1, every)
    linear = mode_loss(modes, mode_strength(steps[:, None], modes.s, modes.d, A0, tau))
    relu = mode_loss(modes, mode_strength(steps[:, None], modes.s, modes.d, A0 * kept, tau))
    return steps, linear, relu


def _closed_form_gap(c: float, kept: float, additive: bool = False) -> float:
    steps, linear, relu = _closed_form_losses(c, kept)
    return float(_rows(steps, relu, linear, additive)[0, 0])


def _stalled(loss: np.ndarray) -> np.ndarray:
    """A network that stops learning halfway through the linear network's drop: its loss
    held at ``(L(0) + L(T))/2`` (per row) — no shift or rescaling of time brings it back."""
    loss = np.atleast_2d(loss)
    return np.maximum(loss, 0.5 * (loss[:, :1] + loss[:, -1:]))


def _shooting_up(runs: dict) -> dict:
    """The runs with every c > 0 network's always-on share replaced by a curve that does what
    Fig. 3C and Fig. 10 (left-centre) describe: from its value at init it shoots up to 0.8 of
    the units within the first tenth of training and drifts back to 0.6 (± 0.02 noise per
    recording), the same for every c — 'irrespective of c'."""
    results = copy.deepcopy(runs)
    relu = results[Key.HIERARCHY_RELU]
    on = relu.curves["always_on_fraction"]
    t = relu.steps / relu.steps[-1]
    rng = np.random.default_rng(0)
    for i, row in enumerate(relu.conditions):
        if row["c"] > 0:
            rise = on[i, 0] + (0.8 - on[i, 0]) * np.minimum(t / 0.1, 1.0)
            on[i] = rise - 0.2 * np.clip((t - 0.1) / 0.9, 0, 1) + rng.normal(0, 0.02, t.shape)
    return results


def test_the_simulation_is_the_seeds_setup_on_the_relulab_engine():
    """The independent simulation against the engine the study runs: one bias-ReLU network
    from the same initial weights gives the same losses at every recording."""
    X, Y = hierarchical_task(4)
    unit = _simulate(X, Y, (1.0,), "relu", 1, 200)
    W1, W2 = unit.arrays["param_0"][0, 0], unit.arrays["param_1"][0, 0]
    model = BatchedMLP(MLPSpec((5, 64, 7), bias=False), 1, dtype=F64)
    with torch.no_grad():
        model.weights[0][0] = torch.from_numpy(W1)
        model.weights[1][0] = torch.from_numpy(W2)
    x = append_constant(torch.from_numpy(X), 1.0)
    problem = SupervisedProblem(model, x, torch.from_numpy(Y), loss="half_sum")
    result = train(problem, BatchedSGD(problem.params, SIM.lr), 200, SIM.record_every)
    np.testing.assert_allclose(result.curves["loss"][0], unit.curves["loss"][0], rtol=1e-10)


# =============================================================================================
# §4 and appendix C.3: alignment.
# =============================================================================================
def test_hierarchy_aligned_with_bias_positive():
    """Appendix F.4's ReLU network in closed form — the seed's eq. 14 picture: every mode of
    eq. 7 starts at a0·ḡ with ḡ = 0.8 alive at init (c = 1), so each lags by its own share
    (eq. 14 ∝ 1/s_α). One rescaling t → κt follows it: g ≈ 0.014 (κ ≈ 1.05); the old
    one-shift gap is 0.116, above the tolerance (issue 30)."""
    gap = _closed_form_gap(1.0, _alive_at_init(1.0))
    assert gap < 0.03 and _closed_form_gap(1.0, _alive_at_init(1.0), additive=True) > 0.1
    assert SPEC["hierarchy-aligned-with-bias"].judge(gap, CONFIG) == "holds"


def test_hierarchy_aligned_with_bias_negative(sweep_run):
    """The counterexample run through the study's units: with a hidden bias too weak to push
    the units on (c = 0.01) the ReLU loss parts from the linear one (g ≈ 0.24). Also, on the
    criterion: a ReLU network with 80 % of its units dead at init (ḡ = 0.2, g ≈ 0.21 after the
    best rescaling) and one whose loss stalls halfway through the linear drop (g ≈ 1.6)."""
    assert _verdict("hierarchy-aligned-with-bias", sweep_run, RUN, constant=0.01) != "holds"
    spec = SPEC["hierarchy-aligned-with-bias"]
    assert spec.judge(_closed_form_gap(1.0, 0.2), CONFIG) == "fails"
    steps, linear, _ = _closed_form_losses(1.0, 1.0)
    assert spec.judge(float(_rows(steps, _stalled(linear), linear)[0, 0]), CONFIG) == "fails"


def _parts(free: np.ndarray, bias: np.ndarray) -> dict:
    """The parts claims' reading from per-seed rows of the bias-free and the bias pairs."""
    return {"contrast": mean_ci(free[:, 0] - bias[:, 0]), "no bias": mean_ci(free[:, 0])}


def test_hierarchy_part_without_bias_positive(hierarchy):
    """The seed's bias-free and bias pairs on the hierarchy (fig. 2B), 30 seeds, paired by
    seed: the bias-free pair is farther apart and parted."""
    reading = SPEC["hierarchy-part-without-bias"].measure(hierarchy, SIM)
    assert SPEC["hierarchy-part-without-bias"].judge(reading.measured, CONFIG) == "holds"


@pytest.fixture(scope="module")
def wide_run():
    """The hierarchy with and without bias at hidden = 256."""
    wide = replace(RUN, hidden=256, constants=(0.0,))
    return _run_units(wide, Key.HIERARCHY_RELU, Key.HIERARCHY_LINEAR), wide


def test_hierarchy_part_without_bias_negative(wide_run):
    """The counterexample run through the study's units: wide networks (hidden 256), where the
    bias-free ReLU network follows the linear one about as closely as the bias network does
    (contrast ≈ 0.01). Also, on the criterion: a bias-free ReLU network that is the linear
    network (F.4 with nothing gated, g = 0) beside F.4's bias network (g ≈ 0.014)."""
    results, wide = wide_run
    assert _verdict("hierarchy-part-without-bias", results, wide) != "holds"
    steps, linear, relu = _closed_form_losses(1.0, _alive_at_init(1.0))
    free, bias = _rows(steps, linear, linear), _rows(steps, relu, linear)
    assert free[0, 0] < 1e-9
    measured = {"contrast": float(free[0, 0] - bias[0, 0]), "no bias": float(free[0, 0])}
    assert SPEC["hierarchy-part-without-bias"].judge(measured, CONFIG) == "fails"


def test_hierarchy_relu_follows_exact_solutions_positive(hierarchy):
    """The seed's bias-ReLU networks (fig. 2B), 30 seeds, against eq. 7 from each one's own
    initial weights."""
    reading = SPEC["hierarchy-relu-follows-exact-solutions"].measure(hierarchy, SIM)
    assert SPEC["hierarchy-relu-follows-exact-solutions"].judge(reading.measured, CONFIG) == "holds"


def test_hierarchy_relu_follows_exact_solutions_negative(hierarchy, sweep_run):
    """The counterexample run through the study's units: ReLU networks that do not linearise
    (c = 0.01) do not follow eq. 7 (g ≈ 0.23). Also: ReLU losses that stall halfway through the
    exact solution's drop."""
    claim_id = "hierarchy-relu-follows-exact-solutions"
    assert _verdict(claim_id, sweep_run, RUN, constant=0.01) != "holds"
    relu = copy.deepcopy(hierarchy[Key.HIERARCHY_RELU])
    exact = measure.exact_alignments(relu, SIM)  # the unchanged networks align
    assert np.all(exact[:, 0] < 0.5)
    X, modes = measure.hierarchy_modes(SIM, 1.0)
    tau = learning_time_constant(X.shape[0], SIM.lr)
    for i in [i for i, r in enumerate(relu.conditions) if r["c"] == 1.0]:
        theory = measure.theory_trajectory(relu, i, modes, relu.steps, tau)
        relu.curves["loss"][i] = _stalled(mode_loss(modes, theory))[0]
    reading = SPEC["hierarchy-relu-follows-exact-solutions"].measure(
        {Key.HIERARCHY_RELU: relu}, SIM
    )
    assert SPEC["hierarchy-relu-follows-exact-solutions"].judge(reading.measured, CONFIG) == "fails"


@pytest.fixture(scope="module")
def xor():
    """XOR (fig. 2C/2D): centred inputs {−1,1}² (the study's default: the input mean removed,
    as the seed does on images, §3) and the uncentred {0,1}², each with c = 1 and c = 0, ReLU
    and linear, 5 seeds."""
    X, Y = xor_task(levels=(0.0, 1.0))
    Xc, _ = xor_task(levels=CONFIG.xor_levels)
    run = {}
    for name, inputs, constants in (("levels01", X, (0.0, 1.0)), ("centred", Xc, (0.0, 1.0))):
        for act in ("relu", "linear"):
            run[name, act] = _simulate(inputs, Y, constants, act, 5, SIM.xor_steps, keep="none")
    return run


def _xor_rows(xor, name: str, c: float, windows=None) -> np.ndarray:
    index = [i for i, r in enumerate(xor[name, "relu"].conditions) if r["c"] == c]
    relu, linear = (xor[name, act] for act in ("relu", "linear"))
    losses, references = relu.curves["loss"][index], linear.curves["loss"][index]
    return measure.alignment_table(relu.steps, losses, references, CONFIG, window_ends=windows)


def _xor_parts(xor, name: str) -> dict:
    """The parts claims' reading (issue 45): both pairs of a seed over its bias pair's window —
    the bias-linear network's early window, never the bias-free linear network's (on centred
    XOR that network cannot learn, its curve is flat and its own 95 % window noise)."""
    linear = xor[name, "linear"]
    index = [i for i, r in enumerate(linear.conditions) if r["c"] == 1.0]
    windows = [
        early_window(linear.steps, row, CONFIG.window_fraction)
        for row in linear.curves["loss"][index]
    ]
    return _parts(_xor_rows(xor, name, 0.0, windows), _xor_rows(xor, name, 1.0, windows))


def _xor_gap(xor, name: str, c: float) -> Estimate:
    return mean_ci(_xor_rows(xor, name, c)[:, 0])


def test_xor_aligned_with_bias_positive(xor):
    """The seed's bias-ReLU and bias-linear networks on centred XOR (fig. 2D), early window."""
    assert SPEC["xor-aligned-with-bias"].judge(_xor_gap(xor, "centred", 1.0), CONFIG) == "holds"


def test_xor_aligned_with_bias_negative(xor, weak_run):
    """The counterexample run through the study's units: with c = 0.01 the ReLU network parts
    from the linear one on centred XOR (g ≈ 21). Also the bias-free pair (g ≈ 19)."""
    assert _verdict("xor-aligned-with-bias", weak_run, WEAK) == "fails"
    assert SPEC["xor-aligned-with-bias"].judge(_xor_gap(xor, "centred", 0.0), CONFIG) == "fails"


@pytest.fixture(scope="module")
def xor_seeds():
    """Centred XOR with c = 1 and c = 0, ReLU and linear, 20 seeds."""
    X, Y = xor_task(levels=CONFIG.xor_levels)
    return {
        ("centred", act): _simulate(X, Y, (0.0, 1.0), act, 20, SIM.xor_steps, keep="none")
        for act in ("relu", "linear")
    }


def test_xor_part_without_bias_positive(xor_seeds):
    """Bias ablated as the seed ablates it — no input constant left (centred inputs, §3): the
    linear network cannot learn XOR, the ReLU network can. Over the bias pair's window (issue
    45; the bias-free linear network's own window ran to the end of its flat curve, g ≈ 18)
    the bias-free pair is farther apart than the bias pair, seed by seed, and parted: the
    seed's networks, 20 seeds."""
    measured = _xor_parts(xor_seeds, "centred")
    assert SPEC["xor-part-without-bias"].judge(measured, CONFIG) == "holds", measured


def test_xor_part_without_bias_negative(xor):
    """The counterexample run through the study's units: XOR on {0,1}² keeps an input constant
    (the inputs' mean 0.5 acts as a bias, §3), and the 'bias-free' pair stays together, no
    farther apart than the bias pair. (The uncentred encoding, reported as a metric beside the
    centred default.) Also the independent simulation of the same (g ≈ 0.006)."""
    uncentred = replace(RUN, xor_levels=(0.0, 1.0))
    results = _run_units(uncentred, Key.XOR_RELU, Key.XOR_LINEAR)
    assert _verdict("xor-part-without-bias", results, uncentred) != "holds"
    measured = _xor_parts(xor, "levels01")
    assert SPEC["xor-part-without-bias"].judge(measured, CONFIG) != "holds", measured


def test_both_layer_bias_aligned_hierarchy_positive():
    """Appendix F.4's model with a readout bias (appendix C.3): the linear network with the
    units dead at init removed, against the full linear network, 5 seeds (one-shift gap
    ≈ 0.16, issue 30; after the best rescaling it is small)."""
    X, Y = hierarchical_task(4)
    gated = _simulate(X, Y, (1.0,), "gated", 5, SIM.hierarchy_steps, readout_bias=True, keep="none")
    linear = _simulate(
        X, Y, (1.0,), "linear", 5, SIM.hierarchy_steps, readout_bias=True, keep="none"
    )
    measured = _pair_gaps(gated, linear)
    assert SPEC["both-layer-bias-aligned-hierarchy"].judge(measured, CONFIG) == "holds"


def test_both_layer_bias_aligned_hierarchy_negative(weak_run):
    """The counterexample run through the study's units: beside the readout bias, a hidden
    bias too weak to push the units on (c = 0.01): the ReLU loss parts once ȳ is learned
    (g ≈ 0.5). Also a ReLU network that stops halfway through the linear network's drop."""
    assert _verdict("both-layer-bias-aligned-hierarchy", weak_run, WEAK) != "holds"
    steps, linear, _ = _closed_form_losses(1.0, 1.0)
    rows = _rows(steps, _stalled(linear), linear)
    assert SPEC["both-layer-bias-aligned-hierarchy"].judge(float(rows[0, 0]), CONFIG) == "fails"


def test_both_layer_bias_aligned_xor_positive():
    """The seed's networks with biases in both layers on centred XOR (fig. 9B), 5 seeds: small
    g. (Issue 30: on XOR the linear network can learn only the affine part, ȳ, so its early
    window is that phase — the seed's "early dynamics".)"""
    X, Y = xor_task(levels=CONFIG.xor_levels)
    relu, linear = (
        _simulate(X, Y, (1.0,), act, 5, SIM.xor_steps, readout_bias=True, keep="none")
        for act in ("relu", "linear")
    )
    assert SPEC["both-layer-bias-aligned-xor"].judge(_pair_gaps(relu, linear), CONFIG) == "holds"


def test_both_layer_bias_aligned_xor_negative(xor):
    """ReLU networks that stop learning halfway through the linear networks' drop (ȳ only
    half learned)."""
    linear = xor["centred", "linear"]
    loss = linear.curves["loss"][5:]  # c = 1
    rows = _rows(linear.steps, _stalled(loss), loss)
    assert SPEC["both-layer-bias-aligned-xor"].judge(mean_ci(rows[:, 0]), CONFIG) == "fails"


def test_both_layer_bias_aligned_xor_is_a_check(weak_run):
    """Issue 42: the hold is the setup's — the readout bias fits ȳ, all a linear network can
    learn on centred XOR, in both networks alike. With the hidden bias almost gone (c = 0.01)
    the study's own networks still align (g ≈ 0.008): the statement is a check, not counted."""
    spec = SPEC["both-layer-bias-aligned-xor"]
    assert spec.kind == "check" and "identity of the setup" in spec.check
    record = spec.evaluate(weak_run, WEAK)
    assert record.kind == "check" and record.verdict == "holds" and record.measured < 0.02


# =============================================================================================
# §5: the mechanism.
# =============================================================================================
def _half_times(c: float, kept: float, Y=None):
    """Closed-form T½ per mode (eq. 7 from a0·ḡ) on the hierarchy, and the bias mode."""
    X = augmented_task("hierarchy", CONFIG, c)[0]
    Y = hierarchical_task(4)[1] if Y is None else Y
    modes = aligned_modes(X.T, Y.T)
    tau = learning_time_constant(X.shape[0], CONFIG.lr)
    fine = np.linspace(0.0, CONFIG.hierarchy_steps, 4001)
    strengths = mode_strength(fine[:, None], modes.s, modes.d, A0 * kept, tau)
    return measure.mode_half_times(fine, strengths, modes), measure.bias_mode_index(modes), modes


def test_bias_mode_learned_first_positive():
    """Prop. 1 and eq. 7: the bias mode has the largest singular value (s0 = √(c² + 1/P)‖ȳ‖
    = 1.48 against 0.43 next), so its T½ is 0.27 of the next mode's."""
    half, bias, _ = _half_times(1.0, 1.0)
    ratio = measure.bias_mode_ratio(half[None], bias)
    assert SPEC["bias-mode-learned-first"].judge(float(ratio[0]), CONFIG) == "holds"


def test_bias_mode_learned_first_negative():
    """Targets with little mean (y − 0.9 ȳ): the bias mode's s0 is the smallest, it comes last."""
    Y = hierarchical_task(4)[1]
    half, bias, _ = _half_times(1.0, 1.0, Y - 0.9 * Y.mean(axis=0))
    ratio = measure.bias_mode_ratio(half[None], bias)
    assert SPEC["bias-mode-learned-first"].judge(float(ratio[0]), CONFIG) == "fails"


def test_linear_theory_matches_linear_networks_positive(hierarchy):
    """The seed's linear networks against eq. 7 from each one's initial weights."""
    reading = SPEC["linear-theory-matches-linear-networks"].measure(hierarchy, SIM)
    assert SPEC["linear-theory-matches-linear-networks"].judge(reading.measured, CONFIG) == "holds"


def test_linear_theory_matches_linear_networks_negative(hierarchy):
    """Eq. 7 with the wrong time constant (τ = 1/lr, the mean loss's, instead of 1/(P·lr))."""
    relu, linear = pair(hierarchy, Family.HIERARCHY)
    X, modes = measure.hierarchy_modes(SIM, 1.0)
    wrong_tau = 1.0 / SIM.lr
    fine = np.linspace(0.0, float(linear.steps[-1]), 4001)
    mech = measure.mechanism(relu, linear, SIM)
    errors = []
    for k, i in enumerate(np.flatnonzero([r["c"] == 1.0 for r in linear.conditions])):
        theory = measure.theory_trajectory(linear, i, modes, fine, wrong_tau)
        t_theory = measure.mode_half_times(fine, theory, modes)
        errors.append(np.nanmean(np.abs(mech.half_times_linear[k] / t_theory - 1.0)))
    measured = mean_ci(errors)
    assert SPEC["linear-theory-matches-linear-networks"].judge(measured, CONFIG) == "fails"


def test_bias_grows_faster_than_weights_positive(hierarchy):
    """The seed's bias-ReLU networks (fig. 3A), 30 seeds: ratio ≈ 2.2 up to t*."""
    reading = SPEC["bias-grows-faster-than-weights"].measure(hierarchy, SIM)
    assert SPEC["bias-grows-faster-than-weights"].judge(reading.measured, CONFIG) == "holds"


def test_bias_grows_faster_than_weights_negative(centred_targets, sweep_run):
    """The counterexample run through the study's units: a weak hidden bias (c = 0.1) gets a
    gradient that scales with c, and the weights outgrow it (ratio ≈ 0.35). Also the
    re-simulated centred targets (ȳ = 0: no bias mode, §5.2, F.2): ratio ≈ 0.7."""
    assert _verdict("bias-grows-faster-than-weights", sweep_run, RUN, constant=0.1) == "fails"
    reading = SPEC["bias-grows-faster-than-weights"].measure(centred_targets, SIM)
    assert SPEC["bias-grows-faster-than-weights"].judge(reading.measured, CONFIG) == "fails"


def test_biases_drift_upward_positive(hierarchy):
    """The seed's bias-ReLU networks (30 seeds): of the units alive at init with a negative
    initial bias, ≈ 2/3 have risen by t* (appendix F.2: 'many units with slightly negative
    initial b_j still drift upward'), by less than the units with a positive one ('slower')."""
    reading = SPEC["biases-drift-upward"].measure(hierarchy, SIM)
    assert SPEC["biases-drift-upward"].judge(reading.measured, CONFIG) == "holds", reading.detail


def test_biases_drift_upward_negative(sweep_run):
    """The counterexample run through the study's units: a hidden bias too weak to move
    (c = 0.01) — its gradient carries c², so the biases barely move, and in most networks the
    always-on share peaks at initialisation, so nothing has drifted by t*. Also, on the
    criterion: a minority rising, or the negative ones rising faster."""
    assert _verdict("biases-drift-upward", sweep_run, RUN, constant=0.01) != "holds"
    spec = SPEC["biases-drift-upward"]
    assert spec.judge({"drift upward": 0.3, "slower": -0.05}, CONFIG) == "fails"
    assert spec.judge({"drift upward": 0.7, "slower": 0.05}, CONFIG) == "fails"


def test_most_units_always_on_early_positive(hierarchy):
    """A construction that obeys the statement exactly: the bias networks' always-on share
    shooting up to 0.8 early and drifting back (:func:`_shooting_up`). The seed's own networks
    (30 seeds) give 0.51 [0.49, 0.53] on the running mean — the raw argmax's 0.54 was the
    peak of the noise (issue 30): 'most' is not decided there."""
    spec = SPEC["most-units-always-on-early"]
    reading = spec.measure(_shooting_up(hierarchy), SIM)
    assert spec.judge(reading.measured, CONFIG) == "holds"


def test_most_units_always_on_early_negative(hierarchy, sweep_run):
    """The counterexample run through the study's units: with a hidden bias too weak to push
    the units on (c = 0.01) hardly any unit is always on (peak ≈ 0.06). Also without bias
    (c = 0), re-simulated: ≈ 0.06."""
    assert _verdict("most-units-always-on-early", sweep_run, RUN, constant=0.01) == "fails"
    peaks = measure.peak_always_on(hierarchy[Key.HIERARCHY_RELU], SIM)[0.0]
    assert SPEC["most-units-always-on-early"].judge(mean_ci(peaks), CONFIG) == "fails"


def _plateau_then(drift: float, seeds: int, rng, noise: float = 0.03, n: int = 121):
    """Always-on shares on the quick grid (1/10 of the seed's steps): a rise to 0.5 within the
    first tenth, then a linear drift down by ``drift`` to the end, with independent noise."""
    steps = np.arange(n) * float(RUN.record_every)
    t = steps / steps[-1]
    level = 0.05 + 0.45 * np.minimum(t / 0.1, 1.0) - drift * np.clip((t - 0.1) / 0.9, 0, 1)
    return steps, level + rng.normal(0.0, noise, (seeds, n))


def _drift_reading(steps, on, window: float) -> tuple[Estimate, Estimate]:
    """Per seed the claim's decline after the plateau and the old plateau − end reading."""
    new, old = [], []
    for row in on:
        smooth = running_mean(steps, row, window)
        j = int(np.argmax(smooth))
        new.append(measure.decline_after_plateau(steps, row, j, window))
        old.append(smooth[j] - smooth[-1])
    return mean_ci(new), mean_ci(old)


def test_units_drift_back_positive(hierarchy):
    """The seed's bias-ReLU networks (fig. 3C), 30 seeds, and a construction that drifts back
    by 0.1 after the plateau (5 seeds, the quick preset's count)."""
    reading = SPEC["units-drift-back"].measure(hierarchy, SIM)
    assert SPEC["units-drift-back"].judge(reading.measured, CONFIG) == "holds"
    steps, on = _plateau_then(0.1, 5, np.random.default_rng(1))
    new, _ = _drift_reading(steps, on, RUN.smooth_steps)
    assert SPEC["units-drift-back"].judge(new, CONFIG) == "holds"


def test_units_drift_back_negative(sweep_run):
    """The counterexample run through the study's units: a strong hidden bias (c = 3) keeps
    the always-on share on its plateau (decline ≈ 0.01 [−0.01, 0.03])."""
    assert _verdict("units-drift-back", sweep_run, RUN, constant=3.0) != "holds"


def test_units_drift_back_fails_on_drift_free_noise():
    """Issue 42: the old reading, the running mean's plateau minus its end, is ≥ 0 by
    construction (t* is that curve's argmax) and held on drift-free noise in 189–200 of 200
    replications (157 of 200 on the noise here). The claim's decline after the plateau has
    expectation 0 there: in 200
    replications of 5 seeds each it holds about as often as a 95 % interval's one side
    misses (≈ 2.5 %), and it holds on a real drift of 0.1."""
    rng = np.random.default_rng(0)
    spec = SPEC["units-drift-back"]
    new_holds = old_holds = 0
    for _ in range(200):
        steps, on = _plateau_then(0.0, 5, rng)
        new, old = _drift_reading(steps, on, RUN.smooth_steps)
        new_holds += spec.judge(new, CONFIG) == "holds"
        old_holds += spec.judge(old, CONFIG) == "holds"
    assert old_holds >= 120 and new_holds <= 15, (old_holds, new_holds)  # 157 and 1 here


def _linear_function_gap(every: float, Y: np.ndarray | None = None, c: float = 1.0) -> float:
    """The mean-target reading on the bias-linear network in closed form (eq. 7), timed as the
    claim times it: on the bias-mode plateau (:func:`measure.plateau_step` between the bias
    mode's T½ and the next mode's). ``Y``: the targets (default the hierarchy's)."""
    X, Y0 = augmented_task("hierarchy", CONFIG, c)
    Y = Y0 if Y is None else Y
    modes = aligned_modes(X.T, Y.T)
    tau = learning_time_constant(X.shape[0], CONFIG.lr)
    steps = np.arange(0.0, CONFIG.hierarchy_steps + 1, every)
    strengths = mode_strength(steps[:, None], modes.s, modes.d, A0, tau)
    half = measure.mode_half_times(steps, strengths, modes)
    bias = measure.bias_mode_index(modes)
    end = np.nanmin(np.delete(half, bias))
    k = measure.plateau_step(steps, mode_loss(modes, strengths), half[bias], end)
    return measure.mean_target_deviation(modes_to_map(modes, strengths[k]) @ X.T, Y)


def test_early_function_is_mean_target_positive():
    """The bias-linear network in closed form on the quick and the paper grid (every 200 and
    100 steps) — the linear net as the control the issue asks for: it provably passes through
    ŷ ≡ ȳ on the bias-mode plateau. (Timed at the loss closest to L(ȳ) it scored 0.197.)"""
    for every in (200.0, 100.0):
        gap = _linear_function_gap(every)
        assert SPEC["early-function-is-mean-target"].judge(gap, CONFIG) == "holds"


def test_early_function_is_mean_target_negative(sweep_run):
    """The counterexample run through the study's units: with a hidden bias too weak to push
    the units on (c = 0.01) the items separate before ȳ is reached (gap ≈ 0.43). Also the
    closed form on targets with little mean (y − 0.9 ȳ: the bias mode comes last)."""
    assert _verdict("early-function-is-mean-target", sweep_run, RUN, constant=0.01) == "fails"
    Y = hierarchical_task(4)[1]
    gap = _linear_function_gap(200.0, Y - 0.9 * Y.mean(axis=0))
    assert SPEC["early-function-is-mean-target"].judge(gap, CONFIG) == "fails"


def test_kinks_go_negative_positive(hierarchy):
    """The seed's bias-ReLU networks (fig. 12), 30 seeds, share of negative kinks among the
    live units at t* (issue 30: ≈ 0.96; over all units, dead ones included, ≈ 0.67)."""
    reading = SPEC["kinks-go-negative"].measure(hierarchy, SIM)
    assert SPEC["kinks-go-negative"].judge(reading.measured, CONFIG) == "holds"


def test_kinks_go_negative_negative(hierarchy, sweep_run):
    """The counterexample run through the study's units: with c = 0.01 the biases barely move
    and the kinks keep their random signs (≈ 0.43 negative). Also the re-simulated networks
    before any learning (step 0): ≈ half negative."""
    assert _verdict("kinks-go-negative", sweep_run, RUN, constant=0.01) == "fails"
    relu = hierarchy[Key.HIERARCHY_RELU]
    index = [i for i, r in enumerate(relu.conditions) if r["c"] == 1.0]
    W1 = relu.arrays["param_0"][index, 0]
    kinks = -W1[..., -1] / np.linalg.norm(W1[..., :-1], axis=2)
    measured = mean_ci(np.mean(kinks < 0, axis=1))
    assert SPEC["kinks-go-negative"].judge(measured, CONFIG) == "fails"


def test_few_units_dead_positive(hierarchy):
    """Appendix F.4's mechanism: the units dead at initialisation, 1/(P+1) = 0.2 at c = 1, are
    the dead ones — the seed's networks at step 0, 30 seeds."""
    relu = hierarchy[Key.HIERARCHY_RELU]
    index = [i for i, r in enumerate(relu.conditions) if r["c"] == 1.0]
    measured = mean_ci(relu.curves["dead_fraction"][index, 0])
    assert SPEC["few-units-dead"].judge(measured, CONFIG) == "holds"


def test_few_units_dead_negative(sweep_run):
    """The counterexample run through the study's units: at c = 3 more than half the units
    are dead at t* (≈ 0.56). Also F.4's dead share at init there, 1 − ḡ(3) = 0.37."""
    assert _verdict("few-units-dead", sweep_run, RUN, constant=3.0) == "fails"
    assert SPEC["few-units-dead"].judge(1.0 - _alive_at_init(3.0), CONFIG) == "fails"


def _gated_construction(runs: dict) -> dict:
    """The bias-ReLU hierarchy networks with their loss from t* replaced by what the gated
    linear model predicts from there (eq. 15 with the closed-form modes, their own W2, W̃1 and
    gate at t*) times 1 ± 3 % — a network that obeys the statement exactly."""
    results = copy.deepcopy(runs)
    relu = results[Key.HIERARCHY_RELU]
    X, modes = measure.hierarchy_modes(SIM, 1.0)
    tau = learning_time_constant(X.shape[0], SIM.lr)
    mech = measure.hierarchy_mechanism(results, SIM)
    index = [i for i, r in enumerate(relu.conditions) if r["c"] == 1.0]
    for i, t_star in zip(index, mech.t_star, strict=True):
        j = int(np.searchsorted(relu.steps, t_star))
        W1, W2 = relu.arrays["param_0"][i, j], relu.arrays["param_1"][i, j]
        gate = np.all(W1 @ X.T > 0, axis=1)
        times = relu.steps[j:] - relu.steps[j]
        prediction = gated_linear_prediction(W2, W1, gate, modes, times, tau, method="unbalanced")
        wobble = 1.0 + 0.03 * np.sin(times / max(times[-1], 1.0) * 7.0)
        relu.curves["loss"][i, j:] = prediction.loss * wobble
    return results


def test_gated_linear_model_matches_positive(hierarchy):
    """A construction that obeys the statement exactly (:func:`_gated_construction`): from t*
    the network's loss is the gated linear model's, within 3 %. Issue 45: the claim is judged
    on the alignment claims' log scale over the gated model's early window; the seed's own
    networks (30 seeds, re-simulated) do not hold there — the gap is ≈ 0.2 (a 20 % loss
    mismatch), although it is ≈ 1.5 % of L(0) on fig. 4's linear scale (the criterion before,
    chosen post hoc in issue 30, now a metric)."""
    spec = SPEC["gated-linear-model-matches"]
    reading = spec.measure(_gated_construction(hierarchy), SIM)
    assert spec.judge(reading.measured, CONFIG) == "holds", reading.measured
    seeds = spec.measure(hierarchy, SIM)
    assert spec.judge(seeds.measured, CONFIG) != "holds", seeds.measured


def test_gated_linear_model_matches_negative(centred_targets, sweep_run):
    """The counterexample run through the study's units: with a weak hidden bias (c = 0.1) few
    units are always on at t* (≈ 0.1) and the gated model misses the ReLU loss (log gap ≈ 2.6).
    Also the re-simulated centred targets (ȳ = 0: nothing linearises the network)."""
    assert _verdict("gated-linear-model-matches", sweep_run, RUN, constant=0.1) == "fails"
    reading = SPEC["gated-linear-model-matches"].measure(centred_targets, SIM)
    assert SPEC["gated-linear-model-matches"].judge(reading.measured, CONFIG) == "fails"


def test_relu_modes_lag_linear_positive():
    """Appendix F.4 in closed form: each mode from a0·ḡ (ḡ = 0.8) lags by eq. 14's delay."""
    relu, _, _ = _half_times(1.0, _alive_at_init(1.0))
    linear, _, _ = _half_times(1.0, 1.0)
    delay = float(np.mean(relu - linear))
    assert SPEC["relu-modes-lag-linear"].judge(delay, CONFIG) == "holds"


def test_relu_modes_lag_linear_negative():
    """Modes that start larger (a0/ḡ) come first: a negative delay."""
    relu, _, _ = _half_times(1.0, 1.0 / _alive_at_init(1.0))
    linear, _, _ = _half_times(1.0, 1.0)
    assert SPEC["relu-modes-lag-linear"].judge(float(np.mean(relu - linear)), CONFIG) == "fails"


def test_mechanism_checks_hold_at_every_c_the_study_runs(sweep_run):
    """Issue 42: what made ``bias-mode-learned-first`` and ``relu-modes-lag-linear`` checks —
    no setting of the study's own networks fails them: at every c of the sweep (0.01 to 3) the
    bias mode comes first and no ReLU mode comes before its linear twin's."""
    for claim_id in ("bias-mode-learned-first", "relu-modes-lag-linear"):
        assert SPEC[claim_id].kind == "check"
        for c in (0.01, 0.1, 1.0, 3.0):
            assert _verdict(claim_id, sweep_run, RUN, constant=c) != "fails", (claim_id, c)
    assert SPEC["linear-theory-matches-linear-networks"].kind == "check"


def test_delay_predicted_by_gating_positive():
    """Appendix F.4's model itself: T½ from a0·ḡ minus T½ from a0, against eq. 14 (ratio 1)."""
    kept = _alive_at_init(1.0)
    relu, _, modes = _half_times(1.0, kept)
    linear, _, _ = _half_times(1.0, 1.0)
    tau = learning_time_constant(4, CONFIG.lr)
    predicted = relu_hitting_delay(modes.s, modes.d, A0, tau, kept)
    ratio = measure.delay_ratio(relu[None], linear[None], predicted[None])
    assert SPEC["delay-predicted-by-gating"].judge(float(ratio[0]), CONFIG) == "holds"


def test_delay_predicted_by_gating_negative(sweep_run):
    """The counterexample run through the study's units: the seed's own setting (c = 1), where
    the measured delays are ≈ 2.7× eq. 14's. Also the delays as the study measures them,
    ≈ 12–15 % of each mode's half-time (issue 30), against eq. 14 with ḡ = 0.8: ≈ 3×."""
    assert _verdict("delay-predicted-by-gating", sweep_run, RUN) == "fails"
    kept = _alive_at_init(1.0)
    linear, _, modes = _half_times(1.0, 1.0)
    tau = learning_time_constant(4, CONFIG.lr)
    predicted = relu_hitting_delay(modes.s, modes.d, A0, tau, kept)
    ratio = measure.delay_ratio((1.135 * linear)[None], linear[None], predicted[None])
    assert SPEC["delay-predicted-by-gating"].judge(float(ratio[0]), CONFIG) == "fails"


# =============================================================================================
# §6: downstream consequences.
# =============================================================================================
@pytest.fixture(scope="module")
def xor_plus_linear():
    """XOR + a linear feature (Δ = 0.5, fig. 5): appendix F.4's model and the linear network
    at c = 1, 10 seeds."""
    X, Y = xor_linear_task(CONFIG.margin_delta, levels=CONFIG.xor_levels)
    return {
        act: _simulate(X, Y, (1.0,), act, 10, SIM.xor_linear_steps, delta=0.5, keep="none")
        for act in ("gated", "linear")
    }


def test_xor_linear_bias_relu_tracks_linear_positive(xor_plus_linear):
    """Appendix F.4's model — the ReLU network as the linear one less its dead units, the
    seed's account of 'a small time-shift' (fig. 5B) — 10 seeds: g ≈ 0.06."""
    measured = _pair_gaps(xor_plus_linear["gated"], xor_plus_linear["linear"])
    assert SPEC["xor-linear-bias-relu-tracks-linear"].judge(measured, CONFIG) == "holds"


def test_xor_linear_bias_relu_tracks_linear_negative(xor_plus_linear, weak_run):
    """The counterexample run through the study's units: with c = 0.01 the ReLU loss parts
    from the linear one (g ≈ 2.2). Also ReLU losses that stop halfway through the linear
    networks' drop."""
    assert _verdict("xor-linear-bias-relu-tracks-linear", weak_run, WEAK) == "fails"
    linear = xor_plus_linear["linear"]
    loss = linear.curves["loss"]
    measured = mean_ci(_rows(linear.steps, _stalled(loss), loss)[:, 0])
    assert SPEC["xor-linear-bias-relu-tracks-linear"].judge(measured, CONFIG) == "fails"


def _network(W1: np.ndarray, W2: np.ndarray, c: float) -> dict:
    """Five seeds that all converged to one network (final weights, input constant ``c``),
    as the stored results the reliance claims read."""
    conditions = [{"c": c, "delta": CONFIG.margin_delta, "seed": k} for k in range(5)]
    arrays = {"param_0": np.stack([W1] * 5), "param_1": np.stack([W2] * 5)}
    curves = {k: np.ones((5, 1)) for k in ("loss", "always_on_fraction", "dead_fraction")}
    unit = UnitResult(
        conditions, np.zeros(1), curves, {}, np.zeros(5, bool), np.full(5, -1), arrays
    )
    return {Key.XOR_PLUS_LINEAR_RELU: unit}


def _linear_solution() -> dict:
    """The least-squares affine map on XOR + linear at c = 1 — what the bias-linear network
    converges to; XOR has no affine component, so it reads the mean and x3 — as a ReLU
    network, σ(Mx) − σ(−Mx) = Mx."""
    X, Y = augmented_task("xor-linear", CONFIG, CONFIG.constant)
    M = np.linalg.lstsq(X, Y, rcond=None)[0].T  # (out, d + 1)
    W2 = np.hstack([np.eye(2), -np.eye(2)])
    return _network(np.vstack([M, -M]), W2, CONFIG.constant)


def _xor_network(c: float) -> dict:
    """A bias-free ReLU network built to solve the centred task through XOR (fig. 5C, no bias):
    ŷ₁ = |x1 − x2| + 0.1σ(x3), ŷ₀ = |x1 + x2| + 0.1σ(−x3) (each |·| two ReLUs); it ignores
    the constant input. It fits every training point and sides with XOR on all 4 conflict
    points."""
    W1 = np.array(
        [[1, -1, 0, 0], [-1, 1, 0, 0], [1, 1, 0, 0], [-1, -1, 0, 0], [0, 0, 1, 0], [0, 0, -1, 0]],
        dtype=float,
    )
    W2 = np.array([[0, 0, 1, 1, 0, 0.1], [1, 1, 0, 0, 0.1, 0]])
    X, Y = augmented_task("xor-linear", CONFIG, c)
    _, outputs = measure.forward(W1, W2, X, relu=True)
    assert (outputs.argmax(axis=0) == Y.argmax(axis=1)).all()
    return _network(W1, W2, c)


def _x3_network(c: float) -> dict:
    """A bias-free ReLU network that solves the task by the linear feature alone:
    ŷ₁ = σ(x3), ŷ₀ = σ(−x3)."""
    W1 = np.array([[0, 0, 1.0, 0], [0, 0, -1.0, 0]])
    return _network(W1, np.array([[0, 1.0], [1.0, 0]]), c)


def test_xor_linear_bias_relu_uses_linear_feature_positive():
    """The linear solution, which the bias-ReLU networks follow (fig. 5C): every conflict
    point by x3."""
    reading = SPEC["xor-linear-bias-relu-uses-linear-feature"].measure(_linear_solution(), CONFIG)
    assert SPEC["xor-linear-bias-relu-uses-linear-feature"].judge(reading.measured) == "holds"


def test_xor_linear_bias_relu_uses_linear_feature_negative(weak_run):
    """The counterexample run through the study's units: with a hidden bias too weak to matter
    (c = 0.01) the ReLU networks solve the task through XOR (share 0). Also a hand-built
    network that does so."""
    assert _verdict("xor-linear-bias-relu-uses-linear-feature", weak_run, WEAK) == "fails"
    results = _xor_network(CONFIG.constant)
    reading = SPEC["xor-linear-bias-relu-uses-linear-feature"].measure(results, CONFIG)
    assert SPEC["xor-linear-bias-relu-uses-linear-feature"].judge(reading.measured) == "fails"


def test_xor_linear_bias_free_uses_xor_positive():
    """The bias-free ReLU network that uses XOR (fig. 5C, 'without bias'): share 0."""
    reading = SPEC["xor-linear-bias-free-uses-xor"].measure(_xor_network(0.0), CONFIG)
    assert SPEC["xor-linear-bias-free-uses-xor"].judge(reading.measured, CONFIG) == "holds"


def test_xor_linear_bias_free_uses_xor_negative(weak_run):
    """The counterexample run through the study's units: a wider margin (Δ = 1, XOR : x3
    scale 1) — the bias-free networks read x3 (share 1). Also a hand-built bias-free network
    that reads x3 only. (Issue 30: the trained bias-free networks flip between the two with
    the XOR : x3 scale.)"""
    assert _verdict("xor-linear-bias-free-uses-xor", weak_run, WEAK, margin_delta=1.0) == "fails"
    reading = SPEC["xor-linear-bias-free-uses-xor"].measure(_x3_network(0.0), CONFIG)
    assert SPEC["xor-linear-bias-free-uses-xor"].judge(reading.measured, CONFIG) == "fails"


@pytest.fixture(scope="module")
def parallel():
    """The parallel task (fig. 6), bias-ReLU and bias-free ReLU, 10 seeds (the seed's)."""
    X, Y = parallel_task()
    return {
        Key.PARALLEL_RELU: _simulate(X, Y, (0.0, 1.0), "relu", 10, SIM.parallel_steps, keep="final")
    }


def _exchanged(measured: list) -> list:
    return [(name, value) for (name, _), (_, value) in zip(measured, measured[::-1], strict=True)]


def _swapped(claim_id: str, results: dict):
    """The claim's reading with the bias and bias-free networks' values exchanged (in every
    part of a compound reading)."""
    measured = SPEC[claim_id].measure(results, SIM).measured
    if isinstance(measured, dict):
        return {part: _exchanged(values) for part, values in measured.items()}
    return _exchanged(measured)


def _judge_parallel(claim_id: str, results: dict) -> str:
    reading = SPEC[claim_id].measure(results, SIM)
    return SPEC[claim_id].judge(reading.measured, CONFIG)


@pytest.fixture(scope="module")
def parallel_gated():
    """The parallel task at c = 1: appendix F.4's model (the linear network less its units
    dead at init) and the linear network, 5 seeds."""
    X, Y = parallel_task()
    return {
        act: _simulate(X, Y, (1.0,), act, 5, SIM.parallel_steps, keep="none")
        for act in ("gated", "linear")
    }


def test_parallel_aligned_with_bias_positive(parallel_gated):
    """Appendix F.4's model against the linear network on the parallel task (fig. 6B)."""
    measured = _pair_gaps(parallel_gated["gated"], parallel_gated["linear"])
    assert SPEC["parallel-aligned-with-bias"].judge(measured, CONFIG) == "holds"


def test_parallel_aligned_with_bias_negative(parallel_gated, weak_run):
    """The counterexample run through the study's units: with c = 0.01 the ReLU loss parts
    from the linear one (g ≈ 0.25). Also ReLU losses that stop halfway through the linear
    networks' drop."""
    assert _verdict("parallel-aligned-with-bias", weak_run, WEAK) != "holds"
    linear = parallel_gated["linear"]
    loss = linear.curves["loss"]
    measured = mean_ci(_rows(linear.steps, _stalled(loss), loss)[:, 0])
    assert SPEC["parallel-aligned-with-bias"].judge(measured, CONFIG) == "fails"


def test_parallel_waits_at_linear_loss_positive(parallel):
    """The seed's networks (fig. 6B): bias-ReLU waits ≈ 4× longer at the linear-task loss."""
    assert _judge_parallel("parallel-waits-at-linear-loss", parallel) == "holds"


def test_parallel_waits_at_linear_loss_negative(parallel, weak_run):
    """The counterexample run through the study's units: with c = 0.01 neither network waits
    at the linear-task loss. Also the bias-free networks in the bias slot."""
    assert _verdict("parallel-waits-at-linear-loss", weak_run, WEAK) != "holds"
    swapped = _swapped("parallel-waits-at-linear-loss", parallel)
    assert SPEC["parallel-waits-at-linear-loss"].judge(swapped, CONFIG) == "fails"


def test_parallel_lower_rank_with_bias_positive(parallel):
    """The seed's networks (fig. 6C): effective rank 3.35 with bias, 3.80 without, and lower
    with bias in the centred Gram matrix too (issue 45 requires both: much of the uncentred
    gap is the bias offset)."""
    assert _judge_parallel("parallel-lower-rank-with-bias", parallel) == "holds"
    measured = SPEC["parallel-lower-rank-with-bias"].measure(parallel, SIM).measured
    offset_only = {**measured, "centred": _exchanged(measured["centred"])}
    assert SPEC["parallel-lower-rank-with-bias"].judge(offset_only, CONFIG) == "fails"


def test_parallel_lower_rank_with_bias_negative(parallel, weak_run):
    """The counterexample run through the study's units: with c = 0.01 the ranks with and
    without the bias are the same. Also the bias-free networks in the bias slot."""
    assert _verdict("parallel-lower-rank-with-bias", weak_run, WEAK) != "holds"
    swapped = _swapped("parallel-lower-rank-with-bias", parallel)
    assert SPEC["parallel-lower-rank-with-bias"].judge(swapped, CONFIG) == "fails"


def test_parallel_simple_overrepresented_with_bias_positive(parallel):
    """The seed's networks (fig. 6D): R²(simple) 0.57 with bias, 0.48 without."""
    assert _judge_parallel("parallel-simple-overrepresented-with-bias", parallel) == "holds"


def test_parallel_simple_overrepresented_with_bias_negative(parallel, weak_run):
    """The counterexample run through the study's units: with c = 0.01 R²(simple) is the same
    with and without the bias. Also the bias-free networks in the bias slot."""
    claim_id = "parallel-simple-overrepresented-with-bias"
    assert _verdict(claim_id, weak_run, WEAK) != "holds"
    swapped = _swapped("parallel-simple-overrepresented-with-bias", parallel)
    assert SPEC["parallel-simple-overrepresented-with-bias"].judge(swapped, CONFIG) == "fails"


def test_parallel_less_variance_explained_without_bias_positive(parallel):
    """The seed's networks (fig. 6D, §6.2): R² on both features ≈ 0.72 without bias, ≈ 0.77
    with it."""
    claim_id = "parallel-less-variance-explained-without-bias"
    assert _judge_parallel(claim_id, parallel) == "holds"


def test_parallel_less_variance_explained_without_bias_negative(parallel, weak_run):
    """The counterexample run through the study's units: with c = 0.01 the two R² are the same
    (0.716 each). Also the bias-free networks in the bias slot."""
    claim_id = "parallel-less-variance-explained-without-bias"
    assert _verdict(claim_id, weak_run, WEAK) != "holds"
    assert SPEC[claim_id].judge(_swapped(claim_id, parallel), CONFIG) == "fails"


def test_parallel_simple_over_complex_positive(parallel):
    """The seed's networks (fig. 6D): R²(simple) − R²(complex) ≈ 0.36 and 0.23."""
    assert _judge_parallel("parallel-simple-over-complex", parallel) == "holds"


def test_parallel_simple_over_complex_negative():
    """Representations that encode the complex (XNOR) feature and not the simple one."""
    from relulab.analysis import variance_explained
    from relulab.tasks import PARALLEL_COMPLEX, PARALLEL_SIMPLE

    rng = np.random.default_rng(0)
    differences = []
    for _ in range(5):
        H = np.outer(PARALLEL_COMPLEX, rng.normal(size=16)) + 0.05 * rng.normal(size=(4, 16))
        differences.append(
            variance_explained(H, PARALLEL_SIMPLE) - variance_explained(H, PARALLEL_COMPLEX)
        )
    measured = {"bias": mean_ci(differences), "no bias": mean_ci(differences)}
    assert SPEC["parallel-simple-over-complex"].judge(measured, CONFIG) == "fails"


def test_parallel_simple_over_complex_is_a_check(weak_run):
    """Issue 42: no setting of the study's networks fails it — the simple feature is linear in
    the inputs and ReLU features carry mostly their linear part, learned or not: it holds with
    a hidden bias too weak to matter (c = 0.01) and after 1/150 of the horizon (barely
    trained). A check, not counted."""
    spec = SPEC["parallel-simple-over-complex"]
    assert spec.kind == "check"
    assert _verdict("parallel-simple-over-complex", weak_run, WEAK) == "holds"
    short = replace(RUN, parallel_steps=200)
    barely = _run_units(short, Key.PARALLEL_RELU, Key.PARALLEL_LINEAR)
    assert _verdict("parallel-simple-over-complex", barely, short) == "holds"


# =============================================================================================
# Appendix C.4: the bias magnitude c.
# =============================================================================================
def test_c_sweep_aligned_for_every_c_positive():
    """Appendix F.4 in closed form at every c > 0 of the sweep, each with its own ḡ(c)
    (0.94, 0.92, 0.80, 0.63 alive at init): after the best rescaling g ≈ 0.011, 0.021, 0.014,
    0.041 (one-shift gaps 0.033, 0.030, 0.116, 0.309, issue 30)."""
    measured = {
        f"c={c:g}": _closed_form_gap(c, _alive_at_init(c)) for c in CONFIG.all_constants if c > 0
    }
    assert SPEC["c-sweep-aligned-for-every-c"].judge(measured, CONFIG) == "holds"


def test_c_sweep_aligned_for_every_c_negative(sweep_run):
    """The counterexample run through the study's units: a sweep that reaches c = 0.01, where
    the ReLU loss parts from the linear one (g ≈ 0.24). Also, on the criterion: every c aligned
    but one, where most units are dead at init (ḡ = 0.2)."""
    assert _verdict("c-sweep-aligned-for-every-c", sweep_run, RUN) != "holds"
    measured = {f"c={c:g}": 0.02 for c in CONFIG.all_constants if c > 0}
    measured["c=0.3"] = _closed_form_gap(0.3, 0.2)
    assert SPEC["c-sweep-aligned-for-every-c"].judge(measured, CONFIG) == "fails"


def test_c_sweep_linear_units_rise_positive(c_sweep):
    """A construction that obeys the statement exactly (:func:`_shooting_up`). The seed's own
    networks do not: at c = 0.1 the peak is ≈ 0.1 (c = 0: ≈ 0.06), at c = 0.3 ≈ 0.3, so the
    claim is not reproduced there — 'irrespective of c' fails at small c."""
    results = _shooting_up(c_sweep)
    reading = SPEC["c-sweep-linear-units-rise"].measure(results, SIM)
    assert SPEC["c-sweep-linear-units-rise"].judge(reading.measured, CONFIG) == "holds"
    seeds = SPEC["c-sweep-linear-units-rise"].measure(c_sweep, SIM)
    assert SPEC["c-sweep-linear-units-rise"].judge(seeds.measured, CONFIG) == "fails"


def _few_gating(runs: dict) -> dict:
    """The runs with every c > 0 network's unit shares replaced by what Fig. 10 describes: the
    always-on share shooting up to 0.8 (:func:`_shooting_up`) and 15 % of the units dead, so
    that at most ≈ 5 % gate at t*; the bias-free networks (c = 0) as simulated."""
    results = _shooting_up(runs)
    relu = results[Key.HIERARCHY_RELU]
    rng = np.random.default_rng(1)
    for i, row in enumerate(relu.conditions):
        if row["c"] > 0:
            dead = 0.15 + rng.normal(0, 0.01, relu.steps.shape)
            relu.curves["dead_fraction"][i] = np.minimum(
                dead, 1 - relu.curves["always_on_fraction"][i]
            )
    return results


def test_c_sweep_gating_small_unless_c_0_positive(c_sweep):
    """A construction that obeys the statement exactly (:func:`_few_gating`): at every c > 0
    few units gate at t*, at c = 0 most do. The seed's own networks do not: at c = 0.1 ≈ 0.7
    of the units gate at t* and at c = 0.3 ≈ 0.5 (c = 1: 0.15, c = 3: ≈ 0) — 'small unless
    c = 0' fails at small c, as the always-on share does."""
    spec = SPEC["c-sweep-gating-small-unless-c-0"]
    reading = spec.measure(_few_gating(c_sweep), SIM)
    assert spec.judge(reading.measured, CONFIG) == "holds", reading.measured
    seeds = spec.measure(c_sweep, SIM)
    assert spec.judge(seeds.measured, CONFIG) == "fails"


def test_c_sweep_gating_small_unless_c_0_negative(c_sweep, sweep_run):
    """The counterexample run through the study's units: a sweep that reaches c = 0.01, where
    most units gate (≈ 0.8, as at c = 0). Also the construction with c = 0's networks in the
    c = 0.1 slot."""
    assert _verdict("c-sweep-gating-small-unless-c-0", sweep_run, RUN) == "fails"
    results = _few_gating(c_sweep)
    relu, original = results[Key.HIERARCHY_RELU], c_sweep[Key.HIERARCHY_RELU]
    zero = [i for i, r in enumerate(relu.conditions) if r["c"] == 0.0]
    small = [i for i, r in enumerate(relu.conditions) if r["c"] == 0.1]
    for field in ("always_on_fraction", "dead_fraction"):
        relu.curves[field][small] = original.curves[field][zero]
    reading = SPEC["c-sweep-gating-small-unless-c-0"].measure(results, SIM)
    assert SPEC["c-sweep-gating-small-unless-c-0"].judge(reading.measured, CONFIG) == "fails"


def test_c_sweep_linear_units_rise_negative(c_sweep, sweep_run):
    """The counterexample run through the study's units: a sweep that reaches c = 0.01, where
    hardly any unit is driven always-on (≈ 0.06, as at c = 0). Also a c > 0 at which no unit is
    driven on beyond the bias-free networks (in the construction, c = 0.1's networks replaced
    by c = 0's)."""
    assert _verdict("c-sweep-linear-units-rise", sweep_run, RUN) == "fails"
    results = _shooting_up(c_sweep)
    relu = results[Key.HIERARCHY_RELU]
    zero = [i for i, r in enumerate(relu.conditions) if r["c"] == 0.0]
    small = [i for i, r in enumerate(relu.conditions) if r["c"] == 0.1]
    relu.curves["always_on_fraction"][small] = c_sweep[Key.HIERARCHY_RELU].curves[
        "always_on_fraction"
    ][zero]
    reading = SPEC["c-sweep-linear-units-rise"].measure(results, SIM)
    assert SPEC["c-sweep-linear-units-rise"].judge(reading.measured, CONFIG) == "fails"


# =============================================================================================
# The pipeline, the config, the numerics.
# =============================================================================================
def test_tiny_run_end_to_end(tmp_path):
    out = tmp_path / "run"
    args = ["run", "early-linearization", "--quiet", "--out", str(out), "--threads", "1"]
    assert main(args + [f"--set={s}" for s in TINY]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [c["id"] for c in summary["claims"]] == [s.id for s in CLAIMS if s.kind == "claim"]
    assert [c["id"] for c in summary["checks"]] == [s.id for s in CLAIMS if s.kind == "check"]
    for claim in summary["claims"] + summary["checks"]:
        assert math.isfinite(claim["measured"]), claim["id"]
        assert claim["source"].startswith("seed 004"), claim["id"]
        assert claim["verdict"] in ("holds", "fails", "inconclusive")
        assert not claim["beyond_seed"], claim["id"]
    assert (out / "alignment.png").exists() and (out / "mds.png").exists()
    assert main(args + [f"--set={s}" for s in TINY]) == 0  # resumes: nothing to recompute


def test_every_claim_is_a_spec_in_scorecard_order():
    assert len(CLAIMS) == 31 and len(SPEC) == 31
    assert CLAIMS[0].id == "hierarchy-aligned-with-bias"
    assert CLAIMS[-1].id == "c-sweep-gating-small-unless-c-0"


CHECKS = {
    "both-layer-bias-aligned-xor",
    "bias-mode-learned-first",
    "linear-theory-matches-linear-networks",
    "relu-modes-lag-linear",
    "parallel-simple-over-complex",
}


def test_every_claim_names_its_counterexample_and_every_check_why():
    """Issue 42: a claim names the setting under which it fails (its negative control runs it
    through the study's units); a check says why the experiment could not fail it."""
    assert {spec.id for spec in CLAIMS if spec.kind == "check"} == CHECKS
    for spec in CLAIMS:
        if spec.kind == "check":
            assert len(spec.check) > 80 and not spec.counterexample, spec.id
        else:
            assert len(spec.counterexample) > 30, spec.id


def test_the_gated_claim_is_judged_on_the_alignment_scale(sweep_run):
    """Issue 45, one scoring convention: the gated model is judged as the alignment claims are
    — the log gap over the reference's (the gated model's) early window — not on the linear
    scale issue 30 chose after the log gap had failed (a property of Fig. 4 the text cannot
    show). The linear-scale gap stays in the detail and the metrics; no post-hoc choice is
    left to declare."""
    spec = SPEC["gated-linear-model-matches"]
    assert not spec.post_hoc and "log" in spec.criterion_for(CONFIG).quantity
    record = spec.evaluate(sweep_run, RUN)
    assert "fig. 4's plotting scale" in record.detail and record.measured > 0.05


# =============================================================================================
# Issue 45: the rescaling bound, eq. 14's κ and one scoring convention.
# =============================================================================================
def test_eq14_rescale_is_the_slowdown_of_f4s_closed_form():
    """Eq. 14's κ of a variant (:func:`measure.eq14_rescale`'s ratios of eq. 13's hitting
    times) is the slow-down the alignment fit finds on appendix F.4's closed-form ReLU network
    against eq. 7's linear one: ≈ 1.05 on the hierarchy at c = 1 — about a third of what the
    fits of the simulated networks find (κ ≈ 1.15–1.2; F.2 says the observed shift is
    smaller than §5.4 implies)."""
    kept = _alive_at_init(1.0)
    steps, linear, relu = _closed_form_losses(1.0, kept)
    fitted = float(_rows(steps, relu, linear)[0, 3])
    X, Y = augmented_task("hierarchy", CONFIG, 1.0)
    ratios = rescaling.eq14_ratios(X, Y, kept, A0, CONFIG.lr)
    assert abs(fitted - float(np.mean(ratios))) < 0.01 and 1.03 < fitted < 1.08


def test_rescale_bound_eq14_is_a_declared_reading(sweep_run):
    """Issue 45: eq. 14's own κ is a declared reading of the 'slight time shift' (judged on the
    stored units), and the seed's networks, ≈ 17 % slower than their linear twins, do not align
    within it: the alignment claims depend on the reading."""
    assert alternatives(CONFIG)["rescale_bound"] == ("eq14",)
    eq14 = replace(RUN, rescale_bound="eq14")
    assert _verdict("hierarchy-aligned-with-bias", sweep_run, RUN) == "holds"
    assert _verdict("hierarchy-aligned-with-bias", sweep_run, eq14) != "holds"
    relu = sweep_run[Key.HIERARCHY_RELU]
    kappa = measure.eq14_rescale(relu, RUN, c=1.0)
    assert 1.02 < kappa < 1.1
    assert measure.rescale_bound(relu, eq14, c=1.0) == pytest.approx(kappa - 1.0)


def test_one_scoring_convention_the_relu_curve_may_only_lag():
    """Issue 45: the rescaling is one-sided, 1 ≤ κ ≤ 1 + max_rescale ('dead neurons always
    increase the hitting time', §5.4; F.4) and no additive shift is searched — the same
    measure as linearization-images'. A ReLU curve ahead of the linear one is not absorbed."""
    steps, linear, _ = _closed_form_losses(1.0, 1.0)
    faster = np.interp(steps / 0.85, steps, linear)
    rows = _rows(steps, faster, linear)
    assert rows[0, 3] == 1.0 and rows[0, 1] == 0.0 and rows[0, 0] > 0.1
    slower = np.interp(steps / 1.15, steps, linear)
    assert _rows(steps, slower, linear)[0, 0] < 0.02


def test_a_diverged_network_ranks_last_in_every_claim_that_reads_it(sweep_run):
    """One divergence policy (issue 42): a bias-ReLU hierarchy network whose loss goes
    non-finite is counted as diverged, the same way, in the alignment claim and in the
    mechanism claims that read it, and none of them holds on it — no sentinel, no drop."""
    results = copy.deepcopy(sweep_run)
    relu = results[Key.HIERARCHY_RELU]
    i = [k for k, r in enumerate(relu.conditions) if r["c"] == RUN.constant][2]
    relu.curves["loss"][i, -5:] = np.inf
    relu.diverged[i] = True
    ids = ("hierarchy-aligned-with-bias", "kinks-go-negative", "bias-grows-faster-than-weights")
    for claim_id in ids:
        record = SPEC[claim_id].evaluate(results, RUN)
        assert record.diverged["ReLU c=1"] == (1, RUN.seeds), claim_id
        assert record.verdict == "fails" and "1 of 5 networks diverged" in record.detail, claim_id
    clean = SPEC["kinks-go-negative"].evaluate(sweep_run, RUN)
    assert clean.verdict == "holds" and clean.diverged["ReLU c=1"] == (0, RUN.seeds)


def test_every_planned_unit_has_a_view_that_reads_it():
    """The typed schema: every unit ``plan`` produces is declared in ``unit_views`` and its
    stored data match the view (a tiny run)."""
    config = EarlyLinearizationConfig(
        hidden=4,
        seeds=3,
        hierarchy_steps=40,
        xor_steps=40,
        xor_linear_steps=40,
        parallel_steps=40,
        record_every=4,
        constants=(0.0, 1.0),
        deltas=(0.5,),
        map_variances=(4e-4,),
        map_constants=(0.0, 1.0),
        map_seeds=1,
        map_widths=(4,),
    )
    views = unit_views(config)
    units = plan(config)
    assert {unit.name for unit in units} == set(views)
    for unit in units:
        views[unit.name].check(unit.run(CONTEXT), unit.name)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("constants=1,3", "constants must include 0"),
        ("hidden=0", "hidden must be positive"),
        ("seeds=2", "seeds must be at least 3"),
        ("window_fraction=1", "window_fraction must be less than 1"),
        ("max_shift=-0.1", "max_shift must be at least 0"),
        ("max_rescale=-0.1", "max_rescale must be at least 0"),
        ("xor_levels=-1,0,1", "xor_levels must be two different values"),
        ("small_subset=1", "small_subset must be less than 1"),
        ("alignment_tolerance=0", "alignment_tolerance must be positive"),
        ("map_seeds=11", "map_seeds must not exceed seeds"),
        ("record_every=5000", "≥ 10 recordings"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, setting, message):
    out = tmp_path / "bad"
    code = main(["run", "early-linearization", "--out", str(out), f"--set={setting}"])
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_prop1_on_the_experiments_augmented_hierarchy():
    for n_items in (4, 8):
        config = EarlyLinearizationConfig(n_items=n_items)
        X, Y = augmented_task("hierarchy", config, 1.0)
        sigma_x = X.T @ X / X.shape[0]
        expected = bias_mode(n_items, 1.0, Y.mean(axis=0))
        np.testing.assert_allclose(
            np.sort(np.linalg.eigvalsh(sigma_x))[::-1], expected.eigenvalues, atol=1e-12
        )
        modes = aligned_modes(X.T, Y.T)
        assert modes.s[0] == pytest.approx(expected.s0, rel=1e-12)


def test_alive_share_at_init_is_one_over_p_plus_one_dead_at_c_1():
    """Equicorrelated Gaussians (ρ = ½) are all negative with probability 1/(P+1)."""
    assert _alive_at_init(1.0) == pytest.approx(0.8, abs=1e-9)
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(200_000, 4)), rng.normal(size=(200_000, 1))
    assert np.mean((w + 0.3 * b < 0).all(axis=1)) == pytest.approx(
        1 - _alive_at_init(0.3), abs=3e-3
    )


def test_closed_form_modes_match_an_aligned_balanced_network_on_the_engine():
    """Seed eq. 7 against the batched engine: an aligned, balanced linear net on the augmented
    4-item hierarchy (c = 1), sum loss, GD at the seed's lr. GD vs gradient flow differs by
    O(P·lr·s); stated tolerance: 1 % of each mode's asymptote."""
    X, Y = augmented_task("hierarchy", CONFIG, 1.0)
    modes = aligned_modes(X.T, Y.T)
    a0 = np.full(modes.n_modes, 1e-3)
    n_hidden = 8
    R = np.linalg.qr(np.random.default_rng(0).standard_normal((n_hidden, modes.n_modes)))[0]
    root = np.diag(np.sqrt(a0))
    model = BatchedMLP(MLPSpec((5, n_hidden, 7), activation="linear", bias=False), 1, dtype=F64)
    with torch.no_grad():
        model.weights[0][0] = torch.from_numpy(R @ root @ modes.V.T)
        model.weights[1][0] = torch.from_numpy(modes.U @ root @ R.T)
    problem = SupervisedProblem(
        model, torch.from_numpy(X), torch.from_numpy(Y), loss="half_sum", record_parameters=True
    )
    tau = learning_time_constant(X.shape[0], CONFIG.lr)
    steps = int(25 * tau)
    result = train(problem, BatchedSGD(problem.params, CONFIG.lr), steps, record_every=500)
    W1, W2 = result.curves["param_0"][0], result.curves["param_1"][0]
    simulated = mode_projections(W2, W1, modes)
    theory = mode_strength(result.steps[:, None], modes.s, modes.d, a0, tau)
    assert np.max(np.abs(simulated - theory) / modes.asymptotes) < 1e-2
    assert np.all(simulated[-1] / modes.asymptotes > 0.99)


def test_batched_family_matches_a_per_network_torch_optim_loop_with_the_sum_loss():
    """The experiment's set-up (input constant per network, c = 0 for no bias, N(0, σ²) init,
    sum loss, full-batch GD) against ``torch.optim.SGD`` on each network alone, in float64;
    the recorded parameter snapshots are the loop's parameters at the recorded steps."""
    X, Y = hierarchical_task(4)
    x = torch.from_numpy(X)
    constants = [1.0, 0.0, 0.3]
    xs = torch.stack([append_constant(x, c) for c in constants])
    y = torch.from_numpy(Y)
    lr, steps, every = 0.02, 30, 10
    model = BatchedMLP(
        MLPSpec((5, 16, 7), bias=False),
        3,
        init="normal",
        init_scale=0.1,
        seeds=[4, 5, 6],
        dtype=F64,
    )
    modules = [model.module(s) for s in range(3)]
    problem = SupervisedProblem(model, xs, y.expand(3, 4, 7), "half_sum", record_parameters=True)
    result = train(problem, BatchedSGD(problem.params, lr), steps, every)
    for s, module in enumerate(modules):
        optimiser = torch.optim.SGD(module.parameters(), lr=lr)
        snapshots = []
        for step in range(steps + 1):
            if step % every == 0:
                snapshots.append([p.detach().clone() for p in module.parameters()])
            if step == steps:
                break
            optimiser.zero_grad()
            loss = 0.5 * (module(xs[s]) - y).square().sum()
            loss.backward()
            optimiser.step()
        for t, params in enumerate(snapshots):
            for k, p in enumerate(params):
                np.testing.assert_allclose(
                    result.curves[f"param_{k}"][s, t], p.numpy(), rtol=1e-12, atol=1e-14
                )
    # c = 0: the constant column never moves (the bias-free variant)
    first = result.curves["param_0"][1, :, :, -1]
    np.testing.assert_array_equal(first, np.broadcast_to(first[0], first.shape))
