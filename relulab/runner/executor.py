"""What the runner asks of an executor: the contract every executor of
:mod:`relulab.runner.parallel` keeps (:class:`Executor`).

:func:`~relulab.runner.execute.execute_runs` (and the sweeps and robustness runs built on it)
hands an executor the unfinished units of its runs as :class:`~relulab.runner.parallel.UnitTask`
and stores each :class:`~relulab.runner.parallel.Outcome` as it comes back; it uses nothing of an
executor but what :class:`Executor` declares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from relulab.runner.parallel import Outcome, UnitTask

__all__ = ["Executor"]


@runtime_checkable
class Executor(Protocol):
    """Where a run's units execute (:func:`~relulab.runner.parallel.make_executor`).

    Attributes:
        kind: ``"serial"``, ``"pool"`` or ``"ray"``; a serial executor's units show their own
            progress bars, so the runner shows none of its own by default.
        keeps_going: whether every unit is computed after one fails (``False``: a failure skips
            the rest of its run — the serial executor).
        quiet: whether the units' own progress bars are silenced; the runner sets it while it
            shows its bar (the workers of the other executors are always quiet).

    Example:
        >>> from relulab.runner.parallel import make_executor
        >>> isinstance(make_executor(jobs=1), Executor)
        True
    """

    kind: str
    keeps_going: bool
    quiet: bool

    def unit_threads(self) -> int:
        """The torch threads a unit runs under (recorded with it in the store)."""
        ...

    def task_threads(self) -> int | None:
        """The thread count a :class:`~relulab.runner.parallel.UnitTask` carries (``None``:
        leave the process's setting)."""
        ...

    def connect(self) -> None:
        """Make the executor ready (a Ray cluster: connect), before anything is written."""
        ...

    def outcomes(
        self, tasks: Iterable[UnitTask], skip: Callable[[UnitTask], bool]
    ) -> Iterator[Outcome | None]:
        """Run the tasks, yielding each one's outcome as it comes back (in any order), or
        ``None`` now and then while waiting (a tick: refresh the progress display); a task for
        which ``skip`` is true when its turn comes is not run."""
        ...

    def activity(self, label: Callable[[UnitTask], str]) -> str:
        """What the workers are doing now, for the progress bar (units named by ``label``)."""
        ...

    def close(self, abort: bool = False) -> None:
        """Stop the workers: after their current unit, or at once with ``abort``."""
        ...

    def __enter__(self) -> Executor:
        """The executor itself."""
        ...

    def __exit__(self, kind: type | None, *rest: object) -> None:
        """:meth:`close`, with ``abort`` when an exception ends the block."""
        ...
