"""prepost-ln: each claim's criterion against its positive control (the post's own evidence —
the random walk that reproduces its α = 1 figure, or the post's toy simulated here
independently of relulab's engine) and its negative control: the claim's ``counterexample``, a
setting of the toy run through the study's own units at a small size and judged by the claim's
own measurement (synthetic counter-examples stay as extra assertions); then the pipeline on
stored results with each behaviour removed. LayerNorm's fixed norm is a test, not a claim
(issue 12), and Post-LN's flat cosine is a check (issue 42: an identity of the setup), which
keeps its controls. The influence claim's positive controls are the post's own mechanism (the
residual path that Post-LN's LayerNorm shrinks at every block) and an exact construction run by
the study's units (LayerNorm at width 2 is constant almost everywhere, so an early layer's
influence vanishes); since issue 43 "vanishing" is a gain of at most ``vanishing_gain``, and the
post's own Post-LN toy at α = 1 is its negative control.

Issue 29 judged the Pre-LN laws where the post puts them (asymptotically: layers ≥
asymptotic_factor × l₀, on a stream deep enough to reach them), the Post-LN rank at the figure's
α, Post-LN's cosine as "does not approach 1", and added Observation 2's vanishing influence of
early layers; no control is expected to fail any more.
"""

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch

from relulab import cli
from relulab.analysis import power_law_exponent
from relulab.config import apply_overrides
from relulab.engine import BatchedResidualToy, ResidualToySpec
from relulab.experiments import prepost_ln
from relulab.experiments.context import RunContext
from relulab.experiments.prepost_ln import claims
from relulab.experiments.prepost_ln.claims import alpha_part
from relulab.experiments.prepost_ln.config import long_alphas, long_depth, probe_count
from relulab.experiments.prepost_ln.units import (
    Influence,
    Key,
    Stream,
    Walk,
    influence_gains,
    layer_statistics,
)
from relulab.store import UnitResult

CONTEXT = RunContext(torch.device("cpu"), torch.float64, seed=0, quiet=True)
CONFIG = prepost_ln.PRESETS["quick"]  # the post's sizes: d = 100, hidden 400, 100 blocks
LAYERS = np.arange(1, CONFIG.blocks + 1, dtype=float)


# ---------------------------------------------------------------------------------------------
# The post's mechanism in closed form: Pre-LN's stream is a random walk.
# ---------------------------------------------------------------------------------------------
def _walk(alpha: float, layers: np.ndarray = LAYERS, d: int = CONFIG.width) -> np.ndarray:
    """‖h_l‖² of Pre-LN's random walk: ‖h_0‖² = d (Gaussian input) and each block adds an update
    of squared norm d·α²/18, uncorrelated with the stream — FC1's pre-activations on the
    LayerNormed stream have variance 1/3 under U(±1/√fan_in), E[ReLU(z)²] = 1/6, FC2 scales by
    1/3 again. So ‖h_l‖² = d·(1 + l·α²/18), √l once l ≫ l₀ = 18/α² ('its variance grows
    linearly with l, so the norm grows like √l')."""
    return d * (1 + layers * alpha**2 / 18)


def _walk_norm(alpha: float, layers: np.ndarray = LAYERS) -> np.ndarray:
    return np.sqrt(_walk(alpha, layers))


def _walk_gap(alpha: float, layers: np.ndarray = LAYERS) -> np.ndarray:
    """1 − cos(h_l, h_{l+1}) of the walk: an update orthogonal to h_l gives cos = ‖h_l‖/‖h_{l+1}‖
    (the post: 'the relative angular update satisfies θ ~ 1/‖h^l‖')."""
    return 1 - np.sqrt(_walk(alpha, layers) / _walk(alpha, layers + 1))


LONG = np.arange(1, CONFIG.long_blocks + 1, dtype=float)


def _pre_results(norm_curve, cosine_curve, toys: int = 3) -> dict:
    """``{Key: UnitResult}`` of Pre-LN streams given in closed form, ``norm_curve(α, layers)``
    and ``cosine_curve(α, layers)``, ``toys`` identical toys per α: the ``blocks``-deep unit
    at every α and the long unit at ``long_alphas``, as the run stores them."""

    def unit(alphas, layers):
        conditions = [{"norm": "pre", "alpha": a, "seed": t} for a in alphas for t in range(toys)]
        norms = np.stack([norm_curve(a, layers) for a in alphas for _ in range(toys)])
        cosines = np.stack([cosine_curve(a, layers) for a in alphas for _ in range(toys)])
        cosines[:, -1] = np.nan  # the last layer has no next one
        curves = {"norm": norms, "cosine": cosines}
        return UnitResult.forward_only(conditions, layers, curves, {"norm": norms[:, -1]})

    return {
        Key.FORWARD_PRE: unit(CONFIG.alphas, LAYERS),
        Key.FORWARD_PRE_LONG: unit(CONFIG.long_alphas, LONG),
    }


