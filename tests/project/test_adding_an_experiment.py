"""docs/adding-an-experiment.md followed to the letter (issue 48): its Python blocks, written
into a temporary package ``relulab.experiments.half_active``, make a study that passes the checks
the suite applies to every registered study (the same check functions), runs end to end, is
registered, has its robustness record made and its docs page synced. The page's blocks are the
study, so the page and this test cannot drift apart."""

from __future__ import annotations

import ast
import importlib
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

import relulab.experiments
from relulab import cli, docs_sync
from relulab.config import undeclared_alternatives
from tests import test_registry
from tests.project import test_docs_sync, test_structure
from tests.report import test_render_math
from tests.runner import test_robustness, test_run_guards

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "adding-an-experiment.md"
NAME, PACKAGE = "half-active", "half_active"
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), re.M | re.S)


def _files(language: str) -> dict[str, str]:
    """The page's blocks of ``language`` that are whole files: path (their first line) → text."""
    found = {}
    for kind, text in BLOCKS:
        first = text.splitlines()[0]
        if kind == language and first.startswith("# ") and first.endswith(".py"):
            found[first[2:]] = text
    return found


def test_the_guide_gives_every_module_of_a_study_and_its_test():
    study = f"relulab/experiments/{PACKAGE}/"
    names = {path.removeprefix(study) for path in _files("python") if path.startswith(study)}
    assert names == {"__init__.py", "config.py", "units.py", "claims.py", "figures.py"}
    assert f"tests/experiments/{PACKAGE}/test_{PACKAGE}.py" in _files("python")


def _write_study(where: Path) -> Path:
    package = where / PACKAGE
    package.mkdir()
    for path, text in _files("python").items():
        target = where / path.removeprefix("relulab/experiments/").removeprefix(
            f"tests/experiments/{PACKAGE}/"
        )
        target.write_text(text, encoding="utf-8")
    return package


@pytest.fixture
def study(tmp_path, monkeypatch):
    """The guide's study as ``relulab.experiments.half_active`` (a temporary directory on the
    package's path), registered into a copy of the registry for the test's duration."""
    where = tmp_path / "study"
    where.mkdir()
    package = _write_study(where)
    monkeypatch.setattr(
        relulab.experiments, "__path__", [*relulab.experiments.__path__, str(where)]
    )
    monkeypatch.syspath_prepend(str(where))  # the study's own test module
    experiment = importlib.import_module(f"relulab.experiments.{PACKAGE}").EXPERIMENT
    registry = {**relulab.experiments.REGISTRY, NAME: experiment}
    original = relulab.experiments.REGISTRY
    for module in list(sys.modules.values()):
        if getattr(module, "REGISTRY", None) is original:
            monkeypatch.setattr(module, "REGISTRY", registry)
    yield experiment, package
    for module in [m for m in sys.modules if m.startswith(f"relulab.experiments.{PACKAGE}")]:
        del sys.modules[module]
    sys.modules.pop(f"test_{PACKAGE}", None)
    vars(relulab.experiments).pop(PACKAGE, None)


