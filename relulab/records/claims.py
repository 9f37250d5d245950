r"""A claim's record: one statement of a seed, what it leads us to expect, what was measured,
and the verdict — or a *check*, an identity of the setup that the run verifies but never counts.

:class:`ClaimRecord` is what ``summary.json`` lists under ``claims`` (a seed statement the
experiment's model could fail) and under ``checks`` (an identity of the setup, or relulab's
theory against its own simulation: kept and shown, never in the count). Its JSON row is part of
the run contract: ``id``, ``statement``, ``expected``, ``measured``, ``passed`` (true exactly when
the verdict is ``holds``), ``detail``, then the fields added since — ``source``, ``verdict``,
``n``, ``ci_low``, ``ci_high``, ``ci_level``, ``unit``, ``scale``, ``figure``, ``scope``,
``beyond_seed``, ``why_not_tested`` and, from issue 42, ``kind``, ``why_check``,
``counterexample``, ``post_hoc`` (:class:`PostHocRecord`: the verdict without each choice made
after looking at data), ``diverged`` (per group: networks diverged, networks),
``registration`` (the hash of the claim's registered criterion, :mod:`relulab.registry`) and,
from issue 43, ``stand_in``: the data it was measured on when they are not the seed's (a
stand-in data set: the verdict speaks for the mechanism only and is counted apart).

>>> record = ClaimRecord("x", "x is big.", "x > 1 — s", 0.5, False)
>>> record.verdict, ClaimRecord.from_json(record.to_json()) == record
('fails', True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

__all__ = [
    "KINDS",
    "VERDICTS",
    "ClaimRecord",
    "Kind",
    "PostHocRecord",
    "Verdict",
    "finite_or_none",
]

Verdict = Literal["holds", "fails", "inconclusive", "not tested"]
VERDICTS: tuple[Verdict, ...] = ("holds", "fails", "inconclusive", "not tested")
Kind = Literal["claim", "check"]
KINDS: tuple[Kind, ...] = ("claim", "check")


def finite_or_none(value: Any) -> float | None:
    """A number as JSON keeps it: ``None`` for a missing or non-finite value.

    Example:
        >>> finite_or_none(float("nan")), finite_or_none(2)
        (None, 2.0)
    """
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _number(value: Any) -> float:
    """A stored measurement back as a float (``None``: NaN)."""
    return math.nan if value is None else float(value)


@dataclass(frozen=True)
class PostHocRecord:
    """A point, tolerance, window or criterion chosen after looking at data, and the claim's
    verdict without it (``measured`` its headline value then)."""

    what: str
    why: str
    verdict: Verdict
    measured: float = math.nan
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "measured": finite_or_none(self.measured)}

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> PostHocRecord:
        return cls(
            str(row["what"]),
            str(row["why"]),
            row["verdict"],
            _number(row.get("measured")),
            str(row.get("detail") or ""),
        )


@dataclass(frozen=True)
class ClaimRecord:
    """One claim (or check) as a run records it.

    Build records with :func:`relulab.experiments.claims.claim` (or a
    :class:`~relulab.experiments.claims.ClaimSpec`) rather than by hand: it fills ``expected``,
    ``verdict`` and the interval fields consistently. A record built with only ``passed`` takes
    its verdict from it.
    """

    id: str
    statement: str
    expected: str
    measured: float
    passed: bool
    detail: str = ""
    source: str = ""
    verdict: Verdict | Literal[""] = ""
    n: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    unit: str = ""
    scale: str = ""
    figure: str = ""
    scope: str = ""
    beyond_seed: bool = False
    why_not_tested: str = ""
    kind: Kind = "claim"
    why_check: str = ""
    counterexample: str = ""
    post_hoc: tuple[PostHocRecord, ...] = field(default=())
    diverged: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    registration: str = ""
    stand_in: str = ""

    def __post_init__(self) -> None:
        if not self.verdict:  # a hand-built record: the verdict is its pass/fail
            object.__setattr__(self, "verdict", "holds" if self.passed else "fails")
        if self.kind not in KINDS:
            raise ValueError(f"a claim record's kind is one of {KINDS}, not {self.kind!r}")
        object.__setattr__(self, "post_hoc", tuple(self.post_hoc))

    @property
    def is_check(self) -> bool:
        return self.kind == "check"

    def to_json(self, preset: str | None = None) -> dict[str, Any]:
        """The row ``summary.json`` lists (non-finite numbers as ``None``); ``preset`` adds the
        preset the run was made at, as the rows have carried since issue 25."""
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        row.update(
            measured=finite_or_none(self.measured),
            passed=bool(self.passed),
            ci_low=finite_or_none(self.ci_low),
            ci_high=finite_or_none(self.ci_high),
            post_hoc=[p.to_json() for p in self.post_hoc],
            diverged={k: [int(a), int(b)] for k, (a, b) in self.diverged.items()},
        )
        if preset is not None:
            row["preset"] = preset
        return row

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> ClaimRecord:
        """A row of ``summary.json`` back as a record; rows written before a field existed read
        with its default (a row without ``verdict`` is judged by ``passed``)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in row.items() if k in known}
        values["id"] = str(row["id"])
        values.setdefault("statement", "")
        values.setdefault("expected", "")
        values.setdefault("passed", row.get("verdict") == "holds")
        values["measured"] = _number(values.get("measured"))
        values["post_hoc"] = tuple(PostHocRecord.from_json(p) for p in row.get("post_hoc") or ())
        values["diverged"] = {
            str(k): (int(v[0]), int(v[1])) for k, v in (row.get("diverged") or {}).items()
        }
        if values.get("verdict") not in VERDICTS:
            values["verdict"] = ""
        return cls(**values)
