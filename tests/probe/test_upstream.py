"""Issue 46, item 1: the advice diagnoses from the input inward — the inputs' location and scale,
non-finite values (named), before any init-level remedy — and the probe reads a NaN network as
non-finite (statistics NaN, a warning naming the calls and parameters), never as healthy or as
an SVD error."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn

from relulab.probe import (
    AdviceThresholds,
    NonFiniteWarning,
    probe,
    standardise,
)
from relulab.probe.upstream import (
    feature_axis,
    non_finite_parameters,
    summarise_input,
    summarise_inputs,
)


def _mlp(inputs: int = 16, width: int = 32, depth: int = 3) -> nn.Sequential:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(inputs if i == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def _gaussian(samples: int = 512, features: int = 16, seed: int = 1) -> torch.Tensor:
    return torch.randn(samples, features, generator=torch.Generator().manual_seed(seed))


# -- the inputs' location and scale -------------------------------------------------------------
def test_shifted_inputs_are_measured_in_units_of_their_spread():
    x = _gaussian() * 2.0 + 10.0  # |mean| / std = 5 on every feature
    x[:, 3] += 30.0  # feature 3: 20
    found = summarise_input(x)
    assert found.features == 16 and found.constant == 0
    assert found.shifted[0][0] == 3 and found.shifted[0][1] == pytest.approx(20, rel=0.1)
    assert found.median_shift == pytest.approx(5, rel=0.1)
    assert found.ratio == pytest.approx(math.sqrt((15 * 100 + 1600) / 16 / 4), rel=0.05)
    assert "feature 3" in found.shift_text() and "r = " in found.shift_text()


def test_feature_scales_their_spread_and_constant_features_left_out():
    x = _gaussian(features=4) * torch.tensor([0.1, 1.0, 10.0, 1.0])
    x[:, 3] = 7.0  # constant (a border pixel): counted, not a feature scale of 0
    found = summarise_input(x)
    assert found.constant == 1 and found.scale_spread == pytest.approx(100, rel=0.1)
    assert found.scale_range[0][0] == 0 and found.scale_range[1][0] == 2
    assert "spread of" in found.scale_text()


def test_the_feature_axis_follows_the_first_layer_and_token_ids_are_not_features():
    images = torch.randn(8, 3, 5, 5)
    assert feature_axis(nn.Sequential(nn.Conv2d(3, 4, 3)), images) == 1
    assert feature_axis(nn.Sequential(nn.Linear(5, 4)), images) == 3
    (found,) = summarise_inputs(
        images + torch.tensor([0.0, 10.0, 0.0])[:, None, None], nn.Conv2d(3, 4, 3)
    )
    assert found.features == 3 and found.shifted[0][0] == 1
    ids = torch.randint(0, 9, (4, 6))
    batch = {"input_ids": ids, "attention_mask": torch.ones(4, 6), "inputs_embeds": images}
    assert [found.name for found in summarise_inputs(batch)] == ["inputs_embeds"]


def test_standardise_uses_the_reference_statistics_per_feature():
    train = _gaussian() * torch.linspace(0.1, 100, 16) + 10.0
    test = _gaussian(seed=2) * torch.linspace(0.1, 100, 16) + 10.0
    x = standardise(test, reference=train)
    assert float(x.mean(dim=0).abs().max()) < 0.2 and float((x.std(dim=0) - 1).abs().max()) < 0.2
    constant = torch.full((10, 2), 3.0)
    assert standardise(constant).abs().max() == 0  # centred, not divided by 0
    images = torch.randn(20, 3, 4, 4) * 5 + 2
    per_channel = standardise(images, model=nn.Conv2d(3, 1, 1)).transpose(0, 1).reshape(3, -1)
    assert torch.allclose(per_channel.mean(dim=1), torch.zeros(3), atol=1e-5)


def test_on_shifted_inputs_the_first_advice_is_to_standardise():
    """Acceptance (issue 46): before any init-level remedy."""
    model = _mlp()
    advice = probe(model, _gaussian() + 10.0).advice()
    first = advice[0]
    assert (first.finding, first.how) == ("unstandardised_inputs", "standardise")
    assert "input_mean_variance_ratio ≥ 1" in first.measured_text()
    assert "input: r = 9.9" in first.measured_text()
    assert "×0.17 [0.14, 0.2] unscaled_inputs" in first.evidence  # how much, in the benchmark
    assert "Try: standardise the inputs" in first.message()
    assert all(a.finding != "unstandardised_inputs" for a in advice[1:])  # one remedy


def test_unscaled_inputs_are_told_to_standardise_and_the_checks_can_be_turned_off():
    model = _mlp()
    x = _gaussian() * torch.logspace(-1.5, 1.5, 16)
    advice = probe(model, x).advice()
    assert (advice[0].finding, advice[0].how) == ("unstandardised_inputs", "standardise")
    assert "input_scale_spread" in advice[0].measured_text()
    quiet = probe(model, x).advice(AdviceThresholds(input_scale_spread=None, input_ratio=None))
    assert all(a.finding != "unstandardised_inputs" for a in quiet)


def test_standardised_or_token_inputs_raise_no_input_finding():
    found = {a.finding for a in probe(_mlp(), _gaussian()).advice()}
    assert not found & {"unstandardised_inputs", "non_finite"}
    embed = nn.Sequential(nn.Embedding(20, 8), nn.Linear(8, 8), nn.ReLU())
    assert probe(embed, torch.randint(0, 20, (16, 5))).inputs == []


# -- non-finite values --------------------------------------------------------------------------
def _nan_weight() -> nn.Sequential:
    model = _mlp(inputs=4, width=8)
    with torch.no_grad():
        model[2].weight[0, 0] = float("nan")
    return model


def test_a_nan_weight_is_probed_as_non_finite_not_an_svd_error_nor_healthy():
    """Before: torch.linalg.svd failed to converge (the probe raised)."""
    with pytest.warns(NonFiniteWarning, match=r"3#0.*2\.weight \(1 of 64\)"):
        result = probe(_nan_weight(), _gaussian(64, 4))
    first, second, third = result.layers
    assert not first.non_finite and math.isfinite(first.metrics["dead_fraction"])
    assert second.non_finite and third.non_finite
    for metric in ("dead_fraction", "balanced_fraction", "delta", "effective_rank_centred"):
        assert math.isnan(second.metrics[metric]), metric
    assert second.metrics["effective_rank_centred_cap"] == 8  # a count, still known
    assert result.non_finite_parameters == {"2.weight": (1, 64)}
    assert result.table()["non_finite"].tolist() == [False, True, True]


def test_the_non_finite_advice_comes_first_and_names_the_parameter():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonFiniteWarning)
        advice = probe(_nan_weight(), _gaussian(64, 4)).advice()
    assert advice[0].finding == "non_finite" and advice[0].how == "find_nan"
    assert "2.weight (1 of 64)" in advice[0].measured_text()
    assert "from 3#0 on" in advice[0].measured_text()
    assert "non_finite_parameters" in advice[0].code


def test_non_finite_inputs_and_parameters_are_named():
    x = _gaussian(64, 4)
    x[0, 1] = float("inf")
    with pytest.warns(NonFiniteWarning, match=r"inputs holding NaN or ±inf: input \(1\)"):
        result = probe(_mlp(inputs=4, width=8), x)
    assert result.inputs[0].non_finite == 1 and all(layer.non_finite for layer in result.layers)
    model = nn.BatchNorm1d(3)
    model.running_mean[1] = float("nan")
    assert non_finite_parameters(model) == {"running_mean": (1, 3)}


def test_diagnose_data_advises_standardising_shifted_inputs_first(tmp_path, monkeypatch, capsys):
    """``relulab diagnose … --data``: the input checks run on the user's data."""
    import numpy as np

    from relulab import cli

    monkeypatch.chdir(tmp_path)
    np.save("shifted.npy", (_gaussian(256, 64) + 10.0).numpy())
    args = ["diagnose", "relulab.nn.examples:deep_mlp", "--data", "shifted.npy", "--quiet"]
    assert cli.main([*args, "--format", "markdown", "--out", "d"]) == 0
    out = capsys.readouterr().out
    advice = out.split("## advice")[1].strip().splitlines()
    assert advice[2].startswith("| default | unstandardised inputs | input | input_mean_variance")
    assert "standardise" in advice[2]
    html = (tmp_path / "d" / "report.html").read_text()
    assert "unstandardised inputs" in html and "relulab.probe import standardise" in html
