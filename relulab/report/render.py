"""The Jinja2 environment shared by every page, its filters, and small page helpers.

Autoescaping is on for every template, so every string a user or an experiment can influence
(config values, experiment names, claim texts, docstrings) is HTML-escaped; the only markup a
filter adds (``docstring``) is built from escaped text.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from relulab.files import write_atomic
from relulab.report import scorecard

__all__ = ["embedded_figures", "environment", "render_docstring", "write_page"]

environment = Environment(
    loader=PackageLoader("relulab.report", "templates"),
    autoescape=select_autoescape(enabled_extensions=("html",), default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)

_INLINE_CODE = re.compile(r"``(.+?)``|:math:`(.+?)`|:(?:class|func|mod|meth|attr):`~?(.+?)`")
_BULLET = re.compile(r"^\s*[*-]\s+")


def _inline(text: str) -> Markup:
    """Escape ``text``; reST inline literals and roles become ``<code>``."""
    out, position = Markup(""), 0
    for match in _INLINE_CODE.finditer(text):
        out += escape(text[position : match.start()])
        literal = next(group for group in match.groups() if group is not None)
        out += Markup("<code>{}</code>").format(literal)
        position = match.end()
    return out + escape(text[position:])


def render_docstring(text: str | None) -> Markup:
    """A module docstring as HTML paragraphs and bullet lists (escaped; reST literals as code).

    Example:
        >>> str(render_docstring("One ``x`` <b>."))
        '<p>One <code>x</code> &lt;b&gt;.</p>'
    """
    blocks = re.split(r"\n\s*\n", (text or "").strip())
    html = Markup("")
    for block in filter(None, (b.strip("\n") for b in blocks)):
        lines = block.splitlines()
        if _BULLET.match(lines[0]):
            items: list[str] = []
            for line in lines:
                if _BULLET.match(line) or not items:
                    items.append(_BULLET.sub("", line))
                else:
                    items[-1] += " " + line.strip()
            html += Markup("<ul>{}</ul>").format(
                Markup("").join(Markup("<li>{}</li>").format(_inline(i)) for i in items)
            )
        else:
            html += Markup("<p>{}</p>").format(_inline(" ".join(line.strip() for line in lines)))
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


def embedded_figures(out_dir: Path, figures: Sequence[Any]) -> list[dict[str, str]]:
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
