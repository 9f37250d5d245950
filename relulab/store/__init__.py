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

Parts. :mod:`relulab.store.schema` — the file names, schema, checksum and the inspection that
refuses what is not a store; :mod:`relulab.store.runstore` — :class:`RunStore`;
:mod:`relulab.store.readers` — :func:`load`, :func:`load_sweep`, :func:`open_run_store` (and
archives), :func:`read_sweep_record`, :func:`has_store`. Every name is importable from
:mod:`relulab.store` itself.

>>> import relulab.store
>>> frame = relulab.store.load("runs/single-neuron-quick")   # doctest: +SKIP
"""

from relulab.records.units import UnitResult
from relulab.store.readers import has_store, load, load_sweep, open_run_store, read_sweep_record
from relulab.store.runstore import RunStore
from relulab.store.schema import (
    ARCHIVE_LIMIT,
    SCHEMA_VERSION,
    STORE_ARCHIVE,
    STORE_FILENAME,
    SWEEP_FILENAME,
    StoreError,
    UnknownUnitError,
    payload_checksum,
)

__all__ = [
    "ARCHIVE_LIMIT",
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
    "payload_checksum",
]
