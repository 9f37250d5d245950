"""relulab.analysis.alignment: the loss-alignment measure and appendix D's variance explained."""

from __future__ import annotations

import numpy as np
import pytest

from relulab.analysis import early_window, loss_alignment, variance_explained


def test_a_pure_delay_is_absorbed_by_the_shift_and_shows_unshifted():
    t = np.arange(0.0, 2000.0, 10.0)
    reference = 1.0 / (1.0 + np.exp((t - 500.0) / 50.0)) + 0.01
    delayed = 1.0 / (1.0 + np.exp((t - 560.0) / 50.0)) + 0.01
    window = early_window(t, reference, 0.95)
    result = loss_alignment(t, delayed, reference, window, max_shift=100.0, n_shifts=21)
    assert result.shift == pytest.approx(60.0)
    assert result.gap < 1e-3 < 0.5 < result.unshifted  # residual: the clamped start


def test_a_different_shape_is_not_absorbed():
    t = np.arange(0.0, 2000.0, 10.0)
    reference = np.exp(-t / 300.0) + 0.01
    slower = np.exp(-t / 600.0) + 0.01
    window = early_window(t, reference, 0.95)
    assert loss_alignment(t, slower, reference, window, max_shift=0.25 * window).gap > 0.3


def test_early_window_of_a_flat_curve_is_the_whole_run():
    assert early_window(np.arange(4.0), np.ones(4)) == 3.0


def test_variance_explained_limits_and_direction():
    rng = np.random.default_rng(0)
    s, c = np.array([1.0, 1, 0, 0]), np.array([1.0, 0, 0, 1])
    assert variance_explained(np.outer(s, rng.normal(size=5)), s) == pytest.approx(1.0)
    assert variance_explained(np.outer(c, rng.normal(size=5)), s) == pytest.approx(0.0, abs=1e-12)
    mixed = np.outer(s, [1.0, 0]) + np.outer(c, [0, 1.0])
    assert variance_explained(mixed, s) == pytest.approx(0.5)
    assert variance_explained(mixed, np.column_stack([s, c])) == pytest.approx(1.0)
    assert np.isnan(variance_explained(np.ones((4, 3)), s))
