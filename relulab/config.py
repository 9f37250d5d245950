"""Experiment configs: frozen dataclasses, with typed ``key=value`` overrides from the CLI.

An experiment declares one dataclass; its field types drive parsing of ``--set key=value``:
``int``, ``float``, ``bool`` (true/false/1/0/yes/no), ``str``, ``Literal[...]`` (one of the
choices), and tuples (comma-separated, ``tuple[float, ...]`` any length or fixed length). A
dataclass may define ``validate(self)`` raising :class:`ConfigError` for semantic checks.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, Literal, TypeVar, get_args, get_origin

__all__ = ["ConfigError", "apply_overrides", "config_to_dict", "parse_value", "validate"]

C = TypeVar("C")


class ConfigError(ValueError):
    """An unknown key, or a value of the wrong type or out of range."""


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _parse_scalar(text: str, kind: Any, key: str) -> Any:
    text = text.strip()
    if get_origin(kind) is Literal:
        choices = get_args(kind)
        for choice in choices:
            if text == str(choice):
                return choice
        raise ConfigError(f"{key}: {text!r} is not one of {', '.join(map(str, choices))}")
    if kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ConfigError(f"{key}: expected true or false, got {text!r}")
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{key}: expected an integer, got {text!r}") from None
    if kind is float:
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{key}: expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise ConfigError(f"{key}: expected a finite number, got {text!r}")
        return value
    if kind is str:
        return text
    raise ConfigError(f"{key}: fields of type {kind!r} cannot be set from the command line")


def parse_value(text: str, kind: Any, key: str = "value") -> Any:
    """Parse ``text`` as a value of the annotated type ``kind``."""
    if get_origin(kind) is tuple:
        args = get_args(kind)
        items = [item for item in text.split(",") if item.strip()]
        if len(args) == 2 and args[1] is Ellipsis:
            if not items:
                raise ConfigError(f"{key}: expected a comma-separated list, got {text!r}")
            return tuple(_parse_scalar(item, args[0], key) for item in items)
        if len(items) != len(args):
            raise ConfigError(f"{key}: expected {len(args)} comma-separated values, got {text!r}")
        return tuple(_parse_scalar(item, arg, key) for item, arg in zip(items, args, strict=True))
    return _parse_scalar(text, kind, key)


def validate(config: Any) -> None:
    """Run the config's own ``validate()`` if it has one."""
    check = getattr(config, "validate", None)
    if callable(check):
        check()


def apply_overrides(config: C, assignments: list[str]) -> C:
    """Return a copy of ``config`` with each ``key=value`` applied and the result validated."""
    hints = typing.get_type_hints(type(config))
    names = [f.name for f in dataclasses.fields(config)]
    changes: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        key = key.strip()
        if not sep:
            raise ConfigError(f"--set expects key=value, got {assignment!r}")
        if key not in names:
            raise ConfigError(f"unknown config key {key!r}; valid keys: {', '.join(names)}")
        changes[key] = parse_value(text, hints[key], key)
    updated = dataclasses.replace(config, **changes)
    validate(updated)
    return updated


def config_to_dict(config: Any) -> dict[str, Any]:
    """Plain JSON-ready dict (tuples become lists)."""

    def plain(value: Any) -> Any:
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        return value

    return {key: plain(value) for key, value in dataclasses.asdict(config).items()}
