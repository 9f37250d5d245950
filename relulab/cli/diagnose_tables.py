"""The tables ``relulab diagnose`` prints (``--format``): ``table`` (rich tables, long names
folded), ``markdown`` (GitHub tables, every name in full) or ``csv`` (one row per init and
call, notes on stderr) — the activation calls, one table per key metric with the readings to
discount marked, and the advice: each offered remedy with its measured effect, then the
remedies not offered with the benchmark's verdict.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from relulab.cli.common import console
from relulab.progress import write_line as _write_line

if TYPE_CHECKING:
    import pandas as pd

    from relulab.probe.diagnose import Diagnosis

__all__ = ["PRINTERS", "markdown_table"]


def _mark(metric: str, raised: dict[str, bool]) -> str:
    """`` (cap)`` / `` (BN)`` after a value to discount, as the report marks it
    (:data:`relulab.report.diagnose.FLAGS`)."""
    from relulab.report.diagnose import FLAGS

    for flag, (metrics, mark, _) in FLAGS.items():
        if metric in metrics and raised.get(flag):
            return f" ({mark})"
    return ""


def _flags_of(found: Diagnosis) -> dict[tuple[str, int], dict[str, bool]]:
    if found.flags.empty:
        return {}
    records = found.flags.to_dict("records")
    return {(str(row["init"]), int(row["layer"])): row for row in records}


def _lead_lines(found: Diagnosis) -> list[str]:
    """Skipped inits, notes and the mode, one line each."""
    skipped = [f"note: skipped init {name}: {why}" for name, why in found.skipped.items()]
    notes = [f"note: {note}" for note in found.notes]
    return [*skipped, *notes, f"probed in {found.mode} mode"]


def _call_rows(found: Diagnosis) -> list[list[str]]:
    return [
        [str(row.layer), row.name, row.kind, str(row.units), str(row.unit_axis)]
        + [row.unit_axis_rule, row.producer or ""]
        for row in found.calls.itertuples()
    ]


_CALL_HEADERS = ["#", "activation call", "kind", "units", "unit axis", "rule", "producer"]


def _metric_rows(found: Diagnosis, metric: str, table: pd.DataFrame) -> list[list[str]]:
    flags = _flags_of(found)
    return [
        [str(layer), found.names.get(layer, str(layer))]
        + [
            f"{value:.3g}{_mark(metric, flags.get((str(init), int(layer)), {}))}"
            for init, value in zip(table.columns, row.to_numpy(), strict=True)
        ]
        for layer, row in table.iterrows()
    ]


def _advice_rows(found: Diagnosis) -> list[list[str]]:
    rows = [
        [init, item.finding.replace("_", " "), ", ".join(item.layers), item.measured_text()]
        + [item.remedy, item.how, item.source, item.evidence]
        for init, items in found.advice.items()
        for item in items
    ]
    return rows + [
        [init, held.finding.replace("_", " "), ", ".join(held.layers), held.measured]
        + ["not offered", held.how, "", f"{held.verdict}: {held.evidence}"]
        for init, items in found.advice.items()
        for held in items.withheld
    ]


_ADVICE_HEADERS = [
    "init",
    "finding",
    "activation calls",
    "measured",
    "remedy",
    "how",
    "source",
    "held-out loss (relulab bench remedies)",
]
_NO_ADVICE = "no advice: no call and no input crossed a threshold under any init"
_HOW = "how: the remedy's code is relulab.probe.advice.SNIPPETS[how], and in the report"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown (GitHub) table, every cell in full, ``|`` escaped.

    Example:
        >>> print(markdown_table(["#", "call"], [["0", "h.0.mlp|act#0"]]))
        | # | call |
        |---|---|
        | 0 | h.0.mlp\\|act#0 |
    """

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *map(line, rows)])


def _print_markdown(found: Diagnosis, tables: dict[str, pd.DataFrame]) -> None:
    parts = ["\n".join(_lead_lines(found))]
    parts += ["## activation calls\n\n" + markdown_table(_CALL_HEADERS, _call_rows(found))]
    for metric, table in tables.items():
        headers = ["#", "activation call", *map(str, table.columns)]
        parts.append(
            f"## {metric}\n\n" + markdown_table(headers, _metric_rows(found, metric, table))
        )
    advice = _advice_rows(found)
    shown = markdown_table(_ADVICE_HEADERS, advice) + f"\n\n{_HOW}" if advice else _NO_ADVICE
    parts.append("## advice\n\n" + shown)
    sys.stdout.write("\n\n".join(parts) + "\n\n")
    sys.stdout.flush()


def _print_csv(found: Diagnosis, tables: dict[str, pd.DataFrame]) -> None:
    """One row per init and call: the call, its flags and every metric; notes on stderr."""
    for line in _lead_lines(found)[:-1]:
        _write_line(line)
    wide = found.frame.pivot_table(
        index=["init", "layer"], columns="metric", values="value", sort=False
    ).reset_index()
    merged = wide.merge(found.flags, on=["init", "layer"]).merge(found.calls, on="layer")
    first = ["init", "layer", "name", "kind", "units", "unit_axis", "unit_axis_rule", "producer"]
    first += ["rank_at_sample_cap", "unit_states_by_batch_norm"]
    columns = first + [c for c in merged.columns if c not in first]
    sys.stdout.write(merged[columns].to_csv(index=False))
    sys.stdout.flush()


def _rich_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    table = Table(title=title)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _print_tables(found: Diagnosis, tables: dict[str, pd.DataFrame]) -> None:
    terminal = console()
    for line in _lead_lines(found):
        terminal.print(line, highlight=False, soft_wrap=True)
    terminal.print(_rich_table("activation calls", _CALL_HEADERS, _call_rows(found)))
    for metric, table in tables.items():
        headers = ["#", "activation call", *map(str, table.columns)]
        terminal.print(_rich_table(metric, headers, _metric_rows(found, metric, table)))
    advice = _advice_rows(found)
    if advice:
        terminal.print(_rich_table("advice", _ADVICE_HEADERS, advice))
        terminal.print(_HOW, highlight=False, soft_wrap=True)
    else:
        terminal.print(_NO_ADVICE, highlight=False)


#: How each ``--format`` prints the tables.
PRINTERS: dict[str, Callable[[Diagnosis, dict[str, pd.DataFrame]], None]] = {
    "table": _print_tables,
    "csv": _print_csv,
    "markdown": _print_markdown,
}
