"""The machine a run executes on: the device it asks for and the library versions it records."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import torch

__all__ = ["library_versions", "resolve_device"]


def resolve_device(name: str) -> torch.device:
    """``auto`` → CUDA when available else CPU; ``cpu``; ``cuda`` / ``cuda:N`` (must exist)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"unknown device {name!r}; use auto, cpu or cuda[:N]") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {name!r}; use auto, cpu or cuda[:N]")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but CUDA is not available here")
    if (
        device.type == "cuda"
        and device.index is not None
        and device.index >= torch.cuda.device_count()
    ):
        raise ValueError(
            f"device {name!r} does not exist ({torch.cuda.device_count()} CUDA devices)"
        )
    return device


def _source_commit(package_dir: Path | None = None) -> str | None:
    """The git commit relulab's source is at, with ``+dirty`` for uncommitted changes to its
    tracked files; ``None`` unless the package's source is tracked by the enclosing checkout.

    A copy installed into another project's checkout (site-packages in its ``.venv``, say)
    lies inside a git work tree without being tracked by it; that repository's HEAD says
    nothing about relulab, so ``None`` is returned rather than it.
    """
    package_dir = (package_dir or Path(__file__).resolve().parents[1]).resolve()

    def git(*args: str, cwd: Path = package_dir) -> str:
        return subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True,
            timeout=10,
        ).stdout.strip()  # fmt: skip

    try:
        root = Path(git("rev-parse", "--show-toplevel")).resolve()
        if root != Path(git("rev-parse", "--show-toplevel", cwd=package_dir.parent)).resolve():
            return None  # the package directory is a repository of its own, not its source
        git("ls-files", "--error-unmatch", "--", str(package_dir / "__init__.py"))
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def library_versions() -> dict[str, str]:
    """Versions of Python, the platform and every library a result depends on, and the git
    commit of relulab's source where it runs from a checkout."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("relulab", "torch", "numpy", "scipy", "pandas", "matplotlib"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    commit = _source_commit()
    if commit is not None:
        versions["relulab_commit"] = commit
    versions["torch_threads"] = str(torch.get_num_threads())
    return versions
