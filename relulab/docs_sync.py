"""Keep the README and the docs pages in step with the committed records.

``python -m relulab.docs_sync`` rewrites two generated sections.

**The scorecard** (README, between ``<!-- scorecard:begin -->`` and ``<!-- scorecard:end -->``):
per experiment its claims by headline standing (:mod:`relulab.records.standing`) at the quick
preset — from the committed quick robustness record (the preset reading, the claims without
their post-hoc choices and every declared reading), counting only the claims whose registration
the record still carries — and at the paper preset — from the committed paper runs
(``results/paper/*/summary.json``) weighed with the paper robustness record where there is one —
and its checks apart (:func:`scorecard_markdown`).

**Robustness**: from
``results/robustness/quick/*/robustness.json`` (every experiment) and
``results/robustness/paper/*/robustness.json`` (the experiments whose paper-preset readings fit
in about an hour here), the text between ``<!-- robustness:begin -->`` and
``<!-- robustness:end -->`` in ``README.md`` (one row per experiment and preset,
:func:`~relulab.report.robustness.robustness_readme_rows`) and in each
``docs/experiments/<experiment>.md`` (:func:`~relulab.report.robustness.robustness_markdown`
per preset, or :func:`~relulab.report.robustness.robustness_missing_markdown` for an experiment
without a quick record). Nothing outside the markers changes; a file without exactly one
marker pair is refused before anything is written. ``--check`` writes nothing and exits 1
when a file is out of date.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from relulab.experiments import REGISTRY
from relulab.reading import read_json
from relulab.records.robustness import RobustnessRecord
from relulab.records.summary import SummaryRecord
from relulab.registry import registration
from relulab.report.readme import ScorecardRow, scorecard_markdown
from relulab.report.robustness import (
    robustness_markdown,
    robustness_missing_markdown,
    robustness_readme_rows,
)

__all__ = [
    "BEGIN",
    "END",
    "PAPER",
    "PRESET",
    "SCORECARD_BEGIN",
    "SCORECARD_END",
    "SYNC_COMMAND",
    "MarkerError",
    "expected_scorecard",
    "expected_sections",
    "load_paper_runs",
    "load_records",
    "marked_section",
    "replace_section",
    "sync",
]

BEGIN = "<!-- robustness:begin -->"
END = "<!-- robustness:end -->"
PRESET = "quick"  # every experiment has a record at this preset
PAPER = "paper"  # records only where the paper-preset readings are affordable here
SYNC_COMMAND = "python -m relulab.docs_sync"
SCORECARD_BEGIN = "<!-- scorecard:begin -->"
SCORECARD_END = "<!-- scorecard:end -->"
ROOT = Path(__file__).resolve().parents[1]  # the repository of an editable install


class MarkerError(ValueError):
    """A file without exactly one ``BEGIN`` … ``END`` pair, in that order."""


def _span(text: str, where: str, begin: str = BEGIN, end: str = END) -> tuple[int, int]:
    """Where the body between the markers starts and ends."""
    begins, ends = text.count(begin), text.count(end)
    if begins != 1 or ends != 1:
        raise MarkerError(
            f"{where}: needs exactly one {begin} and one {end} (found {begins} and {ends})"
        )
    start, stop = text.index(begin) + len(begin), text.index(end)
    if stop < start:
        raise MarkerError(f"{where}: {end} comes before {begin}")
    return start, stop


def marked_section(text: str, where: str = "text", begin: str = BEGIN, end: str = END) -> str:
    """The body between the markers, without the blank lines around it.

    Example:
        >>> marked_section(f"a\\n{BEGIN}\\n\\nbody\\n\\n{END}\\nb")
        'body'
    """
    start, stop = _span(text, where, begin, end)
    return text[start:stop].strip("\n")


def replace_section(
    text: str, body: str, where: str = "text", begin: str = BEGIN, end: str = END
) -> str:
    """``text`` with the body between the markers replaced by ``body`` (a blank line each side);
    everything outside the markers is kept as it is.

    Raises:
        MarkerError: the markers are missing, duplicated or out of order.

    Example:
        >>> replace_section(f"a\\n{BEGIN}\\nold\\n{END}\\nb", "new").splitlines()[1:4]
        ['<!-- robustness:begin -->', '', 'new']
    """
    start, stop = _span(text, where, begin, end)
    return f"{text[:start]}\n\n{body}\n\n{text[stop:]}"


def load_records(directory: Path) -> dict[str, RobustnessRecord]:
    """The committed records by experiment: ``directory/<experiment>/robustness.json``.

    Raises:
        ValueError: a record whose ``experiment`` is not its folder's name, or unreadable.
    """
    records = {}
    for path in sorted(Path(directory).glob("*/robustness.json")):
        record = RobustnessRecord.from_dict(read_json(path, "robustness record"))
        if record.experiment != path.parent.name:
            raise ValueError(f"{path}: a record of {record.experiment!r}, not of its folder")
        records[path.parent.name] = record
    return records


def load_paper_runs(directory: Path) -> dict[str, SummaryRecord]:
    """The committed paper runs by folder: ``directory/<run>/summary.json``."""
    return {
        path.parent.name: SummaryRecord.from_dict(read_json(path, "summary"))
        for path in sorted(Path(directory).glob("*/summary.json"))
    }


def _paper_readme_rows(records: dict[str, RobustnessRecord], names: Iterable[str]) -> str:
    """The README's paper-preset table, then a line naming the experiments without one."""
    if not records:
        return ""
    table = robustness_readme_rows(
        [r.to_dict() for r in records.values()],
        sorted(set(names) - set(records)),
        f"Not run at the {PAPER} preset",
    )
    heading = f"At the {PAPER} preset (only where its readings take about an hour or less here):"
    return f"{heading}\n\n{table}"


