"""What an experiment package declares: config, presets, work units, claims and figures.

An experiment is data plus three functions, one package per study (``config.py``,
``units.py``, ``claims.py``, ``figures.py`` and an ``__init__.py`` whose docstring is the
report's "About"):

* ``plan(config) -> list[Unit]`` — the batched computations to run (each one resumable);
* ``analyse(results, config) -> Analysis`` — claims (seed statement, expected, measured,
  verdict) and named metrics, computed from the stored results only;
* ``figures(results, config, out_dir) -> list[Figure]`` — PNG files written into the run dir,
  each finished by :func:`relulab.report.plotting.save`;
* ``claims`` — the study's :class:`~relulab.experiments.claims.ClaimSpec` tuple (what
  ``analyse`` evaluates), so tests can reach every claim's criterion;
* ``unit_keys(config) -> list[str]`` — every unit name a reader of the study uses (its
  ``units.py`` declares them once), so a test can check that ``plan`` produces each of them;
* ``unit_views(config) -> {unit name: UnitView subclass}`` — the schema of every unit ``plan``
  produces (:class:`relulab.records.UnitView`): readers reach a unit's curves, final values and
  arrays by declared attribute, and a stored unit is checked against its view before anything
  is computed from it (a unit lacking a declared field is refused, naming it).

Optionally ``stand_in(config) -> str``: a non-empty description of the data a config measures
on when they are not the seed's (the bundled stand-in images, another data set): every claim of
such a run is labelled *stand-in (mechanism only)* and counted apart from verdicts on the seed's
data.

Optionally ``estimate_bytes(config) -> int``: the run's peak memory in bytes (the dominant
tensors, to within a small factor); the runner refuses a config whose estimate exceeds the
memory available before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic

from relulab.config import C
from relulab.experiments.claims import Claim, ClaimSpec, Results
from relulab.experiments.context import RunContext
from relulab.records.units import UnitResult, UnitView
from relulab.report.plotting import Figure

__all__ = ["Analysis", "Claim", "Experiment", "Figure", "Unit"]


@dataclass
class Analysis:
    claims: list[Claim]
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Unit:
    """A resumable piece of work: one batched computation whose result is stored whole."""

    name: str
    run: Callable[[RunContext], UnitResult]


@dataclass(frozen=True)
class Experiment(Generic[C]):
    """A study, typed by its config dataclass ``C``: every function it declares takes a ``C``.

    A collection of studies (:data:`relulab.experiments.REGISTRY`) holds a different ``C`` per
    entry, which Python's types cannot say: there it is ``Experiment`` unparameterised.
    """

    name: str
    title: str
    seed: str
    summary: str
    config: type[C]
    presets: Mapping[str, C]
    plan: Callable[[C], list[Unit]]
    analyse: Callable[[Results, C], Analysis]
    figures: Callable[[Results, C, Path], list[Figure]]
    estimate_bytes: Callable[[C], int] | None = None
    claims: tuple[ClaimSpec[C], ...] = ()
    unit_keys: Callable[[C], list[str]] | None = None
    unit_views: Callable[[C], Mapping[str, type[UnitView]]] | None = None
    stand_in: Callable[[C], str] | None = None
