"""Sample run directories for the report tests: summaries built with claim(), real
PNG figures, hostile strings, and an old-style summary that predates verdicts and provenance."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from relulab.analysis import Estimate
from relulab.experiments.claims import claim
from relulab.experiments.criteria import Above, Below, Inside
from relulab.records.summary import FigureRecord, SummaryRecord
from relulab.report import write_index, write_run_report
from relulab.report.plotting import plt, save_figure
from relulab.report.site import IndexEntry

EVIL = "<img src=x onerror=alert(1)><script>alert('x')</script>\"'&"

ABOUT = """A sample study (seed ``002_…``) with :math:`\\sigma_w^2` in its text.

* first item with ``code``;
* second item, continued
  on the next line.
"""


def _figure(run_dir: Path, filename: str) -> None:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1, 2], [0, 1, 4])
    save_figure(fig, run_dir / filename)


def new_claims(evil: str = "") -> list[dict[str, Any]]:
    """Five claims: one holds (with a unit and a figure), one inconclusive (an interval that
    straddles the band), one fails (with its reason), one not tested (with why), one beyond the
    seed."""
    claims = [
        claim(
            f"converges-fast{evil}",
            f"The loss goes to zero within the budget.{evil}",
            criterion=Below("steps to converge", 5000.0, unit="steps"),
            measured=4900.0,
            unit="steps",
            source="seed 001 §4",
            figure="curve.png",
            detail=f"b2=-1.1 converged at step 4900{evil}",
            scale=f"quick: 300 steps{evil}",
        ),
        claim(
            "ratio-in-band",
            "The ratio settles near one half.",
            criterion=Inside("r", 0.45, 0.65),
            measured=Estimate(0.5, 0.4, 0.7, 30),
            source="seed 003 §2, Fig. 1",
            detail="30 nets, interval wider than the band",
        ),
        claim(
            "rank-stays-high",
            "The rank stays high.",
            criterion=Above("effective rank", 1.0),
            measured=0.1,
            source="seed 002 eq. 9",
            detail=f"collapsed by layer 3{evil}",
        ),
        claim(
            "late-training-faster",
            "Well after 10k iterations the scaled net is faster.",
            criterion=Below("loss ratio", 1.0),
            measured=0.9,
            source="seed 002 §5",
            untested=f"the quick preset trains 150 steps{evil}",
        ),
        claim(
            "own-extension",
            "A relation the seed does not make.",
            criterion=Above("slope", 0.0),
            measured=1.0,
            source="seed 003 §2 (extension)",
            beyond_seed=True,
        ),
    ]
    return [made.to_json() for made in claims]


def sample_check(evil: str = "") -> dict[str, Any]:
    """A check: an identity of the setup, run and shown, never counted."""
    made = claim(
        f"identity-holds{evil}",
        f"The stuck plateau is the least-squares line.{evil}",
        criterion=Below("|plateau − 1/48|", 1e-6),
        measured=1e-9,
        source="seed 001 §1",
        check=f"an identity of the setup{evil}",
    )
    return made.to_json()


def old_claims() -> list[dict[str, Any]]:
    """Claims as summaries held them before verdicts, units and intervals existed."""
    return [
        {
            "id": "old-holds",
            "statement": "An old claim that holds.",
            "expected": "x < 1 (seed 001)",
            "measured": 0.5,
            "passed": True,
            "detail": "",
        },
        {
            "id": "old-fails",
            "statement": "An old claim that fails.",
            "expected": "x > 1 (seed 001)",
            "measured": 0.5,
            "passed": False,
            "detail": "too small",
        },
    ]


def summary(name: str, claims: list[dict[str, Any]], evil: str = "", old: bool = False) -> dict:
    config = {"steps": 300, "lr": 0.01, "label": f"x{evil}"}
    data: dict[str, Any] = {
        "experiment": name,
        "title": f"Sample study {name}{evil}",
        "seed_document": "001" if old else "002",
        "preset": "quick" if old else "paper",
        "config": config,
        "claims": claims,
        "metrics": {f"metric{evil}": 1.5, "missing": None},
        "units": {"main": {"networks": 3, "wall_s": 0.25, "diverged": 0}},
        "versions": {"torch": "2.13.0", "relulab": f"0.1.0{evil}"},
        "created": "2026-01-01T00:00:00+0000",
        "device": "cpu",
    }
    if not old:
        data["checks"] = [sample_check(evil)]
        caption = f"A curve: look at the kink.{evil}"
        data["figures"] = [{"filename": "curve.png", "caption": caption}]
        data["overrides"] = {"label": f"x{evil}"}
        data["config_provenance"] = {
            "steps": {
                "value": 300,
                "provenance": "stated",
                "seed_value": 5000,
                "note": f"seed: 5000 steps{evil}",
                "departs": True,
            },
            "lr": {
                "value": 0.01,
                "provenance": "inferred",
                "seed_value": None,
                "note": "",
                "departs": False,
            },
            "label": {
                "value": f"x{evil}",
                "provenance": "choice",
                "seed_value": None,
                "note": "",
                "departs": False,
            },
        }
    return data


def write_sample_run(
    run_dir: Path,
    name: str,
    evil: str = "",
    old: bool = False,
    docs_root: Path | None = None,
) -> dict[str, Any]:
    """A run directory with ``summary.json``, ``curve.png`` and ``report.html``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _figure(run_dir, "curve.png")
    data = summary(name, old_claims() if old else new_claims(evil), evil, old)
    (run_dir / "summary.json").write_text(json.dumps(data, indent=2))
    record = SummaryRecord.from_dict(data)
    if old:  # an old summary names no figures: the page shows what it has
        record = replace(record, figures=(FigureRecord("curve.png", "A curve."),))
    write_run_report(run_dir, record, about=ABOUT + evil, docs_root=docs_root)
    return data


def write_sample_site(
    out: Path, evil: str = EVIL, docs_root: Path | None = None
) -> list[IndexEntry]:
    """A reproduce-like directory: a new-style run, an old-style run, a failed experiment; the
    index is written first so that the reports link back to it."""
    out.mkdir(parents=True, exist_ok=True)
    write_index(out, [], "quick")
    new = write_sample_run(out / "new-run", "sample-new", evil, docs_root=docs_root)
    old = write_sample_run(out / "old-run", "sample-old", old=True)
    entries = [
        IndexEntry("sample-new", new["title"], "new-run/report.html", SummaryRecord.from_dict(new)),
        IndexEntry("sample-old", old["title"], "old-run/report.html", SummaryRecord.from_dict(old)),
        IndexEntry(f"broken{evil}", "Broken", "broken/report.html", error=evil),
    ]
    write_index(out, entries, "quick")
    return entries
