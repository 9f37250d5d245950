"""The run store: one SQLite file (``runs.sqlite``) per run directory.

Layout. ``meta`` holds the experiment, preset, full config and library versions. A run is split
into *units* (one batched computation each); ``units`` lists the finished ones with their
recording steps, and ``networks`` holds one row per trained network: its condition (config),
final metrics, divergence flag and its recorded curves (float32, packed). ``unit_arrays`` keeps
shared arrays of a unit (e.g. the input grid).

Safety. Each unit is written in a single transaction, so a killed run loses no finished unit and
leaves no half-written one; re-running into the directory skips finished units. A file that is
not a relulab store (foreign SQLite, other bytes, corrupt) is refused and never overwritten, and
so is a store holding a different experiment or config.

>>> import relulab.store
>>> frame = relulab.store.load("runs/single-neuron-quick")   # doctest: +SKIP
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["RunStore", "StoreError", "UnitResult", "STORE_FILENAME", "load"]

STORE_FILENAME = "runs.sqlite"
SCHEMA_VERSION = "1"
_MAGIC_KEY = "relulab_store_schema"
_SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE units (
    name TEXT PRIMARY KEY, n_networks INTEGER NOT NULL, steps BLOB NOT NULL,
    curve_names TEXT NOT NULL, wall_s REAL NOT NULL, finished_at TEXT NOT NULL);
CREATE TABLE networks (
    unit TEXT NOT NULL REFERENCES units(name), idx INTEGER NOT NULL,
    condition TEXT NOT NULL, final TEXT NOT NULL, diverged INTEGER NOT NULL,
    diverged_step INTEGER NOT NULL, curves BLOB NOT NULL, PRIMARY KEY (unit, idx));
CREATE TABLE unit_arrays (
    unit TEXT NOT NULL REFERENCES units(name), name TEXT NOT NULL, dtype TEXT NOT NULL,
    shape TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (unit, name));
"""


class StoreError(RuntimeError):
    """The store cannot be used: foreign, corrupt, or holding a different run."""


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


def _check_is_store(path: Path) -> None:
    with path.open("rb") as handle:
        header = handle.read(len(_SQLITE_HEADER))
    if header != _SQLITE_HEADER:
        raise StoreError(
            f"{path} is not a relulab run store (not an SQLite file); refusing to touch it"
        )


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _config_differences(stored: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))


