r"""The one-pass calibration behind the data-dependent schemes (:mod:`relulab.init.model`).

All selected blocks are set during a single forward pass over the data: a pre-hook draws a
block's weight just before its layer's first call (keeping a copy until the block is set), a
forward hook rescales it from the layer's output and returns the rescaled output, so every later
layer sees the outputs of the layers already set — the layer-by-layer procedure exactly, as a
layer is affine in :math:`(W, b)`. ``nn.MultiheadAttention``'s ``in_proj`` thirds are set in a
pre-hook on the attention from its query/key/value inputs, its ``out_proj`` from the attention's
output. The pass ends (:class:`~relulab.init.data.StopForward`) once the last block is set.
A block whose output is constant over the data is restored (:class:`ConstantInputWarning`).
Data without samples or holding NaN or ±inf are refused before anything changes, and a block
whose output on the data or whose new weight is not finite is restored and the pass refused
(:mod:`relulab.init.checks`): no scheme leaves NaN or ±inf in a weight.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from relulab.init.checks import check_data, check_finite_values, non_finite_count
from relulab.init.data import (
    Batch,
    Data,
    StopForward,
    calibration_mode,
    gather_batches,
    progress_bar,
    run_until_stopped,
)
from relulab.init.layers import Selector, WeightBlock, select_blocks
from relulab.init.report import InitReport, block_report, complete_report

__all__ = [
    "CONSTANT_TOL",
    "NOT_CALLED",
    "CalibrationOptions",
    "ConstantInputWarning",
    "Rule",
    "calibrate",
]

#: The default threshold of "constant over the data" (see :class:`ConstantInputWarning`).
CONSTANT_TOL = 1e-8

NOT_CALLED = "not called by the forward pass on the data"


class ConstantInputWarning(UserWarning):
    r"""A data-dependent scheme met a layer it would blow up or zero, and left it as it was.

    The layer's output :math:`u` with the freshly drawn weights is *constant over the data* when
    the quantity the scheme divides by is at most ``constant_tol`` (default
    :data:`CONSTANT_TOL` = 1e-8) times :math:`\langle u^2\rangle`, the output's second moment —
    the layer's fan-in scale, :math:`n_{in}\langle x^2\rangle` in expectation for the
    :math:`N(0, 1)` draw. That quantity is, for ``scale_bias``, the per-feature sample variance
    averaged over features (its input is the same for every sample, e.g. a diffusion model's
    time embedding for one timestep: centring would zero the layer and its factor
    :math:`1/\sqrt{\epsilon}` blow the weights up); for ``lsuv``, the output's variance; for
    ``scale``, :math:`\langle u^2\rangle` itself (an all-zero input). 1e-8 is a relative sample
    standard deviation of 1e-4: far above float32 rounding (~1e-7, a ratio ~1e-14) and far
    below what a network's depth leaves of its inputs' spread.
    """


def _to_axis1(block: WeightBlock, output: Tensor) -> Tensor:
    return output.movedim(-1, 1) if block.features_last and output.dim() > 2 else output


def _from_axis1(block: WeightBlock, output: Tensor) -> Tensor:
    if block.features_last and output.dim() > 2:
        return output.movedim(1, -1).contiguous()
    return output


Fit = Callable[[WeightBlock, Tensor], tuple[Tensor, int | None]]


@dataclass(frozen=True)
class Rule:
    """One data-dependent scheme.

    Attributes:
        scheme: its name in reports.
        draw: fills a forward-layout weight in place (``N(0, 1)``, orthonormal).
        fit: sets a block from its output (features on axis 1); returns the new output and the
            rounds taken (or ``None``).
        divisor: the quantity the fit divides by, for the constant-input check.
        divisor_name: its name in the warning.
    """

    scheme: str
    draw: Callable[[Tensor, torch.Generator | None], object]
    fit: Fit
    divisor: Callable[[WeightBlock, Tensor], Tensor]
    divisor_name: str


class _Session:
    """The state of one calibration pass: which blocks are drawn, set or left."""

    def __init__(
        self,
        blocks: list[WeightBlock],
        rule: Rule,
        generator: torch.Generator | None,
        constant_tol: float,
        notes: dict[WeightBlock, str],
    ) -> None:
        self.blocks, self.rule, self.generator = blocks, rule, generator
        self.constant_tol, self.notes = constant_tol, notes
        self.saved: dict[WeightBlock, tuple[Tensor, Tensor | None]] = {}
        self.started: set[WeightBlock] = set()
        self.done: set[WeightBlock] = set()
        self.left: dict[WeightBlock, str] = {}
        self.report = InitReport(scheme=rule.scheme)
        self.advance: Callable[[], None] = lambda: None

    def begin(self, block: WeightBlock) -> None:
        """Just before the block's first call: keep its values, draw the weight, zero the bias."""
        if block in self.started:
            return
        self.started.add(block)
        self.saved[block] = block.snapshot()
        weight = block.read()
        self.rule.draw(weight, self.generator)
        block.store(weight)
        if block.bias is not None:
            block.bias.zero_()

    def finish(self, block: WeightBlock, output: Tensor) -> Tensor | None:
        """Set the block from its output (features on axis 1); the new output, or ``None``
        when the block is left as it was (constant input)."""
        self.done.add(block)
        self.advance()
        saved = self.saved.pop(block)  # held only while the block is being set
        self._refuse_non_finite_output(block, saved, output)
        divisor = float(self.rule.divisor(block, output))
        second_moment = float(output.square().mean())
        if divisor <= self.constant_tol * second_moment:
            block.restore(saved)
            self._leave_constant(block, divisor, second_moment)
            return None
        new, iterations = self.rule.fit(block, output)
        self._refuse_non_finite_values(block, saved)
        self.report.append(
            block_report(block, self.rule.scheme, new, iterations, self.notes.get(block))
        )
        return new

    def _refuse_non_finite_output(
        self, block: WeightBlock, saved: tuple[Tensor, Tensor | None], output: Tensor
    ) -> None:
        """A block whose output on the (finite) data is not finite — an earlier layer or the
        model overflowed — cannot be set: restored, and the pass refused."""
        bad = non_finite_count(output)
        if bad:
            block.restore(saved)
            raise ValueError(
                f"{self.rule.scheme}: layer {block.name!r} ({block.kind}) gave {bad} non-finite "
                f"values (NaN or ±inf) of {output.numel()} on the data, from the freshly drawn "
                "weights (an earlier layer or the model overflowed): it and the layers after it "
                "are left as they were, the layers before it are set"
            )

    def _refuse_non_finite_values(
        self, block: WeightBlock, saved: tuple[Tensor, Tensor | None]
    ) -> None:
        """The block's new weight and bias are finite, or it is restored and refused."""
        values = {f"{block.name}.weight": block.read(), f"{block.name}.bias": block.bias}
        try:
            check_finite_values(self.rule.scheme, values)
        except ValueError:
            block.restore(saved)
            raise

    def _leave_constant(self, block: WeightBlock, divisor: float, second_moment: float) -> None:
        detail = (
            f"{self.rule.divisor_name} {divisor:.3g} ≤ {self.constant_tol:g} × second moment "
            f"{second_moment:.3g}"
        )
        self.left[block] = f"input constant over the data ({detail}): left as it was"
        warnings.warn(
            f"{self.rule.scheme}: layer {block.name!r} ({block.kind}) has an input constant over "
            f"the data ({detail}); setting it would zero or blow it up, so it is left as it was",
            ConstantInputWarning,
            stacklevel=2,
        )

    def stop_if_complete(self) -> None:
        """End the forward pass once every block is set."""
        if len(self.done) == len(self.blocks):
            raise StopForward

    def restore_unfinished(self) -> None:
        """Blocks drawn but never set (the pass failed) get their values back."""
        for block, saved in self.saved.items():
            block.restore(saved)