def _scorecard_rows(
    root: Path, records: Mapping[str, RobustnessRecord], paper: Mapping[str, RobustnessRecord]
) -> list[ScorecardRow]:
    """One row per experiment: its quick record's claims still registered as recorded, and its
    committed paper runs with the paper record."""
    runs = load_paper_runs(root / "results" / PAPER)
    rows = []
    for name, experiment in REGISTRY.items():
        quick = registration(experiment, PRESET)
        record = records.get(name)
        paper_runs = {folder: run for folder, run in runs.items() if run.experiment == name}
        rows.append(
            ScorecardRow(
                name,
                record,
                {c["id"]: c["hash"] for c in quick.claims},
                paper_runs,
                paper.get(name),
                {c["id"]: (c["kind"], c["beyond_seed"]) for c in quick.claims},
                experiment.stand_in(experiment.presets[PRESET]) if experiment.stand_in else "",
                {
                    run.preset: registration(experiment, run.preset)
                    for run in paper_runs.values()
                    if run.preset in experiment.presets
                },
            )
        )
    return rows


def expected_sections(root: Path = ROOT) -> dict[Path, str]:
    """Each file's robustness section as the committed records give it: ``README.md`` and every
    ``docs/experiments/*.md`` (the quick record, then the paper record where there is one)."""
    root = Path(root)
    records = load_records(root / "results" / "robustness" / PRESET)
    paper = load_records(root / "results" / "robustness" / PAPER)
    pages = {path.stem: path for path in sorted((root / "docs" / "experiments").glob("*.md"))}
    orphans = sorted((set(records) | set(paper)) - set(pages))
    if orphans:
        raise ValueError(f"robustness records without a docs page: {', '.join(orphans)}")
    readme = robustness_readme_rows(
        [r.to_dict() for r in records.values()], sorted(pages.keys() - records.keys())
    )
    paper_rows = _paper_readme_rows(paper, pages)
    sections = {root / "README.md": readme + (f"\n\n{paper_rows}" if paper_rows else "")}
    for name, path in pages.items():
        record = records.get(name)
        body = (
            robustness_markdown(record.to_dict())
            if record
            else robustness_missing_markdown(name, PRESET)
        )
        if name in paper:
            body += "\n\n" + robustness_markdown(paper[name].to_dict())
        sections[path] = body
    return sections


def expected_scorecard(root: Path = ROOT) -> str:
    """The README's scorecard section as the committed records give it."""
    root = Path(root)
    records = load_records(root / "results" / "robustness" / PRESET)
    paper = load_records(root / "results" / "robustness" / PAPER)
    return scorecard_markdown(_scorecard_rows(root, records, paper))


def sync(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Rewrite the marked sections that differ from the records (with ``check``, write
    nothing); return the files that differ(ed).

    Raises:
        MarkerError: a file without exactly one marker pair (nothing is written then).
    """
    wanted: dict[Path, list[tuple[str, str, str]]] = {}
    for path, body in expected_sections(root).items():
        wanted.setdefault(path, []).append((BEGIN, END, body))
    readme = Path(root) / "README.md"
    wanted.setdefault(readme, []).append((SCORECARD_BEGIN, SCORECARD_END, expected_scorecard(root)))
    changed: dict[Path, str] = {}
    for path, sections in wanted.items():
        text = path.read_text(encoding="utf-8")
        new = text
        for begin, end, body in sections:
            new = replace_section(new, body, str(path), begin, end)
        if new != text:
            changed[path] = new
    if not check:
        for path, new in changed.items():
            path.write_text(new, encoding="utf-8")
    return list(changed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=SYNC_COMMAND, description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the repository (default: %(default)s)"
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if out of date")
    args = parser.parse_args(argv)
    try:
        changed = sync(args.root, check=args.check)
    except (OSError, ValueError) as error:  # MarkerError, a bad record, a missing file
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"{'out of date' if args.check else 'updated'}: {path}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
