"""The run store: round trip, pandas, refusal of foreign, corrupt, damaged or different-run
files, atomic creation, re-initialising a store with nothing to lose, checksums, schema 1."""

import hashlib
import sqlite3

import numpy as np
import pytest

from relulab.files import TEMP_PREFIX
from relulab.store import (
    SCHEMA_VERSION,
    RunStore,
    StoreError,
    UnitResult,
    load,
    payload_checksum,
)
from relulab.store import runstore as runstore_module


def _unit(n=3, t=4):
    rng = np.random.default_rng(0)
    return UnitResult(
        conditions=[{"b1": float(i), "name": f"n{i}"} for i in range(n)],
        steps=np.arange(t) * 10,
        curves={"loss": rng.random((n, t)), "state": np.ones((n, t))},
        final={"loss": rng.random(n)},
        diverged=np.array([False, True, False][:n]),
        diverged_step=np.array([-1, 7, -1][:n]),
        arrays={"x": np.linspace(-1, 1, 5)},
        wall_s=1.5,
    )


def _new(tmp_path, config=None):
    return RunStore.create_or_resume(
        tmp_path / "runs.sqlite", "exp", "quick", config or {"a": 1}, {"torch": "x"}
    )


def test_round_trip_and_pandas(tmp_path):
    original = _unit()
    with _new(tmp_path) as store:
        store.save_unit("u1", original)
    with RunStore.open(tmp_path / "runs.sqlite") as store:
        assert store.done_units() == {"u1"}
        back = store.unit("u1")
        assert store.meta()["config"] == {"a": 1}
        long = store.curves("u1")
    assert back.conditions == original.conditions
    np.testing.assert_array_equal(back.steps, original.steps)
    np.testing.assert_allclose(back.curves["loss"], original.curves["loss"], rtol=1e-7)
    np.testing.assert_array_equal(back.final["loss"], original.final["loss"])
    np.testing.assert_array_equal(back.diverged, original.diverged)
    np.testing.assert_array_equal(back.arrays["x"], original.arrays["x"])
    frame = load(tmp_path)
    assert list(frame["b1"]) == [0.0, 1.0, 2.0]
    assert list(frame["diverged"]) == [False, True, False]
    assert "final_loss" in frame.columns
    assert len(long) == 3 * 4 and {"idx", "step", "loss", "state"} <= set(long.columns)


def test_a_unit_is_all_or_nothing(tmp_path):
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
        with pytest.raises(sqlite3.IntegrityError):
            store.save_unit("u1", _unit())  # same name again: the transaction rolls back
        assert store.done_units() == {"u1"}
        assert len(store.networks()) == 3


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE mine (x)")
    before = _digest(path)
    with pytest.raises(StoreError, match="not a relulab run store"):
        RunStore.create_or_resume(path, "exp", "quick", {}, {})
    assert _digest(path) == before


def test_non_sqlite_file_is_refused_and_untouched(tmp_path):
    path = tmp_path / "runs.sqlite"
    path.write_bytes(b"precious thesis draft")
    with pytest.raises(StoreError, match="not an SQLite file"):
        RunStore.create_or_resume(path, "exp", "quick", {}, {})
    assert path.read_bytes() == b"precious thesis draft"


def test_corrupt_store_is_refused(tmp_path):
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    path = tmp_path / "runs.sqlite"
    data = bytearray(path.read_bytes())
    data[100:4000] = b"\xff" * 3900  # smash the schema page, keep the header
    path.write_bytes(bytes(data))
    before = _digest(path)
    with pytest.raises(StoreError):
        RunStore.open(path)
    assert _digest(path) == before


def test_store_of_a_different_config_is_refused_once_it_holds_a_unit(tmp_path):
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    before = _digest(tmp_path / "runs.sqlite")
    with pytest.raises(StoreError, match="differs in: a"):
        _new(tmp_path, {"a": 2})
    with pytest.raises(StoreError, match="holds a run of 'exp'"):
        RunStore.create_or_resume(tmp_path / "runs.sqlite", "other", "quick", {"a": 1}, {})
    with pytest.raises(StoreError, match="differs in: a"):
        RunStore.check_resumable(tmp_path / "runs.sqlite", "exp", "quick", {"a": 2})
    assert _digest(tmp_path / "runs.sqlite") == before


