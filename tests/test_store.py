"""The run store: round trip, pandas, refusal of foreign, corrupt or different-run files."""

import hashlib
import sqlite3

import numpy as np
import pytest

from relulab.store import RunStore, StoreError, UnitResult, load


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


def test_store_of_a_different_config_is_refused(tmp_path):
    _new(tmp_path).close()
    with pytest.raises(StoreError, match="differs in: a"):
        _new(tmp_path, {"a": 2})
    with pytest.raises(StoreError, match="holds a run of 'exp'"):
        RunStore.create_or_resume(tmp_path / "runs.sqlite", "other", "quick", {"a": 1}, {})
