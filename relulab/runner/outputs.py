"""A run's outputs, computed from its stored units only: ``summary.json`` (claims, checks,
metrics, registration), the figures and ``report.html``.

:func:`rebuild_outputs` draws the figures and writes everything (the end of every run, and
``relulab report``). :func:`rejudge` recomputes the summary from the stored units alone — the
claims judged under the code's registration, the figures kept as drawn — so a committed run can
be re-judged by anyone, byte for byte (``relulab rejudge``); :func:`judge_reading` judges them
under other values of ``judging`` fields without writing (a robustness reading). Every stored
unit is verified against its checksum and its study's declared schema
(:class:`relulab.records.UnitView`) before anything is computed from it; a refusal is a
:class:`~relulab.store.StoreError` and writes nothing.

A summary keeps the verdicts of every earlier registration of the run: when a rebuild or a
re-judgement finds a ``summary.json`` judged under another registration hash, its verdicts go
into ``previous_registrations`` beside the new ones.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relulab.config import apply_overrides, config_to_dict, provenance
from relulab.errors import describe_error
from relulab.experiments import get_experiment
from relulab.experiments.base import Experiment
from relulab.faults import fault_point
from relulab.files import remove_temporaries, write_atomic
from relulab.reading import read_json
from relulab.records import UnitResult, UnitSchemaError
from relulab.records.robustness import RobustnessRun
from relulab.records.summary import (
    FigureRecord,
    PreviousRegistration,
    SummaryRecord,
    UnitRecord,
)
from relulab.registry import change_commit, registration_status
from relulab.report import write_run_report
from relulab.runner.rundir import check_not_in_use, locked
from relulab.store import STORE_FILENAME, RunStore, StoreError, has_store, open_run_store

__all__ = [
    "SUMMARY_FILENAME",
    "RunFailedError",
    "StoredRun",
    "check_rebuildable",
    "judge",
    "judge_reading",
    "read_summary",
    "rebuild_outputs",
    "rejudge",
    "stored_run",
]

SUMMARY_FILENAME = "summary.json"


class RunFailedError(RuntimeError):
    """A run that started and then failed; its finished units are kept and it can resume."""


@dataclass(frozen=True)
class StoredRun:
    """A finished run as its store holds it: meta (experiment, preset, config, versions,
    created), the experiment and config, every unit (verified) and their thread counts."""

    meta: Mapping[str, Any]
    experiment: Experiment
    config: Any
    results: Mapping[str, UnitResult]
    threads: Mapping[str, int | None]


def _finished_plan(store: RunStore, out_dir: Path) -> tuple[Mapping[str, Any], Experiment, Any]:
    """Meta, experiment and config of the run in ``store``; :class:`StoreError` if this relulab
    cannot rebuild it or a unit is missing."""
    meta = store.meta()
    try:
        experiment = get_experiment(meta["experiment"])
        config = experiment.config(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in meta["config"].items()}
        )
    except (ValueError, TypeError) as error:
        raise StoreError(
            f"{out_dir} holds a run this relulab cannot rebuild ({describe_error(error)})"
        ) from None
    missing = [u.name for u in experiment.plan(config) if u.name not in store.done_units()]
    if missing:
        raise StoreError(
            f"{out_dir} is an unfinished run (missing: {', '.join(missing)}); re-run it to resume"
        )
    return meta, experiment, config


def check_rebuildable(out_dir: str | Path) -> None:
    """Refuse, writing nothing, a directory whose outputs :func:`rebuild_outputs` could not
    rebuild: no store, an unreadable or foreign one, an unfinished run, a live writer.

    Raises:
        StoreError: no usable store, or an unfinished run.
        DirectoryInUseError: another process is writing ``out_dir``.
    """
    out_dir = Path(out_dir)
    if not has_store(out_dir):
        raise StoreError(f"no run store at {out_dir / STORE_FILENAME}")
    check_not_in_use(out_dir)
    with open_run_store(out_dir) as store:
        _finished_plan(store, out_dir)


def check_unit(experiment: Experiment, config: Any, name: str, result: UnitResult) -> None:
    """Check one unit against the view its study declares for it.

    Raises:
        UnitSchemaError: the unit lacks a declared field (naming it).
    """
    if experiment.unit_views is None:
        return
    view = experiment.unit_views(config).get(name)
    if view is None:
        raise UnitSchemaError(f"{experiment.name} declares no schema for unit {name!r}")
    view.check(result, name)


def stored_run(out_dir: str | Path) -> StoredRun:
    """The finished run in ``out_dir``, every unit verified against its checksum and its
    declared schema before anything is computed from it.

    Raises:
        StoreError: no usable store, an unfinished run, altered unit data or a unit that does
            not hold what its study declares.
    """
    out_dir = Path(out_dir)
    if not has_store(out_dir):
        raise StoreError(f"no run store at {out_dir / STORE_FILENAME} (the unit data are missing)")
    with open_run_store(out_dir) as store:
        meta, experiment, config = _finished_plan(store, out_dir)
        results = {unit.name: store.unit(unit.name) for unit in experiment.plan(config)}
        threads = store.unit_threads()
    try:
        for name, result in results.items():
            check_unit(experiment, config, name, result)
    except UnitSchemaError as error:
        raise StoreError(f"{out_dir}: {error}; refusing to judge it") from None
    return StoredRun(meta, experiment, config, results, threads)


def read_summary(out_dir: Path) -> SummaryRecord | None:
    """The run's ``summary.json`` as a record, ``None`` when there is none or it is unreadable."""
    path = Path(out_dir) / SUMMARY_FILENAME
    try:
        return SummaryRecord.from_dict(read_json(path, "summary"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _previous(earlier: SummaryRecord | None, current_hash: str) -> tuple[PreviousRegistration, ...]:
    """The earlier registrations a new summary keeps: those ``earlier`` kept, plus ``earlier``
    itself when it was judged under another registration."""
    if earlier is None:
        return ()
    kept = tuple(earlier.previous_registrations)
    before = earlier.registration.hash if earlier.registration else ""
    if before == current_hash:
        return kept
    commit = earlier.registration.commit if earlier.registration else ""
    commit = commit or earlier.versions.get("relulab_commit", "")
    return (*kept, PreviousRegistration(before, earlier.verdicts(), commit))


def judge(
    stored: StoredRun,
    figures: Sequence[FigureRecord],
    earlier: SummaryRecord | None = None,
    overrides: Sequence[str] = (),
) -> SummaryRecord:
    """The run's summary: its claims and checks judged under the code's registration (at the
    run's config with ``overrides`` of ``judging`` fields), metrics, units and versions.

    Raises:
        ValueError: an override of a field that is not ``judging``, or an invalid value.
    """
    meta, experiment = stored.meta, stored.experiment
    config = _judging_config(stored, overrides)
    analysis = experiment.analyse(stored.results, config)
    commit = str(meta["versions"].get("relulab_commit", ""))
    registration, status = registration_status(experiment, meta["preset"], config, commit)
    stand_in = experiment.stand_in(config) if experiment.stand_in is not None else ""
    records = [
        dataclasses.replace(c, registration=registration.claim_hash(c.id), stand_in=stand_in)
        for c in analysis.claims
    ]
    preset = config_to_dict(experiment.presets[meta["preset"]])
    values = config_to_dict(config) if overrides else meta["config"]  # stored: keys sorted
    return SummaryRecord(
        experiment=experiment.name,
        title=experiment.title,
        seed_document=experiment.seed,
        preset=meta["preset"],
        config=values,
        config_provenance=provenance(config),
        overrides={k: v for k, v in values.items() if preset.get(k) != v},
        claims=tuple(c for c in records if not c.is_check),
        metrics=dict(analysis.metrics),
        units={
            name: UnitRecord(
                r.n_networks, round(r.wall_s, 3), int(r.diverged.sum()), stored.threads.get(name)
            )
            for name, r in stored.results.items()
        },
        versions=meta["versions"],
        created=meta["created"],
        device=meta["versions"].get("device", "unknown"),
        checks=tuple(c for c in records if c.is_check),
        figures=tuple(figures),
        registration=status,
        previous_registrations=_previous(earlier, status.hash),
    )


def _judging_config(stored: StoredRun, overrides: Sequence[str]) -> Any:
    """The run's config with ``overrides`` of fields only the claims read."""
    if not overrides:
        return stored.config
    changed = apply_overrides(stored.config, list(overrides))
    kinds = {f.name: f.metadata.get("judging", False) for f in dataclasses.fields(changed)}
    before = config_to_dict(stored.config)
    computed = [
        key
        for key, value in config_to_dict(changed).items()
        if value != before[key] and not kinds.get(key)
    ]
    if computed:
        raise ValueError(f"{computed[0]} changes what the units compute; run it, do not rejudge")
    return changed


def judge_reading(out_dir: str | Path, overrides: Sequence[str]) -> SummaryRecord:
    """The finished run in ``out_dir`` judged again with ``overrides`` — fields that only the
    claims read (``setting(..., judging=True)``), so the stored units are the ones the changed
    config would compute. Writes nothing (a robustness reading).

    Raises:
        StoreError: no usable store, an unfinished run or altered unit data.
        ValueError: an override of a field that is not ``judging``, or an invalid value.
    """
    return judge(stored_run(out_dir), (), None, overrides)


def _about(experiment: Experiment) -> str:
    """The report's "About": the study package's docstring (its module's, for a one-module
    study), else the experiment's one-line summary."""
    module = inspect.getmodule(experiment.plan)
    package = sys.modules.get(module.__package__ or "") if module else None
    for candidate in (package, module):
        if candidate is not None and candidate.__name__ != "relulab.experiments":
            text = inspect.getdoc(candidate)
            if text:
                return text
    return experiment.summary


def _write(out_dir: Path, summary: SummaryRecord, robustness: RobustnessRun | None) -> None:
    """``report.html``, then ``summary.json`` (last: it exists exactly when all is written)."""
    experiment = get_experiment(summary.experiment)
    changed_in = ""
    if summary.previous_registrations and summary.registration is not None:
        changed_in = change_commit(experiment, summary.preset, summary.registration.hash)
    write_run_report(
        out_dir, summary, _about(experiment), robustness=robustness, changed_in=changed_in
    )
    fault_point("outputs-report")
    write_atomic(out_dir / SUMMARY_FILENAME, summary.to_json())


def rebuild_outputs(
    out_dir: str | Path, robustness: Mapping[str, RobustnessRun] | None = None
) -> SummaryRecord:
    """(Re)compute claims, metrics, figures, ``summary.json`` and ``report.html`` from the store,
    holding the directory's lock; with ``robustness`` (experiment → its robustness run) the
    report gains each claim's standing over that run's readings.

    Raises:
        StoreError: no usable store, or an unfinished run.
        DirectoryInUseError: another process is writing ``out_dir``.
        RunFailedError: the analysis, a figure or the report failed.
    """
    out_dir = Path(out_dir)
    if not has_store(out_dir):
        raise StoreError(f"no run store at {out_dir / STORE_FILENAME}")
    with locked(out_dir):
        remove_temporaries(out_dir)
        return build_outputs(out_dir, robustness)


def build_outputs(
    out_dir: Path, robustness: Mapping[str, RobustnessRun] | None = None
) -> SummaryRecord:
    """:func:`rebuild_outputs` for a caller that holds the directory's lock."""
    stored = stored_run(out_dir)
    earlier = read_summary(out_dir)
    (out_dir / SUMMARY_FILENAME).unlink(missing_ok=True)  # present again only when complete
    try:
        drawn = stored.experiment.figures(stored.results, stored.config, out_dir)
        fault_point("outputs-figures")
        figures = [FigureRecord(f.filename, f.caption) for f in drawn]
        summary = judge(stored, figures, earlier)
        _write(out_dir, summary, (robustness or {}).get(summary.experiment))
    except Exception as error:
        raise RunFailedError(
            f"all units of {out_dir} are stored, but building its outputs failed "
            f"({describe_error(error)}); `relulab report {out_dir}` retries"
        ) from error
    return summary


def rejudge(out_dir: str | Path) -> tuple[SummaryRecord, SummaryRecord | None]:
    """The run's summary recomputed from its stored units under the code's registration, the
    figures kept as drawn (their list from the existing summary; drawn anew only when it names
    none). Writes nothing.

    Returns:
        The recomputed summary and the existing one (``None`` when there is none).

    Raises:
        StoreError: no usable store, an unfinished run, altered or missing unit data, or a unit
            that does not hold what its study declares.
    """
    out_dir = Path(out_dir)
    stored = stored_run(out_dir)
    earlier = read_summary(out_dir)
    figures = earlier.figures if earlier is not None else ()
    if not figures:
        figures = tuple(
            FigureRecord(f.filename, f.caption)
            for f in stored.experiment.figures(stored.results, stored.config, out_dir)
        )
    return judge(stored, figures, earlier), earlier


def write_rejudged(
    out_dir: str | Path, summary: SummaryRecord, robustness: RobustnessRun | None = None
) -> None:
    """Write a re-judged summary and its report, holding the directory's lock."""
    out_dir = Path(out_dir)
    with locked(out_dir):
        _write(out_dir, summary, robustness)


def summary_json(summary: SummaryRecord) -> dict[str, Any]:
    """A summary as the commands return it (the content of ``summary.json``)."""
    return json.loads(summary.to_json())
