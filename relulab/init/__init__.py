"""Initialisers: per-tensor functions in the style of ``torch.nn.init`` (in place, ``_`` suffix,
a ``generator`` argument), and model-level ones — per-tensor schemes applied to every layer and
data-dependent schemes — each returning a layer-by-layer report. Every scheme name is defined
once, in the registry :data:`SCHEMES` (:mod:`relulab.init.schemes`).

A drop-in for ``torch.nn.init``: ``from relulab import init as nn_init`` has every name of
``torch.nn.init.__all__``, torch's own objects where relulab adds nothing
(:data:`TORCH_FUNCTIONS`, the deprecated :data:`DEPRECATED_ALIASES`), and relulab's namesakes
(``normal_``, ``kaiming_normal_``, ``kaiming_uniform_``, ``orthogonal_``) with torch's
signatures and, by default, torch's draws (see :mod:`relulab.init.tensor` and
``docs/init-dropin.md``).

>>> import torch
>>> from relulab import init as nn_init
>>> nn_init.xavier_uniform_ is torch.nn.init.xavier_uniform_
True

>>> from relulab import init
>>> init.kaiming_normal_(layer.weight, a=0, mode="fan_in", generator=g)   # doctest: +SKIP
>>> report = init.scale_bias_(model, data)                                # doctest: +SKIP
>>> report.to_frame()                                                     # doctest: +SKIP
"""

from relulab.init.calibrate import ConstantInputWarning
from relulab.init.correlated import correlated_
from relulab.init.layers import Selector, UntouchedWeight, WeightBlock, select_blocks
from relulab.init.model import (
    InitReport,
    LayerReport,
    lsuv_,
    parameter_layers,
    rescale_layer_,
    scale_,
    scale_bias_,
)
from relulab.init.rai import raai_, rai_, rai_matrix
from relulab.init.relu_shift import analytic_relu_shift, calibrate_relu_shift_
from relulab.init.schemes import (
    FAN_IN_VARIANCE,
    INIT_SCHEMES,
    MODEL_INITS,
    SCHEMES,
    Scheme,
    apply_init_,
    get_scheme,
    init_model_,
)

# torch's deprecated aliases and private _calculate_fan_in_and_fan_out are imported for code
# written for torch.nn.init but left out of __all__
from relulab.init.tensor import (  # noqa: F401
    BIAS_FREE,
    DEPRECATED_ALIASES,
    DRAWS,
    TORCH_FUNCTIONS,
    InitNotApplicableError,
    _calculate_fan_in_and_fan_out,
    calculate_gain,
    constant,
    constant_,
    dirac,
    dirac_,
    eye,
    eye_,
    fans,
    kaiming_normal,
    kaiming_normal_,
    kaiming_uniform,
    kaiming_uniform_,
    lecun_normal_,
    normal,
    normal_,
    ones_,
    orthogonal,
    orthogonal_,
    sparse,
    sparse_,
    torch_default_,
    trunc_normal_,
    uniform,
    uniform_,
    xavier_normal,
    xavier_normal_,
    xavier_uniform,
    xavier_uniform_,
    zeros_,
)

__all__ = [
    "BIAS_FREE",
    "ConstantInputWarning",
    "Selector",
    "UntouchedWeight",
    "WeightBlock",
    "select_blocks",
    "DEPRECATED_ALIASES",
    "DRAWS",
    "FAN_IN_VARIANCE",
    "INIT_SCHEMES",
    "MODEL_INITS",
    "SCHEMES",
    "TORCH_FUNCTIONS",
    "InitNotApplicableError",
    "InitReport",
    "LayerReport",
    "Scheme",
    "analytic_relu_shift",
    "apply_init_",
    "calculate_gain",
    "calibrate_relu_shift_",
    "constant_",
    "correlated_",
    "dirac_",
    "eye_",
    "fans",
    "get_scheme",
    "init_model_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "lecun_normal_",
    "lsuv_",
    "normal_",
    "ones_",
    "orthogonal_",
    "parameter_layers",
    "raai_",
    "rai_",
    "rai_matrix",
    "rescale_layer_",
    "scale_",
    "scale_bias_",
    "sparse_",
    "torch_default_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]
