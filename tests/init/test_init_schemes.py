"""One scheme registry: the engine's batched draw, init_model_ and the CLI all read it, and the
per-layer data-dependent arithmetic is one function for modules and for batched stacks."""

import math

import pytest
import torch
from torch import nn

from relulab import init
from relulab.engine import BatchedMLP, MLPSpec, init_weight_stack, scale_init_batched_
from relulab.init.schemes import SCHEMES
from relulab.theory import get_kernel

F64 = torch.float64
PER_TENSOR = [name for name, scheme in SCHEMES.items() if not scheme.data_dependent]


def test_every_vocabulary_is_a_view_of_the_registry():
    assert set(init.MODEL_INITS) == set(SCHEMES)
    assert set(init.INIT_SCHEMES) == set(PER_TENSOR)
    assert {"scale", "scale_bias", "lsuv"} == set(SCHEMES) - set(PER_TENSOR)
    assert init.FAN_IN_VARIANCE == {
        name: s.fan_in_variance for name, s in SCHEMES.items() if s.fan_in_variance is not None
    }
    import argparse

    from relulab.cli import diagnose

    commands = argparse.ArgumentParser().add_subparsers()
    diagnose.add_parser(commands)
    init_help = " ".join(commands.choices["diagnose"].format_help().split())
    assert all(name in init_help for name in SCHEMES)


@pytest.mark.parametrize("name", PER_TENSOR)
def test_engine_draw_is_the_registry_fill_network_by_network(name):
    shapes, seeds = [(6, 5), (3, 6)], [7, 8]
    stack = init_weight_stack(shapes, 2, scheme=name, scale=0.5, seeds=seeds, dtype=F64)
    for s, seed in enumerate(seeds):
        generator = torch.Generator().manual_seed(seed)
        for (weight, bias), shape in zip(stack, shapes, strict=True):
            w, b = torch.empty(shape, dtype=F64), torch.zeros(shape[0], dtype=F64)
            SCHEMES[name].fill(w, b, generator)
            torch.testing.assert_close(weight[s], w * 0.5, rtol=0, atol=0)
            torch.testing.assert_close(bias[s], b * 0.5, rtol=0, atol=0)
            if SCHEMES[name].bias == "zero":
                assert not bias[s].any()


@pytest.mark.parametrize("name", PER_TENSOR)
def test_init_model_is_the_registry_fill_layer_by_layer(name):
    model = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3)).double()
    init.init_model_(model, name, generator=torch.Generator().manual_seed(3))
    generator = torch.Generator().manual_seed(3)
    for layer in (model[0], model[2]):
        w, b = torch.empty_like(layer.weight), torch.empty_like(layer.bias)
        SCHEMES[name].fill(w, b, generator)
        torch.testing.assert_close(layer.weight, w, rtol=0, atol=0)
        torch.testing.assert_close(layer.bias, b, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["torch_default", "kaiming_normal", "lecun_normal"])
def test_fan_in_variance_is_the_drawn_variance_and_gives_the_kernel_mean_shift(name):
    ((weight, _),) = init_weight_stack([(300, 400)], 2, scheme=name, dtype=F64)
    assert weight.var().item() * 400 == pytest.approx(SCHEMES[name].fan_in_variance, rel=0.02)
    # b* = E[ReLU(z)], z ~ N(0, Var·n_in): the theory's ReLU-kernel mean, computed independently
    kernel_mean = float(get_kernel("relu").mean(SCHEMES[name].fan_in_variance))
    assert init.analytic_relu_shift(scheme=name) == pytest.approx(kernel_mean, rel=1e-15)


