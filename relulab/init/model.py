r"""Model-level initialisation of any ``nn.Module``: per-layer reports, and the data-dependent
schemes of seed ``002_…`` §5.1 (Luther & Seung) and their relatives.

The weights set are the *blocks* of :mod:`relulab.init.layers`: ``nn.Linear``,
``nn.Conv{1,2,3}d``, ``nn.ConvTranspose{1,2,3}d``, HuggingFace ``Conv1D`` and the four
matrices of ``nn.MultiheadAttention`` (``in_proj`` as three blocks q, k, v; ``out_proj``),
chosen with ``include`` / ``exclude``; every other parameter — embeddings, normalisation
layers, class tokens, excluded layers — is left as it was and listed in the
:class:`InitReport` (``report.untouched``, ``report.to_frame()``, ``str(report)``).

A *feature* is an output unit of a Linear-like block — its last axis, at any rank: a sequence
``(N, T, d)`` has d features, statistics over N and T — or an output channel of a
convolution, axis 1 (statistics over samples and positions).

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

**One forward pass.** All layers are set during a single forward pass over the data: a hook
draws a layer's weight just before its first call and rescales it right after, returning the
rescaled output, so every later layer sees the outputs of the layers already set — the
layer-by-layer procedure, exactly (a layer is affine in :math:`(W, b)`, so its new output is
the old one rescaled; a layer called twice is set at its first call). The pass stops as soon as
the last layer to set has been set. Attention projections are set from the attention's input
(``in_proj``, computed once more in the hook) and from its output (``out_proj``).

Per-tensor schemes applied to a whole model (:func:`relulab.init.init_model_`) and the names of
all schemes live in :mod:`relulab.init.schemes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
from torch import Tensor, nn

from relulab.init.calibrate import (
    CONSTANT_TOL,
    CalibrationOptions,
    ConstantInputWarning,
    Rule,
    calibrate,
)
from relulab.init.data import Batch, Data, StopForward, gather_batches, run_until_stopped
from relulab.init.layers import Selector, WeightBlock, is_hf_conv1d, is_layer
from relulab.init.report import InitReport, LayerReport, block_report, layer_report
from relulab.init.tensor import BIAS_FREE, BiasFree, InitNotApplicableError, orthogonal_
from relulab.nn.catalogue import layer_kind
from relulab.nn.statistics import module_sample_dims

__all__ = [
    "CONSTANT_TOL",
    "ConstantInputWarning",
    "InitReport",
    "LayerReport",
    "block_report",
    "capture",
    "check_biases",
    "feature_layout",
    "layer_report",
    "lsuv_",
    "parameter_layers",
    "prepare_bias_free",
    "rescale_layer_",
    "scale_",
    "scale_bias_",
]


def parameter_layers(model: nn.Module, data: Data | None = None) -> list[tuple[str, nn.Module]]:
    """The layer modules of ``model`` (``nn.Linear``, ``nn.Conv*d``, ``nn.ConvTranspose*d``,
    HuggingFace ``Conv1D``) as ``(name, module)`` pairs; the initialisers work on the blocks of
    :func:`relulab.init.layers.select_blocks`, which add ``nn.MultiheadAttention``.

    Args:
        model: any ``nn.Module``.
        data: if given (anything :func:`~relulab.init.data.gather_batches` takes), one forward
            pass on it orders the layers as the forward calls them (a layer called twice counts
            once, at its first call; a layer never called is left out); else module order.

    Returns:
        The layers; a ``ValueError`` if there are none.

    Example:
        >>> [name for name, _ in parameter_layers(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))]
        ['0']
    """
    named = [(name, m) for name, m in model.named_modules() if is_layer(m)]
    if not named:
        raise ValueError("no nn.Linear, nn.Conv or HuggingFace Conv1D layer found in the model")
    if data is None:
        return named
    order: list[nn.Module] = []
    hooks = [m.register_forward_hook(lambda mod, i, o: order.append(mod)) for _, m in named]
    try:
        with torch.no_grad():
            run_until_stopped(model, gather_batches(data))
    finally:
        for hook in hooks:
            hook.remove()
    names = {id(m): n for n, m in named}
    ordered = {id(module): (names[id(module)], module) for module in order}
    return list(ordered.values())


def check_biases(
    scheme: str, layers: Sequence[tuple[str, nn.Module] | WeightBlock], hint: str = ""
) -> None:
    """Raise :class:`~relulab.init.InitNotApplicableError` naming the layers without a bias, for a
    scheme that sets every bias.

    Args:
        scheme: the scheme's name.
        layers: ``(name, module)`` pairs, or :class:`~relulab.init.layers.WeightBlock` s.
        hint: appended to the message (what to do instead).

    Example:
        >>> try:
        ...     check_biases("rai", [("fc", nn.Linear(2, 2, bias=False))])
        ... except InitNotApplicableError as error:
        ...     print(error)
        rai sets every layer's bias, but these layers have none: fc (Linear)
    """
    missing = [_label(layer) for layer in layers if _bias_of(layer) is None]
    if missing:
        raise InitNotApplicableError(
            f"{scheme} sets every layer's bias, but these layers have none: "
            f"{', '.join(missing)}{hint}"
        )


def _label(layer: tuple[str, nn.Module] | WeightBlock) -> str:
    if isinstance(layer, WeightBlock):
        return f"{layer.name} ({layer.kind})"
    return f"{layer[0]} ({type(layer[1]).__name__})"


def _bias_of(layer: tuple[str, nn.Module] | WeightBlock) -> Tensor | None:
    if isinstance(layer, WeightBlock):
        return layer.bias
    return cast("Tensor | None", layer[1].bias)  # torch types a module attribute | Module


def capture(model: nn.Module, module: nn.Module, data: Data, what: str = "output") -> Tensor:
    """The first input (``what="input"``) or the output of ``module`` when ``model`` runs on
    ``data`` without gradients (its first call, detached). The forward pass stops there.

    Args:
        model: the whole model.
        module: one of its submodules.
        data: the model's input (anything :func:`~relulab.init.data.gather_batches` takes).
        what: ``"input"`` or ``"output"``.

    Returns:
        The captured tensor.

    Example:
        >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
        >>> capture(model, model[1], torch.ones(4, 2), "input").shape
        torch.Size([4, 3])
    """
    captured: list[Tensor] = []

    def keep_input(mod: nn.Module, inputs: tuple[Tensor, ...]) -> None:
        captured.append(inputs[0].detach())
        raise StopForward

    def keep_output(mod: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        captured.append(output.detach())
        raise StopForward

    if what == "input":
        hook = module.register_forward_pre_hook(keep_input)
    else:
        hook = module.register_forward_hook(keep_output)
    try:
        with torch.no_grad():
            run_until_stopped(model, gather_batches(data))
    finally:
        hook.remove()
    if not captured:
        raise ValueError(f"{type(module).__name__} was not called by the forward pass")
    return captured[0]


def _features_last(layer: nn.Module) -> bool:
    """A layer the initialisers set whose catalogued unit axis is the last one."""
    kind = layer_kind(layer)
    if kind is None or kind.blocks is None or kind.unit_axis != -1:
        return False
    return kind.layout != "in_out" or is_hf_conv1d(layer)


def feature_layout(layer: nn.Module, output: Tensor) -> Tensor:
    """A layer's output with its features on axis 1, the layout of :func:`rescale_layer_`:
    a Linear-like layer's (``nn.Linear``, HuggingFace ``Conv1D``, attention) features are its
    *last* axis at any rank (a sequence ``(N, T, d)`` gives ``(N, d, T)``); a convolution's
    channels are axis 1 already.

    Example:
        >>> feature_layout(nn.Linear(3, 5), torch.zeros(2, 7, 5)).shape
        torch.Size([2, 5, 7])
    """
    if _features_last(layer) and output.dim() > 2:
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
    sample_dims = (batch_dims,) + tuple(range(batch_dims + 2, output.dim()))
    if centre:
        if bias is None:
            raise ValueError("centring sets the bias: the layer needs one")
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


def _normal_draw(weight: Tensor, generator: torch.Generator | None) -> None:
    """N(0, 1) into ``weight``, drawn where ``generator`` lives: a CPU generator on a CUDA
    model draws on the CPU and copies, so the values do not depend on the model's device."""
    if generator is None or generator.device == weight.device:
        torch.nn.init.normal_(weight, generator=generator)
        return
    drawn = torch.empty(weight.shape, dtype=weight.dtype, device=generator.device)
    weight.copy_(torch.nn.init.normal_(drawn, generator=generator))