def test_the_guides_study_passes_the_checks_of_every_study(study):
    experiment, package = study
    assert experiment.name == NAME and relulab.experiments.get_experiment(NAME) is experiment
    modules = sorted(package.glob("*.py"))
    for path in modules:  # short functions and modules, units and fields by declared names
        assert len(path.read_text(encoding="utf-8").splitlines()) <= test_structure.MAX_MODULE_LINES
        assert all(
            n <= test_structure.MAX_FUNCTION_LINES for _, n in test_structure._functions(path)
        )
        if path.name != "units.py":
            assert not test_structure._string_subscripts_of_results(path), path.name
        assert not test_structure._string_lookups(path), path.name
        for _line, name, annotation in test_structure._config_parameters(path):
            assert annotation is not None and "Any" not in ast.unparse(annotation), (path, name)
        floor = test_structure.FLOOR["experiments"]
        for imported in test_structure._imports(path):
            room = test_structure._room(imported)
            assert room is None or test_structure.FLOOR[room] <= floor, (path.name, imported)
    test_structure.check_study_package(package)
    test_structure.check_claim_specs(experiment, package)
    test_structure.check_counterexamples_and_checks(experiment)
    test_structure.check_unit_keys_produced_by_plan(experiment)
    test_structure.check_unit_views(experiment)
    test_structure.check_experiment_config_type(experiment, package / "__init__.py")
    own_tests = package.parent / f"test_{PACKAGE}.py"
    names = {
        node.name
        for node in ast.walk(ast.parse(own_tests.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    test_structure.check_claim_controls(experiment, names)
    test_run_guards.check_presets_pass_generic_checks(experiment)
    for config in experiment.presets.values():
        test_robustness.check_alternatives_pass_validation(config)
        assert undeclared_alternatives(config) == []
    test_robustness.check_judging_fields_unread(experiment)
    test_render_math.check_about_renders(experiment)
    assert {"quick", "paper"} <= set(experiment.presets)


def test_the_guides_study_runs_registers_and_is_robust(study, tmp_path, capsys):
    """The guide's commands in order: the study's own tests (its controls and tiny run),
    ``relulab register``, a run, ``relulab robustness`` and the docs sync."""
    experiment, package = study
    own = importlib.import_module(f"test_{PACKAGE}")
    own.test_zero_bias_neuron_is_half_active_positive()
    own.test_zero_bias_neuron_is_half_active_negative()
    (tmp_path / "own").mkdir()
    own.test_a_tiny_run_measures_every_claim(tmp_path / "own")
    # register: only the study's files are written (the copy holds the study alone here)
    with pytest.MonkeyPatch.context() as alone:
        for module in list(sys.modules.values()):
            if getattr(module, "REGISTRY", None) is relulab.experiments.REGISTRY:
                alone.setattr(module, "REGISTRY", {NAME: experiment})
        assert cli.main(["register"]) == 0
        assert cli.main(["register", "--check"]) == 0
    assert sorted(p.name for p in (package / "registry").iterdir()) == ["paper.json", "quick.json"]
    test_registry.check_registered_with_criteria(experiment)
    run = tmp_path / "run"
    assert cli.main(["run", NAME, "--preset", "quick", "--out", str(run), "--quiet"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert [c["verdict"] for c in summary["claims"]] == ["holds"]
    assert summary["registration"]["status"] in ("registered", "unregistered")
    robust = tmp_path / "robustness"
    argv = ["robustness", NAME, "--preset", "quick", "--out", str(robust), "--quiet"]
    assert cli.main([*argv, "--jobs", "1"]) == 0
    record = json.loads((robust / "robustness.json").read_text())
    assert {r["name"] for r in record["readings"]} >= {"preset", "inputs=uniform"}
    _docs_sync_on_a_copy(tmp_path / "repo", robust)


def _docs_sync_on_a_copy(root: Path, robust: Path) -> None:
    """Step 9 and 10 on a copy of the README: the page from the guide, the record copied into
    ``results/robustness/quick/half-active/``, ``python -m relulab.docs_sync``, then the
    suite's docs checks."""
    (root / "docs" / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "README.md", root / "README.md")
    (page_text,) = [text for kind, text in BLOCKS if kind == "markdown"]
    page = root / "docs" / "experiments" / f"{NAME}.md"
    page.write_text(page_text, encoding="utf-8")
    record = root / "results" / "robustness" / "quick" / NAME
    record.mkdir(parents=True)
    for name in ("robustness.json", "robustness.html"):
        shutil.copy(robust / name, record / name)
    assert docs_sync.main(["--root", str(root)]) == 0
    assert docs_sync.main(["--root", str(root), "--check"]) == 0
    for path in (root / "README.md", page):
        test_docs_sync.check_one_marker_pair(path)
        test_docs_sync.check_marked_section(path, root)
    assert f"results/robustness/quick/{NAME}/robustness.html" in page.read_text(encoding="utf-8")
    readme = (root / "README.md").read_text(encoding="utf-8")
    scorecard = docs_sync.marked_section(
        readme, "README.md", docs_sync.SCORECARD_BEGIN, docs_sync.SCORECARD_END
    )
    assert scorecard == docs_sync.expected_scorecard(root) and f"`{NAME}`" in scorecard


def test_the_guides_commands_are_the_codes():
    text = GUIDE.read_text(encoding="utf-8")
    assert docs_sync.SYNC_COMMAND in text and "relulab register --check" in text
    assert "mypy" in text and "NOT_YET_REMEASURED" in text and "DECLARED" in text
    assert "## Robustness to the inferred settings" in text
    assert docs_sync.BEGIN in text and docs_sync.END in text