def test_data_dependent_schemes_need_data_and_apply_by_name():
    x = torch.randn(64, 5, generator=torch.Generator().manual_seed(0))

    def fresh():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))

    with pytest.raises(ValueError, match="data-dependent"):
        init.init_model_(fresh(), "scale_bias")
    with pytest.raises(ValueError, match="give the data"):
        init.apply_init_(fresh(), "lsuv")
    with pytest.raises(ValueError, match="unknown init 'he'"):
        init.apply_init_(fresh(), "he", x)
    by_name, direct = fresh(), fresh()
    init.apply_init_(by_name, "scale_bias", x, torch.Generator().manual_seed(1))
    init.scale_bias_(direct, x, generator=torch.Generator().manual_seed(1))
    for a, b in zip(by_name.parameters(), direct.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("centre", [False, True])
@pytest.mark.parametrize("per_feature", [False, True])
@pytest.mark.parametrize("positions", [(), (4, 4)])
def test_batched_rescale_is_the_module_rescale_network_by_network(centre, per_feature, positions):
    generator = torch.Generator().manual_seed(2)
    weight = torch.randn(3, 7, 5, *(3,) * len(positions), generator=generator, dtype=F64)
    bias = torch.randn(3, 7, generator=generator, dtype=F64)
    output = torch.randn(3, 20, 7, *positions, generator=generator, dtype=F64) * 2 + 1
    batched_w, batched_b = weight.clone(), bias.clone()
    out, factor = init.rescale_layer_(
        batched_w, batched_b, output, centre, per_feature, eps=1e-5, batch_dims=1
    )
    for s in range(3):
        w, b = weight[s].clone(), bias[s].clone()
        out_s, factor_s = init.rescale_layer_(w, b, output[s], centre, per_feature, eps=1e-5)
        torch.testing.assert_close(batched_w[s], w, rtol=1e-14, atol=0)
        torch.testing.assert_close(batched_b[s], b, rtol=1e-14, atol=0)
        torch.testing.assert_close(out[s], out_s, rtol=1e-14, atol=0)
        torch.testing.assert_close(factor[s], factor_s, rtol=1e-14, atol=0)
    dims = (1,) + tuple(range(3, out.dim()))
    if centre:
        torch.testing.assert_close(out.mean(dim=dims), torch.zeros(3, 7, dtype=F64))
    second = (
        out.square().mean(dim=dims) if per_feature else out.square().mean(dim=(1, *dims[1:], 2))
    )
    torch.testing.assert_close(second, torch.ones_like(second), rtol=1e-5, atol=0)


def test_engine_scale_bias_equals_the_module_procedure_on_each_network():
    x = torch.randn(40, 6, generator=torch.Generator().manual_seed(4), dtype=F64) + 1
    model = BatchedMLP(MLPSpec((6, 8, 8, 1)), 2, init="normal", seeds=[1, 2], dtype=F64)
    modules = [model.module(s) for s in range(2)]  # the same N(0, 1) draws, before scaling
    scale_init_batched_(model, x, with_bias=True)
    for s, module in enumerate(modules):
        with torch.no_grad():
            for linear in (module[0], module[2]):  # hidden layers in forward order
                linear.bias.zero_()
                output = init.model.capture(module, linear, x)
                init.rescale_layer_(linear.weight, linear.bias, output, centre=True)
        for got, want in zip(model.module(s).parameters(), module.parameters(), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)


def test_analytic_shift_rejects_schemes_without_a_constant_variance():
    with pytest.raises(ValueError, match="no analytic shift for 'orthogonal'"):
        init.analytic_relu_shift(scheme="orthogonal")
    assert init.analytic_relu_shift(pre_activation_std=1.0) == 1 / math.sqrt(2 * math.pi)


def test_include_and_exclude_reach_every_kind_of_scheme():
    x = torch.randn(32, 5, generator=torch.Generator().manual_seed(0))
    for scheme in ("kaiming_normal", "scale", "scale_bias", "lsuv"):
        model = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))
        head = model[2].weight.detach().clone()
        report = init.apply_init_(model, scheme, x, exclude="2")
        assert [row.layer for row in report] == ["0"], scheme
        assert torch.equal(model[2].weight, head), scheme
        assert [w.name for w in report.untouched] == ["2.weight", "2.bias"], scheme
        report = init.apply_init_(model, scheme, x, include=lambda name, module: name == "2")
        assert [row.layer for row in report] == ["2"], scheme
