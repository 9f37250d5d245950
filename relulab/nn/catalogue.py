r"""One declaration per kind of torch module relulab recognises: activations and weighted layers.

Every table that recognises a module — the probe's activation modules, composite activations
and functions (:mod:`relulab.probe.tables`), the functional forms :func:`relulab.nn.
replace_activations` looks for, the engine's activations (:mod:`relulab.nn.activations`), the
blocks the model-level initialisers set (:mod:`relulab.init.layers`), the layers and activations
the functional engine traces (:mod:`relulab.engine.functional`) and the producers that fix an
activation's unit axis — is built from :data:`ACTIVATIONS` and :data:`LAYERS` here, in the
style of neural-tangents' one-line ``_elementwise(fn, name, kernel_fn)`` declarations.

**Adding an activation is one declaration** in :data:`ACTIVATIONS`: its torch module types,
the Hugging Face classes (by qualified name, so that ``transformers`` is never imported) and
``hidden_act`` config strings, its functional forms (``"F.relu"``, ``"torch.relu_"``,
``"Tensor.relu"``), its family, its elementwise function, its slopes when piecewise linear,
and the name of its mean-field kernel in :data:`relulab.theory.kernels.KERNELS` (theory stays
torch-free: the catalogue points into it by name). ``tests/nn/test_catalogue.py`` fails for a
``torch.nn`` activation or weighted layer that is neither declared nor listed in its
``EXCLUDED`` mapping with a reason.

This module sits on the lowest floor: it imports torch and :mod:`relulab.nn.relu_minus_b` only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F  # noqa: N812 (the name every PyTorch user reads)
from torch import Tensor, nn

from relulab.nn.relu_minus_b import ReLUMinusB

__all__ = [
    "ACTIVATIONS",
    "LAYERS",
    "ActivationKind",
    "Family",
    "LayerKind",
    "activation_kind",
    "function",
    "layer_kind",
    "layer_module_types",
]

#: ``rectifier``: zero output and zero gradient for :math:`z \le 0` (dead units exist);
#: ``leaky``: a non-zero gradient below zero; ``smooth``: smooth, non-zero gradient almost
#: everywhere; ``other``: a module type the caller added, of unknown kind.
Family = Literal["rectifier", "leaky", "smooth", "other"]

#: How a layer's ``weight`` holds unit j's weights: ``out_in`` row j (``nn.Linear``,
#: ``nn.Conv*d``), ``in_out`` column j (Hugging Face ``Conv1D``, ``addmm(b, x, W)``),
#: ``transposed`` ``(in, out/groups, *kernel)`` (``nn.ConvTranspose*d``).
Layout = Literal["out_in", "in_out", "transposed"]

_HF = "transformers.activations."
_NAMESPACES = {"F": F, "torch": torch, "Tensor": Tensor}


def function(path: str) -> Callable | None:
    """The torch function a dotted path names (``"F.relu"``, ``"torch.relu_"``,
    ``"Tensor.relu"``), or ``None`` when this torch has none (``F.rms_norm`` before 2.4).

    Example:
        >>> function("F.relu") is F.relu, function("F.no_such_thing")
        (True, None)
    """
    space, _, attribute = path.partition(".")
    return getattr(_NAMESPACES[space], attribute, None)


@dataclass(frozen=True)
class ActivationKind:
    """One kind of elementwise activation.

    Attributes:
        name: the short name; a functional call is named ``F.{name}`` by the probe.
        family: ``rectifier``, ``leaky`` or ``smooth`` (:data:`Family`).
        modules: torch module types (their subclasses too).
        classes: qualified class names matched without importing their library (Hugging
            Face's composite activations): ``GPT-2``'s ``NewGELUActivation`` is one call.
        configs: the Hugging Face ``hidden_act`` strings (``ACT2FN`` keys) of the kind.
        functions: the functional forms as dotted paths.
        fn: the elementwise function (default arguments), or ``None``.
        slopes: ``(negative, positive)`` slopes when piecewise linear (a shift aside).
        kernel: the name of its mean-field kernel in :data:`relulab.theory.kernels.KERNELS`.
    """

    name: str
    family: Family
    modules: tuple[type[nn.Module], ...] = ()
    classes: tuple[str, ...] = ()
    configs: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    fn: Callable[[Tensor], Tensor] | None = None
    slopes: tuple[float, float] | None = None
    kernel: str | None = None


def _act(name: str, family: Family, modules: tuple = (), **fields: object) -> ActivationKind:
    return ActivationKind(name, family, modules, **fields)  # type: ignore[arg-type]  # keywords of the dataclass


def _all(*paths: str) -> tuple[str, ...]:
    """``"F.elu(_)"`` → ``("F.elu", "F.elu_")``: a function and its in-place form."""
    out: list[str] = []
    for path in paths:
        stem = path.removesuffix("(_)")
        out += [stem, f"{stem}_"] if path.endswith("(_)") else [stem]
    return tuple(out)


def _quick_gelu(z: Tensor) -> Tensor:
    return z * torch.sigmoid(1.702 * z)


# fmt: off
#: Every activation kind, in the order the probe lists them.
ACTIVATIONS: tuple[ActivationKind, ...] = (
    _act("relu", "rectifier", (nn.ReLU,), configs=("relu",), functions=_all("F.relu(_)", "torch.relu(_)", "Tensor.relu(_)"), fn=torch.relu, slopes=(0.0, 1.0), kernel="relu"),  # noqa: E501
    _act("relu_b", "rectifier", (ReLUMinusB,), slopes=(0.0, 1.0), kernel="relu_b"),
    _act("relu6", "rectifier", (nn.ReLU6,), configs=("relu6",), functions=("F.relu6",), fn=F.relu6),
    _act("relu_squared", "rectifier", classes=(f"{_HF}ReLUSquaredActivation",), configs=("relu2",)),
    _act("leaky_relu", "leaky", (nn.LeakyReLU,), configs=("leaky_relu",), functions=_all("F.leaky_relu(_)"), fn=F.leaky_relu, slopes=(0.01, 1.0), kernel="leaky_relu"),  # noqa: E501
    _act("prelu", "leaky", (nn.PReLU,), configs=("prelu",), functions=("F.prelu", "torch.prelu")),
    _act("rrelu", "leaky", (nn.RReLU,), functions=_all("F.rrelu(_)"), fn=F.rrelu),
    _act("elu", "leaky", (nn.ELU,), functions=_all("F.elu(_)"), fn=F.elu),
    _act("celu", "leaky", (nn.CELU,), functions=_all("F.celu(_)"), fn=F.celu),
    _act("selu", "leaky", (nn.SELU,), functions=_all("F.selu(_)", "torch.selu(_)"), fn=F.selu),
    _act("xielu", "leaky", classes=(f"{_HF}XIELUActivation",), configs=("xielu",)),
    _act("gelu", "smooth", (nn.GELU,), classes=(f"{_HF}GELUActivation",), configs=("gelu", "gelu_python"), functions=("F.gelu",), fn=F.gelu, kernel="gelu"),  # noqa: E501
    _act("gelu_tanh", "smooth", classes=tuple(_HF + c for c in ("NewGELUActivation", "GELUTanh", "PytorchGELUTanh", "FastGELUActivation")) + ("transformers.models.bloom.modeling_bloom.BloomGelu",), configs=("gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python_tanh"), fn=lambda z: F.gelu(z, approximate="tanh")),  # noqa: E501
    _act("quick_gelu", "smooth", classes=(f"{_HF}QuickGELUActivation",), configs=("quick_gelu",), fn=_quick_gelu),  # noqa: E501
    _act("gelu_clipped", "smooth", classes=(f"{_HF}ClippedGELUActivation",), configs=("gelu_10",)),
    _act("gelu_accurate", "smooth", classes=(f"{_HF}AccurateGELUActivation",), configs=("gelu_accurate",)),  # noqa: E501
    _act("silu", "smooth", (nn.SiLU,), classes=(f"{_HF}SiLUActivation",), configs=("silu", "swish"), functions=("F.silu",), fn=F.silu, kernel="silu"),  # noqa: E501
    _act("mish", "smooth", (nn.Mish,), classes=(f"{_HF}MishActivation",), configs=("mish",), functions=("F.mish",), fn=F.mish),  # noqa: E501
    _act("softplus", "smooth", (nn.Softplus,), functions=("F.softplus",), fn=F.softplus),
    _act("sqrt_softplus", "smooth", classes=(f"{_HF}SqrtSoftplusActivation",), configs=("sqrtsoftplus",)),  # noqa: E501
    _act("tanh", "smooth", (nn.Tanh,), configs=("tanh",), functions=_all("torch.tanh(_)", "Tensor.tanh(_)"), fn=torch.tanh, kernel="tanh"),  # noqa: E501
    # the identity (no module): the engine's and theory's linear baseline; gradient 1 below 0
    _act("linear", "leaky", fn=lambda z: z, slopes=(1.0, 1.0), kernel="linear"),
)
# fmt: on


@dataclass(frozen=True)
class LayerKind:
    """One kind of weighted layer (or of function whose output has a feature axis).

    Attributes:
        name: the kind's name.
        unit_axis: the output's unit axis: ``-1`` (last, at any rank) or ``1`` (channels).
        modules: torch module types (their subclasses too).
        classes: qualified class names matched without importing their library.
        duck: ``(class name, attributes)``: a module of that class name having those
            attributes (Hugging Face's ``Conv1D`` copied into other libraries).
        functions: the functional forms whose output the probe takes as a *producer* of
            units (the call before an activation fixes its unit axis).
        layout: how ``weight`` holds unit j's weights (:data:`Layout`); ``None``: no weight
            per unit.
        blocks: how the model-level initialisers split its weight: ``"whole"`` one block,
            ``"qkv"`` the packed ``in_proj_weight`` as three blocks q, k, v plus ``out_proj``;
            ``None``: not initialised.
        weight_argument: ``(position, keyword)`` of the weight in the functional form.
        bias_argument: ``(position, keyword)`` of the bias in the functional form.
        module_output: the module's own output is a producer too (its forward re-views the
            functional output: ``Conv1D``'s ``addmm`` on the flattened input).
    """

    name: str
    unit_axis: int
    modules: tuple[type[nn.Module], ...] = ()
    classes: tuple[str, ...] = ()
    duck: tuple[str, tuple[str, ...]] | None = None
    functions: tuple[str, ...] = ()
    layout: Layout | None = None
    blocks: Literal["whole", "qkv"] | None = None
    weight_argument: tuple[int, str] | None = None
    bias_argument: tuple[int, str] | None = None
    module_output: bool = False

    @property
    def label(self) -> str:
        """The name a module of this kind gets as a producer (its class name for a duck)."""
        return self.duck[0] if self.duck else self.name


def _layer(name: str, axis: int, modules: tuple = (), **fields: object) -> LayerKind:
    return LayerKind(name, axis, modules, **fields)  # type: ignore[arg-type]  # keywords of the dataclass


_HF_CONV1D = tuple(f"transformers.{m}.Conv1D" for m in ("pytorch_utils", "modeling_utils"))
_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)
_LAZY_NORMS = (nn.LazyBatchNorm1d, nn.LazyBatchNorm2d, nn.LazyBatchNorm3d)
_INSTANCE_NORMS = (nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)
_LAZY_INSTANCE = (nn.LazyInstanceNorm1d, nn.LazyInstanceNorm2d, nn.LazyInstanceNorm3d)
_RMS_NORM = tuple(t for t in (getattr(nn, "RMSNorm", None),) if t is not None)

# fmt: off
#: Every weighted-layer kind; the first four are blocks of the initialisers, in this order.
LAYERS: tuple[LayerKind, ...] = (
    _layer("linear", -1, (nn.Linear,), functions=("F.linear",), layout="out_in", blocks="whole", weight_argument=(1, "weight"), bias_argument=(2, "bias")),  # noqa: E501
    _layer("conv", 1, (nn.Conv1d, nn.Conv2d, nn.Conv3d), functions=("F.conv1d", "F.conv2d", "F.conv3d"), layout="out_in", blocks="whole"),  # noqa: E501
    _layer("conv_transpose", 1, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d), functions=("F.conv_transpose1d", "F.conv_transpose2d", "F.conv_transpose3d"), layout="transposed", blocks="whole"),  # noqa: E501
    _layer("hf_conv1d", -1, classes=_HF_CONV1D, duck=("Conv1D", ("nf",)), functions=("torch.addmm", "Tensor.addmm"), layout="in_out", blocks="whole", weight_argument=(2, "mat2"), bias_argument=(0, "input"), module_output=True),  # noqa: E501
    _layer("multihead_attention", -1, (nn.MultiheadAttention,), layout="out_in", blocks="qkv"),
    _layer("matmul", -1, functions=("torch.matmul", "Tensor.matmul", "torch.mm", "Tensor.mm", "torch.bmm")),  # noqa: E501
    _layer("bilinear", -1, (nn.Bilinear,), functions=("F.bilinear",)),
    _layer("embedding", -1, (nn.Embedding,), functions=("F.embedding",)),
    _layer("layer_norm", -1, (nn.LayerNorm,), functions=("F.layer_norm",)),
    _layer("rms_norm", -1, _RMS_NORM, functions=("F.rms_norm",)),
    _layer("batch_norm", 1, _BATCH_NORMS + _LAZY_NORMS, functions=("F.batch_norm",)),
    _layer("group_norm", 1, (nn.GroupNorm,), functions=("F.group_norm",)),
    _layer("instance_norm", 1, _INSTANCE_NORMS + _LAZY_INSTANCE, functions=("F.instance_norm",)),
)
# fmt: on

_ACTIVATION_BY_TYPE = {t: kind for kind in ACTIVATIONS for t in kind.modules}
_ACTIVATION_BY_CLASS = {c: kind for kind in ACTIVATIONS for c in kind.classes}
_LAYER_BY_CLASS = {c: kind for kind in LAYERS for c in kind.classes}


def _qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def activation_kind(module_type: type) -> ActivationKind | None:
    """The kind of an activation module type: its own or its nearest base class's, by type
    (:attr:`ActivationKind.modules`) or by qualified name (:attr:`ActivationKind.classes`).

    Args:
        module_type: a module's class.

    Returns:
        The :class:`ActivationKind`, or ``None`` when not a catalogued activation.

    Example:
        >>> activation_kind(nn.ReLU).name, activation_kind(nn.Linear)
        ('relu', None)
        >>> where = {"__module__": "transformers.activations"}  # matched by name: no import
        >>> activation_kind(type("NewGELUActivation", (nn.Module,), where)).name
        'gelu_tanh'
    """
    for base in module_type.__mro__:
        kind = _ACTIVATION_BY_TYPE.get(base) or _ACTIVATION_BY_CLASS.get(_qualified_name(base))
        if kind is not None:
            return kind
    return None


def _is_duck(module: nn.Module, kind: LayerKind) -> bool:
    if kind.duck is None:
        return False
    name, attributes = kind.duck
    return type(module).__name__ == name and all(hasattr(module, a) for a in attributes)


def layer_kind(module: nn.Module) -> LayerKind | None:
    """The weighted-layer kind of a module: by type, by the qualified name of its class or a
    base class, or by its class name and attributes (:attr:`LayerKind.duck`).

    Args:
        module: any module.

    Returns:
        The :class:`LayerKind`, or ``None``.

    Example:
        >>> layer_kind(nn.Linear(2, 3)).name, layer_kind(nn.ConvTranspose2d(1, 1, 2)).layout
        ('linear', 'transposed')
        >>> layer_kind(nn.ReLU()) is None
        True
    """
    for kind in LAYERS:
        if isinstance(module, kind.modules) or _is_duck(module, kind):
            return kind
    for base in type(module).__mro__:
        by_name = _LAYER_BY_CLASS.get(_qualified_name(base))
        if by_name is not None:
            return by_name
    return None


def layer_module_types(*names: str) -> tuple[type[nn.Module], ...]:
    """The torch module types of the named :data:`LAYERS` kinds, in declaration order.

    Example:
        >>> [t.__name__ for t in layer_module_types("linear", "conv")]
        ['Linear', 'Conv1d', 'Conv2d', 'Conv3d']
    """
    unknown = set(names) - {kind.name for kind in LAYERS}
    if unknown:
        raise ValueError(f"no layer kind {sorted(unknown)} in the catalogue")
    return tuple(t for kind in LAYERS if kind.name in names for t in kind.modules)
