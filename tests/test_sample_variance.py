"""The sample-variance study end to end at a tiny size, and the theory commands."""

import json
import math

import numpy as np
import pytest

from relulab import cli
from relulab.analysis import sample_bias_corrected_ratio

TINY = [
    f"--set={kv}"
    for kv in (
        "depth=6",
        "n_samples=20",
        "n_networks=3",
        "widths=8,16",
        "histogram_width=16",
        "histogram_layers=1,6",
        "gradient_width=16",
        "gradient_networks=2",
        "gradient_chunk=2",
    )
]


def test_sample_variance_run_writes_claims_with_numbers(tmp_path):
    out = tmp_path / "sv"
    assert cli.main(["run", "sample-variance", "--quiet", "--out", str(out), *TINY]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["claims"]) == 9
    for claim in summary["claims"]:
        assert isinstance(claim["measured"], float) and math.isfinite(claim["measured"]), claim
        assert "seed 00" in claim["expected"]
    names = {p.name for p in out.iterdir()}
    assert {
        "theory_mv.png",
        "finite_width_ratio.png",
        "gradients.png",
        "histograms.png",
    } <= names


def test_sample_bias_of_the_ratio_estimator_matches_simulation():
    rng = np.random.default_rng(0)
    n, true_ratio = 100, 0.0
    u = rng.standard_normal((4000, n, 50))  # zero-mean units: the true ratio is 0
    empirical = np.sqrt((u.mean(1) ** 2).sum(1) / u.var(1).sum(1)).mean()
    assert empirical == pytest.approx(
        sample_bias_corrected_ratio(np.array(true_ratio), n), rel=0.02
    )


def test_theory_commands(tmp_path, capsys):
    figure = tmp_path / "pd.png"
    assert (
        cli.main(["theory", "phase-diagram", "--k", "-1", "--grid", "50", "--out", str(figure)])
        == 0
    )
    assert figure.exists() and "bounded for σ_w² < 2.9339" in capsys.readouterr().out
    assert cli.main(["theory", "sample-variance", "--depth", "3"]) == 0
    assert "0.3183" in capsys.readouterr().out
    assert cli.main(["theory", "phase-diagram", "--k", "-2", "--out", str(tmp_path / "x.png")]) == 2
    assert not (tmp_path / "x.png").exists()
