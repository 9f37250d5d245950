"""Robustness: does each verdict survive every plausible reading of what the seed left unsaid?

Every seed leaves settings unstated; relulab fills them in as ``inferred`` config fields, and
a field may declare the values another careful reader of the seed could pick
(``setting(..., "inferred", alternatives=(…))``). ``relulab robustness EXPERIMENT`` runs the
preset and, one field at a time, each alternative with every other field at the preset — a
multiverse (specification-curve) analysis of the scorecard. ``--pairs`` adds the pairwise
combinations of the fields that flipped a verdict.

Each reading is an ordinary run in ``DIR/<field>=<value>/`` (the preset itself in
``DIR/preset/``) — except a reading that changes only ``judging`` fields (read by the claims,
never by the units: a tolerance, a threshold), which is judged on the preset's stored units
(:func:`relulab.runner.outputs.judge_reading`) and links the preset's report — all units scheduled
together through the sweep machinery
(:mod:`relulab.runner.sweep`: ``sweep.json``, ``sweep.html``, resumable, locked). Then
``DIR/robustness.json`` and ``DIR/robustness.html``: per claim its verdict in every reading,
"holds in k of n readings", and the fields whose alternatives change it; per experiment, how
many claims robustly hold, robustly fail, or depend on a reading.

A variant that makes a claim meaningless says ``not tested`` for it (the experiment's own
``untested``); such a reading is left out of the claim's n, never counted as a failure.

The reports read finished robustness runs back
(:func:`relulab.records.robustness.find_robustness_runs`): ``relulab reproduce --robustness
DIR`` and ``relulab report … --robustness DIR`` weigh each claim's readings into its headline
standing on the index and the experiment reports. ``relulab rejudge DIR`` re-judges a
robustness run from its readings' stored units (:func:`rejudge_robustness`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relulab.config import ConfigError, alternatives, override_text, provenance
from relulab.experiments import get_experiment
from relulab.files import check_output_dir, write_atomic
from relulab.records.robustness import (
    ROBUSTNESS_FILENAME,
    ROBUSTNESS_PAGE,
    ClaimRobustness,
    ReadingRecord,
    RobustnessRecord,
    classify,
    read_robustness_run,
)
from relulab.records.sweep import SweepPointRecord, SweepRecord
from relulab.report.robustness import write_robustness_page
from relulab.runner.executor import Executor
from relulab.runner.outputs import judge_reading, read_summary, rejudge
from relulab.runner.rundir import locked
from relulab.runner.sweep import (
    PreparedSweep,
    SweepPoint,
    _check_sweep_dir,
    execute_sweep,
    point_name,
    prepare_points,
)

__all__ = [
    "BASELINE",
    "ROBUSTNESS_FILENAME",
    "ROBUSTNESS_PAGE",
    "Variant",
    "flipping_fields",
    "judged_point",
    "pair_variants",
    "prepare_robustness",
    "reading_overrides",
    "rejudge_robustness",
    "robustness_record",
    "run_robustness",
    "single_variants",
    "write_robustness",
]

BASELINE = "preset"


@dataclass(frozen=True)
class Variant:
    """One reading: its directory name, the ``key=value`` overrides it puts on the preset, and
    whether every field it changes is ``judging`` (only the claims read it: the reading is
    judged on the preset's stored units instead of being run)."""

    name: str
    overrides: tuple[str, ...]
    judging: bool = False

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(item.partition("=")[0] for item in self.overrides)


def _declared(name: str, preset: str, fields: Sequence[str] | None) -> dict[str, tuple]:
    experiment = get_experiment(name)
    if preset not in experiment.presets:
        raise ConfigError(
            f"unknown preset {preset!r} for {name}; choose one of {', '.join(experiment.presets)}"
        )
    config = experiment.presets[preset]
    declared = {  # an alternative equal to this preset's own value (a paper size) is no reading
        field: tuple(v for v in values if v != getattr(config, field))
        for field, values in alternatives(config).items()
    }
    declared = {field: values for field, values in declared.items() if values}
    if fields:
        unknown = [field for field in fields if field not in declared]
        if unknown:
            raise ConfigError(
                f"{unknown[0]} declares no alternatives in {name}; choose among "
                f"{', '.join(declared) or '(none)'}"
            )
        declared = {field: declared[field] for field in fields}
    if not declared:
        raise ConfigError(f"{name} declares no alternative readings of its inferred settings")
    return declared


def _judging_fields(name: str, preset: str) -> set[str]:
    config = get_experiment(name).presets[preset]
    return {f.name for f in dataclasses.fields(config) if f.metadata.get("judging")}


def single_variants(name: str, preset: str, fields: Sequence[str] | None = None) -> list[Variant]:
    """The preset, then each declared alternative of each inferred field alone (field order).

    Raises:
        ConfigError: an unknown preset, a field in ``fields`` without alternatives, or an
            experiment that declares none.
    """
    declared = _declared(name, preset, fields)
    judging = _judging_fields(name, preset)
    variants = [Variant(BASELINE, ())]
    for field, values in declared.items():
        for value in values:
            variants.append(
                Variant(
                    point_name({field: value}), (override_text(field, value),), field in judging
                )
            )
    return variants


def pair_variants(name: str, preset: str, fields: Sequence[str]) -> list[Variant]:
    """Every combination of two alternatives of two different fields among ``fields``."""
    declared = _declared(name, preset, fields)
    judging = _judging_fields(name, preset)
    variants = []
    for first, second in itertools.combinations(declared, 2):
        for a, b in itertools.product(declared[first], declared[second]):
            variants.append(
                Variant(
                    point_name({first: a, second: b}),
                    (override_text(first, a), override_text(second, b)),
                    first in judging and second in judging,
                )
            )
    return variants


def prepare_robustness(
    name: str,
    preset: str,
    variants: Sequence[Variant],
    fixed: Sequence[str],
    seed: int | None,
    device: str,
    out_dir: str | Path,
    allow_dirty: bool = False,
) -> tuple[PreparedSweep, list[tuple[Variant, SweepPoint]]]:
    """Resolve and validate every reading, writing nothing: the readings to run (the preset and
    every reading that changes a field the units read), each into ``out_dir/<variant>/``, and
    the readings to judge on the preset's stored units. Each point's settings hold every varied
    field's value at that reading, so the pages can show them side by side.

    Raises:
        ValueError (``ConfigError``, ``OutputPathError``), ``StoreError`` or
        ``DirectoryInUseError``, as :func:`relulab.runner.sweep.prepare_sweep` does.
    """
    out = check_output_dir(out_dir)
    _check_sweep_dir(out, name, preset, fixed, kind="robustness run")
    keys = list(dict.fromkeys(field for v in variants for field in v.fields))
    fixed_keys = {item.partition("=")[0].strip() for item in fixed}
    both = [key for key in keys if key in fixed_keys]
    if both:
        raise ConfigError(f"{both[0]} is varied by robustness and fixed by --set; give it once")
    points, runs = prepare_points(
        name,
        preset,
        [list(v.overrides) for v in variants],
        fixed,
        seed,
        device,
        out,
        names=[v.name for v in variants],
        record_keys=keys,
        allow_dirty=allow_dirty,
    )
    grid: dict[str, list[str]] = {key: [] for key in keys}
    for v in variants:
        for item in v.overrides:
            field, _, text = item.partition("=")
            grid[field].append(text)
    run = [k for k, v in enumerate(variants) if not v.judging]
    return PreparedSweep(
        name, preset, grid, list(fixed), [points[k] for k in run], [runs[k] for k in run], out
    ), [(v, points[k]) for k, v in enumerate(variants) if v.judging]


# ---------------------------------------------------------------------------------------------
# Reading the runs.
# ---------------------------------------------------------------------------------------------
def _point_fields(point: SweepPointRecord, baseline: SweepPointRecord) -> tuple[str, ...]:
    """The fields a reading changes from the preset."""
    return tuple(k for k, v in point.settings.items() if baseline.settings.get(k) != v)


def _claim_robustness(
    claim_id: str, points: Sequence[SweepPointRecord], baseline: SweepPointRecord
) -> ClaimRobustness:
    by_point = {p.name: {c.id: c for c in (*p.claims, *p.checks)} for p in points}
    verdicts = {name: rows[claim_id].verdict for name, rows in by_point.items() if claim_id in rows}
    base = by_point[BASELINE].get(claim_id)
    preset = base.verdict if base is not None else "missing"
    tested = [v for v in verdicts.values() if v != "not tested"]
    flipped = dict.fromkeys(
        field
        for p in points
        if p.name != BASELINE
        and verdicts.get(p.name, "not tested") != "not tested"
        and preset not in ("not tested", "missing")
        and verdicts[p.name] != preset
        for field in _point_fields(p, baseline)
    )
    first = base or next(rows[claim_id] for rows in by_point.values() if claim_id in rows)
    return ClaimRobustness(
        claim_id,
        first.statement,
        first.beyond_seed,
        preset,
        verdicts,
        tested.count("holds"),
        len(tested),
        classify(list(verdicts.values())),
        tuple(flipped),
        first.kind,
        base.registration if base is not None else "",
        {p.what: p.verdict for p in base.post_hoc} if base is not None else {},
    )


def robustness_record(sweep: SweepRecord, registration: Any = None) -> RobustnessRecord:
    """``robustness.json`` from a robustness run's sweep record.

    Args:
        sweep: the readings as a sweep's points (the preset is the point ``preset``).
        registration: the preset reading's registration (its summary's), if known.

    Returns:
        The :class:`~relulab.records.RobustnessRecord`: per reading its name, changed fields,
        settings, whether it finished and what it was judged on; per claim (and check) its
        verdict at the preset and in each reading, how many readings test it and in how many
        it holds, its standing (:func:`classify`), the fields whose alternatives give another
        tested verdict than the preset, its kind and registration hash; a ``summary`` of the
        claims per standing and ``depends_on`` (field → claims it flips).
    """
    points = list(sweep.points)
    baseline = next((p for p in points if p.name == BASELINE), None)
    if baseline is None:
        raise ValueError("a robustness run needs its preset reading (DIR/preset/)")
    ids = list(dict.fromkeys(c.id for p in points for c in (*p.claims, *p.checks)))
    claims = tuple(_claim_robustness(claim_id, points, baseline) for claim_id in ids)
    depends_on: dict[str, list[str]] = {}
    for claim in claims:
        for field in claim.flipped_by:
            depends_on.setdefault(field, []).append(claim.id)
    standings = [c.standing for c in claims if c.kind == "claim"]
    readings = tuple(
        ReadingRecord(p.name, _point_fields(p, baseline), p.settings, p.finished, p.judged_on)
        for p in points
    )
    summary = {
        "readings": len(points),
        "claims": len(standings),
        "checks": len(claims) - len(standings),
        **{s: standings.count(s) for s in sorted(set(standings))},
        "depends_on": depends_on,
    }
    return RobustnessRecord(
        sweep.experiment, sweep.preset, readings, claims, summary, registration=registration
    )


def flipping_fields(record: RobustnessRecord) -> list[str]:
    """The fields whose alternatives changed at least one tested verdict (for ``--pairs``)."""
    return list(record.summary.get("depends_on") or {})


def _field_notes(name: str, preset: str, fields: Sequence[str]) -> dict[str, dict[str, Any]]:
    rows = provenance(get_experiment(name).presets[preset])
    return {field: rows[field] for field in fields if field in rows}


def write_robustness(out: Path, sweep: SweepRecord) -> RobustnessRecord:
    """Write ``robustness.json`` and ``robustness.html`` into ``out``; return the record."""
    baseline = read_summary(out / BASELINE)
    record = robustness_record(sweep, baseline.registration if baseline else None)
    fields = list(dict.fromkeys(f for r in record.readings for f in r.fields))
    record = dataclasses.replace(
        record, fields=_field_notes(record.experiment, record.preset, fields)
    )
    write_robustness_page(out / ROBUSTNESS_PAGE, record)
    write_atomic(out / ROBUSTNESS_FILENAME, record.to_json())
    return record


def run_robustness(
    name: str,
    preset: str,
    fields: Sequence[str] | None,
    pairs: bool,
    fixed: Sequence[str],
    seed: int | None,
    device: str,
    out_dir: str | Path,
    executor: Executor,
    quiet: bool = False,
    allow_dirty: bool = False,
) -> RobustnessRecord:
    """Run the preset and every single-field reading (then, with ``pairs``, the pairwise
    readings of the fields that flipped a verdict) and write ``robustness.json`` / ``.html``.

    Everything is validated before the first run starts; a re-run of the same command resumes.

    Returns:
        The record written to ``robustness.json``.
    """
    common = (fixed, seed, device, out_dir, executor, quiet, allow_dirty)
    singles = single_variants(name, preset, fields)
    with locked(Path(out_dir)):  # one writer from the first reading to robustness.json
        record = _run_readings(name, preset, singles, *common)
        flipped = flipping_fields(record)
        if pairs and len(flipped) >= 2:
            both = [*singles, *pair_variants(name, preset, flipped)]
            record = _run_readings(name, preset, both, *common)
    return record


def judged_point(
    baseline: Path, name: str, settings: Mapping[str, Any], overrides: Sequence[str]
) -> SweepPointRecord:
    """A reading of ``judging`` fields only, judged on the preset's stored units — the path
    ``relulab rejudge`` takes (:func:`relulab.runner.outputs.judge_reading`)."""
    summary = judge_reading(baseline, overrides)
    return SweepPointRecord.of_summary(name, settings, summary, judged_on=BASELINE)


def _run_readings(
    name: str,
    preset: str,
    variants: Sequence[Variant],
    fixed: Sequence[str],
    seed: int | None,
    device: str,
    out_dir: str | Path,
    executor: Executor,
    quiet: bool,
    allow_dirty: bool,
) -> RobustnessRecord:
    prepared, judged = prepare_robustness(
        name, preset, variants, fixed, seed, device, out_dir, allow_dirty
    )
    sweep = execute_sweep(prepared, executor, quiet=quiet)
    baseline = prepared.out_dir / BASELINE
    points = list(sweep.points) + [
        judged_point(baseline, point.name, point.settings, variant.overrides)
        for variant, point in judged
    ]
    order = {v.name: k for k, v in enumerate(variants)}
    points.sort(key=lambda p: order.get(p.name, len(order)))
    return write_robustness(prepared.out_dir, dataclasses.replace(sweep, points=tuple(points)))


def reading_overrides(reading: ReadingRecord) -> list[str]:
    """The ``key=value`` overrides a recorded reading puts on the preset."""
    return [override_text(field, reading.settings[field]) for field in reading.fields]


def rejudge_robustness(out_dir: str | Path) -> tuple[RobustnessRecord, list[tuple[Path, Any]]]:
    """A robustness run re-judged from its readings' stored units: each run reading's summary
    recomputed (:func:`relulab.runner.outputs.rejudge`), each judged reading judged again on
    the preset's units. Writes nothing.

    Returns:
        The new record, and each run reading's directory with its ``(new, existing)``
        summaries (to write, or to compare).

    Raises:
        StoreError: a reading's unit data missing, altered or of another schema.
        ValueError: no readable ``robustness.json``.
    """
    out = Path(out_dir)
    old = read_robustness_run(out).record
    baseline = out / BASELINE
    points, summaries = [], []
    for reading in old.readings:
        if reading.judged_on is not None:
            points.append(
                judged_point(baseline, reading.name, reading.settings, reading_overrides(reading))
            )
            continue
        new, existing = rejudge(out / reading.name)
        summaries.append((out / reading.name, (new, existing)))
        points.append(SweepPointRecord.of_summary(reading.name, reading.settings, new))
    sweep = SweepRecord(old.experiment, old.preset, points=tuple(points))
    registration = next((new.registration for d, (new, _) in summaries if d == baseline), None)
    record = robustness_record(sweep, registration)
    return dataclasses.replace(record, fields=old.fields), summaries
