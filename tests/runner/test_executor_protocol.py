"""Every executor keeps the runner's contract (issue 48): what ``execute_runs`` and the sweeps
use of an executor is declared once, as :class:`relulab.runner.executor.Executor`, and each
concrete executor has every member of it, with the same call shape."""

from __future__ import annotations

import inspect

import pytest

from relulab.runner.executor import Executor
from relulab.runner.parallel import PoolExecutor, RayExecutor, SerialExecutor, make_executor

METHODS = (
    "unit_threads",
    "task_threads",
    "connect",
    "outcomes",
    "activity",
    "close",
    "__enter__",
    "__exit__",
)
ATTRIBUTES = {"kind": str, "keeps_going": bool, "quiet": bool}


def _executors() -> list[object]:
    executors: list[object] = [SerialExecutor(None, quiet=False), PoolExecutor(2, None)]
    try:
        executors.append(RayExecutor(None, None, None))  # not connected: nothing starts
    except Exception:  # Ray not installed here: its class is still checked below
        executors.append(RayExecutor.__new__(RayExecutor))
    return executors


def test_the_protocol_declares_what_the_runner_uses():
    members = {name for name in vars(Executor) if not name.startswith("_abc")}
    assert set(METHODS) <= members
    assert set(ATTRIBUTES) <= set(Executor.__annotations__)


@pytest.mark.parametrize("executor", _executors(), ids=lambda e: type(e).__name__)
def test_each_executor_satisfies_the_protocol(executor):
    assert isinstance(executor, Executor)
    for name, kind in ATTRIBUTES.items():
        assert isinstance(getattr(executor, name), kind), name


@pytest.mark.parametrize("cls", [SerialExecutor, PoolExecutor, RayExecutor])
@pytest.mark.parametrize("method", METHODS)
def test_each_method_has_the_protocols_shape(cls, method):
    """Same parameters, in the same order, of the same kinds and defaults (annotations are
    left to a type checker: ``__enter__`` returns the class itself)."""

    def shape(function):
        return [
            (p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()
        ]

    assert shape(getattr(cls, method)) == shape(getattr(Executor, method))


def test_make_executor_gives_an_executor():
    assert isinstance(make_executor(jobs=1), Executor)
    assert isinstance(make_executor(jobs=2), Executor)


def test_an_object_missing_a_member_is_not_an_executor():
    class Partial:
        kind, keeps_going, quiet = "serial", False, False

        def outcomes(self, tasks, skip):
            return iter(())

    assert not isinstance(Partial(), Executor)
