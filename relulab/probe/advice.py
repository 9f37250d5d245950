r"""Advice: what the seeds suggest for what a probe measured, each remedy with its source and
the numbers that triggered it.

:func:`advise` (:meth:`relulab.probe.ProbeResult.advice`) reads a :class:`ProbeResult` and
returns one :class:`Advice` per finding and remedy; a healthy network gets none. Four findings,
each on the statistics of :mod:`relulab.nn.statistics` (``docs/probe.md`` defines them):

* **high Δ** (``high_delta``) — ``delta_relative`` :math:`= \Delta/\sqrt{\langle
  \mathrm{Var}_t h_i\rangle_i}` at or above its threshold on any call: the unit means spread as
  much as the samples vary, every sample's representation is mostly one shared offset (seed
  ``000_…``, "Representation collapse": ReLU's positive mean). Remedies: ReLU−b with the
  analytic shift :math:`b^* = 1/\sqrt{6\pi}` and per-unit shifts measured on the data
  (:func:`relulab.nn.replace_activations`, :func:`relulab.init.calibrate_relu_shift_`; seed
  ``000_…``), for rectifier calls; centring every feature with :func:`relulab.init.scale_bias_`
  (seed ``002_…`` §5.1).
* **dead units** (``dead_units``) — ``dead_fraction`` at or above its threshold on a rectifier
  call (ReLU, ReLU−b, ReLU6: no gradient ever). Remedies: RAI / RAAI
  (:func:`relulab.init.rai_`, :func:`relulab.init.raai_`; seed ``003_…`` §3), or a small
  positive bias (seed ``004_…`` §5.3).
* **always-on units** (``always_on_units``) — ``always_on_fraction`` at or above its threshold
  on a rectifier call: those units are linear on the data. Remedy:
  :func:`relulab.init.scale_bias_` (seed ``002_…`` §5.1; seed ``004_…`` §5).
* **sample-variance decay** (``sample_variance_decay``) — the share of the pre-activation's
  second moment that is sample variance, ``sample_variance_fraction`` :math:`v^2/(m^2+v^2)`
  (:math:`r = \sqrt{m^2/v^2}` rising), falls below its threshold at a later call and below the
  share of the first call of the same kind of activation (seed ``002_…`` §3). Remedies:
  :func:`relulab.init.scale_bias_` (§5.1), BatchNorm before each activation (§4).

The thresholds (:class:`AdviceThresholds`) are those of :class:`relulab.probe.Thresholds`, the
monitor's, where it has one (read from it, so there is one place to change them); the
sample-variance threshold is this module's. Every remedy is checked by an experiment in
``tests/test_advice.py``: a deliberately broken network, the remedy applied through relulab's
API, the measurement re-probed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from relulab.probe.core import LayerProbe, ProbeResult

__all__ = [
    "API",
    "STATISTIC_FINDINGS",
    "Thresholds",
    "one_line",
    "remedies_for",
    "ADVICE_COLUMNS",
    "FINDINGS",
    "REMEDIES",
    "SNIPPETS",
    "Advice",
    "AdviceList",
    "AdviceThresholds",
    "Remedy",
    "advise",
]

#: What each finding means, one sentence each.
FINDINGS: dict[str, str] = {
    "high_delta": "the unit means spread as much as the samples vary within a unit: every "
    "sample's representation is mostly one shared offset (representation collapse)",
    "dead_units": "units whose pre-activation is ≤ 0 on every sample: they never fire and get "
    "no gradient",
    "always_on_units": "units whose pre-activation is > 0 on every sample: they are linear on "
    "the data",
    "sample_variance_decay": "the sample variance's share of the pre-activation's second moment "
    "falls with depth: every sample maps to nearly the same pre-activation, units are nearly "
    "always on or off",
}

#: Code for each remedy, by the name :attr:`Advice.how` gives (``model`` and ``data`` are yours).
SNIPPETS: dict[str, str] = {
    "relu_minus_b": (
        "from relulab.init import analytic_relu_shift, calibrate_relu_shift_\n"
        "from relulab.nn import ReLUMinusB, replace_activations\n\n"
        "b_star = analytic_relu_shift(scheme='torch_default')  # 1/sqrt(6 pi) = 0.23\n"
        "replace_activations(model, ReLUMinusB(b_star))  # every nn.ReLU, its own copy\n"
        "calibrate_relu_shift_(model, data)  # per unit b_i = <ReLU(z_i)> on the data"
    ),
    "scale_bias": (
        "from relulab.init import scale_bias_\n\n"
        "scale_bias_(model, data)  # b_i = -mean_i, then the layer's scale (bias_free='add' "
        "for bias-free layers)"
    ),
    "rai": (
        "import torch\n"
        "from relulab import init\n\n"
        "init.init_model_(model, 'raai', torch.Generator().manual_seed(0))  # or 'rai'\n"
        "# bias-free layers (ResNet, Llama, T5): bias_free='add' (a zero bias, then drawn)\n"
        "# or bias_free='scale' (their weights drawn alone)\n"
        "# one layer: init.raai_(layer.weight, layer.bias)  (or init.rai_)"
    ),
    "positive_bias": (
        "from torch import nn\n"
        "from relulab import init\n\n"
        "for layer in model.modules():\n"
        "    if isinstance(layer, nn.Linear) and layer.bias is not None:\n"
        "        init.constant_(layer.bias, 0.1)  # a small positive bias"
    ),
    "batch_norm": (
        "from torch import nn\n\n"
        "# per layer, BatchNorm between the Linear (or convolution) and the activation\n"
        "nn.Sequential(nn.Linear(n_in, n_out), nn.BatchNorm1d(n_out), nn.ReLU())"
    ),
}


@dataclass(frozen=True)
class Remedy:
    """One remedy for a finding.

    Attributes:
        text: what to do.
        how: the name of its code in :data:`SNIPPETS`.
        source: where it comes from (seed and section).
        families: the activation families it applies to (ReLU−b: rectifiers only).
    """

    text: str
    how: str
    source: str
    families: tuple[str, ...] = ("rectifier", "leaky", "smooth", "other")


_CENTRE = Remedy(
    "centre every unit's pre-activation on the data: scale+bias sets each bias to minus its "
    "feature's sample mean, then scales the layer to unit sample variance",
    "scale_bias",
    "seed 002 §5.1 (scale+bias: b_i = -μ_i per feature, eq. 14, then eq. 13's scale)",
)

#: The remedies of each finding, in the order given.
REMEDIES: dict[str, tuple[Remedy, ...]] = {
    "high_delta": (
        Remedy(
            "replace each ReLU by ReLU − b (relulab.nn.ReLUMinusB) and centre it: the analytic "
            "shift b* = 1/√(6π) ≈ 0.23 holds where each pre-activation has variance 1/3 "
            "(PyTorch's default init on unit-second-moment inputs); calibrate_relu_shift_ "
            "measures the shift per unit on the data",
            "relu_minus_b",
            "seed 000 ('Adding bias after ReLU': Δ > 0 comes from ReLU's positive mean; "
            "ReLU − b with b = 0.2–0.3 gave the lowest Δ and loss); b* = s/√(2π), the "
            "half-normal mean (relulab.init.analytic_relu_shift)",
            families=("rectifier",),
        ),
        _CENTRE,
    ),
    "dead_units": (
        Remedy(
            "initialise with RAI or RAAI: one weight (or the bias) into each unit drawn from "
            "Beta(2, 1) > 0, so every unit fires on some inputs (bias-free layers: "
            "bias_free='add' or 'scale')",
            "rai",
            "seed 003 §3 and Table 1 (RAI, Lu et al. 2020: a lower dead-node probability "
            "than the 1/2 of symmetric inits; RAAI adds anti-correlated rows)",
        ),
        Remedy(
            "give the layers a small positive bias, which moves every unit's kink so it fires "
            "on the data — and pushes units towards the linear regime",
            "positive_bias",
            "seed 004 §5.3 (a growing hidden bias moves the kinks: most units become active "
            "on all inputs, learning turns linear early)",
        ),
    ),
    "always_on_units": (
        Remedy(
            _CENTRE.text + "; or smaller biases",
            "scale_bias",
            "seed 002 §5.1 and §6 (centred pre-activations use the nonlinearity at every "
            "layer); seed 004 §5 (biases drive units always on, the network towards a "
            "linear one)",
        ),
    ),
    "sample_variance_decay": (
        Remedy(
            _CENTRE.text,
            "scale_bias",
            "seed 002 §3 (the sample variance decays with depth in Kaiming-initialised ReLU "
            "nets, eq. 9's ratio r grows) and §5.1 (scale+bias keeps it: faster training)",
        ),
        Remedy(
            "put BatchNorm before each activation: every pre-activation then has zero sample "
            "mean and unit sample variance (gradients grow with depth instead, ×1.21² per "
            "layer)",
            "batch_norm",
            "seed 002 §4 (BatchNorm eliminates sample-variance decay; Fig. 3)",
        ),
    ),
}


@dataclass(frozen=True)
class Thresholds:
    """When :class:`Monitor` warns: a layer's statistic at or above the value (``None``: never).

    The defaults are choices: ``dead_fraction`` 0.10 is keras-contrib's ``DeadReluDetector``
    (it warns when at least 10 % of a layer's units are dead); ``always_on_fraction`` 0.5 (half
    the layer linear on the batch) and ``delta_relative`` 1.0 (unit means spread as much as the
    samples vary within a unit) are relulab's. The dead and always-on thresholds apply to
    rectifiers only (ReLU, ReLU−b, ReLU6: a leaky unit that never fires still learns).

    Example:
        >>> Thresholds().crossed({"dead_fraction": 0.25, "delta_relative": 0.1})
        [('dead_fraction', 0.25, 0.1)]
        >>> Thresholds(dead_fraction=None).crossed({"dead_fraction": 0.25})
        []
    """

    dead_fraction: float | None = 0.10
    always_on_fraction: float | None = 0.5
    delta_relative: float | None = 1.0

    def crossed(self, statistics: Mapping[str, float]) -> list[tuple[str, float, float]]:
        """The ``(statistic, value, threshold)`` of each threshold ``statistics`` reaches.

        Args:
            statistics: one layer's statistics, by name.

        Returns:
            A list, in the order of the fields.
        """
        hits = []
        for item in fields(self):
            threshold = getattr(self, item.name)
            value = statistics.get(item.name)
            if threshold is not None and value is not None and value >= threshold:
                hits.append((item.name, value, threshold))
        return hits


#: The monitor's statistics and the finding each crossing reports.
STATISTIC_FINDINGS: dict[str, str] = {
    "dead_fraction": "dead_units",
    "always_on_fraction": "always_on_units",
    "delta_relative": "high_delta",
}

#: The relulab (or torch) API each remedy's code uses, for one-line messages.
API: dict[str, str] = {
    "relu_minus_b": "relulab.nn.replace_activations + relulab.nn.ReLUMinusB with "
    "relulab.init.analytic_relu_shift, then relulab.init.calibrate_relu_shift_",
    "scale_bias": "relulab.init.scale_bias_",
    "rai": "relulab.init.rai_ / relulab.init.raai_",
    "positive_bias": "nn.init.constant_(layer.bias, 0.1)",
    "batch_norm": "nn.BatchNorm1d / nn.BatchNorm2d before the activation",
}


def remedies_for(finding: str, families: Iterable[str] | None = None) -> tuple[Remedy, ...]:
    """The remedies of ``finding`` that fit activations of ``families``: one of them is in
    the remedy's :attr:`Remedy.families` (ReLU − b only where a rectifier was flagged). The one
    filter of :func:`advise` and of the monitor's warnings.

    Args:
        finding: a key of :data:`REMEDIES`.
        families: the families of the flagged calls (``"rectifier"``, ``"leaky"``,
            ``"smooth"``, ``"other"``); ``None`` for every remedy.

    Returns:
        The fitting remedies, in the order of :data:`REMEDIES` (empty when none fits).

    Example:
        >>> [r.how for r in remedies_for("high_delta", {"smooth"})]  # a Tanh: no ReLU − b
        ['scale_bias']
        >>> [r.how for r in remedies_for("high_delta")]
        ['relu_minus_b', 'scale_bias']
    """
    remedies = REMEDIES[finding]
    if families is None:
        return remedies
    wanted = set(families)
    return tuple(remedy for remedy in remedies if wanted & set(remedy.families))


def one_line(finding: str, families: Iterable[str] | None = None) -> str:
    """A finding's remedies in one line, each with its API and source (the monitor's warnings),
    those that fit ``families`` only (:func:`remedies_for`).

    Args:
        finding: a key of :data:`REMEDIES`.
        families: the families of the flagged calls; ``None`` for every remedy.

    Returns:
        ``"remedy (api) [source]; or …"``.

    Example:
        >>> "relulab.init.scale_bias_" in one_line("always_on_units")
        True
        >>> "ReLUMinusB" in one_line("high_delta", {"smooth"})
        False
    """
    return "; or ".join(
        f"{r.text} ({API[r.how]}) [{r.source}]" for r in remedies_for(finding, families)
    )


_MONITOR = Thresholds()


@dataclass(frozen=True)
class AdviceThresholds:
    """When :func:`advise` reports a finding (``None``: never). Each value is a choice:

    * ``dead_fraction`` ≥ 0.10, ``always_on_fraction`` ≥ 0.5 and ``delta_relative`` ≥ 1.0 are
      :class:`relulab.probe.Thresholds`'s defaults, read from it (``docs/monitor.md``:
      keras-contrib's ``DeadReluDetector`` 10 %; half the layer linear; the unit means
      spreading as much as the samples vary). The dead and always-on thresholds apply to
      rectifiers only (a leaky or smooth unit that never fires still gets gradient).
    * ``sample_variance_fraction`` < 0.5 is relulab's: the squared sample mean exceeds the
      sample variance (r > 1, seed 002 eq. 9) — and the share must have fallen from that of the
      first call of the same kind, so that a finding is a decay with depth, not the inputs' own
      mean.

    Example:
        >>> AdviceThresholds().dead_fraction, AdviceThresholds().sample_variance_fraction
        (0.1, 0.5)
    """

    dead_fraction: float | None = _MONITOR.dead_fraction
    always_on_fraction: float | None = _MONITOR.always_on_fraction
    delta_relative: float | None = _MONITOR.delta_relative
    sample_variance_fraction: float | None = 0.5


@dataclass(frozen=True)
class Advice:
    """One remedy for one finding, with the numbers that triggered it.

    Attributes:
        layers: the activation calls where it was found, in forward order.
        finding: a key of :data:`FINDINGS` (``"high_delta"``, ``"dead_units"``,
            ``"always_on_units"``, ``"sample_variance_decay"``).
        statistic: the probe's metric that crossed the threshold.
        measured: per call, that metric's value (for a decay, the first call of each kind's
            too: the references).
        threshold: the threshold crossed (:class:`AdviceThresholds`).
        remedy: what to do.
        how: the name of its code in :data:`SNIPPETS` (:attr:`code`).
        source: where the remedy comes from.

    Example:
        >>> advice = Advice(("1#0",), "dead_units", "dead_fraction", {"1#0": 0.75}, 0.1,
        ...                 "try RAI", "rai", "seed 003 §3")
        >>> advice.measured_text()
        'dead_fraction ≥ 0.1 at 1 call: 0.75 (1#0)'
    """

    layers: tuple[str, ...]
    finding: str
    statistic: str
    measured: dict[str, float] = field(hash=False)
    threshold: float
    remedy: str
    how: str
    source: str

    @property
    def code(self) -> str:
        """The remedy's code (:data:`SNIPPETS`)."""
        return SNIPPETS[self.how]

    @property
    def description(self) -> str:
        """What the finding means (:data:`FINDINGS`)."""
        return FINDINGS[self.finding]

    def measured_text(self, shown: int = 4) -> str:
        """The triggering numbers in a line: the threshold, the calls, the worst values first
        (highest; lowest for the sample-variance share) with their calls."""
        values = {name: self.measured[name] for name in self.layers}
        order = sorted(values, key=values.__getitem__, reverse=self.statistic != _SHARE)
        listed = ", ".join(f"{values[name]:.3g} ({name})" for name in order[:shown])
        more = f", … {len(order) - shown} more" if len(order) > shown else ""
        calls = f"{len(order)} call{'s' if len(order) != 1 else ''}"
        if self.statistic == _SHARE:
            references = [name for name in self.measured if name not in values]
            firsts = ", ".join(f"{self.measured[name]:.3g} ({name})" for name in references)
            kinds = "its kind" if len(references) == 1 else "each kind"
            return (
                f"{_SHARE} {firsts} at the first call of {kinds}, below {self.threshold:g} "
                f"at {calls}: {listed}{more}"
            )
        return f"{self.statistic} ≥ {self.threshold:g} at {calls}: {listed}{more}"

    def message(self) -> str:
        """The advice in one line: finding, numbers, remedy, source.

        Example:
            >>> Advice(("1#0",), "dead_units", "dead_fraction", {"1#0": 0.75}, 0.1,
            ...        "try RAI", "rai", "seed 003").message()
            'dead units — dead_fraction ≥ 0.1 at 1 call: 0.75 (1#0). Try: try RAI. Source: seed 003'
        """
        title = self.finding.replace("_", " ")
        return f"{title} — {self.measured_text()}. Try: {self.remedy}. Source: {self.source}"


