r"""A claim's headline: its standing across the plausible readings, not its verdict at one.

A claim's verdict at the run's settings is one reading of the seed. Its *standing* weighs every
reading relulab has of it (:func:`standing`):

* the run itself;
* the claim without each choice made after looking at data (its ``post_hoc`` verdicts);
* where a robustness record speaks for the claim (:func:`record_row`: a record of the same
  experiment whose row for the claim carries the claim's own registration hash, i.e. the same
  criterion at the same config), every other reading of that record.

The headline is ``holds`` only when the claim holds in every reading that tests it; ``depends``
when the readings disagree (naming what flips it: the fields of the readings, or ``post hoc:
…``); otherwise the readings' common verdict. A claim the run did not test stays ``not tested``.
Without a record that speaks for it the standing says why (``robustness not measured``), and the
count line says so too (:func:`count_line`):

>>> from relulab.records.claims import ClaimRecord
>>> holds = ClaimRecord("a", "", "", 1.0, True)
>>> standing(holds).verdict, standing(holds).why_unmeasured
('holds', 'robustness not measured')
>>> count_line([standing(holds)])
'1 holds · robustness not measured'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from relulab.records.claims import ClaimRecord
from relulab.records.robustness import ClaimRobustness, RobustnessRecord, classify

__all__ = [
    "HEADLINES",
    "NOT_MEASURED",
    "Standing",
    "count_line",
    "headline_counts",
    "record_row",
    "record_standing",
    "standing",
    "standings_by_id",
]

HEADLINES = ("holds", "depends", "fails", "inconclusive", "not tested")
NOT_MEASURED = "robustness not measured"
_WORDS = {  # one and several
    "holds": ("holds", "hold"),
    "depends": ("depends", "depend"),
    "fails": ("fails", "fail"),
    "inconclusive": ("inconclusive", "inconclusive"),
    "not tested": ("not tested", "not tested"),
}


@dataclass(frozen=True)
class Standing:
    """A claim's headline over its readings.

    Args:
        verdict: ``holds``, ``depends``, ``fails``, ``inconclusive`` or ``not tested``.
        readings: the readings that test the claim (the run included).
        holds: those in which it holds.
        flipped_by: what gives another verdict than the run's: the fields of robustness
            readings, ``post hoc: …`` for a choice made after looking at data.
        why_unmeasured: why no robustness record speaks for the claim (``""`` when one does).
    """

    verdict: str
    readings: int
    holds: int
    flipped_by: tuple[str, ...] = ()
    why_unmeasured: str = ""

    @property
    def measured(self) -> bool:
        """Whether a robustness record speaks for the claim."""
        return not self.why_unmeasured

    def text(self) -> str:
        """``depends: steps 11/12``, ``holds 12/12``, ``holds`` (one reading).

        Example:
            >>> Standing("depends", 12, 11, ("steps",)).text()
            'depends: steps 11/12'
        """
        text = self.verdict
        if self.flipped_by:
            text += ": " + ", ".join(self.flipped_by)
        if self.readings > 1:
            text += f" {self.holds}/{self.readings}"
        return text


def record_row(
    claim: ClaimRecord, record: RobustnessRecord | None
) -> tuple[ClaimRobustness | None, str]:
    """The row of ``record`` that speaks for ``claim``, or ``None`` and why not: no record, a
    record without the claim, or one made under another registration of it (another criterion,
    config or preset — or a record made before registrations existed)."""
    if record is None:
        return None, NOT_MEASURED
    row = record.claim(claim.id)
    if row is None:
        return None, f"{NOT_MEASURED}: the robustness record lacks this claim"
    if not claim.registration or row.registration != claim.registration:
        return None, f"{NOT_MEASURED}: the claim's registration differs from the record's"
    return row, ""


def standing(claim: ClaimRecord, record: RobustnessRecord | None = None) -> Standing:
    """The claim's headline standing (module docstring) over the run, its post-hoc-free
    verdicts and, where it speaks for the claim, ``record``'s other readings."""
    row, why = record_row(claim, record)
    post_hoc = {p.what: p.verdict for p in claim.post_hoc}
    others = _other_readings(row, record) if row is not None and record is not None else []
    return _weighed(claim.verdict, post_hoc, others, why)


def record_standing(row: ClaimRobustness, record: RobustnessRecord) -> Standing:
    """A claim's standing from a robustness record alone: its verdict at the preset reading,
    its post-hoc-free verdicts there, and the record's other readings (what the README's
    tables count)."""
    return _weighed(row.preset, row.post_hoc, _other_readings(row, record), "")


def _other_readings(
    row: ClaimRobustness, record: RobustnessRecord
) -> list[tuple[str, tuple[str, ...]]]:
    fields = {r.name: r.fields for r in record.readings}
    return [
        (verdict, fields.get(name, (name,)))
        for name, verdict in row.verdicts.items()
        if name != "preset"
    ]


def _weighed(
    verdict: str,
    post_hoc: Mapping[str, str],
    others: list[tuple[str, tuple[str, ...]]],
    why_unmeasured: str,
) -> Standing:
    readings: list[tuple[str, tuple[str, ...]]] = [(verdict, ())]
    readings += [(v, (f"post hoc: {what}",)) for what, v in post_hoc.items()]
    tested = [(v, f) for v, f in readings + others if v not in ("not tested", "missing")]
    if verdict in ("not tested", "missing") or not tested:
        return Standing("not tested", len(tested), 0, why_unmeasured=why_unmeasured)
    headline = classify([v for v, _ in tested]).removeprefix("robust ")
    flipped = dict.fromkeys(f for v, fs in tested if v != verdict for f in fs)
    holds = sum(v == "holds" for v, _ in tested)
    return Standing(headline, len(tested), holds, tuple(flipped), why_unmeasured)


def headline_counts(standings: Iterable[Standing]) -> Counter[str]:
    """Claims per headline verdict."""
    return Counter(s.verdict for s in standings)


def count_line(standings: Iterable[Standing]) -> str:
    """``9 hold · 3 depend · 1 fails · 2 inconclusive``: claims per headline (``hold`` always,
    the others when there are any), then whether robustness was measured — for none of the
    claims (``robustness not measured``) or only some.

    Example:
        >>> count_line([Standing("holds", 3, 3), Standing("depends", 3, 2, ("tol",))])
        '1 holds · 1 depends'
    """
    standings = list(standings)
    counts = headline_counts(standings)
    parts = [f"{counts['holds']} {_word('holds', counts['holds'])}"]
    parts += [f"{counts[h]} {_word(h, counts[h])}" for h in HEADLINES[1:] if counts[h]]
    tested = [s for s in standings if s.verdict != "not tested"]
    unmeasured = [s for s in tested if not s.measured]
    if tested and len(unmeasured) == len(tested):
        parts.append(NOT_MEASURED)
    elif unmeasured:
        parts.append(f"{NOT_MEASURED} for {len(unmeasured)}")
    return " · ".join(parts)


def _word(headline: str, count: int) -> str:
    one, several = _WORDS[headline]
    return one if count == 1 else several


def standings_by_id(
    claims: Iterable[ClaimRecord], record: RobustnessRecord | None
) -> Mapping[str, Standing]:
    """Each claim's standing by id."""
    return {claim.id: standing(claim, record) for claim in claims}
