r"""The weights a model-level initialiser sets: layer discovery, include/exclude filters, and the
list of every parameter left untouched.

A **block** (:class:`WeightBlock`) is one weight matrix with its bias, in the *forward layout*
``(out, in/groups, *kernel)`` of ``nn.Linear`` / ``nn.Conv*d`` — what the per-tensor
initialisers and :func:`relulab.init.rescale_layer_` expect — whatever the parameter's own
layout. Recognised, in ``model.named_modules()`` order:

* ``nn.Linear`` (any subclass) and ``nn.Conv{1,2,3}d``: the weight as it is.
* HuggingFace ``Conv1D`` (GPT-2 and relatives; recognised by its class name and its ``nf``
  attribute, without importing transformers): the weight is stored ``(in, out)`` and the layer
  computes :math:`x W + b`; the block is its transpose ``(out, in)``.
* ``nn.ConvTranspose{1,2,3}d``: the weight is stored ``(in, out/groups, *kernel)``; the block is
  the equivalent convolution's ``(out, in/groups, *kernel)``, so :math:`n_{in} =
  (\mathrm{in}/\mathrm{groups})\prod k` — the taps of one output channel — and
  :math:`n_{out} = \mathrm{out}\prod k`. (torch's ``_calculate_fan_in_and_fan_out`` reads the
  stored tensor as if it were a convolution weight and returns ``(out/groups)·∏k`` as fan-in:
  the fan-in of the *adjoint* convolution, which is what torch's own default init of a
  ``ConvTranspose`` uses.) Neither counts the stride: with stride :math:`s` an output position
  receives on average :math:`\prod_d k_d/s_d` taps per input channel, so a variance-preserving
  per-tensor scheme on a strided transposed convolution is off by :math:`\prod s`; the
  data-dependent schemes measure instead.
* ``nn.MultiheadAttention``: its packed ``in_proj_weight`` ``(3d, d)`` is three ``(d, d)``
  blocks ``[q]``, ``[k]``, ``[v]`` (or its ``q/k/v_proj_weight`` when key and value dimensions
  differ), with the matching thirds of ``in_proj_bias``; and its ``out_proj``, an
  ``nn.Linear`` the attention never calls as a module (it uses the weight functionally).

A block's **name** in reports is its module's name, ``{attention}.in_proj[q]`` for the
attention projections. Filters match the module name (the attention's name for ``in_proj``).

Weights left untouched (:class:`UntouchedWeight`) are listed by parameter name — with
``in_proj_weight[q]``-style row labels for attention thirds — with the owner's class and the
reason.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

import torch
from torch import Tensor, nn

from relulab.nn.catalogue import layer_kind, layer_module_types

__all__ = [
    "LAYER_TYPES",
    "Selector",
    "UntouchedWeight",
    "WeightBlock",
    "is_hf_conv1d",
    "is_layer",
    "model_blocks",
    "not_a_layer",
    "parameter_names",
    "select_blocks",
    "tie_notes",
    "untouched_weights",
]

#: The module types whose weight is a block as it is (catalogue kinds ``linear``, ``conv``).
LAYER_TYPES: tuple[type[nn.Module], ...] = layer_module_types("linear", "conv")
#: The transposed convolutions (catalogue kind ``conv_transpose``).
CONV_TRANSPOSE_TYPES: tuple[type[nn.Module], ...] = layer_module_types("conv_transpose")

#: A filter: a glob on the module name (it matches the name or any dotted prefix of it, so
#: ``"pooler"`` covers ``pooler.dense``), a compiled regular expression (``re.search`` on the
#: name), a predicate ``(name, module) -> bool``, or a sequence of these (any matches).
Selector = str | re.Pattern | Callable[[str, nn.Module], bool] | Sequence["Selector"]

QKV = ("q", "k", "v")


def is_hf_conv1d(module: nn.Module) -> bool:
    """Whether ``module`` is a HuggingFace ``Conv1D`` (weight ``(in, out)``, :math:`xW + b`),
    told as :data:`relulab.nn.catalogue.LAYERS` declares it — by the qualified name of its
    class or a base class, or by its class name and its ``nf`` attribute — so that transformers
    need not be imported.

    Example:
        >>> is_hf_conv1d(nn.Conv1d(2, 3, 1)), is_hf_conv1d(nn.Linear(2, 3))
        (False, False)
    """
    kind = layer_kind(module)
    return (
        kind is not None
        and kind.layout == "in_out"
        and isinstance(getattr(module, "weight", None), Tensor)
    )


def is_layer(module: nn.Module) -> bool:
    """Whether ``module`` is a layer whose weight is one block: ``nn.Linear``, ``nn.Conv*d``,
    ``nn.ConvTranspose*d`` or HuggingFace ``Conv1D`` (attention modules are several blocks).

    Example:
        >>> is_layer(nn.ConvTranspose2d(2, 3, 2)), is_layer(nn.LayerNorm(3))
        (True, False)
    """
    kind = layer_kind(module)
    if kind is None or kind.blocks != "whole":
        return False
    return kind.layout != "in_out" or is_hf_conv1d(module)


@dataclass(eq=False)
class WeightBlock:
    """One weight matrix (and its bias) that a model-level initialiser sets.

    Attributes:
        name: the name in reports (the module name; ``{attention}.in_proj[q]`` for attention).
        module: the module that owns the weight.
        kind: the owner's class name (``Linear``, ``Conv1D``, ``MultiheadAttention``, …).
        weight_name: the weight's label in the untouched list (``….weight``,
            ``….in_proj_weight[q]``).
        bias_name: the bias's label (also when the layer has no bias yet).
        hook_module: the module whose call computes the block's output (the attention for its
            ``out_proj`` and ``in_proj`` blocks; else ``module``).
        role: ``"layer"``, ``"in_proj"`` (output computed from the attention's input) or
            ``"out_proj"`` (the attention's output).
        index: the attention input the block reads: 0 query, 1 key, 2 value.
        features_last: the output's features are its last axis (Linear-like) rather than axis 1.
    """

    name: str
    module: nn.Module
    kind: str
    weight_name: str
    bias_name: str
    hook_module: nn.Module
    role: str = "layer"
    index: int = 0
    features_last: bool = True
    _param: str = "weight"
    _rows: slice | None = None
    _layout: str = "out_in"
    _bias_param: str = "bias"
    _bias_rows: slice | None = None
    filter_name: str = field(default="", repr=False)

    @property
    def parameter(self) -> nn.Parameter:
        """The stored weight parameter (all of it, for attention thirds)."""
        return getattr(self.module, self._param)

    @property
    def stored(self) -> Tensor:
        """The weight as stored (the block's rows, for attention thirds): a view."""
        weight = self.parameter
        return weight if self._rows is None else weight[self._rows]

    @property
    def groups(self) -> int:
        """The convolution groups (1 for the others)."""
        return int(getattr(self.module, "groups", 1))

    @property
    def shape(self) -> tuple[int, ...]:
        """The forward layout's shape ``(out, in/groups, *kernel)``."""
        stored = self.stored.shape
        if self._layout == "in_out":
            return (stored[1], stored[0])
        if self._layout == "transposed":
            groups = self.groups
            return (stored[1] * groups, stored[0] // groups, *stored[2:])
        return tuple(stored)

    @property
    def stored_shape(self) -> tuple[int, ...]:
        """The shape of the weight as stored (the block's rows of it, for attention)."""
        return tuple(self.stored.shape)

    def _grouped(self) -> Tensor:
        """A transposed convolution's weight viewed ``(groups, in/g, out/g, *kernel)``."""
        stored = self.stored
        groups = self.groups
        return stored.view(groups, stored.shape[0] // groups, *stored.shape[1:])

    def read(self) -> Tensor:
        """The weight in forward layout: the parameter itself (or its rows) when that is its
        layout, else a copy — write it back with :meth:`store`."""
        contiguous = torch.contiguous_format
        if self._layout == "in_out":
            return self.stored.t().clone(memory_format=contiguous)
        if self._layout == "transposed":
            swapped = self._grouped().transpose(1, 2).clone(memory_format=contiguous)
            return swapped.reshape(self.shape)
        return self.stored

    @torch.no_grad()
    def store(self, weight: Tensor) -> None:
        """Write a forward-layout ``weight`` (from :meth:`read`) back into the parameter."""
        stored = self.stored
        if self._layout == "in_out":
            stored.copy_(weight.t())
        elif self._layout == "transposed":
            groups = self.groups
            grouped = weight.view(groups, weight.shape[0] // groups, *weight.shape[1:])
            self._grouped().copy_(grouped.transpose(1, 2))
        elif weight.data_ptr() != stored.data_ptr():
            stored.copy_(weight)

    @property
    def bias(self) -> Tensor | None:
        """The bias (its third, for attention), or ``None``."""
        bias = getattr(self.module, self._bias_param, None)
        if bias is None or self._bias_rows is None:
            return bias
        return bias[self._bias_rows]

    @torch.no_grad()
    def add_bias(self) -> None:
        """Give a bias-free layer a zero bias parameter (the attention's whole ``in_proj_bias``
        for its thirds), on the weight's device and in its dtype."""
        if self.bias is not None:
            return
        weight = self.parameter
        if self.role == "in_proj":  # the module is an attention: its bias covers q, k and v
            size = 3 * cast(nn.MultiheadAttention, self.module).embed_dim
        else:
            size = self.shape[0]
        bias = nn.Parameter(torch.zeros(size, dtype=weight.dtype, device=weight.device))
        setattr(self.module, self._bias_param, bias)

    def parameters(self) -> list[Tensor]:
        """The stored parameters the block writes (weight, and bias if any)."""
        bias = getattr(self.module, self._bias_param, None)
        return [self.parameter] + ([] if bias is None else [bias])

    def snapshot(self) -> tuple[Tensor, Tensor | None]:
        """Copies of the block's weight (forward layout) and bias, for :meth:`restore`."""
        bias = self.bias
        return self.read().clone(), None if bias is None else bias.detach().clone()

    @torch.no_grad()
    def restore(self, saved: tuple[Tensor, Tensor | None]) -> None:
        """Put back a :meth:`snapshot`."""
        weight, bias = saved
        self.store(weight.clone())
        if bias is not None and self.bias is not None:
            self.bias.copy_(bias)


def _dotted(prefix: str, name: str) -> str:
    """``prefix.name``, or ``name`` for the root module (empty prefix)."""
    return f"{prefix}.{name}" if prefix else name


def _plain_block(name: str, module: nn.Module) -> WeightBlock:
    kind = type(module).__name__
    declared = layer_kind(module)
    layout = declared.layout if declared is not None and declared.layout else "out_in"
    features_last = declared is not None and declared.unit_axis == -1
    return WeightBlock(
        name,
        module,
        kind,
        _dotted(name, "weight"),
        _dotted(name, "bias"),
        module,
        features_last=features_last,
        _layout=layout,
        filter_name=name,
    )


def _attention_blocks(name: str, attention: nn.MultiheadAttention) -> list[WeightBlock]:
    """The ``in_proj`` thirds and the ``out_proj`` of one ``nn.MultiheadAttention``."""
    d = attention.embed_dim
    blocks = []
    for index, label in enumerate(QKV):
        rows = slice(index * d, (index + 1) * d)
        packed = attention._qkv_same_embed_dim
        param = "in_proj_weight" if packed else f"{label}_proj_weight"
        blocks.append(
            WeightBlock(
                _dotted(name, f"in_proj[{label}]"),
                attention,
                "MultiheadAttention",
                _dotted(name, f"{param}[{label}]" if packed else param),
                _dotted(name, f"in_proj_bias[{label}]"),
                attention,
                role="in_proj",
                index=index,
                _param=param,
                _rows=rows if packed else None,
                _bias_param="in_proj_bias",
                _bias_rows=rows,
                filter_name=name,
            )
        )
    out = attention.out_proj
    out_name = _dotted(name, "out_proj")
    block = _plain_block(out_name, out)
    block.hook_module, block.role = attention, "out_proj"
    return blocks + [block]


def _splits_qkv(module: nn.Module) -> bool:
    """A packed-attention layer (``nn.MultiheadAttention``): q, k, v blocks and ``out_proj``."""
    kind = layer_kind(module)
    return kind is not None and kind.blocks == "qkv"


def model_blocks(model: nn.Module) -> list[WeightBlock]:
    """Every block of ``model`` in ``named_modules()`` order (a shared module once).

    Args:
        model: any ``nn.Module``.

    Returns:
        The blocks, unfiltered.

    Example:
        >>> att = nn.MultiheadAttention(4, 2)
        >>> [b.name for b in model_blocks(nn.ModuleDict({"att": att}))]
        ['att.in_proj[q]', 'att.in_proj[k]', 'att.in_proj[v]', 'att.out_proj']
    """
    blocks: list[WeightBlock] = []
    claimed: set[int] = set()
    for name, module in model.named_modules():
        if id(module) in claimed:
            continue
        if _splits_qkv(module):
            blocks += _attention_blocks(name, module)
            claimed.add(id(module.out_proj))
        elif is_layer(module) and isinstance(getattr(module, "weight", None), Tensor):
            blocks.append(_plain_block(name, module))
    return blocks


@dataclass(frozen=True)
class UntouchedWeight:
    """A parameter (or attention third) a model-level initialiser left as it was.

    Attributes:
        name: the parameter's name (``encoder.layer.0.attention.output.LayerNorm.weight``;
            ``….in_proj_weight[q]`` for a third of an attention's packed projection).
        kind: the class of the module that owns it.
        shape: its shape as stored.
        reason: why it was left.

    Example:
        >>> UntouchedWeight("emb.weight", "Embedding", (10, 4), "not a layer").shape
        (10, 4)
    """

    name: str
    kind: str
    shape: tuple[int, ...]
    reason: str


def not_a_layer(kind: str) -> str:
    """The reason given for a parameter outside every recognised layer.

    Example:
        >>> not_a_layer("LayerNorm")
        'not a layer the initialisers set (LayerNorm)'
    """
    return f"not a layer the initialisers set ({kind})"


def _matches(selector: Selector, name: str, module: nn.Module) -> bool:
    if isinstance(selector, str):
        parts = name.split(".")
        prefixes = [".".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatchcase(prefix, selector) for prefix in prefixes)
    if isinstance(selector, re.Pattern):
        return selector.search(name) is not None
    if callable(selector):
        return bool(selector(name, module))
    if isinstance(selector, Sequence):
        return any(_matches(s, name, module) for s in selector)
    raise TypeError(
        "include/exclude take a glob string, a compiled regex, a predicate (name, module) -> "
        f"bool, or a sequence of these; got {type(selector).__name__}"
    )


def _describe(selector: Selector) -> str:
    if isinstance(selector, re.Pattern):
        return f"re.compile({selector.pattern!r})"
    if isinstance(selector, str):
        return repr(selector)
    if callable(selector):
        return getattr(selector, "__name__", "a predicate")
    return "[" + ", ".join(_describe(s) for s in selector) + "]"


def _tied_reason(block: WeightBlock, owners: dict[int, list[tuple[str, nn.Module]]]) -> str:
    """Why a layer's weight is left to another module ("" if it is not tied to one);
    ``owners`` is :func:`parameter_names`."""
    for label, module in owners.get(id(block.parameter), []):
        if module is not block.module and not is_layer(module):
            return f"tied to {label} ({type(module).__name__}): left to that module"
    return ""


def select_blocks(
    model: nn.Module, include: Selector | None = None, exclude: Selector | None = None
) -> tuple[list[WeightBlock], dict[WeightBlock, str]]:
    """The blocks an initialiser sets, and those it leaves with the reason.

    By default every recognised block is set except a layer whose weight is tied to a
    non-layer module (an output head sharing an embedding's weight): it is left to that
    module. ``include`` keeps only the blocks it matches, ``exclude`` drops those it matches
    (module names; see :data:`Selector`). A weight shared by two layers is set once.

    Args:
        model: any ``nn.Module``.
        include: a :data:`Selector` of the layers to set (default: all).
        exclude: a :data:`Selector` of the layers to leave (default: none).

    Returns:
        ``(selected, left)``: the blocks to set in module order, and the others with reasons.

    Raises:
        ValueError: when the model has no recognised layer, or the filters leave none.

    Example:
        >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
        >>> chosen, left = select_blocks(model, exclude="2")
        >>> [b.name for b in chosen], list(left.values())
        (['0'], ["excluded by exclude='2'"])
    """
    blocks = model_blocks(model)
    if not blocks:
        raise ValueError(
            "no nn.Linear, nn.Conv, nn.ConvTranspose, HuggingFace Conv1D or "
            "nn.MultiheadAttention layer found in the model"
        )
    owners = parameter_names(model)
    selected, left, seen = [], {}, set()
    for block in blocks:
        reason = _leave_reason(block, include, exclude, owners)
        key = (id(block.parameter), None if block._rows is None else block._rows.start)
        if reason:
            left[block] = reason
        elif key not in seen:
            seen.add(key)
            selected.append(block)
    if not selected:
        raise ValueError(f"no layer left to initialise: {len(blocks)} found, none selected")
    return selected, left


def _leave_reason(
    block: WeightBlock,
    include: Selector | None,
    exclude: Selector | None,
    owners: dict[int, list[tuple[str, nn.Module]]],
) -> str:
    name, module = block.filter_name, block.module
    if include is not None and not _matches(include, name, module):
        return f"not matched by include={_describe(include)}"
    if exclude is not None and _matches(exclude, name, module):
        return f"excluded by exclude={_describe(exclude)}"
    return _tied_reason(block, owners)


#: Why a layer's own parameter is left when its weight, shared with a layer set before it, was
#: set there (a weight shared by two layers is set once).
_SHARED_LAYER = "its layer's weight is tied to another layer's and set there: left as it was"


def parameter_names(model: nn.Module) -> dict[int, list[tuple[str, nn.Module]]]:
    """Every name of each parameter, with the module that holds it under that name, by
    parameter id in module order: a tied parameter (GPT-2's ``lm_head.weight`` is its
    ``transformer.wte.weight``; T5's ``shared.weight`` its ``encoder.embed_tokens.weight``)
    under each of its names.

    Example:
        >>> model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
        >>> model[1].weight = model[0].weight  # an output head tied to its embedding
        >>> [name for name, _ in parameter_names(model)[id(model[0].weight)]]
        ['0.weight', '1.weight']
    """
    names: dict[int, list[tuple[str, nn.Module]]] = {}
    for module_name, module in model.named_modules(remove_duplicate=False):
        for name, param in module.named_parameters(recurse=False):
            entries = names.setdefault(id(param), [])
            full = _dotted(module_name, name)
            if all(full != known for known, _ in entries):
                entries.append((full, module))
    return names


def _tied_entries(
    aliases: list[tuple[str, nn.Module]], listed: set[str], shape: tuple[int, ...]
) -> list[UntouchedWeight]:
    """The names of a tied parameter not yet ``listed``, each saying what it is tied to."""
    entries = []
    for name, module in aliases:
        if name in listed:
            continue
        others = ", ".join(other for other, _ in aliases if other != name)
        kind = type(module).__name__
        what = "a layer's weight left with its tie" if is_layer(module) else not_a_layer(kind)
        entries.append(UntouchedWeight(name, kind, shape, f"{what}; tied to {others}"))
    return entries


def tie_notes(model: nn.Module, blocks: Iterable[WeightBlock]) -> dict[str, str]:
    """For each block set whose weight is tied under other names, by block name: the note
    saying so (the weight is set once, through this block, for every name).

    Example:
        >>> model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3))
        >>> model[2].weight = model[0].weight
        >>> tie_notes(model, select_blocks(model)[0])
        {'0': 'weight tied to 2.weight (Linear): set once, here'}
    """
    names = parameter_names(model)
    notes = {}
    for block in blocks:
        others = [
            f"{name} ({type(module).__name__})"
            for name, module in names.get(id(block.parameter), [])
            if name != block.weight_name.split("[")[0]
        ]
        if others:
            notes[block.name] = f"weight tied to {', '.join(others)}: set once, here"
    return notes


def untouched_weights(
    model: nn.Module, left: dict[WeightBlock, str], touched: Iterable[WeightBlock]
) -> list[UntouchedWeight]:
    """Every parameter of ``model`` an initialiser did not write, in parameter order; a tied
    parameter under each of its names, each naming the others (GPT-2's head left to its
    embedding: ``lm_head.weight`` and ``transformer.wte.weight``).

    Args:
        model: the model.
        left: blocks not set, with the reason each was left.
        touched: the blocks set.

    Returns:
        One :class:`UntouchedWeight` per parameter name (per attention third for ``in_proj``).

    Example:
        >>> model = nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(3))
        >>> chosen, left = select_blocks(model)
        >>> [w.name for w in untouched_weights(model, left, chosen)]
        ['1.weight', '1.bias']
    """
    covered = {id(p) for block in [*left, *touched] for p in block.parameters()}
    by_param: dict[int, list[UntouchedWeight]] = {}
    for block, reason in left.items():
        entries = by_param.setdefault(id(block.parameter), [])
        entries.append(UntouchedWeight(block.weight_name, block.kind, block.stored_shape, reason))
        bias = block.bias
        if bias is not None:
            bias_entry = UntouchedWeight(block.bias_name, block.kind, tuple(bias.shape), reason)
            by_param.setdefault(id(getattr(block.module, block._bias_param)), []).append(bias_entry)
    names = parameter_names(model)
    result: list[UntouchedWeight] = []
    for _, param in model.named_parameters():
        aliases, shape = names[id(param)], tuple(param.shape)
        if id(param) in by_param:
            entries = by_param.pop(id(param))
            result += entries
            if len(aliases) > 1:
                result += _tied_entries(aliases, {entry.name for entry in entries}, shape)
        elif id(param) not in covered:
            if len(aliases) > 1:
                result += _tied_entries(aliases, set(), shape)
                continue
            name, module = aliases[0]
            kind = type(module).__name__
            reason = _SHARED_LAYER if is_layer(module) else not_a_layer(kind)
            result.append(UntouchedWeight(name, kind, shape, reason))
    return result
