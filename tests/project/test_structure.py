"""The shape the experiments keep (issue 28): every study a package of small functions, unit
names declared once in its ``units.py`` and produced by its ``plan``, every claim declared as a
spec with a positive and a negative control test, criteria that come from the library."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from relulab.experiments import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "relulab" / "experiments"
TESTS = ROOT / "tests"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 600
STUDY_MODULES = ("__init__.py", "config.py", "units.py", "claims", "figures.py")
# Studies that declare their claims as specs; the checks below apply to them (issue 28 migrates
# every study, then this set is every registered experiment).
MIGRATED = {name for name, experiment in REGISTRY.items() if experiment.claims}


def _modules() -> list[Path]:
    return sorted(EXPERIMENTS.rglob("*.py"))


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str]) -> int:
    """Lines of code in a function: not blank, not a comment, not its docstring."""
    docstring = set()
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            docstring = set(range(body[0].lineno, body[0].end_lineno + 1))
    lines = range(node.lineno, node.end_lineno + 1)
    return sum(
        1
        for number in lines
        if number not in docstring
        and source[number - 1].strip()
        and not source[number - 1].strip().startswith("#")
    )


def _functions(path: Path):
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node, _code_lines(node, text.splitlines())


def _study(path: Path) -> str:
    relative = path.relative_to(EXPERIMENTS)
    return relative.parts[0].removesuffix(".py") if len(relative.parts) > 1 else relative.stem


def _pending(path: Path) -> bool:
    """A module of a study not yet migrated (shared modules are always checked)."""
    study = _study(path).replace("_", "-")
    return study in REGISTRY and study not in MIGRATED


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(EXPERIMENTS)))
def test_functions_are_short(path):
    if _pending(path):
        pytest.skip("study not yet migrated to claim specs")
    long = [
        f"{node.name} ({lines} lines)"
        for node, lines in _functions(path)
        if lines > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines of code: {long}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(EXPERIMENTS)))
def test_modules_are_short(path):
    if _pending(path):
        pytest.skip("study not yet migrated to claim specs")
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{lines} lines"


def _string_subscripts_of_results(path: Path) -> list[str]:
    """``results["…"]`` / ``results[f"…"]`` / ``results.get("…")``: a unit reached by a string
    typed where it is read."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        target, key = None, None
        if isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            target, key = node.func.value, node.args[0]
        if isinstance(target, ast.Name) and target.id == "results":
            if isinstance(key, ast.JoinedStr) or (
                isinstance(key, ast.Constant) and isinstance(key.value, str)
            ):
                found.append(f"line {node.lineno}")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(EXPERIMENTS)))
def test_units_are_reached_by_declared_keys(path):
    if _pending(path):
        pytest.skip("study not yet migrated to claim specs")
    if path.name == "units.py":
        return
    assert not _string_subscripts_of_results(path), "use the study's units.Key"


