"""Errors as one line: how relulab reports a failure it did not foresee."""

from __future__ import annotations

__all__ = ["describe_error"]


def describe_error(error: BaseException, limit: int = 300) -> str:
    """``"TypeName: the message"`` on one line, at most ``limit`` characters.

    Example:
        >>> describe_error(ValueError("bad\\nvalue"))
        'ValueError: bad value'
    """
    text = " ".join(str(error).split()) or "(no message)"
    line = f"{type(error).__name__}: {text}"
    return line if len(line) <= limit else line[: limit - 1] + "…"
