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
(:func:`relulab.runner.execute.rejudge`) and links the preset's report — all units scheduled
together through the sweep machinery
(:mod:`relulab.runner.sweep`: ``sweep.json``, ``sweep.html``, resumable, locked). Then
``DIR/robustness.json`` and ``DIR/robustness.html``: per claim its verdict in every reading,
"holds in k of n readings", and the fields whose alternatives change it; per experiment, how
many claims robustly hold, robustly fail, or depend on a reading.

A variant that makes a claim meaningless says ``not tested`` for it (the experiment's own
``untested``); such a reading is left out of the claim's n, never counted as a failure.

The reports read finished robustness runs back (:func:`find_robustness_runs`,
:func:`robustness_for`): ``relulab reproduce --robustness DIR`` and ``relulab report …
--robustness DIR`` add each claim's standing to the index and the experiment reports.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relulab.config import ConfigError, alternatives, override_text, provenance
from relulab.experiments import get_experiment
from relulab.files import check_output_dir, write_atomic
from relulab.report import scorecard
from relulab.runner.execute import rejudge
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
    "RobustnessRun",
    "Variant",
    "classify",
    "find_robustness_runs",
    "flipping_fields",
    "pair_variants",
    "prepare_robustness",
    "read_robustness_run",
    "robustness_for",
    "robustness_record",
    "run_robustness",
    "single_variants",
]

BASELINE = "preset"
ROBUSTNESS_FILENAME = "robustness.json"
ROBUSTNESS_PAGE = "robustness.html"


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
    _check_sweep_dir(out, name)
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
    )
    grid = {key: [] for key in keys}
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
def _verdicts(point: Mapping[str, Any]) -> dict[str, str]:
    return {claim["id"]: scorecard.verdict(claim) for claim in point.get("claims") or []}


def classify(verdicts: Sequence[str]) -> str:
    """A claim's standing over readings: ``robust holds`` / ``robust fails`` / ``robust
    inconclusive`` when every reading that tests it agrees, ``depends`` when they differ,
    ``not tested`` when none tests it.

    Example:
        >>> classify(["holds", "not tested", "holds"]), classify(["holds", "fails"])
        ('robust holds', 'depends')
    """
    tested = {v for v in verdicts if v != "not tested"}
    if not tested:
        return "not tested"
    return f"robust {tested.pop()}" if len(tested) == 1 else "depends"


