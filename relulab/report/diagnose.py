"""The ``relulab diagnose`` report: advice, one panel per probe, one shared legend, and the
activation calls by number.

Values that span decades (the sample-mean/variance ratio r can reach 3e6 under one init and
stay near 1 under another) go on a log axis (symlog when zeros are among them), and inits whose
probes agree everywhere are drawn once and named together instead of hiding each other. The x
axis numbers the calls (``#``, the call's index) and a key under the figure names them — a
transformer's call names (``transformer.h.0.mlp.act#0``) written at 45° took two thirds of each
panel. Readings to discount are marked in the tables: a centred rank at its N − 1 sample cap
(``cap``), unit states right after a train-mode BatchNorm (``BN``, 0 by construction).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from relulab.report.render import embedded_figures, write_page
from relulab.report.site import REPORT_FILENAME

__all__ = [
    "FLAGS",
    "axis_scale",
    "coinciding_lines",
    "identical_inits",
    "tick_labels",
    "write_diagnose_report",
]

FIGURE_FILENAME = "probe.png"
#: The most x-axis ticks a panel labels (every k-th call beyond).
MAX_TICKS = 40
#: Per flag (a column of ``ProbeResult.table()``): the metrics it marks, its mark and why.
FLAGS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "rank_at_sample_cap": (
        ("effective_rank_centred",),
        "cap",
        "at its sample cap N − 1: each sample's activation is one flattened row, so the number "
        "of samples bounds the rank, not the layer; read effective_rank_token_centred",
    ),
    "unit_states_by_batch_norm": (
        (
            "dead_fraction",
            "always_on_fraction",
            "never_positive_fraction",
            "always_positive_fraction",
        ),
        "BN",
        "the input is a train-mode BatchNorm's output: every unit is centred over the batch, "
        "so none is dead or always on — 0 by construction (BatchNorm's shift β = 0 at init)",
    ),
}
_MARKERS = "osD^vP*Xh<>"
DECADES_FOR_LOG = 2.0
MODE_TEXT = {
    "train": "train mode — normalisation layers use each batch's statistics and dropout is on, "
    "as in a training step",
    "eval": "eval mode — normalisation layers use their running statistics and dropout is off, "
    "as at inference",
}


def identical_inits(tables: Mapping[str, pd.DataFrame], rtol: float = 1e-6) -> list[list[str]]:
    """Groups of inits (columns) whose values agree (to ``rtol``) in every table, first-seen
    order.

    Example:
        >>> t = pd.DataFrame({"a": [1.0, 2.0], "b": [1.0, 2.0], "c": [0.0, 2.0]})
        >>> identical_inits({"m": t})
        [['a', 'b'], ['c']]
    """
    names = [str(c) for c in next(iter(tables.values())).columns] if tables else []
    groups: list[list[str]] = []
    for name in names:
        for group in groups:
            if all(
                np.allclose(
                    table[group[0]].to_numpy(float),
                    table[name].to_numpy(float),
                    rtol=rtol,
                    atol=0.0,
                    equal_nan=True,
                )
                for table in tables.values()
            ):
                group.append(name)
                break
        else:
            groups.append([name])
    return groups


def axis_scale(values: np.ndarray) -> dict[str, Any]:
    """Matplotlib ``set_yscale`` arguments: log when the positive values span at least two
    decades (symlog, linear below the smallest positive value, when zeros or negatives are
    among them), linear otherwise.

    Example:
        >>> axis_scale(np.array([1.0, 3e6]))["value"]
        'log'
    """
    finite = np.asarray(values, float)
    finite = finite[np.isfinite(finite)]
    positive = finite[finite > 0]
    if positive.size < 2 or math.log10(positive.max() / positive.min()) < DECADES_FOR_LOG:
        return {"value": "linear"}
    if (finite <= 0).any():
        return {"value": "symlog", "linthresh": float(positive.min())}
    return {"value": "log"}


def _on_axis(values: np.ndarray, scale: Mapping[str, Any]) -> np.ndarray:
    """Values in the axis's own coordinates (what the eye compares on the plot)."""
    if scale["value"] == "log":
        return np.log10(values)
    if scale["value"] == "symlog":
        return np.sign(values) * np.log10(1 + np.abs(values) / scale["linthresh"])
    return values