def _feature_variance(block: WeightBlock, output: Tensor) -> Tensor:
    """The per-feature sample variance, averaged over features."""
    return output.var(dim=module_sample_dims(output), unbiased=False).mean()


def _second_moment(block: WeightBlock, output: Tensor) -> Tensor:
    return output.square().mean()


def _scale_rule(scheme: str, centre: bool, per_feature: bool, eps: float) -> Rule:
    def fit(block: WeightBlock, output: Tensor) -> tuple[Tensor, None]:
        weight = block.read()
        centred = centre and block.bias is not None
        new, _ = rescale_layer_(weight, block.bias, output, centred, per_feature, eps)
        block.store(weight)
        return new, None

    def divisor(block: WeightBlock, output: Tensor) -> Tensor:
        centred = centre and block.bias is not None
        return _feature_variance(block, output) if centred else _second_moment(block, output)

    name = "feature variance" if centre else "second moment"
    return Rule(scheme, _normal_draw, fit, divisor, name)


def scale_(
    model: nn.Module,
    data: Data,
    eps: float = 1e-5,
    generator: torch.Generator | None = None,
    *,
    include: Selector | None = None,
    exclude: Selector | None = None,
    max_batches: int | None = None,
    get_input: Callable[[Any], Batch] | None = None,
    progress: bool | None = None,
    constant_tol: float = CONSTANT_TOL,
) -> InitReport:
    r"""*scale* (seed ``002_…`` §5.1, eq. 13): :math:`W \sim N(0, 1)`, biases 0, then layer by
    layer in forward order :math:`W \leftarrow W/\sqrt{\langle u^2\rangle + \epsilon}`, so every
    layer's output has unit second moment over features and samples on ``data``.

    One forward pass sets every layer (module docstring); it stops after the last layer set.

    Args:
        model: any ``nn.Module`` with layers of :mod:`relulab.init.layers`.
        data: the samples to measure: a tensor, a mapping of model arguments (HuggingFace:
            ``model(**batch)``), or an iterable of such batches (a ``DataLoader``; ``(input,
            target)`` batches give their input), joined along the first axis. The seed uses 5
            minibatches.
        eps: :math:`\epsilon`.
        generator: the random generator of the N(0, 1) draw (``torch.nn.init.normal_``).
        include: the layers to set (:data:`relulab.init.layers.Selector`: a glob on module
            names — matching a name or a dotted prefix of it —, a compiled regex, a predicate
            ``(name, module) -> bool``, or a sequence of these); default every layer.
        exclude: the layers to leave as they are (same forms), e.g.
            ``exclude=["pooler", "classifier"]``; default none.
        max_batches: read at most this many batches of an iterable ``data``.
        get_input: takes the model input out of each batch (default: a tensor or mapping as
            it is, the first element of a tuple).
        progress: a progress bar over the layers on stderr: ``True``, ``False``, or ``None``
            (default) when stderr is a terminal.
        constant_tol: the threshold of a constant input (:class:`ConstantInputWarning`).

    Returns:
        An :class:`InitReport` with each layer's output mean and second moment, and the
        weights left untouched.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> report = scale_(model, torch.randn(128, 4), eps=0.0)
        >>> [round(r.output_second_moment, 4) for r in report]
        [1.0, 1.0]
    """
    rule = _scale_rule("scale", False, False, eps)
    options = CalibrationOptions(include, exclude, max_batches, get_input, progress, constant_tol)
    return calibrate(model, data, rule, generator, options)


