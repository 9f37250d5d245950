"""What a run store file is (:mod:`relulab.store`): its file names, schema versions and
tables, the checksum of a unit's payload, and the inspection that tells a relulab store —
complete, or provably empty — from anything else (foreign, corrupt, damaged), which it refuses.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from relulab.reading import InputFileError, check_input_file, read_head

__all__ = [
    "ARCHIVE_LIMIT",
    "JOURNAL_SUFFIXES",
    "MAGIC_KEY",
    "META_KEYS",
    "SCHEMA_STATEMENTS",
    "SCHEMA_VERSION",
    "STORE_ARCHIVE",
    "STORE_FILENAME",
    "SWEEP_FILENAME",
    "StoreError",
    "UnknownUnitError",
    "inspect_store",
    "payload_checksum",
]

STORE_FILENAME = "runs.sqlite"
STORE_ARCHIVE = "runs.sqlite.xz"  # a committed run's store, compressed losslessly with xz
ARCHIVE_LIMIT = 16 * 2**30  # an archive that inflates beyond this is refused
SWEEP_FILENAME = "sweep.json"  # a sweep directory's record of its grid and points
SCHEMA_VERSION = "3"
_READABLE_SCHEMAS = ("1", "2", "3")
MAGIC_KEY = "relulab_store_schema"
_SQLITE_HEADER = b"SQLite format 3\x00"
JOURNAL_SUFFIXES = ("-journal", "-wal", "-shm")

SCHEMA_STATEMENTS = (
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
META_KEYS = ("experiment", "preset", "config", "versions", "created")


class StoreError(RuntimeError):
    """The store cannot be used: foreign, corrupt, damaged, or holding a different run."""


class UnknownUnitError(KeyError):
    """A unit name the store does not hold (a ``KeyError``, not damage)."""


def _check_is_store(path: Path) -> None:
    try:
        header = read_head(path, "run store", len(_SQLITE_HEADER))
    except InputFileError as error:
        raise StoreError(f"{error}; refusing to touch it") from None
    if header != _SQLITE_HEADER:
        raise StoreError(
            f"{path} is not a relulab run store (not an SQLite file); refusing to touch it"
        )


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


def inspect_store(path: Path) -> tuple[sqlite3.Connection, str] | None:
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
            connection.execute("SELECT value FROM meta WHERE key = ?", (MAGIC_KEY,)).fetchone()
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