def coinciding_lines(
    table: pd.DataFrame, scale: Mapping[str, Any], fraction: float = 0.005
) -> list[list[str]]:
    """Groups of columns whose lines lie within ``fraction`` of the axis span of each other at
    every layer, on the axis ``scale`` (one drawn on top of the other hides it).

    Example:
        >>> t = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.001], "c": [1.0, 0.0]})
        >>> coinciding_lines(t, {"value": "linear"})
        [['a', 'b']]
    """
    values = _on_axis(table.to_numpy(float), scale)
    finite = values[np.isfinite(values)]
    span = float(finite.max() - finite.min()) if finite.size else 0.0
    tolerance = fraction * (span or 1.0)
    groups: list[list[int]] = []
    for j in range(values.shape[1]):
        for group in groups:
            difference = np.abs(values[:, group[0]] - values[:, j])
            both_nan = np.isnan(values[:, group[0]]) & np.isnan(values[:, j])
            if np.all((difference <= tolerance) | both_nan):
                group.append(j)
                break
        else:
            groups.append([j])
    names = [str(c) for c in table.columns]
    return [[names[j] for j in group] for group in groups if len(group) > 1]


def _full_names(layers: Sequence[Any], layer_names: Mapping[Any, str]) -> list[str]:
    return [str(layer_names.get(layer, layer)) for layer in layers]


def tick_labels(layers: Sequence[Any], max_ticks: int = MAX_TICKS) -> tuple[list[int], list[str]]:
    """The positions and labels of a panel's x ticks: each call's number (its index, ``#`` in
    the key under the figure), every k-th one when there are more than ``max_ticks``.

    Args:
        layers: the calls' indices, in forward order.
        max_ticks: the most ticks to label.

    Returns:
        ``(positions, labels)``.

    Example:
        >>> tick_labels([0, 1, 2])
        ([0, 1, 2], ['0', '1', '2'])
        >>> tick_labels(list(range(100)), max_ticks=40)[1][:3]
        ['0', '3', '6']
    """
    step = max(1, math.ceil(len(layers) / max_ticks))
    positions = list(range(0, len(layers), step))
    return positions, [str(layers[i]) for i in positions]


def _probe_figure(
    tables: Mapping[str, pd.DataFrame],
    groups: list[list[str]],
    path: Path,
    marks: Mapping[str, set[str]] | None = None,
) -> None:
    from relulab.report.plotting import plt, save_figure

    n_columns = 3
    n_rows = max(1, math.ceil(len(tables) / n_columns))
    fig, axes = plt.subplots(n_rows, n_columns, figsize=(13, 3.3 * n_rows), squeeze=False)
    flat = list(axes.flat)
    handles = []
    for ax, (metric, table) in zip(flat, tables.items(), strict=False):
        positions = np.arange(len(table.index))
        for i, group in enumerate(groups):
            (line,) = ax.plot(
                positions,
                table[group[0]].to_numpy(float),
                marker=_MARKERS[i % len(_MARKERS)],
                ms=4,
                lw=1.2,
                label=" = ".join(group),
            )
            if ax is flat[0]:
                handles.append(line)
        scale = axis_scale(table.to_numpy(float))
        ax.set_yscale(**scale)
        coincide = coinciding_lines(table[[group[0] for group in groups]], scale)
        if coincide:
            note = "coincide here: " + "; ".join(" = ".join(g) for g in coincide)
            ax.text(0.5, 1.01, note, transform=ax.transAxes, ha="center", va="bottom", fontsize=7)
        ticks, labels = tick_labels(list(table.index))
        ax.set_xticks(ticks, labels, fontsize=7 if len(ticks) <= 20 else 6)
        marked = "".join(f" [{mark}]" for mark in sorted((marks or {}).get(metric, ())))
        ax.set_title(metric.replace("_", " ") + marked, pad=14 if coincide else 6)
        ax.set_xlabel("activation call # (key below)")
    for ax in flat[len(tables) :]:
        ax.axis("off")
    if len(tables) < len(flat):  # a spare panel holds the legend
        flat[len(tables)].legend(handles=handles, title="init", loc="center", fontsize=9)
    else:
        flat[0].legend(handles=handles, title="init", fontsize=7)
    save_figure(fig, path)