class RunStore:
    """An open ``runs.sqlite``; use :meth:`create_or_resume` or :meth:`open`."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path) -> RunStore:
        """Open an existing store, refusing anything that is not a readable relulab store."""
        path = Path(path)
        if not path.is_file():
            raise StoreError(f"no run store at {path}")
        _check_is_store(path)
        try:
            connection = sqlite3.connect(path)
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
            if "meta" not in tables:
                raise StoreError(
                    f"{path} is an SQLite file but not a relulab run store; refusing to touch it"
                )
            row = connection.execute(
                "SELECT value FROM meta WHERE key = ?", (_MAGIC_KEY,)
            ).fetchone()
            if row is None:
                raise StoreError(
                    f"{path} is an SQLite file but not a relulab run store; refusing to touch it"
                )
            if row[0] != SCHEMA_VERSION:
                raise StoreError(
                    f"{path} has store schema {row[0]}, this relulab reads {SCHEMA_VERSION}"
                )
            check = connection.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise StoreError(f"{path} is corrupt ({check}); refusing to touch it")
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"{path} is corrupt or not a relulab store ({error}); refusing to touch it"
            ) from None
        return cls(path, connection)

    @classmethod
    def create_or_resume(
        cls,
        path: str | Path,
        experiment: str,
        preset: str,
        config: dict[str, Any],
        versions: dict[str, str],
    ) -> RunStore:
        """Resume the store at ``path`` if it holds this exact run, else create a new one."""
        path = Path(path)
        if path.exists():
            store = cls.open(path)
            store.check_same_run(experiment, preset, config)
            return store
        connection = sqlite3.connect(path)
        with connection:
            connection.executescript(_SCHEMA)
            meta = {
                _MAGIC_KEY: SCHEMA_VERSION,
                "experiment": experiment,
                "preset": preset,
                "config": _json(config),
                "versions": _json(versions),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            connection.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        return cls(path, connection)

    def check_same_run(self, experiment: str, preset: str, config: dict[str, Any]) -> None:
        meta = self.meta()
        if meta["experiment"] != experiment:
            raise StoreError(
                f"{self.path} holds a run of {meta['experiment']!r}, not {experiment!r}; "
                "choose another --out"
            )
        differences = _config_differences(meta["config"], config)
        if differences or meta["preset"] != preset:
            what = ", ".join(differences) if differences else "preset"
            raise StoreError(
                f"{self.path} holds a run with a different config (differs in: {what}); "
                "choose another --out to keep both"
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        """Experiment, preset, config (dict), versions (dict), created."""
        rows = dict(self._db.execute("SELECT key, value FROM meta"))
        return {
            "experiment": rows["experiment"],
            "preset": rows["preset"],
            "config": json.loads(rows["config"]),
            "versions": json.loads(rows["versions"]),
            "created": rows["created"],
        }

    def done_units(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT name FROM units")}

    def unit(self, name: str) -> UnitResult:
        """Load one finished unit back into arrays."""
        row = self._db.execute(
            "SELECT n_networks, steps, curve_names, wall_s FROM units WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            raise KeyError(f"unit {name!r} is not in {self.path}")
        n_networks, steps_blob, curve_names_json, wall_s = row
        steps = np.frombuffer(steps_blob, dtype=np.int64).copy()
        curve_names = json.loads(curve_names_json)
        records = self._db.execute(
            "SELECT condition, final, diverged, diverged_step, curves FROM networks "
            "WHERE unit = ? ORDER BY idx",
            (name,),
        ).fetchall()
        conditions = [json.loads(r[0]) for r in records]
        finals = [json.loads(r[1]) for r in records]
        packed = (
            np.stack(
                [
                    np.frombuffer(r[4], dtype=np.float32).reshape(len(curve_names), len(steps))
                    for r in records
                ]
            )
            if records
            else np.zeros((0, len(curve_names), len(steps)))
        )
        curves = {curve: packed[:, i, :] for i, curve in enumerate(curve_names)}
        final_names = finals[0].keys() if finals else []
        final = {k: np.array([f[k] for f in finals], dtype=np.float64) for k in final_names}
        arrays = {
            array_name: np.frombuffer(data, dtype=dtype).reshape(json.loads(shape)).copy()
            for array_name, dtype, shape, data in self._db.execute(
                "SELECT name, dtype, shape, data FROM unit_arrays WHERE unit = ?", (name,)
            )
        }
        return UnitResult(
            conditions,
            steps,
            curves,
            final,
            np.array([bool(r[2]) for r in records]),
            np.array([r[3] for r in records], dtype=np.int64),
            arrays,
            wall_s,
        )

    def networks(self) -> pd.DataFrame:
        """One row per network: unit, idx, condition columns, ``final_*`` metrics, diverged."""
        rows = []
        for unit, idx, condition, final, diverged, diverged_step in self._db.execute(
            "SELECT unit, idx, condition, final, diverged, diverged_step FROM networks "
            "ORDER BY unit, idx"
        ):
            row = {"unit": unit, "idx": idx, **json.loads(condition)}
            row.update({f"final_{k}": v for k, v in json.loads(final).items()})
            row.update(diverged=bool(diverged), diverged_step=diverged_step)
            rows.append(row)
        return pd.DataFrame(rows)

    def curves(self, unit: str) -> pd.DataFrame:
        """Long table of one unit's curves: idx, step, one column per recorded metric."""
        result = self.unit(unit)
        frames = [
            pd.DataFrame(
                {
                    "idx": i,
                    "step": result.steps,
                    **{name: curve[i] for name, curve in result.curves.items()},
                }
            )
            for i in range(result.n_networks)
        ]
        return pd.concat(frames, ignore_index=True)

    # -- writing -----------------------------------------------------------------------------
    def save_unit(self, name: str, result: UnitResult) -> None:
        """Write one unit in a single transaction (all of it, or nothing)."""
        curve_names = sorted(result.curves)
        packed = (
            np.stack([result.curves[c] for c in curve_names], axis=1).astype(np.float32)
            if curve_names
            else np.zeros((result.n_networks, 0, len(result.steps)), np.float32)
        )
        rows = []
        for i, condition in enumerate(result.conditions):
            final = {k: float(v[i]) for k, v in result.final.items()}
            rows.append(
                (
                    name,
                    i,
                    _json(condition),
                    json.dumps(final, sort_keys=True),
                    int(result.diverged[i]),
                    int(result.diverged_step[i]),
                    np.ascontiguousarray(packed[i]).tobytes(),
                )
            )
        with self._db:
            self._db.execute(
                "INSERT INTO units VALUES (?, ?, ?, ?, ?, ?)",
                (
                    name,
                    result.n_networks,
                    np.asarray(result.steps, np.int64).tobytes(),
                    json.dumps(curve_names),
                    float(result.wall_s),
                    time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                ),
            )
            self._db.executemany("INSERT INTO networks VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self._db.executemany(
                "INSERT INTO unit_arrays VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        name,
                        k,
                        str(np.asarray(v).dtype),
                        json.dumps(list(np.shape(v))),
                        np.ascontiguousarray(v).tobytes(),
                    )
                    for k, v in result.arrays.items()
                ],
            )


def load(run_dir: str | Path) -> pd.DataFrame:
    """All networks of a run directory (or a ``runs.sqlite`` path) as one pandas DataFrame."""
    path = Path(run_dir)
    if path.is_dir():
        path = path / STORE_FILENAME
    with RunStore.open(path) as store:
        return store.networks()
