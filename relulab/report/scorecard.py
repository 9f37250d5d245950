"""How a claim reads, on a page and in the terminal: verdict, measured value with unit and
interval, seed, counts.

Every function takes a claim as it is stored in ``summary.json`` (a mapping) and copes with
summaries written before a field existed: a claim without ``verdict`` is judged by ``passed``,
one without ``unit`` or an interval shows the bare number, one without ``beyond_seed`` is a seed
claim.

**Tallies.** A claim that is ``not tested`` counts neither as holding nor failing: ``5/6 hold``
counts the seed's claims that this run tested, and says how many were not tested apart. Claims
flagged ``beyond_seed`` (relations the seed does not make) are tallied on their own.

**Robustness.** A claim's standing over the readings of a ``relulab robustness`` run (robust
holds / robust fails / robust inconclusive / depends) is shown in the colour of a verdict
(:data:`STANDING_VERDICT`) and reads ``robust holds 12/12`` or ``depends: tolerance 11/12``
(:func:`robustness_text`). A claim's *headline* (:mod:`relulab.records.standing`: holds /
depends / fails / inconclusive / not tested) is shown in :data:`STANDING_CLASS`'s colour.

**Checks** (identities of the setup, relulab's theory against its own simulation) are tallied
on their own (:func:`check_tally`), never with the claims.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from relulab.records.claims import ClaimRecord

__all__ = [
    "STANDING_CLASS",
    "STANDING_VERDICT",
    "check_tally",
    "overall_standing",
    "VERDICTS",
    "anchor",
    "beyond_seed",
    "is_beyond_seed",
    "beyond_tally",
    "seed_claims",
    "seed_tally",
    "tally",
    "verdict_class",
    "claim_seed",
    "count_text",
    "format_interval",
    "format_measured",
    "format_number",
    "format_overrides",
    "overall",
    "robustness_text",
    "verdict",
    "verdict_counts",
]

VERDICTS = ("holds", "fails", "inconclusive", "not tested")
STANDING_CLASS = {  # the CSS class (colour) of each headline standing
    "holds": "holds",
    "depends": "depends",
    "fails": "fails",
    "inconclusive": "inconclusive",
    "not tested": "not-tested",
}
STANDING_VERDICT = {  # the verdict whose colour a robustness standing is shown in
    "robust holds": "holds",
    "robust fails": "fails",
    "robust inconclusive": "inconclusive",
    "depends": "inconclusive",
    "not tested": "not tested",
}
_SEED_IN_SOURCE = re.compile(r"seed\s*(\d{3})", re.IGNORECASE)
_LEADING_SEED = re.compile(r"^\s*(\d{3})\b")


def format_number(value: Any) -> str:
    """A number as the reports print it: 4 significant digits, ``—`` for a missing value.

    Example:
        >>> format_number(0.021247832), format_number(4900.0), format_number(None)
        ('0.02125', '4900', '—')
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return ", ".join(format_number(v) for v in value)
    return str(value)


def format_overrides(overrides: Mapping[str, Any] | None) -> str:
    """The settings a run changed from its preset, e.g. ``steps=300, lr=0.1``.

    Example:
        >>> format_overrides({"steps": 300, "b2_sweep": [-1.1, -1.2]})
        'steps=300, b2_sweep=-1.1,-1.2'
    """
    return ", ".join(
        f"{key}={format_number(value).replace(', ', ',')}"
        for key, value in (overrides or {}).items()
    )


def verdict(claim: Mapping[str, Any]) -> str:
    """``holds``, ``fails``, ``inconclusive`` or ``not tested``; a claim stored before verdicts
    existed is judged by its ``passed`` flag."""
    stored = claim.get("verdict") or ""
    if stored in VERDICTS:
        return stored
    return "holds" if claim.get("passed") else "fails"


def format_measured(claim: Mapping[str, Any]) -> str:
    """The measured value with its unit, e.g. ``4900 steps``.

    Example:
        >>> format_measured({"measured": 4900.0, "unit": "steps"})
        '4900 steps'
    """
    text = format_number(claim.get("measured"))
    unit = claim.get("unit") or ""
    return f"{text} {unit}" if unit and claim.get("measured") is not None else text


def format_interval(claim: Mapping[str, Any]) -> str:
    """The confidence interval and sample size, e.g. ``95% CI [0.51, 0.56], n = 30``; ``""``
    for a plain number."""
    low, high = claim.get("ci_low"), claim.get("ci_high")
    parts = []
    if low is not None or high is not None:
        level = claim.get("ci_level")
        label = f"{level:.0%} CI" if isinstance(level, int | float) else "CI"
        parts.append(f"{label} [{format_number(low)}, {format_number(high)}]")
    if claim.get("n") is not None:
        parts.append(f"n = {claim['n']}")
    return ", ".join(parts)


def claim_seed(claim: Mapping[str, Any], seed_document: str = "") -> str:
    """The three-digit seed a claim tests: from its ``source`` ("seed 003 §2") when it names
    one, else the experiment's seed document; ``""`` when neither says.

    Example:
        >>> claim_seed({"source": "seed 003 §2, Fig. 1"}, "002")
        '003'
    """
    found = _SEED_IN_SOURCE.search(claim.get("source") or "")
    if found:
        return found.group(1)
    found = _LEADING_SEED.match(seed_document or "")
    return found.group(1) if found else (seed_document or "")


