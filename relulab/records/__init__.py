"""The records relulab writes and reads: frozen, versioned dataclasses with ``to_json`` /
``from_json``, so every page and command reads one typed shape.

* :mod:`relulab.records.claims` — a claim's (or a check's) record, as ``summary.json`` lists it;
* :mod:`relulab.records.units` — a unit's stored result and the schema a study declares for it.
"""

from relulab.records.claims import (
    KINDS,
    VERDICTS,
    ClaimRecord,
    Kind,
    PostHocRecord,
    Verdict,
    finite_or_none,
)
from relulab.records.units import (
    UnitResult,
    UnitSchema,
    UnitSchemaError,
    UnitView,
    array,
    curve,
    final,
)

__all__ = [
    "KINDS",
    "VERDICTS",
    "ClaimRecord",
    "Kind",
    "PostHocRecord",
    "UnitResult",
    "UnitSchema",
    "UnitSchemaError",
    "UnitView",
    "Verdict",
    "array",
    "curve",
    "final",
    "finite_or_none",
]
