"""The machine a run executes on: the device it asks for and the library versions it records."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path

import torch

from relulab.checkout import source_commit

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
    """The git commit relulab's source is at (:func:`relulab.checkout.source_commit`)."""
    return source_commit(package_dir)


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
