r"""Exact learning dynamics of two-layer linear networks (seed ``004_…`` §5 and appendix B).

Seed 004 (*Bias-mediated early linearization drives simplicity bias in ReLU networks*) compares
ReLU networks with the closed-form dynamics of deep linear networks (Saxe, McClelland & Ganguli
2014; 2019). This module is that theory, in NumPy float64.

**Setting** (seed §5.1). Inputs :math:`X \in \mathbb{R}^{n_{in} \times P}` and targets
:math:`Y \in \mathbb{R}^{n_{out} \times P}` hold the samples as *columns* (seed eq. 3); for the
sample-major arrays of :mod:`relulab.tasks` pass ``X = inputs.T``. The hidden bias is an input
constant :math:`c` appended to every sample, :math:`\tilde x_i = [c; x_i]`, so a bias-free
first layer :math:`\tilde W^1 = [b\ W^1]` carries it. The loss is the *sum*

.. math::
    \mathcal{L} = \tfrac12 \sum_{i=1}^{P} \lVert y_i - W^2 W^1 x_i \rVert^2,

trained by full-batch gradient descent with learning rate :math:`\epsilon`; one GD step is one
unit of time :math:`t`. The data enter through

.. math::
    \Sigma^{yx} = \tfrac1P Y X^\top = U S V^\top, \qquad \Sigma^{x} = \tfrac1P X X^\top.

**Time constant** [derived, checked by simulation in the tests]. The gradient of the sum loss is
:math:`-P\,W^{2\top}(\Sigma^{yx} - W^2 W^1 \Sigma^x)`, so in the small-step limit

.. math::
    \tau \dot W^1 = W^{2\top}(\Sigma^{yx} - W^2W^1\Sigma^x),\quad
    \tau \dot W^2 = (\Sigma^{yx} - W^2W^1\Sigma^x) W^{1\top},\qquad \tau = \frac{1}{P\epsilon}

(seed eq. 18; the seed's eq. 22 writes :math:`N` for :math:`P`). With the mean loss instead,
:math:`\tau = 1/\epsilon` — a factor :math:`P` slower; the tests show the sum-loss
:math:`\tau` is the one a simulation follows.

**Assumptions behind the mode dynamics.** (i) *Aligned inputs*: the right singular vectors
:math:`V` of :math:`\Sigma^{yx}` also diagonalise :math:`\Sigma^x = V D V^\top` (seed eq. 4).
Whitened inputs are the special case :math:`D = I`; one-hot items with or without the constant
satisfy it (seed Prop. 1, :func:`bias_mode`); XOR-like inputs generally do not
(:func:`aligned_modes` measures the violation). (ii) *Aligned weights*: each mode
:math:`\alpha` owns hidden vectors :math:`r^1_\alpha = W^1 v_\alpha`,
:math:`r^2_\alpha = W^{2\top} u_\alpha`, orthogonal to other modes' (exact for the decoupled
initialisation :math:`W^1 = R\bar W^1 V^\top`, :math:`W^2 = U\bar W^2 R^\top`; approximately
reached from small random weights, the "silent alignment"). (iii) *Balance*:
:math:`r^1_\alpha = r^2_\alpha` gives seed eq. 7 (:func:`mode_strength`); any imbalance is
covered exactly by :func:`mode_strength_unbalanced`. (iv) Gradient flow: GD with step
:math:`\epsilon` deviates by :math:`O(P\epsilon s_\alpha)` in relative time.

The mode strength :math:`a_\alpha = r^2_\alpha \cdot r^1_\alpha = (U^\top W^2 W^1 V)_{\alpha
\alpha}` then obeys :math:`\tau \dot a_\alpha = 2 a_\alpha (s_\alpha - d_\alpha a_\alpha)`
(balanced) and the network map is :math:`W^2 W^1 = U A(t) V^\top` (seed eq. 6, 23).

**Parts.** :mod:`~relulab.theory.deep_linear.modes` — the data's modes, time constant,
least-squares floor and bias mode; :mod:`~relulab.theory.deep_linear.dynamics` — the closed
forms in time (mode strengths, hitting times, the ReLU delay);
:mod:`~relulab.theory.deep_linear.networks` — networks projected onto the modes and the gated
linear model. Every name is importable from :mod:`relulab.theory.deep_linear` itself.
"""

from relulab.theory.deep_linear.dynamics import (
    ArrayLike,
    hitting_time,
    mode_strength,
    mode_strength_unbalanced,
    relu_hitting_delay,
)
from relulab.theory.deep_linear.modes import (
    BiasMode,
    LinearModes,
    aligned_modes,
    bias_mode,
    data_correlations,
    learning_time_constant,
    least_squares_loss,
)
from relulab.theory.deep_linear.networks import (
    GatedLinearPrediction,
    function_mode_strengths,
    gated_linear_prediction,
    mode_components,
    mode_loss,
    mode_projections,
    modes_to_map,
)

__all__ = [
    "ArrayLike",
    "BiasMode",
    "GatedLinearPrediction",
    "LinearModes",
    "aligned_modes",
    "bias_mode",
    "data_correlations",
    "function_mode_strengths",
    "gated_linear_prediction",
    "hitting_time",
    "learning_time_constant",
    "least_squares_loss",
    "mode_components",
    "mode_loss",
    "mode_projections",
    "mode_strength",
    "mode_strength_unbalanced",
    "modes_to_map",
    "relu_hitting_delay",
]
