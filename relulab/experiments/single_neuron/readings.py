"""Readings of the stored single-neuron runs, shared by the claims, the metrics and the figures.

Every reading takes a unit as its typed view (:class:`.units.Neurons`).

* :data:`DIVERGENCE` / :func:`diverged` / :func:`diverged_counts` — the one divergence policy:
  a network frozen by the engine or with a non-finite recorded loss has diverged; it ranks last
  (its loss level is +inf), so it neither converges, nor sits on a plateau, nor comes back;
* :func:`loss_levels` / :func:`level` — the median of the last 10 % of a loss curve: where a run
  ends, the reading of "stuck around"; :func:`lowest_levels` / :func:`lowest_level` — the lowest
  median over any stretch of the same length: the reading of "the loss can go to zero" (it
  reached zero and stayed there for a stretch, whatever happens later);
* :func:`outcomes` — converged, or the neuron's final state;
* :func:`kinks` — the kink :math:`x_t = -b_1/w_1` over training;
* :func:`bracket` — a fine sweep's transition region as an interval, and :func:`margins` —
  where the seed's two points lie relative to it;
* :func:`left_and_returned` — did a run leave the balanced state, and was it balanced again
  later; :func:`returned_for_good` — did it come back to stay (balanced at the end, its loss
  there off the plateau it had been stuck on); :func:`back_for_good` — the same for a run that
  started outside the balanced state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relulab.analysis import (
    DivergencePolicy,
    Estimate,
    boundary_bracket,
    divergence_counts,
    divergence_text,
    plateau_level,
    ranked_last,
    where,
)
from relulab.engine import STATE_CODES
from relulab.experiments.single_neuron.config import DEAD_PLATEAU, HYPERACTIVE_PLATEAU, OUTCOMES
from relulab.experiments.single_neuron.units import Neurons

__all__ = [
    "DIVERGENCE",
    "STATE_NAMES",
    "TAIL",
    "back_for_good",
    "bracket",
    "diverged",
    "diverged_counts",
    "diverged_detail",
    "fmt",
    "halves_divergence",
    "kinks",
    "left_and_returned",
    "level",
    "loss_levels",
    "lowest_level",
    "lowest_levels",
    "margins",
    "outcomes",
    "returned_for_good",
]

STATE_NAMES = {code: name for name, code in STATE_CODES.items()}
TAIL = 0.1  # the loss level's window: the last 10 % of the record (plateau_level's default)

#: The study's divergence policy: frozen by the engine or a non-finite recorded loss. No cap:
#: Adam moves each parameter by at most ≈ lr a step (β1 < √β2), so within this study's
#: learning rates (≤ 1) and horizons (≤ 50 000 steps) no parameter can exceed ≈ 5·10⁴ and no
#: finite loss can be a divergence.
DIVERGENCE = DivergencePolicy(quantity="training loss")


def fmt(value: float) -> str:
    """A number as the single-neuron details print it: 4 significant digits."""
    return f"{value:.4g}"


def diverged(unit: Neurons) -> np.ndarray:
    """Per network, whether it diverged under :data:`DIVERGENCE`."""
    return DIVERGENCE.diverged(unit.diverged, unit.loss)


def diverged_counts(
    units: Mapping[str, Neurons], indices: Mapping[str, list[int]] | None = None
) -> dict[str, tuple[int, int]]:
    """Per unit read (or per named group of a unit's networks): (diverged, networks).

    Args:
        units: the units a claim read, by name.
        indices: per name, the networks of that unit the claim read (default: all).
    """
    counts = {}
    for name, unit in units.items():
        rows = list(range(unit.n_networks)) if indices is None else indices[name]
        counts.update(divergence_counts(diverged(unit), {str(name): rows}))
    return counts


def halves_divergence(unit: Neurons, name: str) -> dict[str, tuple[int, int]]:
    """Divergence counts of a fine sweep's standard and reparameterised halves."""
    halves = {
        f"{name} {p}": [i for i, c in enumerate(unit.conditions) if c["parameterisation"] == p]
        for p in ("standard", "reparam")
    }
    return diverged_counts(dict.fromkeys(halves, unit), halves)


def diverged_detail(counts: Mapping[str, tuple[int, int]]) -> str:
    """The divergence counts and the policy, for a claim's detail."""
    return f"{divergence_text(counts)} ({DIVERGENCE.describe()}; a diverged network ranks last)"


def loss_levels(unit: Neurons) -> np.ndarray:
    """Per network, the loss level: the median over the last 10 % of the record
    (:func:`relulab.analysis.plateau_level`), +inf for a network that diverged (it ranks last:
    it neither converges nor sits on a plateau). Converged and stuck runs are read the same
    way."""
    levels = np.array([plateau_level(curve) for curve in unit.loss])
    return ranked_last(levels, diverged(unit))


def level(unit: Neurons, i: int) -> float:
    """The loss level of network ``i`` (+inf if it diverged)."""
    flags = diverged(unit)[i : i + 1]
    return float(ranked_last(np.array([plateau_level(unit.loss[i])]), flags)[0])


def lowest_level(curve: np.ndarray, tail: float = TAIL) -> float:
    """The lowest loss level a run reached: the lowest median over any stretch of consecutive
    records as long as the loss level's window (the last ``tail`` of the record). Where
    :func:`loss_levels` reads where a run ends, this reads whether its loss went to zero and
    stayed there for a stretch — a single dip (one record, an Adam spike down) is not enough,
    and a run that is thrown off a converged state later still reached it.

    Example:
        >>> curve = np.array([1.0, 0.5, 1e-9, 1e-9, 1e-9, 1e-9, 0.1, 0.1, 0.1, 0.1])
        >>> lowest_level(curve, tail=0.4)  # reached 1e-9 and stayed, then thrown off
        1e-09
        >>> lowest_level(np.array([1.0, 1e-9, 1.0, 1.0, 1.0, 1.0]), tail=0.5)  # one dip
        1.0
    """
    curve = np.asarray(curve, dtype=np.float64)
    n_tail = max(1, int(round(tail * len(curve))))
    return float(np.median(sliding_window_view(curve, n_tail), axis=1).min())


_LOWEST: OrderedDict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()


def lowest_levels(unit: Neurons) -> np.ndarray:
    """Per network, :func:`lowest_level` (+inf for a network that diverged: it ranks last and
    never reached zero). The sliding medians cost ≈ 1 s for the paper preset's fine lr sweep and
    several claims read them, so the last few units' levels are kept, each checked against the
    loss array it came from (the same object, the same bytes)."""
    loss = unit.loss
    key = (id(loss), hash(np.ascontiguousarray(loss).tobytes()))
    hit = _LOWEST.get(key)
    if hit is None or hit[0] is not loss:
        hit = (loss, np.array([lowest_level(curve) for curve in loss]))
        _LOWEST[key] = hit
        while len(_LOWEST) > 8:
            _LOWEST.popitem(last=False)
    return ranked_last(hit[1], diverged(unit))


def outcomes(unit: Neurons, converge_tol: float, reached: bool = False) -> np.ndarray:
    """Per network: converged (loss level < tol), else its final state (dead/balanced/hyper);
    a diverged network never counts as converged. ``reached``: converged if its loss *reached*
    zero (:func:`lowest_levels` < tol), even if the run was thrown off later.

    Args:
        unit: the unit.
        converge_tol: the loss level below which a run has converged.
        reached: read "converged" from the lowest level instead of the level at the end.
    """
    state = unit.end.state.astype(int)
    levels = lowest_levels(unit) if reached else loss_levels(unit)
    return np.where(levels < converge_tol, OUTCOMES["converged"], state)


def kinks(unit: Neurons) -> np.ndarray:
    """Kink trajectories ``(S, T)``: −b1/w1 (standard) or −b' (reparam)."""
    reparam = np.array([c["parameterisation"] == "reparam" for c in unit.conditions])[:, None]
    return np.where(reparam, -unit.b1, -unit.b1 / unit.w1)


def bracket(
    unit: Neurons,
    key: str,
    descending: bool,
    parameterisation: str,
    converge_tol: float,
    reached: bool = False,
) -> Estimate:
    """A fine sweep's transition region (converged ↔ not) as an interval: the grid points from
    the first to the last change of outcome (:func:`relulab.analysis.boundary_bracket`), the
    sweep read from its converging side; the value is the midpoint of the first change.

    Args:
        unit: a fine sweep (``b2-boundary`` or ``lr-boundary``).
        key: the swept setting, ``"b2"`` or ``"lr"``.
        descending: read the sweep from large to small values (b2 converges at the top).
        parameterisation: ``"standard"`` or ``"reparam"``.
        converge_tol: the loss level below which a run has converged.
        reached: a run has converged if its loss reached zero (:func:`outcomes`), not only if
            it ends there.

    Returns:
        An :class:`~relulab.analysis.Estimate` with level 1 (a grid bracket, not a confidence
        interval) and ``n`` the number of grid points; NaN if the outcome never changes.
    """
    idx = where(unit.conditions, parameterisation=parameterisation)
    swept = np.array([unit.conditions[i][key] for i in idx])
    converged = outcomes(unit, converge_tol, reached)[idx] == OUTCOMES["converged"]
    order = np.argsort(-swept if descending else swept)
    midpoint, low, high, _ = boundary_bracket(swept[order], converged[order])
    return Estimate(midpoint, low, high, len(idx), 1.0, "grid bracket of the transition region")


def margins(point_in: float, point_out: float, region: Estimate) -> str:
    """Where the seed's two points lie relative to a located transition region."""

    def where_is(point: float) -> str:
        if point in (region.low, region.high):
            return f"{point:g} is its end point"
        if region.low <= point <= region.high:
            return f"{point:g} lies inside it"
        gap = region.low - point if point < region.low else point - region.high
        return f"{point:g} lies {gap:.3g} {'below' if point < region.low else 'above'} it"

    return (
        f"transition region [{fmt(region.low)}, {fmt(region.high)}] "
        f"(first change at {fmt(region.value)}); {where_is(point_in)}, {where_is(point_out)}"
    )


def left_and_returned(states: np.ndarray) -> tuple[bool, bool]:
    """Did a run leave the balanced state (balanced at a record, dead or hyperactive at a later
    one), and was it balanced again at any record after that?

    Example:
        >>> left_and_returned(np.array([1, 2, 2, 1]))
        (True, True)
        >>> left_and_returned(np.array([2, 2, 1]))
        (False, False)
    """
    balanced = states == STATE_CODES["balanced"]
    first = np.flatnonzero(balanced)
    if not len(first):
        return False, False
    left = np.flatnonzero(~balanced[first[0] :])
    if not len(left):
        return False, False
    return True, bool(balanced[first[0] + left[0] :].any())


def returned_for_good(states: np.ndarray, final_loss: float, plateau_rtol: float) -> bool:
    """Did a run that left the balanced state come back to it for good: balanced at the last
    record, with its loss there below the "stuck around" band of the plateau of the state it was
    last away in (``(1 − plateau_rtol)`` × 1/48 for hyperactive, × 5/48 for dead)? A kink on
    the domain's edge that crosses a grid point for a record or two is balanced there but still
    on the plateau: not a return. The loss at the last record, not the level over the last
    10 %: a run that escapes the plateau near the end of training is back.

    Example:
        >>> returned_for_good(np.array([1, 2, 2, 1, 1]), 1e-9, 0.05)
        True
        >>> returned_for_good(np.array([1, 2, 2, 1, 1]), 0.0213, 0.05)  # still on 1/48
        False
        >>> returned_for_good(np.array([1, 2, 1, 2]), 1e-9, 0.05)  # not balanced at the end
        False
    """
    left, returned = left_and_returned(states)
    return left and returned and back_for_good(states, final_loss, plateau_rtol)


def back_for_good(states: np.ndarray, final_loss: float, plateau_rtol: float) -> bool:
    """Is a run that was outside the balanced state at some record — after being balanced, or
    from the start — back for good: balanced at the last record, with its loss there below the
    "stuck around" band of the plateau of the state it was last away in? A neuron that starts
    hyperactive and reaches the balanced state is a return too (issue 43).

    Example:
        >>> back_for_good(np.array([2, 2, 1, 1]), 1e-9, 0.05)  # started hyperactive, converged
        True
        >>> back_for_good(np.array([1, 1, 1]), 1e-9, 0.05)  # never away
        False
    """
    balanced = STATE_CODES["balanced"]
    away = np.flatnonzero(states != balanced)
    if not len(away) or states[-1] != balanced:
        return False
    plateau = DEAD_PLATEAU if states[away[-1]] == STATE_CODES["dead"] else HYPERACTIVE_PLATEAU
    return bool(final_loss < (1.0 - plateau_rtol) * plateau)
