"""The ``relulab diagnose`` report: one panel per probe, one shared legend, module names.

Values that span decades (the sample-mean/variance ratio r can reach 3e6 under one init and
stay near 1 under another) go on a log axis (symlog when zeros are among them), and inits whose
probes agree everywhere are drawn once and named together instead of hiding each other.
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

__all__ = ["axis_scale", "coinciding_lines", "identical_inits", "write_diagnose_report"]

FIGURE_FILENAME = "probe.png"
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


def _tick_labels(layers: Sequence[Any], layer_names: Mapping[Any, str]) -> list[str]:
    return [str(layer_names.get(layer, layer)) for layer in layers]


def _probe_figure(
    tables: Mapping[str, pd.DataFrame],
    groups: list[list[str]],
    layer_names: Mapping[Any, str],
    path: Path,
) -> None:
    from relulab.report.plotting import plt, save_figure

    n_columns = 3
    n_rows = math.ceil((len(tables) + 1) / n_columns)
    fig, axes = plt.subplots(n_rows, n_columns, figsize=(13, 3.9 * n_rows), squeeze=False)
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
        labels = _tick_labels(list(table.index), layer_names)
        step = max(1, math.ceil(len(labels) / 16))
        ax.set_xticks(positions[::step], labels[::step], rotation=40, ha="right", fontsize=7)
        ax.set_title(metric.replace("_", " "), pad=14 if coincide else 6)
        ax.set_xlabel("activation call")
    for ax in flat[len(tables) :]:
        ax.axis("off")
    legend_host = flat[len(tables)] if len(tables) < len(flat) else None
    if legend_host is not None:
        legend_host.legend(handles=handles, title="init", loc="center", fontsize=9)
    else:
        fig.legend(handles=handles, title="init", loc="lower center", ncols=len(handles))
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
    """The activation-call table's rows: name, kind, units, unit axis, rule, producer."""
    if calls is None or calls.empty:
        return []
    return [
        {
            "name": str(row["name"]),
            "kind": str(row["kind"]),
            "units": int(row["units"]),
            "unit_axis": int(row["unit_axis"]),
            "rule": str(row["unit_axis_rule"]),
            "producer": "" if pd.isna(row["producer"]) else str(row["producer"]),
        }
        for _, row in calls.iterrows()
    ]


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
) -> Path:
    """Write ``report.html`` of ``relulab diagnose``: the activation calls (units, unit axis
    and the rule that chose it), notes, one figure (a panel per metric) and one table per
    metric.

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

    Returns:
        The path of the written report.
    """
    out_dir = Path(out_dir)
    layer_names = dict(layer_names or {})
    groups = identical_inits(tables)
    _probe_figure(tables, groups, layer_names, out_dir / FIGURE_FILENAME)
    figure = SimpleNamespace(
        filename=FIGURE_FILENAME,
        caption="One panel per probe, the model's activation calls in forward order on the "
        "x axis (module path and call index, or caller and function, with the type). Axes "
        "are logarithmic where the values span two decades or more. Inits whose probes agree "
        "everywhere are drawn once and named together; a panel's title names the inits whose "
        "lines coincide in it.",
    )
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
        tables={
            metric: {
                "columns": [str(c) for c in table.columns],
                "rows": [
                    (_tick_labels([layer], layer_names)[0], list(row))
                    for layer, row in zip(table.index, table.to_numpy(float).tolist(), strict=True)
                ],
            }
            for metric, table in tables.items()
        },
    )