#: The columns of :meth:`AdviceList.to_frame`.
ADVICE_COLUMNS = ("finding", "layers", "statistic", "measured", "remedy", "how", "source")


class AdviceList(list):
    """The :class:`Advice` of a probe, in the order of :data:`FINDINGS`; empty when healthy."""

    def to_frame(self) -> pd.DataFrame:
        """One row per advice (:data:`ADVICE_COLUMNS`): ``layers`` comma-separated,
        ``measured`` as :meth:`Advice.measured_text`.

        Example:
            >>> list(AdviceList().to_frame().columns)[:3]
            ['finding', 'layers', 'statistic']
        """
        rows = [
            (
                advice.finding,
                ", ".join(advice.layers),
                advice.statistic,
                advice.measured_text(),
                advice.remedy,
                advice.how,
                advice.source,
            )
            for advice in self
        ]
        return pd.DataFrame(rows, columns=list(ADVICE_COLUMNS))


_SHARE = "sample_variance_fraction"


def _finite(layer: LayerProbe, metric: str) -> float | None:
    value = layer.metrics.get(metric)
    return value if value is not None and math.isfinite(value) else None


#: A finder: from the calls and a threshold, the values that cross it by call, and the
#: reference values they are compared with (a decay's first calls), by call.
Finder = Callable[[list["LayerProbe"], float], tuple[dict[str, float], dict[str, float]]]


