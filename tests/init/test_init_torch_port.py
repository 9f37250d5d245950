"""``relulab.init`` as a drop-in for ``torch.nn.init``.

1. PyTorch's own ``test/nn/test_init.py`` (``TestNNInit`` and the CPU half of
   ``TestNNInitDeviceType``), ported to pytest and run against ``torch.nn.init``, ``relulab.init``
   and ``relulab.init`` with ``draw="float64"`` (relulab's namesakes only; the rest is torch's).
   The checks are torch's, at fixed seeds (``random.seed(123)`` as in torch's ``setUp``, and
   ``torch.manual_seed(0)``); the only changes are smaller 4-D tensors (so the Kolmogorov–Smirnov
   tests take milliseconds) and pytest's idioms.
2. Every public name of ``torch.nn.init`` is in ``relulab.init`` with a compatible signature.
3. Code written for ``torch.nn.init`` runs with ``from relulab import init as nn_init`` and gives
   the same tensors under the same ``torch.manual_seed``; which of relulab's own functions draw
   torch's numbers from the global generator, and which do not (see ``docs/init-dropin.md``).
"""

from __future__ import annotations

import functools
import inspect
import math
import random
import string
import types
from collections.abc import Iterator
from functools import reduce
from operator import mul

import pytest
import torch
from scipy import stats
from torch import Tensor
from torch.nn import functional

import relulab.init

NAMESAKES = ("normal_", "kaiming_normal_", "kaiming_uniform_", "orthogonal_")


def _float64_module() -> types.SimpleNamespace:
    """``relulab.init`` with its torch namesakes drawing in float64."""
    module = types.SimpleNamespace(**vars(relulab.init))
    for name in NAMESAKES:
        setattr(module, name, functools.partial(getattr(relulab.init, name), draw="float64"))
    return module


MODULES = [
    pytest.param(torch.nn.init, id="torch"),
    pytest.param(relulab.init, id="relulab"),
    pytest.param(_float64_module(), id="relulab-float64"),
]


@pytest.fixture(params=MODULES)
def init(request: pytest.FixtureRequest) -> object:
    return request.param


@pytest.fixture(autouse=True)
def _seeded() -> Iterator[None]:
    """torch's ``setUp`` (``random.seed(123)``), a fixed torch seed, both restored after."""
    state = random.getstate()
    random.seed(123)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        yield
    random.setstate(state)


# ---------------------------------------------------------------------------------------------
# 1. torch's test/nn/test_init.py, ported
# ---------------------------------------------------------------------------------------------
def _samples(tensor: Tensor):
    return tensor.reshape(-1).double().numpy()


def _is_normal(tensor: Tensor, mean: float, std: float) -> bool:
    return stats.kstest(_samples(tensor), "norm", args=(mean, std))[1] > 0.0001


def _is_trunc_normal(tensor: Tensor, mean: float, std: float, a: float, b: float) -> bool:
    # scipy's truncnorm is for N(0, 1): standardise the samples and the bounds
    z_samples = (_samples(tensor) - mean) / std
    a0, b0 = (a - mean) / std, (b - mean) / std
    return stats.kstest(z_samples, "truncnorm", args=(a0, b0))[1] > 0.0001


def _is_uniform(tensor: Tensor, a: float, b: float) -> bool:
    return stats.kstest(_samples(tensor), "uniform", args=(a, b - a))[1] > 0.0001


def _create_random_nd_tensor(dims: int, size_min: int, size_max: int) -> Tensor:
    return torch.zeros([random.randint(size_min, size_max) for _ in range(dims)])


def _random_float(a: float, b: float) -> float:
    return (b - a) * random.random() + a


def _fans(tensor: Tensor) -> tuple[int, int]:
    fan_in, fan_out = tensor.size(1), tensor.size(0)
    if tensor.dim() > 2:
        fan_in *= tensor[0, 0].numel()
        fan_out *= tensor[0, 0].numel()
    return fan_in, fan_out


#: torch's sizes (30–50 per dimension, 20–25 for xavier/kaiming) but for 4-D tensors
SMALL_4D = (6, 10)


def _sizes(dims: int, size_min: int, size_max: int) -> tuple[int, int]:
    return SMALL_4D if dims == 4 else (size_min, size_max)


