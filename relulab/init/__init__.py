"""Initialisers: per-tensor functions in the style of ``torch.nn.init`` (in place, ``_`` suffix,
a ``generator`` argument), and model-level ones — per-tensor schemes applied to every layer and
data-dependent schemes — each returning a layer-by-layer report. Every scheme name is defined
once, in the registry :data:`SCHEMES` (:mod:`relulab.init.schemes`).

>>> from relulab import init
>>> init.kaiming_normal_(layer.weight, a=0, mode="fan_in", generator=g)   # doctest: +SKIP
>>> report = init.scale_bias_(model, data)                                # doctest: +SKIP
>>> report.to_frame()                                                     # doctest: +SKIP
"""

from relulab.init.correlated import correlated_
from relulab.init.model import (
    InitReport,
    LayerReport,
    lsuv_,
    parameter_layers,
    rescale_layer_,
    scale_,
    scale_bias_,
)
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
from relulab.init.tensor import (
    DRAWS,
    InitNotApplicableError,
    fans,
    kaiming_normal_,
    kaiming_uniform_,
    lecun_normal_,
    normal_,
    orthogonal_,
    raai_,
    rai_,
    rai_matrix,
    torch_default_,
)

__all__ = [
    "DRAWS",
    "FAN_IN_VARIANCE",
    "INIT_SCHEMES",
    "MODEL_INITS",
    "SCHEMES",
    "InitNotApplicableError",
    "InitReport",
    "LayerReport",
    "Scheme",
    "analytic_relu_shift",
    "apply_init_",
    "calibrate_relu_shift_",
    "correlated_",
    "fans",
    "get_scheme",
    "init_model_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "lecun_normal_",
    "lsuv_",
    "normal_",
    "orthogonal_",
    "parameter_layers",
    "raai_",
    "rai_",
    "rai_matrix",
    "rescale_layer_",
    "scale_",
    "scale_bias_",
    "torch_default_",
]
