"""Self-contained HTML reports: a run's ``report.html`` and ``reproduce``'s ``index.html``.

Templates are rendered by Jinja2 with autoescaping on, so every string a user can influence
(config values, experiment names, claim texts) is HTML-escaped. Figures are embedded as base64
PNG, so a report is one file that can be mailed around.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

__all__ = [
    "INDEX_FILENAME",
    "REPORT_FILENAME",
    "write_diagnose_report",
    "write_index",
    "write_run_report",
]

REPORT_FILENAME = "report.html"
INDEX_FILENAME = "index.html"

_environment = Environment(
    loader=PackageLoader("relulab.report", "templates"),
    autoescape=select_autoescape(enabled_extensions=("html",), default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _format_number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


_environment.filters["num"] = _format_number
_environment.filters["tojson_pretty"] = lambda value: json.dumps(value, indent=2)


def _embedded_figures(out_dir: Path, figures: Sequence[Any]) -> list[dict[str, str]]:
    embedded = []
    for figure in figures:
        data = (out_dir / figure.filename).read_bytes()
        embedded.append(
            {
                "caption": figure.caption,
                "filename": figure.filename,
                "src": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
            }
        )
    return embedded


def write_run_report(out_dir: Path, summary: dict[str, Any], figures: Sequence[Any]) -> Path:
    """Write ``report.html``: scorecard first, then metrics, figures, config and versions."""
    template = _environment.get_template("run.html")
    html = template.render(
        summary=summary,
        figures=_embedded_figures(out_dir, figures),
        n_passed=sum(c["passed"] for c in summary["claims"]),
    )
    path = out_dir / REPORT_FILENAME
    path.write_text(html, encoding="utf-8")
    return path


def write_index(out_dir: Path, entries: Sequence[dict[str, Any]], preset: str) -> Path:
    """Write ``index.html``: the scorecard of every experiment, linking each run's report.

    ``entries`` holds per experiment ``name``, ``title``, ``link`` (relative), and either a
    ``summary`` or an ``error`` string.
    """
    template = _environment.get_template("index.html")
    claims = [c for e in entries if e.get("summary") for c in e["summary"]["claims"]]
    html = template.render(
        entries=entries,
        preset=preset,
        n_claims=len(claims),
        n_passed=sum(c["passed"] for c in claims),
    )
    path = out_dir / INDEX_FILENAME
    path.write_text(html, encoding="utf-8")
    return path


def write_diagnose_report(
    out_dir: Path,
    model: str,
    inits: Sequence[str],
    data_shape: tuple[int, ...],
    tables: dict[str, Any],
) -> Path:
    """Write ``report.html`` of ``relulab diagnose``: one figure and one table per metric."""
    from relulab.report.plotting import plt, save_figure

    fig, axes = plt.subplots(1, len(tables), figsize=(3.8 * len(tables), 3.4))
    for ax, (metric, table) in zip(axes, tables.items(), strict=True):
        for name in table.columns:
            ax.plot(table.index, table[name], "o-", ms=3, label=str(name))
        ax.set(title=metric.replace("_", " "), xlabel="activation layer")
    axes[0].legend()
    save_figure(fig, out_dir / "probe.png")
    figures = [type("F", (), {"filename": "probe.png", "caption": "Per-layer probes per init."})]
    template = _environment.get_template("diagnose.html")
    html = template.render(
        model=model,
        inits=inits,
        data_shape=data_shape,
        figures=_embedded_figures(out_dir, figures),
        tables={m: t.round(4).to_dict(orient="split") for m, t in tables.items()},
    )
    path = out_dir / REPORT_FILENAME
    path.write_text(html, encoding="utf-8")
    return path
