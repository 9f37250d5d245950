"""The run store: one SQLite file (``runs.sqlite``) per run directory.

Layout. ``meta`` holds the experiment, preset, full config and library versions. A run is split
into *units* (one batched computation each); ``units`` lists the finished ones with their
recording steps, a SHA-256 checksum of their payload and the torch thread count they ran
under, and ``networks`` holds one row per trained network: its condition (config), final
metrics, divergence flag and its recorded curves (float32, packed). ``unit_arrays`` keeps shared
arrays of a unit (e.g. the input grid).

Safety. A store is created atomically: built in one transaction under a temporary name in the
same directory, then renamed, so a killed creation leaves either no store or a complete empty
one. Each unit is written in a single transaction, so a killed run loses no finished unit and
leaves no half-written one; re-running into the directory skips finished units. A store that
holds no finished unit has nothing to lose and is re-initialised by the next run whatever its
config (this includes a half-created store of schema 1). A file that is not a relulab store
(foreign SQLite, other bytes, corrupt, structurally damaged) is refused and never overwritten,
and so is a store holding finished units of a different experiment or config. Every unit's
payload is verified against its checksum when read.

Schemas. Schema 2 added the per-unit checksum and thread count; schema 3 makes the checksum
cover the unit's name as well (every field a path is built from — the unit name, the networks'
conditions — is then under the checksum, so a store whose unit was renamed to ``../../x`` no
longer verifies). Older stores are read as they are (schema-1 units carry no checksum, schema-2
checksums are verified without the name) and upgraded in place when a run resumes into them:
the old checksums are verified, and the new ones computed, in one transaction.

>>> import relulab.store
>>> frame = relulab.store.load("runs/single-neuron-quick")   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import lzma
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from relulab.faults import fault_point
from relulab.files import check_path_name, fsync_directory, remove_temporaries, temporary_path
from relulab.reading import InputFileError, check_input_file, read_head, read_json
from relulab.records.sweep import SweepRecord
from relulab.records.units import UnitResult

__all__ = [
    "RunStore",
    "StoreError",
    "UnitResult",
    "UnknownUnitError",
    "STORE_ARCHIVE",
    "STORE_FILENAME",
    "has_store",
    "open_run_store",
    "SCHEMA_VERSION",
    "SWEEP_FILENAME",
    "read_sweep_record",
    "load",
    "load_sweep",
]

STORE_FILENAME = "runs.sqlite"
STORE_ARCHIVE = "runs.sqlite.xz"  # a committed run's store, compressed losslessly with xz
ARCHIVE_LIMIT = 16 * 2**30  # an archive that inflates beyond this is refused
SWEEP_FILENAME = "sweep.json"  # a sweep directory's record of its grid and points
SCHEMA_VERSION = "3"
_READABLE_SCHEMAS = ("1", "2", "3")
_MAGIC_KEY = "relulab_store_schema"
_SQLITE_HEADER = b"SQLite format 3\x00"
_JOURNAL_SUFFIXES = ("-journal", "-wal", "-shm")

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE units (
    name TEXT PRIMARY KEY, n_networks INTEGER NOT NULL, steps BLOB NOT NULL,
    curve_names TEXT NOT NULL, wall_s REAL NOT NULL, finished_at TEXT NOT NULL,
    checksum TEXT, threads INTEGER)""",
    """CREATE TABLE networks (
    unit TEXT NOT NULL REFERENCES units(name), idx INTEGER NOT NULL,
    condition TEXT NOT NULL, final TEXT NOT NULL, diverged INTEGER NOT NULL,
    diverged_step INTEGER NOT NULL, curves BLOB NOT NULL, PRIMARY KEY (unit, idx))""",
    """CREATE TABLE unit_arrays (
    unit TEXT NOT NULL REFERENCES units(name), name TEXT NOT NULL, dtype TEXT NOT NULL,
    shape TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (unit, name))""",
)
_COLUMNS = {  # what each schema's tables must have
    "1": {
        "meta": {"key", "value"},
        "units": {"name", "n_networks", "steps", "curve_names", "wall_s", "finished_at"},
        "networks": {"unit", "idx", "condition", "final", "diverged", "diverged_step", "curves"},
        "unit_arrays": {"unit", "name", "dtype", "shape", "data"},
    }
}
_COLUMNS["2"] = {**_COLUMNS["1"], "units": _COLUMNS["1"]["units"] | {"checksum", "threads"}}
_COLUMNS["3"] = _COLUMNS["2"]
_TABLES = frozenset(_COLUMNS["1"])
_META_KEYS = ("experiment", "preset", "config", "versions", "created")


class StoreError(RuntimeError):
    """The store cannot be used: foreign, corrupt, damaged, or holding a different run."""