def _judge(spec, results) -> str:
    return spec.judge(spec.measure(results, CONFIG).measured, CONFIG)


def _run(*overrides: str) -> tuple:
    """The study's own units at a small size with ``overrides`` (width 16, hidden 32, 4 toys)."""
    config = apply_overrides(
        CONFIG, ["width=16", "hidden=32", "n_networks=4", "fit_from=1", *overrides]
    )
    return config, {unit.name: unit.run(CONTEXT) for unit in prepost_ln.plan(config)}


@pytest.fixture(scope="module")
def gentle():
    """Gentle blocks, α = 0.1, with a 400-block Pre-LN stream: l₀ = 18/α² = 1800 lies beyond
    it (≈ 1.2 s)."""
    return _run(
        "blocks=16",
        "n_samples=64",
        "probe_samples=32",
        "alphas=0.1",
        "long_alphas=0.1",
        "long_blocks=400",
        "figure_alpha=0.1",
    )


def test_claims_declare_where_they_fail_and_the_flat_cosine_is_a_check():
    kinds = {spec.id: spec.kind for spec in claims.CLAIMS}
    assert [k for k, v in kinds.items() if v == "check"] == ["postln-cosine-flat"]
    for spec in claims.CLAIMS:
        assert bool(spec.counterexample) == (spec.kind == "claim"), spec.id
        assert not spec.post_hoc  # issue 29's changes are tabled criterion changes (docs)
    assert "identity of the setup" in claims.COSINE_FLAT.check


def test_random_walk_reproduces_the_posts_alpha_1_figure():
    """The post's Pre-LN figure at α = 1: ‖h_1‖ ≈ 10.25, ‖h_100‖ ≈ 25.5, cos(h_l, h_{l+1})
    0.974 at the start and 0.9957 at the end (issue 29's reading of the figure)."""
    norm = _walk_norm(1.0)
    assert norm[0] == pytest.approx(10.25, rel=0.01) and norm[-1] == pytest.approx(25.5, rel=0.01)
    gap = _walk_gap(1.0)
    assert 1 - gap[0] == pytest.approx(0.974, abs=0.001)
    assert 1 - gap[-1] == pytest.approx(0.9957, abs=0.0002)
    average = math.log(norm[-1] / norm[0]) / math.log(100)  # the figure's average exponent
    assert average == pytest.approx(0.2, abs=0.01)


def test_random_walk_is_sqrt_l_asymptotically():
    """The post's laws are asymptotic: far beyond l₀ the walk's exponents are ½ and −1 at every
    α, α = 1 included."""
    far = np.arange(1000.0, 10001.0)
    for alpha in CONFIG.alphas:
        assert power_law_exponent(far, _walk_norm(alpha, far)) == pytest.approx(0.5, abs=0.01)
        assert power_law_exponent(far, _walk_gap(alpha, far)) == pytest.approx(-1.0, abs=0.02)


# --- preln-norm-grows-like-sqrt-l --------------------------------------------------------------
def _walk_cosine(alpha, layers):
    return 1 - _walk_gap(alpha, layers)


def test_preln_norm_grows_like_sqrt_l_positive():
    """The random walk that reproduces the post's figure (‖h_1‖ ≈ 10.25, ‖h_100‖ ≈ 25.5 at
    α = 1), at every α of the config, read as the run reads it: over layers ≥ 10 l₀, on the
    long stream at α = 1 (l₀ = 18 puts them beyond 100 blocks). √l asymptotically, as the post
    says."""
    walk = _pre_results(lambda a, layers: _walk_norm(a, layers), _walk_cosine)
    assert _judge(claims.NORM_LIKE_SQRT_L, walk) == "holds"