def _point_fields(point: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """The fields a reading changes from the preset."""
    settings, base = point.get("settings") or {}, baseline.get("settings") or {}
    return [key for key, value in settings.items() if base.get(key) != value]


def robustness_record(sweep_record: Mapping[str, Any]) -> dict[str, Any]:
    """``robustness.json`` from a robustness run's ``sweep.json``.

    Returns:
        ``experiment``, ``preset``, ``readings`` (per reading: ``name``, ``fields`` changed,
        ``settings``, ``finished``), ``claims`` (per claim: ``id``, ``statement``,
        ``beyond_seed``, ``preset`` verdict, ``verdicts`` by reading, ``holds``, ``tested``
        (n), ``standing`` (:func:`classify`), ``flipped_by`` (fields whose alternatives give
        another tested verdict than the preset)) and ``summary`` (claims per standing, and
        ``depends_on``: field → claims it flips).
    """
    points = list(sweep_record.get("points") or [])
    baseline = next((p for p in points if p["name"] == BASELINE), None)
    if baseline is None:
        raise ValueError("a robustness run needs its preset reading (DIR/preset/)")
    base = _verdicts(baseline)
    by_point = {p["name"]: _verdicts(p) for p in points}
    claim_ids = list(dict.fromkeys(c for p in points for c in by_point[p["name"]]))
    first = {c["id"]: c for p in points for c in p.get("claims") or []}
    claims, depends_on = [], {}
    for claim_id in claim_ids:
        verdicts = {name: v[claim_id] for name, v in by_point.items() if claim_id in v}
        tested = [v for v in verdicts.values() if v != "not tested"]
        flipped = sorted(
            {
                field
                for p in points
                if p["name"] != BASELINE
                and verdicts.get(p["name"], "not tested") != "not tested"
                and base.get(claim_id, "not tested") != "not tested"
                and verdicts[p["name"]] != base[claim_id]
                for field in _point_fields(p, baseline)
            }
        )
        for field in flipped:
            depends_on.setdefault(field, []).append(claim_id)
        claims.append(
            {
                "id": claim_id,
                "statement": first[claim_id].get("statement", ""),
                "beyond_seed": scorecard.is_beyond_seed(first[claim_id]),
                "preset": base.get(claim_id, "missing"),
                "verdicts": verdicts,
                "holds": tested.count("holds"),
                "tested": len(tested),
                "standing": classify(list(verdicts.values())),
                "flipped_by": flipped,
            }
        )
    standings = [c["standing"] for c in claims]
    return {
        "experiment": sweep_record.get("experiment", ""),
        "preset": sweep_record.get("preset", ""),
        "readings": [
            {
                "name": p["name"],
                "fields": _point_fields(p, baseline),
                "settings": p.get("settings") or {},
                "finished": bool(p.get("finished")),
                "judged_on": p.get("judged_on"),
            }
            for p in points
        ],
        "claims": claims,
        "summary": {
            "readings": len(points),
            "claims": len(claims),
            **{s: standings.count(s) for s in sorted(set(standings))},
            "depends_on": depends_on,
        },
    }


def flipping_fields(record: Mapping[str, Any]) -> list[str]:
    """The fields whose alternatives changed at least one tested verdict (for ``--pairs``)."""
    return list((record.get("summary") or {}).get("depends_on") or {})


def _field_notes(name: str, preset: str, fields: Sequence[str]) -> dict[str, dict[str, Any]]:
    rows = provenance(get_experiment(name).presets[preset])
    return {field: rows[field] for field in fields if field in rows}


def write_robustness(out: Path, sweep_record: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``robustness.json`` and ``robustness.html`` into ``out``; return the record."""
    from relulab.report.robustness import write_robustness_page

    record = robustness_record(sweep_record)
    fields = list(dict.fromkeys(f for r in record["readings"] for f in r["fields"]))
    record["fields"] = _field_notes(record["experiment"], record["preset"], fields)
    write_robustness_page(out / ROBUSTNESS_PAGE, record)
    write_atomic(out / ROBUSTNESS_FILENAME, json.dumps(record, indent=2, allow_nan=False))
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
    executor: Any,
    quiet: bool = False,
) -> dict[str, Any]:
    """Run the preset and every single-field reading (then, with ``pairs``, the pairwise
    readings of the fields that flipped a verdict) and write ``robustness.json`` / ``.html``.

    Everything is validated before the first run starts; a re-run of the same command resumes.

    Returns:
        The content of ``robustness.json``.
    """
    singles = single_variants(name, preset, fields)
    record = _run_readings(name, preset, singles, fixed, seed, device, out_dir, executor, quiet)
    flipped = flipping_fields(record)
    if pairs and len(flipped) >= 2:
        both = [*singles, *pair_variants(name, preset, flipped)]
        record = _run_readings(name, preset, both, fixed, seed, device, out_dir, executor, quiet)
    return record


def _run_readings(
    name: str,
    preset: str,
    variants: Sequence[Variant],
    fixed: Sequence[str],
    seed: int | None,
    device: str,
    out_dir: str | Path,
    executor: Any,
    quiet: bool,
) -> dict[str, Any]:
    prepared, judged = prepare_robustness(name, preset, variants, fixed, seed, device, out_dir)
    sweep_record = execute_sweep(prepared, executor, quiet=quiet)
    baseline = prepared.out_dir / BASELINE
    points = list(sweep_record["points"])
    for variant, point in judged:
        outcome = rejudge(baseline, variant.overrides)
        points.append(
            {
                "name": point.name,
                "settings": point.settings,
                "claims": outcome["claims"],
                "metrics": outcome["metrics"],
                "error": None,
                "finished": True,
                "judged_on": BASELINE,
            }
        )
    order = {v.name: k for k, v in enumerate(variants)}
    points.sort(key=lambda p: order.get(p["name"], len(order)))
    return write_robustness(prepared.out_dir, {**sweep_record, "points": points})


# ---------------------------------------------------------------------------------------------
# Reading finished robustness runs back, for the index and the reports.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RobustnessRun:
    """A finished robustness run as the index and the reports show it: its experiment and
    preset (``""`` when the record names none), its claims by id (rows of ``robustness.json``),
    its ``robustness.json`` and its page (``None`` when there is no ``robustness.html``)."""

    experiment: str
    preset: str
    claims: Mapping[str, Mapping[str, Any]]
    record: Path
    page: Path | None


def _natural(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{what} is {value!r}, not a count")
    return value


def _claim_row(row: Any) -> dict[str, Any]:
    """One row of the record's ``claims``, checked for what the reports show."""
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        raise TypeError(f"a claim without an id: {row!r:.60}")
    if row.get("standing") not in scorecard.STANDING_VERDICT:
        raise ValueError(f"claim {row['id']} has no known standing ({row.get('standing')!r:.40})")
    holds, tested = _natural(row.get("holds"), "holds"), _natural(row.get("tested"), "tested")
    flipped = row.get("flipped_by", [])
    if holds > tested or not isinstance(flipped, list):
        raise ValueError(f"claim {row['id']} holds in {holds} of {tested} readings")
    if not all(isinstance(field, str) for field in flipped):
        raise TypeError(f"claim {row['id']}: flipped_by names no fields")
    return row


def _parse_record(text: str) -> tuple[str, str, dict[str, dict[str, Any]]]:
    record = json.loads(text)
    if not isinstance(record, dict) or not isinstance(record.get("experiment"), str):
        raise TypeError("it names no experiment")
    preset = record.get("preset") or ""
    if not record["experiment"] or not isinstance(preset, str):
        raise TypeError("it names no experiment or no preset")
    if not isinstance(record.get("claims"), list):
        raise TypeError("it lists no claims")
    claims = [_claim_row(row) for row in record["claims"]]
    return record["experiment"], preset, {row["id"]: row for row in claims}


def read_robustness_run(directory: str | Path) -> RobustnessRun:
    """The robustness run in ``directory`` (its ``robustness.json``), checked before any page
    shows it.

    Raises:
        ValueError: no ``robustness.json``, or one that is unreadable or of another shape.
    """
    path = Path(directory) / ROBUSTNESS_FILENAME
    try:
        experiment, preset, claims = _parse_record(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path} is not a readable robustness record ({type(error).__name__}: "
            f"{' '.join(str(error).split())}); re-run `relulab robustness` to rebuild it"
        ) from None
    page = path.with_name(ROBUSTNESS_PAGE)
    return RobustnessRun(experiment, preset, claims, path, page if page.is_file() else None)


def _record_dirs(directory: Path) -> list[Path]:
    """``directory`` when it holds a ``robustness.json``, else its sub-directories that do."""
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory")
    if os.path.lexists(directory / ROBUSTNESS_FILENAME):
        return [directory]
    try:
        children = sorted(directory.iterdir())
    except OSError as error:
        raise ValueError(f"cannot read {directory} ({error.strerror or error})") from None
    found = [child for child in children if os.path.lexists(child / ROBUSTNESS_FILENAME)]
    if not found:
        raise ValueError(
            f"{directory} holds no robustness run (no {ROBUSTNESS_FILENAME} in it or its "
            "sub-directories)"
        )
    return found


def find_robustness_runs(directory: str | Path) -> dict[str, RobustnessRun]:
    """The robustness runs in ``directory`` by experiment: ``directory`` itself when it is
    one, else each sub-directory that is one (``results/robustness/quick/<experiment>/``).

    Raises:
        ValueError: ``directory`` is no directory or holds no robustness run, a record is
            unreadable, or two records are of the same experiment.
    """
    runs: dict[str, RobustnessRun] = {}
    for folder in _record_dirs(Path(directory)):
        run = read_robustness_run(folder)
        if run.experiment in runs:
            raise ValueError(
                f"{directory} holds two robustness runs of {run.experiment}: "
                f"{runs[run.experiment].record.parent} and {folder}"
            )
        runs[run.experiment] = run
    return runs


def robustness_for(
    runs: Mapping[str, RobustnessRun], reported: Iterable[tuple[str, str]], directory: str | Path
) -> dict[str, RobustnessRun]:
    """The robustness runs of the experiments a page reports, each at the preset reported.

    Args:
        runs: from :func:`find_robustness_runs`.
        reported: (experiment, preset) of every run the page shows.
        directory: where ``runs`` were found (for the messages).

    Raises:
        ValueError: none of the reported experiments has a robustness run, or one has it at
            another preset than the run reported.
    """
    reported = list(reported)
    chosen = {name: runs[name] for name, _ in reported if name in runs}
    if not chosen:
        raise ValueError(
            f"{directory} holds no robustness run of "
            f"{', '.join(dict.fromkeys(name for name, _ in reported))} (only of "
            f"{', '.join(runs)})"
        )
    for name, preset in reported:
        run = chosen.get(name)
        if run is not None and run.preset and run.preset != preset:
            raise ValueError(
                f"{run.record} is a robustness run of {name} at preset {run.preset}, not at "
                f"{preset} as the run reported"
            )
    return chosen