def test_calculate_gain_linear(init):
    for fn in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d", "conv_transpose3d"]:
        assert init.calculate_gain(fn) == 1


def test_calculate_gain_nonlinear(init):
    expected = {"sigmoid": 1, "tanh": 5 / 3, "relu": math.sqrt(2), "leaky_relu": 1.4141428569978354}
    for fn, gain in expected.items():
        assert init.calculate_gain(fn) == pytest.approx(gain, rel=1e-15)
    assert init.calculate_gain("selu") == 0.75


def test_calculate_gain_leaky_relu(init):
    expected = {None: 1.4141428569978354, 0: 1.4142135623730951, 0.01: 1.4141428569978354}
    expected[10] = 0.14071950894605836
    for param, gain in expected.items():
        assert init.calculate_gain("leaky_relu", param) == pytest.approx(gain, rel=1e-15)


def test_calculate_gain_leaky_relu_only_accepts_numbers(init):
    for param in [True, [1], {"a": "b"}]:
        with pytest.raises(ValueError):
            init.calculate_gain("leaky_relu", param)


def test_calculate_gain_only_accepts_valid_nonlinearities(init):
    for n in [2, 5, 25]:
        name = "".join(random.choice(string.ascii_lowercase) for _ in range(n))
        with pytest.raises(ValueError):
            init.calculate_gain(name)


def test_uniform(init):
    for dims in [1, 2, 4]:
        tensor = _create_random_nd_tensor(dims, *_sizes(dims, 30, 50))
        a = _random_float(-3, 3)
        b = a + _random_float(1, 5)
        init.uniform_(tensor, a=a, b=b)
        assert _is_uniform(tensor, a, b)


def test_normal(init):
    for dims in [1, 2, 4]:
        tensor = _create_random_nd_tensor(dims, *_sizes(dims, 30, 50))
        mean = _random_float(-3, 3)
        std = _random_float(1, 5)
        init.normal_(tensor, mean=mean, std=std)
        assert _is_normal(tensor, mean, std)


def test_trunc_normal_generator(init):
    tensor = init.trunc_normal_(torch.empty(5), generator=torch.Generator().manual_seed(42))
    torch.manual_seed(42)
    reference = init.trunc_normal_(torch.empty(5))
    assert torch.equal(tensor, reference)
    assert _is_trunc_normal(tensor, mean=0, std=1, a=0, b=1)  # torch's check, kept as written


def test_constant(init):
    for dims in [1, 2, 4]:
        tensor = _create_random_nd_tensor(dims, size_min=1, size_max=5)
        val = _random_float(1, 10)
        init.constant_(tensor, val)
        assert torch.equal(tensor, tensor.clone().fill_(val))


def test_ones_and_zeros(init):
    for fill, val in [(init.ones_, 1), (init.zeros_, 0)]:
        for dims in [1, 2, 4]:
            tensor = _create_random_nd_tensor(dims, size_min=1, size_max=5)
            fill(tensor)
            assert torch.equal(tensor, tensor.clone().fill_(val))


def test_eye(init):
    tensor = init.eye_(_create_random_nd_tensor(2, size_min=1, size_max=5))
    for i in range(tensor.size(0)):
        for j in range(tensor.size(1)):
            assert tensor[i][j] == (1 if i == j else 0)


def test_eye_only_works_on_2d_inputs(init):
    for dims in [1, 3]:
        with pytest.raises(ValueError):
            init.eye_(_create_random_nd_tensor(dims, size_min=1, size_max=3))


