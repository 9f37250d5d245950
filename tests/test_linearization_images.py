"""linearization-images (seed 004 §3, appendix C.1–C.2 on image data) and the engine options it
needs: per-network minibatch order and a per-network stop criterion."""

from __future__ import annotations

import json
import math

import numpy as np
import torch

from relulab.cli import main
from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.experiments.early_linearization.claims import aligned_claim, parted_claim
from relulab.experiments.linearization_images import claims as li_claims
from relulab.experiments.linearization_images.config import LinearizationImagesConfig

F64 = torch.float64
CONFIG = LinearizationImagesConfig(real_data=False)
TINY = [
    "hidden=16",
    "seeds=3",
    "train_images=256",
    "eval_images=8",
    "epochs=3",
    "record_every=4",
    "loss_images=200",
    "batch_size=32",
    "lr=0.002",
]
MNIST_CLAIMS = {
    "mnist-aligned-with-bias",
    "mnist-part-without-bias",
    "mnist-standard-aligned-with-bias",
    "mnist-standard-aligned-without-bias",
    "mnist-lower-rank-with-bias",
    "mnist-lower-test-error-with-bias",
}
CIFAR_CLAIMS = {
    "cifar-aligned-with-bias",
    "cifar-standard-aligned-with-bias",
    "cifar-standard-part-without-bias",
}


def _run(out, *extra: str, preset: str = "quick") -> int:
    args = ["run", "linearization-images", "--preset", preset, "--out", str(out), "--quiet"]
    return main(args + [f"--set={s}" for s in (*TINY, *extra)])


def _summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


def _check_summary(summary: dict, ids: set[str], scale: str) -> None:
    assert {c["id"] for c in summary["claims"]} == ids
    for claim in summary["claims"]:
        assert claim["source"].startswith("seed 004") and "Fig." in claim["source"]
        assert claim["verdict"] in ("holds", "fails", "inconclusive")
        assert scale in claim["scale"], claim["scale"]


# ------------------------------------------------------------------ end to end


def test_tiny_run_on_the_standin_writes_everything_and_resumes(tmp_path):
    out = tmp_path / "run"
    assert _run(out) == 0
    summary = _summary(out)
    _check_summary(summary, MNIST_CLAIMS, "stand-in")
    assert "stopped_share_pixel_mean_bias_relu" in summary["metrics"]
    for name in ("alignment.png", "rank_error.png", "report.html", "runs.sqlite"):
        assert (out / name).exists(), name
    assert _run(out) == 0  # resumes: nothing to recompute


def test_paper_preset_on_small_real_format_files(tmp_path):
    """Real MNIST IDX files (gzipped) and CIFAR-10 python batches, written here and read back
    through the loaders; CIFAR-10 gives the fig. 8 claims instead of the MNIST ones."""
    from test_images import write_cifar, write_mnist

    write_mnist(tmp_path / "mnist", n_train=300, n_test=12)
    out = tmp_path / "mnist-run"
    assert _run(out, f"data_dir={tmp_path / 'mnist'}", "normalizations=pixel_mean",
                preset="paper") == 0  # fmt: skip
    summary = _summary(out)
    pixel_mean_only = {c for c in MNIST_CLAIMS if "standard" not in c}
    _check_summary(summary, pixel_mean_only, "real mnist")
    write_cifar(tmp_path, n=60)
    out = tmp_path / "cifar-run"
    assert _run(out, f"data_dir={tmp_path}", "dataset=cifar10", preset="paper") == 0
    _check_summary(_summary(out), CIFAR_CLAIMS, "real cifar10")


def test_fashion_mnist_runs_the_mnist_claims_under_its_own_ids(tmp_path):
    """Fashion-MNIST files (MNIST's format) take MNIST's settings and claims, named for the data
    they were measured on, and the scale says the seed's statements are about MNIST."""
    from test_images import write_mnist

    write_mnist(tmp_path / "fashion", n_train=300, n_test=12)
    out = tmp_path / "fashion-run"
    assert _run(out, f"data_dir={tmp_path / 'fashion'}", "dataset=fashion-mnist",
                "normalizations=pixel_mean", preset="paper") == 0  # fmt: skip
    summary = _summary(out)
    ids = {"fashion-" + c for c in MNIST_CLAIMS if "standard" not in c}
    _check_summary(summary, ids, "real fashion-mnist (MNIST's drop-in format")
    config = LinearizationImagesConfig(dataset="fashion-mnist", data_dir=str(tmp_path))
    assert (config.width, config.rate) == (512, 5e-4)  # MNIST's settings


def test_bad_data_exits_2_and_writes_nothing(tmp_path, capsys):
    cases = {
        "missing": ["data_dir=" + str(tmp_path / "nowhere")],
        "malformed": ["data_dir=" + str(tmp_path / "junk")],
        "cifar without data": ["dataset=cifar10"],
        "fashion-mnist without data": ["dataset=fashion-mnist"],
    }
    junk = tmp_path / "junk"
    junk.mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        (junk / name).write_bytes(b"not an idx file")
    for label, extra in cases.items():
        out = tmp_path / label.replace(" ", "-")
        assert _run(out, *extra) == 2, label
        assert not out.exists(), label
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
    out = tmp_path / "paper-on-standin"
    assert _run(out, preset="paper") == 2 and not out.exists()
    assert "stand-in" in capsys.readouterr().err


