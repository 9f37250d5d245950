r"""Registration: the criteria are fixed, and committed, before the run that judges them.

Every claim's criterion, tolerances, sweep points and windows, with the preset's config, hash
into a registry committed with the code: one file per study and preset,
``relulab/experiments/<study>/registry/<preset>.json`` (:class:`relulab.records.Registration`),
written by ``relulab register`` and checked by a test. A run records the hash its claims were
judged under, each claim its own, and the commit its units were computed at; its registration
is *registered* (:func:`registration_status`) when

* its config is the preset's (a ``--set`` run judges criteria at a config nobody registered),
* the code's registration equals the committed registry file (criteria were not changed after
  the file was written), and
* its units came from a clean commit (``+dirty`` marks a run made from uncommitted code).

A run meant for ``results/`` (its directory inside the checkout's ``results/``) refuses a dirty
tree outright (:func:`check_clean_for_results`; ``--allow-dirty`` runs it and marks every page
*unregistered*).

When a registration changes after a committed result, ``relulab rejudge`` keeps the earlier
verdicts beside the new ones (``previous_registrations`` in ``summary.json``), and the report
names the commit that changed the registry file (:func:`change_commit`).

>>> from relulab.experiments import get_experiment
>>> experiment = get_experiment("anisotropy")
>>> len(registration(experiment, "quick").hash)
16
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from relulab.checkout import checkout_root, code_changes, git
from relulab.config import alternatives, config_to_dict
from relulab.experiments.base import Experiment
from relulab.experiments.claims import ClaimSpec, PostHoc
from relulab.reading import read_text_bounded
from relulab.records.registration import Registration, registration_hash
from relulab.records.summary import RegistrationRecord

__all__ = [
    "REGISTRY_DIRECTORY",
    "DirtyTreeError",
    "change_commit",
    "check_clean_for_results",
    "claim_entry",
    "registration",
    "registered",
    "registration_status",
    "registry_path",
    "sync",
    "verdict_inputs",
]

REGISTRY_DIRECTORY = "registry"  # inside each study's package


class DirtyTreeError(ValueError):
    """A run meant for ``results/`` from a tree with uncommitted changes."""


def _canonical(value: Any) -> Any:
    """A criterion (or any value a registration holds) as plain JSON: a dataclass as its type
    and fields, mappings and sequences element by element, a function by its qualified name,
    a non-finite float as text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"type": type(value).__name__, **fields}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if callable(value):
        return _qualname(value)
    return value


def _qualname(function: Callable[..., Any] | None) -> str | None:
    if function is None:
        return None
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', '?')}"


def _post_hoc_entry(choice: PostHoc, config: Any) -> dict[str, Any]:
    criterion = choice.criterion
    if criterion is not None and not hasattr(criterion, "judge"):
        criterion = criterion(config)
    return {
        "what": choice.what,
        "why": choice.why,
        "criterion_without": _canonical(criterion),
        "measure_without": _qualname(choice.measure),
        "untested_without": choice.untested(config) if choice.untested else None,
    }


def claim_entry(spec: ClaimSpec, config: Any) -> dict[str, Any]:
    """What decides one claim's verdict at ``config``, as plain JSON (without its hash)."""
    return {
        "id": spec.id,
        "kind": spec.kind,
        "statement": spec.statement,
        "source": spec.source,
        "scope": spec.scope,
        "note": spec.note,
        "unit": spec.unit,
        "beyond_seed": spec.beyond_seed,
        "check": spec.check,
        "counterexample": spec.counterexample,
        "criterion": _canonical(spec.criterion_for(config)),
        "measure": _qualname(spec.measure),
        "untested": spec.untested(config) if spec.untested else "",
        "post_hoc": [_post_hoc_entry(choice, config) for choice in spec.post_hoc],
    }


def verdict_inputs(entry: dict[str, Any]) -> dict[str, Any]:
    """What of a claim's entry decides its verdict — its criterion with every threshold, the
    function that measures it, why a config cannot decide it, and the same without each
    post-hoc choice — and so goes into its hash with the config. The words around them (the
    statement, its seed source, scope, notes, the counterexample, why a check is one, the
    post-hoc choice's what and why) and its kind are registered in the file but not hashed:
    rewording a claim, or moving it between claims and checks, leaves the verdicts a
    robustness record holds for it valid.

    Example:
        >>> verdict_inputs({"id": "x", "statement": "words", "criterion": {"type": "Below"},
        ...                 "measure": "m", "untested": "", "post_hoc": []})["criterion"]
        {'type': 'Below'}
    """
    return {
        "id": entry["id"],
        "criterion": entry["criterion"],
        "measure": entry["measure"],
        "untested": entry["untested"],
        "post_hoc": [
            {k: p[k] for k in ("criterion_without", "measure_without", "untested_without")}
            for p in entry["post_hoc"]
        ],
    }


