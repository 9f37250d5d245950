"""Issue 35: the "About this experiment" section renders the docstrings' LaTeX as inline SVG
(matplotlib mathtext, offline), and falls back to the raw text in ``<code>`` (logged) when
mathtext cannot parse a formula."""

from __future__ import annotations

import logging
import re

import pytest

from relulab.experiments import REGISTRY
from relulab.report.mathsvg import math_markup, mathtext_source
from relulab.report.render import render_docstring
from relulab.runner.outputs import _about

_COMMAND = re.compile(r"\\[A-Za-z]+")


def test_a_math_role_becomes_an_inline_svg():
    html = str(render_docstring(r"Here :math:`\sigma(XW)` is drawn, ``code`` is not."))
    assert html.count("<svg") == 1 and "<path" in html and "<use" in html
    assert "<code>code</code>" in html
    assert not _COMMAND.search(html) and "sigma(XW)</code>" not in html
    svg = re.search(r"<svg[^>]*>", html).group(0)
    assert re.search(r'width="[\d.]+em" height="[\d.]+em"', svg), "scales with the text"
    assert 'fill="currentColor"' in svg and "vertical-align:-" in svg
    assert "<!--" not in html and "<style" not in html and "metadata" not in html
    assert str(render_docstring(r":math:`\sigma(XW)`")) == str(
        render_docstring(r":math:`\sigma(XW)`")
    ), "the same docstring gives the same page"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_experiments_about_section_has_no_latex_left(name):
    check_about_renders(REGISTRY[name])


def check_about_renders(experiment) -> None:
    about = _about(experiment)
    html = str(render_docstring(about))
    assert not _COMMAND.search(html), _COMMAND.findall(html)
    assert html.count("<svg") == about.count(":math:`"), "every formula drawn, none as code"
    assert 'class="math">' not in html.replace('<svg class="math"', "")


def test_ids_are_unique_on_a_page_even_for_a_repeated_formula():
    html = str(render_docstring(r":math:`x_1`, :math:`x_1` and :math:`\lVert w\rVert`."))
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert ids and len(ids) == len(set(ids))
    for target in re.findall(r'href="#([^"]+)"', html):
        assert target in ids


def test_an_unparsable_formula_stays_raw_code_and_is_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="relulab.report.mathsvg"):
        html = str(render_docstring(r"Broken :math:`\frac{1` and fine :math:`x^2`."))
    assert '<code class="math">\\frac{1</code>' in html and html.count("<svg") == 1
    assert any("\\frac{1" in record.getMessage() for record in caplog.records)


def test_commands_mathtext_lacks_are_replaced_and_text_is_escaped():
    assert mathtext_source(r"\lVert x\rVert \le \tfrac{1}{2}") == r"\Vert x\Vert \leq \frac{1}{2}"
    html = str(render_docstring(r"<b>x</b> :math:`a < b` :math:`\left\lvert z\right\rvert`"))
    assert "&lt;b&gt;" in html and html.count("<svg") == 2
    assert 'aria-label="a &lt; b"' in html


def test_a_math_directive_is_a_centred_block():
    text = "Before.\n\n.. math::\n    a = b \\\\\n    c = d.\n\nAfter."
    html = str(render_docstring(text))
    assert html.startswith('<p>Before.</p><div class="math"><svg') and html.endswith(
        "<p>After.</p>"
    )
    assert html.count("display:block") == 2, "one line each"
    spaced = str(render_docstring(".. math::\n\n    \\sigma_b(z)"))
    assert spaced.startswith('<div class="math"><svg') and "\\" not in spaced
    assert str(math_markup("x", display=True)).count("display:block") == 1
