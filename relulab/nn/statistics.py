r"""Activation statistics of ReLU-family units: one definition each, for the probe and the engine.

Axes. A tensor of pre-activations :math:`z` (or activations :math:`h`) has one *unit* axis (a
Linear output, a conv channel) and *sample* axes (the data points and, for convolutions, the
spatial positions, for sequences the tokens); every function names its sample axes explicitly
(``sample_dims``), and the unit axis is the **last axis left once the sample axes are
reduced**. The layouts in use:

* the engine's batched tensors ``(S, N, units)`` — network, sample, unit:
  ``sample_dims=BATCHED_SAMPLE_DIMS`` ``= (1,)``, results per network and unit ``(S, units)``;
* a convolution's tensors ``(N, units, *positions)``: ``sample_dims=module_sample_dims(z)``
  ``= (0, 2, 3, …)``, results per unit ``(units,)``;
* any tensor with its units on a given axis — a Linear layer's last axis at any rank, e.g. a
  sequence ``(N, T, d)``: ``sample_dims=sample_dims_except(z, unit_axis)``, results per unit.

Every statistic is a function of per-unit reductions over the samples — sample mean and
variance, maximum and minimum — so it is computed either from the whole tensor or from sums
accumulated batch by batch (:func:`sample_moments_from_sums`, :func:`unit_states_from_extremes`,
as :func:`relulab.probe.probe` does); the formula is the same function either way.

Definitions (seed ``000_…`` Liu, *Adding bias after ReLU*; seed ``001_…`` Liu, *single ReLU
neuron*; seed ``002_…`` Luther & Seung, *Sample variance decay*; seed ``004_…``,
*bias-mediated early linearization*):

* **unit states** (seed 001; seed 004 §5.3, Fig. 3C): *dead* if :math:`z \le 0` on every
  sample (the unit never fires and gets no gradient), *always on* if :math:`z > 0` on every
  sample (it is linear on the data; seed 001 says *hyperactive*), *balanced* (gating) otherwise.
  These names belong to activations with zero gradient for :math:`z \le 0` (ReLU, ReLU−b,
  ReLU6); for leaky and smooth ones (leaky ReLU, ELU, GELU, SiLU, tanh) the same masks are
  the *sign states* — never positive, always positive, mixed sign
  (:meth:`UnitStates.sign_fractions`): a leaky unit that never crosses zero still gets gradient;
* **Δ** (seed 000, §Representation collapse): the std over units of the per-unit sample mean;
* **sample mean / variance split** (seed 002 §2.2, eq. 9):
  :math:`m^2 = \sum_i \langle z_i\rangle^2`, :math:`v^2 = \sum_i \mathrm{Var}_t z_i`,
  :math:`r = \sqrt{m^2/v^2}`;
* **centring shift** (seed 000, §Trick): :math:`b_i = \langle \mathrm{ReLU}(z_i)\rangle`, the
  per-unit shift that makes :math:`\mathrm{ReLU}(z_i) - b_i` zero-mean on the data;
* **effective rank** (seed 004 §3, eq. 1, without its stray leading minus sign):
  :math:`\exp(-\sum_i \bar s_i \ln \bar s_i)`, :math:`\bar s = s/\sum_j s_j`;
* **R²** of a least-squares readout (seed 004 §6.2 and appendix D).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "BATCHED_SAMPLE_DIMS",
    "UNIT_STATE_CODES",
    "UnitStates",
    "centring_shift",
    "delta",
    "delta_from_means",
    "effective_rank",
    "effective_rank_cap",
    "effective_ranks",
    "mean_variance_ratio",
    "module_sample_dims",
    "r_squared",
    "relative_delta",
    "sample_moments",
    "sample_moments_from_sums",
    "sample_dims_except",
    "sample_variance_fraction",
    "squared_mean_and_variance",
    "unit_states",
    "unit_states_from_extremes",
]

#: The sample axis of the engine's batched ``(S, N, units)`` tensors.
BATCHED_SAMPLE_DIMS: tuple[int, ...] = (1,)

#: Integer codes of the unit states (seed 001 calls an always-on neuron *hyperactive*).
UNIT_STATE_CODES = {"dead": 0, "balanced": 1, "always_on": 2}


def module_sample_dims(tensor: Tensor) -> tuple[int, ...]:
    """Sample axes of a module's activation ``(N, units, *positions)``: all but the unit axis 1.

    Args:
        tensor: an activation of at least 2 dimensions.

    Returns:
        ``(0, 2, 3, …, tensor.dim() - 1)``.

    Example:
        >>> module_sample_dims(torch.zeros(8, 16, 5, 5))
        (0, 2, 3)
    """
    return (0,) + tuple(range(2, tensor.dim()))


def sample_dims_except(tensor: Tensor, unit_axis: int) -> tuple[int, ...]:
    """Sample axes of an activation whose units lie on ``unit_axis``: every other axis.

    Args:
        tensor: an activation of at least 2 dimensions.
        unit_axis: the unit axis (negative counts from the end).

    Returns:
        The other axes, ascending.

    Example:
        >>> sample_dims_except(torch.zeros(8, 10, 64), -1)  # a sequence (N, T, d): units d
        (0, 1)
        >>> sample_dims_except(torch.zeros(8, 16, 5, 5), 1)  # a convolution: module_sample_dims
        (0, 2, 3)
    """
    axis = unit_axis % tensor.dim()
    return tuple(d for d in range(tensor.dim()) if d != axis)


# ---------------------------------------------------------------------------------------------
# Unit states.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UnitStates:
    """Boolean masks per unit: ``dead`` (:math:`z \\le 0` on every sample) and ``always_on``
    (:math:`z > 0` on every sample); ``balanced`` is the rest.

    Example:
        >>> dead, always_on = torch.tensor([True, False]), torch.tensor([False, False])
        >>> states = UnitStates(dead, always_on)
        >>> states.balanced.tolist(), states.codes().tolist()
        ([False, True], [0.0, 1.0])
    """

    dead: Tensor
    always_on: Tensor

    @property
    def balanced(self) -> Tensor:
        """Units that fire on some samples and not on others (gating)."""
        return ~(self.dead | self.always_on)

    def codes(self, dtype: torch.dtype = torch.float32) -> Tensor:
        """The state of every unit as a code of :data:`UNIT_STATE_CODES`, in ``dtype``."""
        code = torch.full(
            self.dead.shape, UNIT_STATE_CODES["balanced"], dtype=dtype, device=self.dead.device
        )
        code = torch.where(self.always_on, UNIT_STATE_CODES["always_on"], code)
        return torch.where(self.dead, UNIT_STATE_CODES["dead"], code)

    def fractions(self, dtype: torch.dtype = torch.float64) -> dict[str, Tensor]:
        """Fraction of units in each state over the last axis (the units), in ``dtype``;
        the balanced fraction is the rest, :math:`1 - f_{dead} - f_{on}`."""
        dead = self.dead.to(dtype).mean(dim=-1)
        always_on = self.always_on.to(dtype).mean(dim=-1)
        return {
            "dead_fraction": dead,
            "always_on_fraction": always_on,
            "balanced_fraction": 1.0 - dead - always_on,
        }

    def sign_fractions(self, dtype: torch.dtype = torch.float64) -> dict[str, Tensor]:
        """The same masks named for what they are on an activation with gradient below zero
        (leaky ReLU, ELU, GELU, SiLU, tanh): ``never_positive_fraction`` (:math:`z \\le 0` on
        every sample — not dead: such a unit still gets gradient), ``always_positive_fraction``
        and ``mixed_sign_fraction``.

        Example:
            >>> states = UnitStates(torch.tensor([True, False]), torch.tensor([False, False]))
            >>> fractions = states.sign_fractions()
            >>> float(fractions["never_positive_fraction"]), float(fractions["mixed_sign_fraction"])
            (0.5, 0.5)
        """
        fractions = self.fractions(dtype)
        return {
            "never_positive_fraction": fractions["dead_fraction"],
            "always_positive_fraction": fractions["always_on_fraction"],
            "mixed_sign_fraction": fractions["balanced_fraction"],
        }


def unit_states_from_extremes(z_min: Tensor, z_max: Tensor) -> UnitStates:
    r"""Unit states from each unit's smallest and largest pre-activation over the samples.

    .. math::
        \text{dead}_i = [\max_t z_{ti} \le 0],\qquad
        \text{always on}_i = [\min_t z_{ti} > 0].

    A NaN extreme makes a unit neither dead nor always on (balanced). Seeds ``001_…`` (neuron
    states) and ``004_…`` §5.3 (unit fractions over training).

    Args:
        z_min: per-unit minimum of the pre-activation over the samples.
        z_max: per-unit maximum, same shape.

    Returns:
        :class:`UnitStates` with masks of that shape.

    Example:
        >>> lowest, highest = torch.tensor([-2.0, 1.0, -1.0]), torch.tensor([-1.0, 3.0, 1.0])
        >>> s = unit_states_from_extremes(lowest, highest)
        >>> s.dead.tolist(), s.always_on.tolist(), s.balanced.tolist()
        ([True, False, False], [False, True, False], [False, False, True])
    """
    return UnitStates(dead=z_max <= 0, always_on=z_min > 0)


def unit_states(z: Tensor, sample_dims: tuple[int, ...]) -> UnitStates:
    """Unit states of pre-activations ``z`` over the ``sample_dims`` axes (module docstring).

    The same as :func:`unit_states_from_extremes` on ``z.amin(sample_dims)`` and
    ``z.amax(sample_dims)``.

    Args:
        z: pre-activations, e.g. ``(S, N, units)`` or ``(N, units, *positions)``.
        sample_dims: the sample axes to reduce (:data:`BATCHED_SAMPLE_DIMS`,
            :func:`module_sample_dims`).

    Returns:
        :class:`UnitStates`, masks shaped like ``z`` without the sample axes.

    Example:
        >>> z = torch.tensor([[[1.0, -1.0], [2.0, -3.0]]])  # S=1, N=2, units=2
        >>> unit_states(z, BATCHED_SAMPLE_DIMS).fractions()["dead_fraction"]
        tensor([0.5000], dtype=torch.float64)
    """
    return unit_states_from_extremes(z.amin(dim=sample_dims), z.amax(dim=sample_dims))


# ---------------------------------------------------------------------------------------------
# Sample mean and variance.
# ---------------------------------------------------------------------------------------------
def sample_moments(u: Tensor, sample_dims: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    r"""Per-unit sample mean :math:`\langle u_i\rangle_t` and (biased) sample variance
    :math:`\mathrm{Var}_t u_i = \langle u_i^2\rangle_t - \langle u_i\rangle_t^2`.

    Args:
        u: pre-activations.
        sample_dims: the sample axes.

    Returns:
        ``(mean, variance)``, each shaped like ``u`` without the sample axes.

    Example:
        >>> sample_moments(torch.tensor([[1.0], [3.0]]), (0,))
        (tensor([2.]), tensor([1.]))
    """
    return u.mean(dim=sample_dims), u.var(dim=sample_dims, unbiased=False)


def sample_moments_from_sums(
    total: Tensor, total_square: Tensor, count: int
) -> tuple[Tensor, Tensor]:
    r"""Per-unit sample mean and variance from accumulated sums :math:`\sum_t u` and
    :math:`\sum_t u^2` over ``count`` samples: :math:`\mu = \Sigma u / n`,
    :math:`\mathrm{Var} = \max(\Sigma u^2/n - \mu^2, 0)` (the clamp absorbs rounding).

    Args:
        total: per-unit sum of ``u``.
        total_square: per-unit sum of ``u²``.
        count: the number of samples (times positions) summed.

    Returns:
        ``(mean, variance)`` per unit.

    Example:
        >>> sample_moments_from_sums(torch.tensor([4.0]), torch.tensor([10.0]), 2)
        (tensor([2.]), tensor([1.]))
    """
    mean = total / count
    return mean, (total_square / count - mean.square()).clamp_min(0)


def squared_mean_and_variance(
    mean: Tensor, variance: Tensor, reduce: Literal["sum", "mean"] = "sum"
) -> tuple[Tensor, Tensor]:
    r"""The split of the second moment into squared sample mean and sample variance over units
    (seed ``002_…`` §2.2): :math:`m^2 = \sum_i \langle u_i\rangle^2`,
    :math:`v^2 = \sum_i \mathrm{Var}_t u_i` (``reduce="sum"``, the seed's), or the means over
    units (``reduce="mean"``); the units are the last axis.

    Args:
        mean: per-unit sample means, units on the last axis.
        variance: per-unit sample variances, same shape.
        reduce: ``"sum"`` or ``"mean"`` over the units.

    Returns:
        ``(m², v²)`` with the unit axis reduced.

    Example:
        >>> squared_mean_and_variance(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))
        (tensor(5.), tensor(2.))
    """
    if reduce == "sum":
        return mean.square().sum(dim=-1), variance.sum(dim=-1)
    if reduce == "mean":
        return mean.square().mean(dim=-1), variance.mean(dim=-1)
    raise ValueError(f"reduce must be 'sum' or 'mean', got {reduce!r}")


def mean_variance_ratio(mean_square: Tensor, variance: Tensor) -> Tensor:
    r"""The sample-mean/variance ratio :math:`r = \sqrt{m^2/v^2}` (seed ``002_…`` eq. 9);
    :math:`+\infty` where :math:`v^2 = 0`. Sums or means over units give the same :math:`r`.

    Args:
        mean_square: :math:`m^2` (a tensor, any shape).
        variance: :math:`v^2`, same shape.

    Returns:
        :math:`r`, same shape and dtype.

    Example:
        >>> mean_variance_ratio(torch.tensor([4.0, 1.0]), torch.tensor([1.0, 0.0]))
        tensor([2., inf])
    """
    return torch.where(variance > 0, (mean_square / variance).sqrt(), torch.inf)


def sample_variance_fraction(mean_square: Tensor, variance: Tensor) -> Tensor:
    r"""The share of the second moment that is sample variance, :math:`v^2/(m^2 + v^2)`;
    NaN where both vanish.

    Args:
        mean_square: :math:`m^2`.
        variance: :math:`v^2`, same shape.

    Returns:
        The fraction, same shape and dtype.

    Example:
        >>> sample_variance_fraction(torch.tensor(3.0), torch.tensor(1.0))
        tensor(0.2500)
    """
    total = mean_square + variance
    return torch.where(total > 0, variance / total, torch.nan)


# ---------------------------------------------------------------------------------------------
# Δ and the centring shift.
# ---------------------------------------------------------------------------------------------
def delta_from_means(unit_means: Tensor) -> Tensor:
    r"""Δ from per-unit sample means: their (population) std over the units, the last axis.

    Args:
        unit_means: :math:`\langle h_i\rangle_t`, units on the last axis.

    Returns:
        Δ with the unit axis reduced.

    Example:
        >>> delta_from_means(torch.tensor([1.0, 3.0]))
        tensor(1.)
    """
    return unit_means.std(dim=-1, unbiased=False)


def relative_delta(unit_means: Tensor, unit_variances: Tensor) -> Tensor:
    r"""Δ in units of how much the samples vary within a unit:
    :math:`\Delta / \sqrt{\langle \mathrm{Var}_t h_i\rangle_i}` (relulab's normalisation, so
    one threshold fits every scale; :class:`relulab.probe.Monitor` reports the same
    ``delta_relative``); NaN for 0/0, :math:`+\infty` for Δ > 0 over no spread.

    Args:
        unit_means: :math:`\langle h_i\rangle_t`, units on the last axis.
        unit_variances: :math:`\mathrm{Var}_t h_i`, same shape.

    Returns:
        The ratio, with the unit axis reduced.

    Example:
        >>> relative_delta(torch.tensor([1.0, 3.0]), torch.tensor([4.0, 4.0]))
        tensor(0.5000)
    """
    spread = delta_from_means(unit_means)
    scale = unit_variances.mean(dim=-1).sqrt()
    ratio = spread / scale
    return torch.where(scale > 0, ratio, torch.where(spread > 0, torch.inf, torch.nan))


def delta(h: Tensor, sample_dims: tuple[int, ...]) -> Tensor:
    r"""Δ (seed ``000_…``, §Representation collapse): the std over units of the per-unit sample
    mean, :math:`\Delta = \mathrm{std}_i\,\langle h_{ti}\rangle_t`.

    Args:
        h: activations or outputs, e.g. ``(S, N, units)``.
        sample_dims: the sample axes; the unit axis is the last one left.

    Returns:
        Δ, e.g. one value per network ``(S,)``.

    Example:
        >>> h = torch.tensor([[[0.0, 2.0, 4.0, 6.0], [2.0, 4.0, 6.0, 8.0]]])  # means 1, 3, 5, 7
        >>> delta(h, BATCHED_SAMPLE_DIMS)
        tensor([2.2361])
    """
    return delta_from_means(h.mean(dim=sample_dims))


def centring_shift(z: Tensor, sample_dims: tuple[int, ...], keepdim: bool = False) -> Tensor:
    r"""The per-unit shift :math:`b_i = \langle \mathrm{ReLU}(z_i)\rangle_t` that centres
    :math:`\mathrm{ReLU}(z_i) - b_i` on the data (seed ``000_…``'s ReLU−b, measured per unit).

    For :math:`z \sim N(0, s^2)` its expectation is :math:`s/\sqrt{2\pi}`
    (:func:`relulab.init.analytic_relu_shift`).

    Args:
        z: pre-activations.
        sample_dims: the sample axes.
        keepdim: keep the reduced axes (size 1), to broadcast against ``z``.

    Returns:
        The shifts, one per unit (and network).

    Example:
        >>> centring_shift(torch.tensor([[-1.0, 2.0], [3.0, 4.0]]), (0,))
        tensor([1.5000, 3.0000])
    """
    return torch.relu(z).mean(dim=sample_dims, keepdim=keepdim)


# ---------------------------------------------------------------------------------------------
# Effective rank and R².
# ---------------------------------------------------------------------------------------------
def effective_rank(matrix: Tensor | np.ndarray, centred: bool = False) -> float:
    r"""Effective rank :math:`\exp(-\sum_i \bar s_i \ln \bar s_i)`, :math:`\bar s = s/\sum_j s_j`,
    of the singular values :math:`s` of a samples × features matrix (seed ``004_…`` §3, eq. 1;
    Roy & Vetterli 2007), in float64.

    Uncentred by default; ``centred=True`` subtracts the per-feature mean first, which caps it
    at N − 1. 0 for a zero matrix.

    Args:
        matrix: 2-D, samples × features.
        centred: subtract the column means first.

    Returns:
        The effective rank, between 1 and min(N, features) (or 0).

    Example:
        >>> round(effective_rank(torch.eye(5)), 9)
        5.0
    """
    values = torch.as_tensor(matrix, dtype=torch.float64)
    if values.dim() != 2:
        raise ValueError(f"effective rank needs a 2-D matrix, got shape {tuple(values.shape)}")
    if centred:
        values = values - values.mean(dim=0, keepdim=True)
    singular = torch.linalg.svdvals(values)
    total = singular.sum()
    if total <= 0:
        return 0.0
    p = singular / total
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def effective_rank_cap(samples: int, features: int, centred: bool = False) -> int:
    r"""The largest value :func:`effective_rank` can take on a samples × features matrix:
    :math:`\min(N, \text{features})`, or :math:`\min(N - 1, \text{features})` centred (the
    column means removed, the N rows span at most N − 1 directions). A reading near it says
    more about N than about the representation: flattening each sequence ``(T, d)`` of a
    transformer into one row of T·d features puts every layer at N − 1.

    Args:
        samples: N, the rows.
        features: the columns.
        centred: as in :func:`effective_rank`.

    Returns:
        The cap (0 for a centred single row).

    Example:
        >>> effective_rank_cap(32, 16 * 64, centred=True), effective_rank_cap(2000, 64)
        (31, 64)
    """
    return max(0, min(samples - int(centred), features))


def effective_ranks(stack: Tensor, centred: bool = False) -> Tensor:
    """:func:`effective_rank` of every matrix of a stack ``(*batch, N, features)``, e.g. one per
    network of an engine trace ``(S, N, units)``.

    Args:
        stack: at least 2-D; the last two axes are samples × features.
        centred: as in :func:`effective_rank`.

    Returns:
        float64 tensor of shape ``batch``.

    Example:
        >>> effective_ranks(torch.eye(3).expand(2, 3, 3)).round(decimals=9)
        tensor([3., 3.], dtype=torch.float64)
    """
    matrices = stack.detach().reshape(-1, *stack.shape[-2:]).cpu()
    ranks = [effective_rank(matrix, centred) for matrix in matrices]
    return torch.tensor(ranks, dtype=torch.float64).reshape(stack.shape[:-2])


def r_squared(representation: Tensor | np.ndarray, features: Tensor | np.ndarray) -> float:
    r"""In-sample :math:`R^2` of a least-squares fit (with intercept) from a representation to
    each feature column, averaged over columns (seed ``004_…`` appendix D):
    :math:`1 - \sum_t (y_t - \hat y_t)^2 / \sum_t (y_t - \bar y)^2`; NaN for a constant column.

    Args:
        representation: ``(N, units)``.
        features: ``(N, k)``.

    Returns:
        The mean :math:`R^2` over the k columns.

    Example:
        >>> x = np.random.default_rng(0).normal(size=(20, 2))
        >>> round(r_squared(x, 3 * x[:, :1] - 1), 12)
        1.0
    """
    representation, features = (
        np.asarray(v.detach().cpu() if isinstance(v, Tensor) else v, dtype=np.float64)
        for v in (representation, features)
    )
    design = np.hstack([representation, np.ones((representation.shape[0], 1))])
    coef, *_ = np.linalg.lstsq(design, features, rcond=None)
    residual = features - design @ coef
    total = ((features - features.mean(axis=0)) ** 2).sum(axis=0)
    return float(np.mean(1 - (residual**2).sum(axis=0) / np.where(total > 0, total, np.nan)))
