"""train's thread choice (relulab.engine.threads)."""

import pytest
import torch

from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.engine.threads import SMALL_STEP_WORK, train_threads


def _problem(width, n_networks, samples):
    x, y = torch.randn(samples, 4), torch.randn(samples, 2)
    return SupervisedProblem(BatchedMLP(MLPSpec((4, width, 2)), n_networks), x, y)


@pytest.fixture
def two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_tiny_problems_train_on_one_thread_and_the_setting_is_restored(two_threads):
    problem = _problem(8, 3, 16)
    assert problem.work_per_step == 16 * 3 * (4 * 8 + 8 + 8 * 2 + 2)
    result = train(problem, BatchedSGD(problem.params, 0.01), 4, 2)
    assert result.threads == 1
    assert torch.get_num_threads() == 2


def test_large_problems_keep_torchs_setting_and_counts_are_obeyed(two_threads):
    problem = _problem(256, 64, 128)
    assert problem.work_per_step >= SMALL_STEP_WORK
    assert train(problem, BatchedSGD(problem.params, 0.01), 1, 1).threads == 2
    small = _problem(8, 3, 16)
    assert train(small, BatchedSGD(small.params, 0.01), 1, 1, threads=2).threads == 2
    assert train(small, BatchedSGD(small.params, 0.01), 1, 1, threads=None).threads == 2


def test_compiled_steps_keep_torchs_setting_even_for_tiny_problems(two_threads):
    assert train_threads(100, "auto", compiled=True) == 2
    assert train_threads(100, 1, compiled=True) == 1
    small = _problem(8, 3, 16)
    result = train(small, BatchedSGD(small.params, 0.01), 4, 4, compiled_steps=2)
    assert result.threads == 2


def test_a_bad_thread_option_is_refused():
    assert train_threads(None) == torch.get_num_threads()
    for bad in (0, -1, "many", 1.5):
        with pytest.raises(ValueError, match="threads"):
            train_threads(10, bad)
