"""The correlated-init study (seed 003) end to end at a tiny size."""

import json
import math

from relulab import cli

TINY = [
    f"--set={kv}"
    for kv in (
        "correlation_depth=4",
        "correlation_width=64",
        "correlation_networks=2",
        "grid_points=20",
    )
]


def test_correlated_init_run_writes_claims_with_numbers(tmp_path):
    out = tmp_path / "ci"
    assert cli.main(["run", "correlated-init", "--quiet", "--out", str(out), *TINY]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["claims"]) == 3
    for claim in summary["claims"]:
        assert isinstance(claim["measured"], float) and math.isfinite(claim["measured"]), claim
        assert "seed 003" in claim["expected"]
    names = {p.name for p in out.iterdir()}
    assert {"phase_diagrams.png", "correlation_depth.png"} <= names
    by_id = {c["id"]: c for c in summary["claims"]}
    assert by_id["no-chaos-uncorrelated"]["passed"] and by_id["aci-bounded-chaos"]["passed"]
