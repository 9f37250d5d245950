"""Settings of the correlated-init study (seed 003, Singh & Sreejith), its presets and the
initialisations it compares.

Provenance tags: [S] stated by seed 003, [D] derived, [I] inferred (the seed lost the value; a
configurable parameter). Beyond-the-seed settings carry no tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from relulab.config import ConfigError, setting
from relulab.theory.correlated import PARAMETERISATIONS, covariance_coefficients

__all__ = ["PRESETS", "CorrelatedInitConfig", "student_inits", "table1_inits"]

SOURCE = "seed 003"


@dataclass(frozen=True)
class CorrelatedInitConfig:
    """Settings; [S] stated by seed 003, [D] derived, [I] inferred and configurable."""

    seed: int = 0
    dtype: Literal["float32", "float64"] = "float32"
    parameterisation: str = setting(
        "additive", "inferred", note="reading of k: Σ = (σ_w²/N)(I + (k/N)J); formula lost"
    )
    # --- mean field against simulation (§2, Figs. 1–3) ---
    aci_k: float = setting(-1.0, "inferred", note="Fig. 3's correlation strength was lost")
    positive_k: float = setting(1.0, "inferred", note="positively correlated control (§2)")
    sigma_b2: float = setting(0.3, "inferred", note="σ_b² of the phase probes and sweep")
    correlation_c0: float = setting(0.5, "inferred", note="correlation of the far input pair")
    near_c0: float = setting(0.95, "inferred", note="correlation of the near pair (stability)")
    probe_uncorrelated: tuple[float, ...] = (1.6, 2.0, 2.4)  # ordered / He / unbounded (k = 0)
    probe_anti: tuple[float, ...] = (1.6, 2.4, 3.4)  # ordered / bounded chaotic / unbounded
    probe_positive: tuple[float, ...] = (1.2, 1.8)  # ordered / unbounded (k = positive_k)
    sweep_sigma_w2: tuple[float, ...] = (1.6, 1.8, 2.0, 2.2, 2.4, 2.6, 2.8)  # Fig. 3 sweep
    correlation_depth: int = 30
    correlation_width: int = 500
    correlation_networks: int = 12
    correlation_atol: float = setting(0.05, "inferred", note="simulation vs theory, c_L")
    growth_atol: float = setting(0.03, "inferred", note="length growth per layer vs theory")
    gradient_atol: float = setting(0.05, "inferred", note="gradient growth per layer vs ln χ1")
    grid_points: int = 200
    # --- dead nodes (Table 1) ---
    dead_width: int = 500
    dead_depth: int = 10
    dead_inputs: int = 64
    dead_networks: int = 8
    dead_atol: float = setting(0.01, "inferred", note="symmetric inits: |P(h ≤ 0) − 1/2|")
    table1_atol: float = setting(0.03, "inferred", note="RAI/RAAI vs Table 1's 0.36")
    # --- teacher–student training (§4–5, appendix B) ---
    train_aci_k: float = setting(
        -100 / 101, "inferred", note="Table 1's k = 100 read as a precision matrix: b = −100/101"
    )
    aci_train_sigma_w2: float = setting(2.0, "stated", note="Table 1: ACI σ_w² = 2")
    aci_train_sigma_b2: float = setting(
        0.0, "inferred", note="Table 1's second column read as k; read as σ_b² it would be 100"
    )
    raai_sigma_w2: float = setting(0.92, "stated", note="Table 1: RAAI σ_w² = 0.92")
    correlation_sweep: tuple[float, ...] = setting(
        (-0.5, 0.5, 1.0), "inferred", note="appendix B: anti/positive strengths besides ACI, He"
    )
    positive_train_k: float = setting(1.0, "inferred", note="appendix B's positive strength")
    input_dim: int = setting(20, "inferred")
    train_width: int = setting(40, "inferred")
    train_depth: int = setting(6, "inferred", note="hidden layers of students and teachers")
    simple_teacher_width: int = setting(4, "inferred", note="'a single-layer ... few nodes'")
    tanh_teacher_sigma_w2: float = setting(4.0, "inferred", note="tanh's chaotic phase")
    train_samples: int = setting(2048, "inferred")
    validation_samples: int = setting(512, "inferred")
    batch_size: int = setting(32, "inferred")
    sgd_epochs: int = setting(30, "inferred")
    adam_epochs: int = setting(15, "inferred")
    sgd_lr: float = setting(0.01, "inferred", note="TensorFlow's SGD default")
    adam_lr: float = setting(0.001, "inferred", note="TensorFlow's Adam default")
    adam_eps: float = setting(1e-7, "inferred", note="TensorFlow's Adam default")
    train_seeds: int = 10
    deep_depth: int = setting(12, "inferred", note="§5's deeper network (its depth was lost)")
    weak_aci_k: float = setting(-0.5, "inferred", note="§5: a weaker correlation strength")
    plane_sigma_w2: tuple[float, ...] = (1.0, 1.5, 1.8, 2.2, 2.6, 3.0)  # beyond the seed
    plane_k: tuple[float, ...] = (-0.99, -0.5, 0.0, 0.5)
    plane_seeds: int = 3
    on_par_ratio: float = setting(1.1, "inferred", note="'on par': within 10 % in loss")

    def validate(self) -> None:
        for name in (
            "correlation_depth",
            "correlation_width",
            "correlation_networks",
            "grid_points",
            "dead_width",
            "dead_depth",
            "dead_inputs",
            "dead_networks",
            "input_dim",
            "train_width",
            "train_samples",
            "validation_samples",
        ):
            if getattr(self, name) < 3:
                raise ConfigError(f"{name} must be at least 3, got {getattr(self, name)}")
        if self.aci_train_sigma_b2 < 0:
            raise ConfigError("aci_train_sigma_b2 must be ≥ 0")
        for name in (
            "train_depth",
            "simple_teacher_width",
            "batch_size",
            "sgd_epochs",
            "deep_depth",
            "plane_seeds",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.adam_epochs < 1 or self.train_seeds < 3:
            raise ConfigError("adam_epochs must be ≥ 1 and train_seeds ≥ 3")
        if self.batch_size > self.train_samples:
            raise ConfigError("batch_size must not exceed train_samples")
        if self.parameterisation not in PARAMETERISATIONS:
            raise ConfigError(
                f"parameterisation must be one of {', '.join(PARAMETERISATIONS)}, "
                f"got {self.parameterisation!r}"
            )
        for name in ("aci_k", "positive_k", "train_aci_k", "positive_train_k", "weak_aci_k"):
            try:
                covariance_coefficients(getattr(self, name), self.parameterisation, 1000)
            except ValueError as error:
                raise ConfigError(f"{name}: {error}") from None
        for k in (*self.correlation_sweep, *self.plane_k):
            try:
                covariance_coefficients(k, self.parameterisation, 1000)
            except ValueError as error:
                raise ConfigError(f"correlation_sweep/plane_k: {error}") from None
        for name in ("correlation_c0", "near_c0"):
            if not -1 < getattr(self, name) < 1:
                raise ConfigError(f"{name} must lie in (-1, 1)")
        positive = (
            "sigma_b2",
            "correlation_atol",
            "growth_atol",
            "gradient_atol",
            "dead_atol",
            "table1_atol",
            "sgd_lr",
            "adam_lr",
            "adam_eps",
            "tanh_teacher_sigma_w2",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.on_par_ratio < 1:
            raise ConfigError("on_par_ratio must be ≥ 1")


PRESETS = {
    "quick": CorrelatedInitConfig(),
    "paper": CorrelatedInitConfig(
        correlation_width=1000,
        correlation_depth=50,
        correlation_networks=30,
        dead_width=1000,
        dead_depth=20,
        dead_inputs=256,
        dead_networks=20,
        input_dim=32,
        train_width=64,
        train_depth=8,
        train_samples=4096,
        validation_samples=1024,
        sgd_epochs=100,
        adam_epochs=50,
        train_seeds=20,
        deep_depth=16,
        plane_seeds=5,
    ),
}


def table1_inits(config: CorrelatedInitConfig) -> dict[str, tuple[str, dict[str, Any]]]:
    """The schemes of seed 003's Table 1 (plus the positive control) as engine schemes with
    their options: He, ACI (σ_w² = 2, anti-correlated, no bias), RAI (Lu et al.), RAAI
    (σ_w² = 0.92, anti-correlated rows [w, b] then RAI's Beta entry)."""
    reading = config.parameterisation
    return {
        "he": ("kaiming_normal", {}),
        "aci": (
            "correlated",
            {
                "sigma_w2": config.aci_train_sigma_w2,
                "k": config.train_aci_k,
                "parameterisation": reading,
                "sigma_b2": config.aci_train_sigma_b2,
            },
        ),
        "rai": ("rai", {}),
        "raai": (
            "raai",
            {
                "sigma_w2": config.raai_sigma_w2,
                "k": config.train_aci_k,
                "parameterisation": reading,
            },
        ),
        "positive": (
            "correlated",
            {
                "sigma_w2": config.aci_train_sigma_w2,
                "k": config.positive_train_k,
                "parameterisation": reading,
            },
        ),
    }


def student_inits(config: CorrelatedInitConfig) -> dict[str, tuple[str, dict[str, Any]]]:
    """Table 1's schemes plus appendix B's correlation-strength sweep at σ_w² = 2 (``k=…``)."""
    inits = table1_inits(config)
    known = {config.train_aci_k, config.positive_train_k, 0.0}
    for k in config.correlation_sweep:
        if not any(abs(k - other) < 1e-12 for other in known):
            inits[f"k={k:g}"] = (
                "correlated",
                {
                    "sigma_w2": config.aci_train_sigma_w2,
                    "k": k,
                    "parameterisation": config.parameterisation,
                },
            )
    return inits