def test_preln_norm_grows_like_sqrt_l_negative(gentle):
    """The counter-setting run by the study's units: at α = 0.1 the asymptotic range
    (l ≥ 10 l₀, l₀ = 1800) lies beyond the 400-block stream, whose norm has barely left ‖h_0‖:
    fitted over its deepest half the exponent is ≈ 0.05, and the claim fails. Extra assertions
    on the criterion: updates that all point the same way (a drift: the norm grows like l), and
    Post-LN's constant norm."""
    config, results = gentle
    record = claims.NORM_LIKE_SQRT_L.evaluate(results, config)
    assert record.verdict == "fails", record.detail
    assert record.measured < 0.2 and "layers 200–400" in record.detail
    drift = _pre_results(
        lambda a, layers: math.sqrt(CONFIG.width) * (1 + layers * a / math.sqrt(18)),
        _walk_cosine,
    )
    assert _judge(claims.NORM_LIKE_SQRT_L, drift) == "fails"
    flat = _pre_results(
        lambda a, layers: np.full_like(layers, math.sqrt(CONFIG.width)), _walk_cosine
    )
    assert _judge(claims.NORM_LIKE_SQRT_L, flat) == "fails"


def test_the_asymptotic_range_is_where_the_post_puts_it():
    """l₀ of the walk is 18/α², so the fits start at 180 on the long α = 1 stream and at
    fit_from (10) at α = 10 and 100; over 100 blocks α = 1 fails, as issue 29 found."""
    walk = _pre_results(lambda a, layers: _walk_norm(a, layers), _walk_cosine)
    long = Walk.read(walk[Key.FORWARD_PRE_LONG])
    assert claims.norm_offset(long, 1.0) == pytest.approx(18.0, rel=1e-6)
    assert claims.asymptotic_start(long, 1.0, CONFIG) == 180
    for alpha in (10.0, 100.0):
        start = claims.asymptotic_start(Walk.read(walk[Key.FORWARD_PRE]), alpha, CONFIG)
        assert start == CONFIG.fit_from
    short = copy.deepcopy(walk)
    short[Key.FORWARD_PRE_LONG] = short[Key.FORWARD_PRE]
    short_config = dataclasses.replace(CONFIG, long_alphas=())
    measured = claims.NORM_LIKE_SQRT_L.measure(short, short_config).measured
    assert measured[alpha_part(1.0)].value == pytest.approx(0.42, abs=0.03)  # layers 50–100


# --- preln-cosine-gap-like-1-over-l ------------------------------------------------------------
def test_preln_cosine_gap_like_1_over_l_positive():
    """The random walk's 1 − cos(h_l, h_{l+1}) (cos 0.974 → 0.9957 at α = 1, the post's figure),
    at every α of the config over the asymptotic range: 1/l, as the post says."""
    walk = _pre_results(lambda a, layers: _walk_norm(a, layers), _walk_cosine)
    assert _judge(claims.GAP_LIKE_1_OVER_L, walk) == "holds"


def test_preln_cosine_gap_like_1_over_l_negative(gentle):
    """The counter-setting run by the study's units: at α = 0.1 every layer the stream reaches
    has l ≪ l₀, where 1 − cos ≈ 1/(2(l₀ + l)) is nearly flat — the exponent is ≈ −0.1, not −1,
    and the claim fails. Extra assertion on the criterion: a stream whose norm stays put
    (Post-LN) turns by the same angle at every block: 1 − cos = 1 − 1/√(1 + α²/18) at every l,
    exponent 0."""
    config, results = gentle
    record = claims.GAP_LIKE_1_OVER_L.evaluate(results, config)
    assert record.verdict == "fails", record.detail
    assert record.measured > -0.5
    constant = _pre_results(
        lambda a, layers: np.full_like(layers, math.sqrt(CONFIG.width)),
        lambda a, layers: np.full_like(layers, 1 / math.sqrt(1 + a**2 / 18)),
    )
    assert _judge(claims.GAP_LIKE_1_OVER_L, constant) == "fails"


