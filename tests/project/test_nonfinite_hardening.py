"""Issue 47 items 5 (Monitor part), 6 and 7: non-finite values are never silent in the Monitor
and the initialisers, and an empty path or list is an error.

* the Monitor flags a layer whose activations hold NaN or ±inf (``non_finite`` 1.0, the
  statistics NaN, never "balanced"), warns once naming it and the step; a batch of 0 samples is
  refused when made, and one that reaches no activation (a ``forward=`` dropping it) skips the
  step with one warning instead of a ``ModelRunError`` wrapping amin's ``IndexError``;
* every public initialiser of :mod:`relulab.init` refuses NaN, ±inf or empty data, a fan-in of
  0 and NaN or infinite parameters with a ``ValueError``, the weights unchanged, and no
  misleading :class:`~relulab.init.ConstantInputWarning`;
* ``log_dir=""`` and friends are a ``ValueError`` in the Monitor, its config and the callbacks.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import pytest
import torch
from torch import nn

from relulab import init
from relulab.nn.activations import ReLUMinusB
from relulab.probe import Monitor, MonitorConfig, MonitorWarning


class Times(nn.Module):
    """Multiplies its input by a constant (``inf``: every activation after it is ±inf/NaN)."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


def _mlp(middle: nn.Module | None = None) -> nn.Sequential:
    torch.manual_seed(0)
    middle = middle if middle is not None else nn.Identity()
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), middle, nn.Linear(8, 8), nn.ReLU())


def _monitor_warnings(monitor: Monitor, steps: range) -> list[list[str]]:
    lines = []
    for step in steps:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            monitor.step(step)
        lines.append([str(w.message) for w in caught if issubclass(w.category, MonitorWarning)])
    return lines


# -- (a) non-finite activations -----------------------------------------------------------------
@pytest.mark.parametrize("factor", [math.inf, -math.inf, math.nan])
def test_non_finite_activations_are_flagged_nan_and_warned_once(factor):
    """Before issue 46 a NaN layer read '0 dead, 100 % balanced'; now its statistics are NaN,
    its non_finite flag 1.0 in the history and TensorBoard, one warning names it and the step
    (before this change the flag was nowhere in what the Monitor records)."""
    scalars: dict[str, float] = {}

    class Writer:
        def add_scalar(self, tag: str, value: float, step: int) -> None:
            scalars[tag] = value

    model = _mlp(Times(factor))
    monitor = Monitor(model, torch.randn(16, 4), every=1, thresholds=None, writer=Writer())
    lines = _monitor_warnings(monitor, range(3))
    assert [len(per_step) for per_step in lines] == [1, 0, 0]  # once, not every step
    assert "step 0" in lines[0][0] and "4#0" in lines[0][0] and "non-finite" in lines[0][0]
    table = monitor.table(2)
    assert table.loc["1#0", "non_finite"] == 0.0 and table.loc["1#0", "balanced_fraction"] >= 0
    assert table.loc["4#0", "non_finite"] == 1.0
    assert table.loc["4#0"].drop("non_finite").isna().all()  # never "balanced"
    assert scalars["relulab/non_finite/4#0"] == 1.0 and scalars["relulab/non_finite/1#0"] == 0.0
    (alert,) = monitor.alerts
    assert (alert.layer, alert.step, alert.statistic) == ("4#0", 0, "non_finite")


# -- (b) a batch of 0 samples -----------------------------------------------------------------
@pytest.mark.parametrize(
    "batch",
    [torch.randn(0, 4), {"x": torch.randn(0, 4)}, {"inputs": [torch.randn(0, 4)]}],
    ids=["tensor", "mapping", "nested"],
)
def test_a_batch_of_zero_samples_is_refused_when_made(batch):
    """The nested batch was accepted, then measured as a ModelRunError wrapping IndexError."""
    with pytest.raises(ValueError, match="got a batch of 0 samples"):
        Monitor(_mlp(), batch, forward=lambda model, b: model(torch.randn(0, 4)))


