"""Hierarchical (tree-structured) tasks of seed ``004_…`` (the trees are [inferred]).

Inputs are one-hot items, ``X = I_P``; outputs are the items' properties. Two trees:

* the 4-item tree (canary, salmon, oak, rose × grow, move, roots, fly, swim, leaves, petals);
* the 8-item binary tree: a root row of ones, 2 level-1 rows, 4 level-2 rows, then ``I_8``
  (15 × 8).

Arrays are returned sample-major: ``X`` is ``(P, P)`` and ``Y`` is ``(P, n_properties)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FOUR_ITEMS", "FOUR_PROPERTIES", "binary_tree_targets", "hierarchical_task"]

FOUR_ITEMS = ("canary", "salmon", "oak", "rose")
FOUR_PROPERTIES = ("grow", "move", "roots", "fly", "swim", "leaves", "petals")
_FOUR_ITEM_TARGETS = np.array(
    [
        [1, 1, 1, 1],  # grow
        [1, 1, 0, 0],  # move
        [0, 0, 1, 1],  # roots
        [1, 0, 0, 0],  # fly
        [0, 1, 0, 0],  # swim
        [0, 0, 1, 0],  # leaves
        [0, 0, 0, 1],  # petals
    ],
    dtype=np.float64,
)


def binary_tree_targets(n_items: int) -> np.ndarray:
    """Property matrix ``(2·P − 1, P)`` of a balanced binary tree over ``P = 2^k`` items.

    Row blocks by level: the root (all ones), then each level's nodes as indicator rows of the
    items below them, ending with the leaves ``I_P``.
    """
    if n_items < 2 or n_items & (n_items - 1):
        raise ValueError(f"n_items must be a power of two ≥ 2, got {n_items}")
    rows = []
    group = n_items
    while group >= 1:
        for start in range(0, n_items, group):
            row = np.zeros(n_items)
            row[start : start + group] = 1
            rows.append(row)
        group //= 2
    return np.array(rows)


def hierarchical_task(n_items: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` with ``X = I_P`` and ``Y`` the tree's properties, sample-major.

    ``n_items = 4`` gives the canary/salmon/oak/rose tree (7 properties); a power of two ≥ 8
    the binary tree (``2P − 1`` properties).
    """
    if n_items == 4:
        return np.eye(4), _FOUR_ITEM_TARGETS.T.copy()
    return np.eye(n_items), binary_tree_targets(n_items).T.copy()
