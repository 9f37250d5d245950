r"""S single-neuron networks (seed ``001_…``) trained in one batched computation.

For network :math:`s` and inputs :math:`x_n` (shared) with targets :math:`y_n` (shared or per
network):

.. math::
    z_{sn} = w_{1s} x_n + b_{1s}\ \text{(standard)}\quad\text{or}\quad
    z_{sn} = w_{1s}(x_n + b'_s)\ \text{(reparam)},\qquad
    f_{sn} = w_{2s}\,\sigma(z_{sn}) + b_{2s},\qquad
    L_s = \frac1N \sum_n (f_{sn} - y_{sn})^2 .

The gradients are written out by hand (one fused pass over the ``S×N`` array instead of an
autograd graph); ``tests/test_engine_single_neuron.py`` checks them against autograd. With
:math:`\delta_{sn} = 2 (f_{sn} - y_{sn}) / N` and
:math:`e_{sn} = \delta_{sn} w_{2s} \sigma'(z_{sn})`:
:math:`\partial_{w_2} L = \sum_n \delta\,\sigma(z)`, :math:`\partial_{b_2} L = \sum_n \delta`,
standard: :math:`\partial_{w_1} L = \sum_n e\,x`, :math:`\partial_{b_1} L = \sum_n e`;
reparam: :math:`\partial_{w_1} L = \sum_n e\,(x + b')`, :math:`\partial_{b'} L = w_1 \sum_n e`.

Neuron state over the data (seed 001): *hyperactive* if :math:`z > 0` on every input, *dead* if
:math:`z \le 0` on every input (output and gradient are zero there), else *balanced* — the unit
states of :mod:`relulab.nn.statistics` (where *hyperactive* is called *always on*). Because
:math:`z` is affine in :math:`x`, the extremes sit at the smallest and largest input, so
:func:`~relulab.nn.statistics.unit_states` runs on those two inputs only.
"""

from __future__ import annotations

from collections.abc import Sequence

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
