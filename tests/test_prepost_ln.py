"""prepost-ln: every claim fails on results where its behaviour is absent and holds on results
that show it; LayerNorm's fixed norm is a test, not a claim (issue 12)."""

import copy

import numpy as np
import pytest
import torch

from relulab.config import apply_overrides
from relulab.engine import BatchedResidualToy, ResidualToySpec
from relulab.experiments import prepost_ln
from relulab.experiments.context import RunContext

CONTEXT = RunContext(torch.device("cpu"), torch.float64, seed=0, quiet=True)


def _run(module, *overrides):
    config = apply_overrides(module.PRESETS["quick"], list(overrides))
    return config, {unit.name: unit.run(CONTEXT) for unit in module.plan(config)}


def _verdicts(module, results, config):
    return {c.id: c.verdict for c in module.analyse(results, config).claims}


def test_postln_stream_norm_is_sqrt_d_by_construction():
    toy = BatchedResidualToy(ResidualToySpec(16, 32, 5, "post", 10.0), 2, dtype=torch.float64)
    with torch.no_grad():
        stream = toy.trace(torch.randn(50, 16, dtype=torch.float64)).stream
    for h in stream:
        assert h.norm(dim=-1).numpy() == pytest.approx(np.full((2, 50), 4.0), rel=1e-4)


# ---------------------------------------------------------------------------------------------
# prepost-ln.
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def prepost():
    return _run(
        prepost_ln,
        "width=16",
        "hidden=32",
        "blocks=16",
        "n_samples=64",
        "fit_from=4",
        "n_networks=4",
    )


def _layers(result):
    return result.steps.astype(float)


def _pre_norm_flat(results, config):
    results["forward-pre"].curves["norm"][:] = 3.0


def _pre_gap_flat(results, config):
    results["forward-pre"].curves["cosine"][:] = 0.9


def _post_cosine_trend(results, config):
    result = results["forward-post"]
    result.curves["cosine"][:] = 0.2 + 0.2 * np.log(_layers(result))


def _post_rank_kept(results, config):
    results["forward-post"].curves["effective_rank"][:] = 10.0


def _pre_rank_lower(results, config):
    results["forward-pre"].final["effective_rank"][:] = (
        results["forward-post"].final["effective_rank"] - 1.0
    )


PREPOST_COUNTER = {
    "preln-norm-grows-like-sqrt-l": _pre_norm_flat,
    "preln-cosine-gap-like-1-over-l": _pre_gap_flat,
    "postln-cosine-flat": _post_cosine_trend,
    "postln-rank-collapses": _post_rank_kept,
    "preln-keeps-rank-better": _pre_rank_lower,
}


def test_prepost_claims_are_the_counter_examples_keys(prepost):
    config, results = prepost
    assert set(_verdicts(prepost_ln, results, config)) == set(PREPOST_COUNTER)
    assert "postln-norm-constant" not in _verdicts(prepost_ln, results, config)


@pytest.mark.parametrize("claim_id", sorted(PREPOST_COUNTER))
def test_prepost_claim_fails_on_its_counter_example(prepost, claim_id):
    config, results = prepost
    broken = copy.deepcopy(results)
    PREPOST_COUNTER[claim_id](broken, config)
    assert _verdicts(prepost_ln, broken, config)[claim_id] == "fails"


def test_prepost_claims_hold_on_ideal_results(prepost):
    config, results = prepost
    ideal = copy.deepcopy(results)
    pre, post = ideal["forward-pre"], ideal["forward-post"]
    layers = _layers(pre)
    pre.curves["norm"][:] = 3.0 * np.sqrt(layers)
    pre.curves["cosine"][:] = 1.0 - 0.3 / layers
    pre.final["effective_rank"][:] = 12.0
    post.curves["cosine"][:] = 0.8 + 0.01 * np.cos(layers)  # fluctuates, no trend
    post.curves["effective_rank"][:] = 10.0 / layers
    post.final["effective_rank"][:] = 10.0 / layers[-1]
    verdicts = _verdicts(prepost_ln, ideal, config)
    assert set(verdicts.values()) == {"holds"}, verdicts


def test_prepost_alpha_one_is_not_dropped(prepost):
    config, results = prepost
    broken = copy.deepcopy(results)
    pre = broken["forward-pre"]
    layers = _layers(pre)
    pre.curves["norm"][:] = 3.0 * np.sqrt(layers)
    alpha_one = [i for i, c in enumerate(pre.conditions) if c["alpha"] == 1.0]
    pre.curves["norm"][alpha_one] = 3.0  # only α = 1 breaks the law
    assert _verdicts(prepost_ln, broken, config)["preln-norm-grows-like-sqrt-l"] == "fails"
