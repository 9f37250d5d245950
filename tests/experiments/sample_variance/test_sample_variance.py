"""sample-variance: each claim's criterion against its positive control (the seed's own
experiment simulated independently here at reduced width, its closed forms, or the values its
text reports) and its negative control — the claim's ``counterexample`` realised through the
study's own unit functions at a small size (BatchNorm or a linear activation in the study's
networks, non-zero-mean inputs to its engine, a narrow width, the seed's "scale" init) and
judged by the claim's own measure, plus the independent simulation of the same counter-example.
The checks (issue 42: identities of the setup, relulab's theory against its own simulation)
keep their controls. Then the study end to end at a tiny size, the pipeline on stored results
with each behaviour removed, the identities of the infinite-width theory (tests rather than
claims) and the theory commands."""

import copy
import dataclasses
import functools
import json
import math

import numpy as np
import pytest
import torch
from numpy.polynomial.hermite_e import hermegauss
from scipy.stats import norm

from relulab import cli
from relulab.analysis import mean_ci, same_sign_fraction, sample_bias_corrected_ratio
from relulab.config import ConfigError, apply_overrides
from relulab.engine import BatchedMLP, MLPSpec
from relulab.engine.forward import forward_statistics
from relulab.experiments import sample_variance as sv
from relulab.experiments.context import RunContext
from relulab.experiments.criteria import Below, NoneBeyond
from relulab.experiments.sample_variance import claims, units
from relulab.experiments.sample_variance import readings as rd
from relulab.experiments.sample_variance.units import Key
from relulab.theory import sample_statistics

CONFIG = sv.PRESETS["quick"]  # depth 50, 100 samples: the seed's §3.2 setting
DEPTH, SAMPLES, NETS = 50, 100, 30  # seed 002 §3.2 and §4: 30 nets of depth 50, 100 inputs
NARROW, WIDE = 30, 200  # the seed's narrowest width and one between its 100 and 300
SEED_SLOPES = {"batchnorm": -0.381, "scale_bias": -0.379}  # seed 002 §4, Fig. 3, width 2000


# ---------------------------------------------------------------------------------------------
# Independent simulations of the seed's networks (not the study's engine): seed 002 eq. 1–2,
# §3.2 and §4, at reduced width.
# ---------------------------------------------------------------------------------------------
def _ratio(t: torch.Tensor) -> torch.Tensor:
    """Seed eq. 9 per network: √(Σ_i ⟨u_i⟩² / Σ_i Var_t u_i) for ``(S, samples, units)``."""
    t = t.double()
    return (t.mean(1).square().sum(1) / t.var(1, unbiased=False).sum(1)).sqrt()


def _batchnorm(u: torch.Tensor) -> torch.Tensor:
    return (u - u.mean(1, keepdim=True)) / (u.var(1, unbiased=False, keepdim=True) + 1e-5).sqrt()


@functools.cache
def _nets(
    width: int,
    relu: bool = True,
    batchnorm: bool = False,
    input_mean: float = 0.0,
    gain: float = 2.0,
) -> dict[str, np.ndarray]:
    """NETS bias-free MLPs of depth DEPTH, weights N(0, gain/width), on SAMPLES i.i.d.
    N(input_mean, 1) inputs: per network and layer the
    ratio r of u^l and of x^l, Σ m², Σ v², the fraction of units dead or always on, the
    per-feature sample std of u^l; and three units at layers 1 and DEPTH."""
    generator = torch.Generator().manual_seed(width)
    dtype = torch.float32 if width > 100 else torch.float64
    x = torch.randn(SAMPLES, width, generator=generator, dtype=dtype) + input_mean
    x = x.expand(NETS, SAMPLES, width)
    rows: dict[str, list] = {}
    for _ in range(DEPTH):
        w = torch.randn(NETS, width, width, generator=generator, dtype=dtype)
        u = x @ (w * math.sqrt(gain / width))
        ud = u.double()
        signs = (u > 0).all(1) | (u <= 0).all(1)
        x = torch.relu(_batchnorm(u) if batchnorm else u) if relu else u
        for key, value in {
            "ratio": _ratio(u),
            "act_ratio": _ratio(x),
            "m2": ud.mean(1).square().sum(1),
            "v2": ud.var(1, unbiased=False).sum(1),
            "on_or_off": signs.double().mean(1),
            "pre_std": ud.std(1, unbiased=False).mean(1),
            "units": ud[:, :, :3],
        }.items():
            rows.setdefault(key, []).append(value)
    out = {k: torch.stack(v, 1).numpy() for k, v in rows.items() if k != "units"}
    out["units_first"], out["units_last"] = rows["units"][0].numpy(), rows["units"][-1].numpy()
    out["share"] = out["v2"] / (out["m2"] + out["v2"])
    return out


def _positive_weight_steps(width: int = NARROW) -> np.ndarray:
    """r(P x^l)/r(x^l) per network and layer for the activations x^l of Kaiming nets and a
    fresh P with i.i.d. |N(0, 2/width)| elements at every layer (not zero-mean: eq. 10 fails)."""
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(SAMPLES, width, generator=generator, dtype=torch.float64)
    x = x.expand(NETS, SAMPLES, width)
    steps = []
    for _ in range(DEPTH - 1):
        w = torch.randn(NETS, width, width, generator=generator, dtype=torch.float64)
        x = torch.relu(x @ (w * math.sqrt(2 / width)))
        p = torch.randn(NETS, width, width, generator=generator, dtype=torch.float64).abs()
        steps.append(_ratio(x @ (p * math.sqrt(2 / width))) / _ratio(x))
    return torch.stack(steps, 1).numpy()


