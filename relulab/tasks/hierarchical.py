r"""Hierarchical (tree-structured) tasks of seed ``004_…`` (§4, fig. 2A; after Saxe et al. 2019).

Inputs are one-hot items, ``X = I_P``; outputs are the items' properties. Two trees are offered,
because which one the seed's fig. 2A shows is not recoverable [I]:

* the **4-item tree (default)**: canary, salmon, oak, rose × grow, move, roots, fly, swim,
  leaves, petals — the worked example of Saxe, McClelland & Ganguli (2019), whom the seed cites
  for this task;
* the **8-item binary tree**: a root row of ones, 2 level-1 rows, 4 level-2 rows, then ``I_8``
  (15 × 8). The 4-item tree is the same construction over 4 items (rows named).

Arrays are NumPy float64 and sample-major: ``X`` is ``(P, P)`` and ``Y`` is ``(P, n_properties)``
(transpose for the column convention of :mod:`relulab.theory.deep_linear`). The hidden bias of
seed 004 is an appended constant input (:func:`relulab.tasks.append_constant`).

Singular values (:func:`hierarchy_singular_values`): for :math:`P = 2^k` items the item
similarity :math:`Y^\top Y` has eigenvalue :math:`2^{k-\ell+1} - 1` for tree level
:math:`\ell = 0, \dots, k` (root to leaves), once for the root and :math:`2^{\ell-1}` times for
:math:`\ell \ge 1` [derived] — e.g. :math:`\sqrt7, \sqrt3, 1, 1` for the 4-item tree.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DEFAULT_N_ITEMS",
    "FOUR_ITEMS",
    "FOUR_PROPERTIES",
    "binary_tree_targets",
    "hierarchical_task",
    "hierarchy_singular_values",
]

DEFAULT_N_ITEMS = 4
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


def _tree_depth(n_items: int) -> int:
    if n_items < 2 or n_items & (n_items - 1):
        raise ValueError(f"n_items must be a power of two ≥ 2, got {n_items}")
    return n_items.bit_length() - 1


def binary_tree_targets(n_items: int) -> np.ndarray:
    """Property matrix ``(2·P − 1, P)`` of a balanced binary tree over ``P = 2^k`` items.

    Row blocks by level: the root (all ones), then each level's nodes as indicator rows of the
    items below them, ending with the leaves ``I_P``.

    Example:
        >>> binary_tree_targets(4).shape
        (7, 4)
    """
    _tree_depth(n_items)
    rows = []
    group = n_items
    while group >= 1:
        for start in range(0, n_items, group):
            row = np.zeros(n_items)
            row[start : start + group] = 1
            rows.append(row)
        group //= 2
    return np.array(rows)


def hierarchical_task(n_items: int = DEFAULT_N_ITEMS) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` with ``X = I_P`` and ``Y`` the tree's properties, sample-major (seed 004 §4).

    ``n_items = 4`` (default [I]) gives the canary/salmon/oak/rose tree (7 properties, rows in
    :data:`FOUR_PROPERTIES` order); a power of two ≥ 8 the binary tree (``2P − 1``
    properties, :func:`binary_tree_targets`).

    Example:
        >>> X, Y = hierarchical_task()
        >>> X.shape, Y.shape
        ((4, 4), (4, 7))
    """
    if n_items == 4:
        return np.eye(4), _FOUR_ITEM_TARGETS.T.copy()
    return np.eye(n_items), binary_tree_targets(n_items).T.copy()


def hierarchy_singular_values(n_items: int = DEFAULT_N_ITEMS) -> np.ndarray:
    r"""Singular values of the tree's property matrix, descending (closed form, see module).

    :math:`\sqrt{2^{k-\ell+1} - 1}` for level :math:`\ell` with multiplicity 1 (root) or
    :math:`2^{\ell-1}`. The input–output correlation of the one-hot task without a constant has
    singular values these divided by :math:`P`; with a constant :math:`c`, the top one becomes
    seed 004's :math:`s_0 = \sqrt{c^2 + 1/P}\,\lVert\bar y\rVert` (Prop. 1) and the others stay.

    Example:
        >>> hierarchy_singular_values(4) ** 2
        array([7., 3., 1., 1.])
    """
    depth = _tree_depth(n_items)
    values = [np.sqrt(2.0 ** (depth + 1) - 1.0)]
    for level in range(1, depth + 1):
        values += [np.sqrt(2.0 ** (depth - level + 1) - 1.0)] * 2 ** (level - 1)
    return np.array(values)