BIAS_FREE_HINT = (
    ". Pass bias_free='add' to give them a zero bias parameter first (the model gains "
    "parameters: build the optimiser afterwards), bias_free='scale' to scale them without "
    "centring (eq. 13 only), exclude= to leave them as they are, or use scale_ or lsuv_, which "
    "set no bias. (A bias before a train-mode BatchNorm is redundant: the norm removes each "
    "channel's batch mean.)"
)


def prepare_bias_free(
    bias_free: str,
    scheme: str = "scale_bias",
    hint: str = BIAS_FREE_HINT,
    scaled: str = "no bias: scaled, not centred",
) -> Callable[[list[WeightBlock]], dict[WeightBlock, str]]:
    """What a scheme that sets every bias does with the bias-free blocks, by ``bias_free``
    (:data:`~relulab.init.tensor.BIAS_FREE`), before it changes anything: ``"error"`` raises
    :class:`~relulab.init.InitNotApplicableError` naming them (with ``hint``), ``"add"`` gives
    each a zero bias parameter, ``"scale"`` leaves them without. The one rule of
    :func:`scale_bias_` and of RAI / RAAI (:func:`~relulab.init.init_model_`).

    Args:
        bias_free: ``"error"``, ``"add"`` or ``"scale"`` (checked here).
        scheme: the scheme's name, for the error.
        hint: what the error says to do instead.
        scaled: the report's note of a block left without a bias.

    Returns:
        ``prepare(blocks)``: does the above and returns the report's note of each bias-free
        block (``"bias added"`` or ``scaled``).

    Example:
        >>> from relulab.init.layers import select_blocks
        >>> blocks = select_blocks(nn.Linear(3, 2, bias=False))[0]
        >>> list(prepare_bias_free("add")(blocks).values()), blocks[0].bias.shape
        (['bias added'], torch.Size([2]))
    """
    if bias_free not in BIAS_FREE:
        raise ValueError(f"bias_free must be one of {', '.join(BIAS_FREE)}, got {bias_free!r}")

    def prepare(blocks: list[WeightBlock]) -> dict[WeightBlock, str]:
        if bias_free == "error":
            check_biases(scheme, blocks, hint)
        bias_free_blocks = [block for block in blocks if block.bias is None]
        if bias_free == "scale":
            return dict.fromkeys(bias_free_blocks, scaled)
        for block in bias_free_blocks:
            block.add_bias()
        return dict.fromkeys(bias_free_blocks, "bias added")

    return prepare