def _at_or_above(metric: str, families: Sequence[str] | None = None) -> Finder:
    """A finder: the calls (of ``families``) whose ``metric`` is at or above the threshold."""

    def find(layers: list[LayerProbe], threshold: float) -> tuple[dict, dict]:
        chosen = [layer for layer in layers if families is None or layer.family in families]
        values = {layer.name: _finite(layer, metric) for layer in chosen}
        return {name: v for name, v in values.items() if v is not None and v >= threshold}, {}

    return find


def _decayed(layers: list[LayerProbe], threshold: float) -> tuple[dict, dict]:
    """Per kind of activation (``ReLU``, ``GELUActivation``, …: a transformer's pooler is not
    the next layer of its MLPs), the later calls whose sample-variance share is below both the
    threshold and the first call's, and those first calls (the references)."""
    below: dict[str, float] = {}
    references: dict[str, float] = {}
    for kind in dict.fromkeys(layer.kind for layer in layers):
        shares = [(layer.name, _finite(layer, _SHARE)) for layer in layers if layer.kind == kind]
        shares = [(name, value) for name, value in shares if value is not None]
        if len(shares) < 2:
            continue
        (first, reference), later = shares[0], shares[1:]
        decayed = {name: value for name, value in later if value < min(threshold, reference)}
        if decayed:
            below.update(decayed)
            references[first] = reference
    return below, references


