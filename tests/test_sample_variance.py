"""The sample-variance study end to end at a tiny size, its claims against counter-examples,
the theory identities that are tests rather than claims, and the theory commands."""

import copy
import json
import math

import numpy as np
import pytest
import torch

from relulab import cli
from relulab.analysis import sample_bias_corrected_ratio
from relulab.config import apply_overrides
from relulab.experiments import sample_variance as sv
from relulab.experiments.context import RunContext
from relulab.theory import sample_statistics

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
        "gradient_networks=4",
        "gradient_chunk=2",
        "trend_widths=8",
    )
]


def test_sample_variance_run_writes_claims_with_numbers(tmp_path):
    out = tmp_path / "sv"
    assert cli.main(["run", "sample-variance", "--quiet", "--out", str(out), *TINY]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["claims"]) == 14
    for claim in summary["claims"]:
        assert isinstance(claim["measured"], float) and math.isfinite(claim["measured"]), claim
        assert "seed 00" in claim["expected"]
    names = {p.name for p in out.iterdir()}
    assert {
        "theory_mv.png",
        "finite_width_ratio.png",
        "gradients.png",
        "histograms.png",
        "layer_steps.png",
    } <= names
    for claim in summary["claims"]:
        assert claim["scale"], claim["id"]
        if claim["id"] not in ("wider-is-closer", "finite-width-ratio-saturates"):
            assert claim["n"], claim["id"]