def scale_bias_(
    model: nn.Module,
    data: Data,
    per_feature: bool = False,
    eps: float = 1e-5,
    generator: torch.Generator | None = None,
    bias_free: BiasFree = "error",
    *,
    include: Selector | None = None,
    exclude: Selector | None = None,
    max_batches: int | None = None,
    get_input: Callable[[Any], Batch] | None = None,
    progress: bool | None = None,
    constant_tol: float = CONSTANT_TOL,
) -> InitReport:
    r"""*scale+bias* (seed ``002_…`` §5.1, eq. 14 then eq. 13): :math:`W \sim N(0, 1)`; per
    feature :math:`b_i = -\mu_i`; then the layer's scale on the centred outputs, applied to
    weights and biases. Every feature has zero sample mean on ``data``; the layer unit second
    moment, or every feature unit variance with ``per_feature=True`` (Krähenbühl et al. 2015).

    A layer without a bias (every convolution before a BatchNorm, every T5/LLaMA-style linear)
    cannot be centred: by ``bias_free`` — ``"error"`` (default: raise
    :class:`~relulab.init.InitNotApplicableError` naming them and these options, before
    anything is changed), ``"add"`` (give each a zero bias parameter, then centre it: the model
    gains parameters, so build the optimiser afterwards) or ``"scale"`` (scale them by eq. 13
    only, uncentred; the others as usual). A layer whose input is constant over the data is left
    as it was with a :class:`ConstantInputWarning`.

    Args:
        model: any ``nn.Module`` with layers of :mod:`relulab.init.layers`.
        data: the samples to measure (as :func:`scale_`).
        per_feature: one scale per feature instead of per layer.
        eps: :math:`\epsilon`.
        generator: the random generator of the N(0, 1) draw.
        bias_free: ``"error"``, ``"add"`` or ``"scale"``.
        include, exclude, max_batches, get_input, progress, constant_tol: as :func:`scale_`.

    Returns:
        An :class:`InitReport` (``note`` says ``bias added`` or ``no bias: scaled, not centred``).

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> report = scale_bias_(model, torch.randn(128, 4) + 3, eps=0.0)
        >>> [abs(r.output_mean) < 1e-5 for r in report]
        [True, True]
    """
    scheme = "scale_bias_per_feature" if per_feature else "scale_bias"
    prepare = prepare_bias_free(bias_free)
    rule = _scale_rule(scheme, True, per_feature, eps)
    options = CalibrationOptions(include, exclude, max_batches, get_input, progress, constant_tol)
    return calibrate(model, data, rule, generator, options, prepare)


