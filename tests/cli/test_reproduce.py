"""End to end: `relulab reproduce --preset quick` as the README runs it, on two experiments.

The whole quick reproduction (eight experiments, ≈ 15 CPU-minutes) is the README's main job,
not part of the test suite: every experiment has its own tiny end-to-end test, and this one
checks the reproduce machinery — index, scorecard, worker pool, resume — on the quick presets
of single-neuron (with its regression guard) and anisotropy.
"""

import json

import pytest

from relulab import cli

REPRODUCE = [
    "reproduce",
    "--preset",
    "quick",
    "--only",
    "single-neuron,anisotropy",
    "--jobs",
    "2",
    "--quiet",
]


def test_reproduce_quick_writes_index_and_every_claim_is_measured(tmp_path):
    out = tmp_path / "reproduce"
    assert cli.main([*REPRODUCE, "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert "claims scorecard" in index and 'href="single-neuron/report.html"' in index
    scorecard = json.loads((out / "scorecard.json").read_text())
    single = next(e for e in scorecard["experiments"] if e["experiment"] == "single-neuron")
    assert single["error"] is None
    # Regression guard on the reproduction itself: with the quick preset no observation of
    # seed 001 fails (see the run's report for the measured numbers). Two are inconclusive by
    # their intervals: the lr boundary is a chaotic band around the seed's 0.2, and the share
    # of neurons that come back to balanced straddles the 5 % bound (issue 12).
    failing = {c["id"]: c["measured"] for c in single["claims"] if c["verdict"] == "fails"}
    assert not failing, failing
    undecided = {c["id"] for c in single["claims"] if c["verdict"] == "inconclusive"}
    assert undecided <= {"lr-boundary-between-seed-points", "leaving-balanced-is-irreversible"}
    for experiment in scorecard["experiments"]:
        assert experiment["error"] is None, experiment
        assert all(isinstance(c["measured"], float) for c in experiment["claims"]), experiment
    # Re-running into the same directory resumes: nothing is retrained, outputs are rebuilt.
    assert cli.main([*REPRODUCE, "--out", str(out)]) == 0


@pytest.mark.parametrize(
    ("given", "executor", "device", "cpus", "expected"),
    [
        (None, "local", "cpu", 2, 2),  # one worker per CPU
        (None, "local", "cpu", 1, None),  # one CPU: one after another in the driver
        (3, "local", "cpu", 2, 3),  # --jobs as given
        (1, "local", "cpu", 8, 1),
        (None, "local", "cuda", 8, None),  # one GPU: one after another
        (None, "ray", "cpu", 8, None),  # Ray: as --jobs says
    ],
)
def test_reproduce_runs_one_worker_per_cpu_unless_told(
    monkeypatch, given, executor, device, cpus, expected
):
    import argparse

    from relulab.cli.runs import reproduce_jobs

    monkeypatch.setattr("os.sched_getaffinity", lambda _: set(range(cpus)), raising=False)
    args = argparse.Namespace(jobs=given, executor=executor, device=device)
    assert reproduce_jobs(args) == expected


def test_the_smallest_experiment_starts_first_and_the_rest_keep_their_order(tmp_path):
    from relulab.cli.runs import smallest_first
    from relulab.experiments import REGISTRY
    from relulab.runner import prepare_run

    names = list(REGISTRY)
    runs = [prepare_run(n, "quick", [], None, "cpu", tmp_path / n, True) for n in names]
    order = smallest_first(runs)
    assert names[order[0]] == "anisotropy"  # two units: its scorecard comes within seconds
    assert [names[i] for i in order[1:]] == [n for n in names if n != "anisotropy"]
    assert smallest_first([]) == []
