"""The relulab source checkout a run comes from: its commit, and whether its code is committed.

A result is reproducible from a commit only when the code it ran was committed: *code changes*
are uncommitted changes to tracked files of the package (``relulab/``) or ``pyproject.toml``,
and untracked files inside the package (a new module). A run records its commit with
``+dirty`` when there are any (:func:`source_commit`), and a run meant for the committed
``results/`` refuses them (:func:`relulab.registry.check_clean_for_results`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["PACKAGE_DIR", "checkout_root", "code_changes", "git", "source_commit"]

PACKAGE_DIR = Path(__file__).resolve().parent


def git(root: Path, *args: str) -> str:
    """``git -C root ARGS``'s output; raises ``OSError`` / ``SubprocessError`` on failure."""
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=20
    ).stdout


def checkout_root(package_dir: Path | None = None) -> Path | None:
    """The git checkout that tracks relulab's source, or ``None``.

    A copy installed into another project's checkout (site-packages in its ``.venv``, say)
    lies inside a git work tree without being tracked by it; that repository says nothing about
    relulab, so ``None`` is returned rather than it.
    """
    package_dir = (package_dir or PACKAGE_DIR).resolve()
    try:
        root = Path(git(package_dir, "rev-parse", "--show-toplevel").strip()).resolve()
        if root != Path(git(package_dir.parent, "rev-parse", "--show-toplevel").strip()).resolve():
            return None  # the package directory is a repository of its own, not its source
        git(package_dir, "ls-files", "--error-unmatch", "--", str(package_dir / "__init__.py"))
    except (OSError, subprocess.SubprocessError):
        return None
    return root


def code_changes(root: Path, package_dir: Path | None = None) -> list[str]:
    """The uncommitted code changes of the checkout (module docstring), as paths: the package's
    (``package_dir``, default relulab's own) and ``pyproject.toml``'s."""
    package = (package_dir or PACKAGE_DIR).resolve().relative_to(root.resolve()).as_posix()
    status = git(root, "status", "--porcelain", "--untracked-files=all", "--", package)
    status += git(root, "status", "--porcelain", "--untracked-files=no", "--", "pyproject.toml")
    return sorted({line[3:] for line in status.splitlines() if line.strip()})


def source_commit(package_dir: Path | None = None) -> str | None:
    """The commit relulab's source is at, with ``+dirty`` for uncommitted code changes;
    ``None`` unless the package's source is tracked by a checkout."""
    root = checkout_root(package_dir)
    if root is None:
        return None
    try:
        commit = git(root, "rev-parse", "HEAD").strip()
        dirty = code_changes(root, package_dir)
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")
