"""The one error every image loader raises: a :class:`ValueError` whose message is one line."""

from __future__ import annotations

__all__ = ["ImageDataError", "one_line"]


class ImageDataError(ValueError):
    """Missing or malformed image data: one line, meant to become a usage error (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(str(text).split())
