"""The layout of ``tests/`` (issue 48, ``tests/README.md``): it mirrors ``relulab/``, every
folder is a package and every test file name is unique across the tree; and every test file that
the README, the docs, the CI scripts, ``pyproject.toml``, relulab's docstrings and the tests
themselves cite exists, with every test function they cite as ``path::name`` — a stale path
sends a reader nowhere."""

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
CITED = re.compile(r"\btests/[\w/]+\.(?:py|json)(?:::\w+)?")
#: Files the docs tell a reader to create: the example study of docs/adding-an-experiment.md.
TO_BE_WRITTEN = {"tests/experiments/half_active/test_half_active.py"}


def _folders() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*") if p.is_dir() and p.name != "__pycache__")


def test_every_folder_of_tests_is_a_package():
    assert not [
        str(folder.relative_to(ROOT))
        for folder in [TESTS, *_folders()]
        if any(folder.glob("*.py")) and not (folder / "__init__.py").is_file()
    ]


def test_every_test_file_name_is_unique():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1]


def test_every_folder_mirrors_a_part_of_relulab():
    """``tests/<package>/`` for ``relulab/<package>/``, ``tests/experiments/<study>/`` for a
    study package, and ``tests/project/`` for the suites about the project as a whole."""
    strays = [
        str(folder.relative_to(TESTS))
        for folder in _folders()
        if folder.relative_to(TESTS) != Path("project")
        and not (ROOT / "relulab" / folder.relative_to(TESTS) / "__init__.py").is_file()
    ]
    assert not strays, f"folders of tests/ with no relulab package of that name: {strays}"


def _citing_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "pyproject.toml", *sorted((ROOT / ".ci").iterdir())]
    files += sorted((ROOT / "docs").rglob("*.md"))
    files += sorted((ROOT / "relulab").rglob("*.py")) + sorted(TESTS.rglob("*.py"))
    return [path for path in files if path.is_file()]


def _citations() -> list[tuple[str, str]]:
    found = set()
    for path in _citing_files():
        for citation in CITED.findall(path.read_text(encoding="utf-8")):
            if citation not in TO_BE_WRITTEN:
                found.add((str(path.relative_to(ROOT)), citation))
    return sorted(found)


def test_the_docs_cite_test_files():
    assert len(_citations()) > 50, "the pattern no longer finds the citations"


@pytest.mark.parametrize(("where", "citation"), _citations())
def test_a_cited_test_path_exists(where, citation):
    path, _, name = citation.partition("::")
    assert (ROOT / path).is_file(), f"{where} cites {path}, which does not exist"
    if name:
        source = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^\s*def {name}\(", source, re.M), f"{where}: no {name} in {path}"