def _shape_text(data_shape: tuple[int, ...] | Mapping[str, tuple[int, ...]]) -> str:
    """``(512, 64)``, or ``input_ids (8, 16), attention_mask (8, 16)`` for named arrays.

    Example:
        >>> _shape_text({"input_ids": (8, 16), "attention_mask": (8, 16)})
        'input_ids (8, 16), attention_mask (8, 16)'
    """
    if isinstance(data_shape, Mapping):
        return ", ".join(f"{name} {tuple(shape)}" for name, shape in data_shape.items())
    return str(tuple(data_shape))


def _call_rows(calls: pd.DataFrame | None) -> list[dict[str, Any]]:
    """The activation-call table's rows: #, name, kind, units, unit axis, rule, producer."""
    if calls is None or calls.empty:
        return []
    return [
        {
            "index": int(row["layer"]),
            "name": str(row["name"]),
            "kind": str(row["kind"]),
            "units": int(row["units"]),
            "unit_axis": int(row["unit_axis"]),
            "rule": str(row["unit_axis_rule"]),
            "producer": "" if pd.isna(row["producer"]) else str(row["producer"]),
        }
        for _, row in calls.iterrows()
    ]


def _flag_lookup(flags: pd.DataFrame | None) -> dict[tuple[str, Any], set[str]]:
    """(init, layer) → the :data:`FLAGS` raised there."""
    if flags is None or flags.empty:
        return {}
    raised: dict[tuple[str, Any], set[str]] = {}
    for row in flags.to_dict("records"):
        names = {flag for flag in FLAGS if bool(row.get(flag, False))}
        if names:
            raised[(str(row["init"]), row["layer"])] = names
    return raised


def _cell_flag(metric: str, raised: set[str]) -> dict[str, str] | None:
    """The mark and its reason of a table cell, if a raised flag concerns ``metric``."""
    for flag in sorted(raised):
        metrics, mark, why = FLAGS[flag]
        if metric in metrics:
            return {"mark": mark, "why": why}
    return None


def _metric_tables(
    tables: Mapping[str, pd.DataFrame],
    layer_names: Mapping[Any, str],
    flags: pd.DataFrame | None,
) -> dict[str, dict[str, Any]]:
    """Per metric: its columns (inits) and rows (#, the call's name, the cells with flags)."""
    raised = _flag_lookup(flags)
    out = {}
    for metric, table in tables.items():
        columns = [str(c) for c in table.columns]
        rows = []
        for layer, values in zip(table.index, table.to_numpy(float).tolist(), strict=True):
            cells = [
                {"value": value, "flag": _cell_flag(metric, raised.get((init, layer), set()))}
                for init, value in zip(columns, values, strict=True)
            ]
            rows.append(
                {"index": layer, "label": _full_names([layer], layer_names)[0], "cells": cells}
            )
        out[metric] = {"columns": columns, "rows": rows}
    return out


def _marks(metric_tables: Mapping[str, Mapping[str, Any]]) -> dict[str, set[str]]:
    """Per metric, the marks of its flagged cells."""
    return {
        metric: {
            cell["flag"]["mark"] for row in table["rows"] for cell in row["cells"] if cell["flag"]
        }
        for metric, table in metric_tables.items()
    }


