"""The git commit a run records for relulab's source: the checkout's HEAD (``+dirty`` for
uncommitted changes) where that checkout tracks the package, ``None`` where the package is merely
inside another repository's work tree (installed into its ``.venv``) or outside any."""

import re
import shutil
import subprocess

import pytest

from relulab.runner.environment import _source_commit, library_versions

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo, *args):
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def _repo(path):
    path.mkdir()
    _git(path, "init", "-q")
    (path / "README").write_text("another project\n")
    return path


def _package(directory):
    directory.mkdir(parents=True)
    (directory / "__init__.py").write_text('"""relulab"""\n')
    return directory


def test_a_tracked_package_reports_its_checkouts_head_and_dirty(tmp_path):
    repo = _repo(tmp_path / "relulab-checkout")
    package = _package(repo / "relulab")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "source")
    head = _git(repo, "rev-parse", "HEAD")
    assert _source_commit(package) == head
    (package / "__init__.py").write_text('"""relulab, edited"""\n')
    assert _source_commit(package) == head + "+dirty"


def test_an_install_inside_another_repository_reports_no_commit(tmp_path):
    repo = _repo(tmp_path / "project")
    (repo / ".gitignore").write_text(".venv/\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "project")
    ignored = _package(repo / ".venv" / "lib" / "site-packages" / "relulab")
    untracked = _package(repo / "vendored" / "relulab")
    assert _source_commit(ignored) is None, "the project's HEAD says nothing about relulab"
    assert _source_commit(untracked) is None


def test_a_package_that_is_a_repository_of_its_own_inside_another_reports_no_commit(tmp_path):
    outer = _repo(tmp_path / "project")
    package = _package(outer / "relulab")
    _git(package, "init", "-q")
    _git(package, "add", ".")
    _git(package, "commit", "-q", "-m", "not relulab's history")
    assert _source_commit(package) is None


def test_outside_any_repository_there_is_no_commit(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # whatever encloses tmp_path
    assert _source_commit(_package(tmp_path / "site-packages" / "relulab")) is None


def test_library_versions_records_a_commit_only_in_its_form():
    commit = library_versions().get("relulab_commit")
    assert commit is None or re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", commit)
