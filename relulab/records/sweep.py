r"""A sweep's record, ``sweep.json``: the grid, and per point its settings and claims.

Written by ``relulab sweep`` (and by ``relulab robustness``, whose readings are a sweep's
points): ``{experiment, preset, grid, fixed, points: [{name, settings, claims, checks, metrics,
error, finished, judged_on}]}``. A point's ``name`` is one directory name inside the sweep
(never ``..``, a path, or empty): :meth:`SweepRecord.from_dict` refuses any other.

>>> record = SweepRecord.from_dict({"experiment": "toy", "points": [{"name": "d=4"}]})
>>> record.points[0].name, record.points[0].finished
('d=4', False)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from relulab.records.claims import ClaimRecord, finite_or_none
from relulab.records.summary import SummaryRecord, summary_text

__all__ = ["SweepPointRecord", "SweepRecord"]


@dataclass(frozen=True)
class SweepPointRecord:
    """One point of a sweep: its directory, settings, and its claims once finished."""

    name: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    claims: tuple[ClaimRecord, ...] = ()
    checks: tuple[ClaimRecord, ...] = ()
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    error: str | None = None
    finished: bool = False
    judged_on: str | None = None

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or name in ("", ".", "..") or PurePath(name).name != name:
            raise ValueError(f"point {name!r} is not a directory name of the sweep")

    @classmethod
    def of_summary(
        cls,
        name: str,
        settings: Mapping[str, Any],
        summary: SummaryRecord,
        judged_on: str | None = None,
    ) -> SweepPointRecord:
        """A finished point from its run's summary."""
        return cls(
            name,
            settings,
            summary.claims,
            summary.checks,
            summary.metrics,
            None,
            True,
            judged_on,
        )

    def to_json(self) -> dict[str, Any]:
        preset = None
        row = {
            "name": self.name,
            "settings": dict(self.settings),
            "claims": [c.to_json(preset) for c in self.claims],
            "checks": [c.to_json(preset) for c in self.checks],
            "metrics": {k: finite_or_none(v) for k, v in self.metrics.items()},
            "error": self.error,
            "finished": self.finished,
        }
        if self.judged_on is not None:
            row["judged_on"] = self.judged_on
        return row

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> SweepPointRecord:
        return cls(
            row["name"],
            dict(row.get("settings") or {}),
            tuple(ClaimRecord.from_json(c) for c in row.get("claims") or ()),
            tuple(ClaimRecord.from_json(c) for c in row.get("checks") or ()),
            dict(row.get("metrics") or {}),
            row.get("error"),
            bool(row.get("finished")),
            row.get("judged_on"),
        )


@dataclass(frozen=True)
class SweepRecord:
    """``sweep.json`` (module docstring)."""

    experiment: str
    preset: str = ""
    grid: Mapping[str, list[str]] = field(default_factory=dict)
    fixed: tuple[str, ...] = ()
    points: tuple[SweepPointRecord, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "preset": self.preset,
            "grid": {k: list(v) for k, v in self.grid.items()},
            "fixed": list(self.fixed),
            "points": [p.to_json() for p in self.points],
        }

    def to_json(self) -> str:
        return summary_text(self.to_dict())

    @classmethod
    def from_dict(cls, content: Any) -> SweepRecord:
        """A record back, checked for the shape every reader relies on.

        Raises:
            TypeError, KeyError, ValueError: a record of another shape.
        """
        if not isinstance(content, Mapping) or not isinstance(content.get("experiment"), str):
            raise TypeError("the experiment is not a name")
        grid = content.get("grid") or {}
        if not isinstance(grid, Mapping):
            raise TypeError("the grid is not a mapping")
        return cls(
            content["experiment"],
            str(content.get("preset") or ""),
            {str(k): [str(v) for v in values] for k, values in grid.items()},
            tuple(str(f) for f in content.get("fixed") or ()),
            tuple(SweepPointRecord.from_json(p) for p in content["points"]),
        )

    @classmethod
    def from_json(cls, text: str) -> SweepRecord:
        return cls.from_dict(json.loads(text))