def _claims_module(package: Path, module: str) -> Path | None:
    """The study's claims module, ``claims.py`` or a ``claims/`` package, when ``module`` is
    ``"claims"``."""
    if module != "claims":
        return None
    for candidate in (package / "claims.py", package / "claims" / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _test_names() -> set[str]:
    names = set()
    for path in TESTS.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                names.add(node.name)
    return names


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_claim_has_a_positive_and_a_negative_control(name):
    if name not in MIGRATED:
        pytest.skip("study not yet migrated to claim specs")
    check_claim_controls(REGISTRY[name], _test_names())


def check_claim_controls(experiment, names: set[str]) -> None:
    assert experiment.claims, "the experiment declares no claim specs"
    missing = [
        f"{spec.test_name}_{kind}"
        for spec in experiment.claims
        for kind in ("positive", "negative")
        if f"{spec.test_name}_{kind}" not in names
    ]
    assert not missing, f"control tests missing: {missing}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_unit_key_is_produced_by_plan(name):
    if name not in MIGRATED:
        pytest.skip("study not yet migrated to claim specs")
    check_unit_keys_produced_by_plan(REGISTRY[name])


def check_unit_keys_produced_by_plan(experiment) -> None:
    assert experiment.unit_keys is not None, "the experiment declares no unit_keys"
    for preset, config in experiment.presets.items():
        planned = {unit.name for unit in experiment.plan(config)}
        missing = sorted(set(experiment.unit_keys(config)) - planned)
        assert not missing, f"{preset}: keys no unit of plan produces: {missing}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_study_is_a_package(name):
    if name not in MIGRATED:
        pytest.skip("study not yet migrated to claim specs")
    check_study_package(EXPERIMENTS / name.replace("-", "_"))


def check_study_package(package: Path) -> None:
    missing = [
        module
        for module in STUDY_MODULES
        if not (package / module).is_file() and not _claims_module(package, module)
    ]
    assert not missing, f"{package} lacks {missing}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_claim_ids_are_unique_and_analysis_evaluates_specs(name):
    """The specs are declared once, with unique ids, and ``analyse`` evaluates specs (all of
    ``CLAIMS``, or the part a config measures) rather than building claims by hand."""
    if name not in MIGRATED:
        pytest.skip("study not yet migrated to claim specs")
    check_claim_specs(REGISTRY[name], EXPERIMENTS / name.replace("-", "_"))


def check_claim_specs(experiment, package: Path) -> None:
    ids = [spec.id for spec in experiment.claims]
    assert len(ids) == len(set(ids))
    claims_file = _claims_module(package, "claims")
    assert claims_file, f"{package} has no claims.py or claims/__init__.py"
    assert "evaluate(" in claims_file.read_text(encoding="utf-8"), "analyse must evaluate specs"


def test_claims_are_frozen_specs():
    for name in MIGRATED:
        for spec in REGISTRY[name].claims:
            assert dataclasses.is_dataclass(spec) and spec.id and spec.source, spec


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_claim_says_where_it_fails_and_every_check_why_it_is_one(name):
    """A claim is a statement the experiment's model could fail: it names the setting of the
    simulated system under which it does (its negative control runs that setting). A check says
    why the experiment could not fail it (issue 42)."""
    check_counterexamples_and_checks(REGISTRY[name])


def check_counterexamples_and_checks(experiment) -> None:
    missing = [s.id for s in experiment.claims if s.kind == "claim" and not s.counterexample]
    assert not missing, f"claims without a counterexample: {missing}"
    for spec in experiment.claims:
        if spec.kind == "check":
            assert len(spec.check) > 20, f"{spec.id}: say why it is a check"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_unit_has_a_declared_view(name):
    """Readers reach a unit's data by declared attribute (issue 42), and the runner checks
    every stored unit against its view before analysing it."""
    check_unit_views(REGISTRY[name])


def check_unit_views(experiment) -> None:
    assert experiment.unit_views is not None, "the experiment declares no unit_views"
    for preset, config in experiment.presets.items():
        views = experiment.unit_views(config)
        planned = {unit.name for unit in experiment.plan(config)}
        assert planned <= set(views), f"{preset}: units without a view: {planned - set(views)}"


_STUDY_READERS = ("claims", "readings", "figures", "measure", "sections", "observations")


def _string_lookups(path: Path) -> list[str]:
    """``x.final["…"]`` / ``x.curves["…"]`` / ``x.arrays["…"]``: a unit's field reached by a
    string typed where it is read."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in ("final", "curves", "arrays")
            and isinstance(node.slice, ast.Constant | ast.JoinedStr)
        ):
            found.append(f"line {node.lineno}")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(EXPERIMENTS)))
def test_readers_reach_unit_fields_through_views(path):
    relative = path.relative_to(EXPERIMENTS)
    if not any(part.startswith(_STUDY_READERS) for part in relative.parts):
        return
    assert not _string_lookups(path), "use the unit's declared view (relulab.records.UnitView)"


LIBRARY = ROOT / "relulab"
LAYERS = {  # a package and what it must never import
    "records": ("relulab.runner", "relulab.report", "relulab.experiments", "relulab.cli"),
    "report": ("relulab.runner", "relulab.experiments", "relulab.cli"),
}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_records_and_pages_import_no_layer_above_them(package):
    """``report/`` renders records and never imports ``runner/`` (issue 42: that import made a
    cycle); ``records/`` is plain data."""
    bad = [
        f"{path.relative_to(LIBRARY)} imports {name}"
        for path in sorted((LIBRARY / package).rglob("*.py"))
        for name in _imports(path)
        if name.startswith(LAYERS[package])
    ]
    assert not bad, bad


#: Every module of the library (issue 48): each under the line limits the studies keep.
LIBRARY_MODULES = sorted(LIBRARY.rglob("*.py"))


@pytest.mark.parametrize("path", LIBRARY_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_library_modules_and_functions_are_short(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{lines} lines"
    long = [f"{node.name} ({n})" for node, n in _functions(path) if n > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines of code: {long}"


#: The floors of the library, lowest first (issue 48): a module imports only from its own
#: package or from a lower floor, so data flows one way (tasks → engine with nn and init →
#: probe → store → report) and no package calls back up. Rooms on one floor may import each
#: other without a cycle (the cycle test below).
FLOORS = (
    (
        "nn",
        "theory",
        "analysis",
        "progress",
        "reading",
        "checkout",
        "errors",
        "files",
        "config",
        "faults",
        "resources",
    ),
    ("init", "tasks", "records"),
    ("probe", "engine", "store"),
    ("report",),
    ("experiments",),
    ("registry",),
    ("runner", "docs_sync"),
    ("bench",),
    ("cli",),
    ("__main__",),
)
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "relulab" and len(parts) > 1 else None


def test_every_room_of_the_library_has_a_floor():
    rooms = {path.stem if path.is_file() else path.name for path in LIBRARY.iterdir()}
    rooms -= {"__init__", "__pycache__"}
    assert rooms <= set(FLOOR), f"give these a floor in FLOORS: {sorted(rooms - set(FLOOR))}"


@pytest.mark.parametrize("path", LIBRARY_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_room_above_its_floor(path):
    """Type-checking imports count too: they are edges a reader follows."""
    own = path.relative_to(LIBRARY).parts[0].removesuffix(".py")
    if own == "__init__":
        return
    up = sorted(
        name
        for name in _imports(path)
        if (room := _room(name)) is not None and room != own and FLOOR[room] > FLOOR[own]
    )
    assert not up, f"{own} (floor {FLOOR[own]}) imports {up}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycle_between_modules_of_a_package():
    """Within each package too (probe's advice, findings, result and core were one circle)."""
    graph = {_module_name(path): _imports(path) for path in LIBRARY_MODULES}
    modules = set(graph)
    edges = {
        name: {target for target in targets if target in modules and target != name}
        for name, targets in graph.items()
    }
    for name in edges:  # a package's face re-exports its modules: not an edge back
        edges[name] = {t for t in edges[name] if not name.startswith(t + ".")}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                cycle = trail[trail.index(target) :] if target in trail else trail
                raise AssertionError(" → ".join([*cycle, target]))
            if target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])