_FINDERS: dict[str, tuple[str, Finder]] = {
    "high_delta": ("delta_relative", _at_or_above("delta_relative")),
    "dead_units": ("dead_fraction", _at_or_above("dead_fraction", ("rectifier",))),
    "always_on_units": ("always_on_fraction", _at_or_above("always_on_fraction", ("rectifier",))),
    "sample_variance_decay": (_SHARE, _decayed),
}


def _advice_for(finding: str, layers: list[LayerProbe], threshold: float) -> list[Advice]:
    """The advice of one finding: one per remedy that fits the flagged calls' families."""
    statistic, find = _FINDERS[finding]
    flagged, references = find(layers, threshold)
    order = [layer.name for layer in layers if layer.name in flagged]
    families = {layer.family for layer in layers if layer.name in flagged}
    return [
        Advice(
            tuple(order),
            finding,
            statistic,
            {**references, **{name: flagged[name] for name in order}},
            threshold,
            remedy.text,
            remedy.how,
            remedy.source,
        )
        for remedy in remedies_for(finding, families)
    ]


def advise(result: ProbeResult, thresholds: AdviceThresholds | None = None) -> AdviceList:
    r"""What the seeds suggest for what ``result`` measured: one :class:`Advice` per finding
    (module docstring) and remedy, each with its source and the measured numbers; empty for a
    healthy network.

    Args:
        result: a probe (:func:`relulab.probe.probe`).
        thresholds: when to report a finding (default :class:`AdviceThresholds`; a field set
            to ``None`` turns that finding off).

    Returns:
        An :class:`AdviceList` (a list of :class:`Advice` with ``to_frame()``).

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> from relulab.probe import probe
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> broken = nn.Sequential(nn.Linear(8, 32), nn.ReLU())
        >>> _ = nn.init.constant_(broken[0].bias, -10.0)  # every unit dead
        >>> [(a.finding, a.how) for a in advise(probe(broken, torch.randn(64, 8)))]
        [('dead_units', 'rai'), ('dead_units', 'positive_bias')]
        >>> healthy = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        >>> advise(probe(healthy, torch.randn(64, 8)))
        []
    """
    thresholds = thresholds or AdviceThresholds()
    found = AdviceList()
    for finding in FINDINGS:
        threshold = getattr(thresholds, _FINDERS[finding][0])
        if threshold is not None:
            found.extend(_advice_for(finding, result.layers, threshold))
    return found
