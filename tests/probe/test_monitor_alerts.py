"""relulab.probe.Monitor's warnings (issue 46): one line per measurement that flags something
new, however many layers and statistics cross; remedies filtered by the activation family as
advise() filters them; a non-finite network warned about, its statistics NaN — never read as
healthy."""

import math
import warnings

import pytest
import torch
from torch import nn

from relulab.probe.alerts import NON_FINITE, review
from relulab.probe.measurement import Measured
from relulab.probe.monitor import Monitor, MonitorWarning, Thresholds


def _caught(monitor: Monitor, steps) -> list[list[str]]:
    """The MonitorWarning lines of each step."""
    lines = []
    for step in steps:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            monitor.step(step)
        lines.append([str(w.message) for w in caught if issubclass(w.category, MonitorWarning)])
    return lines


def _deep_mlp(depth: int = 40, width: int = 32) -> nn.Sequential:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(16 if i == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def test_a_40_layer_mlp_gets_at_most_one_line_per_measurement_while_training():
    """Before: one warning per layer and statistic (98 in 300 steps of this run, 97 of them at
    step 0); now one line per measurement, and only when something new crossed."""
    model = _deep_mlp()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    monitor = Monitor(model, torch.randn(128, 16), every=50)
    generator = torch.Generator().manual_seed(1)
    lines = []
    for step in range(300):
        lines += _caught(monitor, [step])
        x = torch.randn(32, 16, generator=generator)
        loss = (model(x) - x[:, :1]).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert max(len(per_step) for per_step in lines) == 1  # ≤ 1 line per measurement
    first = lines[0][0]
    assert first.startswith("relulab monitor, step 0: ") and " of 40 layers flagged" in first
    assert "\n" not in first and len(monitor.alerts) > 40  # one alert per layer and statistic
    assert "… " in first and "more" in first  # the worst few shown, the rest counted


def test_a_summary_names_every_flagged_layer_and_counts_the_new_ones():
    found = Measured(
        {f"{i}#0": {"dead_fraction": 0.5 if i < 3 else 0.0} for i in range(10)},
        dict.fromkeys((f"{i}#0" for i in range(10)), "rectifier"),
    )
    warned: set = set()
    alerts, line = review(0, found, Thresholds(), warned)
    assert len(alerts) == 3 and "3 of 10 layers flagged (3 new)" in line
    assert review(1, found, Thresholds(), warned) == ([], None)  # nothing new: silent
    found.statistics["5#0"]["dead_fraction"] = 0.2
    alerts, line = review(2, found, Thresholds(), warned)
    assert [a.layer for a in alerts] == ["5#0"] and "4 of 10 layers flagged (1 new)" in line


def _spread(activation: nn.Module) -> tuple[nn.Module, torch.Tensor]:
    """Tiny weights and biases 0 … 3: the unit means spread far more than the samples vary
    (delta_relative ≫ 1) — a BERT pooler's Tanh in issue 46."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 20), activation)
    with torch.no_grad():
        model[0].weight.mul_(0.01)
        model[0].bias.copy_(torch.linspace(0, 3, 20))
    return model, torch.randn(64, 4)


def test_remedies_follow_the_activation_family_as_advise_does():
    (tanh_line,) = _caught(Monitor(*_spread(nn.Tanh())), [0])[0]
    (relu_line,) = _caught(Monitor(*_spread(nn.ReLU())), [0])[0]
    assert "delta_relative" in tanh_line and "delta_relative" in relu_line
    # neither is offered for a high Δ (each raised the held-out loss of a broken network in
    # relulab bench remedies), and the Tanh is not even told of ReLU − b
    assert "(withheld: scale_bias (hurt))" in tanh_line and "relu_minus_b" not in tanh_line
    assert "(withheld: relu_minus_b (hurt), scale_bias (hurt))" in relu_line
    model, x = _spread(nn.Tanh())
    monitor = Monitor(model, x)
    with pytest.warns(MonitorWarning):
        monitor.measure(0)
    (alert,) = monitor.alerts
    assert "relu_minus_b" not in alert.advice and "scale_bias (hurt)" in alert.advice


def _nan_weight() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
    with torch.no_grad():
        model[2].weight[0, 0] = float("nan")
    return model, torch.randn(16, 4)


@pytest.mark.parametrize("thresholds", [Thresholds(), None])
def test_a_nan_weight_warns_once_with_the_layer_and_step_and_reads_as_nan(thresholds):
    """Before: no warning, 'dead 0, balanced 1.0' at the NaN layer (NaN compares false)."""
    model, x = _nan_weight()
    monitor = Monitor(model, x, every=1, thresholds=thresholds)
    lines = _caught(monitor, [0, 1, 2])
    assert [len(per_step) for per_step in lines] == [1, 0, 0]  # once, at the step it appears
    (line,) = lines[0]
    assert "step 0" in line and "non-finite" in line and "from 3#0" in line
    table = monitor.table(0)
    assert not math.isnan(table.loc["1#0", "dead_fraction"])  # before the NaN: measured
    bad = table.loc["3#0"]
    assert bad.drop("non_finite").isna().all()  # every statistic NaN, none of them healthy
    assert bad["non_finite"] == 1.0 and table.loc["1#0", "non_finite"] == 0.0  # the flag
    (alert,) = [a for a in monitor.alerts if a.statistic == NON_FINITE]
    assert alert.layer == "3#0" and alert.step == 0 and "non-finite" in alert.message()


def test_infinite_inputs_and_effective_rank_are_non_finite_not_an_error():
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU())
    x = torch.randn(8, 3)
    x[0, 0] = float("inf")
    monitor = Monitor(model, x, effective_rank=True, thresholds=None, histograms=True)
    with pytest.warns(MonitorWarning, match="non-finite activations"):
        (stats,) = monitor.measure(0).values()
    assert stats.pop("non_finite") == 1.0
    assert all(math.isnan(value) for value in stats.values())
    assert "effective_rank_centred" in stats and stats.keys() >= {"dead_fraction", "delta"}


# -- units killed by the optimiser: the learning rate and the step named -----------------------
def _lr_killed(lr: float = 0.1):
    """A 4-layer Kaiming ReLU MLP trained with Adam at lr 0.1: most units of its deeper layers
    die within the first 25 steps (dead_fraction ≤ 0.03 at step 0, 0.84–0.97 at step 25)."""
    from relulab import init

    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for i in range(4):
        layers += [nn.Linear(16 if i == 0 else 64, 64), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(64, 1))
    init.init_model_(model, "kaiming_normal", torch.Generator().manual_seed(0))
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(512, 16, generator=generator)
    return model, x, torch.tanh(2 * x[:, :1]), generator


def _train(model, x, y, generator, optimiser, monitor, steps: int = 51) -> list[list[str]]:
    lines = []
    for step in range(steps):
        lines += _caught(monitor, [step])
        index = torch.randint(0, len(x), (64,), generator=generator)
        loss = (model(x[index]) - y[index]).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return lines


def test_units_killed_by_the_learning_rate_are_reported_with_the_lr_and_the_step():
    """Acceptance (issue 46). Before: 'initialise with RAI or RAAI' at step 25; the history
    showed when they died, the learning rate was never named."""
    model, x, y, generator = _lr_killed()
    optimiser = torch.optim.Adam(model.parameters(), lr=0.1)
    monitor = Monitor(model, x[:256], every=25, optimizer=optimiser)
    lines = _train(model, x, y, generator, optimiser, monitor)
    (line,) = lines[25]
    assert "units died during training (between step 0 and step 25, learning rate 0.1" in line
    assert monitor.learning_rates == {0: 0.1, 25: 0.1, 50: 0.1}
    died = [a for a in monitor.alerts if a.statistic == "dead_fraction"]
    assert died and all("between step 0 and step 25" in a.advice for a in died)
    assert all("learning rate 0.1" in a.advice for a in died)
    advice = monitor.advice()
    named = [*(a.measured_text() for a in advice), *(w.measured for w in advice.withheld)]
    found = [text for text in named if "units died during training" in text]
    assert found and "learning rate 0.1" in found[0] and "step 25" in found[0]
    first = advice[0] if advice else advice.withheld[0]
    assert first.finding == "units_died"  # before the init-level findings of the same layers


def test_the_learning_rate_comes_from_a_schedule_or_is_said_to_be_unknown():
    model, x, y, generator = _lr_killed()
    optimiser = torch.optim.Adam(model.parameters(), lr=0.1)
    monitor = Monitor(model, x[:256], every=25, learning_rate=lambda step: 0.1 * (1 + step))
    lines = _train(model, x, y, generator, optimiser, monitor, steps=26)
    assert "learning rate 0.1–2.6" in lines[25][0]
    model, x, y, generator = _lr_killed()
    optimiser = torch.optim.Adam(model.parameters(), lr=0.1)
    lines = _train(model, x, y, generator, optimiser, Monitor(model, x[:256], every=25), 26)
    assert "learning rate not known (give the Monitor optimizer= or learning_rate=)" in lines[25][0]
    with pytest.raises(ValueError, match="optimizer must be a torch optimiser"):
        Monitor(model, x, optimizer=0.1)


def test_a_nan_alert_names_the_parameter_and_the_learning_rate():
    model, x = _nan_weight()
    monitor = Monitor(model, x, every=1, learning_rate=0.5)
    (line,) = _caught(monitor, [0])[0]
    assert "parameters holding NaN or ±inf: 2.weight (1 of 64)" in line
    assert "learning rate 0.5 at this step" in line


def test_shifted_inputs_are_named_first_in_the_monitors_line():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    (line,) = _caught(Monitor(model, torch.randn(128, 8) + 10.0), [0])[0]
    assert "inputs input: input_mean_variance_ratio" in line
    assert line.split("Try ")[1].startswith("first, for the inputs: relulab.probe.standardise")
