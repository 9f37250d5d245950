"""Issue 35: every candidate remedy of ``ProbeResult.advice()`` checked against its *statistic*.
For each finding a deliberately broken small network: the advice (every candidate,
``validated=False``) names the finding and the remedy, the remedy is applied through relulab's
API, the network is re-probed on the same data, and the measurement improves (by how much: in
the comments, measured with torch 2.13 on the CPU). A healthy network gets no advice.

These check the statistic only. Whether a remedy improves *training* — and so whether the advice
offers it — is measured by ``relulab bench remedies`` (``tests/bench/test_remedies_bench.py``, issue
46)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from relulab import init
from relulab.nn import ReLUMinusB, replace_activations
from relulab.probe import AdviceThresholds, Thresholds, advise, probe
from relulab.probe.advice import ADVICE_COLUMNS, FINDINGS, REMEDIES, SNIPPETS, Advice


def _mlp(depth: int, width: int = 64, inputs: int = 16, batch_norm: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(depth):
        layers.append(nn.Linear(inputs if i == 0 else width, width))
        layers += [nn.BatchNorm1d(width)] if batch_norm else []
        layers.append(nn.ReLU())
    return nn.Sequential(*layers, nn.Linear(width, 1))


def _kaiming(model: nn.Module, seed: int = 0) -> nn.Module:
    init.init_model_(model, "kaiming_normal", torch.Generator().manual_seed(seed))
    return model


def _biases(model: nn.Module, value: float) -> nn.Module:
    for layer in model.modules():
        if isinstance(layer, nn.Linear):
            nn.init.constant_(layer.bias, value)
    return model


def _gaussian(mean: float = 0.0, samples: int = 256, inputs: int = 16) -> torch.Tensor:
    return torch.randn(samples, inputs, generator=torch.Generator().manual_seed(1)) + mean


def _column(model: nn.Module, x: torch.Tensor, metric: str) -> list[float]:
    return probe(model, x).table()[metric].tolist()


def _advice(model: nn.Module, x: torch.Tensor) -> dict[tuple[str, str], Advice]:
    """(finding, how) → advice, every candidate remedy (not only those the benchmark offers)."""
    return {(a.finding, a.how): a for a in advise(probe(model, x), validated=False)}


def _findings(model: nn.Module, x: torch.Tensor) -> set[str]:
    return {finding for finding, _ in _advice(model, x)}


# -- high Δ: ReLU's positive mean, here fed inputs with a large positive mean -----------------
@pytest.fixture
def high_delta():
    torch.manual_seed(0)
    return _mlp(6), _gaussian(mean=4.0)


def test_high_delta_is_found_with_both_remedies_and_its_numbers(high_delta):
    model, x = high_delta
    advice = _advice(model, x)
    assert ("high_delta", "relu_minus_b") in advice and ("high_delta", "scale_bias") in advice
    found = advice["high_delta", "relu_minus_b"]
    assert found.statistic == "delta_relative" and found.threshold == Thresholds().delta_relative
    assert set(found.layers) == set(found.measured) and min(found.measured.values()) >= 1.0
    assert found.layers == ("1#0", "3#0", "5#0", "7#0", "9#0", "11#0")  # every call, ≥ 3
    assert "seed 000" in found.source and "delta_relative ≥ 1" in found.measured_text()


def test_relu_minus_b_calibrated_on_the_data_removes_delta(high_delta):
    model, x = high_delta
    before = _column(model, x, "delta_relative")
    replace_activations(model, ReLUMinusB(init.analytic_relu_shift(scheme="torch_default")))
    init.calibrate_relu_shift_(model, x)
    after = _column(model, x, "delta_relative")
    # max Δ/√⟨Var h⟩: 10.7 → 7e-7 (every unit's mean output is 0 on the data: Δ = 0 at each call)
    assert max(before) > 5 and max(after) < 1e-4
    assert "high_delta" not in _findings(model, x)


def test_the_analytic_shift_alone_centres_the_second_layer_of_a_default_init_mlp():
    """Seed 000's b* = 1/√(6π) assumes pre-activation variance 1/3 (PyTorch's default init on
    unit-variance inputs): it holds at the second call of a plain MLP, not deeper, where the
    variance has shrunk — hence the advice to calibrate per unit."""
    torch.manual_seed(0)
    model, x = _mlp(4, inputs=32), _gaussian(inputs=32)
    before = _column(model, x, "delta_relative")
    replace_activations(model, ReLUMinusB(init.analytic_relu_shift(scheme="torch_default")))
    after = _column(model, x, "delta_relative")
    # second call: 0.69 → 0.31; deeper calls get worse (1.25 → 1.39, 3.2 → 3.9); seeds 0–2 alike
    assert after[0] == pytest.approx(before[0])  # the first call's outputs only shift
    assert after[1] < 0.7 * before[1]


def test_scale_bias_removes_delta(high_delta):
    model, x = high_delta
    before = _column(model, x, "delta_relative")
    init.scale_bias_(model, x, generator=torch.Generator().manual_seed(0))
    after = _column(model, x, "delta_relative")
    # max Δ/√⟨Var h⟩: 10.7 → 0.13 (every pre-activation centred; the unit scales still differ)
    assert max(before) > 5 and max(after) < 0.3
    assert _findings(model, x) == {"unstandardised_inputs"}  # the inputs are still N(4, 1)


# -- dead units: strongly negative biases ------------------------------------------------------
@pytest.fixture
def dead():
    return _biases(_kaiming(_mlp(4)), -3.0), _gaussian()


def test_dead_units_are_found_with_rai_and_a_positive_bias(dead):
    model, x = dead
    advice = _advice(model, x)
    found = advice["dead_units", "rai"]
    assert ("dead_units", "positive_bias") in advice
    assert found.threshold == Thresholds().dead_fraction == 0.10
    assert found.measured["3#0"] == found.measured["7#0"] == 1.0  # every unit dead after 1#0
    assert "seed 003" in found.source and "seed 004" in advice["dead_units", "positive_bias"].source


@pytest.mark.parametrize("scheme", ["rai", "raai"])
def test_rai_and_raai_bring_dead_units_back(dead, scheme):
    model, x = dead
    before = _column(model, x, "dead_fraction")
    init.init_model_(model, scheme, torch.Generator().manual_seed(0))
    after = _column(model, x, "dead_fraction")
    # max dead fraction per call: 1.0 → 0.0 (RAI and RAAI alike)
    assert max(before) == 1.0 and max(after) < 0.05
    assert "dead_units" not in _findings(model, x)


def test_a_small_positive_bias_brings_dead_units_back(dead):
    model, x = dead
    _biases(model, 0.1)
    after = _column(model, x, "dead_fraction")
    assert max(after) < Thresholds().dead_fraction  # max 1.0 → 0.031 (2 units of 64)
    assert "dead_units" not in _findings(model, x)


# -- always-on units: strongly positive biases -------------------------------------------------
def test_always_on_units_are_found_and_scale_bias_removes_them():
    model, x = _biases(_kaiming(_mlp(4)), 6.0), _gaussian()
    advice = _advice(model, x)
    found = advice["always_on_units", "scale_bias"]
    assert found.measured["1#0"] > 0.9 and "seed 002" in found.source
    before = _column(model, x, "always_on_fraction")
    init.scale_bias_(model, x, generator=torch.Generator().manual_seed(0))
    after = _column(model, x, "always_on_fraction")
    # max always-on fraction: 1.0 → 0.0 (centred pre-activations take both signs)
    assert max(before) > 0.9 and max(after) == 0.0
    assert _findings(model, x) == set()


# -- sample-variance decay: a deep plain ReLU MLP at Kaiming init (seed 002 §3) ----------------
@pytest.fixture
def deep():
    return _kaiming(_mlp(20)), _gaussian()


def test_sample_variance_decay_is_found_from_the_first_call(deep):
    model, x = deep
    advice = _advice(model, x)
    found = advice["sample_variance_decay", "scale_bias"]
    assert ("sample_variance_decay", "batch_norm") in advice
    # the share v²/(m² + v²): 0.996 at the first call, below 0.5 from the fourth (0.41) on
    assert list(found.measured)[0] == "1#0" and found.measured["1#0"] > 0.9
    assert "1#0" not in found.layers and found.layers[0] == "7#0"
    assert max(found.measured[name] for name in found.layers) < 0.5
    assert "0.996 (1#0) at the first call of its kind" in found.measured_text()


def test_scale_bias_stops_the_sample_variance_decay(deep):
    model, x = deep
    before = _column(model, x, "sample_variance_fraction")
    init.scale_bias_(model, x, generator=torch.Generator().manual_seed(0))
    after = _column(model, x, "sample_variance_fraction")
    # the deepest call's share: 0.22 → 1.0 (zero sample mean at every call)
    assert before[-1] < 0.25 and min(after) > 0.99
    assert "sample_variance_decay" not in _findings(model, x)


def test_batch_norm_stops_the_sample_variance_decay(deep):
    _, x = deep
    model = _kaiming(_mlp(20, batch_norm=True))
    result = probe(model, x)
    shares = result.table()["sample_variance_fraction"]
    # the same MLP with BatchNorm before each ReLU (train mode): every call's share 1.0
    assert shares.min() > 0.99 and result.advice() == []
    assert result.table()["unit_states_by_batch_norm"].all()  # dead fraction 0 by construction


# -- healthy networks, thresholds, the table -------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: _kaiming(_mlp(2)),
        lambda: _mlp(2),
        lambda: _kaiming(_mlp(6, batch_norm=True)),
        lambda: nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU()),
    ],
    ids=["kaiming-mlp", "default-mlp", "batchnorm-mlp", "gelu-mlp"],
)
def test_a_healthy_network_gets_no_advice(make):
    torch.manual_seed(0)
    result = probe(make(), _gaussian())
    assert result.advice() == [] and result.advice().withheld == []
    assert advise(result, validated=False) == []


def test_thresholds_are_the_monitors_and_each_finding_can_be_turned_off(dead):
    model, x = dead
    monitor = Thresholds()
    defaults = AdviceThresholds()
    assert (defaults.dead_fraction, defaults.always_on_fraction, defaults.delta_relative) == (
        monitor.dead_fraction,
        monitor.always_on_fraction,
        monitor.delta_relative,
    )
    result = probe(model, x)
    assert "dead_units" in {a.finding for a in advise(result, validated=False)}
    off = advise(result, AdviceThresholds(None), validated=False)
    assert "dead_units" not in {a.finding for a in off}


def test_every_remedy_has_code_and_a_source_and_the_frame_has_one_row_each(dead):
    for finding, remedies in REMEDIES.items():
        assert finding in FINDINGS
        for remedy in remedies:
            assert remedy.how in SNIPPETS
            assert any(word in remedy.source for word in ("seed 00", "practice", "relulab"))
            compile(SNIPPETS[remedy.how], remedy.how, "exec")  # the snippet is Python
    model, x = dead
    advice = advise(probe(model, x), validated=False)
    frame = advice.to_frame()
    assert list(frame.columns) == [*ADVICE_COLUMNS, "evidence"] and len(frame) == len(advice)
    assert frame["measured"].str.contains("dead_fraction ≥ 0.1").any()


def test_the_remedies_are_filtered_by_family_in_one_place():
    """advise() and the monitor's one-line advice share remedies_for (issue 46: the monitor
    told a BERT pooler's Tanh to replace each ReLU by ReLU − b)."""
    from relulab.probe.advice import one_line, remedies_for

    def candidates(families):
        return [r.how for r in remedies_for("high_delta", families, validated=False)]

    assert candidates({"smooth"}) == ["scale_bias"]
    assert candidates({"rectifier", "smooth"}) == ["relu_minus_b", "scale_bias"]
    assert remedies_for("high_delta", validated=False) == REMEDIES["high_delta"]
    assert remedies_for("high_delta", set(), validated=False) == ()
    offered = {r.how for r in remedies_for("high_delta", {"smooth"})}
    assert offered <= {"scale_bias"}  # never ReLU − b for a Tanh, offered or not
    assert "ReLUMinusB" not in one_line("high_delta", {"smooth"})
