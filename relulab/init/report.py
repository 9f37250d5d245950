"""The reports of model-level initialisers: one :class:`LayerReport` per layer set, and the
:class:`InitReport` that holds them with every weight left untouched."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields, replace
from typing import cast

import pandas as pd
from torch import Tensor, nn

from relulab.init.layers import UntouchedWeight, WeightBlock, tie_notes, untouched_weights

__all__ = ["InitReport", "LayerReport", "block_report", "complete_report", "layer_report"]


@dataclass(frozen=True)
class LayerReport:
    """What an initialiser did to one layer.

    Attributes:
        layer: the module's name in the model (``{attention}.in_proj[q]`` for attention).
        kind: its class name (``Linear``, ``Conv2d``, ``Conv1D``, ``ReLUMinusB``, …).
        scheme: the scheme applied.
        weight_std: the std of the weight afterwards.
        bias_mean: the mean of the bias (or of a ReLU shift), ``None`` without one.
        output_mean: data-dependent schemes: the mean of the layer's output on the data.
        output_second_moment: data-dependent schemes: its second moment.
        iterations: LSUV: the rounds taken.
        shape: the weight's shape as stored.
        note: what was done differently (``bias added``, ``no bias: scaled, not centred``).

    Example:
        >>> from relulab import init
        >>> row = init.init_model_(nn.Sequential(nn.Linear(3, 2)), "kaiming_normal")[0]
        >>> row.kind, row.scheme, row.bias_mean, row.shape
        ('Linear', 'kaiming_normal', 0.0, (2, 3))
    """

    layer: str
    kind: str
    scheme: str
    weight_std: float
    bias_mean: float | None
    output_mean: float | None = None
    output_second_moment: float | None = None
    iterations: int | None = None
    shape: tuple[int, ...] | None = None
    note: str | None = None


class InitReport(list):
    """The per-layer :class:`LayerReport` rows of one model-level initialisation, and
    :attr:`untouched`: every parameter it left as it was (:class:`UntouchedWeight`: name,
    owner class, shape, reason).

    ``to_frame()`` has both (``status`` ``"set"`` or ``"untouched"``); ``str(report)`` prints
    them as text.

    Example:
        >>> from relulab import init
        >>> report = init.init_model_(nn.Sequential(nn.Linear(3, 2)), "lecun_normal")
        >>> list(report.to_frame()["layer"])
        ['0']
        >>> report = init.init_model_(nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2)), "normal")
        >>> [(w.name, w.shape, w.reason) for w in report.untouched][0]
        ('1.weight', (2,), 'not a layer the initialisers set (LayerNorm)')
    """

    def __init__(
        self,
        rows: Iterable[LayerReport] = (),
        untouched: Iterable[UntouchedWeight] = (),
        scheme: str = "",
    ) -> None:
        super().__init__(rows)
        self.untouched: list[UntouchedWeight] = list(untouched)
        self.scheme = scheme

    def to_frame(self) -> pd.DataFrame:
        """The rows as a ``pandas.DataFrame``, one column per :class:`LayerReport` field, then
        ``status`` and ``reason``; the untouched weights follow the set layers (their
        ``layer`` is the parameter's name).

        Example:
            >>> InitReport().to_frame().columns[-2:].tolist()
            ['status', 'reason']
        """
        columns = [f.name for f in fields(LayerReport)] + ["status", "reason"]
        rows = [asdict(row) | {"status": "set", "reason": None} for row in self]
        rows += [
            {"layer": w.name, "kind": w.kind, "scheme": self.scheme, "shape": w.shape}
            | {"status": "untouched", "reason": w.reason}
            for w in self.untouched
        ]
        return pd.DataFrame(rows, columns=columns)

    def to_text(self) -> str:
        """The report as text: the layers set, then every weight left untouched.

        Example:
            >>> print(InitReport(scheme="scale").to_text())
            scale: 0 layers set, 0 weights left untouched
        """
        head = (
            f"{self.scheme}: {len(self)} layers set, {len(self.untouched)} weights left untouched"
        )
        parts = [head]
        if self:
            frame = pd.DataFrame([asdict(row) for row in self]).dropna(axis=1, how="all")
            parts.append(frame.drop(columns="scheme").to_string(index=False))
        if self.untouched:
            untouched = pd.DataFrame([asdict(w) for w in self.untouched])
            parts.append("left untouched:\n" + untouched.to_string(index=False))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.to_text()


def layer_report(
    name: str,
    layer: nn.Module,
    scheme: str,
    output: Tensor | None = None,
    iterations: int | None = None,
) -> LayerReport:
    """The :class:`LayerReport` of ``layer`` as it is now (and of its ``output`` if given).

    Example:
        >>> layer_report("fc", nn.Linear(3, 2), "torch_default").kind
        'Linear'
    """
    bias = getattr(layer, "bias", None)
    weight = cast(Tensor, layer.weight)  # a layer's weight is a tensor; torch types it | Module
    return LayerReport(
        name,
        type(layer).__name__,
        scheme,
        float(weight.detach().std()),
        None if bias is None else float(bias.detach().mean()),
        None if output is None else float(output.mean()),
        None if output is None else float(output.square().mean()),
        iterations,
        tuple(weight.shape),
    )


def block_report(
    block: WeightBlock,
    scheme: str,
    output: Tensor | None = None,
    iterations: int | None = None,
    note: str | None = None,
) -> LayerReport:
    """The :class:`LayerReport` of one block as it is now (and of its ``output`` if given).

    Example:
        >>> from relulab.init.layers import model_blocks
        >>> block_report(model_blocks(nn.Linear(3, 2))[0], "normal").shape
        (2, 3)
    """
    bias = block.bias
    return LayerReport(
        block.name,
        block.kind,
        scheme,
        float(block.stored.detach().std()),
        None if bias is None else float(bias.detach().mean()),
        None if output is None else float(output.mean()),
        None if output is None else float(output.square().mean()),
        iterations,
        block.stored_shape,
        note,
    )


def complete_report(
    report: InitReport,
    model: nn.Module,
    left: dict[WeightBlock, str],
    touched: Iterable[WeightBlock],
) -> InitReport:
    """Fill in what a model-level initialiser's ``report`` says about the rest of ``model``:
    :attr:`InitReport.untouched` (:func:`~relulab.init.layers.untouched_weights`), and on
    each set row whose weight is tied under other names, a note naming them.

    Args:
        report: the rows of the layers set.
        model: the model.
        left: the blocks left, with why.
        touched: the blocks set.

    Returns:
        ``report``, completed in place.

    Example:
        >>> from relulab.init.layers import select_blocks
        >>> model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3))
        >>> model[2].weight = model[0].weight
        >>> blocks, left = select_blocks(model)
        >>> report = InitReport([block_report(b, "normal") for b in blocks], scheme="normal")
        >>> complete_report(report, model, left, blocks)[0].note
        'weight tied to 2.weight (Linear): set once, here'
    """
    touched = list(touched)
    report.untouched = untouched_weights(model, left, touched)
    notes = tie_notes(model, touched)
    for index, row in enumerate(report):
        tie = notes.get(row.layer)
        if tie:
            report[index] = replace(row, note=f"{row.note}; {tie}" if row.note else tie)
    return report