# ------------------------------------------------------------------ counter-examples


def test_alignment_claims_fail_on_their_counter_examples():
    args = (CONFIG, "seed 004 §3, Fig. 1A", "alignment.png", "test")
    small, large = np.array([0.02, 0.03, 0.04, 0.05]), np.array([0.5, 0.7, 0.9, 1.1])
    assert aligned_claim("a", "s", small, *args).verdict == "holds"
    assert aligned_claim("a", "s", large, *args).verdict == "fails"
    assert parted_claim("p", "s", large, *args).verdict == "holds"
    assert parted_claim("p", "s", small, *args).verdict == "fails"


def test_lower_with_bias_claim_fails_on_its_counter_example():
    low, high = np.array([20.0, 21, 19, 20.5]), np.array([40.0, 42, 39, 41])
    args = ("rank", "s", "effective rank", "seed 004 §3, Fig. 1B", "rank_error.png", "test")
    build = li_claims.lower_with_bias_claim
    assert build(*args[:3], low, high, *args[3:]).verdict == "holds"
    assert build(*args[:3], high, low, *args[3:]).verdict == "fails"
    # networks that never stopped are left out; with too few stopped the claim is inconclusive
    never = np.array([np.nan, np.nan, 20.0, np.nan])
    assert build(*args[:3], never, high, *args[3:]).verdict == "inconclusive"


def test_alignment_measure_on_curves_is_the_toy_definition():
    """Identical curves give a zero gap; a ReLU curve stuck at its start parts."""
    from relulab.store import UnitResult

    steps = np.arange(0, 101, 5)
    decay = 0.5 * np.exp(-steps / 20.0) + 0.01
    curves_lin = {"full_loss": np.tile(decay, (3, 1))}
    stuck = {"full_loss": np.tile(np.where(steps < 60, 0.5, decay), (3, 1))}

    def unit(curves):
        return UnitResult([{"seed": k} for k in range(3)], steps, curves, {}, np.zeros(3, bool),
                          np.full(3, -1), {})  # fmt: skip

    same = li_claims.alignments(unit(curves_lin), unit(curves_lin), CONFIG)
    assert np.allclose(same[:, 0], 0.0)
    parted = li_claims.alignments(unit(stuck), unit(curves_lin), CONFIG)
    assert (parted[:, 0] > CONFIG.alignment_tolerance).all()
    assert math.isfinite(parted[0, 1])


def _sgd_reference(module, x, y, order_seed, lr, steps, batch, stop_every=None, stop_at=None):
    """One network alone: torch.optim.SGD on the sum loss with its own minibatch order; stops
    (freezes) at the first multiple of ``stop_every`` whose full-data loss is ≤ ``stop_at``."""
    generator = torch.Generator().manual_seed(order_seed)
    optimiser = torch.optim.SGD(module.parameters(), lr=lr)
    order, cursor, stopped = None, 0, -1
    for step in range(steps + 1):
        if stop_every and step % stop_every == 0:
            with torch.no_grad():
                full = 0.5 * (module(x) - y).square().sum()
            if full <= stop_at:
                stopped = step
                break
        if step == steps:
            break
        if order is None or cursor + batch > len(x):
            order, cursor = torch.randperm(len(x), generator=generator), 0
        index = order[cursor : cursor + batch]
        cursor += batch
        optimiser.zero_grad()
        loss = 0.5 * (module(x[index]) - y[index]).square().sum()
        loss.backward()
        optimiser.step()
    return [p.detach().clone() for p in module.parameters()], stopped


def test_per_network_minibatch_order_matches_a_per_network_torch_optim_loop():
    """Each network follows its own shuffled order: the batched family equals torch.optim.SGD
    on each network alone with a generator seeded by its order seed (float64, rtol 1e-12)."""
    torch.manual_seed(0)
    x, y = torch.randn(14, 5, dtype=F64), torch.randn(14, 3, dtype=F64)
    seeds, order_seeds = [1, 2, 3], [7, 8, 9]
    model = BatchedMLP(MLPSpec((5, 8, 3), bias=False), 3, seeds=seeds, dtype=F64)
    modules = [model.module(s) for s in range(3)]
    problem = SupervisedProblem(model, x, y, "half_sum", batch_size=4, order_seeds=order_seeds)
    train(problem, BatchedSGD(problem.params, 0.05), 25, record_every=5)
    for s, module in enumerate(modules):
        expected, _ = _sgd_reference(module, x, y, order_seeds[s], 0.05, 25, 4)
        for got, want in zip(problem.params, expected, strict=True):
            np.testing.assert_allclose(got[s].detach().numpy(), want.numpy(), rtol=1e-12)
    # networks with different order seeds saw different batches: the same start parts
    same_start = BatchedMLP(MLPSpec((5, 8, 3), bias=False), 2, seeds=[1, 1], dtype=F64)
    problem = SupervisedProblem(same_start, x, y, "half_sum", batch_size=4, order_seeds=[7, 8])
    train(problem, BatchedSGD(problem.params, 0.05), 10, record_every=5)
    assert not torch.allclose(same_start.params[0][0], same_start.params[0][1])


