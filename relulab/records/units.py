r"""What one unit of work produced, and the schema a study declares for it.

:class:`UnitResult` is the stored payload of one unit (one batched computation): per network its
condition, recorded curves ``(S, T)``, final values and divergence flag, plus shared arrays.

A study declares each kind of unit it stores as a :class:`UnitView`: a frozen dataclass whose
fields name the unit's curves (:func:`curve`), final values (:func:`final`) and shared arrays
(:func:`array`). Readers then reach the data by attribute, not by a string typed where it is
read, and a stored unit is checked against its declaration before anything is computed from it
(:meth:`UnitView.check`; ``relulab rejudge`` and ``relulab report`` refuse a unit that lacks a
declared field, naming it):

>>> import numpy as np
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Spectra(UnitView):
...     singular: np.ndarray = curve()
...     sigma1: np.ndarray = final()
>>> result = UnitResult.forward_only(
...     [{"draw": 0}], np.arange(3), {"singular": np.ones((1, 3))}, {"sigma1": np.ones(1)})
>>> Spectra.read(result).sigma1
array([1.])
>>> Spectra.schema()
UnitSchema(curves=('singular',), final=('sigma1',), arrays=(), optional=())

A unit may store a curve and a final value under one name: give the field another name and the
stored one as ``key`` (``final_loss: np.ndarray = final(key="loss")``).

The arrays of a view are the unit's own (no copy), so a test that edits ``view.sigma1[i]``
edits the unit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

__all__ = [
    "UnitResult",
    "UnitSchema",
    "UnitSchemaError",
    "UnitView",
    "array",
    "curve",
    "final",
]

Place = Literal["curves", "final", "arrays"]
V = TypeVar("V", bound="UnitView")


class UnitSchemaError(ValueError):
    """A unit's stored data do not match what its study declares (a field missing)."""


@dataclass
class UnitResult:
    """What one unit produced: per-network conditions, curves ``(S, T)`` and final values."""

    conditions: list[dict[str, Any]]
    steps: np.ndarray
    curves: dict[str, np.ndarray]
    final: dict[str, np.ndarray]
    diverged: np.ndarray
    diverged_step: np.ndarray
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def n_networks(self) -> int:
        return len(self.conditions)

    @classmethod
    def from_training(
        cls,
        result: Any,
        conditions: list[dict[str, Any]],
        arrays: dict[str, np.ndarray] | None = None,
    ) -> UnitResult:
        """Wrap an engine ``TrainResult`` (steps, curves, final, diverged) with its conditions."""
        if len(conditions) != len(result.diverged):
            raise ValueError(f"{len(conditions)} conditions for {len(result.diverged)} networks")
        return cls(
            conditions,
            result.steps,
            result.curves,
            result.final,
            result.diverged,
            result.diverged_step,
            arrays or {},
        )

    @classmethod
    def forward_only(
        cls,
        conditions: list[dict[str, Any]],
        steps: np.ndarray,
        curves: dict[str, np.ndarray],
        final: dict[str, np.ndarray],
        arrays: dict[str, np.ndarray] | None = None,
    ) -> UnitResult:
        """A unit that measured without training (a forward pass): no network diverged.

        ``steps`` is the unit's x-axis: layers, singular-value indices, ...
        """
        n = len(conditions)
        no_divergence = np.zeros(n, bool), np.full(n, -1)
        return cls(conditions, steps, curves, final, *no_divergence, arrays or {})


@dataclass(frozen=True)
class UnitSchema:
    """The names a unit stores, by place; ``optional`` names may be absent (older stores)."""

    curves: tuple[str, ...] = ()
    final: tuple[str, ...] = ()
    arrays: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def missing(self, result: UnitResult) -> list[str]:
        """``place 'name'`` for every declared, non-optional name the unit lacks."""
        stored = {"curves": result.curves, "final": result.final, "arrays": result.arrays}
        return [
            f"{place[:-1] if place != 'final' else place} {name!r}"
            for place in ("curves", "final", "arrays")
            for name in getattr(self, place)
            if name not in stored[place] and name not in self.optional
        ]


def _declared(place: Place, optional: bool, key: str | None) -> Any:
    return field(metadata={"place": place, "optional": optional, "key": key})


def curve(optional: bool = False, key: str | None = None) -> Any:
    """A field of a :class:`UnitView`: a recorded curve, one row per network ``(S, T)``, stored
    under ``key`` (default: the field's name)."""
    return _declared("curves", optional, key)


def final(optional: bool = False, key: str | None = None) -> Any:
    """A field of a :class:`UnitView`: a final value per network ``(S,)``, stored under ``key``
    (default: the field's name; a unit may store a curve and a final value of one name, e.g.
    ``final_loss: np.ndarray = final(key="loss")`` beside ``loss: np.ndarray = curve()``)."""
    return _declared("final", optional, key)


def array(optional: bool = False, key: str | None = None) -> Any:
    """A field of a :class:`UnitView`: an array the unit shares across its networks, stored
    under ``key`` (default: the field's name)."""
    return _declared("arrays", optional, key)


_RESERVED = frozenset({"result", "conditions", "steps", "diverged", "n_networks"})


@dataclass(frozen=True)
class UnitView:
    """A typed reading of one kind of unit (module docstring). Subclass it as a frozen
    dataclass whose fields are :func:`curve`, :func:`final` or :func:`array`; ``result`` is
    the unit read (conditions, steps, divergence)."""

    result: UnitResult = field(repr=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        clash = sorted(set(cls.__dict__.get("__annotations__", {})) & (_RESERVED - {"result"}))
        if clash:
            raise TypeError(f"{cls.__name__}: {clash} name a view's own attributes")

    @classmethod
    def _fields(cls) -> dict[str, tuple[Place, bool, str]]:
        """Field name → (place, optional, the name it is stored under)."""
        return {
            f.name: (f.metadata["place"], f.metadata["optional"], f.metadata["key"] or f.name)
            for f in dataclasses.fields(cls)
            if "place" in f.metadata
        }

    @classmethod
    def schema(cls) -> UnitSchema:
        """The declared stored names by place."""
        places = cls._fields().values()
        return UnitSchema(
            **{
                place: tuple(key for p, _, key in places if p == place)
                for place in ("curves", "final", "arrays")
            },
            optional=tuple(key for _, opt, key in places if opt),
        )

    @classmethod
    def check(cls, result: UnitResult, unit: str = "") -> None:
        """Raise :class:`UnitSchemaError` naming every declared field the unit lacks."""
        missing = cls.schema().missing(result)
        if missing:
            where = f"unit {unit!r}" if unit else "the unit"
            raise UnitSchemaError(
                f"{where} does not hold what {cls.__name__} declares: missing " + ", ".join(missing)
            )

    @classmethod
    def read(cls: type[V], result: UnitResult, unit: str = "") -> V:
        """The unit as this view, checked first (:meth:`check`); an optional field the unit
        lacks reads ``None``."""
        cls.check(result, unit)
        stored: Mapping[str, Mapping[str, np.ndarray]] = {
            "curves": result.curves,
            "final": result.final,
            "arrays": result.arrays,
        }
        values = {name: stored[place].get(key) for name, (place, _, key) in cls._fields().items()}
        return cls(result, **values)

    @property
    def conditions(self) -> list[dict[str, Any]]:
        return self.result.conditions

    @property
    def steps(self) -> np.ndarray:
        return self.result.steps

    @property
    def diverged(self) -> np.ndarray:
        return self.result.diverged

    @property
    def n_networks(self) -> int:
        return self.result.n_networks
