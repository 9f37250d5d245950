"""The Jinja2 environment shared by every page, its filters, and small page helpers.

Autoescaping is on for every template, so every string a user or an experiment can influence
(config values, experiment names, claim texts, docstrings) is HTML-escaped; the only markup a
filter adds (``docstring``) is built from escaped text, and the formulas of a docstring are
SVG drawn by matplotlib's mathtext (:mod:`relulab.report.mathsvg`).
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from relulab.files import write_atomic
from relulab.report import scorecard
from relulab.report.mathsvg import math_markup

__all__ = ["embedded_figures", "environment", "render_docstring", "write_page"]

environment = Environment(
    loader=PackageLoader("relulab.report", "templates"),
    autoescape=select_autoescape(enabled_extensions=("html",), default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)

_INLINE_CODE = re.compile(r"``(.+?)``|:math:`(.+?)`|:(?:class|func|mod|meth|attr):`~?(.+?)`")
_BULLET = re.compile(r"^\s*[*-]\s+")
_MATH_DIRECTIVE = re.compile(r"^\s*\.\. math::\s*")
_LINE_BREAK = re.compile(r"\\\\\s*")


def _math(tex: str, drawn: Counter, display: bool = False) -> Markup:
    """One formula as SVG, its ids numbered by the times ``tex`` was drawn on this page."""
    markup = math_markup(tex, drawn[tex], display)
    drawn[tex] += 1
    return markup


def _inline(text: str, drawn: Counter) -> Markup:
    """Escape ``text``; reST inline literals and roles become ``<code>``, ``:math:`` SVG."""
    out, position = Markup(""), 0
    for match in _INLINE_CODE.finditer(text):
        out += escape(text[position : match.start()])
        literal, formula, role = match.groups()
        if formula is not None:
            out += _math(formula, drawn)
        else:
            out += Markup("<code>{}</code>").format(literal if literal is not None else role)
        position = match.end()
    return out + escape(text[position:])


def _display_math(lines: list[str], drawn: Counter) -> Markup:
    """A ``.. math::`` block: each line of the formula (split at ``\\``) centred on its own."""
    text = " ".join([_MATH_DIRECTIVE.sub("", lines[0]), *(line.strip() for line in lines[1:])])
    rows = [row.strip() for row in _LINE_BREAK.split(text) if row.strip()]
    return Markup('<div class="math">{}</div>').format(
        Markup("").join(_math(row, drawn, display=True) for row in rows)
    )


def _bullets(lines: list[str], drawn: Counter) -> Markup:
    """A bullet list; a line without a bullet continues the item before it."""
    items: list[str] = []
    for line in lines:
        if _BULLET.match(line) or not items:
            items.append(_BULLET.sub("", line))
        else:
            items[-1] += " " + line.strip()
    return Markup("<ul>{}</ul>").format(
        Markup("").join(Markup("<li>{}</li>").format(_inline(i, drawn)) for i in items)
    )


def render_docstring(text: str | None) -> Markup:
    """A module docstring as HTML paragraphs and bullet lists (escaped; reST literals as code;
    ``:math:`` roles and ``.. math::`` blocks as SVG drawn by mathtext, offline).

    Example:
        >>> str(render_docstring("One ``x`` <b>."))
        '<p>One <code>x</code> &lt;b&gt;.</p>'
        >>> "<svg" in render_docstring(r"A :math:`\\sigma(XW)`.")
        True
    """
    blocks = re.split(r"\n\s*\n", (text or "").strip())
    html, drawn, directive = Markup(""), Counter[str](), False
    for block in filter(None, (b.strip("\n") for b in blocks)):
        lines = block.splitlines()
        if directive or _MATH_DIRECTIVE.match(lines[0]):
            directive = _MATH_DIRECTIVE.sub("", block).strip() == ""  # formula in the next block
            if not directive:
                html += _display_math(lines, drawn)
        elif _BULLET.match(lines[0]):
            html += _bullets(lines, drawn)
        else:
            paragraph = " ".join(line.strip() for line in lines)
            html += Markup("<p>{}</p>").format(_inline(paragraph, drawn))
    return html


environment.filters.update(
    num=scorecard.format_number,
    measured=scorecard.format_measured,
    interval=scorecard.format_interval,
    overrides=scorecard.format_overrides,
    verdict=scorecard.verdict,
    verdict_class=scorecard.verdict_class,
    anchor=scorecard.anchor,
    count_text=scorecard.count_text,
    seed_tally=scorecard.seed_tally,
    beyond_tally=scorecard.beyond_tally,
    overall=scorecard.overall,
    docstring=render_docstring,
    tojson_pretty=lambda value: json.dumps(value, indent=2),
)


def embedded_figures(out_dir: Path, figures: Sequence[Any]) -> list[dict[str, Any]]:
    """Each figure (``filename``, ``caption``) with its PNG inlined as a ``data:`` URI."""
    embedded = []
    for figure in figures:
        data = (Path(out_dir) / figure.filename).read_bytes()
        embedded.append(
            {
                "caption": figure.caption,
                "filename": figure.filename,
                "src": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
            }
        )
    return embedded


def write_page(path: Path, template: str, **context: Any) -> Path:
    """Render ``template`` with ``context`` into ``path`` (UTF-8)."""
    html = environment.get_template(template).render(**context)
    write_atomic(Path(path), html)
    return path
