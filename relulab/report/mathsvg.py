r"""Formulas of docstrings as inline SVG, drawn offline by matplotlib's mathtext.

A report is one self-contained file, so a formula (a reST ``:math:`…``` role or a
``.. math::`` block) becomes an ``<svg>`` of glyph outlines: no script, font or network.
Sizes are in ``em``, so a formula scales with the text around it; its baseline sits on the
text's, and it takes the text's colour. mathtext reads most of LaTeX's maths; the few commands
it lacks are replaced by equivalents first (``\lVert`` → ``\Vert``, ``\le`` → ``\leq``, …). A
formula mathtext still cannot parse is shown as ``<code>`` and logged (once per formula).
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from dataclasses import dataclass
from functools import lru_cache

import matplotlib
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.mathtext import MathTextParser

__all__ = ["DrawnMath", "draw", "math_markup", "mathtext_source"]

logger = logging.getLogger(__name__)

#: The size formulas are drawn at (points); the SVG is scaled to the text's em.
FONT_SIZE_PT = 12.0
#: mathtext's font set: Computer Modern, LaTeX's.
FONTSET = "cm"
#: Formulas are drawn this much larger than the text's em: Computer Modern's letters are
#: smaller than those of the sans-serif fonts reports are set in.
SCALE = 1.1

#: LaTeX commands mathtext lacks → a mathtext equivalent.
_EQUIVALENTS = {
    "lVert": r"\Vert",
    "rVert": r"\Vert",
    "lvert": "|",
    "rvert": "|",
    "le": r"\leq",
    "ge": r"\geq",
    "tfrac": r"\frac",
    "displaystyle": "",
    "textstyle": "",
}
_COMMAND = re.compile(r"\\(" + "|".join(_EQUIVALENTS) + r")(?![A-Za-z])")
_NOT_SVG = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>|<!--.*?-->|<metadata>.*?</metadata>", re.S)
_STYLE = re.compile(r"<defs>\s*<style[^>]*>.*?</style>\s*</defs>", re.S)
_OPENING = re.compile(r"<svg\b[^>]*>")
_IDS = re.compile(r'(\bid="|href="#|url\(#)')


@dataclass(frozen=True)
class DrawnMath:
    """A formula drawn by mathtext: the SVG's inner markup (ids not yet prefixed) and its
    width, height and depth below the baseline, in points at :data:`FONT_SIZE_PT`."""

    body: str
    width: float
    height: float
    depth: float


def mathtext_source(tex: str) -> str:
    r"""``tex`` as mathtext reads it: the commands it lacks replaced by equivalents.

    Example:
        >>> mathtext_source(r"q_j = \lVert w_j\rVert^2 \le 1")
        'q_j = \\Vert w_j\\Vert^2 \\leq 1'
    """
    return _COMMAND.sub(lambda match: _EQUIVALENTS[match.group(1)], tex.strip())


@lru_cache(maxsize=1024)
def draw(tex: str) -> DrawnMath | None:
    r"""Draw ``tex`` (inline maths, no ``$``) with mathtext; ``None`` (logged) when mathtext
    cannot parse it.

    Example:
        >>> drawn = draw(r"\sigma(XW)")
        >>> drawn.width > drawn.height > drawn.depth > 0, "<path" in drawn.body
        (True, True)
    """
    source = f"${mathtext_source(tex)}$"
    font = FontProperties(size=FONT_SIZE_PT, math_fontfamily=FONTSET)
    try:
        width, height, depth, *_ = MathTextParser("path").parse(source, dpi=72, prop=font)
        figure = Figure(figsize=(width / 72, height / 72))
        figure.text(0, depth / height, source, fontproperties=font)
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "relulab"}):
            figure.savefig(buffer, format="svg", transparent=True, metadata={"Date": None})
    except (ValueError, RuntimeError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[-1]
        logger.warning("mathtext cannot draw %r (%s); it is shown as code", tex, reason)
        return None
    svg = _STYLE.sub("", _NOT_SVG.sub("", buffer.getvalue()))
    opening = _OPENING.search(svg)
    if opening is None:  # pragma: no cover - matplotlib always writes one
        return None
    body = svg[opening.end() : svg.rindex("</svg>")].strip()
    return DrawnMath(body, float(width), float(height), float(depth))


def _plain_text(tex: str) -> str:
    r"""``tex`` read without backslashes, for screen readers: ``\sigma(x)`` → ``sigma(x)``."""
    words = re.sub(r"\\([A-Za-z]+)", r"\1 ", tex)
    return re.sub(r"\s+", " ", re.sub(r"\\.", " ", words)).strip()


def math_markup(tex: str, occurrence: int = 0, display: bool = False) -> Markup:
    r"""The formula ``tex`` as an inline ``<svg>`` (a centred block with ``display``), or as
    ``<code>`` when mathtext cannot draw it.

    Element ids are prefixed with a digest of ``tex`` and ``occurrence`` (the formula's count
    so far on the page), so that several formulas share a page without clashing ids.

    Args:
        tex: the formula (reST ``:math:`` text, no ``$``).
        occurrence: how many times ``tex`` was already drawn on this page.
        display: a block of its own, centred.

    Returns:
        HTML markup.

    Example:
        >>> html = str(math_markup(r"\sigma(XW)"))
        >>> html.startswith('<svg class="math"'), "\\" in html
        (True, False)
        >>> str(math_markup(r"\frac{1"))
        '<code class="math">\\frac{1</code>'
    """
    drawn = draw(tex)
    if drawn is None:
        return Markup('<code class="math">{}</code>').format(tex)
    digest = hashlib.sha1(tex.encode()).hexdigest()[:8]
    body = _IDS.sub(lambda m: f"{m.group(1)}math-{digest}-{occurrence}-", drawn.body)
    em = FONT_SIZE_PT / SCALE
    style = f"vertical-align:{-drawn.depth / em:.3f}em"
    if display:
        style = "display:block;margin:0.5em auto"
    opening = Markup(
        '<svg class="math" xmlns="http://www.w3.org/2000/svg" '
        'xmlns:xlink="http://www.w3.org/1999/xlink" width="{}em" height="{}em" '
        'viewBox="0 0 {} {}" style="{}" fill="currentColor" role="img" aria-label="{}">'
    ).format(
        f"{drawn.width / em:.3f}",
        f"{drawn.height / em:.3f}",
        f"{drawn.width:g}",
        f"{drawn.height:g}",
        style,
        _plain_text(tex),
    )
    return opening + Markup(body) + Markup("</svg>")
