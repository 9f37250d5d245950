"""Shared activation statistics: every special form equals the general one, and the probe path
(hooks on an nn.Module) agrees with the engine path (a batched family's trace) network by
network."""

import numpy as np
import pytest
import torch
from torch import nn

from relulab import init
from relulab.engine import (
    BatchedMLP,
    BatchedResidualToy,
    BatchedSingleNeuron,
    MLPSpec,
    ResidualToySpec,
    SupervisedProblem,
    forward_statistics,
)
from relulab.nn import statistics as st
from relulab.probe import probe

F64 = torch.float64
BATCHED = st.BATCHED_SAMPLE_DIMS


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------------------
# Special forms equal the general one.
# ---------------------------------------------------------------------------------------------
def test_unit_states_from_a_tensor_equal_those_from_its_extremes_and_codes_partition():
    z = torch.randn(3, 20, 50, generator=_gen(), dtype=F64) + torch.linspace(-3, 3, 50)
    z[1, :, 7] = float("nan")  # a NaN unit is neither dead nor always on
    states = st.unit_states(z, BATCHED)
    extremes = st.unit_states_from_extremes(z.amin(dim=1), z.amax(dim=1))
    assert torch.equal(states.dead, (z <= 0).all(dim=1))
    assert torch.equal(states.always_on, (z > 0).all(dim=1))
    assert torch.equal(states.dead, extremes.dead)
    assert torch.equal(states.always_on, extremes.always_on)
    codes = states.codes(F64)
    for name, mask in (("dead", states.dead), ("always_on", states.always_on)):
        assert torch.equal(codes == st.UNIT_STATE_CODES[name], mask)
    assert torch.equal(codes == st.UNIT_STATE_CODES["balanced"], states.balanced)
    assert not states.dead[1, 7] and not states.always_on[1, 7]
    fractions = states.fractions()
    total = sum(fractions.values())
    torch.testing.assert_close(total, torch.ones(3, dtype=F64), rtol=0, atol=1e-15)