def _layer_pre(session: _Session, block: WeightBlock, module: nn.Module, args: Any) -> None:
    if block not in session.done:
        session.begin(block)


def _layer_post(
    session: _Session,
    block: WeightBlock,
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    output: Tensor,
) -> Tensor | None:
    if block in session.done:
        return None
    new = session.finish(block, _to_axis1(block, output))
    output = module.forward(*args, **kwargs) if new is None else _from_axis1(block, new)
    session.stop_if_complete()
    return output


ATTENTION_INPUTS = ("query", "key", "value")


def _attention_pre(
    session: _Session,
    blocks: list[WeightBlock],
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    inputs = [args[i] if i < len(args) else kwargs[name] for i, name in enumerate(ATTENTION_INPUTS)]
    for block in blocks:
        if block in session.started:
            continue
        session.begin(block)
        if block.role == "in_proj":
            projected = nn.functional.linear(inputs[block.index], block.read(), block.bias)
            session.finish(block, _to_axis1(block, projected))
            session.stop_if_complete()


def _attention_post(
    session: _Session,
    blocks: list[WeightBlock],
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    output: tuple[Tensor, Tensor | None],
) -> tuple[Tensor, Tensor | None] | None:
    pending = [b for b in blocks if b.role == "out_proj" and b not in session.done]
    if not pending:
        return None
    new = session.finish(pending[0], _to_axis1(pending[0], output[0]))
    if new is None:
        output = module.forward(*args, **kwargs)
    else:
        output = (_from_axis1(pending[0], new), output[1])
    session.stop_if_complete()
    return output


def _register(session: _Session, blocks: list[WeightBlock]) -> list[Any]:
    """The hooks of one pass: a pre/post pair per layer and per attention module."""
    handles = []
    attentions: dict[int, tuple[nn.Module, list[WeightBlock]]] = {}
    for block in blocks:
        if block.role == "layer":
            module = block.hook_module
            handles.append(module.register_forward_pre_hook(partial(_layer_pre, session, block)))
            post = partial(_layer_post, session, block)
            handles.append(module.register_forward_hook(post, with_kwargs=True))
        else:
            attentions.setdefault(id(block.hook_module), (block.hook_module, []))[1].append(block)
    for module, group in attentions.values():
        attention_pre = partial(_attention_pre, session, group)
        handles.append(module.register_forward_pre_hook(attention_pre, with_kwargs=True))
        attention_post = partial(_attention_post, session, group)
        handles.append(module.register_forward_hook(attention_post, with_kwargs=True))
    return handles


@dataclass(frozen=True)
class CalibrationOptions:
    """The options every data-dependent scheme shares (keyword arguments of each)."""

    include: Selector | None = None
    exclude: Selector | None = None
    max_batches: int | None = None
    get_input: Callable[[Any], Batch] | None = None
    progress: bool | None = None
    constant_tol: float = CONSTANT_TOL


def calibrate(
    model: nn.Module,
    data: Data,
    rule: Rule,
    generator: torch.Generator | None,
    options: CalibrationOptions,
    prepare: Callable[[list[WeightBlock]], dict[WeightBlock, str]] = lambda blocks: {},
) -> InitReport:
    """Set the selected blocks of ``model`` by ``rule`` in one forward pass over ``data``.

    Args:
        model: any ``nn.Module``.
        data: a tensor, a mapping of model arguments, or an iterable of batches
            (:func:`~relulab.init.data.gather_batches`).
        rule: the scheme: draw, fit and divisor.
        generator: the random generator of the draws.
        options: the blocks to set (``include`` / ``exclude``), how to read ``data``, the
            progress bar, the constant-input threshold.
        prepare: called on the selected blocks before anything is drawn (it may raise, or add
            biases); returns a note per block for the report.

    Returns:
        The :class:`~relulab.init.InitReport`: the blocks set in call order, and every weight
        left untouched (not selected, not called, constant input, not a layer).

    Example:
        >>> from relulab.init.model import scale_  # the public face of calibrate
        >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
        >>> len(scale_(model, torch.randn(16, 3)))
        2
    """
    blocks, left = select_blocks(model, options.include, options.exclude)
    batch = gather_batches(data, options.max_batches, options.get_input)
    check_data(batch, rule.scheme)
    notes = prepare(blocks)
    session = _Session(blocks, rule, generator, options.constant_tol, notes)
    with (
        calibration_mode(model),
        progress_bar(len(blocks), rule.scheme, options.progress) as advance,
    ):
        session.advance = advance
        handles = _register(session, blocks)
        try:
            run_until_stopped(model, batch)
        finally:
            for handle in handles:
                handle.remove()
            session.restore_unfinished()
    left |= {block: NOT_CALLED for block in blocks if block not in session.done}
    left |= session.left
    set_blocks = [block for block in blocks if block not in left]
    return complete_report(session.report, model, left, set_blocks)