def test_gram_sampler_runs_the_study_and_bad_samplers_are_refused(tmp_path, capsys):
    # widths 24 and 32 over 20 samples: the finite-width units sample those layers by Gram
    out = tmp_path / "sv-gram"
    tiny = [*TINY[:3], "--set=widths=24,32", "--set=histogram_width=32", *TINY[5:]]
    args = ["run", "sample-variance", "--quiet", "--out", str(out), *tiny]
    assert cli.main([*args, "--set=forward_sampler=gram"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["forward_sampler"] == "gram" and len(summary["claims"]) == 14
    refused = tmp_path / "refused"
    bad = ["run", "sample-variance", "--quiet", "--out", str(refused), "--set=forward_sampler=x"]
    assert cli.main(bad) == 2
    assert "forward_sampler" in capsys.readouterr().err and not refused.exists()


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


# ---------------------------------------------------------------------------------------------
# Identities of the infinite-width theory: tests, not claims (issue 12).
# ---------------------------------------------------------------------------------------------
def test_theory_m_over_v_grows_at_every_layer():
    ratio = sample_statistics(50).mean_to_std_ratio
    assert np.all(np.diff(ratio) > 0)


def test_theory_decay_is_subexponential():
    gaps = 1 - sample_statistics(200).rho
    contraction = gaps[1:] / gaps[:-1]
    assert np.all(np.diff(contraction) > 0)  # K'(1) = 1: the contraction tends to 1
    assert contraction[-1] > 0.99


# ---------------------------------------------------------------------------------------------
# Every claim fails on results where its behaviour is absent.
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    config = apply_overrides(sv.PRESETS["quick"], [t.removeprefix("--set=") for t in TINY])
    context = RunContext(torch.device("cpu"), torch.float64, seed=0, quiet=True)
    results = {unit.name: unit.run(context) for unit in sv.plan(config)}
    return config, results


def _verdicts(results, config):
    return {c.id: c.verdict for c in sv.analyse(results, config).claims}


def _layers(config):
    return np.arange(1, config.depth + 1, dtype=float)


def _no_decay(results, config):
    for width in config.widths:
        results[f"finite-width-{width}"].curves["mean_sq"][:] = 0.0


def _total_grows(results, config):
    for width in config.widths:
        curves = results[f"finite-width-{width}"].curves
        curves["mean_sq"] *= 1.5 ** _layers(config)
        curves["sample_var"] *= 1.5 ** _layers(config)


def _above_theory(results, config):
    corrected = sample_bias_corrected_ratio(
        sample_statistics(config.depth).mean_to_std_ratio, config.n_samples
    )
    for width in config.widths:
        results[f"finite-width-{width}"].curves["ratio"][:] = 2 * corrected


def _wider_is_farther(results, config):
    corrected = sample_bias_corrected_ratio(
        sample_statistics(config.depth).mean_to_std_ratio, config.n_samples
    )
    for k, width in enumerate(sorted(config.widths)):
        results[f"finite-width-{width}"].curves["ratio"][:] = corrected + k


def _wider_saturates_sooner(results, config):
    for k, width in enumerate(sorted(config.widths)):
        curve = _layers(config) if k == 0 else np.ones(config.depth)
        results[f"finite-width-{width}"].curves["ratio"][:] = curve


def _deep_units_balanced(results, config):
    for width in config.widths:
        results[f"finite-width-{width}"].final["on_or_off_last"][:] = 0.0


def _histograms_keep_their_width(results, config):
    first, last = config.histogram_layers
    arrays = results[f"finite-width-{config.histogram_width}"].arrays
    arrays[f"units_layer_{last}"] = arrays[f"units_layer_{first}"].copy()


def _matmul_doubles_the_ratio(results, config):
    curves = results["gradients-kaiming"].curves
    curves["linear_ratio"][:, 1:] = 2 * curves["activation_ratio"][:, :-1]


def _relu_lowers_the_ratio(results, config):
    curves = results["gradients-kaiming"].curves
    curves["activation_ratio"][:] = 0.5 * curves["linear_ratio"]


def _batchnorm_decays(results, config):
    results["gradients-batchnorm"].curves["linear_share"][:] = 0.05


def _sigma_s_is_one(results, config):
    results["gradients-batchnorm"].curves["pre_std"][:] = 1.0


def _flat_gradients(results, config):
    for scheme in ("batchnorm", "scale_bias"):
        results[f"gradients-{scheme}"].curves["grad_sq"][:] = 1.0


def _kaiming_gradients_explode(results, config):
    results["gradients-kaiming"].curves["grad_sq"][:] = np.exp(-0.4 * _layers(config))


COUNTER_EXAMPLES = {
    "sample-variance-decays": _no_decay,
    "total-variance-preserved": _total_grows,
    "theory-is-upper-bound": _above_theory,
    "wider-is-closer": _wider_is_farther,
    "finite-width-ratio-saturates": _wider_saturates_sooner,
    "deep-units-on-or-off": _deep_units_balanced,
    "histograms-narrow-with-depth": _histograms_keep_their_width,
    "matmul-keeps-ratio": _matmul_doubles_the_ratio,
    "relu-raises-ratio": _relu_lowers_the_ratio,
    "batchnorm-removes-decay": _batchnorm_decays,
    "batchnorm-sigma-s": _sigma_s_is_one,
    "batchnorm-gradient-slope": _flat_gradients,
    "scale-bias-gradient-slope": _flat_gradients,
    "kaiming-gradients-flat": _kaiming_gradients_explode,
}


def test_every_claim_has_a_counter_example(tiny):
    config, results = tiny
    assert set(_verdicts(results, config)) == set(COUNTER_EXAMPLES)


@pytest.mark.parametrize("claim_id", sorted(COUNTER_EXAMPLES))
def test_claim_fails_on_its_counter_example(tiny, claim_id):
    config, results = tiny
    broken = copy.deepcopy(results)
    COUNTER_EXAMPLES[claim_id](broken, config)
    assert _verdicts(broken, config)[claim_id] == "fails"


def _ideal(results, config):
    """Results with every behaviour the seed describes: finite widths below the theory and
    saturating the sooner the narrower, total variance exact, BatchNorm and slopes on theory."""
    theory = sample_statistics(config.depth)
    corrected = sample_bias_corrected_ratio(theory.mean_to_std_ratio, config.n_samples)
    for width in config.widths:
        result = results[f"finite-width-{width}"]
        total = 2.0 * width
        result.curves["mean_sq"][:] = total * theory.rho
        result.curves["sample_var"][:] = total * (1 - theory.rho)
        result.curves["ratio"][:] = corrected * width / (width + _layers(config))
        result.final["on_or_off_last"][:] = 0.9
    arrays = results[f"finite-width-{config.histogram_width}"].arrays
    first, last = config.histogram_layers
    offsets = np.random.default_rng(0).normal(0, 5, (arrays[f"units_layer_{first}"].shape[0], 1, 1))
    arrays[f"units_layer_{last}"] = 0.1 * arrays[f"units_layer_{first}"] + offsets
    kaiming = results["gradients-kaiming"].curves
    # layer by layer, so that ReLU raises the ratio 1.5× at every layer and the next layer's
    # linear output inherits it (two whole-array assignments left the rise data-dependent)
    for layer in range(kaiming["linear_ratio"].shape[1]):
        kaiming["activation_ratio"][:, layer] = 1.5 * kaiming["linear_ratio"][:, layer]
        if layer + 1 < kaiming["linear_ratio"].shape[1]:
            kaiming["linear_ratio"][:, layer + 1] = kaiming["activation_ratio"][:, layer]
    kaiming["grad_sq"][:] = 1.0
    bn = results["gradients-batchnorm"].curves
    bn["linear_share"][:] = 1 - 1 / np.pi
    bn["pre_std"][:] = math.sqrt(1 - 1 / np.pi)
    slope = math.log(1 - 1 / np.pi)
    for name in results:
        if name.startswith("gradients-") and name != "gradients-kaiming":
            results[name].curves["grad_sq"][:] = np.exp(slope * _layers(config))


def test_every_claim_holds_on_ideal_results(tiny):
    config, results = tiny
    ideal = copy.deepcopy(results)
    _ideal(ideal, config)
    verdicts = _verdicts(ideal, config)
    assert {k for k, v in verdicts.items() if v != "holds"} == set(), verdicts


def test_quick_preset_says_where_it_departs_from_the_paper():
    from relulab.config import provenance

    rows = provenance(sv.PRESETS["quick"])
    departs = {name for name, row in rows.items() if row["departs"]}
    assert departs == {"widths", "gradient_width", "gradient_networks"}
    assert rows["gradient_width"]["seed_value"] == 3000
    assert not any(row["departs"] for row in provenance(sv.PRESETS["paper"]).values())
    assert all(row["provenance"] for row in rows.values())
