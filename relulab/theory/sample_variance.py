r"""Sample-variance decay in deep ReLU nets (seed ``002_…``, Luther & Seung, §3.1 and §4).

Kaiming ReLU MLP, no biases, i.i.d. zero-mean unit-variance inputs, infinite width. The total
pre-activation variance is preserved, :math:`\sigma^2 = m_l^2 + v_l^2 = 2`, but its split
changes with depth: with :math:`\rho_l = m_l^2/\sigma^2` (the correlation of two independent
samples' pre-activations), :math:`\rho_0 = 0` at the first pre-activation layer (the paper's
layer 0) and

.. math::
    \rho_{l+1} = K(\rho_l),\qquad
    K(c) = \frac{\sqrt{1-c^2} + (\pi - \arccos c)\,c}{\pi},

the normalised arc-cosine kernel: :math:`K(0) = 1/\pi`, :math:`K(1) = 1`, :math:`K'(c) =
(\pi - \arccos c)/\pi`, :math:`K'(1) = 1` — so :math:`\rho_l \to 1` sub-exponentially. Then
:math:`m/\sigma = \sqrt{\rho}`, :math:`v/\sigma = \sqrt{1-\rho}`,
:math:`m/v = \sqrt{\rho/(1-\rho)}`.

BatchNorm (seed §4): per-feature centring leaves each layer at :math:`\rho = 0`, so one
Kaiming layer + ReLU brings the sample std to :math:`\sigma_s = \sqrt{1 - K(0)} \approx 0.826`
of the total; rescaling by :math:`1/\sigma_s \approx 1.21` each layer makes backward gradients
grow by :math:`1/\sigma_s^2` per layer, a slope of :math:`\ln\sigma_s^2 \approx -0.383` for
:math:`\ln\langle(\partial L/\partial x^l)^2\rangle` against :math:`l`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relulab.theory.kernels import arccos_j1, correlation_angle

__all__ = [
    "SampleStatistics",
    "batchnorm_gradient_slope",
    "batchnorm_sample_std",
    "normalised_arccos_kernel",
    "normalised_arccos_kernel_derivative",
    "sample_statistics",
]


def normalised_arccos_kernel(c: np.ndarray | float) -> np.ndarray:
    r"""The normalised arc-cosine kernel :math:`K(c) = J_1(\arccos c)/\pi` (seed ``002_…``
    §3.1): the correlation map of a Kaiming ReLU layer without biases,
    :math:`K(c) = 2\,E[\mathrm{ReLU}(u)\mathrm{ReLU}(v)]` for unit-variance :math:`u, v` of
    correlation :math:`c` (:func:`relulab.theory.arccos_kernel` with :math:`q_1 = q_2 = 1`).
    NaN-safe at :math:`c = \pm 1`.

    Args:
        c: correlations in [−1, 1] (clipped).

    Returns:
        :math:`K(c)`: :math:`K(0) = 1/\pi`, :math:`K(1) = 1`.

    Example:
        >>> float(normalised_arccos_kernel(0.0)) == 1 / np.pi
        True
    """
    return arccos_j1(c) / np.pi


def normalised_arccos_kernel_derivative(c: np.ndarray | float) -> np.ndarray:
    r""":math:`K'(c) = (\pi - \arccos c)/\pi`, i.e. :math:`2\,E[\mathrm{ReLU}'(u)
    \mathrm{ReLU}'(v)]` (:meth:`relulab.theory.ReLUFamilyKernel.derivative_cross`).

    Args:
        c: correlations in [−1, 1] (clipped).

    Returns:
        :math:`K'(c)`; :math:`K'(1) = 1`, so :math:`\rho \to 1` sub-exponentially.

    Example:
        >>> float(normalised_arccos_kernel_derivative(1.0))
        1.0
    """
    return (np.pi - correlation_angle(c)) / np.pi


@dataclass(frozen=True)
class SampleStatistics:
    """The infinite-width split per layer (index 0 = the first pre-activation layer, the
    seed's layer 0): :math:`\\rho_l = m_l^2/\\sigma^2` and the total variance :math:`\\sigma^2`.

    Example:
        >>> stats = sample_statistics(3)
        >>> bool(stats.rho[1] == 1 / np.pi), float(stats.mean[0])
        (True, 0.0)
    """

    rho: np.ndarray
    total_variance: float = 2.0

    @property
    def mean_over_sigma(self) -> np.ndarray:
        return np.sqrt(self.rho)

    @property
    def std_over_sigma(self) -> np.ndarray:
        return np.sqrt(1.0 - self.rho)

    @property
    def mean(self) -> np.ndarray:
        """:math:`m_l`."""
        return np.sqrt(self.total_variance * self.rho)

    @property
    def std(self) -> np.ndarray:
        """:math:`v_l`."""
        return np.sqrt(self.total_variance * (1.0 - self.rho))

    @property
    def mean_to_std_ratio(self) -> np.ndarray:
        """:math:`m/v = \\sqrt{\\rho/(1-\\rho)}`."""
        with np.errstate(divide="ignore"):
            return np.sqrt(self.rho / (1.0 - self.rho))


def sample_statistics(depth: int, rho0: float = 0.0) -> SampleStatistics:
    """Iterate :math:`\\rho_{l+1} = K(\\rho_l)` for ``depth`` layers from ``rho0`` (seed §3.1).

    Args:
        depth: the number of layers.
        rho0: :math:`\\rho` at the first pre-activation layer (0 for zero-mean i.i.d. inputs).

    Returns:
        :class:`SampleStatistics`.

    Example:
        >>> ratio = sample_statistics(50).mean_to_std_ratio
        >>> bool(ratio[-1] > ratio[10] > ratio[1])
        True
    """
    if depth < 1:
        raise ValueError(f"depth must be positive, got {depth}")
    rho = np.empty(depth)
    rho[0] = rho0
    for layer in range(1, depth):
        rho[layer] = normalised_arccos_kernel(rho[layer - 1])
    return SampleStatistics(rho)


def batchnorm_sample_std() -> float:
    """:math:`\\sigma_s = \\sqrt{1 - K(0)} = \\sqrt{1 - 1/\\pi} \\approx 0.826` (seed §4): the
    sample std left after one Kaiming layer + ReLU from per-feature centred pre-activations.

    Returns:
        :math:`\\sigma_s`.

    Example:
        >>> round(batchnorm_sample_std(), 3)
        0.826
    """
    return float(np.sqrt(1.0 - 1.0 / np.pi))


def batchnorm_gradient_slope() -> float:
    """Predicted slope of :math:`\\ln\\langle(\\partial L/\\partial x^l)^2\\rangle` vs ``l``
    under BatchNorm or scale+bias: :math:`\\ln\\sigma_s^2 = \\ln(1 - 1/\\pi) \\approx -0.383`
    (seed §4; it reports −0.379 for scale+bias and −0.381 for BatchNorm).

    Returns:
        The slope per layer.

    Example:
        >>> round(batchnorm_gradient_slope(), 3)
        -0.383
    """
    return float(np.log(1.0 - 1.0 / np.pi))