def test_a_forward_that_reaches_no_activation_skips_the_step_with_one_warning():
    """Before: ModelRunError('the model could not run …: amin(): Expected reduction dim 0 to
    have non-zero size') at every measurement — a training hook stopping the training."""
    monitor = Monitor(_mlp(), torch.randn(8, 4), every=1, forward=lambda m, b: m(b[:0]))
    lines = _monitor_warnings(monitor, range(3))
    assert [len(per_step) for per_step in lines] == [1, 0, 0]
    assert "got a batch of 0 samples" in lines[0][0] and "1#0" in lines[0][0]
    assert monitor.step(3) == {} and monitor.history.empty


# -- (c) the initialisers -----------------------------------------------------------------------
def _data(kind: str) -> torch.Tensor:
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    if kind == "empty":
        return x[:0]
    if kind in ("nan", "inf"):
        x[3, 1] = math.nan if kind == "nan" else math.inf
    return x


def _shift_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), ReLUMinusB(0.1), nn.Linear(8, 2))


DATA_INITS: dict[str, Callable[[nn.Module, torch.Tensor], object]] = {
    "lsuv_": init.lsuv_,
    "scale_": init.scale_,
    "scale_bias_": init.scale_bias_,
    "apply_init_": lambda model, data: init.apply_init_(model, "scale_bias", data),
    "calibrate_relu_shift_": init.calibrate_relu_shift_,
}

ZERO_FAN_IN: dict[str, Callable[[], object]] = {
    "rai_": lambda: init.rai_(torch.zeros(4, 0), torch.zeros(4)),
    "raai_": lambda: init.raai_(torch.zeros(4, 0), torch.zeros(4)),
    "correlated_": lambda: init.correlated_(torch.zeros(4, 0, 3), torch.zeros(4)),
    "init_model_": lambda: init.init_model_(nn.Linear(0, 4), "rai"),
}

NON_FINITE_PARAMETERS: dict[str, Callable[[torch.Tensor], object]] = {
    "normal_": lambda w: init.normal_(w, mean=math.inf),
    "kaiming_normal_": lambda w: init.kaiming_normal_(w, gain=math.inf),
    "kaiming_uniform_": lambda w: init.kaiming_uniform_(w, gain=math.nan, draw="float64"),
    "orthogonal_": lambda w: init.orthogonal_(w, math.nan),
    "rai_": lambda w: init.rai_(w, torch.zeros(3), std=math.nan),
}

#: Public initialisers with nothing above to refuse: torch's own objects (``is`` torch's, a
#: drop-in guarantee), those without data or parameters, and the engine's arithmetic.
NOT_APPLICABLE = {*init.TORCH_FUNCTIONS, "lecun_normal_", "torch_default_", "rescale_layer_"}


def test_every_public_initialiser_is_covered():
    public = {name for name in init.__all__ if name.endswith("_")}
    covered = {*DATA_INITS, *ZERO_FAN_IN, *NON_FINITE_PARAMETERS, *NOT_APPLICABLE}
    assert public <= covered, sorted(public - covered)


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in model.state_dict().items()}


@pytest.mark.parametrize("kind", ["nan", "inf", "empty"])
@pytest.mark.parametrize("name", sorted(DATA_INITS))
def test_data_inits_refuse_non_finite_or_empty_data_unchanged(name, kind):
    """Before: NaN or ±inf weights returned with a report (and, for scale_ with inf data, a
    ConstantInputWarning blaming a constant input); empty data: NaN weights and var() spam."""
    model = _shift_model() if name == "calibrate_relu_shift_" else _mlp()
    before = _state(model)
    message = "0 samples" if kind == "empty" else "data holds 1 non-finite value"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=message):
            DATA_INITS[name](model, _data(kind))
    assert not caught, [str(w.message) for w in caught]  # no ConstantInputWarning, no var()
    after = _state(model)
    assert all(torch.equal(before[key], after[key]) for key in before)