def verdict_class(name: str) -> str:
    """The CSS class of a verdict (``not tested`` → ``not-tested``).

    Example:
        >>> verdict_class("not tested")
        'not-tested'
    """
    return name.replace(" ", "-")


def is_beyond_seed(claim: Mapping[str, Any]) -> bool:
    """Whether the claim is relulab's own extension rather than a statement of the seed."""
    return bool(claim.get("beyond_seed"))


def seed_claims(claims: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The claims that test statements of the seed (not flagged ``beyond_seed``)."""
    return [claim for claim in claims if not is_beyond_seed(claim)]


def beyond_seed(claims: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The claims flagged ``beyond_seed``."""
    return [claim for claim in claims if is_beyond_seed(claim)]


def verdict_counts(claims: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """How many claims hold, fail, are inconclusive and are not tested."""
    return Counter(verdict(claim) for claim in claims)


def tally(claims: Iterable[Mapping[str, Any]]) -> str:
    """``k/n hold`` over the given claims (n: those tested), with the inconclusive and the not
    tested ones.

    Example:
        >>> tally([{"verdict": "holds"}, {"verdict": "not tested"}])
        '1/1 hold · 1 not tested'
    """
    claims = list(claims)
    counts = verdict_counts(claims)
    tested = len(claims) - counts["not tested"]
    text = f"{counts['holds']}/{tested} hold"
    if counts["inconclusive"]:
        text += f" · {counts['inconclusive']} inconclusive"
    if counts["not tested"]:
        text += f" · {counts['not tested']} not tested"
    return text


def seed_tally(claims: Iterable[Mapping[str, Any]]) -> str:
    """:func:`tally` of the seed's claims only."""
    return tally(seed_claims(claims))


def beyond_tally(claims: Iterable[Mapping[str, Any]]) -> str:
    """:func:`tally` of the claims beyond the seed, ``""`` when there are none."""
    extra = beyond_seed(claims)
    return tally(extra) if extra else ""


def count_text(claims: Iterable[Mapping[str, Any]]) -> str:
    """``5/6 hold``: the seed's tested claims that hold, then the inconclusive and the not
    tested ones, then the beyond-the-seed claims apart.

    Example:
        >>> count_text([{"passed": True}, {"passed": False}])
        '1/2 hold'
        >>> count_text([{"verdict": "holds"}, {"verdict": "not tested"},
        ...             {"verdict": "fails", "beyond_seed": True}])
        '1/1 hold · 1 not tested · beyond the seed: 0/1 hold'
    """
    claims = list(claims)
    text = tally(seed_claims(claims))
    extra = beyond_seed(claims)
    if extra:
        text += f" · beyond the seed: {tally(extra)}"
    return text


def overall(claims: Iterable[Mapping[str, Any]]) -> str:
    """The seed's claims as one verdict: ``fails`` if any fails, else ``inconclusive`` if any
    is, else ``holds`` if any holds, else ``not tested``."""
    counts = verdict_counts(seed_claims(claims))
    for name in ("fails", "inconclusive", "holds"):
        if counts[name]:
            return name
    return "not tested"


def anchor(kind: str, name: str) -> str:
    """An HTML id for a claim or a figure that survives any characters in ``name``.

    Example:
        >>> anchor("figure", "loss curves.png")
        'figure-loss-curves.png'
    """
    return f"{kind}-" + (re.sub(r"[^A-Za-z0-9_.-]+", "-", str(name)).strip("-") or "x")


def robustness_text(row: Mapping[str, Any]) -> str:
    """A claim's robustness as one phrase: its standing, the fields that flip it, and in how
    many of the readings that test it it holds (a row of ``robustness.json``'s ``claims``).

    Example:
        >>> robustness_text({"standing": "robust holds", "holds": 12, "tested": 12})
        'robust holds 12/12'
        >>> robustness_text({"standing": "depends", "holds": 11, "tested": 12,
        ...                  "flipped_by": ["crossover_tolerance"]})
        'depends: crossover_tolerance 11/12'
    """
    text = str(row.get("standing") or "not tested")
    flipped = row.get("flipped_by") or []
    if flipped:
        text += ": " + ", ".join(str(field) for field in flipped)
    tested = row.get("tested") or 0
    return f"{text} {row.get('holds') or 0}/{tested}" if tested else text


def check_tally(checks: Iterable[Any]) -> str:
    """``5/5 hold``: the checks (records or rows) that hold, of those run; ``""`` for none.

    Example:
        >>> from relulab.records import ClaimRecord
        >>> check_tally([ClaimRecord("c", "", "", 1.0, True, kind="check")])
        '1/1 hold'
    """
    verdicts = [
        check.verdict if isinstance(check, ClaimRecord) else verdict(check) for check in checks
    ]
    tested = [v for v in verdicts if v != "not tested"]
    if not verdicts:
        return ""
    text = f"{tested.count('holds')}/{len(tested)} hold"
    untested = len(verdicts) - len(tested)
    return text + (f" · {untested} not tested" if untested else "")


def overall_standing(standings: Iterable[Any]) -> str:
    """The CSS class of a list of standings as one: ``fails`` if any fails, else
    ``depends``, ``inconclusive``, ``holds`` in that order, else ``not-tested``."""
    found = {s.verdict for s in standings}
    for name in ("fails", "depends", "inconclusive", "holds"):
        if name in found:
            return STANDING_CLASS[name]
    return STANDING_CLASS["not tested"]