class UnknownUnitError(KeyError):
    """A unit name the store does not hold (a ``KeyError``, not damage)."""


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

    return wrapper  # type: ignore[return-value]


def _check_is_store(path: Path) -> None:
    try:
        header = read_head(path, "run store", len(_SQLITE_HEADER))
    except InputFileError as error:
        raise StoreError(f"{error}; refusing to touch it") from None
    if header != _SQLITE_HEADER:
        raise StoreError(
            f"{path} is not a relulab run store (not an SQLite file); refusing to touch it"
        )


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _config_differences(stored: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def payload_checksum(
    header: tuple[Any, ...],
    networks: Iterable[tuple[Any, ...]],
    arrays: Iterable[tuple[Any, ...]],
    name: str | None = None,
) -> str:
    """SHA-256 over a unit's stored payload, every value length-prefixed.

    Covers the unit's ``name`` (schema 3; ``None`` gives schema 2's checksum),
    ``(n_networks, steps, curve_names)``, each network row ``(idx, condition, final, diverged,
    diverged_step, curves)`` in index order and each array row ``(name, dtype, shape, data)`` in
    name order; not the wall time or the finishing date, so two runs of the same config have
    equal checksums.
    """
    digest = hashlib.sha256()
    networks, arrays = sorted(networks), sorted(arrays)
    named = () if name is None else ((name,),)
    for row in (*named, tuple(header) + (len(networks), len(arrays)), *networks, *arrays):
        for value in row:
            data = value if isinstance(value, bytes) else str(value).encode()
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    return digest.hexdigest()


def _inspect(path: Path) -> tuple[sqlite3.Connection, str] | None:
    """An open connection to the complete store at ``path`` and its schema, or ``None`` when
    the file provably holds nothing (0 bytes, or an SQLite file whose tables are all relulab's
    and all empty: a creation cut short). Raises :class:`StoreError` for anything else."""
    try:
        size = check_input_file(path, "run store").stat().st_size
    except InputFileError as error:
        raise StoreError(f"{error}; refusing to touch it") from None
    if size == 0:
        return None
    _check_is_store(path)
    connection = sqlite3.connect(path)
    try:
        tables = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        magic = (
            connection.execute("SELECT value FROM meta WHERE key = ?", (_MAGIC_KEY,)).fetchone()
            if "meta" in tables
            else None
        )
        if magic is None:
            if tables <= _TABLES and not any(
                connection.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in tables
            ):
                connection.close()
                return None
            raise StoreError(
                f"{path} is an SQLite file but not a relulab run store; refusing to touch it"
            )
        schema = magic[0]
        if schema not in _READABLE_SCHEMAS:
            raise StoreError(
                f"{path} has store schema {schema}, this relulab reads "
                + ", ".join(_READABLE_SCHEMAS)
            )
        for table, columns in _COLUMNS[schema].items():
            present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
            if not columns <= present:
                missing = f"table {table}" if not present else f"columns of {table}"
                raise StoreError(f"{path} is a damaged relulab store ({missing} missing); refusing")
        check = connection.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise StoreError(f"{path} is corrupt ({check}); refusing to touch it")
    except sqlite3.DatabaseError as error:
        connection.close()
        raise StoreError(
            f"{path} is corrupt or not a relulab store ({error}); refusing to touch it"
        ) from None
    except BaseException:
        connection.close()
        raise
    return connection, schema


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
        opened = _inspect(path)
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
        opened = _inspect(path)
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
            for statement in _SCHEMA:
                connection.execute(statement)
            fault_point("store-build")
            meta = {
                _MAGIC_KEY: SCHEMA_VERSION,
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
            for suffix in _JOURNAL_SUFFIXES:  # a journal of the store being replaced
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            os.replace(temporary, path)
            fsync_directory(path.parent)
        except BaseException:
            connection.close()
            for leftover in (temporary, *(Path(f"{temporary}{s}") for s in _JOURNAL_SUFFIXES)):
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
            self._db.execute(
                "UPDATE meta SET value = ? WHERE key = ?", (SCHEMA_VERSION, _MAGIC_KEY)
            )
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
        meta = {key: rows[key] for key in _META_KEYS}
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


def has_store(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a run store: ``runs.sqlite``, or its archive
    ``runs.sqlite.xz`` (how ``results/`` commits one)."""
    check_path_name(run_dir, "run_dir")  # '' is no default for the cwd
    run_dir = Path(run_dir)
    return os.path.lexists(run_dir / STORE_FILENAME) or (run_dir / STORE_ARCHIVE).is_file()


def _inflate(archive: Path, target: Path) -> None:
    """Decompress ``archive`` into ``target``, refusing more than :data:`ARCHIVE_LIMIT`."""
    written = 0
    try:
        with lzma.open(archive) as source, target.open("wb") as sink:
            while chunk := source.read(1 << 22):
                written += len(chunk)
                if written > ARCHIVE_LIMIT:
                    raise StoreError(f"{archive} inflates beyond {ARCHIVE_LIMIT} bytes; refusing")
                sink.write(chunk)
    except (lzma.LZMAError, EOFError) as error:
        raise StoreError(f"{archive} is not a readable xz archive ({error}); refusing") from None


@contextlib.contextmanager
def open_run_store(run_dir: str | Path) -> Iterator[RunStore]:
    """The run store of ``run_dir`` for reading: ``runs.sqlite``, or else ``runs.sqlite.xz``
    decompressed into a temporary file (removed afterwards).

    Raises:
        StoreError: neither is there, or what is there is not a readable relulab store.

    Example:
        >>> with open_run_store("results/paper/anisotropy") as store:  # doctest: +SKIP
        ...     store.meta()["experiment"]
        'anisotropy'
    """
    check_path_name(run_dir, "run_dir")  # '' is no default for the cwd
    run_dir = Path(run_dir)
    archive = run_dir / STORE_ARCHIVE
    if os.path.lexists(run_dir / STORE_FILENAME) or not archive.is_file():
        with RunStore.open(run_dir / STORE_FILENAME) as store:
            yield store
        return
    with tempfile.TemporaryDirectory(prefix="relulab-store-") as scratch:
        inflated = Path(scratch) / STORE_FILENAME
        _inflate(archive, inflated)
        with RunStore.open(inflated) as store:
            yield store


def load(run_dir: str | Path) -> pd.DataFrame:
    """All networks of a run directory (or a ``runs.sqlite`` path) as one pandas DataFrame."""
    check_path_name(run_dir, "run_dir")  # '' is no default for the cwd
    path = Path(run_dir)
    if not path.is_dir():
        with RunStore.open(path) as store:
            return store.networks()
    with open_run_store(path) as store:
        return store.networks()


def read_sweep_record(sweep_dir: str | Path) -> SweepRecord:
    """A sweep directory's ``sweep.json``, checked for the shape every reader relies on: an
    ``experiment`` name and ``points`` whose names are each one directory name inside the sweep
    (never ``..``, a path, or empty).

    Args:
        sweep_dir: a directory written by ``relulab sweep``.

    Returns:
        The :class:`~relulab.records.SweepRecord`.

    Raises:
        StoreError: no ``sweep.json``, or one that is unreadable or of another shape.

    Example:
        >>> read_sweep_record("runs/aniso-sweep").experiment  # doctest: +SKIP
        'anisotropy'
    """
    check_path_name(sweep_dir, "sweep_dir")  # '' is no default for the cwd
    path = Path(sweep_dir) / SWEEP_FILENAME
    try:
        return SweepRecord.from_dict(read_json(path, "sweep record"))
    except InputFileError as error:
        if not os.path.lexists(path):
            raise StoreError(
                f"{Path(sweep_dir)} is not a relulab sweep (no {SWEEP_FILENAME})"
            ) from None
        raise StoreError(str(error)) from None
    except FileNotFoundError:
        raise StoreError(
            f"{Path(sweep_dir)} is not a relulab sweep (no {SWEEP_FILENAME})"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise StoreError(
            f"{path} is not a readable sweep record ({type(error).__name__}: "
            f"{' '.join(str(error).split())}); re-run the sweep to rebuild it"
        ) from None


def load_sweep(sweep_dir: str | Path) -> pd.DataFrame:
    """All networks of a sweep directory as one DataFrame: one row per network, with the
    ``point`` (its directory) and the point's swept settings as columns.

    A setting whose name is already a column of the networks (a condition of the same name) is
    called ``sweep_NAME`` instead. Points without a store yet are left out; an unfinished point
    contributes the networks of its finished units.

    Args:
        sweep_dir: a directory written by ``relulab sweep``.

    Returns:
        The networks of every point (see :func:`load`) with the point's settings.

    Example:
        >>> frame = relulab.store.load_sweep("runs/aniso-sweep")   # doctest: +SKIP
        >>> frame.groupby("d")["final_sigma1_over_sigma2"].mean()   # doctest: +SKIP
    """
    check_path_name(sweep_dir, "sweep_dir")  # '' is no default for the cwd
    directory = Path(sweep_dir)
    record = read_sweep_record(directory)
    points = [(point.name, dict(point.settings)) for point in record.points]
    frames = []
    for name, settings in points:
        if not has_store(directory / name):
            continue
        frame = load(directory / name)
        for position, (key, value) in enumerate(settings.items(), start=1):
            column = f"sweep_{key}" if key in frame.columns else key
            value = tuple(value) if isinstance(value, list) else value
            frame.insert(position - 1, column, [value] * len(frame))
        frame.insert(0, "point", name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
