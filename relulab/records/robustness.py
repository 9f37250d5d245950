r"""A robustness run's record, ``robustness.json``: every claim's verdict under every plausible
reading of the settings its seed left unsaid.

Per reading (:class:`ReadingRecord`): its name, the fields it changes from the preset, their
values, whether it finished, and ``judged_on`` (the reading whose stored units it was judged on,
for a reading of ``judging`` fields only). Per claim (:class:`ClaimRobustness`): its verdict at
the preset and in each reading, in how many of the readings that test it it holds, its standing
(:func:`classify`) and the fields whose alternatives flip it; from issue 42 also its ``kind``
(claim or check), ``registration`` (the hash of its criterion at the preset,
:mod:`relulab.registry`), so a page can tell whether the record still speaks for the claim as the
code registers it today, and ``post_hoc``: its verdict at the preset without each choice made
after looking at data.

>>> classify(["holds", "not tested", "holds"]), classify(["holds", "fails"])
('robust holds', 'depends')
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from relulab.reading import InputFileError, read_json
from relulab.records.summary import RegistrationRecord, summary_text

__all__ = [
    "ROBUSTNESS_FILENAME",
    "ROBUSTNESS_PAGE",
    "ROBUSTNESS_SCHEMA",
    "STANDINGS",
    "ClaimRobustness",
    "ReadingRecord",
    "RobustnessRecord",
    "RobustnessRun",
    "classify",
    "find_robustness_runs",
    "read_robustness_run",
    "robustness_for",
]

ROBUSTNESS_SCHEMA = 2  # 1: before issue 42; 2: kind and registration per claim
STANDINGS = ("robust holds", "robust fails", "robust inconclusive", "depends", "not tested")


def classify(verdicts: Sequence[str]) -> str:
    """A claim's standing over readings: ``robust holds`` / ``robust fails`` / ``robust
    inconclusive`` when every reading that tests it agrees, ``depends`` when they differ,
    ``not tested`` when none tests it."""
    tested = {v for v in verdicts if v not in ("not tested", "missing")}
    if not tested:
        return "not tested"
    return f"robust {tested.pop()}" if len(tested) == 1 else "depends"


def _natural(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{what} is {value!r}, not a count")
    return value


@dataclass(frozen=True)
class ReadingRecord:
    """One reading of a robustness run."""

    name: str
    fields: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    finished: bool = True
    judged_on: str | None = None

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> ReadingRecord:
        return cls(
            str(row["name"]),
            tuple(str(f) for f in row.get("fields") or ()),
            dict(row.get("settings") or {}),
            bool(row.get("finished", True)),
            row.get("judged_on"),
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "fields": list(self.fields), "settings": dict(self.settings)}


@dataclass(frozen=True)
class ClaimRobustness:
    """One claim across the readings of a robustness run."""

    id: str
    statement: str = ""
    beyond_seed: bool = False
    preset: str = "missing"
    verdicts: Mapping[str, str] = field(default_factory=dict)
    holds: int = 0
    tested: int = 0
    standing: str = "not tested"
    flipped_by: tuple[str, ...] = ()
    kind: str = "claim"
    registration: str = ""
    post_hoc: Mapping[str, str] = field(default_factory=dict)  # at the preset: what → verdict

    def __post_init__(self) -> None:
        if self.standing not in STANDINGS:
            raise ValueError(f"claim {self.id} has no known standing ({self.standing!r:.40})")
        if self.holds > self.tested:
            raise ValueError(f"claim {self.id} holds in {self.holds} of {self.tested} readings")

    @classmethod
    def from_json(cls, row: Any) -> ClaimRobustness:
        """A row of ``claims``, checked for what the pages show."""
        if not isinstance(row, Mapping) or not isinstance(row.get("id"), str):
            raise TypeError(f"a claim without an id: {row!r:.60}")
        flipped = row.get("flipped_by", [])
        if not isinstance(flipped, list) or not all(isinstance(f, str) for f in flipped):
            raise TypeError(f"claim {row['id']}: flipped_by names no fields")
        verdicts = row.get("verdicts") or {}
        if not isinstance(verdicts, Mapping):
            raise TypeError(f"claim {row['id']}: verdicts is not a mapping")
        return cls(
            row["id"],
            str(row.get("statement") or ""),
            bool(row.get("beyond_seed")),
            str(row.get("preset") or "missing"),
            {str(k): str(v) for k, v in verdicts.items()},
            _natural(row.get("holds"), "holds"),
            _natural(row.get("tested"), "tested"),
            cast(str, row.get("standing")),  # any other value: __post_init__ refuses it
            tuple(flipped),
            str(row.get("kind") or "claim"),
            str(row.get("registration") or ""),
            {str(k): str(v) for k, v in (row.get("post_hoc") or {}).items()},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "verdicts": dict(self.verdicts),
            "flipped_by": list(self.flipped_by),
            "post_hoc": dict(self.post_hoc),
        }


@dataclass(frozen=True)
class RobustnessRecord:
    """``robustness.json`` (module docstring). ``summary``: claims per standing and
    ``depends_on`` (field → the claims it flips); ``fields``: each varied field's provenance
    row; ``registration``: the preset's registration when the record was made."""

    experiment: str
    preset: str
    readings: tuple[ReadingRecord, ...]
    claims: tuple[ClaimRobustness, ...]
    summary: Mapping[str, Any] = field(default_factory=dict)
    fields: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    registration: RegistrationRecord | None = None
    schema: int = ROBUSTNESS_SCHEMA

    def claim(self, claim_id: str) -> ClaimRobustness | None:
        return next((c for c in self.claims if c.id == claim_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "preset": self.preset,
            "readings": [r.to_json() for r in self.readings],
            "claims": [c.to_json() for c in self.claims],
            "summary": dict(self.summary),
            "fields": {k: dict(v) for k, v in self.fields.items()},
            "registration": None if self.registration is None else asdict(self.registration),
            "schema": self.schema,
        }

    def to_json(self) -> str:
        return summary_text(self.to_dict())

    @classmethod
    def from_dict(cls, content: Any) -> RobustnessRecord:
        """A record back, checked for the shape every page relies on.

        Raises:
            TypeError, ValueError: a record of another shape.
        """
        if not isinstance(content, Mapping) or not isinstance(content.get("experiment"), str):
            raise TypeError("it names no experiment")
        preset = content.get("preset") or ""
        if not content["experiment"] or not isinstance(preset, str):
            raise TypeError("it names no experiment or no preset")
        if not isinstance(content.get("claims"), list):
            raise TypeError("it lists no claims")
        registration = content.get("registration")
        return cls(
            content["experiment"],
            preset,
            tuple(ReadingRecord.from_json(r) for r in content.get("readings") or ()),
            tuple(ClaimRobustness.from_json(row) for row in content["claims"]),
            dict(content.get("summary") or {}),
            dict(content.get("fields") or {}),
            RegistrationRecord(**registration) if isinstance(registration, Mapping) else None,
            int(content.get("schema") or 1),
        )

    @classmethod
    def from_json(cls, text: str) -> RobustnessRecord:
        return cls.from_dict(json.loads(text))


# ---------------------------------------------------------------------------------------------
# Finished robustness runs, read back for the index and the reports.
# ---------------------------------------------------------------------------------------------
ROBUSTNESS_FILENAME = "robustness.json"
ROBUSTNESS_PAGE = "robustness.html"


@dataclass(frozen=True)
class RobustnessRun:
    """A finished robustness run as the pages show it: its record, the ``robustness.json`` it
    was read from and its page (``None`` when there is no ``robustness.html``)."""

    record: RobustnessRecord
    path: Path
    page: Path | None

    @property
    def experiment(self) -> str:
        return self.record.experiment

    @property
    def preset(self) -> str:
        return self.record.preset


def read_robustness_run(directory: str | Path) -> RobustnessRun:
    """The robustness run in ``directory`` (its ``robustness.json``), checked before any page
    shows it.

    Raises:
        ValueError: no ``robustness.json``, or one that is unreadable or of another shape.
    """
    path = Path(directory) / ROBUSTNESS_FILENAME
    try:
        record = RobustnessRecord.from_dict(read_json(path, "robustness record"))
    except InputFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path} is not a readable robustness record ({type(error).__name__}: "
            f"{' '.join(str(error).split())}); re-run `relulab robustness` to rebuild it"
        ) from None
    page = path.with_name(ROBUSTNESS_PAGE)
    return RobustnessRun(record, path, page if page.is_file() else None)


