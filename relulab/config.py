r"""Experiment configs: frozen dataclasses, with typed ``key=value`` overrides from the CLI.

An experiment declares one dataclass; its field types drive parsing of ``--set key=value``:
``int``, ``float``, ``bool`` (true/false/1/0/yes/no), ``str``, ``Literal[...]`` (one of the
choices), and tuples (comma-separated, ``tuple[float, ...]`` any length or fixed length). A
dataclass may define ``validate(self)`` raising :class:`ConfigError` for semantic checks.

Provenance. A field declared with :func:`setting` says where its default comes from —
``stated`` by the seed, ``derived`` from it, ``inferred`` (the most likely reading, not
confirmed), or an implementation ``choice`` — and, where a preset departs from the seed, the
seed's own value. :func:`provenance` lists them for reports and docs.

Every config also passes generic checks (:func:`check_fields`) before its own, so that a value
that would only fail deep inside a run is refused up front:

* a *seed* (a field named ``seed`` or ``*_seed``, or with ``metadata={"seed": True}``) is an
  integer in :math:`[0, 2^{63})`;
* other integers have :math:`|n| < 2^{31}` and floats are finite with :math:`|x| \le 10^{12}`
  (``metadata={"max_abs": …}`` sets another bound for one field);
* a variable-length tuple (``tuple[float, ...]``) is a *sweep*: non-empty, with distinct values
  (``metadata={"sweep": False}`` exempts a field).

A field declares its own range in :func:`setting` (every element of a tuple is checked):
``positive=True`` (> 0), ``at_least=a`` / ``at_most=b`` (inclusive bounds), ``greater_than=a``
/ ``less_than=b`` (strict bounds) and ``increasing=True`` (a tuple strictly increasing, e.g. a
range ``(low, high)``). A config's ``validate()`` then keeps only the rules that tie several
fields together.

A key given twice in one list of overrides is refused rather than silently taking the last.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, ClassVar, Literal, Protocol, TypeVar, get_args, get_origin

import numpy as np

__all__ = [
    "ConfigError",
    "apply_overrides",
    "check_fields",
    "config_to_dict",
    "override_text",
    "parse_value",
    "Provenance",
    "StudyConfig",
    "alternatives",
    "provenance",
    "setting",
    "undeclared_alternatives",
    "validate",
]


class StudyConfig(Protocol):
    """What every study config is: a (frozen) dataclass instance.

    Structural, not a base class: a config is any dataclass (:func:`dataclasses.is_dataclass`),
    so the studies' configs need not inherit from anything; this is the bound of the config
    type variable of :class:`relulab.experiments.base.Experiment` and
    :class:`relulab.experiments.claims.ClaimSpec`.
    """

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


C = TypeVar("C", bound=StudyConfig)

SEED_LIMIT = 2**63  # seeds lie in [0, 2**63): numpy's SeedSequence and torch both take them
INT_LIMIT = 2**31  # |integer fields| below this: beyond it no size fits in memory
FLOAT_LIMIT = 1e12  # |float fields| at most this: beyond it float32 squares overflow


Provenance = Literal["stated", "derived", "inferred", "choice"]
_PROVENANCES = ("stated", "derived", "inferred", "choice")
_RANGE_CHECKS = {
    "positive": (lambda v, _: v > 0, "must be positive"),
    "at_least": (lambda v, a: v >= a, "must be at least {}"),
    "at_most": (lambda v, b: v <= b, "must be at most {}"),
    "greater_than": (lambda v, a: v > a, "must be greater than {}"),
    "less_than": (lambda v, b: v < b, "must be less than {}"),
}
_CHECKS = ("sweep", "max_abs", "seed", "increasing", *_RANGE_CHECKS)


def setting(
    default: Any,
    provenance: Provenance,
    *,
    seed_value: Any = None,
    note: str = "",
    alternatives: tuple[Any, ...] = (),
    no_alternative: str = "",
    judging: bool = False,
    **checks: Any,
) -> Any:
    """A config field with its provenance (module docstring).

    Args:
        default: the field's default value (immutable: numbers, strings, tuples).
        provenance: ``stated``, ``derived``, ``inferred`` or ``choice``.
        seed_value: the seed's value where the default departs from it (a reduced size, say).
        note: one line on where the value comes from or what it means.
        alternatives: for an ``inferred`` field, the other values a careful reader of the seed
            could pick (``relulab robustness`` runs the experiment at each); the note says where
            they come from.
        no_alternative: for an ``inferred`` field without alternatives, why none is plausible.
        judging: only the claims (criteria, readings, metrics) read this field — never the
            units — so another value is judged on the stored results without recomputing them
            (``relulab robustness`` does; a test checks the units' modules never read it).
        **checks: metadata for the generic field checks (:func:`check_fields`): ``sweep=False``,
            ``max_abs=…``, ``seed=True``, and the field's range: ``positive=True``,
            ``at_least=…``, ``at_most=…``, ``greater_than=…``, ``less_than=…``,
            ``increasing=True``.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class C:
        ...     steps: int = setting(300, "stated", seed_value=1000, note="seed 000: 1000 steps")
        >>> provenance(C())["steps"]["seed_value"]
        1000
    """
    if provenance not in _PROVENANCES:
        raise ValueError(f"provenance must be one of {', '.join(_PROVENANCES)}, got {provenance!r}")
    unknown = sorted(set(checks) - set(_CHECKS))
    if unknown:
        raise ValueError(f"unknown field checks {unknown}; use {', '.join(_CHECKS)}")
    if (alternatives or no_alternative) and provenance != "inferred":
        raise ValueError(f"only an inferred setting has alternatives, not a {provenance} one")
    if alternatives and no_alternative:
        raise ValueError("give alternatives or say why there is none, not both")
    if default in tuple(alternatives):
        raise ValueError(f"the default {default!r} is not an alternative to itself")
    metadata = {
        "provenance": provenance,
        "seed_value": seed_value,
        "note": note,
        "alternatives": tuple(alternatives),
        "no_alternative": no_alternative,
        "judging": judging,
        **checks,
    }
    return dataclasses.field(default=default, metadata=metadata)


def alternatives(config: StudyConfig) -> dict[str, tuple[Any, ...]]:
    """Per inferred field of ``config`` that declares them, its alternative values (other
    readings of the seed; :func:`setting`), in field order.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class C:
        ...     levels: str = setting("centred", "inferred", alternatives=("zero_one",))
        ...     steps: int = setting(300, "stated")
        >>> alternatives(C())
        {'levels': ('zero_one',)}
    """
    return {
        f.name: f.metadata["alternatives"]
        for f in dataclasses.fields(config)
        if f.metadata.get("alternatives")
    }


def undeclared_alternatives(config: StudyConfig) -> list[str]:
    """The inferred fields of ``config`` that neither declare alternatives nor say why none is
    plausible (``relulab robustness`` cannot vary them, and nobody said why).

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class C:
        ...     tol: float = setting(0.1, "inferred")
        >>> undeclared_alternatives(C())
        ['tol']
    """
    return [
        f.name
        for f in dataclasses.fields(config)
        if f.metadata.get("provenance") == "inferred"
        and not f.metadata.get("alternatives")
        and not f.metadata.get("no_alternative")
    ]


def provenance(config: StudyConfig) -> dict[str, dict[str, Any]]:
    """Per field: ``value``, ``provenance`` (``""`` if undeclared), ``seed_value``, ``note`` and
    ``departs`` (the value differs from the seed's stated one)."""
    rows = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        seed_value = f.metadata.get("seed_value")
        tag = f.metadata.get("provenance", "")
        if seed_value is None and tag == "stated" and value != f.default:
            seed_value = f.default  # a preset changed a stated value: the default is the seed's
        rows[f.name] = {
            "value": list(value) if isinstance(value, tuple) else value,
            "provenance": tag,
            "seed_value": list(seed_value) if isinstance(seed_value, tuple) else seed_value,
            "note": f.metadata.get("note", ""),
            "departs": seed_value is not None and value != seed_value,
            "alternatives": [_json_ready(a) for a in f.metadata.get("alternatives", ())],
        }
    return rows


def override_text(key: str, value: Any) -> str:
    """``key=value`` as ``--set`` reads it back: tuples comma-joined, booleans ``true`` /
    ``false``, numbers by ``repr`` (exact for floats).

    Example:
        >>> override_text("levels", (-1.0, 1.0)), override_text("centre", False)
        ('levels=-1.0,1.0', 'centre=false')
    """

    def text(item: Any) -> str:
        if isinstance(item, bool):
            return "true" if item else "false"
        if isinstance(item, float):
            return repr(item)
        return str(item)

    if isinstance(value, tuple | list):
        return f"{key}={','.join(text(item) for item in value)}"
    return f"{key}={text(value)}"


def _json_ready(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


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


def _is_seed(spec: dataclasses.Field) -> bool:
    return spec.name == "seed" or spec.name.endswith("_seed") or bool(spec.metadata.get("seed"))


def _is_sweep(spec: dataclasses.Field, kind: Any) -> bool:
    args = get_args(kind)
    variable = get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis
    return variable and spec.metadata.get("sweep", True)


def _check_number(spec: dataclasses.Field, value: Any) -> None:
    name = spec.name
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if _is_seed(spec):
        if not isinstance(value, int) or not 0 <= value < SEED_LIMIT:
            raise ConfigError(f"{name} must be an integer in [0, 2**63), got {value}")
        return
    if isinstance(value, int):
        bound = spec.metadata.get("max_abs", INT_LIMIT - 1)
        if abs(value) > bound:
            raise ConfigError(f"{name}: {value} is out of range (|{name}| ≤ {bound})")
        return
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be finite, got {value}")
    bound = spec.metadata.get("max_abs", FLOAT_LIMIT)
    if abs(value) > bound:
        raise ConfigError(f"{name}: {value:g} is out of range (|{name}| ≤ {bound:g})")


def _check_range(spec: dataclasses.Field, value: Any) -> None:
    """The field's declared range (:func:`setting`'s checks), element by element."""
    items = value if isinstance(value, tuple) else (value,)
    for name, (satisfied, message) in _RANGE_CHECKS.items():
        if name not in spec.metadata or spec.metadata[name] is False:
            continue
        limit = spec.metadata[name]
        for item in items:
            if isinstance(item, int | float) and not isinstance(item, bool):
                if not satisfied(item, limit):
                    got = value if len(items) == 1 else f"{item} in {value}"
                    raise ConfigError(f"{spec.name} {message.format(limit)}, got {got}")
    if spec.metadata.get("increasing") and isinstance(value, tuple):
        if any(not a < b for a, b in zip(value[:-1], value[1:], strict=True)):
            raise ConfigError(f"{spec.name} must be strictly increasing, got {value}")


def _check_representable(name: str, value: Any, dtype: Any) -> None:
    """Refuse a float setting that the run's floating dtype (the config's ``dtype`` field)
    turns into 0 or infinity: ``eps = 1e-300`` is 0 in float32 and trains NaN."""
    if not isinstance(dtype, str) or not isinstance(value, float) or value == 0:
        return
    try:
        info = np.finfo(dtype)
    except TypeError:
        return
    if abs(value) < info.tiny or abs(value) > info.max:
        where = "underflows to 0" if abs(value) < info.tiny else "overflows to infinity"
        raise ConfigError(
            f"{name} = {value:g} {where} in {dtype} (the run's dtype holds magnitudes "
            f"{float(info.tiny):.3g} … {float(info.max):.3g}); choose a representable value or "
            "dtype=float64"
        )


def check_fields(config: StudyConfig) -> None:
    """The generic checks of every config field (see the module docstring).

    Raises:
        ConfigError: naming the field and the rule it breaks.

    Example:
        >>> check_fields(dataclasses.replace(config, shifts=(0.0, 0.0)))  # doctest: +SKIP
        ConfigError: shifts is a sweep and needs distinct values, got 0.0 twice
    """
    hints = typing.get_type_hints(type(config))
    dtype = getattr(config, "dtype", None)
    for spec in dataclasses.fields(config):
        value = getattr(config, spec.name)
        for item in value if isinstance(value, tuple) else (value,):
            _check_number(spec, item)
            _check_representable(spec.name, item, dtype)
        _check_range(spec, value)
        if _is_sweep(spec, hints[spec.name]):
            if not value:
                raise ConfigError(f"{spec.name} is a sweep and needs at least one value")
            seen: set[Any] = set()
            for item in value:
                if item in seen:
                    raise ConfigError(
                        f"{spec.name} is a sweep and needs distinct values, got {item} twice"
                    )
                seen.add(item)


def validate(config: StudyConfig) -> None:
    """The generic field checks, then the config's own ``validate()`` if it has one."""
    check_fields(config)
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
        if key in changes:
            raise ConfigError(f"{key} is set twice; give each key once")
        changes[key] = parse_value(text, hints[key], key)
    updated = dataclasses.replace(config, **changes)
    validate(updated)
    return updated


def config_to_dict(config: StudyConfig) -> dict[str, Any]:
    """Plain JSON-ready dict (tuples become lists)."""

    def plain(value: Any) -> Any:
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        return value

    return {key: plain(value) for key, value in dataclasses.asdict(config).items()}
