"""Issue 46, item 2: remedies validated by training outcome. ``relulab bench remedies`` trains
deliberately broken networks untreated, with each candidate remedy and with the practitioner's
fix; its committed table (``relulab/bench/remedies.json``) decides what the advice offers."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from relulab.bench.broken import CASES
from relulab.bench.remedies import QUICK, compare, remedies_markdown, run_remedies
from relulab.cli import main
from relulab.probe.advice import REMEDIES, remedies_for
from relulab.probe.evidence import TABLE, evidence_for, load_table

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def committed():
    return load_table()


# -- the comparison ----------------------------------------------------------------------------
def test_compare_reads_the_paired_ratio_and_its_interval():
    untreated = np.array([1.0, 1.2, 0.9, 1.1, 1.0, 0.95, 1.05, 1.0])
    improved = compare(0.3 * untreated * np.linspace(0.95, 1.05, 8), untreated)
    assert improved["verdict"] == "improved" and improved["ratio"] == pytest.approx(0.3, rel=0.02)
    assert improved["low"] < improved["ratio"] < improved["high"] < 1 and improved["n"] == 8
    hurt = compare(2.0 * untreated * np.linspace(0.9, 1.1, 8), untreated)
    assert hurt["verdict"] == "hurt" and hurt["low"] > 1
    noise = np.random.default_rng(0).lognormal(0, 0.3, 8)
    assert compare(untreated * noise, untreated)["verdict"] == "undecided"


def test_a_diverged_network_ranks_last():
    untreated = [math.nan] * 8
    row = compare([0.5] * 8, untreated)
    assert row["diverged"] == [0, 8] and row["ratio"] is None
    assert row["superiority"][0] == 1 and row["superiority"][1] > 0.5
    assert row["verdict"] == "improved"
    assert compare(untreated, [0.5] * 8)["verdict"] == "hurt"


# -- the benchmark, at a smoke-test size ------------------------------------------------------
def test_the_quick_benchmark_trains_every_arm_of_a_case(tmp_path):
    table = run_remedies(QUICK, ["dead_biases", "nan_weight"])
    (dead, nan) = table["cases"]
    assert dead["flagged"]["dead_units"] == QUICK.seeds and nan["flagged"] == {"non_finite": 3}
    arms = set(dead["losses"])
    assert {"untreated", "rai", "raai", "positive_bias", "default_init"} <= arms
    for row in table["rows"]:
        assert row["verdict"] in ("improved", "hurt", "undecided") and row["n"] == QUICK.seeds
    (fix,) = [row for row in table["rows"] if row["case"] == "nan_weight"]
    assert fix["remedy"] == "find_nan" and fix["diverged"] == [0, 3]
    assert table["cost"]["cpu_seconds"] > 0 and "| dead_biases | dead_units |" in remedies_markdown(
        table
    )


def test_the_cli_writes_the_table_and_refuses_what_belongs_to_the_other_suite(tmp_path, capsys):
    out = tmp_path / "remedies.json"
    code = main(
        ["bench", "remedies", "--quick", "--cases", "nan_weight", "--out", str(out), "--quiet"]
    )
    assert code == 0 and json.loads(out.read_text())["rows"][0]["remedy"] == "find_nan"
    assert main(["bench", "remedies", "--cases", "nope", "--out", str(out)]) == 2
    assert main(["bench", "--seeds", "8", "--out", str(tmp_path / "b.json")]) == 2
    assert "options of 'relulab bench remedies'" in capsys.readouterr().err


# -- the committed table and what the advice makes of it --------------------------------------
def test_the_committed_table_has_every_case_at_least_8_seeds_and_its_cost(committed):
    assert [case["name"] for case in committed["cases"]] == list(CASES)
    assert committed["size"]["seeds"] >= 8 and all(row["n"] >= 8 for row in committed["rows"])
    assert 0 < committed["cost"]["cpu_seconds"] <= 15 * 60 and committed["cost"]["threads"] == 1
    assert TABLE.stat().st_size < 64_000  # small


def test_every_candidate_remedy_is_measured_for_its_finding(committed):
    """Every remedy the advice can offer appears in the table with its effect and interval."""
    missing = [
        (finding, remedy.how)
        for finding, remedies in REMEDIES.items()
        for remedy in remedies
        if not evidence_for(finding, remedy.how).rows
    ]
    assert not missing
    for row in committed["rows"]:
        assert row["ratio"] is not None or "superiority" in row


def test_a_remedy_that_hurt_or_was_undecided_is_not_offered_and_one_that_helped_is(committed):
    for row in committed["rows"]:
        if row["role"] != "remedy":
            continue
        offered = [r.how for r in remedies_for(row["finding"])]
        evidence = evidence_for(row["finding"], row["remedy"])
        if row["verdict"] == "hurt":
            assert row["remedy"] not in offered, row
        assert (row["remedy"] in offered) == (evidence.verdict == "improved")


def test_the_offered_remedies_come_best_first_and_say_how_much():
    for finding in REMEDIES:
        offered = remedies_for(finding)
        best = [evidence_for(finding, remedy.how).best for remedy in offered]
        assert best == sorted(best)
        for remedy in offered:
            assert "held-out loss" in evidence_for(finding, remedy.how).text()


def test_the_docs_table_is_the_committed_one(committed):
    page = (ROOT / "docs" / "probe.md").read_text(encoding="utf-8")
    section = re.search(r"<!-- remedies:begin -->\n(.*?)\n<!-- remedies:end -->", page, re.S)
    assert section is not None
    assert section.group(1).strip() == remedies_markdown(committed).strip()


def test_the_docs_say_which_remedies_are_offered_as_the_advice_does():
    page = (ROOT / "docs" / "probe.md").read_text(encoding="utf-8")
    section = page.split("### Which remedies are offered")[1].split("###")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert {row.split("`")[1] for row in rows} == set(REMEDIES)
    for row in rows:
        finding, offered = row.split("`")[1], row.split(" | ")[1]
        named = set(re.findall(r"`(\w+)`", offered))
        assert named == {r.how for r in remedies_for(finding)}, finding
