r"""S single-neuron networks (seed ``001_…``) trained in one batched computation.

For network :math:`s` and inputs :math:`x_n` (shared) with targets :math:`y_n` (shared or per
network):

.. math::
    z_{sn} = w_{1s} x_n + b_{1s}\ \text{(standard)}\quad\text{or}\quad
    z_{sn} = w_{1s}(x_n + b'_s)\ \text{(reparam)},\qquad
    f_{sn} = w_{2s}\,\sigma(z_{sn}) + b_{2s},\qquad
    L_s = \frac1N \sum_n (f_{sn} - y_{sn})^2 .

The gradients are written out by hand (one fused pass over the ``S×N`` array instead of an
autograd graph); ``tests/engine/test_engine_single_neuron.py`` checks them against autograd. With
:math:`\delta_{sn} = 2 (f_{sn} - y_{sn}) / N` and
:math:`e_{sn} = \delta_{sn} w_{2s} \sigma'(z_{sn})`:
:math:`\partial_{w_2} L = \sum_n \delta\,\sigma(z)`, :math:`\partial_{b_2} L = \sum_n \delta`,
standard: :math:`\partial_{w_1} L = \sum_n e\,x`, :math:`\partial_{b_1} L = \sum_n e`;
reparam: :math:`\partial_{w_1} L = \sum_n e\,(x + b')`, :math:`\partial_{b'} L = w_1 \sum_n e`.

**Closed-form sums for piecewise-linear activations.** For ReLU, leaky ReLU and linear neurons
(:attr:`~relulab.nn.activations.Activation.slopes` ``= (p, q)``) the output is affine in
:math:`x` on each side of the kink, and the kink splits the *sorted* inputs into a prefix and a
suffix. Every sum above is then a difference of prefix sums of :math:`1, x, x^2, y, xy, y^2`,
precomputed once in float64: on a side :math:`R` with slope :math:`s_R`, the residual is
:math:`r = \alpha_R x + \beta_R - y` with :math:`\alpha_R = w_2 s_R w_1` and
:math:`\beta_R = w_2 s_R b_1 + b_2` (reparam: :math:`\beta_R = w_2 s_R w_1 b' + b_2`), so
:math:`\sum_R r = \alpha_R S_x + \beta_R S_1 - S_y`,
:math:`\sum_R r x = \alpha_R S_{xx} + \beta_R S_x - S_{xy}` and
:math:`\sum_R r^2 = \alpha_R^2 S_{xx} + 2\alpha_R\beta_R S_x + \beta_R^2 S_1
- 2\alpha_R S_{xy} - 2\beta_R S_y + S_{yy}`. A step costs :math:`O(S \log N)` instead of
:math:`O(SN)` (``method="prefix"``, the default for these activations). The split point is found
by a binary search and then confirmed with the very pre-activation :math:`z` the direct path
computes, so both paths put every input on the same side of the kink; the sums are taken in
float64 (more accurate than the direct float32 sums; absolute error ≈ 1e-16 · the sums'
magnitude). ``method="direct"`` keeps the elementwise pass, needed for smooth activations.

Neuron state over the data (seed 001): *hyperactive* if :math:`z > 0` on every input, *dead* if
:math:`z \le 0` on every input (output and gradient are zero there), else *balanced* — the unit
states of :mod:`relulab.nn.statistics` (where *hyperactive* is called *always on*). Because
:math:`z` is affine in :math:`x`, the extremes sit at the smallest and largest input, so
:func:`~relulab.nn.statistics.unit_states` runs on those two inputs only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from relulab.nn.activations import get_activation
from relulab.nn.single_neuron import Parameterisation
from relulab.nn.statistics import UNIT_STATE_CODES, unit_states

__all__ = ["BatchedSingleNeuron", "STATE_CODES"]

#: Seed 001's names for :data:`relulab.nn.statistics.UNIT_STATE_CODES`.
STATE_CODES = {
    "dead": UNIT_STATE_CODES["dead"],
    "balanced": UNIT_STATE_CODES["balanced"],
    "hyperactive": UNIT_STATE_CODES["always_on"],
}


def _column(
    values: Sequence[float] | Tensor, dtype: torch.dtype, device: torch.device | str
) -> Tensor:
    return torch.as_tensor(values, dtype=dtype, device=device).reshape(-1).clone()


SumMethod = Literal["auto", "direct", "prefix"]

#: Inputs on each side of the kink checked with the direct pre-activation, around the binary
#: search's split point (rounding can move the split by at most a point or two).
_SPLIT_WINDOW = 2


class _SortedPrefixSums:
    """Prefix sums of 1, x, x², y, xy, y² over the inputs sorted by x, in float64."""

    def __init__(self, x: Tensor, y: Tensor) -> None:
        order = torch.argsort(x)
        self.x_sorted = x[order]
        xs = self.x_sorted.double()
        ys = y[:, order].double()

        def prefix(values: Tensor) -> Tensor:
            zero = values.new_zeros(values.shape[:-1] + (1,))
            return torch.cat([zero, values.cumsum(-1)], dim=-1)

        self.n_points = xs.shape[0]
        self.xs64 = xs
        self.x, self.xx = prefix(xs), prefix(xs * xs)
        self.y, self.xy, self.yy = prefix(ys), prefix(xs * ys), prefix(ys * ys)

    def between(self, lo: Tensor, hi: Tensor) -> dict[str, Tensor]:
        """Sums over the sorted inputs ``lo ≤ n < hi``, per network (``lo``, ``hi``: (S,))."""
        sums = {"1": (hi - lo).double()}
        for name in ("x", "xx"):
            table = getattr(self, name)
            sums[name] = table[hi] - table[lo]
        for name in ("y", "xy", "yy"):
            table = getattr(self, name).expand(lo.shape[0], -1)
            sums[name] = (
                table.gather(1, hi.unsqueeze(1)) - table.gather(1, lo.unsqueeze(1))
            ).squeeze(1)
        return sums


class BatchedSingleNeuron:
    """S independent single-neuron networks on shared inputs (module docstring); a
    :class:`~relulab.engine.BatchedProblem` for :func:`~relulab.engine.train`, its one parameter
    tensor :attr:`theta` ``(S, 4)`` holding ``w1, b1, w2, b2``.

    Args:
        x: inputs ``(N,)``.
        y: targets ``(N,)`` or per network ``(S, N)``.
        w1: per network (or broadcast sequences of length S); likewise ``b1``, ``w2``, ``b2``.
        b1: the hidden bias (``b'`` in the reparameterisation).
        w2: the output weight.
        b2: the output bias.
        activation: ``relu``, ``silu``, ``tanh`` or ``linear``.
        parameterisation: ``"standard"`` or ``"reparam"``.
        method: how the sums over the inputs are taken: ``"prefix"`` (closed-form prefix sums,
            piecewise-linear activations only), ``"direct"`` (one elementwise pass) or
            ``"auto"`` (prefix where the activation allows it).

    Example:
        >>> x = torch.linspace(-1, 1, 50)
        >>> neurons = BatchedSingleNeuron(x, torch.relu(x), w1=[1.0, 1.0], b1=[0.0, 2.0],
        ...                               w2=[1.0, 1.0], b2=[0.0, 0.0])
        >>> [k for code in neurons.state().tolist() for k, v in STATE_CODES.items() if v == code]
        ['balanced', 'hyperactive']
    """

    param_names = ("w1", "b1", "w2", "b2")

    def __init__(
        self,
        x: Tensor,
        y: Tensor,
        w1: Sequence[float] | Tensor,
        b1: Sequence[float] | Tensor,
        w2: Sequence[float] | Tensor,
        b2: Sequence[float] | Tensor,
        activation: str = "relu",
        parameterisation: Parameterisation = "standard",
        method: SumMethod = "auto",
    ) -> None:
        if x.dim() != 1:
            raise ValueError(f"x must be 1-D (N,), got shape {tuple(x.shape)}")
        dtype, device = x.dtype, x.device
        columns = [_column(v, dtype, device) for v in (w1, b1, w2, b2)]
        self.n_networks = columns[0].shape[0]
        if any(c.shape != (self.n_networks,) for c in columns):
            raise ValueError("w1, b1, w2, b2 must all have one entry per network")
        # One (S, 4) tensor: the optimiser then makes one pass per step instead of four.
        self.theta = torch.stack(columns, dim=1)
        self.params = [self.theta]
        if y.shape not in ((x.shape[0],), (self.n_networks, x.shape[0])):
            raise ValueError(
                f"y must have shape (N,) or (S, N); got {tuple(y.shape)} for N={x.shape[0]}"
            )
        if parameterisation not in ("standard", "reparam"):
            raise ValueError(
                f"parameterisation must be 'standard' or 'reparam', got {parameterisation!r}"
            )
        self.x = x
        self.y = y if y.dim() == 2 else y.unsqueeze(0)
        self.activation = get_activation(activation)
        self.parameterisation = parameterisation
        self.x_min, self.x_max = x.min(), x.max()
        self.slopes = self.activation.slopes
        if method not in ("auto", "direct", "prefix"):
            raise ValueError(f"method must be 'auto', 'direct' or 'prefix', got {method!r}")
        if method == "prefix" and self.slopes is None:
            raise ValueError(
                f"method 'prefix' needs a piecewise-linear activation, not {activation}"
            )
        use_prefix = method == "prefix" or (method == "auto" and self.slopes is not None)
        self.method = "prefix" if use_prefix else "direct"
        self._sums = _SortedPrefixSums(x, self.y) if use_prefix else None

    def column(self, name: str) -> Tensor:
        """One parameter of every network, shape ``(S,)`` (a view into :attr:`theta`)."""
        return self.theta[:, self.param_names.index(name)]

    def preactivation(self, x: Tensor) -> Tensor:
        w1, b1 = (self.theta[:, i : i + 1] for i in (0, 1))
        if self.parameterisation == "reparam":
            return w1 * (x + b1)
        return w1 * x + b1

    def forward(self, x: Tensor) -> Tensor:
        """Outputs ``(S, len(x))``."""
        w2, b2 = (self.theta[:, i : i + 1] for i in (2, 3))
        return w2 * self.activation.fn(self.preactivation(x)) + b2

    @torch.no_grad()
    def loss_and_grads(self) -> tuple[Tensor, list[Tensor]]:
        if self._sums is not None:
            return self._loss_and_grads_by_prefix_sums(self._sums)
        w1, b1, w2, b2 = self.theta.unbind(dim=1)
        z = self.preactivation(self.x)
        a = self.activation.fn(z)
        residual = w2.unsqueeze(1) * a + b2.unsqueeze(1) - self.y
        n_points = self.x.shape[0]
        loss = residual.square().mean(dim=1)
        delta = residual * (2.0 / n_points)
        e = delta * self.activation.grad(z) * w2.unsqueeze(1)
        grad_w2 = (delta * a).sum(dim=1)
        grad_b2 = delta.sum(dim=1)
        sum_e = e.sum(dim=1)
        if self.parameterisation == "reparam":
            grad_w1 = (e * self.x).sum(dim=1) + sum_e * b1
            grad_b1 = w1 * sum_e
        else:
            grad_w1 = (e * self.x).sum(dim=1)
            grad_b1 = sum_e
        return loss, [torch.stack([grad_w1, grad_b1, grad_w2, grad_b2], dim=1)]

    def _split(self, sums: _SortedPrefixSums) -> tuple[Tensor, Tensor]:
        """Per network: the index k splitting the sorted inputs into the sides [0, k) and
        [k, N), and whether the upper side is the active one (z > 0 there)."""
        w1, b1 = self.column("w1"), self.column("b1")
        kink = self.kink().double()
        rising = w1 > 0
        n = sums.n_points
        guess = torch.searchsorted(sums.xs64, kink.clamp(-1e300, 1e300))
        offsets = torch.arange(-_SPLIT_WINDOW, _SPLIT_WINDOW + 1, device=guess.device)
        window = (guess.unsqueeze(1) + offsets).clamp(0, n - 1)
        start = window[:, 0]
        # the same z as the direct path: below the split for a rising neuron means z <= 0
        z = self._preactivation_at(sums.x_sorted[window])
        below = torch.where(rising.unsqueeze(1), z <= 0, z > 0)
        unique = torch.ones_like(below)
        unique[:, 1:] = window[:, 1:] != window[:, :-1]
        split = start + (below & unique).sum(dim=1)
        flat = w1 == 0
        constant_active = (
            (b1 > 0) if self.parameterisation == "standard" else torch.zeros_like(flat)
        )
        split = torch.where(flat, torch.zeros_like(split), split)
        upper_active = torch.where(flat, constant_active, rising)
        return split, upper_active

    def _preactivation_at(self, x: Tensor) -> Tensor:
        """z at per-network inputs ``x`` of shape (S, m), computed as in :meth:`preactivation`."""
        w1, b1 = (self.theta[:, i : i + 1] for i in (0, 1))
        if self.parameterisation == "reparam":
            return w1 * (x + b1)
        return w1 * x + b1

    def _loss_and_grads_by_prefix_sums(
        self, sums: _SortedPrefixSums
    ) -> tuple[Tensor, list[Tensor]]:
        if self.slopes is None:  # __init__ chose this method only with slopes
            raise RuntimeError("the prefix-sum loss needs a piecewise-linear activation")
        w1, b1, w2, b2 = self.theta.double().unbind(dim=1)
        negative, positive = (
            torch.tensor(v, dtype=torch.float64, device=self.theta.device) for v in self.slopes
        )
        split, upper_active = self._split(sums)
        n = sums.n_points
        sides = (
            (torch.zeros_like(split), split, torch.where(upper_active, negative, positive)),
            (split, torch.full_like(split, n), torch.where(upper_active, positive, negative)),
        )
        loss = torch.zeros_like(w1)
        grad_w1, grad_b1, grad_w2, grad_b2 = (torch.zeros_like(w1) for _ in range(4))
        reparam = self.parameterisation == "reparam"
        for lo, hi, slope in sides:
            s = sums.between(lo, hi)
            alpha = w2 * slope * w1
            beta = w2 * slope * (w1 * b1 if reparam else b1) + b2
            sum_r = alpha * s["x"] + beta * s["1"] - s["y"]
            sum_rx = alpha * s["xx"] + beta * s["x"] - s["xy"]
            loss += (
                alpha * alpha * s["xx"]
                + 2 * alpha * beta * s["x"]
                + beta * beta * s["1"]
                - 2 * alpha * s["xy"]
                - 2 * beta * s["y"]
                + s["yy"]
            )
            grad_b2 += sum_r
            if reparam:
                shifted = sum_rx + b1 * sum_r
                grad_w2 += slope * w1 * shifted
                grad_w1 += w2 * slope * shifted
                grad_b1 += w1 * w2 * slope * sum_r
            else:
                grad_w2 += slope * (w1 * sum_rx + b1 * sum_r)
                grad_w1 += w2 * slope * sum_rx
                grad_b1 += w2 * slope * sum_r
        scale = 2.0 / n
        grads = torch.stack([grad_w1, grad_b1, grad_w2, grad_b2], dim=1) * scale
        dtype = self.theta.dtype
        return (loss / n).clamp_min(0).to(dtype), [grads.to(dtype)]

    def kink(self) -> Tensor:
        """:math:`x_t = -b_1/w_1` (standard) or :math:`-b'` (reparam), per network."""
        w1, b1 = self.column("w1"), self.column("b1")
        return -b1 if self.parameterisation == "reparam" else -b1 / w1

    def state(self) -> Tensor:
        """State code per network (:data:`STATE_CODES`) from z at the extreme inputs."""
        ends = self.preactivation(torch.stack([self.x_min, self.x_max]))
        return unit_states(ends, sample_dims=(1,)).codes(ends.dtype)

    @torch.no_grad()
    def observe(self) -> dict[str, Tensor]:
        named = {name: self.column(name) for name in self.param_names}
        return {**named, "state": self.state()}
