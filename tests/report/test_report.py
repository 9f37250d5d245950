"""The pages and the terminal summary: escaping, counts, units, intervals, provenance, links,
old summaries, ``--strict``, TensorBoard export, the diagnose figure's axes and legend."""

import dataclasses
import json
import re
import sys

import numpy as np
import pandas as pd
import pytest

from relulab import cli
from relulab.cli.common import EXIT_CLAIMS_DO_NOT_HOLD
from relulab.records import ClaimRecord
from relulab.records.summary import SummaryRecord
from relulab.report import write_diagnose_report, write_run_report
from relulab.report.diagnose import axis_scale, identical_inits
from relulab.report.scorecard import (
    claim_seed,
    count_text,
    format_interval,
    format_measured,
    overall,
    verdict,
)
from relulab.report.site import counts, docs_page
from relulab.store import RunStore
from tests.report.report_samples import EVIL, write_sample_run, write_sample_site

TINY_PREPOST = [
    "--set=width=8",
    "--set=hidden=16",
    "--set=blocks=16",
    "--set=n_samples=32",
]


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    entries = write_sample_site(out)
    return out, entries


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A real prepost-ln run at a tiny size in a folder named unlike the experiment."""
    parent = tmp_path_factory.mktemp("reproduce")
    out = parent / "pp-run"
    assert cli.main(["run", "prepost-ln", "--quiet", "--out", str(out), *TINY_PREPOST]) == 0
    return parent, out


def test_every_string_is_escaped(sample_site):
    out, _ = sample_site
    for page in (out / "index.html", out / "new-run" / "report.html"):
        html = page.read_text()
        assert EVIL not in html
        assert "<img src=x" not in html and "<script>alert" not in html
        assert "&lt;script&gt;alert(" in html


def test_index_counts_units_intervals_and_links(sample_site):
    out, _ = sample_site
    html = (out / "index.html").read_text()
    # the count lines count headline standings; no robustness record: the line says so
    new_line = "1 holds · 1 fails · 1 inconclusive · 1 not tested · robustness not measured"
    assert f"{new_line}</span>" in html
    assert '<span class="badge beyond">beyond the seed: 1 holds · robustness not measured' in html
    assert "1 holds · 1 fails · robustness not measured" in html  # the old run
    total = "2 hold · 2 fail · 1 inconclusive · 1 not tested · robustness not measured"
    assert f'<span class="badge fails">{total}</span>' in html  # coloured by its worst
    assert "beyond the seeds:" in html and '<div class="tag">beyond the seed</div>' in html
    assert "checks (never counted):" in html and "checks: 1/1 hold" in html
    assert "Not tested: the quick preset trains 150 steps" in html
    assert '<option value="not tested">not tested (1)</option>' in html
    assert '<option value="holds">holds (3)</option>' in html
    assert '<option value="beyond">beyond the seed</option>' in html
    assert 'class="verdict not-tested"' in html
    assert "4900 steps" in html
    assert "95% CI [0.4, 0.7], n = 30" in html
    for seed in ("001", "002", "003"):
        assert f'<option value="{seed}">seed {seed}</option>' in html
    assert '<option value="inconclusive">inconclusive (1)</option>' in html
    assert '<option value="depends">depends (0)</option>' in html
    assert '<option value="paper">paper</option>' in html
    assert 'href="new-run/report.html#claim-rank-stays-high"' in html
    assert re.search(r'href="new-run/report.html#figure-curve.png"', html)
    assert 'href="broken/report.html"' not in html, "no link to a report that was not written"
    assert "did not finish" in html


def test_report_claims_first_provenance_about_and_back_link(sample_site):
    out, _ = sample_site
    html = (out / "new-run" / "report.html").read_text()
    assert html.index('id="claims"') < html.index('id="about"') < html.index('id="figures"')
    assert 'href="../index.html"' in html
    assert '<td>stated <span class="note">(preset departs)</span></td>' in html
    assert "1 setting(s) changed" in html
    assert "<td>inferred</td>" in html
    assert '<td>choice <span class="note">(set for this run)</span></td>' in html
    assert "<li>first item with <code>code</code>;</li>" in html
    assert '<svg class="math"' in html and "sigma_w^2</code>" not in html  # issue 35: drawn
    assert "docs/experiments/sample-new.md" in html
    assert 'id="figure-curve.png"' in html and 'href="#figure-curve.png"' in html
    assert 'class="verdict inconclusive"' in html
    assert 'class="verdict not-tested"' in html and "<strong>Not tested:</strong>" in html
    assert 'data-kind="beyond"' in html
    # the check has its own table, after the claims, with why it is a check
    assert html.index('id="claims"') < html.index('id="checks"') < html.index('id="about"')
    assert "an identity of the setup" in html and 'class="check"' in html


def test_old_summaries_render_with_what_they_have(sample_site):
    out, _ = sample_site
    html = (out / "old-run" / "report.html").read_text()
    assert 'class="verdict fails"' in html and 'class="verdict holds"' in html
    assert "records no provenance" in html
    assert "1 holds · 1 fails · robustness not measured" in html


def test_standalone_report_has_no_back_link(tmp_path):
    write_sample_run(tmp_path / "alone", "alone")
    assert "index.html" not in (tmp_path / "alone" / "report.html").read_text()


def test_docs_link_only_inside_the_checkout(tmp_path):
    root = tmp_path / "repo"
    (root / "docs" / "experiments").mkdir(parents=True)
    (root / "docs" / "experiments" / "sample-new.md").write_text("# sample")
    inside = docs_page(root / "runs" / "r" / "sample-new", "sample-new", root)
    assert inside["href"] == "../../../docs/experiments/sample-new.md"
    assert docs_page(tmp_path / "elsewhere", "sample-new", root)["href"] is None
    assert docs_page(root / "runs", "../../etc/passwd", root)["href"] is None
    run_dir = root / "runs" / "sample-new"
    write_sample_run(run_dir, "sample-new", docs_root=root)
    html = (run_dir / "report.html").read_text()
    assert 'href="../../docs/experiments/sample-new.md"' in html
    assert (run_dir / "../../docs/experiments/sample-new.md").resolve().is_file()


def test_scorecard_formatting_of_old_and_new_claims():
    new = {"measured": 4900.0, "unit": "steps", "verdict": "inconclusive", "passed": False}
    assert format_measured(new) == "4900 steps" and verdict(new) == "inconclusive"
    assert format_interval({"ci_low": 0.1, "ci_high": 0.2, "ci_level": 0.9, "n": 7}) == (
        "90% CI [0.1, 0.2], n = 7"
    )
    assert format_interval({"measured": 1.0}) == ""
    assert verdict({"passed": True}) == "holds" and verdict({"passed": False}) == "fails"
    assert count_text([new, {"passed": True}]) == "1/2 hold · 1 inconclusive"  # a verdict tally
    untested = {"verdict": "not tested", "why_not_tested": "too short"}
    beyond = {"verdict": "fails", "beyond_seed": True}
    assert count_text([untested, {"passed": True}, beyond]) == (
        "1/1 hold · 1 not tested · beyond the seed: 0/1 hold"
    )
    assert overall([untested]) == "not tested" and overall([beyond, {"passed": True}]) == "holds"
    assert claim_seed({"source": "seed 003 §2"}, "002") == "003"
    assert claim_seed({}, "000 (Liu) via its post") == "000"


def test_terminal_summary_shows_expected_counts_and_reasons(tmp_path, capsys):
    out = tmp_path / "run"
    code = cli.main(["run", "prepost-ln", "--out", str(out), "--strict", *TINY_PREPOST])
    printed = capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    not_holding = [c for c in summary["claims"] if verdict(c) != "holds"]
    assert not_holding, "the tiny size is meant to break some claims"
    assert code == EXIT_CLAIMS_DO_NOT_HOLD and code != 2
    line = counts(SummaryRecord.from_dict(summary), None)["line"]
    assert "expected" in printed.out and "standing" in printed.out
    assert line in " ".join(printed.out.split()), line
    for claim in not_holding:
        reason = claim["detail"] or "no detail recorded"
        assert f"{claim['id']} {verdict(claim)}:" in printed.out
        assert reason.split(",")[0] in printed.out
    assert "--strict" in printed.err and not_holding[0]["id"] in printed.err
    # without --strict a run whose claims fail is still a successful run
    assert cli.main(["run", "prepost-ln", "--quiet", "--out", str(out), *TINY_PREPOST]) == 0


def test_report_parent_links_by_folder_and_reports_link_back(tiny_run):
    parent, out = tiny_run
    assert cli.main(["report", str(parent)]) == 0
    index = (parent / "index.html").read_text()
    assert 'href="pp-run/report.html"' in index and 'href="prepost-ln/report.html"' not in index
    assert 'href="../index.html"' in (out / "report.html").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config_provenance"]["blocks"]["value"] == 16
    assert summary["overrides"] == {"blocks": 16, "hidden": 16, "n_samples": 32, "width": 8}
    assert "4 setting(s) changed" in index
    assert "blocks=16, hidden=16, n_samples=32, width=8" in (out / "report.html").read_text()


def test_export_tensorboard_writes_the_stored_curves(tiny_run, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, out = tiny_run
    logdir = tmp_path / "tb"
    assert cli.main(["export", "--tensorboard", str(logdir), str(out), "--quiet"]) == 0
    with RunStore.open(out / "runs.sqlite") as store:
        unit = store.unit("forward-pre")
    runs = sorted((logdir / "forward-pre").iterdir())
    assert len(runs) == unit.n_networks and runs[0].name.startswith("0000_alpha=")
    events = EventAccumulator(str(runs[0]))
    events.Reload()
    assert set(events.Tags()["scalars"]) == set(unit.curves)
    norm = events.Scalars("norm")
    assert [e.step for e in norm] == unit.steps.tolist()
    np.testing.assert_allclose([e.value for e in norm], unit.curves["norm"][0], rtol=1e-6)


def test_export_without_tensorboard_is_one_line_exit_2(tiny_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    _, out = tiny_run
    logdir = tmp_path / "tb"
    assert cli.main(["export", "--tensorboard", str(logdir), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'relulab[tensorboard]'" in err
    assert not logdir.exists()


def test_export_refuses_a_directory_without_runs(tmp_path, capsys):
    pytest.importorskip("tensorboard")
    assert cli.main(["export", "--tensorboard", str(tmp_path / "tb"), str(tmp_path)]) == 2
    assert "holds no relulab run" in capsys.readouterr().err


def test_axis_scale_goes_log_when_values_span_decades():
    assert axis_scale(np.array([0.5, 1.0, 3e6])) == {"value": "log"}
    assert axis_scale(np.array([0.0, 1e-3, 0.5])) == {"value": "symlog", "linthresh": 1e-3}
    assert axis_scale(np.array([0.2, 0.4, np.nan])) == {"value": "linear"}


def test_diagnose_report_flags_identical_inits_and_names_modules(tmp_path):
    layers = pd.Index([0, 1, 2], name="layer")
    ratio = pd.DataFrame({"a": [1.0, 30.0, 3e6], "b": [1.0, 30.0, 3e6], "c": [1.0, 1.1, 1.2]})
    dead = pd.DataFrame({"a": [0.0, 0.1, 0.2], "b": [0.0, 0.1, 0.2], "c": [0.0, 0.0, 0.0]})
    tables = {"sample_mean_variance_ratio": ratio.set_axis(layers), "dead_fraction": dead}
    dead.index = layers
    assert identical_inits(tables) == [["a", "b"], ["c"]]
    names = {0: "features.1 (ReLU)", 1: "features.3 (ReLU)", 2: f"head{EVIL}"}
    html = write_diagnose_report(tmp_path, "m:f", ["a", "b", "c"], (4, 3), tables, names)
    text = html.read_text()
    assert "Identical results:</strong> a, b" in text
    assert "features.3 (ReLU)" in text and EVIL not in text
    assert (tmp_path / "probe.png").stat().st_size > 0


def test_not_tested_claims_are_shown_and_gate_nothing_under_strict(capsys):
    import argparse

    from relulab.cli.runs import _strict_exit, print_scorecard

    untested = {
        "id": "late-claim",
        "expected": "x < 1",
        "measured": 0.5,
        "verdict": "not tested",
        "passed": False,
        "why_not_tested": "150 steps where the seed speaks of 10k",
        "beyond_seed": False,
    }
    holds = {**untested, "id": "held", "verdict": "holds", "passed": True, "why_not_tested": ""}
    extension = {**holds, "id": "own", "beyond_seed": True}
    summary = SummaryRecord.from_dict(
        {"experiment": "demo", "preset": "quick", "claims": [untested, holds, extension]}
    )
    print_scorecard(summary)
    out = " ".join(capsys.readouterr().out.split())
    assert "late-claim not tested: 150 steps where the seed speaks of 10k" in out
    assert "(beyond the seed)" in out
    assert "1 holds · 1 not tested · robustness not measured" in out
    strict = argparse.Namespace(strict=True)
    assert _strict_exit(strict, [summary]) == 0
    assert "not tested at this preset (not gated): demo:late-claim" in capsys.readouterr().err
    failing = ClaimRecord.from_json({**holds, "id": "broken", "verdict": "fails", "passed": False})
    summary = dataclasses.replace(summary, claims=(*summary.claims, failing))
    assert _strict_exit(strict, [summary]) == EXIT_CLAIMS_DO_NOT_HOLD
    assert "demo:broken" in capsys.readouterr().err


def test_export_of_an_old_store_with_a_renamed_unit_stays_inside_the_logdir(tiny_run, tmp_path):
    """A schema-2 store's checksum does not cover the unit name: a unit renamed to
    ``../../escaped`` (checksum recomputed to match) still verifies there, so the export itself
    must keep every path inside LOGDIR."""
    pytest.importorskip("tensorboard")
    import shutil
    import sqlite3

    from relulab.store import payload_checksum

    _, out = tiny_run
    old = tmp_path / "old-run"
    shutil.copytree(out, old)
    with RunStore.open(old / "runs.sqlite") as store:  # schema 2: checksums without names
        unnamed = {}
        for name in store.done_units():
            header, networks, arrays = store._rows(name)
            unnamed[name] = payload_checksum(header[:3], networks, arrays)
    with sqlite3.connect(old / "runs.sqlite") as db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'relulab_store_schema'")
        for name, checksum in unnamed.items():
            db.execute("UPDATE units SET checksum = ? WHERE name = ?", (checksum, name))
        for table, column in (("units", "name"), ("networks", "unit"), ("unit_arrays", "unit")):
            db.execute(
                f"UPDATE {table} SET {column} = '../../escaped' WHERE {column} = 'forward-pre'"
            )
    logdir = tmp_path / "deep" / "tb"
    assert cli.main(["export", "--tensorboard", str(logdir), str(old), "--quiet"]) == 0
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "deep" / "escaped").exists()
    assert (logdir / ".._.._escaped").is_dir()


def test_report_replaces_symlinked_outputs_instead_of_writing_through_them(tiny_run, tmp_path):
    """A symbolic link planted at report.html or at a figure's name pointing outside the run:
    `relulab report` replaces the link with its own file and the target is untouched."""
    import shutil

    _, out = tiny_run
    run = tmp_path / "linked-run"
    shutil.copytree(out, run)
    figure = next(run.glob("*.png"))
    victims = {}
    for name in ("report.html", figure.name, "summary.json"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious")
        (run / name).unlink()
        (run / name).symlink_to(victim)
        victims[name] = victim
    assert cli.main(["report", str(run)]) == 0
    for name, victim in victims.items():
        assert victim.read_text() == "precious", name
        assert not (run / name).is_symlink() and (run / name).stat().st_size > 0, name


def test_a_full_disk_leaves_the_previous_page_whole(tmp_path, monkeypatch):
    """Writing a page that fails midway (a full disk) leaves the previous file as it was and no
    temporary behind."""
    import relulab.files

    page = tmp_path / "page.html"
    page.write_text("previous")
    real_fdopen = relulab.files.os.fdopen

    class Full:
        def __init__(self, handle, *args, **kwargs):
            self.stream = real_fdopen(handle, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

        def write(self, text):
            self.stream.write(text[: len(text) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(relulab.files.os, "fdopen", Full)
    with pytest.raises(OSError, match="No space"):
        relulab.files.write_atomic(page, "<html>" + "x" * 1000)
    assert page.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_stand_in_verdicts_are_labelled_and_counted_apart(tmp_path):
    """Issue 43: a claim measured on a stand-in data set speaks for the mechanism only — it is
    labelled on every page and counted apart from the verdicts on the seed's data."""
    rows = [
        {"id": "on-seed-data", "verdict": "holds", "passed": True},
        {"id": "on-stand-in", "verdict": "fails", "stand_in": "the bundled stand-in images"},
        {"id": "also-stand-in", "verdict": "holds", "stand_in": "the bundled stand-in images"},
    ]
    summary = SummaryRecord.from_dict(
        {"experiment": "demo", "preset": "quick", "claims": rows, "created": "now"}
    )
    lines = counts(summary, None)
    assert lines["line"] == "1 holds · robustness not measured"
    assert lines["stand_in"] == "1 holds · 1 fails · robustness not measured"
    assert lines["headline"] == {"holds": 1}  # scorecard.json's counts: the seed's data only
    html = write_run_report(tmp_path, summary).read_text()
    assert "stand-in (mechanism only): 1 holds · 1 fails" in html
    assert html.count('title="the bundled stand-in images">stand-in (mechanism only)') == 2
