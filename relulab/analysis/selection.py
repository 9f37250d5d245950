r"""Picking networks out of a unit's results by their condition, and averaging over groups.

A unit of work (:class:`relulab.store.UnitResult`) holds one condition per network, a plain dict
such as ``{"b1": 0.0, "b2": -1.2, "lr": 0.01, "activation": "relu"}``. Every experiment needs the
same few questions answered about these lists:

* :func:`where` — the indices of the networks whose condition matches given values;
* :func:`first_match` — the first such index, or ``None``;
* :func:`group_means` — the mean of a per-network value over the networks of each level of a
  swept setting (e.g. the mean Δ over seeds for every shift b).

Floats are matched with :func:`numpy.isclose`, so a condition written as ``-1.1`` finds the
network trained at ``np.linspace(...)``'s ``-1.0999999999999999``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["first_match", "group_means", "where"]

Conditions = Sequence[Mapping[str, Any]]


def _matches(condition: Mapping[str, Any], match: Mapping[str, Any]) -> bool:
    return all(
        np.isclose(condition[key], value) if isinstance(value, float) else condition[key] == value
        for key, value in match.items()
    )


def where(conditions: Conditions, **match: Any) -> np.ndarray:
    """Indices of the networks whose condition has every given value.

    Float values match within :func:`numpy.isclose`'s default tolerances; other values (strings,
    ints) must be equal.

    Args:
        conditions: one dict per network, in the unit's order.
        **match: the settings to match, e.g. ``parameterisation="reparam"``.

    Returns:
        The matching indices, an ``int`` array in increasing order (empty if none match).

    Example:
        >>> where([{"b": 0.1, "act": "relu"}, {"b": 0.2, "act": "relu"}], b=0.2).tolist()
        [1]
    """
    return np.array(
        [i for i, condition in enumerate(conditions) if _matches(condition, match)], dtype=int
    )


def first_match(conditions: Conditions, **match: Any) -> int | None:
    """The index of the first network whose condition has every given value, else ``None``.

    Args:
        conditions: one dict per network, in the unit's order.
        **match: the settings to match (as for :func:`where`).

    Returns:
        The first matching index, or ``None`` when no network matches (the sweep left that
        setting out).

    Example:
        >>> first_match([{"lr": 0.2}, {"lr": 0.4}], lr=0.4)
        1
        >>> first_match([{"lr": 0.2}], lr=0.3) is None
        True
    """
    found = where(conditions, **match)
    return int(found[0]) if len(found) else None


def group_means(
    values: np.ndarray | Sequence[float],
    keys: np.ndarray | Sequence[float],
    levels: Sequence[float],
) -> np.ndarray:
    r"""The mean of ``values`` over the entries whose key equals each level.

    .. math::
        \bar v_k = \frac{1}{|\{i : x_i = \ell_k\}|} \sum_{i : x_i = \ell_k} v_i,

    keys compared with :func:`numpy.isclose`. A level no entry has gives NaN.

    Args:
        values: one value per network.
        keys: the swept setting of each network (e.g. its shift b).
        levels: the settings to average at, in the order wanted.

    Returns:
        ``float`` array of ``len(levels)`` group means.

    Example:
        >>> group_means([1.0, 3.0, 10.0], [0.1, 0.1, 0.2], [0.1, 0.2]).tolist()
        [2.0, 10.0]
    """
    values, keys = np.asarray(values), np.asarray(keys)
    with np.errstate(invalid="ignore"):
        return np.array(
            [
                values[np.isclose(keys, level)].mean() if np.isclose(keys, level).any() else np.nan
                for level in levels
            ]
        )
