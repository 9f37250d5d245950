"""The counter-based stream (relulab.engine.counter): Random123's known answers, a network's
draws independent of its neighbours (CPU and, where present, CUDA), and the law of the draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from relulab.engine import counter
from relulab.engine.counter import counter_normal, philox4x32
from relulab.engine.forward import forward_statistics
from relulab.engine.init import init_weight_stack

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _words(*hex_words: str) -> torch.Tensor:
    return torch.tensor([int(w, 16) for w in hex_words], dtype=torch.int64)


@pytest.mark.parametrize(
    ("counter_words", "key_words", "expected"),
    [  # Random123's kat_vectors for philox4x32_10
        (("0",) * 4, ("0",) * 2, ("6627e8d5", "e169c58d", "bc57ac4c", "9b00dbd8")),
        (("ffffffff",) * 4, ("ffffffff",) * 2, ("408f276d", "41c83b0e", "a20bc7c6", "6d5451fd")),
        (
            ("243f6a88", "85a308d3", "13198a2e", "03707344"),
            ("a4093822", "299f31d0"),
            ("d16cfe09", "94fdcceb", "5001e420", "24126ea1"),
        ),
    ],
)
@pytest.mark.parametrize("device", DEVICES)
def test_philox_matches_random123_known_answers(counter_words, key_words, expected, device):
    words = philox4x32(_words(*counter_words).to(device), _words(*key_words).to(device))
    assert [f"{int(w):08x}" for w in words.cpu()] == list(expected)


@pytest.mark.parametrize("device", DEVICES)
def test_a_networks_draws_do_not_depend_on_its_neighbours(device):
    alone = counter_normal([11], (37, 5), stream=2, dtype=torch.float64, device=device)
    for batch in ([11], [3, 11], [11, 0, 2**40, 5], list(range(200, 211))[:5] + [11]):
        drawn = counter_normal(batch, (37, 5), stream=2, dtype=torch.float64, device=device)
        assert torch.equal(drawn[batch.index(11)], alone[0])

    # a counter-example: one stateful generator for the batch gives network 11 other numbers
    # when a neighbour joins
    def shared(batch):
        g = torch.Generator(device=device).manual_seed(11)
        return torch.randn(len(batch), 37, 5, generator=g, device=device, dtype=torch.float64)

    assert not torch.equal(shared([3, 11])[1], shared([11])[0])


def test_the_pass_size_does_not_change_the_numbers(monkeypatch):
    whole = counter_normal([1, 2, 3], (101, 7), dtype=torch.float64)
    monkeypatch.setattr(counter, "COUNTER_BLOCK", 9)  # many passes, odd boundaries
    assert torch.equal(counter_normal([1, 2, 3], (101, 7), dtype=torch.float64), whole)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_draws_equal_the_cpu_draws():
    on_cpu = counter_normal([4, 9], (64, 64), stream=1, dtype=torch.float64)
    on_gpu = counter_normal([4, 9], (64, 64), stream=1, dtype=torch.float64, device="cuda")
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, rtol=1e-12, atol=1e-12)


def test_float32_is_the_rounded_float64_stream():
    exact = counter_normal([5], (50,), dtype=torch.float64)
    assert torch.equal(counter_normal([5], (50,), dtype=torch.float32), exact.float())


def test_the_draws_are_standard_normal_and_independent_across_seeds_and_streams():
    z = counter_normal([0, 1], (200_000,), dtype=torch.float64).numpy()
    other_stream = counter_normal([0], (200_000,), stream=1, dtype=torch.float64).numpy()[0]
    for sample in (z[0], z[1], other_stream):
        assert stats.kstest(sample, "norm").pvalue > 1e-3
    bound = 5 / np.sqrt(200_000)  # five standard errors of a correlation under independence
    assert abs(np.corrcoef(z[0], z[1])[0, 1]) < bound
    assert abs(np.corrcoef(z[0], other_stream)[0, 1]) < bound
    assert abs(np.corrcoef(z[0][:-1], z[0][1:])[0, 1]) < bound  # neighbouring positions
    # the two normals of one Box–Muller pair share a radius yet are independent: their squares
    # are uncorrelated; a pair that really depends on each other is caught by the same bound
    squares = z[0] ** 2
    assert abs(np.corrcoef(squares[0::2], squares[1::2])[0, 1]) < bound
    assert np.corrcoef(np.abs(z[0]), np.abs(z[0]) + 0.1 * np.abs(z[1]))[0, 1] > bound


def test_bad_seeds_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        counter_normal([-1], (3,))
    with pytest.raises(ValueError, match="at least one seed"):
        counter_normal([], (3,))


@pytest.mark.parametrize("device", DEVICES)
def test_weight_stacks_drawn_by_counter_ignore_the_batch(device):
    shapes = [(30, 20), (5, 30)]
    batch = init_weight_stack(shapes, 3, seeds=[7, 8, 9], rng="counter", device=device)
    alone = init_weight_stack(shapes, 1, seeds=[8], rng="counter", device=device)
    for (w, b), (w1, b1) in zip(batch, alone, strict=True):
        assert w.device.type == device
        assert torch.equal(w[1], w1[0]) and torch.equal(b[1], b1[0])
        assert not bool(b.any())


def test_counter_weight_stacks_have_the_schemes_variance():
    ((w, _),) = init_weight_stack([(400, 250)], 4, scheme="kaiming_normal", rng="counter")
    assert float(w.double().var() * 250) == pytest.approx(2.0, rel=0.02)
    ((w, _),) = init_weight_stack([(400, 250)], 2, scheme="normal", scale=0.1, rng="counter")
    assert float(w.double().std()) == pytest.approx(0.1, rel=0.02)
    with pytest.raises(ValueError, match="counter"):
        init_weight_stack([(4, 3)], 1, scheme="rai", rng="counter")


def test_forward_statistics_by_counter_ignore_the_batch_and_keep_the_law():
    x = torch.randn(40, 64, generator=torch.Generator().manual_seed(0))
    batch = forward_statistics(4, 128, 12, x, seeds=[0, 1, 2, 3], rng="counter")
    alone = forward_statistics(1, 128, 12, x, seeds=[2], rng="counter")
    np.testing.assert_array_equal(batch.ratio[2], alone.ratio[0])
    by_generator = forward_statistics(40, 128, 12, x, rng="generator")
    by_counter = forward_statistics(40, 128, 12, x, seeds=range(40), rng="counter")
    # the same law: the last layer's ratio over 40 networks each way (Welch's t)
    welch = stats.ttest_ind(by_generator.ratio[:, -1], by_counter.ratio[:, -1], equal_var=False)
    assert welch.pvalue > 1e-3
