r"""Model-level initialisation of any ``nn.Module``: layer discovery, per-layer reports, and the
data-dependent schemes of seed ``002_…`` §5.1 (Luther & Seung) and their relatives.

Layers are the ``nn.Linear`` and ``nn.Conv{1,2,3}d`` modules, in the order the forward pass
calls them (found with forward hooks on one batch). A *feature* is an output unit of a Linear
layer — its last axis, at any rank: a sequence ``(N, T, d)`` has d features, statistics over N
and T — or an output channel of a convolution, axis 1 (statistics over samples and positions).

Data-dependent schemes, each layer set on the outputs of the layers before it (already set);
the arithmetic of one layer is :func:`rescale_layer_`, which the engine's batched
:func:`relulab.engine.scale_init_batched_` calls too:

* ``scale`` (seed eq. 13): draw :math:`W \sim N(0, 1)`, biases 0, then
  :math:`W \leftarrow W/\sqrt{\langle u^2\rangle + \epsilon}`, the mean over features and
  samples: unit second moment per layer.
* ``scale_bias`` (seed eq. 14, then eq. 13): after the draw, :math:`b_i \leftarrow -\mu_i` per
  feature, then the layer's scale on the centred outputs applied to weights **and** biases:
  every feature has zero sample mean, the layer unit second moment. (Scaling only the weights
  after centring would bring the means back: the LSUV-with-bias pitfall the seed warns of.)
* ``scale_bias`` with ``per_feature=True`` (Krähenbühl et al. 2015): :math:`W_i \leftarrow W_i /
  \sigma_i`, :math:`b_i = -\mu_i/\sigma_i`: every feature zero mean and unit variance.
* ``lsuv`` (Mishkin & Matas 2015): orthonormal pre-init, then
  :math:`W \leftarrow W/\sqrt{\mathrm{Var}(u)}` until :math:`|\mathrm{Var}(u) - 1| <` ``tol`` or
  ``max_iter`` rounds; weights only, biases 0.

Per-tensor schemes applied to a whole model (:func:`relulab.init.init_model_`) and the names of
all schemes live in :mod:`relulab.init.schemes`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd
import torch
from torch import Tensor, nn

from relulab.init.tensor import InitNotApplicableError, orthogonal_
from relulab.nn.run import run_model

__all__ = [
    "InitReport",
    "LayerReport",
    "capture",
    "check_biases",
    "feature_layout",
    "layer_report",
    "lsuv_",
    "parameter_layers",
    "rescale_layer_",
    "scale_",
    "scale_bias_",
]

LAYER_TYPES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


@dataclass(frozen=True)
class LayerReport:
    """What an initialiser did to one layer.

    Attributes:
        layer: the module's name in the model.
        kind: its class name (``Linear``, ``Conv2d``, ``ReLUMinusB``, …).
        scheme: the scheme applied.
        weight_std: the std of the weight afterwards.
        bias_mean: the mean of the bias (or of a ReLU shift), ``None`` without one.
        output_mean: data-dependent schemes: the mean of the layer's output on the data.
        output_second_moment: data-dependent schemes: its second moment.
        iterations: LSUV: the rounds taken.

    Example:
        >>> from relulab import init
        >>> row = init.init_model_(nn.Sequential(nn.Linear(3, 2)), "kaiming_normal")[0]
        >>> row.kind, row.scheme, row.bias_mean
        ('Linear', 'kaiming_normal', 0.0)
    """

    layer: str
    kind: str
    scheme: str
    weight_std: float
    bias_mean: float | None
    output_mean: float | None = None
    output_second_moment: float | None = None
    iterations: int | None = None


class InitReport(list):
    """The per-layer :class:`LayerReport` rows of one model-level initialisation.

    Example:
        >>> from relulab import init
        >>> report = init.init_model_(nn.Sequential(nn.Linear(3, 2)), "lecun_normal")
        >>> list(report.to_frame()["layer"])
        ['0']
    """

    def to_frame(self) -> pd.DataFrame:
        """The rows as a ``pandas.DataFrame``, one column per :class:`LayerReport` field."""
        return pd.DataFrame([asdict(r) for r in self])


def parameter_layers(model: nn.Module, data: Tensor | None = None) -> list[tuple[str, nn.Module]]:
    """The Linear/Conv layers of ``model`` as ``(name, module)`` pairs.

    Args:
        model: any ``nn.Module``.
        data: if given, one forward pass on it orders the layers as the forward calls them
            (a layer called twice counts once, at its first call); else module order.

    Returns:
        The layers; a ``ValueError`` if there are none.

    Example:
        >>> [name for name, _ in parameter_layers(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))]
        ['0']
    """
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


def check_biases(scheme: str, layers: list[tuple[str, nn.Module]]) -> None:
    """Raise :class:`~relulab.init.InitNotApplicableError` naming the layers without a bias, for a
    scheme that sets every bias.

    Example:
        >>> try:
        ...     check_biases("rai", [("fc", nn.Linear(2, 2, bias=False))])
        ... except InitNotApplicableError as error:
        ...     print(error)
        rai sets every layer's bias, but these layers have none: fc (Linear)
    """
    missing = [f"{name} ({type(layer).__name__})" for name, layer in layers if layer.bias is None]
    if missing:
        raise InitNotApplicableError(
            f"{scheme} sets every layer's bias, but these layers have none: {', '.join(missing)}"
        )


def _forward(model: nn.Module, data: Tensor) -> Tensor:
    with torch.no_grad():
        return run_model(model, data)


def capture(model: nn.Module, module: nn.Module, data: Tensor, what: str = "output") -> Tensor:
    """The first input (``what="input"``) or the output of ``module`` when ``model`` runs on
    ``data`` without gradients (its first call, detached).

    Args:
        model: the whole model.
        module: one of its submodules.
        data: the model's input.
        what: ``"input"`` or ``"output"``.

    Returns:
        The captured tensor.

    Example:
        >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
        >>> capture(model, model[1], torch.ones(4, 2), "input").shape
        torch.Size([4, 3])
    """
    captured: list[Tensor] = []

    def keep(mod: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        captured.append((output if what == "output" else inputs[0]).detach())

    hook = module.register_forward_hook(keep)
    try:
        _forward(model, data)
    finally:
        hook.remove()
    return captured[0]


def layer_report(
    name: str,
    layer: nn.Module,
    scheme: str,
    output: Tensor | None = None,
    iterations: int | None = None,
) -> LayerReport:
    """The :class:`LayerReport` of ``layer`` as it is now (and of its ``output`` if given).

    Example:
        >>> layer_report("fc", nn.Linear(3, 2), "torch_default").kind
        'Linear'
    """
    bias = getattr(layer, "bias", None)
    return LayerReport(
        name,
        type(layer).__name__,
        scheme,
        float(layer.weight.detach().std()),
        None if bias is None else float(bias.detach().mean()),
        None if output is None else float(output.mean()),
        None if output is None else float(output.square().mean()),
        iterations,
    )


def feature_layout(layer: nn.Module, output: Tensor) -> Tensor:
    """A layer's output with its features on axis 1, the layout of :func:`rescale_layer_`:
    a Linear layer's features are its *last* axis at any rank (a sequence ``(N, T, d)`` gives
    ``(N, d, T)``); a convolution's channels are axis 1 already.

    Example:
        >>> feature_layout(nn.Linear(3, 5), torch.zeros(2, 7, 5)).shape
        torch.Size([2, 5, 7])
    """
    if isinstance(layer, nn.Linear) and output.dim() > 2:
        return output.movedim(-1, 1)
    return output


def _right_pad(values: Tensor, ndim: int) -> Tensor:
    """``values`` with trailing axes of size 1 up to ``ndim`` dimensions (to broadcast)."""
    return values.reshape(values.shape + (1,) * (ndim - values.dim()))


@torch.no_grad()
def rescale_layer_(
    weight: Tensor,
    bias: Tensor | None,
    output: Tensor,
    centre: bool,
    per_feature: bool = False,
    eps: float = 1e-5,
    batch_dims: int = 0,
) -> tuple[Tensor, Tensor]:
    r"""The data-dependent scaling of one layer from its output :math:`u` on the data, in place.

    With ``centre``: :math:`b_i \leftarrow b_i - \mu_i` and :math:`u_i \leftarrow u_i - \mu_i`,
    :math:`\mu_i` the sample mean of feature :math:`i` (seed ``002_…`` §5.1, eq. 14). Then
    :math:`f = 1/\sqrt{\langle u^2\rangle + \epsilon}` over features and samples (eq. 13), or
    per feature with ``per_feature`` (Krähenbühl et al. 2015), multiplies the weight **and** the
    bias. A layer is affine in :math:`(W, b)`, so the new output is :math:`f\,u`: no second pass.

    Layouts, with ``batch_dims`` leading axes of independent networks (0 for an ``nn.Module``,
    1 for the engine's stacks): output ``(*batch, N, features, *positions)``, weight
    ``(*batch, features, …)``, bias ``(*batch, features)``.

    Args:
        weight: the layer's weight (modified in place).
        bias: its bias (modified in place) or ``None`` (then ``centre`` must be false).
        output: the layer's output :math:`u` on the data with the current weight and bias.
        centre: subtract each feature's sample mean through the bias first.
        per_feature: one factor per feature instead of one per layer.
        eps: :math:`\epsilon`.
        batch_dims: the number of leading network axes.

    Returns:
        ``(new output, factor)``; the factor has shape ``batch`` (per layer) or
        ``(*batch, features)`` (per feature).

    Example:
        >>> layer = nn.Linear(3, 4)
        >>> x = torch.randn(100, 3) + 2
        >>> u = layer(x).detach()
        >>> u, factor = rescale_layer_(layer.weight, layer.bias, u, centre=True, eps=0.0)
        >>> torch.allclose(layer(x).mean(dim=0), torch.zeros(4), atol=1e-5)
        True
    """
    if centre and bias is None:
        raise ValueError("centring sets the bias: the layer needs one")
    sample_dims = (batch_dims,) + tuple(range(batch_dims + 2, output.dim()))
    if centre:
        mean = output.mean(dim=sample_dims)
        bias.sub_(mean)
        output = output - _right_pad(mean.unsqueeze(batch_dims), output.dim())
    if per_feature:
        factor = torch.rsqrt(output.square().mean(dim=sample_dims) + eps)
        output_factor = _right_pad(factor.unsqueeze(batch_dims), output.dim())
    else:
        layer_dims = tuple(range(batch_dims, output.dim()))
        factor = torch.rsqrt(output.square().mean(dim=layer_dims) + eps)
        output_factor = _right_pad(factor, output.dim())
    weight.mul_(_right_pad(factor, weight.dim()))
    if bias is not None:
        bias.mul_(_right_pad(factor, bias.dim()))
    return output * output_factor, factor


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
    if centre:
        check_biases("scale_bias", layers)
    for name, layer in layers:
        torch.nn.init.normal_(layer.weight, generator=generator)
        if layer.bias is not None:
            layer.bias.zero_()
        output = feature_layout(layer, capture(model, layer, data, "output"))
        output, _ = rescale_layer_(layer.weight, layer.bias, output, centre, per_feature, eps)
        report.append(layer_report(name, layer, scheme, output))
    return report


def scale_(
    model: nn.Module, data: Tensor, eps: float = 1e-5, generator: torch.Generator | None = None
) -> InitReport:
    r"""*scale* (seed ``002_…`` §5.1, eq. 13): :math:`W \sim N(0, 1)`, biases 0, then layer by
    layer in forward order :math:`W \leftarrow W/\sqrt{\langle u^2\rangle + \epsilon}`, so every
    layer's output has unit second moment over features and samples on ``data``.

    Args:
        model: any ``nn.Module`` with Linear/Conv layers.
        data: the samples to measure (the seed uses 5 minibatches; pass them concatenated).
        eps: :math:`\epsilon`.
        generator: the random generator of the N(0, 1) draw (``torch.nn.init.normal_``).

    Returns:
        An :class:`InitReport` with each layer's output mean and second moment.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> report = scale_(model, torch.randn(128, 4), eps=0.0)
        >>> [round(r.output_second_moment, 4) for r in report]
        [1.0, 1.0]
    """
    return _data_dependent(model, data, "scale", False, False, eps, generator)


def scale_bias_(
    model: nn.Module,
    data: Tensor,
    per_feature: bool = False,
    eps: float = 1e-5,
    generator: torch.Generator | None = None,
) -> InitReport:
    r"""*scale+bias* (seed ``002_…`` §5.1, eq. 14 then eq. 13): :math:`W \sim N(0, 1)`; per
    feature :math:`b_i = -\mu_i`; then the layer's scale on the centred outputs, applied to
    weights and biases. Every feature has zero sample mean on ``data``; the layer unit second
    moment, or every feature unit variance with ``per_feature=True`` (Krähenbühl et al. 2015).

    Args:
        model: any ``nn.Module`` whose Linear/Conv layers all have biases.
        data: the samples to measure.
        per_feature: one scale per feature instead of per layer.
        eps: :math:`\epsilon`.
        generator: the random generator of the N(0, 1) draw.

    Returns:
        An :class:`InitReport`.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> report = scale_bias_(model, torch.randn(128, 4) + 3, eps=0.0)
        >>> [abs(r.output_mean) < 1e-5 for r in report]
        [True, True]
    """
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
    r"""LSUV (Mishkin & Matas 2015): orthonormal weights, biases 0, then for each layer in
    forward order :math:`W \leftarrow W/\sqrt{\mathrm{Var}(u)}` until
    :math:`|\mathrm{Var}(u) - 1| <` ``tol`` or ``max_iter`` rounds.

    Args:
        model: any ``nn.Module`` with Linear/Conv layers.
        data: the samples to measure.
        tol: the tolerance on the output variance.
        max_iter: the most rounds per layer.
        generator: the random generator of the orthogonal draw.

    Returns:
        An :class:`InitReport` with the rounds each layer took.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> report = lsuv_(model, torch.randn(256, 4))
        >>> all(r.iterations <= 20 for r in report)
        True
    """
    report = InitReport()
    for name, layer in parameter_layers(model, data):
        orthogonal_(layer.weight, generator=generator, draw="float64")
        if layer.bias is not None:
            layer.bias.zero_()
        iterations = 0
        for iterations in range(1, max_iter + 1):  # noqa: B007 (reported)
            output = capture(model, layer, data, "output")
            variance = output.var()
            if abs(float(variance) - 1.0) < tol:
                break
            layer.weight.div_(torch.sqrt(variance))
            output = output / torch.sqrt(variance)  # linear in W with bias 0: the new output
        report.append(layer_report(name, layer, "lsuv", output, iterations))
    return report