def _record_dirs(directory: Path) -> list[Path]:
    """``directory`` when it holds a ``robustness.json``, else its sub-directories that do."""
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory")
    if os.path.lexists(directory / ROBUSTNESS_FILENAME):
        return [directory]
    try:
        children = sorted(directory.iterdir())
    except OSError as error:
        raise ValueError(f"cannot read {directory} ({error.strerror or error})") from None
    found = [child for child in children if os.path.lexists(child / ROBUSTNESS_FILENAME)]
    if not found:
        raise ValueError(
            f"{directory} holds no robustness run (no {ROBUSTNESS_FILENAME} in it or its "
            "sub-directories)"
        )
    return found


def find_robustness_runs(directory: str | Path) -> dict[str, RobustnessRun]:
    """The robustness runs in ``directory`` by experiment: ``directory`` itself when it is
    one, else each sub-directory that is one (``results/robustness/quick/<experiment>/``).

    Raises:
        ValueError: ``directory`` is no directory or holds no robustness run, a record is
            unreadable, or two records are of the same experiment.
    """
    runs: dict[str, RobustnessRun] = {}
    for folder in _record_dirs(Path(directory)):
        run = read_robustness_run(folder)
        if run.experiment in runs:
            raise ValueError(
                f"{directory} holds two robustness runs of {run.experiment}: "
                f"{runs[run.experiment].path.parent} and {folder}"
            )
        runs[run.experiment] = run
    return runs


def robustness_for(
    runs: Mapping[str, RobustnessRun], reported: Iterable[tuple[str, str]], directory: str | Path
) -> dict[str, RobustnessRun]:
    """The robustness runs of the experiments a page reports, each at the preset reported.

    Args:
        runs: from :func:`find_robustness_runs`.
        reported: (experiment, preset) of every run the page shows.
        directory: where ``runs`` were found (for the messages).

    Raises:
        ValueError: none of the reported experiments has a robustness run, or one has it at
            another preset than the run reported.
    """
    reported = list(reported)
    chosen = {name: runs[name] for name, _ in reported if name in runs}
    if not chosen:
        raise ValueError(
            f"{directory} holds no robustness run of "
            f"{', '.join(dict.fromkeys(name for name, _ in reported))} (only of "
            f"{', '.join(runs)})"
        )
    for name, preset in reported:
        run = chosen.get(name)
        if run is not None and run.preset and run.preset != preset:
            raise ValueError(
                f"{run.path} is a robustness run of {name} at preset {run.preset}, not at "
                f"{preset} as the run reported"
            )
    return chosen