def _raised_flags(metric_tables: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The (mark, why) of each flag marking some cell, in :data:`FLAGS` order."""
    marks = set().union(*_marks(metric_tables).values())
    return [(mark, why) for _, mark, why in FLAGS.values() if mark in marks]


def _finding_row(
    findings: dict[str, dict[str, Any]], finding: str, layers: Sequence[str], measured: str
) -> dict[str, Any]:
    """The row of ``finding`` in ``findings``, made on first use."""
    from relulab.probe.advice import FINDINGS

    return findings.setdefault(
        finding,
        {
            "finding": finding.replace("_", " "),
            "description": FINDINGS[finding],
            "layers": ", ".join(layers),
            "measured": measured,
            "remedies": [],
            "withheld": [],
        },
    )


def _advice_rows(advice: Mapping[str, Sequence[Any]] | None) -> dict[str, list[dict[str, Any]]]:
    """Per init, one row per finding (what it means, the calls, the numbers) with its offered
    remedies (text, code, source, measured effect) and those withheld (remedy, the benchmark's
    verdict and numbers); inits without findings left out."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for init, items in (advice or {}).items():
        findings: dict[str, dict[str, Any]] = {}
        for item in items:
            row = _finding_row(findings, item.finding, item.layers, item.measured_text())
            row["remedies"].append(
                {
                    "text": item.remedy,
                    "code": item.code,
                    "source": item.source,
                    "evidence": item.evidence,
                }
            )
        for held in getattr(items, "withheld", ()):
            row = _finding_row(findings, held.finding, held.layers, held.measured)
            row["withheld"].append(
                {"how": held.how, "verdict": held.verdict, "evidence": held.evidence}
            )
        if findings:
            rows[str(init)] = list(findings.values())
    return rows


def write_diagnose_report(
    out_dir: Path,
    model: str,
    inits: Sequence[str],
    data_shape: tuple[int, ...] | Mapping[str, tuple[int, ...]],
    tables: dict[str, pd.DataFrame],
    layer_names: Mapping[Any, str] | None = None,
    mode: str = "train",
    skipped: Mapping[str, str] | None = None,
    *,
    calls: pd.DataFrame | None = None,
    notes: Sequence[str] = (),
    data_source: str | None = None,
    flags: pd.DataFrame | None = None,
    advice: Mapping[str, Sequence[Any]] | None = None,
) -> Path:
    """Write ``report.html`` of ``relulab diagnose``: notes, the advice, the activation calls
    (#, units, unit axis and the rule that chose it), one figure (a panel per metric, the calls
    by number, a key under it) and one table per metric, flagged readings marked.

    Args:
        out_dir: the report directory (``probe.png`` is written there too).
        model: the ``module.path:factory`` spec, shown as the title.
        inits: the initialisers compared, in order.
        data_shape: the shape of the probed data, or per named array (token data) its shape.
        tables: per metric, rows = activation calls, columns = inits.
        layer_names: per layer index, the label to show (the call's name and kind).
        mode: the forward mode probed in (``"train"`` or ``"eval"``), stated in the report.
        skipped: per init that could not apply to the model, why.
        calls: one row per activation call (``name``, ``kind``, ``units``, ``unit_axis``,
            ``unit_axis_rule``, ``producer``), tabulated first.
        notes: one-line notes (unit axes by the default rule, ranks at the sample cap).
        data_source: where the data came from (a file, or relulab's guess), stated.
        flags: one row per init and call (``init``, ``layer`` and the :data:`FLAGS` columns):
            the table cells to mark.
        advice: per init, its :class:`~relulab.probe.advice.Advice` list.

    Returns:
        The path of the written report.
    """
    out_dir = Path(out_dir)
    layer_names = dict(layer_names or {})
    groups = identical_inits(tables)
    metric_tables = _metric_tables(tables, layer_names, flags)
    _probe_figure(tables, groups, out_dir / FIGURE_FILENAME, _marks(metric_tables))
    figure = SimpleNamespace(
        filename=FIGURE_FILENAME,
        caption="One panel per probe, the model's activation calls in forward order on the "
        "x axis by number (#; the key below names them). Axes are logarithmic where the "
        "values span two decades or more. Inits whose probes agree everywhere are drawn once "
        "and named together; a panel's title names the inits whose lines coincide in it, and "
        "[cap] or [BN] when some of its values are marked in its table (below).",
    )
    layers = list(next(iter(tables.values())).index) if tables else []
    return write_page(
        out_dir / REPORT_FILENAME,
        "diagnose.html",
        model=model,
        inits=inits,
        data_shape=_shape_text(data_shape),
        data_source=data_source,
        calls=_call_rows(calls),
        notes=list(notes),
        mode=mode,
        mode_text=MODE_TEXT.get(mode, mode),
        skipped=dict(skipped or {}),
        figures=embedded_figures(out_dir, [figure]),
        identical=[group for group in groups if len(group) > 1],
        key=list(zip(layers, _full_names(layers, layer_names), strict=True)),
        tables=metric_tables,
        flags=_raised_flags(metric_tables),
        advice=_advice_rows(advice),
        advised=advice is not None,
    )