def _config_parameters(path: Path) -> list[tuple[int, str, ast.expr | None]]:
    """(line, function, annotation) of every parameter named ``config`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                if arg.arg == "config":
                    found.append((node.lineno, node.name, arg.annotation))
    return found


def test_no_config_parameter_is_any_or_unannotated():
    """Issue 48: a function of relulab.experiments that takes a config says which (a study's
    config class, a Protocol of the fields it reads, or the bound StudyConfig), never ``Any``."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path in _modules()
        for line, name, annotation in _config_parameters(path)
        if annotation is None or "Any" in ast.unparse(annotation)
    ]
    assert not offenders, offenders


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_study_declares_its_experiment_config_type(name):
    """``EXPERIMENT: Experiment[ItsConfig]`` in the study's ``__init__.py`` (issue 48)."""
    experiment = REGISTRY[name]
    check_experiment_config_type(
        experiment, EXPERIMENTS / experiment.plan.__module__.split(".")[2] / "__init__.py"
    )


def check_experiment_config_type(experiment, init: Path) -> None:
    declared = [
        ast.unparse(node.annotation)
        for node in ast.parse(init.read_text(encoding="utf-8")).body
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "EXPERIMENT"
    ]
    assert declared == [f"Experiment[{experiment.config.__name__}]"]


def test_ci_runs_exactly_the_readme_test_command():
    """``.ci/run`` ends with the README's test command (type checker included), character for
    character: CI checks what a contributor is told to run."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    command = [
        line for line in readme if line.startswith("pip install -q torch==") and "pytest" in line
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert command == [ci]
    assert "&& mypy &&" in ci
