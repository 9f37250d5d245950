"""End to end: `relulab reproduce --preset quick` as the README runs it (about a minute)."""

import json

from relulab import cli


def test_reproduce_quick_writes_index_and_every_claim_is_measured(tmp_path):
    out = tmp_path / "reproduce"
    assert cli.main(["reproduce", "--preset", "quick", "--quiet", "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert "claims scorecard" in index and 'href="single-neuron/report.html"' in index
    scorecard = json.loads((out / "scorecard.json").read_text())
    single = next(e for e in scorecard["experiments"] if e["experiment"] == "single-neuron")
    assert single["error"] is None
    # Regression guard on the reproduction itself: with the quick preset every observation of
    # seed 001 is reproduced (see the run's report for the measured numbers).
    failing = {c["id"]: c["measured"] for c in single["claims"] if not c["passed"]}
    assert not failing, failing
    for experiment in scorecard["experiments"]:
        assert experiment["error"] is None, experiment
        assert all(isinstance(c["measured"], float) for c in experiment["claims"]), experiment
    # Re-running into the same directory resumes: nothing is retrained, outputs are rebuilt.
    assert cli.main(["reproduce", "--preset", "quick", "--quiet", "--out", str(out)]) == 0