@functools.cache
def _gradient_profiles(scheme: str, width: int = 100) -> np.ndarray:
    """⟨(∂L/∂x^l)²⟩ per network and layer under the seed's random linear loss
    L = Σ_t w·x^L_t, w ~ N(0, I) (§4): ``kaiming``, ``batchnorm`` (Kaiming + BatchNorm before
    every ReLU) or ``scale`` (§5.1: N(0, 1) weights rescaled layer by layer so that the
    pre-activations have unit second moment, biases 0)."""
    generator = torch.Generator().manual_seed(width + 1)
    x = torch.randn(SAMPLES, width, generator=generator, dtype=torch.float64)
    x = x.expand(NETS, SAMPLES, width).clone().requires_grad_(True)
    activations = []
    for _ in range(DEPTH):
        w = torch.randn(NETS, width, width, generator=generator, dtype=torch.float64)
        with torch.no_grad():
            if scheme == "scale":
                w /= ((x @ w).square().mean((1, 2), keepdim=True) + 1e-5).sqrt()
            else:
                w *= math.sqrt(2 / width)
        u = x @ w
        x = torch.relu(_batchnorm(u) if scheme == "batchnorm" else u)
        activations.append(x)
    readout = torch.randn(NETS, width, 1, generator=generator, dtype=torch.float64)
    grads = torch.autograd.grad((x @ readout).sum(), activations)
    return torch.stack([g.square().mean((1, 2)) for g in grads], 1).numpy()


def _relu_rise_closed_form(ratio: float) -> float:
    """r(ReLU(u))/r(u) at infinite width for units u ~ N(μ_i, v²) over the samples with means
    μ_i ~ N(0, m²) over the units, r = m/v (seed §3.4, eq. 11, by Gauss–Hermite quadrature)."""
    nodes, weights = hermegauss(120)
    weights = weights / weights.sum()
    mu = ratio * nodes  # v = 1
    mean = mu * norm.cdf(mu) + norm.pdf(mu)
    variance = (mu**2 + 1) * norm.cdf(mu) + mu * norm.pdf(mu) - mean**2
    return float(np.sqrt((weights * mean**2).sum() / (weights * variance).sum()) / ratio)


def _tables(narrow: np.ndarray, wide: np.ndarray) -> dict[int, np.ndarray]:
    return {NARROW: narrow, WIDE: wide}


# ---------------------------------------------------------------------------------------------
# The claims' counter-examples realised through the study's own unit functions, small: 8 nets
# of depth 50 on 100 inputs at widths 32 and 64 (the histogram width 64), gradient nets of
# width 8–16. Each is judged by the claim's own measure (``spec.measure``; ``spec.judge``).
# ---------------------------------------------------------------------------------------------
REALISED = dataclasses.replace(CONFIG, widths=(32, 64), histogram_width=64, n_networks=8)
CONTEXT = RunContext(torch.device("cpu"), torch.float64, seed=0, quiet=True)


