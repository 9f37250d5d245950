"""Reading run and sweep directories (:mod:`relulab.store`): whether a directory holds a store,
its store opened for reading (``runs.sqlite``, or the committed ``runs.sqlite.xz`` inflated to a
temporary file), every network of a run or of a sweep as one table, and a sweep's checked
``sweep.json``."""

from __future__ import annotations

import contextlib
import lzma
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from relulab.files import check_path_name
from relulab.reading import InputFileError, read_json
from relulab.records.sweep import SweepRecord
from relulab.store.runstore import RunStore
from relulab.store.schema import (
    ARCHIVE_LIMIT,
    STORE_ARCHIVE,
    STORE_FILENAME,
    SWEEP_FILENAME,
    StoreError,
)

__all__ = ["has_store", "load", "load_sweep", "open_run_store", "read_sweep_record"]


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
