"""An open run store (:mod:`relulab.store`): :class:`RunStore` creates a store atomically or
resumes one of the same run, upgrades an older schema in place, writes each unit in one
transaction and reads units back verified against their checksums."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from relulab.faults import fault_point
from relulab.files import fsync_directory, remove_temporaries, temporary_path
from relulab.records.units import UnitResult
from relulab.store.schema import (
    JOURNAL_SUFFIXES,
    MAGIC_KEY,
    META_KEYS,
    SCHEMA_STATEMENTS,
    SCHEMA_VERSION,
    StoreError,
    UnknownUnitError,
    inspect_store,
    payload_checksum,
)

__all__ = ["RunStore"]

F = TypeVar("F", bound=Callable[..., Any])


def _reading(method: F) -> F:
    """Turn a damaged store's low-level errors into one :class:`StoreError`."""

    @functools.wraps(method)
    def wrapper(self: RunStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except UnknownUnitError:
            raise
        except (sqlite3.DatabaseError, KeyError, TypeError, ValueError) as error:
            raise StoreError(
                f"{self.path} is a damaged relulab store ({type(error).__name__}: {error}); "
                "refusing to use it"
            ) from None

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the method's signature


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _config_differences(stored: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class RunStore:
    """An open ``runs.sqlite``; use :meth:`create_or_resume` or :meth:`open`."""

    def __init__(self, path: Path, connection: sqlite3.Connection, schema: str) -> None:
        self.path = path
        self.schema = schema
        self._db = connection

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path) -> RunStore:
        """Open an existing store, refusing anything that is not a readable relulab store."""
        path = Path(path)
        if not path.exists():
            raise StoreError(f"no run store at {path}")
        opened = inspect_store(path)
        if opened is None:
            raise StoreError(
                f"{path} holds no results (its creation was cut short); re-run to start afresh"
            )
        return cls(path, *opened)

    @classmethod
    def _with_results(cls, path: Path) -> RunStore | None:
        """The store at ``path`` if it holds a finished unit; ``None`` if nothing can be lost."""
        if not os.path.lexists(path):
            return None
        opened = inspect_store(path)
        if opened is None:
            return None
        store = cls(path, *opened)
        if store.done_units():
            return store
        store.close()
        return None

    @classmethod
    def check_resumable(
        cls, path: str | Path, experiment: str, preset: str, config: dict[str, Any]
    ) -> None:
        """Raise :class:`StoreError` unless a run of this config may write at ``path``: no store,
        a store without finished units, or one holding finished units of this very run."""
        store = cls._with_results(Path(path))
        if store is not None:
            with store:
                store.check_same_run(experiment, preset, config)

    @classmethod
    def create_or_resume(
        cls,
        path: str | Path,
        experiment: str,
        preset: str,
        config: dict[str, Any],
        versions: dict[str, str],
    ) -> RunStore:
        """Resume the store at ``path`` if it holds finished units of this exact run; create a
        new one where there is none or the one there holds no finished unit."""
        path = Path(path)
        store = cls._with_results(path)
        if store is None:
            return cls._create(path, experiment, preset, config, versions)
        try:
            store.check_same_run(experiment, preset, config)
            store._upgrade()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _create(
        cls,
        path: Path,
        experiment: str,
        preset: str,
        config: dict[str, Any],
        versions: dict[str, str],
    ) -> RunStore:
        """Build the store in one transaction under a temporary name, then rename it."""
        remove_temporaries(path.parent)
        temporary = temporary_path(path)
        connection = sqlite3.connect(temporary, isolation_level=None)
        try:
            connection.execute("BEGIN")
            for statement in SCHEMA_STATEMENTS:
                connection.execute(statement)
            fault_point("store-build")
            meta = {
                MAGIC_KEY: SCHEMA_VERSION,
                "experiment": experiment,
                "preset": preset,
                "config": _json(config),
                "versions": _json(versions),
                "created": _now(),
            }
            connection.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            connection.execute("COMMIT")
            connection.close()
            fault_point("store-replace")
            for suffix in JOURNAL_SUFFIXES:  # a journal of the store being replaced
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            os.replace(temporary, path)
            fsync_directory(path.parent)
        except BaseException:
            connection.close()
            for leftover in (temporary, *(Path(f"{temporary}{s}") for s in JOURNAL_SUFFIXES)):
                leftover.unlink(missing_ok=True)
            raise
        return cls(path, sqlite3.connect(path), SCHEMA_VERSION)

    def _upgrade(self) -> None:
        """Bring an older store to the current schema in one transaction: schema 1 gains the
        checksum and thread columns, schema 2's checksums are verified; then every unit's
        checksum is computed with its name."""
        if self.schema == SCHEMA_VERSION:
            return
        if self.schema == "2":
            self.verify()
        self._db.execute("BEGIN")  # DDL too: Python's sqlite3 would autocommit ALTER TABLE
        try:
            if self.schema == "1":
                self._db.execute("ALTER TABLE units ADD COLUMN checksum TEXT")
                self._db.execute("ALTER TABLE units ADD COLUMN threads INTEGER")
            for name in sorted(self.done_units()):
                self._db.execute(
                    "UPDATE units SET checksum = ? WHERE name = ?",
                    (self._computed_checksum(name, named=True), name),
                )
            self._db.execute("UPDATE meta SET value = ? WHERE key = ?", (SCHEMA_VERSION, MAGIC_KEY))
        except BaseException:
            self._db.rollback()
            raise
        self._db.commit()
        self.schema = SCHEMA_VERSION

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
    @_reading
    def meta(self) -> dict[str, Any]:
        """Experiment, preset, config (dict), versions (dict), created."""
        rows = dict(self._db.execute("SELECT key, value FROM meta"))
        meta = {key: rows[key] for key in META_KEYS}
        meta["config"] = json.loads(meta["config"])
        meta["versions"] = json.loads(meta["versions"])
        if not isinstance(meta["config"], dict) or not isinstance(meta["versions"], dict):
            raise ValueError("config and versions must be JSON objects")
        return meta

    @_reading
    def done_units(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT name FROM units")}

    @_reading
    def unit_threads(self) -> dict[str, int | None]:
        """The torch thread count each finished unit ran under (``None``: not recorded)."""
        if self.schema == "1":
            return dict.fromkeys(self.done_units())
        return dict(self._db.execute("SELECT name, threads FROM units"))

    @_reading
    def unit_checksums(self) -> dict[str, str | None]:
        """The stored payload checksum of each finished unit (``None`` in schema-1 stores)."""
        if self.schema == "1":
            return dict.fromkeys(self.done_units())
        return dict(self._db.execute("SELECT name, checksum FROM units"))

    def _rows(self, name: str) -> tuple[tuple[Any, ...] | None, list[tuple], list[tuple]]:
        header = self._db.execute(
            "SELECT n_networks, steps, curve_names, wall_s"
            + (", checksum" if self.schema != "1" else ", NULL")
            + " FROM units WHERE name = ?",
            (name,),
        ).fetchone()
        networks = self._db.execute(
            "SELECT idx, condition, final, diverged, diverged_step, curves FROM networks "
            "WHERE unit = ? ORDER BY idx",
            (name,),
        ).fetchall()
        arrays = self._db.execute(
            "SELECT name, dtype, shape, data FROM unit_arrays WHERE unit = ? ORDER BY name",
            (name,),
        ).fetchall()
        return header, networks, arrays

    def _computed_checksum(self, name: str, named: bool) -> str:
        header, networks, arrays = self._rows(name)
        assert header is not None
        return payload_checksum(header[:3], networks, arrays, name if named else None)

    def _verified_rows(self, name: str) -> tuple[tuple[Any, ...], list[tuple], list[tuple]]:
        header, networks, arrays = self._rows(name)
        if header is None:
            raise UnknownUnitError(f"unit {name!r} is not in {self.path}")
        stored = header[4]
        named = name if self.schema not in ("1", "2") else None
        if self.schema != "1" and stored != payload_checksum(header[:3], networks, arrays, named):
            raise StoreError(
                f"{self.path}: unit {name!r} does not match its checksum (its stored data were "
                "altered or damaged); refusing to use it"
            )
        return header, networks, arrays

    @_reading
    def verify(self) -> None:
        """Check every finished unit against its checksum; :class:`StoreError` on a mismatch."""
        for name in sorted(self.done_units()):
            self._verified_rows(name)

    @_reading
    def unit(self, name: str) -> UnitResult:
        """Load one finished unit back into arrays (verified against its checksum)."""
        header, records, array_rows = self._verified_rows(name)
        _, steps_blob, curve_names_json, wall_s, _ = header
        steps = np.frombuffer(steps_blob, dtype=np.int64).copy()
        curve_names = json.loads(curve_names_json)
        conditions = [json.loads(r[1]) for r in records]
        finals = [json.loads(r[2]) for r in records]
        packed = (
            np.stack(
                [
                    np.frombuffer(r[5], dtype=np.float32).reshape(len(curve_names), len(steps))
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
            for array_name, dtype, shape, data in array_rows
        }
        return UnitResult(
            conditions,
            steps,
            curves,
            final,
            np.array([bool(r[3]) for r in records]),
            np.array([r[4] for r in records], dtype=np.int64),
            arrays,
            wall_s,
        )

    @_reading
    def networks(self) -> pd.DataFrame:
        """One row per network: unit, idx, condition columns, ``final_*`` metrics, diverged.

        Every unit is verified against its checksum first."""
        self.verify()
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
    def save_unit(self, name: str, result: UnitResult, threads: int | None = None) -> None:
        """Write one unit in a single transaction (all of it, or nothing), with the checksum of
        its payload and the torch thread count it ran under."""
        curve_names = sorted(result.curves)
        packed = (
            np.stack([result.curves[c] for c in curve_names], axis=1).astype(np.float32)
            if curve_names
            else np.zeros((result.n_networks, 0, len(result.steps)), np.float32)
        )
        networks = [
            (
                i,
                _json(condition),
                json.dumps({k: float(v[i]) for k, v in result.final.items()}, sort_keys=True),
                int(result.diverged[i]),
                int(result.diverged_step[i]),
                np.ascontiguousarray(packed[i]).tobytes(),
            )
            for i, condition in enumerate(result.conditions)
        ]
        arrays = [
            (
                k,
                str(np.asarray(v).dtype),
                json.dumps(list(np.shape(v))),
                np.ascontiguousarray(v).tobytes(),
            )
            for k, v in result.arrays.items()
        ]
        header = (
            result.n_networks,
            np.asarray(result.steps, np.int64).tobytes(),
            json.dumps(curve_names),
        )
        with self._db:
            self._db.execute(
                "INSERT INTO units (name, n_networks, steps, curve_names, wall_s, finished_at, "
                "checksum, threads) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    *header,
                    float(result.wall_s),
                    _now(),
                    payload_checksum(header, networks, arrays, name),
                    threads,
                ),
            )
            self._db.executemany(
                "INSERT INTO networks VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(name, *row) for row in networks],
            )
            self._db.executemany(
                "INSERT INTO unit_arrays VALUES (?, ?, ?, ?, ?)", [(name, *row) for row in arrays]
            )
            fault_point(f"unit-save:{name}")