def test_a_store_without_finished_units_is_reinitialised_by_another_config(tmp_path):
    _new(tmp_path).close()  # e.g. a run whose first unit failed: nothing is lost
    RunStore.check_resumable(tmp_path / "runs.sqlite", "other", "paper", {"b": 3})
    with RunStore.create_or_resume(
        tmp_path / "runs.sqlite", "other", "paper", {"b": 3}, {}
    ) as store:
        assert store.meta()["experiment"] == "other" and store.meta()["config"] == {"b": 3}
        assert store.done_units() == set()


class _CrashError(Exception):
    pass


@pytest.mark.parametrize("point", ["store-build", "store-replace"])
def test_store_creation_is_atomic(tmp_path, monkeypatch, point):
    def crash_at(name):
        if name == point:
            raise _CrashError(name)

    monkeypatch.setattr(runstore_module, "fault_point", crash_at)
    with pytest.raises(_CrashError):
        _new(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "no store, no temporary left"


def test_leftovers_of_a_killed_creation_are_cleared(tmp_path):
    (tmp_path / f"{TEMP_PREFIX}999-runs.sqlite").write_bytes(b"SQLite format 3\x00half")
    (tmp_path / f"{TEMP_PREFIX}999-runs.sqlite-journal").write_bytes(b"x")
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.sqlite"]


def test_half_created_schema_1_store_is_reinitialised(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as connection:  # what schema 1's creation left when killed
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("CREATE TABLE units (name TEXT PRIMARY KEY)")
    with pytest.raises(StoreError, match="holds no results"):
        RunStore.open(path)
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    assert RunStore.open(path).done_units() == {"u1"}


def test_empty_store_file_and_journal_are_reinitialised(tmp_path):
    path = tmp_path / "runs.sqlite"
    path.write_bytes(b"")
    (tmp_path / "runs.sqlite-journal").write_bytes(b"\xd9\xd5\x05\xf9 \xa1c\xd7" + b"\0" * 504)
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.sqlite"]
    with RunStore.open(path) as store:
        assert store.done_units() == {"u1"}


@pytest.mark.parametrize(
    "damage",
    [
        "DROP TABLE units",
        "DROP TABLE networks",
        "ALTER TABLE networks DROP COLUMN final",
        "DELETE FROM meta WHERE key = 'config'",
        "UPDATE meta SET value = 'not json' WHERE key = 'config'",
    ],
)
def test_structurally_damaged_store_is_refused_not_traced(tmp_path, damage):
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute(damage)
    before = _digest(path)
    with pytest.raises(StoreError, match="damaged"):
        with RunStore.open(path) as store:
            store.meta()
            store.unit("u1")
    with pytest.raises(StoreError, match="damaged"):
        _new(tmp_path)
    assert _digest(path) == before


def test_altered_payload_fails_its_checksum(tmp_path):
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE networks SET final = '{\"loss\": 0.5}' WHERE idx = 1")
    with RunStore.open(path) as store, pytest.raises(StoreError, match="checksum"):
        store.unit("u1")
    with pytest.raises(StoreError, match="checksum"):
        load(tmp_path)


def test_flipped_bytes_in_a_stored_curve_are_detected(tmp_path):
    original = _unit()
    with _new(tmp_path) as store:
        store.save_unit("u1", original)
    path = tmp_path / "runs.sqlite"
    data = bytearray(path.read_bytes())
    needle = np.float32(original.curves["loss"][2, 3]).tobytes()
    at = data.index(needle)
    data[at] ^= 0x01  # one bit of one float in the file
    path.write_bytes(bytes(data))
    with RunStore.open(path) as store, pytest.raises(StoreError, match="checksum"):
        store.unit("u1")


def test_checksums_ignore_wall_time_and_threads_are_recorded(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    with _new(first) as store:
        store.save_unit("u1", _unit(), threads=3)
        checksums, threads = store.unit_checksums(), store.unit_threads()
    slower = _unit()
    slower.wall_s = 99.0
    with _new(second) as store:
        store.save_unit("u1", slower, threads=1)
        assert store.unit_checksums() == checksums
    assert threads == {"u1": 3}


_SCHEMA_1 = """
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


def _schema_1_store(tmp_path):
    """A store as relulab wrote it before checksums: copy a schema-2 store's rows into it."""
    with _new(tmp_path / "v2") as store:
        store.save_unit("u1", _unit())
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as old:
        old.executescript(_SCHEMA_1)
        old.execute("ATTACH DATABASE ? AS v2", (str(tmp_path / "v2" / "runs.sqlite"),))
        old.execute("INSERT INTO meta SELECT * FROM v2.meta")
        old.execute("UPDATE meta SET value = '1' WHERE key = 'relulab_store_schema'")
        old.execute(
            "INSERT INTO units SELECT name, n_networks, steps, curve_names, wall_s, "
            "finished_at FROM v2.units"
        )
        old.execute("INSERT INTO networks SELECT * FROM v2.networks")
        old.execute("INSERT INTO unit_arrays SELECT * FROM v2.unit_arrays")
    return path


def test_schema_1_store_is_read_as_is_and_upgraded_on_resume(tmp_path):
    (tmp_path / "v2").mkdir()
    path = _schema_1_store(tmp_path)
    before = _digest(path)
    with RunStore.open(path) as store:
        assert store.schema == "1" and store.unit_checksums() == {"u1": None}
        np.testing.assert_array_equal(store.unit("u1").final["loss"], _unit().final["loss"])
    assert len(load(tmp_path)) == 3
    assert _digest(path) == before, "reading does not upgrade"
    with _new(tmp_path) as store:
        assert store.schema == SCHEMA_VERSION == "3"
        store.save_unit("u2", _unit())
    with RunStore.open(path) as store:
        assert store.schema == "3" and None not in store.unit_checksums().values()
        with RunStore.open(tmp_path / "v2" / "runs.sqlite") as fresh:
            assert store.unit_checksums()["u1"] == fresh.unit_checksums()["u1"]


def _schema_2_store(tmp_path):
    """A store as relulab wrote it before the checksum covered the unit's name."""
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    path = tmp_path / "runs.sqlite"
    with RunStore.open(path) as store:
        header, networks, arrays = store._rows("u1")
        unnamed = payload_checksum(header[:3], networks, arrays)
    with sqlite3.connect(path) as old:
        old.execute("UPDATE units SET checksum = ? WHERE name = 'u1'", (unnamed,))
        old.execute("UPDATE meta SET value = '2' WHERE key = 'relulab_store_schema'")
    return path


def test_schema_2_store_is_verified_without_the_name_and_upgraded_on_resume(tmp_path):
    path = _schema_2_store(tmp_path)
    with RunStore.open(path) as store:
        assert store.schema == "2"
        np.testing.assert_array_equal(store.unit("u1").final["loss"], _unit().final["loss"])
    with _new(tmp_path) as store:
        assert store.schema == "3"
    with RunStore.open(path) as store:
        store.verify()
        assert store.unit("u1").n_networks == 3


def test_a_renamed_unit_no_longer_verifies(tmp_path):
    """The checksum covers the unit's name: a unit renamed to a path that would escape the
    export directory is refused as damaged, however the rows were rewritten."""
    with _new(tmp_path) as store:
        store.save_unit("u1", _unit())
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA foreign_keys = OFF")
        for table, column in (("units", "name"), ("networks", "unit"), ("unit_arrays", "unit")):
            db.execute(f"UPDATE {table} SET {column} = '../../../x' WHERE {column} = 'u1'")
    with RunStore.open(path) as store, pytest.raises(StoreError, match="checksum"):
        store.unit("../../../x")
