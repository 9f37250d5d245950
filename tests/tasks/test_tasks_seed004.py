"""Seed 004's toy tasks: shapes, the hierarchies' singular values, separability claims."""

import numpy as np
import pytest
import torch
from scipy.optimize import linprog

from relulab.tasks import (
    DEFAULT_N_ITEMS,
    PARALLEL_COMPLEX,
    PARALLEL_SIMPLE,
    append_constant,
    binary_tree_targets,
    hierarchical_task,
    hierarchy_singular_values,
    parallel_task,
    xor_linear_task,
    xor_task,
)
from relulab.theory import bias_mode


def affine_fit_residual(X: np.ndarray, y: np.ndarray) -> float:
    """Sum of squared residuals of the least-squares affine fit (numpy.linalg.lstsq)."""
    design = np.column_stack([X, np.ones(len(X))])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(np.sum((design @ coef - y) ** 2))


def linearly_separable(X: np.ndarray, labels: np.ndarray) -> bool:
    """Independent path: is there (w, b) with ±(w·x + b) ≥ 1? (an LP feasibility problem)."""
    signs = 2.0 * labels - 1.0
    A_ub = -signs[:, None] * np.column_stack([X, np.ones(len(X))])
    n = X.shape[1] + 1
    result = linprog(np.zeros(n), A_ub=A_ub, b_ub=-np.ones(len(X)), bounds=[(None, None)] * n)
    return result.status == 0


# ---------------------------------------------------------------- hierarchies


@pytest.mark.parametrize("n_items", [4, 8, 16])
def test_hierarchy_shapes(n_items):
    X, Y = hierarchical_task(n_items)
    assert X.shape == (n_items, n_items) and Y.shape == (n_items, 2 * n_items - 1)
    np.testing.assert_array_equal(X, np.eye(n_items))
    assert X.dtype == Y.dtype == np.float64


