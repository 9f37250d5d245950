"""Registration (issue 42): every claim's criterion, tolerances, points and windows, with the
preset's config, hash into a registry committed with the code (one file per study and preset,
written by ``relulab register``); a run records the hash its claims were judged under and
whether it is registered; a run meant for ``results/`` refuses uncommitted code; a re-judged run
keeps the verdicts of its earlier registration beside the new ones."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from relulab import cli
from relulab import registry as registry_module
from relulab.experiments import REGISTRY
from relulab.experiments.base import Analysis, Experiment, Unit
from relulab.experiments.claims import ClaimSpec, PostHoc, Reading, evaluate
from relulab.experiments.criteria import AllOf, Below
from relulab.records.summary import SummaryRecord
from relulab.registry import (
    DirtyTreeError,
    check_clean_for_results,
    registration,
    registration_status,
    sync,
)
from relulab.store import UnitResult


# --- the committed registry ---------------------------------------------------------------------
def test_every_registry_file_is_the_codes_registration():
    """The criteria committed with the code are the ones the code judges with."""
    stale = sync(REGISTRY, check=True)
    assert not stale, f"out of date (run `relulab register` and commit): {stale}"


def test_register_check_exits_0_when_every_file_is_current(capsys):
    assert cli.main(["register", "--check"]) == 0


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_claim_and_check_is_registered_with_its_criterion(name):
    check_registered_with_criteria(REGISTRY[name])


def check_registered_with_criteria(experiment) -> None:
    for preset in experiment.presets:
        entries = {c["id"]: c for c in registration(experiment, preset).claims}
        assert set(entries) == {spec.id for spec in experiment.claims}
        for spec in experiment.claims:
            entry = entries[spec.id]
            assert entry["kind"] == spec.kind and entry["criterion"]["type"]
            assert len(entry["post_hoc"]) == len(spec.post_hoc)


# --- what a registration hashes -----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ToyConfig:
    seed: int = 0
    bound: float = 1.0


def _unit(config, name: str) -> Unit:
    def run(context) -> UnitResult:
        values = torch.randn(3, generator=context.generator(name), dtype=torch.float64).numpy()
        return UnitResult.forward_only(
            [{"i": i} for i in range(3)], np.arange(1), {"value": values[:, None]}, {"v": values}
        )

    return Unit(name, run)


def _specs(bound_of_second: float = 1.0, post_hoc: tuple = ()) -> tuple[ClaimSpec, ...]:
    return (
        ClaimSpec(
            "first",
            "The first value is small.",
            source="§1",
            criterion=lambda c: Below("x", c.bound),
            measure=lambda results, config: Reading(0.5),
            counterexample="x above the bound",
        ),
        ClaimSpec(
            "second",
            "Both are small.",
            source="§2",
            criterion=AllOf({"a": Below("a", bound_of_second), "b": Below("b", 2.0)}),
            measure=lambda results, config: Reading({"a": 0.7, "b": 0.1}),
            counterexample="a above the bound",
            post_hoc=post_hoc,
        ),
    )


def _toy(specs=None) -> Experiment:
    specs = specs or _specs()
    return Experiment(
        name="toyreg",
        title="toy registration",
        seed="001",
        summary="two claims",
        config=ToyConfig,
        presets={"quick": ToyConfig()},
        plan=lambda config: [_unit(config, "only")],
        analyse=lambda results, config: Analysis(evaluate(specs, results, config), {}),
        figures=lambda results, config, out_dir: [],
        estimate_bytes=lambda config: 1000,
        claims=specs,
    )


def test_a_claims_hash_changes_exactly_when_what_judges_it_does():
    base = registration(_toy(), "quick")
    moved = registration(_toy(_specs(bound_of_second=0.6)), "quick")
    assert base.claim_hash("first") == moved.claim_hash("first")
    assert base.claim_hash("second") != moved.claim_hash("second")
    assert base.hash != moved.hash
    # the config is part of every claim's registration
    other = registration(_toy(), "quick", ToyConfig(bound=0.9))
    assert other.claim_hash("first") != base.claim_hash("first")
    assert other.claim_hash("second") != base.claim_hash("second")
    # a post-hoc declaration is registered with the criterion without it
    declared = registration(
        _toy(_specs(post_hoc=(PostHoc("a's bound", "after a run", criterion=Below("a", 0.5)),))),
        "quick",
    )
    entry = next(c for c in declared.claims if c["id"] == "second")
    assert entry["post_hoc"][0]["criterion_without"]["bound"] == 0.5
    assert declared.claim_hash("second") != base.claim_hash("second")


def test_the_status_says_why_a_run_is_unregistered(monkeypatch, tmp_path):
    toy = _toy()
    file = tmp_path / "quick.json"
    monkeypatch.setattr(registry_module, "registry_path", lambda experiment, preset: file)
    _, status = registration_status(toy, "quick", ToyConfig(), "abc")
    assert status.status == "unregistered" and "no registry file" in status.reason
    assert sync({"toyreg": toy}) == [file] and sync({"toyreg": toy}, check=True) == []
    _, status = registration_status(toy, "quick", ToyConfig(), "abc")
    assert (status.status, status.reason, status.commit) == ("registered", "", "abc")
    _, status = registration_status(toy, "quick", ToyConfig(), "abc+dirty")
    assert status.status == "unregistered" and "uncommitted code" in status.reason
    _, status = registration_status(toy, "quick", ToyConfig(bound=0.9), "abc")
    assert status.status == "unregistered" and "departs" in status.reason
    _, status = registration_status(_toy(_specs(0.6)), "quick", ToyConfig(), "abc")
    assert status.status == "unregistered" and "differ from the committed" in status.reason


# --- results/ needs committed code --------------------------------------------------------------
def test_a_run_into_results_refuses_uncommitted_code(monkeypatch, tmp_path):
    monkeypatch.setattr(registry_module, "checkout_root", lambda: tmp_path)
    monkeypatch.setattr(registry_module, "code_changes", lambda root: ["relulab/x.py"])
    with pytest.raises(DirtyTreeError, match="relulab/x.py.*--allow-dirty"):
        check_clean_for_results(tmp_path / "results" / "paper" / "x", allow_dirty=False)
    assert check_clean_for_results(tmp_path / "results" / "x", allow_dirty=True) is True
    assert check_clean_for_results(tmp_path / "runs" / "x", allow_dirty=False) is False
    monkeypatch.setattr(registry_module, "code_changes", lambda root: [])
    assert check_clean_for_results(tmp_path / "results" / "x", allow_dirty=False) is False


def test_the_command_refuses_results_from_uncommitted_code_in_one_line(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.setattr(registry_module, "checkout_root", lambda: tmp_path)
    monkeypatch.setattr(registry_module, "code_changes", lambda root: ["relulab/x.py"])
    out = tmp_path / "results" / "anisotropy"
    assert cli.main(["run", "anisotropy", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "uncommitted changes" in err and not out.exists()


# --- a registration that changes after a result --------------------------------------------------
def test_a_rejudged_run_keeps_the_verdicts_of_its_earlier_registration(monkeypatch, tmp_path):
    monkeypatch.setitem(REGISTRY, "toyreg", _toy())
    out = tmp_path / "run"
    assert cli.main(["run", "toyreg", "--quiet", "--out", str(out)]) == 0
    first = SummaryRecord.from_json((out / "summary.json").read_text())
    assert first.verdicts() == {"first": "holds", "second": "holds"}
    assert first.previous_registrations == ()
    monkeypatch.setitem(REGISTRY, "toyreg", _toy(_specs(bound_of_second=0.6)))  # changed later
    assert cli.main(["rejudge", str(out), "--check"]) == 1
    assert cli.main(["rejudge", str(out)]) == 0
    second = SummaryRecord.from_json((out / "summary.json").read_text())
    assert second.verdicts() == {"first": "holds", "second": "fails"}
    (previous,) = second.previous_registrations
    assert previous.hash == first.registration.hash and previous.verdicts["second"] == "holds"
    html = (out / "report.html").read_text()
    assert "these units were judged under registration" in html and first.registration.hash in html
    # judged again under the same registration: the history is kept as it is, byte for byte
    assert cli.main(["rejudge", str(out), "--check"]) == 0
    assert json.loads((out / "summary.json").read_text())["previous_registrations"]


def test_the_registry_files_live_in_each_studys_package():
    for experiment in REGISTRY.values():
        for preset in experiment.presets:
            path = registry_module.registry_path(experiment, preset)
            assert path.parent.name == "registry" and Path(path).suffix == ".json"
