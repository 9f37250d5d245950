"""Issue 6's studies at tiny sizes: every claim and check measured, scoped and flagged; checks
(identities of the setup, relulab's theory against its own simulation) apart from the claims;
helpers exact."""

import json
import math

import numpy as np
import pytest

from relulab import cli
from relulab.analysis import interpolated_crossing, power_law_exponent


def _run(tmp_path, name, *sets):
    out = tmp_path / name
    assert cli.main(["run", name, "--quiet", "--out", str(out), *(f"--set={s}" for s in sets)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    for claim in summary["claims"] + summary["checks"]:
        assert isinstance(claim["measured"], float) and math.isfinite(claim["measured"]), claim
        assert "seed 000" in claim["expected"] or "[D]" in claim["expected"]
    for claim in summary["claims"]:
        assert claim["kind"] == "claim" and claim["counterexample"], claim["id"]
    for check in summary["checks"]:
        assert check["kind"] == "check" and check["why_check"], check["id"]
    return summary


def test_prepost_ln_tiny(tmp_path):
    summary = _run(
        tmp_path, "prepost-ln", "width=16", "hidden=32", "blocks=16", "n_samples=64", "fit_from=4"
    )
    assert len(summary["claims"]) == 5  # LayerNorm's fixed norm is a test, not a claim
    assert [c["id"] for c in summary["checks"]] == ["postln-cosine-flat"]
    assert all(c["scope"] and not c["beyond_seed"] for c in summary["claims"])
    assert summary["metrics"]["postln_max_norm_deviation_from_sqrt_d"] < 1e-3


def test_anisotropy_tiny(tmp_path):
    summary = _run(
        tmp_path, "anisotropy", "d=20", "D=40", "n_samples=2000", "slopes=5", "n_draws=3"
    )
    assert len(summary["claims"]) == 2
    assert [c["id"] for c in summary["checks"]] == ["mean-shift-explains-sigma1"]


def test_power_law_exponent_and_interpolated_crossover():
    layers = np.arange(1, 50)
    assert power_law_exponent(layers, 3 * layers**0.5) == pytest.approx(0.5)
    slopes = np.array([0.0, 0.5, 1.0])
    assert interpolated_crossing(slopes, np.array([3.0, 2.0, 1.0]), 1.5) == pytest.approx(0.75)
    assert math.isnan(interpolated_crossing(slopes, np.array([3.0, 2.0, 1.6]), 1.5))


def test_bias_after_relu_tiny(tmp_path):
    summary = _run(
        tmp_path,
        "bias-after-relu",
        "width=8",
        "hidden=16",
        "blocks=3",
        "shifts=0,0.2,0.5",
        "seeds_per_shift=3",
        "variant_seeds_per_shift=2",
        "n_samples=32",
        "steps=20",
        "record_every=5",
        "init_seeds=4",
    )
    assert len(summary["claims"]) == 4 and len(summary["checks"]) == 4
    assert summary["units"]["sweep-postln-default"]["networks"] == 9
    assert summary["units"]["sweep-postln-kaiming"]["networks"] == 6  # variant_seeds_per_shift
    by_id = {c["id"]: c for c in summary["claims"] + summary["checks"]}
    assert by_id["final-loss-rises-with-delta"]["n"] == 9
    assert by_id["final-loss-rises-with-delta"]["diverged"] == {
        "b=0": [0, 3],
        "b=0.2": [0, 3],
        "b=0.5": [0, 3],
    }
    assert all(c["scale"] for c in by_id.values())
    beyond = {c["id"] for c in by_id.values() if c["beyond_seed"]}
    assert beyond == {"analytic-shift-finds-the-minimum", "kaiming-moves-the-minimum"}
    assert {c["id"] for c in summary["checks"]} >= beyond


def test_output_delta_is_the_std_over_width_of_sample_means():
    import torch

    from relulab.experiments.bias_after_relu import output_delta

    y = torch.tensor([[[1.0, 3.0], [3.0, 5.0]]])  # one network, 2 samples, width 2
    assert output_delta(y).item() == pytest.approx(1.0)  # means (2, 4): std 1
