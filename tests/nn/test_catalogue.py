"""The catalogue of module kinds (issue 48): every ``torch.nn`` activation and weighted layer is
declared in :mod:`relulab.nn.catalogue` or excluded here with a reason, and every table built
from the catalogue equals the table the code declared by hand before it (snapshots below)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from relulab.nn import catalogue
from relulab.nn.catalogue import ACTIVATIONS, LAYERS, activation_kind, layer_kind

ROOT = Path(__file__).resolve().parents[2] / "relulab"

#: torch.nn activations that are not catalogued, and why (adding one is one declaration).
EXCLUDED_ACTIVATIONS = {
    "GLU": "halves the feature axis: not elementwise, no unit keeps its index",
    "Softmax": "normalises across units: not elementwise",
    "Softmax2d": "normalises across channels: not elementwise",
    "Softmin": "normalises across units: not elementwise",
    "LogSoftmax": "normalises across units: not elementwise",
    "MultiheadAttention": "a weighted layer (catalogued in LAYERS), not an activation",
    "Sigmoid": "saturating gate, not yet probed (attention and LSTM gates would become layers)",
    "LogSigmoid": "saturating, not yet probed",
    "Hardsigmoid": "saturating gate, not yet probed",
    "Hardtanh": "saturating, not yet probed",
    "Hardswish": "not yet probed (MobileNetV3): one declaration in ACTIVATIONS when wanted",
    "Hardshrink": "a shrinkage (zero band around 0), not a unit activation",
    "Softshrink": "a shrinkage (zero band around 0), not a unit activation",
    "Tanhshrink": "x - tanh(x), not a unit activation in any model relulab studies",
    "Softsign": "saturating, not yet probed",
    "Threshold": "a step at a user threshold with a replacement value, not yet probed",
}

#: torch.nn modules owning weights that are not catalogued, and why.
EXCLUDED_LAYERS = {
    "RNNBase": "recurrent: per-gate weight_ih/weight_hh, neither probed nor initialised",
    "RNN": "recurrent: per-gate weight_ih/weight_hh, neither probed nor initialised",
    "LSTM": "recurrent: per-gate weight_ih/weight_hh, neither probed nor initialised",
    "GRU": "recurrent: per-gate weight_ih/weight_hh, neither probed nor initialised",
    "RNNCellBase": "recurrent cell: per-gate weights, neither probed nor initialised",
    "RNNCell": "recurrent cell: per-gate weights, neither probed nor initialised",
    "LSTMCell": "recurrent cell: per-gate weights, neither probed nor initialised",
    "GRUCell": "recurrent cell: per-gate weights, neither probed nor initialised",
    "EmbeddingBag": "F.embedding_bag is not tracked as a producer; not initialised",
    "Transformer": "a container: its Linear, LayerNorm and MultiheadAttention are catalogued",
    "TransformerEncoder": "a container of catalogued layers",
    "TransformerDecoder": "a container of catalogued layers",
    "TransformerEncoderLayer": "a container of catalogued layers",
    "TransformerDecoderLayer": "a container of catalogued layers",
}


def _torch_modules(where: str | None = None) -> dict[str, type]:
    found = {}
    for name in dir(nn):
        cls = getattr(nn, name)
        if name.startswith("_") or not isinstance(cls, type) or not issubclass(cls, nn.Module):
            continue
        if where is None or cls.__module__ == where:
            found[name] = cls
    return found


def _owns_weights(cls: type) -> bool:
    """The class (or a base below ``nn.Module``) names a weight in its source; losses (whose
    ``weight`` is a class-weighting buffer) are left out."""
    if cls.__module__ == "torch.nn.modules.loss":
        return False
    sources = []
    for base in cls.__mro__:
        if base is nn.Module:
            break
        try:
            sources.append(inspect.getsource(base))
        except (OSError, TypeError):
            pass
    return any("weight" in source for source in sources)


def _catalogued_activation(cls: type) -> bool:
    return activation_kind(cls) is not None


def _catalogued_layer(cls: type) -> bool:
    return any(issubclass(cls, kind.modules) for kind in LAYERS if kind.modules)


def test_every_torch_activation_is_catalogued_or_excluded():
    missing = [
        name
        for name, cls in _torch_modules("torch.nn.modules.activation").items()
        if not _catalogued_activation(cls) and name not in EXCLUDED_ACTIVATIONS
    ]
    assert not missing, f"declare these in relulab.nn.catalogue.ACTIVATIONS or exclude: {missing}"
    stale = [name for name in EXCLUDED_ACTIVATIONS if _catalogued_activation(getattr(nn, name))]
    assert not stale, f"catalogued and excluded at once: {stale}"


def test_every_torch_weighted_layer_is_catalogued_or_excluded():
    weighted = {name: cls for name, cls in _torch_modules().items() if _owns_weights(cls)}
    assert {"Linear", "Conv2d", "LayerNorm", "LSTM", "MultiheadAttention"} <= set(weighted)
    missing = [
        name
        for name, cls in weighted.items()
        if not (_catalogued_layer(cls) or _catalogued_activation(cls))
        and name not in EXCLUDED_LAYERS
    ]
    assert not missing, f"declare these in relulab.nn.catalogue.LAYERS or exclude: {missing}"
    assert not [name for name in EXCLUDED_LAYERS if _catalogued_layer(getattr(nn, name))]


def test_every_declaration_is_well_formed():
    from relulab.theory.kernels import KERNEL_NAMES

    for kinds in (ACTIVATIONS, LAYERS):
        names = [kind.name for kind in kinds]
        assert len(names) == len(set(names)), "a kind declared twice"
    for kind in ACTIVATIONS:
        assert kind.family in ("rectifier", "leaky", "smooth")
        assert kind.kernel is None or kind.kernel in KERNEL_NAMES, kind
        for path in kind.functions:
            assert catalogue.function(path) is not None, path
    configs = [c for kind in ACTIVATIONS for c in kind.configs]
    assert len(configs) == len(set(configs)), "a Hugging Face config string in two kinds"
    for kind in LAYERS:
        assert kind.unit_axis in (-1, 1)
        assert (kind.weight_argument is None) == (kind.bias_argument is None)


def test_every_elementwise_fn_and_slope_agrees_with_its_module():
    z = torch.linspace(-3, 3, 61, dtype=torch.float64)
    for kind in ACTIVATIONS:
        if kind.fn is not None and kind.modules and kind.name != "rrelu":
            module = kind.modules[0]().double().eval()
            torch.testing.assert_close(kind.fn(z), module(z), msg=kind.name)
        if kind.slopes is not None and kind.fn is not None:
            p, q = kind.slopes
            expected = p * z.clamp(max=0) + q * z.clamp(min=0)
            torch.testing.assert_close(kind.fn(z), expected, msg=kind.name)


def test_hf_config_strings_name_the_kinds_of_their_classes():
    """Each ``hidden_act`` string of a kind builds a module of that kind (transformers 5.x and
    4.x ``ACT2FN``), and every string ``ACT2FN`` knows is declared unless it is no unit
    activation (``linear``: the identity; ``laplace``: an attention score; ``sigmoid``)."""
    activations = pytest.importorskip("transformers.activations")
    known = set(activations.ACT2CLS)
    for kind in ACTIVATIONS:
        for config in kind.configs:
            if config in known:
                assert activation_kind(type(activations.ACT2FN[config])) is kind, config
    declared = {c for kind in ACTIVATIONS for c in kind.configs}
    assert known - declared <= {"linear", "laplace", "sigmoid", "hardswish"}


# -- the tables as the code declared them before the catalogue (issue 48 snapshots) -------------
def _old_activation_modules():
    from relulab.nn.relu_minus_b import ReLUMinusB

    return {
        nn.ReLU: "rectifier",
        ReLUMinusB: "rectifier",
        nn.ReLU6: "rectifier",
        nn.LeakyReLU: "leaky",
        nn.PReLU: "leaky",
        nn.RReLU: "leaky",
        nn.ELU: "leaky",
        nn.CELU: "leaky",
        nn.SELU: "leaky",
        nn.GELU: "smooth",
        nn.SiLU: "smooth",
        nn.Mish: "smooth",
        nn.Softplus: "smooth",
        nn.Tanh: "smooth",
    }


_OLD_COMPOSITES = {
    **{
        f"transformers.activations.{name}": "smooth"
        for name in (
            "GELUActivation",
            "NewGELUActivation",
            "GELUTanh",
            "PytorchGELUTanh",
            "FastGELUActivation",
            "QuickGELUActivation",
            "ClippedGELUActivation",
            "AccurateGELUActivation",
            "SiLUActivation",
            "MishActivation",
            "SqrtSoftplusActivation",
        )
    },
    "transformers.activations.ReLUSquaredActivation": "rectifier",
    "transformers.activations.XIELUActivation": "leaky",
    "transformers.models.bloom.modeling_bloom.BloomGelu": "smooth",
}

_OLD_FUNCTION_GROUPS = [
    ("rectifier", [("relu", ["F.relu", "F.relu_", "torch.relu", "torch.relu_"]),
                   ("relu", ["Tensor.relu", "Tensor.relu_"]), ("relu6", ["F.relu6"])]),
    ("leaky", [("leaky_relu", ["F.leaky_relu", "F.leaky_relu_"]),
               ("prelu", ["F.prelu", "torch.prelu"]),
               ("rrelu", ["F.rrelu", "F.rrelu_"]), ("elu", ["F.elu", "F.elu_"]),
               ("celu", ["F.celu", "F.celu_"]),
               ("selu", ["F.selu", "F.selu_", "torch.selu", "torch.selu_"])]),
    ("smooth", [("gelu", ["F.gelu"]), ("silu", ["F.silu"]), ("mish", ["F.mish"]),
                ("softplus", ["F.softplus"]),
                ("tanh", ["torch.tanh", "torch.tanh_", "Tensor.tanh", "Tensor.tanh_"])]),
]  # fmt: skip


def _old_activation_functions():
    namespaces = {"F": F, "torch": torch, "Tensor": Tensor}
    table = {}
    for family, entries in _OLD_FUNCTION_GROUPS:
        for short, dotted in entries:
            for path in dotted:
                space, _, attribute = path.partition(".")
                function = getattr(namespaces[space], attribute, None)
                if function is not None:
                    table.setdefault(function, (short, family))
    return table


def _old_producer_functions():
    return {
        function: (name, axis)
        for name, axis, function in [
            ("linear", -1, F.linear), ("addmm", -1, torch.addmm), ("addmm", -1, Tensor.addmm),
            ("matmul", -1, torch.matmul), ("matmul", -1, Tensor.matmul), ("mm", -1, torch.mm),
            ("mm", -1, Tensor.mm), ("bmm", -1, torch.bmm), ("bilinear", -1, F.bilinear),
            ("embedding", -1, F.embedding), ("layer_norm", -1, F.layer_norm),
            ("rms_norm", -1, getattr(F, "rms_norm", None)), ("conv1d", 1, F.conv1d),
            ("conv2d", 1, F.conv2d), ("conv3d", 1, F.conv3d),
            ("conv_transpose1d", 1, F.conv_transpose1d),
            ("conv_transpose2d", 1, F.conv_transpose2d),
            ("conv_transpose3d", 1, F.conv_transpose3d), ("batch_norm", 1, F.batch_norm),
            ("group_norm", 1, F.group_norm), ("instance_norm", 1, F.instance_norm),
        ]
        if function is not None
    }  # fmt: skip


_OLD_PRODUCER_MODULES = {
    "transformers.pytorch_utils.Conv1D": ("Conv1D", "in_out"),
    "transformers.modeling_utils.Conv1D": ("Conv1D", "in_out"),
}
_OLD_WEIGHTED = {"linear": "out_in", "addmm": "in_out", "Conv1D": "in_out"}
_OLD_FUNCTION_NAMES = {
    nn.ReLU: ("relu",), nn.ReLU6: ("relu6",), nn.LeakyReLU: ("leaky_relu",),
    nn.PReLU: ("prelu",), nn.RReLU: ("rrelu",), nn.ELU: ("elu",), nn.CELU: ("celu",),
    nn.SELU: ("selu",), nn.GELU: ("gelu",), nn.SiLU: ("silu",), nn.Mish: ("mish",),
    nn.Softplus: ("softplus",), nn.Tanh: ("tanh",),
}  # fmt: skip
_OLD_INIT_LAYER_TYPES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
_OLD_CONV_TRANSPOSE_TYPES = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)


def test_probe_tables_equal_their_snapshots():
    from relulab.probe import calls, core, tables

    assert calls.ACTIVATION_MODULES == _old_activation_modules()
    assert list(calls.ACTIVATION_MODULES) == list(_old_activation_modules())  # the listed order
    assert core.ACTIVATION_TYPES == tuple(_old_activation_modules())
    assert calls.COMPOSITE_ACTIVATIONS == _OLD_COMPOSITES
    assert calls.ACTIVATION_FUNCTIONS == _old_activation_functions()
    assert calls.PRODUCER_FUNCTIONS == _old_producer_functions()
    assert calls.PRODUCER_MODULES == _OLD_PRODUCER_MODULES
    assert tables.WEIGHTED_PRODUCERS == _OLD_WEIGHTED


def test_replace_init_engine_and_nn_tables_equal_their_snapshots():
    from relulab.engine import functional
    from relulab.init import layers
    from relulab.nn import activations, replace

    assert replace._FUNCTION_NAMES == _OLD_FUNCTION_NAMES
    assert layers.LAYER_TYPES == _OLD_INIT_LAYER_TYPES
    assert layers.CONV_TRANSPOSE_TYPES == _OLD_CONV_TRANSPOSE_TYPES
    assert functional.LAYER_TYPES == _OLD_INIT_LAYER_TYPES
    assert functional.ACTIVATION_TYPES == tuple(_old_activation_modules())
    assert activations.ACTIVATION_NAMES == ("relu", "silu", "tanh", "linear")
    z = torch.linspace(-2, 2, 9)
    old = {"relu": torch.relu, "silu": F.silu, "tanh": torch.tanh, "linear": lambda v: v}
    for name, fn in old.items():
        torch.testing.assert_close(activations.get_activation(name).fn(z), fn(z))
    assert activations.get_activation("relu").slopes == (0.0, 1.0)
    assert activations.get_activation("linear").slopes == (1.0, 1.0)
    assert activations.get_activation("tanh").slopes is None


def test_theory_kernels_by_name_are_unchanged():
    from relulab.theory import get_kernel

    assert get_kernel("relu").name == "relu" and get_kernel("relu", shift=0.5).name == "relu-0.5"
    assert get_kernel("leaky_relu", slope=0.2).name == "leaky_relu(0.2)"
    with pytest.raises(ValueError, match="choose relu, relu_b, leaky_relu, abs, linear, erf"):
        get_kernel("nope")


def test_probe_init_and_replace_decide_as_before_on_example_and_hf_models():
    """tests/nn/catalogue_snapshot.json was written by tests/nn/catalogue_fingerprint.py on the code
    before the catalogue: the probe's calls (name, kind, family, unit axis and rule, producer,
    kinks), the initialisers' blocks and replace_activations' findings are unchanged."""
    import json

    from tests.nn.catalogue_fingerprint import all_fingerprints

    expected = json.loads((Path(__file__).parent / "catalogue_snapshot.json").read_text())
    found = json.loads(json.dumps(all_fingerprints()))  # tuples → lists, as stored
    if "bert" not in found:  # transformers not installed: compare the rest
        expected = {name: value for name, value in expected.items() if name in found}
    assert found == expected


def test_hf_conv1d_is_one_kind_for_the_probe_and_the_initialisers():
    """Before, the probe knew transformers' Conv1D by qualified name and the initialisers by
    class name + ``nf``: now both know either (a subclass, or a copy in another library)."""
    from relulab.init.layers import is_hf_conv1d, model_blocks
    from relulab.probe.calls import CallRecorder

    class Conv1D(nn.Module):  # a copy of HF's Conv1D outside transformers
        def __init__(self, nf: int, nx: int) -> None:
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(torch.randn(nx, nf))
            self.bias = nn.Parameter(torch.zeros(nf))

        def forward(self, x):
            return torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight).view(
                *x.shape[:-1], self.nf
            )

    copy = Conv1D(4, 3)
    assert layer_kind(copy).name == "hf_conv1d" and is_hf_conv1d(copy)
    model = nn.Sequential(copy, nn.ReLU())
    assert CallRecorder(model).producer_modules == {id(copy): ("Conv1D", "in_out")}
    assert [b._layout for b in model_blocks(model)] == ["in_out"]
    pytorch_utils = pytest.importorskip("transformers.pytorch_utils")
    sub = type("FusedConv1D", (pytorch_utils.Conv1D,), {})(4, 3)  # matched through its base
    assert is_hf_conv1d(sub) and [b._layout for b in model_blocks(sub)] == ["in_out"]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("package", ["nn", "engine", "init", "theory"])
def test_lower_floors_never_import_the_probe_and_theory_never_torch(package):
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in _imports(path)
        if name.startswith("relulab.probe")
        or (package == "theory" and name.split(".")[0] == "torch")
        or (package == "theory" and name.startswith("relulab.nn"))
    ]
    assert not bad, bad
    catalogue_imports = _imports(ROOT / "nn" / "catalogue.py")
    assert {n for n in catalogue_imports if n.startswith("relulab")} == {"relulab.nn.relu_minus_b"}
