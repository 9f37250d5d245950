"""The records relulab writes and reads: frozen, versioned dataclasses with ``to_json`` /
``from_json``, so every page and command reads one typed shape. Plain data: this package imports
nothing from the runner, the pages or the experiments.

* :mod:`relulab.records.claims` — a claim's (or a check's) record, as ``summary.json`` lists it;
* :mod:`relulab.records.summary` — a run's ``summary.json``;
* :mod:`relulab.records.sweep` — a sweep's ``sweep.json``;
* :mod:`relulab.records.robustness` — a robustness run's ``robustness.json``, read back;
* :mod:`relulab.records.standing` — a claim's headline standing over its readings, the counts;
* :mod:`relulab.records.registration` — a study's registration (the committed registry file);
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
from relulab.records.registration import Registration
from relulab.records.robustness import (
    ClaimRobustness,
    ReadingRecord,
    RobustnessRecord,
    RobustnessRun,
    classify,
    find_robustness_runs,
    read_robustness_run,
)
from relulab.records.standing import Standing, count_line, standing
from relulab.records.summary import (
    FigureRecord,
    PreviousRegistration,
    RegistrationRecord,
    SummaryRecord,
    UnitRecord,
)
from relulab.records.sweep import SweepPointRecord, SweepRecord
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
    "ClaimRobustness",
    "FigureRecord",
    "Kind",
    "PostHocRecord",
    "PreviousRegistration",
    "ReadingRecord",
    "Registration",
    "RegistrationRecord",
    "RobustnessRecord",
    "RobustnessRun",
    "Standing",
    "SummaryRecord",
    "SweepPointRecord",
    "SweepRecord",
    "UnitRecord",
    "UnitResult",
    "UnitSchema",
    "UnitSchemaError",
    "UnitView",
    "Verdict",
    "array",
    "classify",
    "count_line",
    "curve",
    "final",
    "find_robustness_runs",
    "finite_or_none",
    "read_robustness_run",
    "standing",
]
