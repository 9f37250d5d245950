"""Initialisers: per-tensor functions in the style of ``torch.nn.init`` (in place, ``_`` suffix,
a ``generator`` argument), and model-level ones — per-tensor schemes applied to every layer and
data-dependent schemes — each returning a layer-by-layer report.

>>> from relulab import init
>>> init.kaiming_normal_(layer.weight, mode="fan_in", generator=g)        # doctest: +SKIP
>>> report = init.scale_bias_(model, data)                                # doctest: +SKIP
>>> report.to_frame()                                                     # doctest: +SKIP
"""

from relulab.init.correlated import correlated_
from relulab.init.model import (
    MODEL_INITS,
    InitReport,
    LayerReport,
    analytic_relu_shift,
    calibrate_relu_shift_,
    init_model_,
    lsuv_,
    parameter_layers,
    scale_,
    scale_bias_,
)
from relulab.init.tensor import (
    FAN_IN_VARIANCE,
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
    "FAN_IN_VARIANCE",
    "normal_",
    "torch_default_",
    "MODEL_INITS",
    "InitReport",
    "LayerReport",
    "analytic_relu_shift",
    "calibrate_relu_shift_",
    "correlated_",
    "fans",
    "init_model_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "lecun_normal_",
    "lsuv_",
    "orthogonal_",
    "parameter_layers",
    "raai_",
    "rai_",
    "rai_matrix",
    "scale_",
    "scale_bias_",
]