def test_stop_criterion_freezes_each_network_at_its_own_step():
    """A network is frozen at the first recording whose full-data loss meets the criterion (as
    a lone torch.optim loop that stops there); the others go on; the stop steps are kept."""
    torch.manual_seed(1)
    x, y = torch.randn(16, 4, dtype=F64), torch.randn(16, 2, dtype=F64)
    seeds, lr, steps, every = [3, 4, 5], 0.02, 200, 10
    model = BatchedMLP(MLPSpec((4, 16, 2), bias=False), 3, seeds=seeds, dtype=F64)
    modules = [model.module(s) for s in range(3)]
    problem = SupervisedProblem(model, x, y, "half_sum", batch_size=4, order_seeds=[0, 1, 2])
    with torch.no_grad():
        start = 0.5 * (model.forward(x) - y).square().sum(dim=(1, 2))
    level = float(start.min()) * 0.6
    result = train(
        problem,
        BatchedSGD(problem.params, lr),
        steps,
        every,
        stop=lambda values: values["full_loss"] <= level,
    )
    assert (result.stopped_step >= 0).any()
    for s, module in enumerate(modules):
        expected, stopped = _sgd_reference(module, x, y, s, lr, steps, 4, every, level)
        assert result.stopped_step[s] == stopped
        for got, want in zip(problem.params, expected, strict=True):
            np.testing.assert_allclose(got[s].detach().numpy(), want.numpy(), rtol=1e-12)
    stopped = result.stopped_step >= 0
    row = np.searchsorted(result.steps, result.stopped_step[stopped])
    np.testing.assert_allclose(
        result.final["full_loss"][stopped],
        result.curves["full_loss"][stopped, row],
    )


def test_training_ends_when_every_network_stopped():
    x, y = torch.randn(8, 3, dtype=F64), torch.randn(8, 1, dtype=F64)
    model = BatchedMLP(MLPSpec((3, 4, 1)), 2, seeds=[0, 1], dtype=F64)
    problem = SupervisedProblem(model, x, y, "half_sum")
    before = [p.clone() for p in problem.params]
    result = train(problem, BatchedSGD(problem.params, 0.1), 50, 10, stop=lambda v: v["loss"] > -1)
    assert result.stopped_step.tolist() == [0, 0]
    assert all(torch.equal(a, b) for a, b in zip(before, problem.params, strict=True))
    assert np.all(result.curves["loss"] == result.curves["loss"][:, :1])


def test_observe_data_measures_the_full_loss_on_the_given_samples():
    x, y = torch.randn(20, 3, dtype=F64), torch.randn(20, 2, dtype=F64)
    model = BatchedMLP(MLPSpec((3, 5, 2)), 2, seeds=[0, 1], dtype=F64)
    subset = SupervisedProblem(model, x, y, "half_sum", batch_size=4, observe_data=(x[:7], y[:7]))
    expected = 0.5 * (model.forward(x[:7]) - y[:7]).square().sum(dim=(1, 2))
    torch.testing.assert_close(subset.observe()["full_loss"], expected.detach())


def test_standin_subset_is_stratified_and_inputs_follow_the_seed():
    """The stand-in's images are grouped by class: a training subset keeps every class; the
    constant pixel is appended after the pixel-wise mean is removed."""
    from dataclasses import replace

    from relulab.experiments.linearization_images.config import prepared_data

    config = replace(CONFIG, train_images=300, loss_images=50)
    data = prepared_data(config, "pixel_mean", 10.0)
    assert np.bincount(data.y.argmax(1).numpy()).tolist() == [30] * 10
    torch.testing.assert_close(data.x[:, :-1].mean(0), torch.zeros(784, dtype=F64))
    assert bool((data.x[:, -1] == 10).all()) and data.x_eval.shape == (500, 785)
    assert len(data.loss_index) == 50
    assert prepared_data(config, "standard", 0.0).x.shape == (300, 784)


def test_parting_step_is_the_first_log_gap_above_the_tolerance():
    from relulab.store import UnitResult

    steps = np.arange(0, 50, 10)
    lin = np.array([[1.0, 0.5, 0.4, 0.35, 0.3]])
    relu = np.array([[1.0, 0.5, 0.35, 0.2, 0.1]])

    def unit(loss):
        return UnitResult([{"seed": 0}], steps, {"full_loss": loss}, {}, np.zeros(1, bool),
                          np.full(1, -1), {})  # fmt: skip

    assert li_claims.parting_steps(unit(relu), unit(lin), 0.1).tolist() == [20.0]
    assert np.isnan(li_claims.parting_steps(unit(lin), unit(lin), 0.1)).all()
