r"""Criteria: the test a claim applies to its measurement, as small objects.

A criterion says in words what the seed leads us to expect (:meth:`text`) and turns a
measurement into a verdict (:meth:`judge`). Keeping the two together is what lets every claim
carry a **positive control** (data on which the seed's statement is true must hold) and a
**negative control** (a counter-example must fail): both are calls of ``judge``.

A measurement is a number or an :class:`~relulab.analysis.Estimate` (a value with a confidence
interval). For a number the verdict is ``holds`` or ``fails``; for an estimate it follows the
interval: ``holds`` when the whole interval satisfies the criterion, ``fails`` when none of it
does, ``inconclusive`` when it straddles the boundary. A NaN measurement fails: the behaviour
the criterion looks for was not observed.

* :class:`Below`, :class:`Above`, :class:`Inside`, :class:`Within` — one quantity against a
  bound, a band or a target;
* :class:`Ordered` — named values in increasing (or decreasing) order;
* :class:`Correlated` — the sign of a correlation (its Fisher-z interval);
* :class:`AllOf` — several conditions of one statement, each on its own measurement;
* :class:`Every` — one condition at every point of a sweep, on intervals that hold together
  (:func:`relulab.analysis.simultaneous_level`): never the raw worst of K;
* :class:`NoneBeyond` — a bound no point of a sweep significantly violates (one-sided t-tests,
  Holm over the points), for a bound the seed says is reached (tight) somewhere;
* :class:`Equivalent` — one condition with a margin at every point of a sweep, by equivalence
  tests (one-sided t-tests against each edge): ``holds`` when every point is significantly
  inside, ``fails`` when one is significantly outside (Holm), ``inconclusive`` otherwise.

Example:
    >>> Below("final loss", 1e-3).judge(3e-6)
    'holds'
    >>> Below("final loss", 1e-3).text()
    'final loss < 0.001'
"""

from relulab.experiments.criteria.families import Equivalent, Every, NoneBeyond
from relulab.experiments.criteria.scalar import (
    Above,
    AllOf,
    Below,
    Correlated,
    Criterion,
    Inside,
    Measured,
    Ordered,
    Verdict,
    Within,
    combine,
    fmt,
)

__all__ = [
    "Above",
    "AllOf",
    "Below",
    "Correlated",
    "Criterion",
    "Equivalent",
    "Every",
    "Inside",
    "Measured",
    "NoneBeyond",
    "Ordered",
    "Verdict",
    "Within",
    "combine",
    "fmt",
]