def _lsuv_rule(tol: float, max_iter: int) -> Rule:
    def draw(weight: Tensor, generator: torch.Generator | None) -> None:
        orthogonal_(weight, generator=generator, draw="float64")

    def fit(block: WeightBlock, output: Tensor) -> tuple[Tensor, int]:
        weight = block.read()
        iterations = 0
        for iterations in range(1, max_iter + 1):  # noqa: B007 (reported)
            variance = output.var()
            if abs(float(variance) - 1.0) < tol:
                break
            weight.div_(torch.sqrt(variance))
            output = output / torch.sqrt(variance)  # linear in W with bias 0: the new output
        block.store(weight)
        return output, iterations

    def divisor(block: WeightBlock, output: Tensor) -> Tensor:
        return output.var()

    return Rule("lsuv", draw, fit, divisor, "variance")


def lsuv_(
    model: nn.Module,
    data: Data,
    tol: float = 0.02,
    max_iter: int = 20,
    generator: torch.Generator | None = None,
    *,
    include: Selector | None = None,
    exclude: Selector | None = None,
    max_batches: int | None = None,
    get_input: Callable[[Any], Batch] | None = None,
    progress: bool | None = None,
    constant_tol: float = CONSTANT_TOL,
) -> InitReport:
    r"""LSUV (Mishkin & Matas 2015): orthonormal weights, biases 0, then for each layer in
    forward order :math:`W \leftarrow W/\sqrt{\mathrm{Var}(u)}` until
    :math:`|\mathrm{Var}(u) - 1| <` ``tol`` or ``max_iter`` rounds (the variance over all the
    output's entries). A layer is linear in :math:`W` with its bias 0, so a round rescales the
    output measured once: every round runs within the one forward pass. Unlike the ``lsuv``
    package, which scales an attention only through its ``out_proj`` (after an orthonormal
    ``in_proj``), each of q, k, v is set on its own output too.

    Args:
        model: any ``nn.Module`` with layers of :mod:`relulab.init.layers`.
        data: the samples to measure (as :func:`scale_`).
        tol: the tolerance on the output variance.
        max_iter: the most rounds per layer.
        generator: the random generator of the orthogonal draw.
        include, exclude, max_batches, get_input, progress, constant_tol: as :func:`scale_`.

    Returns:
        An :class:`InitReport` with the rounds each layer took.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> report = lsuv_(model, torch.randn(256, 4))
        >>> all(r.iterations <= 20 for r in report)
        True
    """
    options = CalibrationOptions(include, exclude, max_batches, get_input, progress, constant_tol)
    return calibrate(model, data, _lsuv_rule(tol, max_iter), generator, options)