def registration(experiment: Experiment, preset: str, config: Any = None) -> Registration:
    """The study's registration at ``config`` (default: the preset's).

    Args:
        experiment: the study.
        preset: the preset the config starts from (recorded; it names the registry file).
        config: the config the claims are judged at.

    Returns:
        The :class:`~relulab.records.Registration`, every claim hashed with the config.
    """
    config = experiment.presets[preset] if config is None else config
    values = config_to_dict(config)
    claims = []
    for spec in experiment.claims:
        entry = claim_entry(spec, config)
        decisive = verdict_inputs(entry)
        claims.append({**entry, "hash": registration_hash(experiment.name, values, decisive)})
    declared = {k: [_canonical(v) for v in vs] for k, vs in alternatives(config).items()}
    whole = registration_hash(experiment.name, values, declared, claims)
    return Registration(experiment.name, preset, values, declared, tuple(claims), whole)


def registry_path(experiment: Experiment, preset: str) -> Path:
    """Where the study's registry file for ``preset`` lives (inside its package)."""
    module = inspect.getmodule(experiment.plan)
    if module is None or module.__file__ is None:
        raise ValueError(f"{experiment.name}: cannot locate its package")
    package = Path(module.__file__).resolve().parent
    return package / REGISTRY_DIRECTORY / f"{preset}.json"


def registered(experiment: Experiment, preset: str) -> Registration | None:
    """The committed registry file of ``experiment`` at ``preset`` (``None``: none)."""
    path = registry_path(experiment, preset)
    if not path.is_file():
        return None
    return Registration.from_json(read_text_bounded(path, "registry file", what="a JSON record"))


def registration_status(
    experiment: Experiment, preset: str, config: Any, commit: str
) -> tuple[Registration, RegistrationRecord]:
    """The run's registration and whether it is registered (module docstring).

    Args:
        experiment: the study.
        preset: the preset the run started from.
        config: the run's config.
        commit: the commit the units were computed at (``+dirty`` for uncommitted code,
            ``""`` when unknown).

    Returns:
        The registration at ``config`` and the record a summary keeps.
    """
    current = registration(experiment, preset, config)
    base = experiment.presets.get(preset)
    departs = (
        sorted(k for k, v in config_to_dict(config).items() if config_to_dict(base).get(k) != v)
        if base is not None
        else ["preset"]
    )
    committed = registered(experiment, preset) if not departs else None
    if departs:
        reason = f"the config departs from the registered {preset} preset in: {', '.join(departs)}"
    elif committed is None:
        reason = f"no registry file for the {preset} preset; run `relulab register`"
    elif committed.hash != current.hash:
        reason = (
            "the criteria differ from the committed registry file; run `relulab register` "
            "and commit it"
        )
    elif commit.endswith("+dirty"):
        reason = f"the units were computed from uncommitted code ({commit})"
    else:
        reason = ""
    status: Literal["registered", "unregistered"] = "unregistered" if reason else "registered"
    return current, RegistrationRecord(current.hash, status, reason, commit)


def sync(experiments: Mapping[str, Experiment], check: bool = False) -> list[Path]:
    """Write every study's registry files (one per preset) that differ from the code's
    registration; with ``check`` write nothing. Returns the files that differ(ed)."""
    changed = []
    for experiment in experiments.values():
        for preset in experiment.presets:
            path = registry_path(experiment, preset)
            text = registration(experiment, preset).to_json()
            if path.is_file() and path.read_text(encoding="utf-8") == text:
                continue
            changed.append(path)
            if not check:
                path.parent.mkdir(exist_ok=True)
                path.write_text(text, encoding="utf-8")
    return changed


# ---------------------------------------------------------------------------------------------
# The checkout: clean trees for results/, and the commit that changed a registration.
# ---------------------------------------------------------------------------------------------
def check_clean_for_results(out_dir: Path, allow_dirty: bool) -> bool:
    """Refuse a run whose directory lies in the checkout's ``results/`` while its code has
    uncommitted changes (:func:`relulab.checkout.code_changes`): :class:`DirtyTreeError`,
    naming a few, unless ``allow_dirty``.

    Returns:
        Whether the run is meant for ``results/`` from a dirty tree (allowed, unregistered).
    """
    root = checkout_root()
    if root is None:
        return False
    results = (root / "results").resolve()
    if not Path(out_dir).resolve().is_relative_to(results):
        return False
    try:
        changes = code_changes(root)
    except (OSError, subprocess.SubprocessError):
        changes = ["(git cannot tell)"]
    if not changes:
        return False
    if allow_dirty:
        return True
    shown = ", ".join(changes[:3]) + (f" and {len(changes) - 3} more" if len(changes) > 3 else "")
    raise DirtyTreeError(
        f"{out_dir} is inside results/, which holds committed results, and the code has "
        f"uncommitted changes ({shown}); commit them first, or pass --allow-dirty to mark every "
        "page unregistered"
    )


def change_commit(experiment: Experiment, preset: str, hash_: str) -> str:
    """The commit that gave the study's registry file for ``preset`` the registration
    ``hash_`` (short hash), ``"uncommitted"`` when no commit has it yet, ``""`` when git or the
    file cannot tell."""
    root = checkout_root()
    path = registry_path(experiment, preset)
    if root is None or not path.is_file():
        return ""
    relative = path.relative_to(root).as_posix()
    try:
        commits = git(root, "log", "--format=%h", "--reverse", "--", relative).split()
        for commit in commits:
            text = git(root, "show", f"{commit}:{relative}")
            if Registration.from_json(text).hash == hash_:
                return commit
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return ""
    return "uncommitted"