def test_default_is_the_four_item_tree_and_equals_the_binary_construction():
    X, Y = hierarchical_task()
    assert DEFAULT_N_ITEMS == 4 and Y.shape == (4, 7)
    np.testing.assert_array_equal(Y.T, binary_tree_targets(4))
    # canary: grow, move, fly; rose: grow, roots, petals
    np.testing.assert_array_equal(Y[0], [1, 1, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(Y[3], [1, 0, 1, 0, 0, 0, 1])


@pytest.mark.parametrize("n_items", [2, 4, 8, 16, 32])
def test_hierarchy_singular_values_closed_form(n_items):
    _, Y = hierarchical_task(n_items)
    np.testing.assert_allclose(
        np.linalg.svd(Y, compute_uv=False), hierarchy_singular_values(n_items), rtol=1e-12
    )


def test_known_tree_spectra():
    np.testing.assert_allclose(hierarchy_singular_values(4) ** 2, [7, 3, 1, 1])
    np.testing.assert_allclose(hierarchy_singular_values(8) ** 2, [15, 7, 3, 3, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="power of two"):
        hierarchy_singular_values(6)


@pytest.mark.parametrize("n_items", [4, 8])
@pytest.mark.parametrize("c", [0.5, 1.0, 10.0])
def test_input_output_spectrum_with_the_constant(n_items, c):
    """With the constant: top = Prop. 1's s0, the rest = the tree's non-root values / P."""
    X, Y = hierarchical_task(n_items)
    Xc = append_constant(torch.from_numpy(X), c).numpy()
    singular = np.linalg.svd(Y.T @ Xc / n_items, compute_uv=False)
    expected = hierarchy_singular_values(n_items)[1:] / n_items
    assert singular[0] == pytest.approx(bias_mode(n_items, c, Y.mean(0)).s0, rel=1e-12)
    np.testing.assert_allclose(singular[1:n_items], expected, rtol=1e-12)
    np.testing.assert_allclose(singular[n_items:], 0.0, atol=1e-14)  # the constant's null mode


# ---------------------------------------------------------------- XOR


def test_xor_task_is_xor_ordered_by_class():
    X, Y = xor_task(levels=(0.0, 1.0))
    assert X.shape == (4, 2) and Y.shape == (4, 2)
    np.testing.assert_array_equal(Y.argmax(1), np.logical_xor(X[:, 0], X[:, 1]).astype(int))
    np.testing.assert_array_equal(Y, [[1, 0], [1, 0], [0, 1], [0, 1]])  # seed appendix E
    assert not linearly_separable(X, Y[:, 1])
    Xc, Yc = xor_task()
    np.testing.assert_array_equal(Xc, 2 * X - 1)
    np.testing.assert_array_equal(Yc, Y)


def test_xor_tasks_are_centred_by_default():
    """Issue 30: the default levels ±1 leave no input constant (§3), on XOR and on XOR +
    linear; (0, 1) keeps the mean (½, ½)."""
    np.testing.assert_array_equal(xor_task()[0].mean(axis=0), [0.0, 0.0])
    np.testing.assert_array_equal(xor_linear_task(0.5)[0].mean(axis=0), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(xor_task(levels=(0, 1))[0].mean(axis=0), [0.5, 0.5])
    X, _ = xor_linear_task(0.5, levels=(-0.5, 0.5))
    assert np.ptp(X[:, 0]) == np.ptp(X[:, 2]) == 1.0  # the cube: XOR : x3 scale 1


@pytest.mark.parametrize("delta", [0.05, 0.5, 2.0])
def test_xor_linear_task_separable_with_gap_two_delta(delta):
    X, Y = xor_linear_task(delta)
    assert X.shape == (4, 3) and Y.shape == (4, 2)
    np.testing.assert_array_equal(X[:, :2], xor_task()[0])
    np.testing.assert_array_equal(Y, xor_task()[1])
    labels = Y[:, 1]
    assert linearly_separable(X, labels)
    assert not linearly_separable(X[:, :2], labels)  # the XOR part alone is not
    # gap between the classes' convex hulls: ≥ the x3 difference, attained at the midpoints
    class0, class1 = X[labels == 0], X[labels == 1]
    gaps = np.linalg.norm(class0[:, None] - class1[None], axis=-1)
    assert np.min(gaps) >= 2 * delta - 1e-15
    assert np.linalg.norm(class0.mean(0) - class1.mean(0)) == pytest.approx(2 * delta)
    assert not np.any(np.all(X == 0, axis=1))  # nothing at the origin


def test_xor_linear_task_without_margin_is_not_separable():
    X, Y = xor_linear_task(0.0)
    assert not linearly_separable(X, Y[:, 1])
    with pytest.raises(ValueError):
        xor_linear_task(-0.1)
    X, _ = xor_linear_task(0.5, center=0.5, levels=(0, 1))
    np.testing.assert_array_equal(X, [[0, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 1]])  # unit cube


# ---------------------------------------------------------------- parallel task


def test_parallel_task_shapes_and_targets():
    X, Y = parallel_task()
    assert X.shape == (4, 2) and Y.shape == (4, 4)
    np.testing.assert_array_equal(Y[:, 0], PARALLEL_SIMPLE)
    np.testing.assert_array_equal(Y[:, 2], PARALLEL_COMPLEX)
    np.testing.assert_array_equal(Y[:, :2].sum(1), 1)
    np.testing.assert_array_equal(Y[:, 2:].sum(1), 1)
    _, Y2 = parallel_task(one_hot=False)
    np.testing.assert_array_equal(Y2, np.column_stack([PARALLEL_SIMPLE, PARALLEL_COMPLEX]))


def test_parallel_task_simple_target_is_linear_and_complex_is_not():
    X, _ = parallel_task()
    assert affine_fit_residual(X, PARALLEL_SIMPLE) == pytest.approx(0.0, abs=1e-24)
    # XNOR: the best affine fit is the constant 1/2, leaving 4 × 1/4
    assert affine_fit_residual(X, PARALLEL_COMPLEX) == pytest.approx(1.0, rel=1e-12)
    assert linearly_separable(X, PARALLEL_SIMPLE)
    assert not linearly_separable(X, PARALLEL_COMPLEX)
    assert not np.any(np.all(X == 0, axis=1))  # a bias-free ReLU net can fit every point
    X01, _ = parallel_task(levels=(0.0, 1.0))
    assert affine_fit_residual(X01, PARALLEL_SIMPLE) == pytest.approx(0.0, abs=1e-24)
    assert affine_fit_residual(X01, PARALLEL_COMPLEX) == pytest.approx(1.0, rel=1e-12)