def test_dirac_properties(init):
    for dims in [3, 4, 5]:
        for groups in [1, 2, 3]:
            a, c, d, e = (random.randint(1, 5) for _ in range(4))
            b = random.randint(1, 5 * groups)
            tensor = torch.randn((a * groups, b, c, d, e)[:dims])
            init.dirac_(tensor, groups)
            min_d = min(tensor.size(0) // groups, tensor.size(1))
            # as many nonzeros, each 1, as the smaller dimension, in every group
            assert torch.nonzero(tensor).size(0) == min_d * groups
            assert tensor.sum().item() == pytest.approx(min_d * groups)


@pytest.mark.parametrize(
    ("conv", "dims"), [(functional.conv1d, 1), (functional.conv2d, 2), (functional.conv3d, 3)]
)
def test_dirac_identity(init, conv, dims):
    for groups in [1, 3]:
        batch, in_c, out_c, size, kernel_size = 8, 3, 9, 5, 3
        eff_out_c = out_c // groups
        inputs = torch.randn(batch, in_c, *[size] * dims)
        filters = torch.cat([torch.zeros(eff_out_c, in_c, *[kernel_size] * dims)] * groups)
        init.dirac_(filters, groups)
        outputs = conv(inputs, filters)
        inner = (slice(None), slice(None), *[slice(1, -1)] * dims)
        for g in range(groups):
            # the in_c outputs of every group reproduce the input; the extra ones are 0
            start = eff_out_c * g
            torch.testing.assert_close(inputs[inner], outputs[:, start : start + in_c])
            assert torch.nonzero(outputs[:, start + in_c : eff_out_c * (g + 1)]).numel() == 0


def test_dirac_only_works_on_3_4_5d_inputs(init):
    for dims in [1, 2, 6]:
        with pytest.raises(ValueError):
            init.dirac_(_create_random_nd_tensor(dims, size_min=1, size_max=3))


@pytest.mark.parametrize("name", ["xavier_uniform_", "xavier_normal_"])
def test_xavier_errors_on_inputs_smaller_than_2d(init, name):
    for dims in [0, 1]:
        tensor = _create_random_nd_tensor(dims, size_min=1, size_max=1)
        with pytest.raises(ValueError):
            getattr(init, name)(tensor)


@pytest.mark.parametrize("uniform", [True, False], ids=["xavier_uniform", "xavier_normal"])
def test_xavier(init, uniform):
    fill = init.xavier_uniform_ if uniform else init.xavier_normal_
    for use_gain in [True, False]:
        for dims in [2, 4]:
            tensor = _create_random_nd_tensor(dims, *_sizes(dims, 20, 25))
            gain = _random_float(0.1, 2) if use_gain else 1
            fill(tensor, gain=gain) if use_gain else fill(tensor)
            fan_in, fan_out = _fans(tensor)
            expected_std = gain * math.sqrt(2.0 / (fan_in + fan_out))
            bound = expected_std * math.sqrt(3)
            assert (
                _is_uniform(tensor, -bound, bound)
                if uniform
                else _is_normal(tensor, 0, expected_std)
            )


@pytest.mark.parametrize("name", ["kaiming_uniform_", "kaiming_normal_"])
def test_kaiming_errors_on_inputs_smaller_than_2d(init, name):
    for dims in [0, 1]:
        with pytest.raises(ValueError):
            getattr(init, name)(_create_random_nd_tensor(dims, size_min=1, size_max=1))


@pytest.mark.parametrize("name", ["kaiming_uniform_", "kaiming_normal_"])
def test_kaiming_warning_on_0element_tensor(init, name):
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        getattr(init, name)(torch.empty(0, 1))


@pytest.mark.parametrize("uniform", [True, False], ids=["kaiming_uniform", "kaiming_normal"])
def test_kaiming(init, uniform):
    fill = init.kaiming_uniform_ if uniform else init.kaiming_normal_
    for use_a in [True, False]:
        for dims in [2, 4]:
            for mode in ["fan_in", "fan_out"]:
                tensor = _create_random_nd_tensor(dims, *_sizes(dims, 20, 25))
                a = _random_float(0.1, 2) if use_a else 0
                fill(tensor, a=a, mode=mode) if use_a else fill(tensor, mode=mode)
                fan_in, fan_out = _fans(tensor)
                n = fan_in if mode == "fan_in" else fan_out
                expected_std = math.sqrt(2.0 / ((1 + a**2) * n))
                bound = expected_std * math.sqrt(3.0)
                assert (
                    _is_uniform(tensor, -bound, bound)
                    if uniform
                    else _is_normal(tensor, 0, expected_std)
                )


def test_sparse_only_works_on_2d_inputs(init):
    for dims in [1, 3]:
        sparsity = _random_float(0.1, 0.9)
        with pytest.raises(ValueError):
            init.sparse_(_create_random_nd_tensor(dims, size_min=1, size_max=3), sparsity)


def test_sparse_default_std(init):
    for use_random_std in [True, False]:
        tensor = _create_random_nd_tensor(2, size_min=30, size_max=35)
        rows = tensor.size(0)
        sparsity = _random_float(0.1, 0.2)
        std = _random_float(0.01, 0.2) if use_random_std else 0.01
        if use_random_std:
            init.sparse_(tensor, sparsity=sparsity, std=std)
        else:
            init.sparse_(tensor, sparsity=sparsity)
        for col_idx in range(tensor.size(1)):
            column = tensor[:, col_idx]
            assert column[column == 0].nelement() >= math.ceil(sparsity * rows)
        assert _is_normal(tensor[tensor != 0], 0, std)


def test_orthogonal(init):
    for use_gain in [True, False]:
        for size in [[3, 4], [4, 3], [20, 2, 3, 4], [2, 3, 4, 5]]:
            tensor = torch.zeros(size)
            gain = _random_float(0.1, 2) if use_gain else 1.0
            init.orthogonal_(tensor, gain=gain) if use_gain else init.orthogonal_(tensor)
            rows, cols = size[0], reduce(mul, size[1:])
            flat = tensor.view(rows, cols)
            gram = flat.t() @ flat if rows > cols else flat @ flat.t()
            torch.testing.assert_close(
                gram, torch.eye(min(rows, cols)) * gain**2, atol=1e-6, rtol=0
            )


def test_deprecation(init):
    with pytest.warns(FutureWarning, match="deprecated"):
        init.normal(torch.randn(3, 3))


# TestNNInitDeviceType, on the CPU
@pytest.mark.parametrize("dims", [1, 2, 4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_trunc_normal_all_dtypes(init, dims, dtype):
    tensor = torch.zeros([random.randint(*_sizes(dims, 30, 50)) for _ in range(dims)], dtype=dtype)
    mean = random.uniform(-3, 3)
    std = random.uniform(0.01, 1)
    a = random.uniform(mean - 2 * std, mean)
    b = random.uniform(mean, mean + 2 * std)
    init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
    # bounds at the tensor's precision: a and b are rounded when cast
    assert tensor.min().item() >= torch.tensor(a, dtype=dtype).item()
    assert tensor.max().item() <= torch.tensor(b, dtype=dtype).item()
    assert _is_trunc_normal(tensor, mean, std, a, b)


@pytest.mark.parametrize(
    ("dtype", "bounds"),
    [
        (torch.float16, (-2.0, 2.0)),  # test_trunc_normal_low_precision
        (torch.bfloat16, (-2.0, 2.0)),
        (torch.float32, (2.0, 3.0)),  # test_trunc_normal_narrow_interval
        (torch.float64, (2.0, 3.0)),
        (torch.float16, (2.0, 3.0)),
    ],
)
def test_trunc_normal_low_precision_and_narrow_interval(init, dtype, bounds):
    a, b = bounds
    tensor = init.trunc_normal_(torch.empty(10000, dtype=dtype), mean=0.0, std=1.0, a=a, b=b)
    assert tensor.min().item() >= a
    assert tensor.max().item() <= b
    assert _is_trunc_normal(tensor.float(), 0.0, 1.0, a, b)


@pytest.mark.parametrize(
    ("dtype", "min_unique"),
    [(torch.float32, 5000), (torch.float64, 5000), (torch.float16, 3000), (torch.bfloat16, 1000)],
)
def test_trunc_normal_unique_values(init, dtype, min_unique):
    tensor = init.trunc_normal_(torch.empty(10000, dtype=dtype), mean=0.0, std=1.0, a=-2.0, b=2.0)
    assert tensor.min().item() >= -2.0
    assert tensor.max().item() <= 2.0
    assert tensor.unique().numel() > min_unique
    assert not tensor.isinf().any()
    assert not tensor.isnan().any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_trunc_normal_no_boundary_values_small_std(init, dtype):
    tensor = init.trunc_normal_(torch.empty(10000, dtype=dtype), mean=0.0, std=0.1, a=-2.0, b=2.0)
    assert (tensor == -2.0).sum().item() == 0
    assert (tensor == 2.0).sum().item() == 0


# relulab's extras keep torch's behaviour at the edges (torch has no draw= to test)
@pytest.mark.parametrize("draw", ["torch", "float64"], ids=["draw=torch", "draw=float64"])
def test_orthogonal_needs_two_dimensions_with_either_draw(draw):
    for tensor in [torch.empty(5), torch.tensor(1.0)]:
        with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
            relulab.init.orthogonal_(tensor, draw=draw)
    empty = torch.empty(0, 3)
    assert relulab.init.orthogonal_(empty, draw=draw) is empty


@pytest.mark.parametrize("name", ["kaiming_uniform_", "kaiming_normal_"])
@pytest.mark.parametrize("extra", [{"draw": "float64"}, {"gain": 2.0}, {}])
def test_kaiming_zero_element_warning_with_relulab_extras(name, extra):
    for shape in [(0, 1), (3, 0), (0,), (2, 0, 3)]:
        tensor = torch.empty(shape)
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            assert getattr(relulab.init, name)(tensor, **extra) is tensor


# ---------------------------------------------------------------------------------------------
# 2. Every public name of torch.nn.init, with a compatible signature
# ---------------------------------------------------------------------------------------------
def _torch_public_functions() -> set[str]:
    """The functions torch.nn.init defines itself, without a leading underscore."""
    return {
        name
        for name, value in vars(torch.nn.init).items()
        if not name.startswith("_")
        and inspect.isfunction(value)
        and value.__module__ == "torch.nn.init"
    }


def test_torch_all_lists_every_public_function_of_torch_nn_init():
    assert _torch_public_functions() == set(torch.nn.init.__all__)


def test_every_name_of_torch_nn_init_is_in_relulab_init():
    deprecated = set(relulab.init.DEPRECATED_ALIASES)
    current = set(torch.nn.init.__all__) - deprecated
    assert deprecated == {n for n in torch.nn.init.__all__ if not n.endswith("_")} - {
        "calculate_gain"
    }
    assert current <= set(relulab.init.__all__)
    assert not deprecated & set(relulab.init.__all__)
    for name in deprecated:  # torch's objects: they warn and call torch's function
        assert getattr(relulab.init, name) is getattr(torch.nn.init, name)
    for name in relulab.init.TORCH_FUNCTIONS:
        assert getattr(relulab.init, name) is getattr(torch.nn.init, name), name
    assert set(relulab.init.TORCH_FUNCTIONS) == current - set(NAMESAKES)
    assert relulab.init._calculate_fan_in_and_fan_out is torch.nn.init._calculate_fan_in_and_fan_out


def _assert_compatible(ours: inspect.Signature, theirs: inspect.Signature) -> None:
    """Every parameter of torch's at the same place, of the same kind, with the same default;
    relulab's extras keyword-only with defaults."""
    own, torch_params = list(ours.parameters.values()), list(theirs.parameters.values())
    for mine, their in zip(own, torch_params, strict=False):
        assert (mine.name, mine.kind) == (their.name, their.kind)
        assert (mine.default, type(mine.default)) == (their.default, type(their.default))
    for extra in own[len(torch_params) :]:
        assert extra.kind is inspect.Parameter.KEYWORD_ONLY, extra.name
        assert extra.default is not inspect.Parameter.empty, extra.name


@pytest.mark.parametrize(
    "name", sorted(set(torch.nn.init.__all__) - set(relulab.init.DEPRECATED_ALIASES))
)
def test_signatures_are_compatible_with_torch(name):
    ours, theirs = getattr(relulab.init, name), getattr(torch.nn.init, name)
    if ours is theirs:
        return
    _assert_compatible(inspect.signature(ours), inspect.signature(theirs))


#: every argument of torch's, positionally and by keyword
CALLS = [
    ("normal_", (0.5, 2.0), {"mean": 0.5, "std": 2.0}),
    (
        "kaiming_normal_",
        (0.3, "fan_out", "leaky_relu"),
        {"a": 0.3, "mode": "fan_out", "nonlinearity": "leaky_relu"},
    ),
    ("kaiming_normal_", (0, "FAN_IN", "relu"), {"a": 0, "mode": "FAN_IN", "nonlinearity": "relu"}),
    (
        "kaiming_uniform_",
        (math.sqrt(5), "fan_in", "leaky_relu"),
        {"a": math.sqrt(5), "mode": "fan_in", "nonlinearity": "leaky_relu"},
    ),
    (
        "kaiming_uniform_",
        (0, "fan_out", "tanh"),
        {"a": 0, "mode": "fan_out", "nonlinearity": "tanh"},
    ),
    ("orthogonal_", (1.5,), {"gain": 1.5}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS)
@pytest.mark.parametrize("shape", [(6, 4), (3, 5, 2, 2)])
def test_namesakes_take_every_torch_argument_positionally_and_by_keyword(name, args, kwargs, shape):
    ours, theirs = getattr(relulab.init, name), getattr(torch.nn.init, name)
    expected = theirs(torch.empty(shape), *args, torch.Generator().manual_seed(1))
    positional = ours(torch.empty(shape), *args, torch.Generator().manual_seed(1))
    by_keyword = ours(
        tensor=torch.empty(shape), **kwargs, generator=torch.Generator().manual_seed(1)
    )
    assert torch.equal(positional, expected)
    assert torch.equal(by_keyword, expected)


# ---------------------------------------------------------------------------------------------
# 3. Code written for torch.nn.init, run with relulab.init; the global generator
# ---------------------------------------------------------------------------------------------
USER_CODE = """
import math

import torch
from torch import nn
from torch.nn import init as nn_init


class Projection(nn.Module):
    '''nn.Linear's own reset_parameters, as written in torch.'''

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        self.reset_parameters()

    def reset_parameters(self):
        nn_init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        fan_in, _ = nn_init._calculate_fan_in_and_fan_out(self.weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        nn_init.uniform_(self.bias, -bound, bound)


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn_init.xavier_uniform_(module.weight, gain=nn_init.calculate_gain("relu"))
        nn_init.zeros_(module.bias)
    elif isinstance(module, nn.Conv2d):
        nn_init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        nn_init.constant_(module.bias, 0.1)
    elif isinstance(module, nn.Conv1d):
        nn_init.dirac_(module.weight)
    elif isinstance(module, nn.LayerNorm):
        nn_init.ones_(module.weight)
        nn_init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn_init.normal_(module.weight, mean=0.0, std=0.02)
    elif isinstance(module, nn.GRU):
        nn_init.orthogonal_(module.weight_hh_l0)
        nn_init.xavier_normal_(module.weight_ih_l0)
        nn_init.sparse_(module.bias_hh_l0.view(3, -1), 0.5)
        nn_init.eye_(module.bias_ih_l0.view(6, -1))


def build():
    model = nn.ModuleDict({
        "embedding": nn.Embedding(11, 6),
        "gru": nn.GRU(6, 4),
        "conv": nn.Conv2d(3, 8, 3),
        "conv1d": nn.Conv1d(4, 4, 3),
        "norm": nn.LayerNorm(6),
        "head": nn.Linear(6, 5),
        "projection": Projection(5, 7),
    })
    model.apply(init_weights)
    position = nn_init.trunc_normal_(torch.empty(1, 9, 6), std=0.02)
    nn_init.kaiming_uniform_(model["head"].weight, a=math.sqrt(5))
    return {**model.state_dict(), "position": position}
"""

RELULAB_IMPORT = "from relulab import init as nn_init"


def _run_user_code(source: str, seed: int = 0) -> dict[str, Tensor]:
    namespace: dict[str, object] = {}
    exec(compile(source, "user_code", "exec"), namespace)
    torch.manual_seed(seed)
    return namespace["build"]()


def test_code_written_for_torch_nn_init_runs_on_relulab_with_the_same_tensors():
    ported = USER_CODE.replace("from torch.nn import init as nn_init", RELULAB_IMPORT)
    assert RELULAB_IMPORT in ported
    theirs, ours = _run_user_code(USER_CODE), _run_user_code(ported)
    assert theirs.keys() == ours.keys()
    for key, value in theirs.items():
        assert torch.equal(ours[key], value), key
    assert not torch.equal(_run_user_code(ported, seed=1)["head.weight"], ours["head.weight"])


def _lecun(t: Tensor) -> Tensor:
    return torch.nn.init.kaiming_normal_(t, nonlinearity="linear")


def _linear_reset(weight: Tensor, bias: Tensor) -> Tensor:
    torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    bound = 1 / math.sqrt(weight.shape[1])
    torch.nn.init.uniform_(bias, -bound, bound)
    return weight


#: relulab's own functions that draw torch's numbers from the global generator (documented in
#: docs/init-dropin.md): (relulab call, torch call giving the same tensor and RNG state after)
SAME_AS_TORCH = {
    "normal_": (
        lambda t: relulab.init.normal_(t, 0.1, 2.0),
        lambda t: torch.nn.init.normal_(t, 0.1, 2.0),
    ),
    "kaiming_normal_": (relulab.init.kaiming_normal_, torch.nn.init.kaiming_normal_),
    "kaiming_uniform_": (relulab.init.kaiming_uniform_, torch.nn.init.kaiming_uniform_),
    "orthogonal_": (relulab.init.orthogonal_, torch.nn.init.orthogonal_),
    "kaiming_normal_(gain=√2)": (
        lambda t: relulab.init.kaiming_normal_(t, gain=math.sqrt(2.0)),
        lambda t: torch.nn.init.kaiming_normal_(t, nonlinearity="relu"),
    ),
    "kaiming_uniform_(gain=1)": (
        lambda t: relulab.init.kaiming_uniform_(t, gain=1.0),
        lambda t: torch.nn.init.kaiming_uniform_(t, nonlinearity="linear"),
    ),
    "lecun_normal_": (relulab.init.lecun_normal_, _lecun),
    "torch_default_": (
        lambda t: relulab.init.torch_default_(t, torch.empty(t.shape[0])),
        lambda t: _linear_reset(t, torch.empty(t.shape[0])),
    ),
}


def _draw_globally(fill, seed: int = 5) -> tuple[Tensor, Tensor]:
    torch.manual_seed(seed)
    tensor = fill(torch.empty(12, 10))
    return tensor, torch.get_rng_state()


@pytest.mark.parametrize("name", list(SAME_AS_TORCH))
def test_relulab_functions_that_draw_torchs_numbers_from_the_global_generator(name):
    ours, theirs = SAME_AS_TORCH[name]
    (mine, my_state), (their, their_state) = _draw_globally(ours), _draw_globally(theirs)
    assert torch.equal(mine, their)
    assert torch.equal(my_state, their_state), "the same generator state after"


#: and those that do not: a float64 draw, or no torch namesake (RAI, RAAI, correlated rows)
NOT_TORCH = {
    "normal_(draw='float64')": lambda t: relulab.init.normal_(t, draw="float64"),
    "kaiming_normal_(draw='float64')": lambda t: relulab.init.kaiming_normal_(t, draw="float64"),
    "kaiming_uniform_(draw='float64')": lambda t: relulab.init.kaiming_uniform_(t, draw="float64"),
    "orthogonal_(draw='float64')": lambda t: relulab.init.orthogonal_(t, draw="float64"),
    "lecun_normal_(draw='float64')": lambda t: relulab.init.lecun_normal_(t, draw="float64"),
    "torch_default_(draw='float64')": lambda t: relulab.init.torch_default_(t, draw="float64"),
}
NOT_TORCH_REFERENCE = {
    "normal_": torch.nn.init.normal_,
    "kaiming_normal_": torch.nn.init.kaiming_normal_,
    "kaiming_uniform_": torch.nn.init.kaiming_uniform_,
    "orthogonal_": torch.nn.init.orthogonal_,
    "lecun_normal_": _lecun,
    "torch_default_": lambda t: torch.nn.init.kaiming_uniform_(t, a=math.sqrt(5)),
}


@pytest.mark.parametrize("name", list(NOT_TORCH))
def test_float64_draws_are_not_torchs_numbers(name):
    mine, _ = _draw_globally(NOT_TORCH[name])
    their, _ = _draw_globally(NOT_TORCH_REFERENCE[name.split("(")[0]])
    assert not torch.equal(mine, their)
    again, _ = _draw_globally(NOT_TORCH[name])
    assert torch.equal(mine, again), "still reproducible under torch.manual_seed"


@pytest.mark.parametrize("name", ["rai_", "raai_", "correlated_"])
def test_schemes_without_a_torch_namesake_draw_in_float64_from_the_global_generator(name):
    def fill(weight: Tensor) -> Tensor:
        return getattr(relulab.init, name)(weight, torch.empty(weight.shape[0]))

    (single, _), (again, _) = _draw_globally(fill), _draw_globally(fill)
    torch.manual_seed(5)
    double = fill(torch.empty(12, 10, dtype=torch.float64))
    assert torch.equal(single, again)
    assert torch.equal(single, double.float()), "drawn in float64 and cast"
