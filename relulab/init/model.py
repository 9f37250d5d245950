r"""Model-level initialisation of any ``nn.Module``: per-tensor schemes applied layer by layer,
and data-dependent ones (seed ``002_…`` §5.1, SETUPS.md §3).

Layers are the ``nn.Linear`` and ``nn.Conv{1,2,3}d`` modules, in the order the forward pass
calls them (found with forward hooks on one batch). A *feature* is an output unit of a Linear
layer or an output channel of a convolution (statistics over samples and positions).

Data-dependent schemes, each layer set on the outputs of the layers before it (already set):

* ``scale``: draw :math:`W \sim N(0, 1)`, biases 0, then
  :math:`W \leftarrow W/\sqrt{\langle u^2\rangle + \epsilon}`, the mean over features and
  samples: unit second moment per layer (eq. 13).
* ``scale_bias``: after the draw, :math:`b_i \leftarrow -\mu_i` per feature, then the layer's
  scale on the centred outputs applied to weights **and** biases (eq. 14 then 13): every feature
  has zero sample mean, the layer unit second moment.
* ``scale_bias`` with ``per_feature=True`` (Krähenbühl et al. 2015): :math:`W_i \leftarrow W_i /
  \sigma_i`, :math:`b_i = -\mu_i/\sigma_i`: every feature zero mean and unit variance.
* ``lsuv`` (Mishkin & Matas 2015): orthonormal pre-init, then
  :math:`W \leftarrow W/\sqrt{\mathrm{Var}(u)}` until :math:`|\mathrm{Var}(u) - 1| <` ``tol`` or
  ``max_iter`` rounds; weights only, biases 0.

ReLU−b calibration (seed ``000_…``, SETUPS.md §2): :func:`analytic_relu_shift` gives
:math:`b^* = E[\mathrm{ReLU}(z)] = s/\sqrt{2\pi}` for the pre-activation std :math:`s` an init
implies; :func:`calibrate_relu_shift_` measures a per-neuron shift on data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import pandas as pd
import torch
from torch import Tensor, nn

from relulab.init.tensor import (
    FAN_IN_VARIANCE,
    kaiming_normal_,
    kaiming_uniform_,
    lecun_normal_,
    orthogonal_,
    raai_,
    rai_,
)
from relulab.nn.activations import ReLUMinusB
from relulab.nn.run import run_model

__all__ = [
    "InitReport",
    "LayerReport",
    "MODEL_INITS",
    "analytic_relu_shift",
    "calibrate_relu_shift_",
    "init_model_",
    "lsuv_",
    "parameter_layers",
    "scale_",
    "scale_bias_",
]

LAYER_TYPES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


@dataclass(frozen=True)
class LayerReport:
    """What an initialiser did to one layer."""

    layer: str
    kind: str
    scheme: str
    weight_std: float
    bias_mean: float | None
    output_mean: float | None = None
    output_second_moment: float | None = None
    iterations: int | None = None


class InitReport(list):
    """The per-layer reports of one model-level initialisation; ``to_frame()`` for pandas."""

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(r) for r in self])


def parameter_layers(model: nn.Module, data: Tensor | None = None) -> list[tuple[str, nn.Module]]:
    """Linear/Conv layers ``(name, module)``, in forward-call order if ``data`` is given."""
    named = [(name, m) for name, m in model.named_modules() if isinstance(m, LAYER_TYPES)]
    if not named:
        raise ValueError("no nn.Linear or nn.Conv layer found in the model")
    if data is None:
        return named
    order: list[nn.Module] = []
    hooks = [m.register_forward_hook(lambda mod, i, o: order.append(mod)) for _, m in named]
    try:
        _forward(model, data)
    finally:
        for hook in hooks:
            hook.remove()
    names = {id(m): n for n, m in named}
    seen, ordered = set(), []
    for module in order:
        if id(module) not in seen:
            seen.add(id(module))
            ordered.append((names[id(module)], module))
    return ordered


def _forward(model: nn.Module, data: Tensor) -> Tensor:
    with torch.no_grad():
        return run_model(model, data)


def _feature_dims(output: Tensor) -> tuple[int, ...]:
    """Dimensions to reduce for per-feature statistics: all but the feature (channel) axis 1."""
    return (0,) + tuple(range(2, output.dim()))


def _broadcast(per_feature: Tensor, weight: Tensor) -> Tensor:
    """A per-feature vector shaped to scale a weight ``(out, in, *kernel)`` row by row."""
    return per_feature.reshape((-1,) + (1,) * (weight.dim() - 1))


def _feature_view(per_feature: Tensor, output: Tensor) -> Tensor:
    """A per-feature vector shaped to act on an output ``(N, features, *positions)``."""
    return per_feature.reshape((1, -1) + (1,) * (output.dim() - 2))


def _capture(model: nn.Module, module: nn.Module, data: Tensor, what: str = "output") -> Tensor:
    """The first input or the output of ``module`` when ``model`` runs on ``data``."""
    captured: list[Tensor] = []

    def keep(mod: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        captured.append((output if what == "output" else inputs[0]).detach())

    hook = module.register_forward_hook(keep)
    try:
        _forward(model, data)
    finally:
        hook.remove()
    return captured[0]


def _layer_output(model: nn.Module, layer: nn.Module, data: Tensor) -> Tensor:
    return _capture(model, layer, data, "output")


def _report(
    name: str,
    layer: nn.Module,
    scheme: str,
    output: Tensor | None = None,
    iterations: int | None = None,
) -> LayerReport:
    bias = getattr(layer, "bias", None)
    return LayerReport(
        name,
        type(layer).__name__,
        scheme,
        float(layer.weight.std()),
        None if bias is None else float(bias.mean()),
        None if output is None else float(output.mean()),
        None if output is None else float(output.square().mean()),
        iterations,
    )


PER_TENSOR: dict[str, Callable[..., Tensor]] = {
    "kaiming_normal": kaiming_normal_,
    "kaiming_uniform": kaiming_uniform_,
    "lecun_normal": lecun_normal_,
    "orthogonal": orthogonal_,
}


@torch.no_grad()
def init_model_(
    model: nn.Module, scheme: str, generator: torch.Generator | None = None, **kwargs: float
) -> InitReport:
    """Apply a per-tensor scheme (``kaiming_normal``, ``kaiming_uniform``, ``lecun_normal``,
    ``orthogonal``, ``rai``, ``raai``) to every Linear/Conv layer; biases 0 except RAI/RAAI."""
    report = InitReport()
    for name, layer in parameter_layers(model):
        if scheme in ("rai", "raai"):
            (rai_ if scheme == "rai" else raai_)(layer.weight, layer.bias, generator, **kwargs)
        elif scheme in PER_TENSOR:
            PER_TENSOR[scheme](layer.weight, generator=generator, **kwargs)
            if layer.bias is not None:
                layer.bias.zero_()
        else:
            raise ValueError(f"unknown init {scheme!r}; choose from {', '.join(MODEL_INITS)}")
        report.append(_report(name, layer, scheme))
    return report


@torch.no_grad()
def _data_dependent(
    model: nn.Module,
    data: Tensor,
    scheme: str,
    centre: bool,
    per_feature: bool,
    eps: float,
    generator: torch.Generator | None,
) -> InitReport:
    report = InitReport()
    layers = parameter_layers(model, data)
    if centre and any(layer.bias is None for _, layer in layers):
        missing = [name for name, layer in layers if layer.bias is None]
        raise ValueError(f"scale_bias sets biases but these layers have none: {', '.join(missing)}")
    for name, layer in layers:
        torch.nn.init.normal_(layer.weight, generator=generator)
        if layer.bias is not None:
            layer.bias.zero_()
        output = _layer_output(model, layer, data)
        dims = _feature_dims(output)
        if centre:
            mean = output.mean(dim=dims)
            layer.bias.sub_(mean)
            output = output - _feature_view(mean, output)
        if per_feature:
            factor = torch.rsqrt(output.square().mean(dim=dims) + eps)
            layer.weight.mul_(_broadcast(factor, layer.weight))
            layer.bias.mul_(factor)
            output = output * _feature_view(factor, output)
        else:
            factor = torch.rsqrt(output.square().mean() + eps)
            layer.weight.mul_(factor)
            if layer.bias is not None:
                layer.bias.mul_(factor)
            output = output * factor
        # the layer is affine in (W, b), so its new output is the scaled one: no second forward
        report.append(_report(name, layer, scheme, output))
    return report


def scale_(
    model: nn.Module, data: Tensor, eps: float = 1e-5, generator: torch.Generator | None = None
) -> InitReport:
    """*scale* (module docstring): unit second moment per layer, biases 0."""
    return _data_dependent(model, data, "scale", False, False, eps, generator)


def scale_bias_(
    model: nn.Module,
    data: Tensor,
    per_feature: bool = False,
    eps: float = 1e-5,
    generator: torch.Generator | None = None,
) -> InitReport:
    """*scale+bias* (module docstring): zero mean per feature; unit second moment per layer, or
    per feature with ``per_feature=True`` (Krähenbühl et al. 2015)."""
    scheme = "scale_bias_per_feature" if per_feature else "scale_bias"
    return _data_dependent(model, data, scheme, True, per_feature, eps, generator)


@torch.no_grad()
def lsuv_(
    model: nn.Module,
    data: Tensor,
    tol: float = 0.02,
    max_iter: int = 20,
    generator: torch.Generator | None = None,
) -> InitReport:
    """LSUV (module docstring): orthonormal, then rescale each layer to unit output variance."""
    report = InitReport()
    for name, layer in parameter_layers(model, data):
        orthogonal_(layer.weight, generator=generator)
        if layer.bias is not None:
            layer.bias.zero_()
        iterations = 0
        for iterations in range(1, max_iter + 1):  # noqa: B007 (reported)
            output = _layer_output(model, layer, data)
            variance = output.var()
            if abs(float(variance) - 1.0) < tol:
                break
            layer.weight.div_(torch.sqrt(variance))
            output = output / torch.sqrt(variance)  # linear in W with bias 0: the new output
        report.append(_report(name, layer, "lsuv", output, iterations))
    return report


def analytic_relu_shift(
    pre_activation_std: float | None = None,
    scheme: str | None = None,
    input_second_moment: float = 1.0,
) -> float:
    r""":math:`b^* = E[\mathrm{ReLU}(z)] = s/\sqrt{2\pi}` for :math:`z \sim N(0, s^2)`.

    Give the pre-activation std ``s``, or an init scheme for a layer fed inputs of second moment
    ``input_second_moment``: ``torch_default`` (:math:`s^2 = 1/3`, so :math:`b^* = 1/\sqrt{6\pi}
    \approx 0.23`), ``kaiming_normal`` (:math:`s^2 = 2`, :math:`b^* \approx 0.56`),
    ``lecun_normal`` (:math:`s^2 = 1`). SETUPS.md §2 [D].
    """
    if (pre_activation_std is None) == (scheme is None):
        raise ValueError("give exactly one of pre_activation_std and scheme")
    if scheme is not None:
        if scheme not in FAN_IN_VARIANCE:
            raise ValueError(
                f"no analytic shift for {scheme!r}; choose from {', '.join(FAN_IN_VARIANCE)}"
            )
        pre_activation_std = math.sqrt(FAN_IN_VARIANCE[scheme] * input_second_moment)
    return pre_activation_std / math.sqrt(2 * math.pi)


@torch.no_grad()
def calibrate_relu_shift_(model: nn.Module, data: Tensor) -> InitReport:
    r"""Set every :class:`relulab.nn.ReLUMinusB`'s shift to the per-neuron mean of its ReLU output
    on ``data`` (features as above), so each neuron's output is centred on the data."""
    modules = [(name, m) for name, m in model.named_modules() if isinstance(m, ReLUMinusB)]
    if not modules:
        raise ValueError(
            "no relulab.nn.ReLUMinusB module found: build the model with ReLUMinusB "
            "activations to calibrate their shifts"
        )
    report = InitReport()
    for name, module in modules:
        z = _capture(model, module, data, "input")
        shift = torch.relu(z).mean(dim=_feature_dims(z))
        module.set_shift(shift)
        report.append(
            LayerReport(name, "ReLUMinusB", "relu_shift_calibration", 0.0, float(shift.mean()))
        )
    return report


MODEL_INITS = (
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "orthogonal",
    "rai",
    "raai",
    "scale",
    "scale_bias",
    "lsuv",
)
