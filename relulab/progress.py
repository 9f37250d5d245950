"""Progress in a log: plain lines on stderr when it is not a terminal.

On a terminal, ``relulab run``, ``reproduce``, ``sweep`` and ``robustness`` show rich progress
bars; redirected to a file or a CI log those would print nothing for as long as a unit runs.
Off a terminal, progress is written as lines instead, so a log is never silent for long:

* :class:`UnitLines`: one line per finished unit — the experiment (and sweep point), the unit,
  its own seconds, units finished out of the total and the time since the start;
* :class:`StepLines`: within a long unit, a line at most every :data:`LINE_INTERVAL_S` seconds
  with the steps done out of the total (what the unit's bar would show).

``--quiet`` silences both.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = [
    "LINE_INTERVAL_S",
    "StepLines",
    "UnitLines",
    "format_seconds",
    "step_progress",
    "stderr_is_terminal",
    "write_line",
]

#: Seconds between two progress lines of one unit off a terminal.
LINE_INTERVAL_S = 30.0

Clock = Callable[[], float]


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (rich's test, so bars and lines never both show)."""
    return Console(stderr=True).is_terminal


@contextlib.contextmanager
def step_progress(
    total: int, description: str, show: bool | None = None
) -> Iterator[Callable[[int], None]]:
    """Progress over ``total`` steps, yielding ``advance(n)``: a rich bar on stderr when it is a
    terminal (or ``show=True``), else :class:`StepLines`; nothing with ``show=False``.

    Args:
        total: the steps.
        description: the bar's or the lines' label.
        show: ``True`` the bar, ``False`` nothing, ``None`` the bar on a terminal and the lines
            off one.

    Example:
        >>> with step_progress(3, "layers", show=False) as advance:
        ...     advance(1)
    """
    console = Console(stderr=True)
    if show is False:
        yield lambda n: None
        return
    if show is None and not console.is_terminal:
        yield StepLines(total, description).advance
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


def write_line(text: str) -> None:
    """Write ``relulab: text`` as one line on stderr, flushed (a log shows it at once)."""
    sys.stderr.write(f"relulab: {text}\n")
    sys.stderr.flush()


def format_seconds(seconds: float) -> str:
    """A duration for a log line.

    Example:
        >>> format_seconds(4.25), format_seconds(125), format_seconds(7384)
        ('4.2 s', '2 min 05 s', '2 h 03 min')
    """
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class UnitLines:
    """One stderr line per finished unit of ``total``, counted from the first line's clock.

    Example:
        >>> ticks = iter([0.0, 9.5])
        >>> lines = UnitLines(2, clock=lambda: next(ticks))
        >>> lines.line("anisotropy", "spectrum", 3.25)  # what finished() writes after relulab:
        "anisotropy: unit 'spectrum' done in 3.2 s (1/2 units, 9.5 s elapsed)"
    """

    def __init__(self, total: int, clock: Clock = time.monotonic) -> None:
        self.total = total
        self.done = 0
        self.clock = clock
        self.started = clock()

    def line(self, run: str, unit: str, wall_s: float | None, failed: bool = False) -> str:
        """Count one more finished unit and return its line (without writing it); ``unit`` by
        its ``str`` (a ``StrEnum`` unit key reads as its name)."""
        self.done += 1
        outcome = "failed" if failed else "done"
        took = f" in {format_seconds(wall_s)}" if wall_s and not failed else ""
        elapsed = format_seconds(self.clock() - self.started)
        return (
            f"{run}: unit {str(unit)!r} {outcome}{took} "
            f"({self.done}/{self.total} units, {elapsed} elapsed)"
        )

    def finished(self, run: str, unit: str, wall_s: float | None, failed: bool = False) -> None:
        """Write the line of a finished unit: ``run`` names the experiment (and sweep point)."""
        write_line(self.line(run, unit, wall_s, failed))


class StepLines:
    """Progress lines of one computation of ``total`` steps: at most one per ``interval``
    seconds (default :data:`LINE_INTERVAL_S`), none before the first interval has passed.

    Example:
        >>> ticks = iter([0.0, 10.0])
        >>> steps = StepLines(200, "ReLU training", interval=30, clock=lambda: next(ticks))
        >>> steps.advance(100)  # 10 s in: too soon for a line
        >>> steps.line(31.0)  # what advance() writes (after relulab:) once 30 s have passed
        'ReLU training: 100/200 steps (50%), 31.0 s elapsed'
    """

    def __init__(
        self,
        total: int,
        description: str,
        interval: float | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.total = total
        self.description = description
        self.interval = LINE_INTERVAL_S if interval is None else interval
        self.clock = clock
        self.done = 0
        self.started = self.last = clock()

    def advance(self, steps: int) -> None:
        """Count ``steps`` more; write a line if ``interval`` seconds passed since the last."""
        self.done += steps
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        write_line(self.line(now))

    def line(self, now: float) -> str:
        """The line at time ``now``."""
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total > 0 else ""
        elapsed = format_seconds(now - self.started)
        return f"{self.description}: {self.done}/{self.total} steps{share}, {elapsed} elapsed"
