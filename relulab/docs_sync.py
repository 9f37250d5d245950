"""Keep the README and the docs pages in step with the committed robustness records.

``python -m relulab.report.robustness_docs`` rewrites, from
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
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

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
    "SYNC_COMMAND",
    "MarkerError",
    "expected_sections",
    "load_records",
    "marked_section",
    "replace_section",
    "sync",
]

BEGIN = "<!-- robustness:begin -->"
END = "<!-- robustness:end -->"
PRESET = "quick"  # every experiment has a record at this preset
PAPER = "paper"  # records only where the paper-preset readings are affordable here
SYNC_COMMAND = "python -m relulab.report.robustness_docs"
ROOT = Path(__file__).resolve().parents[2]  # the repository of an editable install


class MarkerError(ValueError):
    """A file without exactly one ``BEGIN`` … ``END`` pair, in that order."""


def _span(text: str, where: str) -> tuple[int, int]:
    """Where the body between the markers starts and ends."""
    begins, ends = text.count(BEGIN), text.count(END)
    if begins != 1 or ends != 1:
        raise MarkerError(
            f"{where}: needs exactly one {BEGIN} and one {END} (found {begins} and {ends})"
        )
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    if stop < start:
        raise MarkerError(f"{where}: {END} comes before {BEGIN}")
    return start, stop


def marked_section(text: str, where: str = "text") -> str:
    """The body between the markers, without the blank lines around it.

    Example:
        >>> marked_section(f"a\\n{BEGIN}\\n\\nbody\\n\\n{END}\\nb")
        'body'
    """
    start, stop = _span(text, where)
    return text[start:stop].strip("\n")


def replace_section(text: str, body: str, where: str = "text") -> str:
    """``text`` with the body between the markers replaced by ``body`` (a blank line each side);
    everything outside the markers is kept as it is.

    Raises:
        MarkerError: the markers are missing, duplicated or out of order.

    Example:
        >>> replace_section(f"a\\n{BEGIN}\\nold\\n{END}\\nb", "new").splitlines()[1:4]
        ['<!-- robustness:begin -->', '', 'new']
    """
    start, stop = _span(text, where)
    return f"{text[:start]}\n\n{body}\n\n{text[stop:]}"


def load_records(directory: Path) -> dict[str, dict[str, Any]]:
    """The committed records by experiment: ``directory/<experiment>/robustness.json``.

    Raises:
        ValueError: a record whose ``experiment`` is not its folder's name.
    """
    records = {}
    for path in sorted(Path(directory).glob("*/robustness.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("experiment") != path.parent.name:
            raise ValueError(f"{path}: a record of {record.get('experiment')!r}, not of its folder")
        records[path.parent.name] = record
    return records


def _paper_readme_rows(records: dict[str, dict[str, Any]], names: Iterable[str]) -> str:
    """The README's paper-preset table, then a line naming the experiments without one."""
    if not records:
        return ""
    table = robustness_readme_rows(
        records.values(), sorted(set(names) - set(records)), f"Not run at the {PAPER} preset"
    )
    heading = f"At the {PAPER} preset (only where its readings take about an hour or less here):"
    return f"{heading}\n\n{table}"


def expected_sections(root: Path = ROOT) -> dict[Path, str]:
    """Each file's marked body as the committed records give it: ``README.md`` and every
    ``docs/experiments/*.md`` (the quick record, then the paper record where there is one)."""
    root = Path(root)
    records = load_records(root / "results" / "robustness" / PRESET)
    paper = load_records(root / "results" / "robustness" / PAPER)
    pages = {path.stem: path for path in sorted((root / "docs" / "experiments").glob("*.md"))}
    orphans = sorted((set(records) | set(paper)) - set(pages))
    if orphans:
        raise ValueError(f"robustness records without a docs page: {', '.join(orphans)}")
    readme = robustness_readme_rows(records.values(), sorted(pages.keys() - records.keys()))
    paper_rows = _paper_readme_rows(paper, pages)
    sections = {root / "README.md": readme + (f"\n\n{paper_rows}" if paper_rows else "")}
    for name, path in pages.items():
        record = records.get(name)
        body = robustness_markdown(record) if record else robustness_missing_markdown(name, PRESET)
        if name in paper:
            body += "\n\n" + robustness_markdown(paper[name])
        sections[path] = body
    return sections


def sync(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Rewrite the marked sections that differ from the records (with ``check``, write
    nothing); return the files that differ(ed).

    Raises:
        MarkerError: a file without exactly one marker pair (nothing is written then).
    """
    changed: dict[Path, str] = {}
    for path, body in expected_sections(root).items():
        text = path.read_text(encoding="utf-8")
        new = replace_section(text, body, str(path))
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
