"""Sweep point names (issue 33): one readable path component per point, different for different
settings — negative numbers keep their sign, exponents, tuples and strings with ``/`` or ``,``
survive — checked as a property over generated settings, and through prepare_sweep."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from relulab.runner.sweep import point_name, prepare_sweep

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
scalars = st.one_of(finite, st.integers(-(2**40), 2**40), st.booleans(), st.text(max_size=12))
values = st.one_of(scalars, st.lists(finite, min_size=1, max_size=4).map(tuple))


def _same(a, b) -> bool:
    """Equal as settings (a tuple is a tuple; 0.0 and -0.0 are the same number)."""
    if isinstance(a, tuple) != isinstance(b, tuple) or type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


@settings(max_examples=200, deadline=None)
@given(first=values, second=values)
def test_point_names_are_injective_and_one_path_component(first, second):
    name_a, name_b = point_name({"key": first}), point_name({"key": second})
    for name in (name_a, name_b):
        assert "/" not in name and "\x00" not in name and name not in (".", "..")
        assert name.startswith("key=")
    if not _same(first, second) and type(first) is type(second):
        assert name_a != name_b, (first, second)


def test_point_names_keep_signs_exponents_and_strings():
    assert point_name({"lr_sweep_b2": -1.0}) == "lr_sweep_b2=-1.0"
    assert point_name({"eps": 1e-300}) == "eps=1e-300"
    assert point_name({"x": 1e20}) == "x=1e%2B20"
    assert point_name({"dataset": "a/b", "t": (-1.0, 2.5)}) == "dataset=a%2Fb,t=-1.0+2.5"
    assert point_name({"s": "a,b=c"}) != point_name({"s": "a"})


def test_prepare_sweep_keeps_negative_points_apart(tmp_path):
    sweep = prepare_sweep(
        "single-neuron", "quick", ["lr_sweep_b2=-1.0,-1.5"], [], None, "cpu", tmp_path / "s"
    )
    assert [p.name for p in sweep.points] == ["lr_sweep_b2=-1.0", "lr_sweep_b2=-1.5"]
    both_signs = prepare_sweep(
        "single-neuron", "quick", ["silu_b2=-2,2"], [], None, "cpu", tmp_path / "t"
    )
    assert [p.name for p in both_signs.points] == ["silu_b2=-2.0", "silu_b2=2.0"]
