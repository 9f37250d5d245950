"""Errors and warnings as one line: how relulab reports a failure it did not foresee, and the
warnings of the libraries it calls (numpy, scipy, Pillow, torch) — as ``relulab: warning: …``
lines on stderr, never raw multi-line warning output (:func:`one_line_warnings`)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import TextIO

__all__ = ["describe_error", "format_warning", "one_line_warnings"]


def describe_error(error: BaseException, limit: int = 300) -> str:
    """``"TypeName: the message"`` on one line, at most ``limit`` characters.

    Example:
        >>> describe_error(ValueError("bad\\nvalue"))
        'ValueError: bad value'
    """
    text = " ".join(str(error).split()) or "(no message)"
    line = f"{type(error).__name__}: {text}"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def format_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int
) -> str:
    """A Python warning as relulab's one stderr line.

    Example:
        >>> format_warning(RuntimeWarning("Mean of empty slice"), RuntimeWarning, "/x/np.py", 3)
        'relulab: warning: RuntimeWarning: Mean of empty slice (np.py:3)\\n'
    """
    text = " ".join(str(message).split())
    return f"relulab: warning: {category.__name__}: {text} ({Path(filename).name}:{lineno})\n"


def _show_one_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    stream = file if file is not None else sys.stderr
    try:
        stream.write(format_warning(message, category, filename, lineno))
    except (OSError, ValueError):  # stderr closed: a warning is not worth failing for
        pass


def one_line_warnings() -> None:
    """Print every warning that Python's filters let through as one ``relulab: warning:`` line
    (the command line calls this at start-up, and so does every worker process). Filters are
    untouched: a warning still shows once per place, as Python's default filter decides.

    Example:
        >>> one_line_warnings()  # doctest: +SKIP
    """
    warnings.showwarning = _show_one_line
