r"""Counter-based random numbers: each network's draws a pure function of its seed and position.

A stateful generator (``torch.Generator``) hands out numbers in sequence, so drawing S networks'
weights on a device means S generators and S launches per tensor, or one generator whose
numbers then depend on how many networks share the batch. A *counter-based* generator has no
state: the value at position :math:`j` of stream :math:`t` of network :math:`s` is a fixed
function :math:`f_{\text{key}=s}(j, t)`, here Philox-4×32-10 (Salmon et al. 2011, *Parallel
random numbers: as easy as 1, 2, 3*, SC'11; the generator of cuRAND and of JAX's ``threefry``
sibling), computed with torch integer operations on whatever device the output lives on. So

* network :math:`s`'s weights are the same whether it is drawn alone or beside thousands of
  others, on the CPU or a GPU (the integer words are identical; the normals agree to the last
  few ulps of the device's ``log``/``cos``);
* every network of a batch is drawn by the same few elementwise kernels on the device, with no
  host round trip and no per-network launch.

Each Philox block (counter :math:`(j_{lo}, j_{hi}, t_{lo}, t_{hi})`, key :math:`(s_{lo},
s_{hi})`) gives four 32-bit words; two 53-bit uniforms are formed from them and turned into two
standard normals by the Box–Muller transform, in float64, then cast (so float32 and float64
tensors start from the same numbers, as the engine's other draws do). The 32×32-bit products are
taken in int64, whose wrap-around keeps the low 64 bits exact; the Random123 known-answer
vectors test it.

These numbers are *other* numbers than ``torch.randn``'s for the same seed: the counter stream
is an opt-in path (``rng="counter"``) and the seeds' per-network generators stay the default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import overload

import torch
from torch import Tensor

__all__ = ["COUNTER_BLOCK", "RNGS", "counter_normal", "philox4x32"]

#: Where the engine's random numbers come from (``rng=`` of
#: :func:`~relulab.engine.forward.forward_statistics` and
#: :func:`~relulab.engine.init.init_weight_stack`): each network's ``torch.Generator`` on the
#: CPU (the default), or this module's counter-based stream on the device
RNGS = ("generator", "counter")

_MASK32 = 0xFFFFFFFF
_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_WEYL = (0x9E3779B9, 0xBB67AE85)
#: Philox blocks formed per pass when drawing (bounds the int64 temporaries: 2²² blocks are
#: 8 M normals, ≈ 0.5 GB of temporaries)
COUNTER_BLOCK = 1 << 22


def _mulhilo(a: Tensor, multiplier: int) -> tuple[Tensor, Tensor]:
    """High and low 32-bit words of ``a · multiplier`` (``a`` < 2³², int64; the product wraps
    modulo 2⁶⁴, which leaves both words exact)."""
    product = a * multiplier
    return (product >> 32) & _MASK32, product & _MASK32


def philox4x32(counter: Tensor, key: Tensor, rounds: int = 10) -> Tensor:
    r"""The Philox-4×32 bijection of Salmon et al. (2011): ``counter`` ``(..., 4)`` under ``key``
    ``(..., 2)`` (int64 holding 32-bit words, broadcast against each other) to four 32-bit
    words ``(..., 4)``.

    Each round maps :math:`(c_0, c_1, c_2, c_3)` to :math:`(\mathrm{hi}(M_1 c_2) \oplus c_1
    \oplus k_0,\ \mathrm{lo}(M_1 c_2),\ \mathrm{hi}(M_0 c_0) \oplus c_3 \oplus k_1,\
    \mathrm{lo}(M_0 c_0))` and the key is bumped by the Weyl constants.

    Args:
        counter: ``(..., 4)`` int64, each word in :math:`[0, 2^{32})`.
        key: ``(..., 2)`` int64, each word in :math:`[0, 2^{32})`.
        rounds: 10 for Philox-4×32-10 (the Random123 default).

    Returns:
        ``(..., 4)`` int64 words in :math:`[0, 2^{32})`.

    Example:
        >>> words = philox4x32(torch.zeros(4, dtype=torch.int64), torch.zeros(2, dtype=torch.int64))
        >>> [f"{int(w):08x}" for w in words]  # Random123's known answer
        ['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']
    """
    c0, c1, c2, c3 = counter.unbind(-1)
    k0, k1 = key.unbind(-1)
    for round_index in range(rounds):
        if round_index:
            k0 = (k0 + _WEYL[0]) & _MASK32
            k1 = (k1 + _WEYL[1]) & _MASK32
        hi0, lo0 = _mulhilo(c0, _MULTIPLIERS[0])
        hi1, lo1 = _mulhilo(c2, _MULTIPLIERS[1])
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return torch.stack((c0, c1, c2, c3), dim=-1)


@overload
def _split(values: Tensor) -> tuple[Tensor, Tensor]: ...
@overload
def _split(values: int) -> tuple[int, int]: ...
def _split(values: Tensor | int) -> tuple[Tensor | int, Tensor | int]:
    """Low and high 32-bit words of non-negative int64 ``values`` (a tensor or an int)."""
    return values & _MASK32, (values >> 32) & _MASK32


def _uniform53(high: Tensor, low: Tensor) -> Tensor:
    """A float64 uniform on :math:`(0, 1)` from two 32-bit words: 53 random bits, centred in
    their cell so it is never 0 or 1."""
    bits = (high >> 5) * (1 << 26) + (low >> 6)
    return (bits.double() + 0.5) * 2.0**-53


def _normal_blocks(keys: Tensor, first: int, count: int, stream: int) -> Tensor:
    """Standard normals ``(S, 2 · count)`` from Philox blocks ``first … first + count − 1`` of
    ``stream`` under each network's key ``(S, 2)``."""
    index = torch.arange(first, first + count, dtype=torch.int64, device=keys.device)
    index_lo, index_hi = _split(index)
    stream_lo, stream_hi = _split(stream)
    counter = torch.stack(
        (
            index_lo,
            index_hi,
            torch.full_like(index, stream_lo),
            torch.full_like(index, stream_hi),
        ),
        dim=-1,
    )  # (count, 4)
    words = philox4x32(counter.unsqueeze(0), keys.unsqueeze(1))  # (S, count, 4)
    u1 = _uniform53(words[..., 0], words[..., 1])
    u2 = _uniform53(words[..., 2], words[..., 3])
    radius = torch.sqrt(-2.0 * torch.log(u1))
    angle = (2.0 * math.pi) * u2
    return torch.stack((radius * torch.cos(angle), radius * torch.sin(angle)), dim=-1).flatten(1)


