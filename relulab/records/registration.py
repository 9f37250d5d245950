r"""A study's registration at one config: every claim's criterion, tolerances, points and windows,
with the config, hashed — the record committed as ``relulab/experiments/<study>/registry/
<preset>.json`` (:mod:`relulab.registry` computes and writes it).

Each claim's entry holds what decides its verdict: its kind (claim or check), statement, seed
source and scope, its criterion with every threshold (the criterion object written out field by
field), the function that measures it, why the preset cannot decide it (if it cannot), its
counterexample and its post-hoc declarations. Its ``hash`` covers what decides its verdict (the
criterion, the measure, the "not tested" reason, the same without each post-hoc choice) and the
config, so a claim's hash changes exactly when what judges it does; the registration's ``hash``
covers all of the file.

>>> entry = {"id": "x", "criterion": {"type": "Below", "bound": 1.0}}
>>> registration_hash({"seed": 0}, entry) == registration_hash({"seed": 0}, dict(entry))
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["REGISTRY_SCHEMA", "Registration", "canonical_json", "registration_hash"]

REGISTRY_SCHEMA = 1


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the text a registration hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def registration_hash(*parts: Any) -> str:
    """SHA-256 of the canonical JSON of ``parts``, 16 hex digits."""
    return hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Registration:
    """A study's registration at one preset (module docstring).

    Args:
        experiment: the study.
        preset: the preset whose config this is.
        config: the config, field by field.
        alternatives: the declared readings of the inferred settings (``relulab robustness``).
        claims: one entry per claim and check, each with its ``hash``.
        hash: the hash of all of it.
        schema: the registry file's schema.
    """

    experiment: str
    preset: str
    config: Mapping[str, Any]
    alternatives: Mapping[str, list[Any]]
    claims: tuple[Mapping[str, Any], ...]
    hash: str = ""
    schema: int = REGISTRY_SCHEMA
    _by_id: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {c["id"]: c["hash"] for c in self.claims})

    def claim_hash(self, claim_id: str) -> str:
        """The registered hash of one claim (``""`` for an unknown id)."""
        return self._by_id.get(claim_id, "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "experiment": self.experiment,
            "preset": self.preset,
            "hash": self.hash,
            "config": dict(self.config),
            "alternatives": {k: list(v) for k, v in self.alternatives.items()},
            "claims": [dict(c) for c in self.claims],
        }

    def to_json(self) -> str:
        """The registry file's text (indented, keys in a fixed order)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Registration:
        content = json.loads(text)
        return cls(
            str(content["experiment"]),
            str(content["preset"]),
            dict(content["config"]),
            dict(content.get("alternatives") or {}),
            tuple(dict(c) for c in content["claims"]),
            str(content["hash"]),
            int(content.get("schema") or REGISTRY_SCHEMA),
        )