def _inputs_of(width: int, mean: float = 0.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(width)
    return torch.randn(SAMPLES, width, generator=generator, dtype=torch.float64) + mean


@functools.cache
def _realised_finite(mechanism: str) -> dict:
    """The finite-width units of ``REALISED``: ``kaiming`` (the engine's forward statistics on
    the seed's inputs), ``shifted`` (the same on inputs of mean 1), ``batchnorm`` or ``linear``
    (the study's statistics of a :class:`BatchedMLP` with BatchNorm before every ReLU, or
    without ReLU)."""
    config, results = REALISED, {}
    for width in config.widths:
        seeds = list(range(config.n_networks))
        if mechanism in ("kaiming", "shifted"):
            statistics = forward_statistics(
                config.n_networks,
                width,
                config.depth,
                _inputs_of(width, 1.0 if mechanism == "shifted" else 0.0),
                seeds,
                torch.float64,
                keep_layers=units.kept_layers(config),
                keep_units=width,
            )
        else:
            spec = MLPSpec(
                (width,) * (config.depth + 1) + (1,),
                activation="linear" if mechanism == "linear" else "relu",
                bias=False,
                batchnorm=mechanism == "batchnorm",
            )
            model = BatchedMLP(spec, config.n_networks, seeds=seeds, dtype=torch.float64)
            statistics = units.model_statistics(model, _inputs_of(width), units.kept_layers(config))
        results[units.finite_width(width)] = units.finite_width_result(
            config, width, statistics, seeds
        )
    return results


@functools.cache
def _realised_gradients(scheme: str, width: int, nets: int = 8, activation: str = "relu"):
    """``(config, results)``: the study's gradient unit of ``scheme`` at ``width`` (``nets``
    networks) stored under the key of ``scheme``'s claim (``scale`` under scale+bias's)."""
    config = dataclasses.replace(
        CONFIG, gradient_width=width, gradient_networks=nets, gradient_chunk=nets, trend_widths=()
    )
    unit = units.gradient_result(
        config, scheme, width, range(nets), CONTEXT, _inputs_of(width), activation
    )
    key = units.gradients("scale_bias" if scheme == "scale" else scheme)
    return config, {key: unit}


def _realised_verdict(spec, config, results) -> str:
    """The claim's verdict on the realised counter-example, by its own measure and criterion
    (whether the run could decide it is not asked: the question is what it measures there)."""
    return spec.judge(spec.measure(results, config).measured, config)


# --- sample-variance-decays --------------------------------------------------------------------
def test_sample_variance_decays_positive():
    """The seed's Fig. 1: Kaiming nets of width 200 (share v²/(m² + v²) at layer 50 ≈ 0.06 of
    its layer-1 value), and the infinite-width theory of eq. 8 (1 − K^49(0) ≈ 0.013)."""
    assert claims.DECAYS.judge(rd.decay(_nets(WIDE)["share"]), CONFIG) == "holds"
    theory = 1 - sample_statistics(DEPTH).rho
    assert claims.DECAYS.judge(theory[-1] / theory[0], CONFIG) == "holds"


def test_sample_variance_decays_negative():
    """The counter-example through the study's units: BatchNorm before every ReLU (seed §4)
    keeps each layer's share at one layer's decay (layer 50 over layer 1 ≈ 0.77). And without
    the ReLU (a linear Kaiming net, simulated independently) the share stays ≈ 1."""
    assert _realised_verdict(claims.DECAYS, REALISED, _realised_finite("batchnorm")) == "fails"
    assert claims.DECAYS.judge(rd.decay(_nets(100, relu=False)["share"]), CONFIG) == "fails"


# --- total-variance-preserved ------------------------------------------------------------------
def test_total_variance_preserved_positive():
    """He et al.'s rule as the seed restates it (§2.1): Kaiming nets of width 200, the
    network-averaged m² + v² kept layer to layer."""
    nets = _nets(WIDE)
    judged = claims.TOTAL_PRESERVED.judge(rd.total_steps(nets["m2"] + nets["v2"]), CONFIG)
    assert judged == "holds"


def test_total_variance_preserved_negative():
    """Weights of variance γ·2/n with γ = 1.25: 'the total variance decays/explodes
    exponentially' (seed §3.1.1)."""
    nets = _nets(NARROW, gain=2.5)
    judged = claims.TOTAL_PRESERVED.judge(rd.total_steps(nets["m2"] + nets["v2"]), CONFIG)
    assert judged == "fails"


# --- theory-is-upper-bound ---------------------------------------------------------------------
MARGIN = CONFIG.bound_rtol * rd.bound_span(CONFIG)  # the margin in r: 1 % of Fig. 2's span
FIVE_WIDTHS = (30, 100, 300, 1000, 3000)  # the seed's widths (§3.2)


def _on_the_bound(sd: np.ndarray | float, n: int = NETS, scale: float = 1.0, seed: int = 29):
    """Curves ``scale`` × the bound at every layer of the seed's five widths: ``n`` nets whose
    mean at each point is exactly ``scale`` × the corrected theory, spread ``sd`` (in r) about
    it."""
    rng = np.random.default_rng(seed)
    corrected = rd.corrected_theory(CONFIG)
    tables = {}
    for w in FIVE_WIDTHS:
        z = rng.standard_normal((n, DEPTH))
        z = (z - z.mean(0)) / z.std(0, ddof=1)  # exactly mean 0, sd 1 at every point
        tables[w] = scale * corrected + np.asarray(sd) * z
    return tables


def test_theory_is_upper_bound_positive():
    """The seed's Fig. 2 experiment at widths 30 and 200 (30 nets, depth 50, 100 inputs): the
    network-mean r_l lies on or below the theory as the 100-sample estimator reads it, reached
    at layer 2 — every (width, layer) point is shown within the margin."""
    points = rd.bound_excesses(_tables(_nets(NARROW)["ratio"], _nets(WIDE)["ratio"]), CONFIG)
    assert len(points) == 2 * (DEPTH - 1)
    assert claims.UPPER_BOUND.judge(points, CONFIG) == "holds"


def test_theory_is_upper_bound_positive_when_the_bound_is_reached_everywhere():
    """Exact constructions within the margin: r_l equal to the bound at every layer of the
    seed's five widths — in the infinite-width limit wide nets approach (every net on the
    curve: exact points), and with a spread over 30 nets that lets each point be shown within
    the margin (sd = margin, a one-sided 95 % bound 0.31 × margin above the curve); and every
    point 0.9 × margin above the curve, exactly. The seed's statement is true in each (on or
    within what its figure can show), so the claim holds."""
    corrected = rd.corrected_theory(CONFIG)
    exact = {w: np.tile(corrected, (NETS, 1)) for w in FIVE_WIDTHS}
    assert claims.UPPER_BOUND.judge(rd.bound_excesses(exact, CONFIG), CONFIG) == "holds"
    spread = rd.bound_excesses(_on_the_bound(MARGIN), CONFIG)
    assert len(spread) == 5 * (DEPTH - 1)
    assert claims.UPPER_BOUND.judge(spread, CONFIG) == "holds"
    edge = {w: t + 0.9 * MARGIN for w, t in exact.items()}
    assert claims.UPPER_BOUND.judge(rd.bound_excesses(edge, CONFIG), CONFIG) == "holds"


def _spread(half_width: float) -> np.ndarray:
    """The per-network sd (in r) that gives each point's 95 % interval over 30 nets a
    half-width of ``half_width`` × the point's bound."""
    return half_width * math.sqrt(NETS) / 2.045 * rd.corrected_theory(CONFIG)


def test_theory_is_upper_bound_is_inconclusive_when_the_data_cannot_tell():
    """The bound reached at every point with issue 29's spread (each point's 95 % interval
    ± 2 % of its value at 30 nets): at the deep layers (r ≈ 8) that is ≈ ± 0.17 in r against a
    margin of 0.089, so those points can be shown neither inside nor outside — inconclusive,
    where issue 29's criterion ('none significantly beyond') held; with ± 1 % the same
    construction is shown inside (holds)."""
    wide = rd.bound_excesses(_on_the_bound(_spread(0.02)), CONFIG)
    assert claims.UPPER_BOUND.judge(wide, CONFIG) == "inconclusive"
    assert NoneBeyond(Below("excess", CONFIG.bound_rtol)).judge(wide) == "holds"
    narrow = rd.bound_excesses(_on_the_bound(_spread(0.01)), CONFIG)
    assert claims.UPPER_BOUND.judge(narrow, CONFIG) == "holds"


def test_theory_is_upper_bound_does_not_hold_a_uniform_5_percent_excess():
    """Issue 43's referee: under issue 29's criterion a uniform 5 % excess at every point still
    held. The bound exceeded by 5 % at every point (± 2 % intervals, as above) is beyond the
    margin at every layer past 3 (5 % of r ≥ 1.2 > 0.089) but, after Holm over 245 points, not
    shown beyond it (t ≈ 3.9 at layer 50): inconclusive; by 10 % it fails. The seed's experiment
    at width 200 (its deep layers far below the bound, its shallow ones on it) raised by 5 % is
    not called a hold either, and raised by 20 % it fails. Raising the narrowest width by 5 %
    only lifts its shallow layers onto the bound (they sit ≈ 5 % below it), which the seed
    allows."""
    for factor, verdict in ((1.05, "inconclusive"), (1.10, "fails")):
        raised = rd.bound_excesses(_on_the_bound(factor * _spread(0.02), scale=factor), CONFIG)
        assert claims.UPPER_BOUND.judge(raised, CONFIG) == verdict, factor
    wide = _nets(WIDE)["ratio"]
    for factor, verdict in ((1.05, "inconclusive"), (1.2, "fails")):
        points = rd.bound_excesses({WIDE: factor * wide}, CONFIG)
        assert claims.UPPER_BOUND.judge(points, CONFIG) == verdict, factor
    points = rd.bound_excesses({NARROW: 1.05 * _nets(NARROW)["ratio"]}, CONFIG)
    assert claims.UPPER_BOUND.judge(points, CONFIG) == "holds"


def test_theory_is_upper_bound_negative():
    """Inputs of mean 1 instead of the seed's zero-mean ones, through the study's engine
    (widths 32 and 64) and simulated independently (width 30): r_l far above the theory."""
    assert claims.UPPER_BOUND.evaluate(_realised_finite("shifted"), REALISED).verdict == "fails"
    points = rd.bound_excesses({NARROW: _nets(NARROW, input_mean=1.0)["ratio"]}, CONFIG)
    assert claims.UPPER_BOUND.judge(points, CONFIG) == "fails"


def test_theory_is_upper_bound_declares_its_post_hoc_choices():
    """Two choices made after results are declared, and the record carries the verdict without
    each: issue 29's test at every point (7438ad0, after the committed paper run read
    inconclusive) — without it, the old combined interval against ``bound_rtol``; and issue
    43's margin as a fraction of the figure's span — without it, the same equivalence test with
    the margin a fraction of each point's own value."""
    before_29, value = claims.UPPER_BOUND.post_hoc
    assert "7438ad0" in before_29.why and "issue 43" in value.why
    results = _realised_finite("kaiming")
    record = claims.UPPER_BOUND.evaluate(results, REALISED)
    assert record.verdict == "inconclusive"  # 8 nets cannot show every shallow point inside
    without_29, without_span = record.post_hoc
    tables = {w: rd.ratio_curves(results, w) for w in REALISED.widths}
    old = rd.largest_excess_interval(tables, REALISED)
    assert without_29.measured == pytest.approx(float(old))
    assert without_29.verdict == before_29.criterion(REALISED).judge(old)
    relative = rd.bound_excesses(tables, REALISED, relative_to="value")
    assert without_span.verdict == value.criterion(REALISED).judge(relative)
    assert without_span.measured == pytest.approx(max(float(v) for v in relative.values()))


def test_theory_is_upper_bound_counts_one_point_beyond_with_holm():
    """One layer of 49 beyond the margin by 2.7 standard errors (p ≈ 0.005 alone) is not shown
    outside in a family of 49 (Holm p ≈ 0.26), nor inside: inconclusive; 16 standard errors
    beyond, it fails. The headline (a metric) is the point farthest beyond."""
    rng = np.random.default_rng(3)
    z = rng.standard_normal(NETS)
    z = (z - z.mean()) / z.std(ddof=1)  # exactly mean 0, sd 1: the t statistic is set below
    corrected = rd.corrected_theory(CONFIG)
    table = corrected * (1 - 0.05 + 0.001 * rng.standard_normal((NETS, DEPTH)))
    se = 0.002  # in r, at layer 10
    slightly, far = table.copy(), table.copy()
    slightly[:, 9] = corrected[9] + MARGIN + 2.7 * se + se * math.sqrt(NETS) * z
    far[:, 9] = corrected[9] + MARGIN + 16 * se + se * math.sqrt(NETS) * z
    assert claims.UPPER_BOUND.judge(rd.bound_excesses({NARROW: table}, CONFIG), CONFIG) == "holds"
    measured = rd.bound_excesses({NARROW: slightly}, CONFIG)
    assert claims.UPPER_BOUND.judge(measured, CONFIG) == "inconclusive"
    measured = rd.bound_excesses({NARROW: far}, CONFIG)
    assert claims.UPPER_BOUND.judge(measured, CONFIG) == "fails"
    headline = claims.UPPER_BOUND.criterion_for(CONFIG).headline(measured)
    assert headline is measured[f"width {NARROW}, layer 10"]


# --- wider-is-closer ---------------------------------------------------------------------------
def test_wider_is_closer_positive():
    """The seed's Fig. 2 experiment at widths 30 and 200: the wider curve is the closer."""
    tables = _tables(_nets(NARROW)["ratio"], _nets(WIDE)["ratio"])
    assert claims.WIDER_IS_CLOSER.judge(rd.closeness(tables, CONFIG), CONFIG) == "holds"


def test_wider_is_closer_negative():
    """The same two curves with their widths exchanged (the narrow net the closer) fail."""
    tables = _tables(_nets(WIDE)["ratio"], _nets(NARROW)["ratio"])
    assert claims.WIDER_IS_CLOSER.judge(rd.closeness(tables, CONFIG), CONFIG) == "fails"


# --- finite-width-ratio-saturates --------------------------------------------------------------
def test_finite_width_ratio_saturates_positive():
    """The seed's Fig. 2 experiment: r_l still grows over layers 25–50 at width 200 (≈ 1.14×),
    not at width 30 (≈ 1.00×)."""
    tables = _tables(_nets(NARROW)["ratio"], _nets(WIDE)["ratio"])
    assert claims.SATURATES.judge(rd.growths(tables, CONFIG), CONFIG) == "holds"


def test_finite_width_ratio_saturates_negative():
    """The counter-example through the study's units: without ReLU (a linear activation) r
    does not grow at any width, so no order of the widths is shown (the growths tie: never
    holds). The simulated curves with their widths exchanged (the wide net saturating first)
    fail."""
    realised = _realised_verdict(claims.SATURATES, REALISED, _realised_finite("linear"))
    assert realised != "holds"
    swapped = _tables(_nets(WIDE)["ratio"], _nets(NARROW)["ratio"])
    assert claims.SATURATES.judge(rd.growths(swapped, CONFIG), CONFIG) == "fails"


# --- deep-units-on-or-off ----------------------------------------------------------------------
def test_deep_units_on_or_off_positive():
    """Kaiming nets of width 200 at layer 50, and the seed's picture at infinite width (unit
    means N(0, m²), fluctuations N(0, v²), m/v from eq. 8: ≈ 0.80 of the units keep one sign)."""
    on_or_off = _nets(WIDE)["on_or_off"][:, -1]
    assert claims.ON_OR_OFF.judge(mean_ci(on_or_off), CONFIG) == "holds"
    infinite = float(same_sign_fraction(rd.theory_ratio(CONFIG)[-1], SAMPLES))
    assert claims.ON_OR_OFF.judge(infinite, CONFIG) == "holds"


def test_deep_units_on_or_off_negative():
    """The counter-example through the study's units: with BatchNorm before every ReLU the
    deep units cross zero (≈ 0.6 % keep one sign). And layer 1, where the seed says the
    distributions over samples and networks are alike: every unit crosses zero."""
    realised = _realised_verdict(claims.ON_OR_OFF, REALISED, _realised_finite("batchnorm"))
    assert realised == "fails"
    on_or_off = _nets(WIDE)["on_or_off"][:, 0]
    assert claims.ON_OR_OFF.judge(mean_ci(on_or_off), CONFIG) == "fails"


# --- histograms-narrow-with-depth --------------------------------------------------------------
def _shrink(nets: dict[str, np.ndarray]):
    early, deep = (rd.histogram_spreads(nets[k]) for k in ("units_first", "units_last"))
    return rd.histogram_shrink(early, deep)


def test_histograms_narrow_with_depth_positive():
    """The seed's Fig. 1 right: three units of each of 30 Kaiming nets of width 200."""
    assert claims.HISTOGRAMS.judge(_shrink(_nets(WIDE)), CONFIG) == "holds"


def test_histograms_narrow_with_depth_negative():
    """The counter-example through the study's units: with BatchNorm a deep unit's spread
    over the inputs stays ≈ 0.8 of its layer-1 value. A linear net (simulated independently)
    keeps every unit's spread over samples as wide as the pooled one."""
    realised = _realised_verdict(claims.HISTOGRAMS, REALISED, _realised_finite("batchnorm"))
    assert realised == "fails"
    assert claims.HISTOGRAMS.judge(_shrink(_nets(100, relu=False)), CONFIG) == "fails"


# --- matmul-keeps-ratio ------------------------------------------------------------------------
def test_matmul_keeps_ratio_positive():
    """Seed eq. 10 on the Kaiming nets of width 200: r(W x^l)/r(x^l) ≈ 1 on average."""
    nets = _nets(WIDE)
    steps = rd.matmul_steps(nets["ratio"], nets["act_ratio"])
    assert claims.MATMUL_KEEPS.judge(mean_ci(steps.mean(axis=1)), CONFIG) == "holds"


def test_matmul_keeps_ratio_negative():
    """Weights |N(0, 2/n)|, i.i.d. but not zero-mean, applied to every layer's activations
    of Kaiming nets of width 30: the common positive component raises r (≈ 1.27× on average,
    4× at layer 1)."""
    steps = _positive_weight_steps()
    assert claims.MATMUL_KEEPS.judge(mean_ci(steps.mean(axis=1)), CONFIG) == "fails"


# --- relu-raises-ratio -------------------------------------------------------------------------
def test_relu_raises_ratio_positive():
    """Seed eq. 11 at infinite width: units N(μ_i, v²) with μ_i ~ N(0, m²) and m/v of eq. 8 at
    layers 2–50; ReLU raises r at every layer (least at layer 50, ≈ 1.015). Simulated nets of
    width 30 and 200 read inconclusive on simultaneous intervals: the deep-layer rise tends to
    1 at finite width (1.004 ± 0.01 at layer 50), see the docs page."""
    rises = {
        f"layer {layer}": _relu_rise_closed_form(r)
        for layer, r in enumerate(rd.theory_ratio(CONFIG)[1:], start=2)
    }
    assert min(rises.values()) == pytest.approx(1.015, abs=0.001)
    assert claims.RELU_RAISES.judge(rises, CONFIG) == "holds"


def test_relu_raises_ratio_negative():
    """The counter-example through the study's gradient unit: a linear activation in place of
    ReLU leaves r exactly as it was (a rise of 1 at every layer). Simulated independently:
    without ReLU the ratio stays put; a ReLU followed by per-unit centring (BatchNorm after the
    ReLU) lowers it to 0."""
    config, results = _realised_gradients("kaiming", 16, activation="linear")
    assert _realised_verdict(claims.RELU_RAISES, config, results) == "fails"
    linear = _nets(NARROW, relu=False)
    assert claims.RELU_RAISES.judge(rd.relu_rises(linear["ratio"], linear["ratio"]), CONFIG) == (
        "fails"
    )
    nets = _nets(NARROW)
    centred = np.zeros_like(nets["act_ratio"])
    assert claims.RELU_RAISES.judge(rd.relu_rises(nets["ratio"], centred), CONFIG) == "fails"


def test_relu_raises_ratio_judges_every_layer_on_simultaneous_intervals():
    """Each layer's interval is at the Bonferroni level of the 50 layers (per-point 95 %
    intervals are refused), and one layer where the rise is significantly below 1 fails the
    claim however high the others are."""
    nets = _nets(WIDE)
    rises = rd.relu_rises(nets["ratio"], nets["act_ratio"])
    assert all(e.level == pytest.approx(1 - 0.05 / DEPTH) for e in rises.values())
    per_point = {k: mean_ci([e.value - 0.01, e.value, e.value + 0.01]) for k, e in rises.items()}
    with pytest.raises(ValueError, match="simultaneous_level"):
        claims.RELU_RAISES.judge(per_point, CONFIG)
    lowered = nets["act_ratio"].copy()
    lowered[:, 30] = 0.9 * nets["ratio"][:, 30]
    assert claims.RELU_RAISES.judge(rd.relu_rises(nets["ratio"], lowered), CONFIG) == "fails"


# --- batchnorm-removes-decay -------------------------------------------------------------------
def test_batchnorm_removes_decay_positive():
    """Kaiming + BatchNorm nets of width 200: the share of the layer-50 linear output is one
    layer's decay, 1 − K(0) (≈ 0.715 at this width, 0.682 at
    infinite width)."""
    share = _nets(WIDE, batchnorm=True)["share"][:, -1]
    assert claims.BATCHNORM_REMOVES_DECAY.judge(mean_ci(share), CONFIG) == "holds"


def test_batchnorm_removes_decay_negative():
    """Without BatchNorm the share at layer 50 has decayed (the seed's Fig. 1)."""
    share = _nets(WIDE)["share"][:, -1]
    assert claims.BATCHNORM_REMOVES_DECAY.judge(mean_ci(share), CONFIG) == "fails"


# --- batchnorm-sigma-s -------------------------------------------------------------------------
def test_batchnorm_sigma_s_positive():
    """Kaiming + BatchNorm nets of width 200: the pre-BN per-feature sample std, layers ≥ 2."""
    pre_std = _nets(WIDE, batchnorm=True)["pre_std"][:, 1:].mean(axis=1)
    assert claims.BATCHNORM_SIGMA_S.judge(mean_ci(pre_std), CONFIG) == "holds"


def test_batchnorm_sigma_s_negative():
    """Without BatchNorm the per-feature sample std decays with depth (v_l → 0)."""
    pre_std = _nets(WIDE)["pre_std"][:, 1:].mean(axis=1)
    assert claims.BATCHNORM_SIGMA_S.judge(mean_ci(pre_std), CONFIG) == "fails"


# --- batchnorm-gradient-slope ------------------------------------------------------------------
def test_batchnorm_gradient_slope_positive():
    """The seed's value (Fig. 3: −0.381) and Kaiming + BatchNorm nets of width 100."""
    assert claims.BATCHNORM_SLOPE.judge(SEED_SLOPES["batchnorm"], CONFIG) == "holds"
    slope = rd.slope_estimate(_gradient_profiles("batchnorm"), DEPTH)
    assert claims.BATCHNORM_SLOPE.judge(slope, CONFIG) == "holds"


def test_batchnorm_gradient_slope_negative():
    """The counter-example through the study's gradient unit: BatchNorm nets of width 8 (16
    nets) steepen to ≈ −0.46, outside −0.383 ± 0.03. Kaiming nets without BatchNorm
    (simulated independently): flat gradients."""
    config, results = _realised_gradients("batchnorm", 8, nets=16)
    assert _realised_verdict(claims.BATCHNORM_SLOPE, config, results) == "fails"
    slope = rd.slope_estimate(_gradient_profiles("kaiming"), DEPTH)
    assert claims.BATCHNORM_SLOPE.judge(slope, CONFIG) == "fails"


# --- scale-bias-gradient-slope -----------------------------------------------------------------
def test_scale_bias_gradient_slope_positive():
    """The seed's value at its width 2000 (Fig. 3: −0.379). (At width 100 the scale+bias slope
    is ≈ −0.18: the claim is about the seed's width, see the docs page.)"""
    assert claims.SCALE_BIAS_SLOPE.judge(SEED_SLOPES["scale_bias"], CONFIG) == "holds"


def test_scale_bias_gradient_slope_is_not_tested_below_the_seeds_width():
    """The slope still steepens with width up to the seed's 3000 (paper run: −0.295 at 500,
    −0.335 at 1000, −0.375 at 3000): the quick preset's width 500 cannot decide it, the paper
    preset's 3000 can."""
    assert "width 500" in claims.SCALE_BIAS_SLOPE.untested(sv.PRESETS["quick"])
    assert claims.SCALE_BIAS_SLOPE.untested(sv.PRESETS["paper"]) == ""


def test_scale_bias_gradient_slope_negative():
    """The seed's 'scale' init (§5.1, biases 0: total variance preserved, not centred) keeps
    gradients flat: through the study's gradient unit (width 16), and simulated
    independently."""
    config, results = _realised_gradients("scale", 16)
    assert _realised_verdict(claims.SCALE_BIAS_SLOPE, config, results) == "fails"
    slope = rd.slope_estimate(_gradient_profiles("scale"), DEPTH)
    assert claims.SCALE_BIAS_SLOPE.judge(slope, CONFIG) == "fails"


# --- kaiming-gradients-flat --------------------------------------------------------------------
def test_kaiming_gradients_flat_positive():
    """Kaiming nets of width 100 under the random linear loss (He et al.'s preserved scale)."""
    slope = rd.slope_estimate(_gradient_profiles("kaiming"), DEPTH)
    assert claims.KAIMING_FLAT.judge(slope, CONFIG) == "holds"


def test_kaiming_gradients_flat_negative():
    """The counter-example through the study's gradient unit: Kaiming nets of width 16 drift
    (≈ +0.16 per layer on 8 nets), outside 0 ± 0.03 — the claim is about wide nets, and a
    narrow one can fail it. BatchNorm nets (simulated independently): gradients grow towards
    the input."""
    config, results = _realised_gradients("kaiming", 16)
    assert _realised_verdict(claims.KAIMING_FLAT, config, results) == "fails"
    slope = rd.slope_estimate(_gradient_profiles("batchnorm"), DEPTH)
    assert claims.KAIMING_FLAT.judge(slope, CONFIG) == "fails"


# --- claims and checks (issue 42) --------------------------------------------------------------
CHECKS = {
    "total-variance-preserved",
    "wider-is-closer",
    "matmul-keeps-ratio",
    "batchnorm-removes-decay",
    "batchnorm-sigma-s",
}


def test_checks_say_why_and_claims_name_their_counterexample():
    """Five statements the experiment could not fail are checks (an identity of the setup, or
    relulab's theory against its own simulation), each saying why; every other one is a claim
    naming the setting of the simulated system under which it fails."""
    assert {spec.id for spec in claims.CLAIMS if spec.kind == "check"} == CHECKS
    for spec in claims.CLAIMS:
        if spec.kind == "check":
            assert spec.check.startswith(("an identity of the setup", "relulab's theory"))
            assert not spec.counterexample, spec.id
        else:
            assert spec.counterexample, spec.id


def test_unit_views_declare_every_planned_unit(tiny):
    """Every unit plan produces has a view, and the stored unit holds what it declares; a
    unit lacking a declared field is refused, naming it."""
    config, results = tiny
    views = units.unit_views(config)
    assert set(views) == set(results)
    for name, view in views.items():
        view.check(results[name], name)
    broken = copy.deepcopy(results[units.finite_width(config.histogram_width)])
    del broken.arrays["units_layer_6"]
    with pytest.raises(ValueError, match="units_layer_6"):
        views[units.finite_width(config.histogram_width)].check(broken, "h")


# ---------------------------------------------------------------------------------------------
# The study end to end at a tiny size, and its settings.
# ---------------------------------------------------------------------------------------------
TINY = [
    f"--set={kv}"
    for kv in (
        "depth=6",
        "n_samples=20",
        "n_networks=3",
        "widths=8,16",
        "histogram_width=16",
        "histogram_layers=1,6",
        "gradient_width=16",
        "gradient_networks=4",
        "gradient_chunk=2",
        "trend_widths=8",
    )
]


def test_sample_variance_run_writes_claims_with_numbers(tmp_path):
    out = tmp_path / "sv"
    assert cli.main(["run", "sample-variance", "--quiet", "--out", str(out), *TINY]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [c["id"] for c in summary["claims"]] == [
        spec.id for spec in claims.CLAIMS if spec.kind == "claim"
    ]
    assert [c["id"] for c in summary["checks"]] == [
        spec.id for spec in claims.CLAIMS if spec.kind == "check"
    ]
    for claim in summary["claims"] + summary["checks"]:
        assert isinstance(claim["measured"], float) and math.isfinite(claim["measured"]), claim
        assert "seed 002" in claim["expected"] and claim["scope"], claim
        assert not claim["beyond_seed"], claim["id"]
    assert all(c["counterexample"] for c in summary["claims"])
    assert all(c["why_check"] and c["kind"] == "check" for c in summary["checks"])
    upper = next(c for c in summary["claims"] if c["id"] == "theory-is-upper-bound")
    assert len(upper["post_hoc"]) == 2
    names = {p.name for p in out.iterdir()}
    assert {
        "theory_mv.png",
        "finite_width_ratio.png",
        "gradients.png",
        "histograms.png",
        "layer_steps.png",
    } <= names
    for claim in summary["claims"] + summary["checks"]:
        assert claim["scale"], claim["id"]
        if claim["id"] not in ("wider-is-closer", "finite-width-ratio-saturates"):
            assert claim["n"], claim["id"]


def test_gram_sampler_runs_the_study_and_bad_samplers_are_refused(tmp_path, capsys):
    # widths 24 and 32 over 20 samples: the finite-width units sample those layers by Gram
    out = tmp_path / "sv-gram"
    tiny = [*TINY[:3], "--set=widths=24,32", "--set=histogram_width=32", *TINY[5:]]
    args = ["run", "sample-variance", "--quiet", "--out", str(out), *tiny]
    assert cli.main([*args, "--set=forward_sampler=gram"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["forward_sampler"] == "gram"
    assert len(summary["claims"]) + len(summary["checks"]) == 14
    refused = tmp_path / "refused"
    bad = ["run", "sample-variance", "--quiet", "--out", str(refused), "--set=forward_sampler=x"]
    assert cli.main(bad) == 2
    assert "forward_sampler" in capsys.readouterr().err and not refused.exists()


@pytest.mark.parametrize(
    "assignment",
    [
        "depth=3",
        "n_samples=1",
        "n_networks=1",
        "widths=1,30",
        "histogram_width=2",
        "histogram_layers=0,50",
        "histogram_layers=1,60",
        "gradient_width=1",
        "gradient_networks=1",
        "trend_widths=1",
        "gradient_chunk=0",
        "slope_tolerance=-0.1",
    ],
)
def test_bad_settings_are_refused_in_one_line(assignment):
    field = assignment.partition("=")[0]
    with pytest.raises(ConfigError, match=field) as refused:
        apply_overrides(CONFIG, [assignment])
    assert "\n" not in str(refused.value)


def test_sample_bias_of_the_ratio_estimator_matches_simulation():
    rng = np.random.default_rng(0)
    n, true_ratio = 100, 0.0
    u = rng.standard_normal((4000, n, 50))  # zero-mean units: the true ratio is 0
    empirical = np.sqrt((u.mean(1) ** 2).sum(1) / u.var(1).sum(1)).mean()
    assert empirical == pytest.approx(
        sample_bias_corrected_ratio(np.array(true_ratio), n), rel=0.02
    )


def test_theory_commands(tmp_path, capsys):
    figure = tmp_path / "pd.png"
    assert (
        cli.main(["theory", "phase-diagram", "--k", "-1", "--grid", "50", "--out", str(figure)])
        == 0
    )
    assert figure.exists() and "bounded for σ_w² < 2.9339" in capsys.readouterr().out
    assert cli.main(["theory", "sample-variance", "--depth", "3"]) == 0
    assert "0.3183" in capsys.readouterr().out
    assert cli.main(["theory", "phase-diagram", "--k", "-2", "--out", str(tmp_path / "x.png")]) == 2
    assert not (tmp_path / "x.png").exists()


def test_quick_preset_says_where_it_departs_from_the_paper():
    from relulab.config import provenance

    rows = provenance(sv.PRESETS["quick"])
    departs = {name for name, row in rows.items() if row["departs"]}
    assert departs == {"widths", "gradient_width", "gradient_networks"}
    assert rows["gradient_width"]["seed_value"] == 3000
    assert not any(row["departs"] for row in provenance(sv.PRESETS["paper"]).values())
    assert all(row["provenance"] for row in rows.values())


# ---------------------------------------------------------------------------------------------
# Identities of the infinite-width theory: tests, not claims (issue 12).
# ---------------------------------------------------------------------------------------------
def test_theory_m_over_v_grows_at_every_layer():
    ratio = sample_statistics(50).mean_to_std_ratio
    assert np.all(np.diff(ratio) > 0)


def test_theory_decay_is_subexponential():
    gaps = 1 - sample_statistics(200).rho
    contraction = gaps[1:] / gaps[:-1]
    assert np.all(np.diff(contraction) > 0)  # K'(1) = 1: the contraction tends to 1
    assert contraction[-1] > 0.99


# ---------------------------------------------------------------------------------------------
# The pipeline on stored results: every claim fails where its behaviour is absent.
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    config = apply_overrides(CONFIG, [t.removeprefix("--set=") for t in TINY])
    context = RunContext(torch.device("cpu"), torch.float64, seed=0, quiet=True)
    results = {unit.name: unit.run(context) for unit in sv.plan(config)}
    return config, results


def _verdicts(results, config):
    """Every claim's verdict as if the run could decide it (the tiny nets are narrower than the
    seed's Fig. 3, so the scale+bias slope is otherwise not tested)."""
    specs = [dataclasses.replace(spec, untested=None) for spec in claims.CLAIMS]
    return {spec.id: spec.evaluate(results, config).verdict for spec in specs}


def test_a_narrow_run_says_why_the_scale_bias_slope_is_not_tested(tiny):
    config, results = tiny
    analysed = {c.id: c for c in sv.analyse(results, config).claims}
    assert analysed["scale-bias-gradient-slope"].verdict == "not tested"
    assert "width 16" in analysed["scale-bias-gradient-slope"].why_not_tested
    assert [k for k, c in analysed.items() if c.verdict == "not tested"] == [
        "scale-bias-gradient-slope"
    ]


def _layers(config):
    return np.arange(1, config.depth + 1, dtype=float)


def _finite(results, config):
    return [results[units.finite_width(width)] for width in config.widths]


def _no_decay(results, config):
    for result in _finite(results, config):
        result.curves["mean_sq"][:] = 0.0


def _total_grows(results, config):
    for result in _finite(results, config):
        result.curves["mean_sq"] *= 1.5 ** _layers(config)
        result.curves["sample_var"] *= 1.5 ** _layers(config)


def _above_theory(results, config):
    for result in _finite(results, config):
        result.curves["ratio"][:] = 2 * rd.corrected_theory(config)


def _wider_is_farther(results, config):
    for k, width in enumerate(sorted(config.widths)):
        results[units.finite_width(width)].curves["ratio"][:] = rd.corrected_theory(config) + k


def _wider_saturates_sooner(results, config):
    for k, width in enumerate(sorted(config.widths)):
        curve = _layers(config) if k == 0 else np.ones(config.depth)
        results[units.finite_width(width)].curves["ratio"][:] = curve


def _deep_units_balanced(results, config):
    for result in _finite(results, config):
        result.final["on_or_off_last"][:] = 0.0


def _histograms_keep_their_width(results, config):
    first, last = config.histogram_layers
    arrays = results[units.finite_width(config.histogram_width)].arrays
    arrays[f"units_layer_{last}"] = arrays[f"units_layer_{first}"].copy()


def _matmul_doubles_the_ratio(results, config):
    curves = results[Key.GRADIENTS_KAIMING].curves
    curves["linear_ratio"][:, 1:] = 2 * curves["activation_ratio"][:, :-1]


def _relu_lowers_the_ratio(results, config):
    curves = results[Key.GRADIENTS_KAIMING].curves
    curves["activation_ratio"][:] = 0.5 * curves["linear_ratio"]


def _batchnorm_decays(results, config):
    results[Key.GRADIENTS_BATCHNORM].curves["linear_share"][:] = 0.05


def _sigma_s_is_one(results, config):
    results[Key.GRADIENTS_BATCHNORM].curves["pre_std"][:] = 1.0


def _flat_gradients(results, config):
    for key in (Key.GRADIENTS_BATCHNORM, Key.GRADIENTS_SCALE_BIAS):
        results[key].curves["grad_sq"][:] = 1.0


def _kaiming_gradients_explode(results, config):
    results[Key.GRADIENTS_KAIMING].curves["grad_sq"][:] = np.exp(-0.4 * _layers(config))


COUNTER_EXAMPLES = {
    "sample-variance-decays": _no_decay,
    "total-variance-preserved": _total_grows,
    "theory-is-upper-bound": _above_theory,
    "wider-is-closer": _wider_is_farther,
    "finite-width-ratio-saturates": _wider_saturates_sooner,
    "deep-units-on-or-off": _deep_units_balanced,
    "histograms-narrow-with-depth": _histograms_keep_their_width,
    "matmul-keeps-ratio": _matmul_doubles_the_ratio,
    "relu-raises-ratio": _relu_lowers_the_ratio,
    "batchnorm-removes-decay": _batchnorm_decays,
    "batchnorm-sigma-s": _sigma_s_is_one,
    "batchnorm-gradient-slope": _flat_gradients,
    "scale-bias-gradient-slope": _flat_gradients,
    "kaiming-gradients-flat": _kaiming_gradients_explode,
}


def test_every_claim_has_a_counter_example(tiny):
    config, results = tiny
    assert set(_verdicts(results, config)) == set(COUNTER_EXAMPLES)


def test_plan_produces_exactly_the_declared_unit_keys(tiny):
    config, results = tiny
    assert set(results) == set(units.unit_keys(config))


@pytest.mark.parametrize("claim_id", sorted(COUNTER_EXAMPLES))
def test_claim_fails_on_its_counter_example(tiny, claim_id):
    config, results = tiny
    broken = copy.deepcopy(results)
    COUNTER_EXAMPLES[claim_id](broken, config)
    assert _verdicts(broken, config)[claim_id] == "fails"


def _ideal(results, config):
    """Results with every behaviour the seed describes: finite widths below the theory and
    saturating the sooner the narrower, total variance exact, BatchNorm and slopes on theory."""
    theory = sample_statistics(config.depth)
    corrected = rd.corrected_theory(config)
    for width in config.widths:
        result = results[units.finite_width(width)]
        total = 2.0 * width
        result.curves["mean_sq"][:] = total * theory.rho
        result.curves["sample_var"][:] = total * (1 - theory.rho)
        result.curves["ratio"][:] = corrected * width / (width + _layers(config))
        result.final["on_or_off_last"][:] = 0.9
    arrays = results[units.finite_width(config.histogram_width)].arrays
    first, last = config.histogram_layers
    offsets = np.random.default_rng(0).normal(0, 5, (arrays[f"units_layer_{first}"].shape[0], 1, 1))
    arrays[f"units_layer_{last}"] = 0.1 * arrays[f"units_layer_{first}"] + offsets
    kaiming = results[Key.GRADIENTS_KAIMING].curves
    # layer by layer, so that ReLU raises the ratio 1.5× at every layer and the next layer's
    # linear output inherits it (two whole-array assignments left the rise data-dependent)
    for layer in range(kaiming["linear_ratio"].shape[1]):
        kaiming["activation_ratio"][:, layer] = 1.5 * kaiming["linear_ratio"][:, layer]
        if layer + 1 < kaiming["linear_ratio"].shape[1]:
            kaiming["linear_ratio"][:, layer + 1] = kaiming["activation_ratio"][:, layer]
    kaiming["grad_sq"][:] = 1.0
    bn = results[Key.GRADIENTS_BATCHNORM].curves
    bn["linear_share"][:] = 1 - 1 / np.pi
    bn["pre_std"][:] = math.sqrt(1 - 1 / np.pi)
    growing = [Key.GRADIENTS_BATCHNORM] + [
        units.scale_bias_at(config, w) for w in config.trend_widths
    ]
    for key in {*growing, Key.GRADIENTS_SCALE_BIAS}:
        results[key].curves["grad_sq"][:] = np.exp(math.log(1 - 1 / np.pi) * _layers(config))


def test_every_claim_holds_on_ideal_results(tiny):
    config, results = tiny
    ideal = copy.deepcopy(results)
    _ideal(ideal, config)
    verdicts = _verdicts(ideal, config)
    assert {k for k, v in verdicts.items() if v != "holds"} == set(), verdicts