def test_moments_from_accumulated_sums_equal_those_of_the_whole_tensor():
    u = torch.randn(37, 6, 4, 4, generator=_gen(1), dtype=F64) * 2 + 1
    dims = st.module_sample_dims(u)
    mean, var = st.sample_moments(u, dims)
    total, total_sq, count = 0, 0, 0
    for batch in u.split(10):
        total = total + batch.sum(dim=dims)
        total_sq = total_sq + batch.square().sum(dim=dims)
        count += batch.shape[0] * 16
    mean_sums, var_sums = st.sample_moments_from_sums(total, total_sq, count)
    torch.testing.assert_close(mean_sums, mean, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(var_sums, var, rtol=1e-12, atol=1e-14)


def test_ratio_and_fraction_do_not_depend_on_summing_or_averaging_over_units():
    mean = torch.randn(4, 30, generator=_gen(2), dtype=F64)
    var = torch.rand(4, 30, generator=_gen(3), dtype=F64)
    summed = st.squared_mean_and_variance(mean, var, reduce="sum")
    averaged = st.squared_mean_and_variance(mean, var, reduce="mean")
    torch.testing.assert_close(st.mean_variance_ratio(*summed), st.mean_variance_ratio(*averaged))
    torch.testing.assert_close(
        st.sample_variance_fraction(*summed), st.sample_variance_fraction(*averaged)
    )
    ratio = st.mean_variance_ratio(*summed)
    torch.testing.assert_close(ratio, (summed[0] / summed[1]).sqrt(), rtol=0, atol=0)
    assert st.mean_variance_ratio(torch.tensor(1.0), torch.tensor(0.0)) == float("inf")
    assert st.sample_variance_fraction(torch.tensor(0.0), torch.tensor(0.0)).isnan()


def test_delta_and_centring_shift_in_both_layouts():
    h = torch.randn(2, 40, 8, generator=_gen(4), dtype=F64) + torch.arange(8.0, dtype=F64)
    per_network = st.delta(h, BATCHED)
    for s in range(2):
        module_layout = h[s]  # (N, units)
        torch.testing.assert_close(
            st.delta(module_layout, st.module_sample_dims(module_layout)), per_network[s]
        )
        torch.testing.assert_close(st.delta_from_means(module_layout.mean(dim=0)), per_network[s])
    shift = st.centring_shift(h, BATCHED, keepdim=True)
    centred = torch.relu(h) - shift
    torch.testing.assert_close(centred.mean(dim=1), torch.zeros(2, 8, dtype=F64))


def test_effective_ranks_of_a_stack_equal_the_rank_of_each_matrix():
    stack = torch.randn(2, 3, 25, 6, generator=_gen(5))
    ranks = st.effective_ranks(stack, centred=True)
    assert ranks.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert ranks[i, j].item() == st.effective_rank(stack[i, j], centred=True)


def test_single_neuron_state_is_the_unit_state_on_all_inputs():
    x = torch.linspace(-1, 1, 41, dtype=F64)
    b1 = torch.tensor([0.0, 2.0, -2.0, 0.9, -0.9, 1.0], dtype=F64)
    w1 = torch.tensor([1.0, 1.0, 1.0, -1.0, 1.0, 1.0], dtype=F64)
    ones = torch.ones(6, dtype=F64)
    neuron = BatchedSingleNeuron(x, torch.relu(x), w1, b1, ones, 0 * ones)
    general = st.unit_states(neuron.preactivation(x), sample_dims=(1,)).codes(F64)
    assert torch.equal(neuron.state(), general)


# ---------------------------------------------------------------------------------------------
# Probe path (hooks on nn.Module) = engine path (batched family), per shared statistic.
# ---------------------------------------------------------------------------------------------
def _mlp_and_data():
    spec = MLPSpec((5, 12, 12, 12, 2), bias=True)
    model = BatchedMLP(
        spec,
        3,
        init=["torch_default", "kaiming_normal", "lecun_normal"],
        seeds=[1, 2, 3],
        relu_shift=[0.0, 0.3, 0.1],
        dtype=F64,
    )
    with torch.no_grad():  # push some units dead and some always on
        model.biases[0][:, :3] = 5.0
        model.biases[0][:, 3:5] = -5.0
    x = torch.randn(60, 5, generator=_gen(6), dtype=F64)
    return model, x


@pytest.mark.parametrize("network", [0, 1, 2])
def test_probe_and_engine_agree_on_every_statistic(network):
    model, x = _mlp_and_data()
    features = torch.randn(60, 2, generator=_gen(7), dtype=F64)
    with torch.no_grad():
        trace = model.trace(x)
    probed = probe(model.module(network), x, features=features, batch_size=25)
    assert len(probed.layers) == len(trace.preactivations) == 3
    for layer, z, h in zip(probed.layers, trace.preactivations, trace.activations, strict=True):
        got = layer.metrics
        states = st.unit_states(z, BATCHED).fractions()
        for key in ("dead_fraction", "always_on_fraction", "balanced_fraction"):
            assert got[key] == pytest.approx(states[key][network].item(), abs=1e-15)
        m2, v2 = st.squared_mean_and_variance(*st.sample_moments(z, BATCHED), reduce="mean")
        assert got["squared_sample_mean"] == pytest.approx(m2[network].item(), rel=1e-9)
        assert got["sample_variance"] == pytest.approx(v2[network].item(), rel=1e-9)
        ratio = st.mean_variance_ratio(m2, v2)[network].item()
        assert got["sample_mean_variance_ratio"] == pytest.approx(ratio, rel=1e-9)
        fraction = st.sample_variance_fraction(m2, v2)[network].item()
        assert got["sample_variance_fraction"] == pytest.approx(fraction, rel=1e-9)
        assert got["delta"] == pytest.approx(st.delta(h, BATCHED)[network].item(), rel=1e-9)
        for centred, key in ((False, "effective_rank_uncentred"), (True, "effective_rank_centred")):
            rank = st.effective_ranks(h, centred)[network].item()
            assert got[key] == pytest.approx(rank, rel=1e-9)
        assert got["r_squared"] == pytest.approx(st.r_squared(h[network], features), rel=1e-9)
    assert any(layer.metrics["dead_fraction"] > 0 for layer in probed.layers)
    assert any(layer.metrics["always_on_fraction"] > 0 for layer in probed.layers)


def test_training_observables_agree_with_the_probe():
    model, x = _mlp_and_data()
    observed = SupervisedProblem(model, x, torch.zeros(60, 2, dtype=F64)).observe()
    for s in range(3):
        layers = probe(model.module(s), x).layers
        widths = np.array([layer.units for layer in layers])
        for key in ("dead_fraction", "always_on_fraction"):
            pooled = np.dot([layer.metrics[key] for layer in layers], widths) / widths.sum()
            assert observed[key][s].item() == pytest.approx(pooled, abs=1e-15)


def test_forward_statistics_agree_with_the_probe_of_the_same_networks():
    width, depth, seeds = 24, 5, [11, 12]
    x = torch.randn(30, 10, generator=_gen(8), dtype=F64)
    stats = forward_statistics(2, width, depth, x, seeds=seeds, dtype=F64)
    for s, seed in enumerate(seeds):
        generator, layers, fan_in = _gen(seed), [], x.shape[1]
        for _ in range(depth):  # forward_statistics' draw: Kaiming N(0, 2/fan_in), in order
            linear = nn.Linear(fan_in, width, bias=False).double()
            weight = torch.randn(width, fan_in, generator=generator, dtype=F64)
            with torch.no_grad():
                linear.weight.copy_(weight * (2.0 / fan_in) ** 0.5)
            layers += [linear, nn.ReLU()]
            fan_in = width
        probed = probe(nn.Sequential(*layers), x)
        ratios = [layer.metrics["sample_mean_variance_ratio"] for layer in probed.layers]
        np.testing.assert_allclose(ratios, stats.ratio[s], rtol=1e-9)


def test_centring_shift_of_the_engine_equals_the_module_calibration():
    model = BatchedMLP(MLPSpec((4, 9, 1)), 2, seeds=[5, 6], relu_shift=0.5, dtype=F64)
    x = torch.randn(50, 4, generator=_gen(9), dtype=F64)
    engine = st.centring_shift(model.trace(x).preactivations[0], BATCHED)
    for s in range(2):
        module = model.module(s)
        init.calibrate_relu_shift_(module, x)
        torch.testing.assert_close(module[1].b, engine[s], rtol=1e-12, atol=1e-14)


def test_residual_calibration_is_the_centring_shift_block_by_block():
    spec = ResidualToySpec(width=5, hidden=11, blocks=3, norm="pre")
    toy = BatchedResidualToy(spec, 2, seeds=[1, 2], dtype=F64)
    x = torch.randn(40, 5, generator=_gen(10), dtype=F64)
    shifts = toy.calibrate_shifts_(x)
    trace = toy.trace(x)  # now with the calibrated shifts: every hidden unit centred on x
    for shift, z, h in zip(shifts, trace.preactivations, trace.activations, strict=True):
        torch.testing.assert_close(shift, st.centring_shift(z, BATCHED, keepdim=True))
        torch.testing.assert_close(h.mean(dim=1), torch.zeros(2, 11, dtype=F64))
