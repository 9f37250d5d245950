"""Typed --set overrides."""

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