# ---------------------------------------------------------------------------------------------
# The post's toy, simulated independently of relulab's engine at the post's sizes.
# ---------------------------------------------------------------------------------------------
def _layer_norm(h: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(h, (h.shape[-1],), eps=1e-5)


def _toy_streams(x: torch.Tensor, alpha: float, generator: torch.Generator, norms) -> dict:
    """The streams of one toy under each norm of ``norms`` (same weights), drawn as
    nn.Linear's default init, U(±1/√fan_in), no biases, FC2's output times α."""
    d, hidden = CONFIG.width, CONFIG.hidden
    h = dict.fromkeys(norms, x)
    streams = {norm: [] for norm in norms}
    for _ in range(CONFIG.blocks):
        w1 = (torch.rand(hidden, d, generator=generator) * 2 - 1) / d**0.5
        w2 = (torch.rand(d, hidden, generator=generator) * 2 - 1) / hidden**0.5
        for norm in norms:
            if norm == "pre":
                h[norm] = h[norm] + alpha * (torch.relu(_layer_norm(h[norm]) @ w1.T) @ w2.T)
            else:
                h[norm] = _layer_norm(h[norm] + alpha * (torch.relu(h[norm] @ w1.T) @ w2.T))
            streams[norm].append(h[norm])
    return streams


def _statistics(stream: list[torch.Tensor]) -> dict[str, np.ndarray]:
    """The study's per-layer readings, the effective rank at the first and last layer only (the
    claims read no other; NaN between)."""
    stream = [h.double() for h in stream]
    ends = layer_statistics([stream[0], stream[-1]])["effective_rank"]
    rank = np.full(len(stream), np.nan)
    rank[0], rank[-1] = ends
    cosines = [
        float(torch.nn.functional.cosine_similarity(a, b, dim=1).mean())
        for a, b in zip(stream[:-1], stream[1:], strict=True)
    ]
    return {
        "norm": np.array([float(h.norm(dim=1).mean()) for h in stream]),
        "cosine": np.array(cosines + [np.nan]),
        "effective_rank": rank,
    }


def _simulate(n_samples: int, toys: int, seed: int, norms=("pre", "post")) -> dict:
    """``{Key: UnitResult}`` of the independent simulation (float32), ``toys`` toys per α of the
    config, each norm of ``norms`` on the same weights."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n_samples, CONFIG.width, generator=generator)
    rows = {norm: [] for norm in norms}
    conditions = {norm: [] for norm in norms}
    with torch.no_grad():
        for alpha in CONFIG.alphas:
            for toy in range(toys):
                streams = _toy_streams(x, alpha, generator, norms)
                for norm in norms:
                    rows[norm].append(_statistics(streams[norm]))
                    conditions[norm].append({"norm": norm, "alpha": alpha, "seed": toy})
    results = {}
    for norm in norms:
        curves = {k: np.stack([r[k] for r in rows[norm]]) for k in rows[norm][0]}
        final = {k: curves[k][:, -1] for k in ("norm", "effective_rank")}
        key = Key.FORWARD_PRE if norm == "pre" else Key.FORWARD_POST
        results[key] = UnitResult.forward_only(conditions[norm], LAYERS, curves, final)
    return results


@pytest.fixture(scope="module")
def simulated():
    """The ranks need the run's N = 1000 inputs; 3 toys per α decide them."""
    return _simulate(1000, 3, seed=2026)


@pytest.fixture(scope="module")
def simulated_cosines():
    """Post-LN only. The cosine's trend comes from the blocks' weights, not from N: 100 inputs,
    and 16 toys per α (at α = 100 the cosine is ≈ 0.04 and its trend varies by ±0.035 from toy
    to toy, so at the quick preset's 8 toys the ±0.05 tolerance is straddled about one draw in
    ten although the true trend is 0)."""
    return _simulate(100, 16, seed=2027, norms=("post",))


def test_simulation_shows_the_posts_behaviour(simulated):
    """The independent toy reproduces the post's α = 1 norms and relulab's forward pass."""
    pre = Stream.read(simulated[Key.FORWARD_PRE])
    alpha_one = [i for i, c in enumerate(pre.conditions) if c["alpha"] == 1.0]
    mean_norm = pre.norm[alpha_one].mean(axis=0)
    assert mean_norm[0] == pytest.approx(10.25, rel=0.02)
    assert mean_norm[-1] == pytest.approx(25.5, rel=0.05)
    assert claims.norm_offset(pre, 1.0) == pytest.approx(18, rel=0.15)


# --- postln-cosine-flat (does not approach 1) ---------------------------------------------------
def _post_cosines(cosine_curve, toys: int = 3) -> dict:
    """A Post-LN forward unit whose cosine is ``cosine_curve(α)`` at every layer (``toys``
    identical toys per α)."""
    cosines = np.stack([cosine_curve(a) for a in CONFIG.alphas for _ in range(toys)])
    cosines[:, -1] = np.nan
    conditions = [
        {"norm": "post", "alpha": a, "seed": t} for a in CONFIG.alphas for t in range(toys)
    ]
    curves = {"norm": np.full_like(cosines, math.sqrt(CONFIG.width)), "cosine": cosines}
    return {Key.FORWARD_POST: UnitResult.forward_only(conditions, LAYERS, curves, {})}


def test_postln_cosine_flat_positive(simulated_cosines):
    """A check's positive control. The post's Post-LN toy, simulated: LayerNorm keeps
    ‖h_l‖ = √d, so each block turns the stream by the same angle on average and the cosine does
    not approach 1."""
    assert _judge(claims.COSINE_FLAT, simulated_cosines) == "holds"


def test_postln_cosine_flat_negative():
    """A check's negative control (criterion only: no setting of the Post-LN toy fails it).
    Pre-LN's cosine (the random walk that reproduces the post's figure), which the post says
    does approach 1 — though over layers 10–100 it changes by less than the old "no trend"
    tolerance of 0.05 — and a cosine that climbs from 0.5 to 0.95 like 1 − 5/l."""
    walk = _post_cosines(lambda a: 1 - _walk_gap(a))
    assert _judge(claims.COSINE_FLAT, walk) == "fails"
    climbing = _post_cosines(lambda a: 1 - 5 / LAYERS)
    assert _judge(claims.COSINE_FLAT, climbing) == "fails"


# --- postln-rank-collapses ---------------------------------------------------------------------
def test_postln_rank_collapses_positive(simulated):
    """The post's Post-LN toy, simulated: at the figure's α = 100 its rank collapses to a few
    percent of its start (α = 1 keeps ≈ 0.53 of it, a metric: the post shows α = 100 only)."""
    assert CONFIG.figure_alpha == 100.0
    assert _judge(claims.RANK_COLLAPSES, simulated) == "holds"


def test_postln_rank_collapses_negative(simulated):
    """The counter-setting run by the study's units: a shallow stack at the figure's α = 100
    (4 blocks, width 16) keeps 0.69 of the first layer's rank, above ½ — the claim fails. Extra
    assertions on the criterion: a kept rank (0.95), and the simulated toy with Pre-LN's ranks
    in Post-LN's place."""
    config, results = _run(
        "blocks=4", "n_samples=64", "probe_samples=32", "alphas=100", "long_alphas=100"
    )
    record = claims.RANK_COLLAPSES.evaluate(results, config)
    assert record.verdict == "fails", record.detail
    assert 0.5 < record.measured < 0.9
    assert claims.RANK_COLLAPSES.judge(0.95, CONFIG) == "fails"
    swapped = {Key.FORWARD_POST: simulated[Key.FORWARD_PRE]}
    assert _judge(claims.RANK_COLLAPSES, swapped) == "fails"


# --- preln-keeps-rank-better -------------------------------------------------------------------
def test_preln_keeps_rank_better_positive(simulated):
    """The post's toy, simulated with the same weights under both norms: Pre-LN's last layer
    keeps more effective rank than Post-LN's at every α (the post's 'Pre-LN maintains
    representation rank better')."""
    measured = claims.KEEPS_RANK.measure(simulated, CONFIG).measured
    assert claims.KEEPS_RANK.judge(measured, CONFIG) == "holds"


def test_preln_keeps_rank_better_negative(simulated):
    """The counter-setting run by the study's units: two inputs (N = 2) through gentle blocks
    (α = 0.1, 4 blocks) — both streams keep the inputs, and Post-LN's LayerNorm gives the two
    rows equal norms, which raises the effective rank of two rows above Pre-LN's (−0.015 for
    the run's draw of the two inputs): the claim fails. Extra assertion: the simulation with the
    norms' ranks swapped."""
    config, results = _run(
        "blocks=4", "n_samples=2", "probe_samples=2", "alphas=0.1", "long_alphas=0.1"
    )
    record = claims.KEEPS_RANK.evaluate(results, config)
    assert record.verdict == "fails", record.detail
    assert record.measured < 0
    swapped = {Key.FORWARD_PRE: simulated[Key.FORWARD_POST]}
    swapped[Key.FORWARD_POST] = simulated[Key.FORWARD_PRE]
    measured = claims.KEEPS_RANK.measure(swapped, CONFIG).measured
    assert claims.KEEPS_RANK.judge(measured, CONFIG) == "fails"


# --- postln-early-influence-vanishes -----------------------------------------------------------
def _influence(post_gain, pre_gain, toys: int = 3) -> dict:
    """An influence unit with gains ``post_gain(α)`` / ``pre_gain(α)`` from h^l to h^L."""
    conditions, gains = [], []
    for norm, gain in (("pre", pre_gain), ("post", post_gain)):
        for alpha in CONFIG.alphas:
            for toy in range(toys):
                conditions.append({"norm": norm, "alpha": alpha, "seed": toy})
                gains.append(gain(alpha) * (1 + 0.01 * toy))
    steps = np.array([CONFIG.blocks])
    gains = np.array(gains)
    unit = UnitResult.forward_only(conditions, steps, {"gain": gains[:, None]}, {"gain": gains})
    return {Key.INFLUENCE: unit}


def _residual_path(alpha: float) -> float:
    """The post's mechanism: Post-LN's LayerNorm divides the stream — and with it the signal
    h^l carries — by √(1 + α²/18) at every block, since each block adds an update of squared
    norm d·α²/18 to ‖h‖² = d; after the L − l blocks from h^l to h^L that is
    (1 + α²/18)^(−(L − l)/2): 0.07 at α = 1 ('signals originating from early layers keep
    shrinking as they propagate forward')."""
    return (1 + alpha**2 / 18) ** (-(CONFIG.blocks - CONFIG.influence_layer) / 2)


def test_postln_early_influence_vanishes_positive():
    """The post's mechanism: Post-LN's early signal shrinks along the residual path to
    (1 + α²/18)^(−99/2) — 0.07 at α = 1, within vanishing_gain = 0.1, and nothing at α ≥ 10 —
    while Pre-LN's identity path carries it to the output unchanged (gain 1), 'the opposite
    problem'."""
    assert _residual_path(1.0) == pytest.approx(0.069, abs=0.001)
    mechanism = _influence(_residual_path, lambda a: 1.0)
    assert _judge(claims.EARLY_INFLUENCE, mechanism) == "holds"


def test_postln_early_influence_vanishes_positive_exact_construction():
    """An exact construction run by the study's units: at width d = 2 LayerNorm maps every
    vector to ±(1, −1) (up to its ε = 1e-5), so its Jacobian is ≈ ε/|x₁ − x₂|³ ≈ 1e-5 and a
    Post-LN block passes almost nothing of a perturbation on: the influence of h^1 vanishes
    (≈ 1e-15 after three blocks), while Pre-LN's identity path keeps it — the claim holds."""
    config = apply_overrides(
        CONFIG,
        [
            "width=2",
            "hidden=8",
            "blocks=4",
            "fit_from=1",
            "n_networks=4",
            "n_samples=64",
            "probe_samples=32",
            "long_blocks=4",
        ],
    )
    unit = next(u for u in prepost_ln.plan(config) if u.name == Key.INFLUENCE)
    record = claims.EARLY_INFLUENCE.evaluate({Key.INFLUENCE: unit.run(CONTEXT)}, config)
    assert record.verdict == "holds", record.detail
    assert record.measured < -10  # log₁₀ gain at α = 1: gone, not merely below 1


def test_postln_early_influence_vanishes_negative(prepost):
    """The counter-setting run by the study's units: the post's own Post-LN toy (width 16,
    α = 1, 10, 100). Bias-free ReLU blocks are positively homogeneous, so each block gives back
    what its LayerNorm takes: the gain of an early perturbation stays near 1, far above
    vanishing_gain, and the claim fails (under issue 29's reading, 'gain below 1', no Post-LN
    setting failed). Also run by the units: the LayerNorm before the block — Pre-LN's measured
    gains in Post-LN's place (norms relabelled): the identity path carries h^1 to the output
    with gain ≥ 1. Extra assertions on the criterion: a Post-LN stream that carries the early
    signal unshrunk, one that halves it (not vanished), and the mechanism with the norms
    swapped."""
    config, results = prepost
    record = claims.EARLY_INFLUENCE.evaluate(results, config)
    assert record.verdict == "fails", record.detail
    assert -0.5 < record.measured < 0.5  # α = 1: the gain is of order 1, not vanishing
    relabelled = copy.deepcopy(results)
    for condition in relabelled[Key.INFLUENCE].conditions:
        condition["norm"] = {"pre": "post", "post": "pre"}[condition["norm"]]
    record = claims.EARLY_INFLUENCE.evaluate(relabelled, config)
    assert record.verdict == "fails", record.detail
    kept = _influence(lambda a: 1.0, lambda a: 1.0)
    assert _judge(claims.EARLY_INFLUENCE, kept) == "fails"
    halved = _influence(lambda a: 0.5, lambda a: 2.0)
    assert _judge(claims.EARLY_INFLUENCE, halved) == "fails"
    swapped = _influence(lambda a: 1.0, _residual_path)
    assert _judge(claims.EARLY_INFLUENCE, swapped) == "fails"


def test_influence_gain_is_the_change_at_the_output():
    """The unit's forward-mode gain equals a finite difference on this file's own toy: perturb
    h^l by ε·v and measure the change at h^L."""
    spec = ResidualToySpec(8, 32, 6, "post", 3.0)
    toy = BatchedResidualToy(spec, 2, dtype=torch.float64)
    x = torch.randn(20, 8, dtype=torch.float64)
    v = torch.randn(20, 8, dtype=torch.float64)
    v = v / v.norm(dim=-1, keepdim=True)
    gains = influence_gains(toy, x, 2, v)
    assert gains.shape == (2, 4)
    weights = list(zip(toy.params[0::2], toy.params[1::2], strict=True))
    for s in range(2):
        ends = []
        for shift in (0.0, 1e-6):
            h = x
            for k, (w1, w2) in enumerate(weights):
                h = h + shift * v if k == 2 else h
                h = _layer_norm(h + 3.0 * (torch.relu(h @ w1[s].T) @ w2[s].T))
            ends.append(h.detach())
        change = ((ends[1] - ends[0]).norm(dim=-1) / 1e-6).mean()
        assert gains[s, -1] == pytest.approx(float(change), rel=1e-4)


# ---------------------------------------------------------------------------------------------
# LayerNorm's fixed norm; the pipeline on stored results.
# ---------------------------------------------------------------------------------------------
def test_postln_stream_norm_is_sqrt_d_by_construction():
    toy = BatchedResidualToy(ResidualToySpec(16, 32, 5, "post", 10.0), 2, dtype=torch.float64)
    with torch.no_grad():
        stream = toy.trace(torch.randn(50, 16, dtype=torch.float64)).stream
    for h in stream:
        assert h.norm(dim=-1).numpy() == pytest.approx(np.full((2, 50), 4.0), rel=1e-4)


def test_engine_matches_the_independent_toy():
    """relulab's batched toy and this file's simulation give the same stream for one weight
    draw (the engine's weights copied in)."""
    spec = ResidualToySpec(8, 32, 4, "pre", 3.0)
    toy = BatchedResidualToy(spec, 1, dtype=torch.float64)
    x = torch.randn(20, 8, dtype=torch.float64)
    with torch.no_grad():
        stream = toy.trace(x).stream
    h = x
    for w1, w2, expected in zip(toy.params[0::2], toy.params[1::2], stream, strict=True):
        h = h + 3.0 * (torch.relu(_layer_norm(h) @ w1[0].T) @ w2[0].T)
        assert torch.allclose(h, expected[0], atol=1e-10)


@pytest.fixture(scope="module")
def prepost():
    overrides = ["width=16", "hidden=32", "blocks=16", "n_samples=64", "fit_from=4", "n_networks=4"]
    config = apply_overrides(CONFIG, [*overrides, "long_blocks=64", "probe_samples=32"])
    return config, {unit.name: unit.run(CONTEXT) for unit in prepost_ln.plan(config)}


def _verdicts(results, config):
    return {c.id: c.verdict for c in prepost_ln.analyse(results, config).claims}


def _pre_norm_flat(results, config):
    for key in (Key.FORWARD_PRE, Key.FORWARD_PRE_LONG):
        Walk.read(results[key]).norm[:] = 3.0


def _pre_gap_flat(results, config):
    for key in (Key.FORWARD_PRE, Key.FORWARD_PRE_LONG):
        Walk.read(results[key]).cosine[:] = 0.9


def _post_cosine_to_1(results, config):
    post = Walk.read(results[Key.FORWARD_POST])
    post.cosine[:] = 1 - 0.5 / post.steps.astype(float)


def _post_rank_kept(results, config):
    Stream.read(results[Key.FORWARD_POST]).effective_rank[:] = 10.0


def _pre_rank_lower(results, config):
    pre, post = (Stream.read(results[key]) for key in (Key.FORWARD_PRE, Key.FORWARD_POST))
    pre.effective_rank[:, -1] = post.effective_rank[:, -1] - 1.0
    pre.final_rank[:] = post.final_rank - 1.0  # the stored last-layer rank the claim reads


def _post_influence_kept(results, config):
    unit = Influence.read(results[Key.INFLUENCE])
    post = [i for i, c in enumerate(unit.conditions) if c["norm"] == "post"]
    unit.gain[post, -1] = 2.0
    unit.output_gain[post] = 2.0  # the stored gain to the output the claim reads


COUNTER = {
    "preln-norm-grows-like-sqrt-l": _pre_norm_flat,
    "preln-cosine-gap-like-1-over-l": _pre_gap_flat,
    "postln-cosine-flat": _post_cosine_to_1,
    "postln-rank-collapses": _post_rank_kept,
    "preln-keeps-rank-better": _pre_rank_lower,
    "postln-early-influence-vanishes": _post_influence_kept,
}


def test_claims_are_the_counter_examples_keys(prepost):
    config, results = prepost
    verdicts = _verdicts(results, config)
    assert list(verdicts) == [spec.id for spec in claims.CLAIMS] and set(verdicts) == set(COUNTER)
    assert "postln-norm-constant" not in verdicts
    assert sorted(results) == sorted(prepost_ln.EXPERIMENT.unit_keys(config))
    views = prepost_ln.EXPERIMENT.unit_views(config)
    assert sorted(views) == sorted(results)
    for name, view in views.items():
        view.check(results[name], name)  # every unit holds what its view declares


@pytest.mark.parametrize("claim_id", sorted(COUNTER))
def test_claim_fails_on_its_counter_example(prepost, claim_id):
    config, results = prepost
    broken = copy.deepcopy(results)
    COUNTER[claim_id](broken, config)
    assert _verdicts(broken, config)[claim_id] == "fails"


def _ideal(results):
    ideal = copy.deepcopy(results)
    pre, post = Stream.read(ideal[Key.FORWARD_PRE]), Stream.read(ideal[Key.FORWARD_POST])
    for stream in (pre, Walk.read(ideal[Key.FORWARD_PRE_LONG])):
        layers = stream.steps.astype(float)
        stream.norm[:] = 3.0 * np.sqrt(layers)
        stream.cosine[:] = 1.0 - 0.3 / layers
    layers = pre.steps.astype(float)
    pre.effective_rank[:, -1] = 12.0
    pre.final_rank[:] = 12.0
    post.cosine[:] = 0.8 + 0.01 * np.cos(layers)  # fluctuates, does not approach 1
    post.effective_rank[:] = 10.0 / layers
    post.final_rank[:] = post.effective_rank[:, -1]
    influence = Influence.read(ideal[Key.INFLUENCE])
    for i, c in enumerate(influence.conditions):
        influence.gain[i, -1] = (0.01 if c["norm"] == "post" else 2.0) * (1 + 0.01 * i)
        influence.output_gain[i] = influence.gain[i, -1]
    return ideal


def test_claims_hold_on_ideal_results(prepost):
    config, results = prepost
    verdicts = _verdicts(_ideal(results), config)
    assert set(verdicts.values()) == {"holds"}, verdicts


def test_alpha_one_is_not_dropped(prepost):
    """α = 1 is judged on the long stream: breaking only it fails the claim."""
    config, results = prepost
    broken = _ideal(results)
    long = Walk.read(broken[Key.FORWARD_PRE_LONG])
    alpha_one = [i for i, c in enumerate(long.conditions) if c["alpha"] == 1.0]
    long.norm[alpha_one] = 3.0  # only α = 1 breaks the law
    claim = next(c for c in prepost_ln.analyse(broken, config).claims if c.id.startswith("preln-n"))
    assert claim.verdict == "fails" and "α=1:" in claim.detail and "(fails)" in claim.detail


@pytest.mark.parametrize(
    "override",
    [
        "influence_layer=100",
        "asymptotic_factor=1",
        "probe_samples=1",
        "long_blocks=0",
        "long_alphas=0",
        "figure_alpha=-1",
        "collapse_factor=0",
    ],
)
def test_new_settings_are_refused_in_one_line(tmp_path, capsys, override):
    """The settings issue 29 added refuse values the study cannot use: one line, exit 2."""
    code = cli.main(["run", "prepost-ln", "--quiet", "--set", override, "--out", str(tmp_path)])
    error = capsys.readouterr().err.strip()
    assert code == 2 and error.startswith("relulab: error:") and "\n" not in error, error


def test_settings_outside_the_run_are_used_where_they_apply():
    """long_alphas outside alphas are not run, the long stream is never shallower than blocks,
    the probe never takes more inputs than there are, and without a toy at the figure's α the
    rank claim is not tested."""
    config = apply_overrides(
        CONFIG, ["alphas=10,100", "blocks=2000", "n_samples=50", "figure_alpha=1"]
    )
    assert long_alphas(config) == () and long_depth(config) == 2000 and probe_count(config) == 50
    assert Key.FORWARD_PRE_LONG.value not in prepost_ln.EXPERIMENT.unit_keys(config)
    assert "no toy at the figure's α = 1" in claims.RANK_COLLAPSES.untested(config)
