"""The catalogue of findings and remedies the advice draws on, each remedy with its code, its
API and its source — defined once, here.

A remedy is a *candidate*: :func:`relulab.probe.advice.advise` offers it for a finding only
where relulab's remedies benchmark (:mod:`relulab.bench.remedies`, its committed table read by
:mod:`relulab.probe.evidence`) measured it to lower the held-out loss of a network showing
that finding. The findings come in the order the advice checks them — the inputs and
non-finite values first (:mod:`relulab.probe.upstream`), then the optimiser, then the
activations' statistics — so that the simplest fix is named first.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["API", "FINDINGS", "REMEDIES", "SNIPPETS", "UPSTREAM_FINDINGS", "Remedy"]

#: What each finding means, one sentence each, in the order the advice checks them.
FINDINGS: dict[str, str] = {
    "non_finite": "a parameter, an input or an activation holds NaN or ±inf: every statistic "
    "downstream of it, and the loss, is NaN",
    "unstandardised_inputs": "the inputs are not standardised: their per-feature means are "
    "large against their spread (their sample mean/variance ratio r ≥ 1: every first-layer unit "
    "sees mostly one shared offset), or their feature scales differ by a decade or more (the "
    "largest features dominate every first-layer unit)",
    "units_died": "units that fired at an earlier measurement are dead now: training steps "
    "pushed their pre-activations below zero on every sample",
    "high_delta": "the unit means spread as much as the samples vary within a unit: every "
    "sample's representation is mostly one shared offset (representation collapse)",
    "dead_units": "units whose pre-activation is ≤ 0 on every sample: they never fire and get "
    "no gradient",
    "always_on_units": "units whose pre-activation is > 0 on every sample: they are linear on "
    "the data",
    "sample_variance_decay": "the sample variance's share of the pre-activation's second moment "
    "falls with depth: every sample maps to nearly the same pre-activation, units are nearly "
    "always on or off",
}

#: The findings about what comes before the activations (:mod:`relulab.probe.upstream`).
UPSTREAM_FINDINGS = ("non_finite", "unstandardised_inputs", "units_died")

#: Code for each remedy, by the name :attr:`Remedy.how` gives (``model``, ``data``,
#: ``optimizer`` and ``scheduler`` are yours).
SNIPPETS: dict[str, str] = {
    "find_nan": (
        "from relulab.probe.upstream import non_finite_parameters\n\n"
        "print(non_finite_parameters(model))  # {'2.weight': (1, 4096)}: name -> (bad, size)\n"
        "model.get_submodule('2').reset_parameters()  # re-draw that layer, or load a "
        "checkpoint;\n# then find what put it there (a diverged step: lower the learning rate, "
        "clip gradients)"
    ),
    "standardise": (
        "from relulab.probe import standardise\n\n"
        "x_test = standardise(x_test, reference=x_train)  # the training set's mean and std\n"
        "x_train = standardise(x_train)  # per feature: (x - mean) / std"
    ),
    "lower_lr": (
        "for group in optimizer.param_groups:\n"
        "    group['lr'] *= 0.1  # or build the optimiser with a 10x smaller lr"
    ),
    "warmup": (
        "import torch\n\n"
        "scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, "
        "total_iters=100)\n"
        "# scheduler.step() after every optimizer.step(): the lr climbs to its value in 100 steps"
    ),
    "relu_minus_b": (
        "from relulab.init import analytic_relu_shift, calibrate_relu_shift_\n"
        "from relulab.nn import ReLUMinusB, replace_activations\n\n"
        "b_star = analytic_relu_shift(scheme='torch_default')  # 1/sqrt(6 pi) = 0.23\n"
        "replace_activations(model, ReLUMinusB(b_star))  # every nn.ReLU, its own copy\n"
        "calibrate_relu_shift_(model, data)  # per unit b_i = <ReLU(z_i)> on the data"
    ),
    "scale_bias": (
        "from relulab.init import scale_bias_\n\n"
        "scale_bias_(model, data)  # b_i = -mean_i, then the layer's scale (bias_free='add' "
        "for bias-free layers)"
    ),
    "rai": (
        "import torch\n"
        "from relulab import init\n\n"
        "init.init_model_(model, 'rai', torch.Generator().manual_seed(0))\n"
        "# bias-free layers (ResNet, Llama, T5): bias_free='add' (a zero bias, then drawn)\n"
        "# or bias_free='scale' (their weights drawn alone); one layer: init.rai_(w, b)"
    ),
    "raai": (
        "import torch\n"
        "from relulab import init\n\n"
        "init.init_model_(model, 'raai', torch.Generator().manual_seed(0))\n"
        "# bias-free layers (ResNet, Llama, T5): bias_free='add' (a zero bias, then drawn)\n"
        "# or bias_free='scale' (their weights drawn alone); one layer: init.raai_(w, b)"
    ),
    "positive_bias": (
        "from torch import nn\n"
        "from relulab import init\n\n"
        "for layer in model.modules():\n"
        "    if isinstance(layer, nn.Linear) and layer.bias is not None:\n"
        "        init.constant_(layer.bias, 0.1)  # a small positive bias"
    ),
    "default_init": (
        "import torch\n"
        "from relulab import init\n\n"
        "init.init_model_(model, 'torch_default', torch.Generator().manual_seed(0))\n"
        "# PyTorch's own: weights and biases U(+-1/sqrt(fan_in)), as nn.Linear draws them"
    ),
    "batch_norm": (
        "from torch import nn\n\n"
        "# per layer, BatchNorm between the Linear (or convolution) and the activation\n"
        "nn.Sequential(nn.Linear(n_in, n_out), nn.BatchNorm1d(n_out), nn.ReLU())"
    ),
    "residual_layer_norm": (
        "from torch import nn\n"
        "from relulab.nn.models import residual_block\n\n\n"
        "class Block(nn.Module):  # pre-LayerNorm residual: h + fc2(relu(fc1(LN(h))))\n"
        "    def __init__(self, width):\n"
        "        super().__init__()\n"
        "        self.norm = nn.LayerNorm(width)\n"
        "        self.fc1, self.fc2 = nn.Linear(width, width), nn.Linear(width, width)\n\n"
        "    def forward(self, h):\n"
        "        return residual_block(h, self.fc1, self.fc2, nn.functional.relu, 'pre', 1.0,\n"
        "                              self.norm).stream"
    ),
}


@dataclass(frozen=True)
class Remedy:
    """One candidate remedy for a finding.

    Attributes:
        text: what to do.
        how: the name of its code in :data:`SNIPPETS`.
        source: where it comes from (seed and section, or the practice it is).
        families: the activation families it applies to (ReLU−b: rectifiers only).
    """

    text: str
    how: str
    source: str
    families: tuple[str, ...] = ("rectifier", "leaky", "smooth", "other")


_CENTRE = Remedy(
    "centre every unit's pre-activation on the data: scale+bias sets each bias to minus its "
    "feature's sample mean, then scales the layer to unit sample variance",
    "scale_bias",
    "seed 002 §5.1 (scale+bias: b_i = -μ_i per feature, eq. 14, then eq. 13's scale)",
)
_STANDARDISE = Remedy(
    "standardise the inputs: subtract each feature's training-set mean and divide by its "
    "standard deviation (relulab.probe.standardise), the same numbers for every split",
    "standardise",
    "practice (LeCun et al. 1998, 'Efficient BackProp' §4.3: inputs of zero mean and equal "
    "variance)",
)
_RAI = Remedy(
    "initialise with RAI: one weight (or the bias) into each unit drawn from Beta(2, 1) > 0, "
    "so every unit fires on some inputs (bias-free layers: bias_free='add' or 'scale')",
    "rai",
    "seed 003 §3 and Table 1 (RAI, Lu et al. 2020: a lower dead-node probability "
    "than the 1/2 of symmetric inits)",
)
_RAAI = Remedy(
    "initialise with RAAI: RAI's Beta(2, 1) entry per unit with anti-correlated rows "
    "(bias-free layers: bias_free='add' or 'scale')",
    "raai",
    "seed 003 §3 and Table 1 (RAAI: RAI with rows anti-correlated in pairs)",
)
_POSITIVE_BIAS = Remedy(
    "give the layers a small positive bias, which moves every unit's kink so it fires "
    "on the data — and pushes units towards the linear regime",
    "positive_bias",
    "seed 004 §5.3 (a growing hidden bias moves the kinks: most units become active "
    "on all inputs, learning turns linear early)",
)
_DEFAULT_INIT = Remedy(
    "re-initialise with PyTorch's default (init_model_(model, 'torch_default')): weights "
    "and biases U(±1/√fan_in), so no bias pins the units on or off",
    "default_init",
    "practice (what nn.Linear.reset_parameters draws)",
)

#: The candidate remedies of each finding, in the order given when the benchmark cannot rank
#: them (:func:`relulab.probe.advice.remedies_for` orders the offered ones by their effect).
REMEDIES: dict[str, tuple[Remedy, ...]] = {
    "non_finite": (
        Remedy(
            "find the non-finite value: re-draw or restore the parameters named "
            "(module.reset_parameters(), or a checkpoint), then find what put it there — "
            "usually a diverged step (lower the learning rate, clip the gradients)",
            "find_nan",
            "relulab (relulab.probe.upstream.non_finite_parameters names them)",
        ),
    ),
    "unstandardised_inputs": (_STANDARDISE,),
    "units_died": (
        Remedy(
            "lower the learning rate (×0.1 in relulab's benchmark): the steps that killed the "
            "units were too large",
            "lower_lr",
            "practice (a large step moves a unit's kink off the data: the 'dying ReLU', Lu et "
            "al. 2020 §1)",
        ),
        Remedy(
            "warm the learning rate up: linearly from 1 % of it over the first 100 steps "
            "(torch.optim.lr_scheduler.LinearLR)",
            "warmup",
            "practice (Goyal et al. 2017, gradual warmup)",
        ),
        _RAI,
        _RAAI,
        _POSITIVE_BIAS,
    ),
    "high_delta": (
        Remedy(
            "replace each ReLU by ReLU − b (relulab.nn.ReLUMinusB) and centre it: the analytic "
            "shift b* = 1/√(6π) ≈ 0.23 holds where each pre-activation has variance 1/3 "
            "(PyTorch's default init on unit-second-moment inputs); calibrate_relu_shift_ "
            "measures the shift per unit on the data",
            "relu_minus_b",
            "seed 000 ('Adding bias after ReLU': Δ > 0 comes from ReLU's positive mean; "
            "ReLU − b with b = 0.2–0.3 gave the lowest Δ and loss); b* = s/√(2π), the "
            "half-normal mean (relulab.init.analytic_relu_shift)",
            families=("rectifier",),
        ),
        _CENTRE,
    ),
    "dead_units": (_RAI, _RAAI, _POSITIVE_BIAS, _DEFAULT_INIT),
    "always_on_units": (
        Remedy(
            _CENTRE.text + "; or smaller biases",
            "scale_bias",
            "seed 002 §5.1 and §6 (centred pre-activations use the nonlinearity at every "
            "layer); seed 004 §5 (biases drive units always on, the network towards a "
            "linear one)",
        ),
        _DEFAULT_INIT,
    ),
    "sample_variance_decay": (
        Remedy(
            _CENTRE.text,
            "scale_bias",
            "seed 002 §3 (the sample variance decays with depth in Kaiming-initialised ReLU "
            "nets, eq. 9's ratio r grows) and §5.1 (scale+bias keeps it: faster training)",
        ),
        Remedy(
            "put BatchNorm before each activation: every pre-activation then has zero sample "
            "mean and unit sample variance (gradients grow with depth instead, ×1.21² per "
            "layer)",
            "batch_norm",
            "seed 002 §4 (BatchNorm eliminates sample-variance decay; Fig. 3)",
        ),
        Remedy(
            "make the network residual with LayerNorm: pre-LN blocks h + f(LN(h)), so depth "
            "no longer compounds the decay",
            "residual_layer_norm",
            "practice (He et al. 2016 residual connections; Ba et al. 2016 LayerNorm; the "
            "pre-LN block of relulab.nn.models.residual_block)",
        ),
    ),
}

#: The relulab (or torch) API each remedy's code uses, for one-line messages.
API: dict[str, str] = {
    "find_nan": "relulab.probe.upstream.non_finite_parameters, then module.reset_parameters()",
    "standardise": "relulab.probe.standardise",
    "lower_lr": "optimizer.param_groups[i]['lr'] *= 0.1",
    "warmup": "torch.optim.lr_scheduler.LinearLR",
    "relu_minus_b": "relulab.nn.replace_activations + relulab.nn.ReLUMinusB with "
    "relulab.init.analytic_relu_shift, then relulab.init.calibrate_relu_shift_",
    "scale_bias": "relulab.init.scale_bias_",
    "rai": "relulab.init.init_model_(model, 'rai') / relulab.init.rai_",
    "raai": "relulab.init.init_model_(model, 'raai') / relulab.init.raai_",
    "positive_bias": "nn.init.constant_(layer.bias, 0.1)",
    "default_init": "relulab.init.init_model_(model, 'torch_default')",
    "batch_norm": "nn.BatchNorm1d / nn.BatchNorm2d before the activation",
    "residual_layer_norm": "relulab.nn.models.residual_block (norm='pre') with nn.LayerNorm",
}
