"""early-linearization (seed 004, toy tasks): end to end, counter-examples for every kind of
claim, the closed-form modes against the batched engine, and the engine against a plain loop."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from relulab.cli import main
from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.experiments.early_linearization import claims as el_claims
from relulab.experiments.early_linearization.config import EarlyLinearizationConfig
from relulab.experiments.early_linearization.measure import Mechanism, Parallel
from relulab.experiments.early_linearization.units import augmented_task
from relulab.tasks import append_constant, hierarchical_task
from relulab.theory.deep_linear import (
    aligned_modes,
    bias_mode,
    learning_time_constant,
    mode_projections,
    mode_strength,
)

F64 = torch.float64
CONFIG = EarlyLinearizationConfig()
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


def test_tiny_run_end_to_end(tmp_path):
    out = tmp_path / "run"
    args = ["run", "early-linearization", "--quiet", "--out", str(out), "--threads", "1"]
    assert main(args + [f"--set={s}" for s in TINY]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["claims"]) >= 20
    for claim in summary["claims"]:
        assert math.isfinite(claim["measured"]), claim["id"]
        assert claim["source"].startswith("seed 004"), claim["id"]
        assert claim["verdict"] in ("holds", "fails", "inconclusive")
    assert (out / "alignment.png").exists() and (out / "mds.png").exists()
    assert main(args + [f"--set={s}" for s in TINY]) == 0  # resumes: nothing to recompute


def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "bad"
    code = main(["run", "early-linearization", "--out", str(out), "--set=constants=1,3"])
    assert code == 2 and not out.exists()
    assert "constants must include 0" in capsys.readouterr().err


# ------------------------------------------------------------------ counter-examples


def test_alignment_claims_fail_on_their_counter_examples():
    args = ("x", "s", CONFIG, "seed 004 §4", "f.png", "test")
    small, large = np.array([0.02, 0.03, 0.04, 0.05]), np.array([0.5, 0.7, 0.9, 1.1])
    assert el_claims.aligned_claim(*args[:2], small, *args[2:]).verdict == "holds"
    assert el_claims.aligned_claim(*args[:2], large, *args[2:]).verdict == "fails"
    assert el_claims.parted_claim(*args[:2], large, *args[2:]).verdict == "holds"
    assert el_claims.parted_claim(*args[:2], small, *args[2:]).verdict == "fails"
    gaps = {0.0: large, 0.1: small, 1.0: small}
    assert el_claims.every_c_claim(gaps, CONFIG, "test").verdict == "holds"
    assert el_claims.every_c_claim({**gaps, 0.1: large}, CONFIG, "test").verdict == "fails"
    peaks = {0.0: np.full(4, 0.1), 1.0: np.array([0.6, 0.55, 0.7, 0.65])}
    assert el_claims.linear_units_rise_claim(peaks, "t").verdict == "holds"
    assert el_claims.linear_units_rise_claim({**peaks, 0.0: peaks[1.0] + 0.1}, "t").verdict == (
        "fails"
    )


def _mechanism(**overrides) -> Mechanism:
    n = 5
    rng = np.random.default_rng(0)
    base = dict(
        t_star=np.full(n, 3000.0),
        peak_on=0.7 + 0.02 * rng.random(n),
        final_on=0.4 + 0.02 * rng.random(n),
        growth_ratio=3.0 + 0.1 * rng.random(n),
        negative_kinks=0.9 + 0.02 * rng.random(n),
        mean_function_gap=0.03 + 0.01 * rng.random(n),
        gated_gap=0.05 + 0.01 * rng.random(n),
        item_spread=0.01 * rng.random(n),
        half_times_relu=np.tile([2000.0, 9000, 15000, 15000], (n, 1)) + 100 * rng.random((n, 4)),
        half_times_linear=np.tile([1900.0, 8800, 14700, 14700], (n, 1)) + 10 * rng.random((n, 4)),
        predicted_delay=np.tile([100.0, 250, 350, 350], (n, 1)) + 10 * rng.random((n, 4)),
        theory_rel_error=0.02 * rng.random((n, 4)),
        bias_mode=0,
    )
    return Mechanism(**{**base, **overrides})


def test_mechanism_claims_fail_on_their_counter_examples():
    good = _mechanism()
    assert el_claims.bias_mode_first_claim(good, "t").verdict == "holds"
    swapped = good.half_times_relu[:, ::-1].copy()
    assert el_claims.bias_mode_first_claim(_mechanism(half_times_relu=swapped), "t").verdict == (
        "fails"
    )
    assert el_claims.theory_claim(good, "t").verdict == "holds"
    wrong = _mechanism(theory_rel_error=np.full((5, 4), 0.5))
    assert el_claims.theory_claim(wrong, "t").verdict == "fails"
    assert all(c.verdict == "holds" for c in el_claims.mechanism_claims(good, CONFIG, "t"))
    absent = _mechanism(
        peak_on=np.full(5, 0.2) + 0.01 * np.arange(5),
        final_on=np.full(5, 0.5) + 0.01 * np.arange(5),
        growth_ratio=np.full(5, 0.5) + 0.01 * np.arange(5),
        negative_kinks=np.full(5, 0.4) + 0.01 * np.arange(5),
        mean_function_gap=np.full(5, 0.5) + 0.01 * np.arange(5),
    )
    assert all(c.verdict == "fails" for c in el_claims.mechanism_claims(absent, CONFIG, "t"))
    assert el_claims.gated_claim(good, CONFIG, "t").verdict == "holds"
    bad_gate = _mechanism(gated_gap=np.array([1.0, 1.2, 0.9, 1.1, 1.3]))
    assert el_claims.gated_claim(bad_gate, CONFIG, "t").verdict == "fails"
    lag, predicted = el_claims.delay_claims(good, CONFIG, "t")
    assert lag.verdict == "holds" and predicted.verdict == "holds"
    early = _mechanism(half_times_relu=good.half_times_linear - 200 - np.arange(5)[:, None])
    assert el_claims.delay_claims(early, CONFIG, "t")[0].verdict == "fails"
    far = _mechanism(predicted_delay=good.predicted_delay * 20)
    assert el_claims.delay_claims(far, CONFIG, "t")[1].verdict == "fails"


def test_preference_and_parallel_claims_fail_on_their_counter_examples():
    linear_pref, xor_pref = np.array([1.0, 1, 0.75, 1, 0.75]), np.array([0.0, 0, 0.25, 0, 0.25])
    holds = el_claims.reliance_claims(linear_pref, xor_pref, "t")
    assert [c.verdict for c in holds] == ["holds", "holds"]
    assert [c.verdict for c in el_claims.reliance_claims(xor_pref, linear_pref, "t")] == [
        "fails",
        "fails",
    ]
    ramp = np.arange(5.0)
    bias = Parallel(
        waiting=4000 + 10 * ramp,
        rank=1.5 + 0.01 * ramp,
        r2_simple=0.8 + 0.01 * ramp,
        r2_complex=0.1 + 0.01 * ramp,
        r2_both=0.95 + 0.001 * ramp,
        final_loss=np.zeros(5),
    )
    free = Parallel(
        waiting=500 + 10 * ramp,
        rank=2.5 + 0.01 * ramp,
        r2_simple=0.5 + 0.01 * ramp,
        r2_complex=0.3 + 0.01 * ramp,
        r2_both=0.9 + 0.001 * ramp,
        final_loss=np.zeros(5),
    )
    assert all(c.verdict == "holds" for c in el_claims.parallel_claims(bias, free, "t"))
    flipped = Parallel(
        waiting=free.waiting,
        rank=free.rank,
        r2_simple=free.r2_complex,
        r2_complex=free.r2_simple,
        r2_both=free.r2_both,
        final_loss=free.final_loss,
    )
    assert all(c.verdict == "fails" for c in el_claims.parallel_claims(flipped, bias, "t"))


# ------------------------------------------------------------------ numerics


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
