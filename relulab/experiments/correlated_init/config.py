"""Settings of the correlated-init study (seed 003, Singh & Sreejith), its presets and the
initialisations it compares.

Provenance tags: [S] stated by seed 003, [D] derived, [I] inferred (the seed lost the value; a
configurable parameter); sizes, grids and beyond-the-seed settings are relulab's ``choice``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from relulab.config import ConfigError, setting
from relulab.theory.correlated import PARAMETERISATIONS, covariance_coefficients

__all__ = ["PRESETS", "SOURCE", "CorrelatedInitConfig", "scale", "student_inits", "table1_inits"]

SOURCE = "seed 003"


def scale(what: str) -> str:
    """The scale a verdict was measured at: ``what`` (this run's sizes), against the seed's.

    Example:
        >>> scale("width 500")
        "width 500 (this run's sizes; quick-preset numbers are not the seed's)"
    """
    return f"{what} (this run's sizes; quick-preset numbers are not the seed's)"


@dataclass(frozen=True)
class CorrelatedInitConfig:
    """Settings; [S] stated by seed 003, [D] derived, [I] inferred and configurable. Each field
    declares its own range (:func:`relulab.config.setting`); :meth:`validate` keeps the rules
    that tie fields together."""

    seed: int = setting(0, "choice", note="the run seed: every unit's generator derives from it")
    dtype: Literal["float32", "float64"] = setting("float32", "choice")
    parameterisation: str = setting(
        "additive", "inferred", note="reading of k: Σ = (σ_w²/N)(I + (k/N)J); formula lost"
    )
    # --- mean field against simulation (§2, Figs. 1–3) ---
    aci_k: float = setting(-1.0, "inferred", note="Fig. 3's correlation strength was lost")
    positive_k: float = setting(1.0, "inferred", note="positively correlated control (§2)")
    sigma_b2: float = setting(
        0.3, "inferred", positive=True, note="σ_b² of the phase probes and sweep"
    )
    correlation_c0: float = setting(
        0.5,
        "inferred",
        greater_than=-1.0,
        less_than=1.0,
        note="correlation of the far input pair",
    )
    near_c0: float = setting(
        0.95,
        "inferred",
        greater_than=-1.0,
        less_than=1.0,
        note="correlation of the near pair (stability)",
    )
    probe_uncorrelated: tuple[float, ...] = setting(
        (1.6, 2.0, 2.4), "choice", positive=True, note="k = 0: ordered / He / unbounded"
    )
    probe_anti: tuple[float, ...] = setting(
        (1.6, 2.4, 3.4),
        "choice",
        positive=True,
        note="k = aci_k: ordered / bounded chaotic / unbounded",
    )
    probe_positive: tuple[float, ...] = setting(
        (1.2, 1.8), "choice", positive=True, note="k = positive_k: ordered / unbounded"
    )
    sweep_sigma_w2: tuple[float, ...] = setting(
        (1.6, 1.8, 2.0, 2.2, 2.4, 2.6, 2.8), "choice", positive=True, note="Fig. 3 as a sweep"
    )
    correlation_depth: int = setting(30, "choice", at_least=3)
    correlation_width: int = setting(500, "choice", at_least=3)
    correlation_networks: int = setting(12, "choice", at_least=3)
    correlation_atol: float = setting(
        0.05, "inferred", positive=True, note="simulation vs theory, c_L"
    )
    growth_atol: float = setting(
        0.03, "inferred", positive=True, note="length growth per layer vs theory"
    )
    gradient_atol: float = setting(
        0.05, "inferred", positive=True, note="gradient growth per layer vs ln χ1"
    )
    grid_points: int = setting(200, "choice", at_least=3, note="phase-diagram grid (figures)")
    # --- dead nodes (Table 1) ---
    dead_width: int = setting(500, "choice", at_least=3)
    dead_depth: int = setting(10, "choice", at_least=3)
    dead_inputs: int = setting(64, "choice", at_least=3)
    dead_networks: int = setting(8, "choice", at_least=3)
    dead_atol: float = setting(
        0.01, "inferred", positive=True, note="symmetric inits: |P(h ≤ 0) − 1/2|"
    )
    table1_atol: float = setting(0.03, "inferred", positive=True, note="RAI/RAAI vs Table 1's 0.36")
    # --- teacher–student training (§4–5, appendix B) ---
    train_aci_k: float = setting(
        -100 / 101, "inferred", note="Table 1's k = 100 read as a precision matrix: b = −100/101"
    )
    aci_train_sigma_w2: float = setting(2.0, "stated", note="Table 1: ACI σ_w² = 2")
    aci_train_sigma_b2: float = setting(
        0.0,
        "inferred",
        at_least=0.0,
        note="Table 1's second column read as k; read as σ_b² it would be 100",
    )
    raai_sigma_w2: float = setting(0.92, "stated", note="Table 1: RAAI σ_w² = 0.92")
    correlation_sweep: tuple[float, ...] = setting(
        (-0.5, 0.5, 1.0), "inferred", note="appendix B: anti/positive strengths besides ACI, He"
    )
    positive_train_k: float = setting(1.0, "inferred", note="appendix B's positive strength")
    input_dim: int = setting(20, "inferred", at_least=3)
    train_width: int = setting(40, "inferred", at_least=3)
    train_depth: int = setting(
        6, "inferred", positive=True, note="hidden layers of students and teachers"
    )
    simple_teacher_width: int = setting(
        4, "inferred", positive=True, note="'a single-layer ... few nodes'"
    )
    tanh_teacher_sigma_w2: float = setting(
        4.0, "inferred", positive=True, note="tanh's chaotic phase"
    )
    train_samples: int = setting(2048, "inferred", at_least=3)
    validation_samples: int = setting(512, "inferred", at_least=3)
    batch_size: int = setting(32, "inferred", positive=True)
    sgd_epochs: int = setting(
        30, "inferred", at_least=2, note="≥ 2: the analysis reads epochs inside 10–90 % of training"
    )
    adam_epochs: int = setting(
        15, "inferred", at_least=2, note="≥ 2: the analysis reads epochs inside 10–90 % of training"
    )
    sgd_lr: float = setting(0.01, "inferred", positive=True, note="TensorFlow's SGD default")
    adam_lr: float = setting(0.001, "inferred", positive=True, note="TensorFlow's Adam default")
    adam_eps: float = setting(1e-7, "inferred", positive=True, note="TensorFlow's Adam default")
    train_seeds: int = setting(10, "choice", at_least=3, note="students per init")
    deep_depth: int = setting(
        12, "inferred", positive=True, note="§5's deeper network (its depth was lost)"
    )
    weak_aci_k: float = setting(-0.5, "inferred", note="§5: a weaker correlation strength")
    plane_sigma_w2: tuple[float, ...] = setting(
        (1.0, 1.5, 1.8, 2.2, 2.6, 3.0), "choice", positive=True, note="beyond the seed"
    )
    plane_k: tuple[float, ...] = setting((-0.99, -0.5, 0.0, 0.5), "choice", note="beyond the seed")
    plane_seeds: int = setting(3, "choice", positive=True, note="students per plane point")
    on_par_ratio: float = setting(
        1.1, "inferred", at_least=1.0, note="'on par': within 10 % in loss"
    )

    def validate(self) -> None:
        """Rules across fields: the batch fits the training set, and every correlation strength
        is a valid covariance under the chosen reading of k (the reading itself is one of
        :data:`~relulab.theory.correlated.PARAMETERISATIONS`, a choice ``setting`` cannot
        declare)."""
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
