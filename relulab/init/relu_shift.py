r"""The shift of ReLU−b (seed ``000_…``, Liu, *Adding bias after ReLU*): what centres
:math:`\mathrm{ReLU}(z) - b` — predicted from an init scheme, or measured per neuron on data.

For :math:`z \sim N(0, s^2)`, :math:`E[\mathrm{ReLU}(z)] = s/\sqrt{2\pi}` (the half-normal mean
[D]; :meth:`relulab.theory.ReLUFamilyKernel.mean` is the same expectation), so
:func:`analytic_relu_shift` gives :math:`b^* = s/\sqrt{2\pi}` for the pre-activation std
:math:`s` an init scheme implies; :func:`calibrate_relu_shift_` measures the per-neuron
:math:`b_i = \langle \mathrm{ReLU}(z_i)\rangle` on data
(:func:`relulab.nn.statistics.centring_shift`, the formula the engine's
:meth:`relulab.engine.BatchedResidualToy.calibrate_shifts_` uses).
"""

from __future__ import annotations

import math

from torch import Tensor, nn

from relulab.init.checks import check_data, check_finite_values, non_finite_count
from relulab.init.data import (
    Data,
    StopForward,
    calibration_mode,
    gather_batches,
    run_until_stopped,
)
from relulab.init.model import InitReport, LayerReport
from relulab.init.schemes import FAN_IN_VARIANCE
from relulab.nn.activations import ReLUMinusB
from relulab.nn.statistics import centring_shift, module_sample_dims

__all__ = ["analytic_relu_shift", "calibrate_relu_shift_"]


def analytic_relu_shift(
    pre_activation_std: float | None = None,
    scheme: str | None = None,
    input_second_moment: float = 1.0,
) -> float:
    r"""The centring shift :math:`b^* = E[\mathrm{ReLU}(z)] = s/\sqrt{2\pi}` for
    :math:`z \sim N(0, s^2)` [D].

    Give the pre-activation std ``s``, or an init scheme of :mod:`relulab.init.schemes` for a
    layer fed inputs of second moment ``input_second_moment``, so that
    :math:`s^2 = \mathrm{Var}(W)\,n_{in}\,\langle x^2\rangle`: ``torch_default``
    (:math:`s^2 = 1/3`, :math:`b^* = 1/\sqrt{6\pi} \approx 0.23`, seed ``000_…``'s observed
    optimum 0.2–0.3), ``kaiming_normal`` / ``kaiming_uniform`` (:math:`s^2 = 2`,
    :math:`b^* \approx 0.56`), ``lecun_normal`` (:math:`s^2 = 1`).

    Args:
        pre_activation_std: :math:`s`.
        scheme: or a scheme with a constant :math:`\mathrm{Var}(W)\,n_{in}`.
        input_second_moment: :math:`\langle x^2\rangle` of the layer's input (with ``scheme``).

    Returns:
        :math:`b^*`.

    Example:
        >>> round(analytic_relu_shift(scheme="torch_default"), 4)
        0.2303
    """
    if scheme is None:
        if pre_activation_std is None:
            raise ValueError("give exactly one of pre_activation_std and scheme")
        return pre_activation_std / math.sqrt(2 * math.pi)
    if pre_activation_std is not None:
        raise ValueError("give exactly one of pre_activation_std and scheme")
    variance = FAN_IN_VARIANCE.get(scheme)
    if variance is None:
        raise ValueError(
            f"no analytic shift for {scheme!r}; choose from {', '.join(FAN_IN_VARIANCE)}"
        )
    return math.sqrt(variance * input_second_moment) / math.sqrt(2 * math.pi)


def _check_input(name: str, z: Tensor) -> None:
    """Refuse a ReLU−b module whose input on the (finite) data is not finite."""
    bad = non_finite_count(z)
    if bad:
        raise ValueError(
            f"calibrate_relu_shift_: the input of {name!r} holds {bad} non-finite values (NaN "
            f"or ±inf) of {z.numel()} on the data (an earlier layer overflowed): its shift and "
            "the later ones are left as they were"
        )


def calibrate_relu_shift_(model: nn.Module, data: Data) -> InitReport:
    r"""Set every :class:`relulab.nn.ReLUMinusB`'s shift to the per-neuron mean of its ReLU
    output on ``data``, :math:`b_i = \langle \mathrm{ReLU}(z_i)\rangle` over samples (and
    positions), so each neuron's output is centred on the data.

    One forward pass sets them all, in call order: a hook reads each module's input at its first
    call and sets the shift before the module runs, so later modules see centred outputs — as
    if each were calibrated on a pass of its own. The pass stops after the last one; it runs
    in :func:`relulab.init.data.calibration_mode` (dropout off, running statistics restored).
    Data without samples or holding NaN or ±inf are refused before any shift is set, and a
    module whose input is not finite is refused (:mod:`relulab.init.checks`).

    Args:
        model: an ``nn.Module`` with :class:`~relulab.nn.ReLUMinusB` activations.
        data: the samples to measure: a tensor, a mapping of model arguments, or an iterable
            of batches (joined along the first axis).

    Returns:
        An :class:`~relulab.init.InitReport`, one row per ReLU−b module (``bias_mean`` = the
        mean shift).

    Example:
        >>> import torch
        >>> model = nn.Sequential(nn.Linear(3, 4), ReLUMinusB(0.0))
        >>> _ = calibrate_relu_shift_(model, torch.randn(64, 3))
        >>> model[1].b.shape
        torch.Size([4])
    """
    modules = [(name, m) for name, m in model.named_modules() if isinstance(m, ReLUMinusB)]
    if not modules:
        raise ValueError(
            "no relulab.nn.ReLUMinusB module found: build the model with ReLUMinusB "
            "activations to calibrate their shifts"
        )
    report = InitReport(scheme="relu_shift_calibration")
    names = {id(module): name for name, module in modules}

    def calibrate(module: ReLUMinusB, inputs: tuple[Tensor, ...]) -> None:
        name = names.pop(id(module), None)
        if name is None:
            return
        z = inputs[0]
        _check_input(name, z)
        shift = centring_shift(z, module_sample_dims(z))
        check_finite_values("relu_shift_calibration", {f"{name}.b": shift})
        module.set_shift(shift)
        report.append(
            LayerReport(name, "ReLUMinusB", "relu_shift_calibration", 0.0, float(shift.mean()))
        )
        if not names:
            raise StopForward

    batch = gather_batches(data)
    check_data(batch, "calibrate_relu_shift_")
    hooks = [module.register_forward_pre_hook(calibrate) for _, module in modules]
    try:
        with calibration_mode(model):
            run_until_stopped(model, batch)
    finally:
        for hook in hooks:
            hook.remove()
    return report
