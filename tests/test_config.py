"""Typed --set overrides."""

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal

import pytest

from relulab.config import ConfigError, apply_overrides, config_to_dict


@dataclass(frozen=True)
class Toy:
    steps: int = 10
    lr: float = 0.1
    flag: bool = False
    name: str = "x"
    kind: Literal["grid", "uniform"] = "grid"
    sweep: tuple[float, ...] = (1.0, 2.0)
    span: tuple[float, float] = (0.0, 1.0)

    def validate(self):
        if self.steps < 1:
            raise ConfigError("steps must be positive")


def test_every_supported_type_parses():
    toy = apply_overrides(
        Toy(),
        [
            "steps=5",
            "lr=1e-3",
            "flag=yes",
            "name=abc",
            "kind=uniform",
            "sweep=-1,0.5,2",
            "span=-2, 3",
        ],
    )
    assert toy == Toy(5, 1e-3, True, "abc", "uniform", (-1.0, 0.5, 2.0), (-2.0, 3.0))
    assert config_to_dict(toy)["sweep"] == [-1.0, 0.5, 2.0]


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("steps=1.5", "expected an integer"),
        ("lr=fast", "expected a number"),
        ("lr=nan", "finite"),
        ("flag=maybe", "true or false"),
        ("kind=random", "not one of grid, uniform"),
        ("span=1", "expected 2 comma-separated values"),
        ("sweep=", "comma-separated list"),
        ("nokey=1", "unknown config key 'nokey'"),
        ("steps", "key=value"),
        ("steps=0", "steps must be positive"),
    ],
)
def test_bad_overrides_raise_a_clear_error(assignment, message):
    with pytest.raises(ConfigError, match=message):
        apply_overrides(Toy(), [assignment])


def test_setting_declares_a_fields_range():
    from relulab.config import ConfigError, setting, validate

    @dataclasses.dataclass(frozen=True)
    class Ranged:
        size: int = setting(3, "choice", positive=True)
        window: tuple[float, float] = setting((0.1, 0.5), "choice", increasing=True, at_least=0.0)
        share: float = setting(0.5, "choice", greater_than=0.0, less_than=1.0)
        cap: float = setting(1.0, "choice", at_most=2.0)

    validate(Ranged())
    refused = {
        "size": (0, "size must be positive, got 0"),
        "window": ((0.5, 0.1), "window must be strictly increasing, got (0.5, 0.1)"),
        "share": (1.0, "share must be less than 1.0, got 1.0"),
        "cap": (2.5, "cap must be at most 2.0, got 2.5"),
    }
    for field, (value, message) in refused.items():
        with pytest.raises(ConfigError, match=re.escape(message)):
            validate(dataclasses.replace(Ranged(), **{field: value}))
    with pytest.raises(ConfigError, match=re.escape("window must be at least 0.0, got -0.1 in")):
        validate(dataclasses.replace(Ranged(), window=(-0.1, 0.5)))
    with pytest.raises(ValueError, match="unknown field checks"):
        setting(1, "choice", postive=True)