def counter_normal(
    seeds: Sequence[int] | Tensor,
    shape: Sequence[int],
    stream: int = 0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    out: Tensor | None = None,
) -> Tensor:
    r"""Standard normal values ``(S, *shape)``, network ``s``'s a pure function of
    ``(seeds[s], stream, position)``: Philox-4×32-10 keyed by the seed, Box–Muller in float64.

    Network ``s``'s values do not depend on the other seeds, on S, on the device (the Philox
    words are identical everywhere; the float64 normals differ at most in the last ulps of
    the device's ``log``/``sin``/``cos``) or on ``dtype`` beyond the final rounding. Use a
    different ``stream`` per tensor (e.g. the layer index) so a network's tensors are
    independent of each other.

    Args:
        seeds: one non-negative 64-bit seed per network.
        shape: each network's tensor shape.
        stream: which of a network's independent streams (a non-negative 64-bit integer).
        dtype: the output dtype (drawn in float64, then cast).
        device: where the numbers are computed and stored.
        out: an ``(S, *shape)`` tensor to fill instead of a new one.

    Returns:
        ``(S, *shape)`` standard normal values.

    Example:
        >>> both = counter_normal([3, 7], (2, 3))
        >>> alone = counter_normal([7], (2, 3))
        >>> torch.equal(both[1], alone[0])  # a network's draws ignore its neighbours
        True
    """
    keys = torch.as_tensor(seeds, dtype=torch.int64, device=device).reshape(-1)
    if keys.numel() == 0:
        raise ValueError("counter_normal needs at least one seed")
    if bool((keys < 0).any()) or stream < 0:
        raise ValueError("seeds and stream must be non-negative 64-bit integers")
    keys = torch.stack(_split(keys), dim=-1)
    n_values = math.prod(shape)
    if out is None:
        out = torch.empty((keys.shape[0], *shape), dtype=dtype, device=device)
    elif tuple(out.shape) != (keys.shape[0], *shape):
        raise ValueError(f"out has shape {tuple(out.shape)}, expected {(keys.shape[0], *shape)}")
    flat = out.view(keys.shape[0], n_values)
    n_blocks = (n_values + 1) // 2
    per_pass = max(1, COUNTER_BLOCK // keys.shape[0])
    for first in range(0, n_blocks, per_pass):
        count = min(per_pass, n_blocks - first)
        values = _normal_blocks(keys, first, count, stream)
        start = 2 * first
        stop = min(n_values, start + values.shape[1])
        flat[:, start:stop] = values[:, : stop - start].to(dtype)
    return out