@pytest.mark.parametrize("name", sorted(ZERO_FAN_IN))
def test_a_zero_fan_in_is_a_clear_error(name):
    """Before: ZeroDivisionError (rai_, correlated_, init_model_ 'rai')."""
    with pytest.raises(ValueError, match="has fan-in 0"):
        ZERO_FAN_IN[name]()


def test_torch_default_with_zero_fan_in_is_torchs_no_op():
    """Before: ZeroDivisionError with draw='float64' where torch's reset_parameters works."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's own, making the layer
        layer = nn.Linear(0, 4)
    init.torch_default_(layer.weight, layer.bias, draw="float64")
    assert torch.equal(layer.bias, torch.zeros(4))  # U(±0), as torch's reset_parameters


@pytest.mark.parametrize("name", sorted(NON_FINITE_PARAMETERS))
def test_non_finite_parameters_are_refused_unchanged(name):
    """Before: the tensor filled with NaN or ±inf, silently."""
    weight = torch.full((3, 5), 0.5)
    with pytest.raises(ValueError, match="finite"):
        NON_FINITE_PARAMETERS[name](weight)
    assert torch.equal(weight, torch.full((3, 5), 0.5))


@pytest.mark.parametrize("scheme", ["scale_", "lsuv_", "scale_bias_"])
def test_a_layer_that_overflows_on_finite_data_is_refused_and_restored(scheme):
    """Finite data, but the model overflows before the second layer: before, that layer got
    NaN weights (or a ConstantInputWarning blaming a constant input); now it is restored and the
    error names it."""
    model = _mlp(Times(math.inf))
    before = _state(model)
    with pytest.raises(ValueError, match=r"layer '3' \(Linear\) gave .* non-finite"):
        getattr(init, scheme)(model, _data("finite"))
    assert torch.equal(model[3].weight, before["3.weight"])
    assert torch.isfinite(model[0].weight).all()


# -- (d) empty paths and lists ------------------------------------------------------------------
EMPTY_OPTIONS = [
    ({"log_dir": ""}, "log_dir must not be empty"),
    ({"log_dir": "   "}, "log_dir must not be empty"),
    ({"prefix": ""}, "prefix must be a non-empty string"),
    ({"statistics": []}, "statistics is empty"),
    ({"statistics": "dead_fraction"}, "statistics must be a list of names"),
]


@pytest.mark.parametrize(("options", "message"), EMPTY_OPTIONS, ids=lambda o: repr(o))
def test_empty_paths_and_lists_are_errors(options, message):
    """Before: log_dir="" wrote to the working directory, prefix="" gave tags "/…",
    statistics=[] recorded nothing and statistics="dead_fraction" was read letter by letter
    ("unknown statistics ['_', 'a', …]")."""
    with pytest.raises(ValueError, match=message):
        MonitorConfig(**options)
    with pytest.raises(ValueError, match=message):
        Monitor(_mlp(), torch.randn(4, 4), **options)


@pytest.mark.parametrize("options", [EMPTY_OPTIONS[0][0]], ids=lambda o: repr(o))
@pytest.mark.parametrize("callback", ["RelulabLightningCallback", "RelulabTrainerCallback"])
def test_callbacks_refuse_empty_options_and_empty_batches_when_made(callback, options):
    """Before: accepted, then the Monitor made at the start of training wrote to the working
    directory (log_dir="") or raised there (a batch of 0 samples)."""
    from relulab.probe import callbacks

    try:
        made = getattr(callbacks, callback)
    except ImportError:
        pytest.skip(f"{callback} needs its framework")
    with pytest.raises(ValueError, match="log_dir must not be empty"):
        made(torch.randn(4, 4), every=2, **options)
    with pytest.raises(ValueError, match="got a batch of 0 samples"):
        made(torch.randn(0, 4), every=2)
