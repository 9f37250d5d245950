"""Settings of the correlated-init study (seed 003, Singh & Sreejith) and its presets (the
initialisations it compares are :mod:`.inits`).

Provenance tags: [S] stated by seed 003, [D] derived, [I] inferred (the seed lost the value; a
configurable parameter); sizes, grids and beyond-the-seed settings are relulab's ``choice``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from relulab.config import ConfigError, setting
from relulab.theory.correlated import PARAMETERISATIONS, covariance_coefficients

__all__ = [
    "PRESETS",
    "SOURCE",
    "CorrelatedInitConfig",
    "aci_operating_sigma_b2",
    "scale",
]

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
        "additive",
        "inferred",
        alternatives=("pairwise",),
        note="reading of k: Σ = (σ_w²/N)(I + (k/N)J); formula lost (alternative: pairwise, "
        "each weight's variance exactly σ_w²/N with pairwise correlation k/N, He's variance "
        "kept; the readings that flip k's sign — negated, one_plus_k, precision — would need "
        "every k re-read with them, and correlation cannot hold k = −1 at N = 500)",
    )
    # --- mean field against simulation (§2, Figs. 1–3) ---
    aci_k: float = setting(
        -1.0,
        "inferred",
        alternatives=(-0.5,),
        note="Fig. 3's correlation strength was lost: the zero-sum extreme (alternative: −0.5, "
        "half as strong, the weaker strength of §5 and appendix B; the probes' phases follow "
        "from theory at either)",
    )
    positive_k: float = setting(
        1.0,
        "inferred",
        alternatives=(0.5,),
        note="positively correlated control (§2), strength lost (alternative: half as strong)",
    )
    sigma_b2: float = setting(
        0.3,
        "inferred",
        positive=True,
        alternatives=(0.05, 1.0),
        note="σ_b² of the phase probes and sweep, lost (alternatives: 0.05, the small bias of "
        "the signal-propagation papers the seed follows, and 1.0, a large one)",
    )
    correlation_c0: float = setting(
        0.5,
        "inferred",
        greater_than=-1.0,
        less_than=1.0,
        alternatives=(0.2, 0.8),
        note="correlation of the far input pair (alternatives: a farther and a nearer pair)",
    )
    near_c0: float = setting(
        0.95,
        "inferred",
        greater_than=-1.0,
        less_than=1.0,
        alternatives=(0.9, 0.99),
        note="correlation of the near pair (stability; alternatives: a less and a more "
        "closely related pair)",
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
    correlation_networks: int = setting(
        16, "choice", at_least=3, note="16: the length's growth at He's boundary point needs it"
    )
    input_pairs: int = setting(
        8, "choice", positive=True, note="far and near input pairs per network, averaged"
    )
    correlation_atol: float = setting(
        0.05,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(0.025, 0.1),
        note="simulation vs theory, c_L (alternatives: half and twice)",
    )
    growth_atol: float = setting(
        0.03,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(0.015, 0.06),
        note="length growth per layer vs theory (alternatives: half and twice)",
    )
    gradient_atol: float = setting(
        0.05,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(0.025, 0.1),
        note="gradient growth per layer vs ln χ1 (alternatives: half and twice)",
    )
    grid_points: int = setting(200, "choice", at_least=3, note="phase-diagram grid (figures)")
    # --- RAI / RAAI phases (§3, Figs. 4–5) ---
    rai_sweep_sigma_w2: tuple[float, ...] = setting(
        (0.36, 1.0, 2.0, 3.0), "choice", positive=True, note="RAI's Gaussian part, σ_w² = std²"
    )
    raai_sweep_sigma_w2: tuple[float, ...] = setting(
        (0.36, 0.92, 1.5, 2.0),
        "choice",
        positive=True,
        note="RAAI at train_aci_k: the grid planned in issue 31 ({0.92, 1.5, 2}) and Table 1's "
        "smallest σ_w² (0.36, RAI's) for the ordered phase; issue 45 dropped the post-hoc 1.2",
    )
    beta_alpha: float = setting(
        2.0,
        "inferred",
        positive=True,
        no_alternative="RAI's definition (ref. [18], Lu et al. 2020: the asymmetric entry is "
        "Beta(2, 1)); the seed's appendix F code was lost, §3 says 'a beta distribution'",
        note="the Beta(α, 1) entry of RAI and RAAI",
    )
    rai_length_approximation: float = setting(
        0.57,
        "stated",
        positive=True,
        note="appendix D.1's approximated bound of RAI's length (Table 2, RMS: 0.57, which "
        "relulab.theory.asymmetric reproduces); simulated as one more RAI point",
    )
    raai_chaos_approximation: float = setting(
        1.24,
        "inferred",
        positive=True,
        alternatives=(1.1,),
        note="appendix E.2's approximated order-to-chaos boundary of RAAI (the value was lost): "
        "relulab's reconstruction of the RMS approximation under D.2's fixed-length assumption "
        "at train_aci_k (approximate_boundaries: 1.24; alternative: 1.10, the same map without "
        "that assumption); simulated as one more RAAI point",
    )
    raai_length_approximation: float = setting(
        1.3,
        "inferred",
        positive=True,
        alternatives=(1.75,),
        note="appendix E.1's approximated bound of RAAI's length (the value was lost): relulab's "
        "reconstruction of the RMS approximation at train_aci_k (approximate_boundaries: 1.30; "
        "alternative: 1.75, Table 2's third RMS value read as E.1's bound); simulated as one "
        "more RAAI point",
    )
    asymmetric_networks: int = setting(8, "choice", at_least=3, note="networks per point")
    # --- dead nodes (Table 1) ---
    dead_width: int = setting(500, "choice", at_least=3)
    dead_depth: int = setting(10, "choice", at_least=3)
    dead_inputs: int = setting(64, "choice", at_least=3)
    dead_networks: int = setting(16, "choice", at_least=3)
    dead_atol: float = setting(
        0.01,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(0.005, 0.02),
        note="symmetric inits: |P(h ≤ 0) − 1/2| (alternatives: half and twice)",
    )
    table1_atol: float = setting(
        0.03,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(0.015, 0.06),
        note="RAI/RAAI vs Table 1's 0.36 (alternatives: half and twice)",
    )
    table1_first_layer: int = setting(
        2,
        "inferred",
        at_least=1,
        judging=True,
        alternatives=(1,),
        note="Table 1's dead-node probability is a property of the scheme, not of a layer: the "
        "inactive probability of a node of the network, averaged over the hidden layers from "
        "this one to the last (2: the layers fed by ReLU activations, the reading registered "
        "before issue 31; alternative: 1, every hidden node, the first layer's too)",
    )
    # --- teacher–student training (§4–5, appendix B) ---
    train_aci_k: float = setting(
        -100 / 101,
        "inferred",
        alternatives=(-1.0,),
        note="Table 1's k = 100 read as a precision matrix: b = −100/101 (alternative: −1, the "
        "zero-sum rows, k → ∞ of that reading and the extreme of the additive one)",
    )
    aci_train_sigma_w2: float = setting(2.0, "stated", note="Table 1: ACI σ_w² = 2")
    aci_train_sigma_b2: float = setting(
        0.63,
        "inferred",
        at_least=0.0,
        alternatives=(0.0, 100.0),
        note="§2: χ1 = σ_w² a/2 = 1 at σ_w² = 2 needs a finite q* = σ_b²/(1 − σ_w²(a/2 + "
        "b/2π)), so σ_b² > 0 (derived); the seed gives no q*: 0.63 = σ_w²(1 − σ_w²(a/2 + "
        "b/2π)) puts q* = 2, He's length (aci_operating_sigma_b2) [I]. Alternatives: 0, common "
        "practice (a zero bias, as He's row; §2's unbounded phase), and 100, Table 1's second "
        "column read as σ_b² instead of k (the shared setup notes' reading of its lost headers)",
    )
    raai_sigma_w2: float = setting(0.92, "stated", note="Table 1: RAAI σ_w² = 0.92")
    correlation_sweep: tuple[float, ...] = setting(
        (-0.5, 0.5, 1.0),
        "inferred",
        no_alternative="its extra students (k = ±0.5; 1.0 is the positive control) are "
        "metrics beside the claims: other lost strengths would be a longer sweep, not "
        "another reading of a claim",
        note="appendix B: anti/positive strengths besides ACI, He",
    )
    positive_train_k: float = setting(
        1.0,
        "inferred",
        alternatives=(0.5,),
        note="appendix B's positive strength, lost (alternative: half as strong)",
    )
    input_dim: int = setting(
        20,
        "inferred",
        at_least=3,
        no_alternative="a size, set per preset (the seed's was lost): the teacher's input "
        "dimension enters no phase boundary (those are about the widths)",
    )
    train_width: int = setting(
        40,
        "inferred",
        at_least=3,
        alternatives=(100,),
        note="students' and teachers' width, lost (alternative: 100, wider, nearer the "
        "large-N mean field behind §2's phases)",
    )
    train_depth: int = setting(
        6,
        "inferred",
        positive=True,
        alternatives=(10,),
        note="hidden layers of students and teachers, lost (alternative: 10, deeper, where "
        "signal propagation matters more; still below deep_depth)",
    )
    simple_teacher_width: int = setting(
        4,
        "inferred",
        positive=True,
        alternatives=(2, 8),
        note="'a single-layer ... few nodes' (alternatives: fewer and more 'few')",
    )
    tanh_teacher_sigma_w2: float = setting(
        4.0,
        "inferred",
        positive=True,
        alternatives=(2.0,),
        note="tanh's chaotic phase (alternative: 2, nearer tanh's order-to-chaos edge, still "
        "chaotic)",
    )
    train_samples: int = setting(
        2048,
        "inferred",
        at_least=3,
        alternatives=(512,),
        note="training examples, lost (alternative: 512, a small set, where §5's overfitting "
        "shows soonest)",
    )
    validation_samples: int = setting(
        512,
        "inferred",
        at_least=3,
        no_alternative="a sample size (the seed's was lost): more or fewer validation examples "
        "change the intervals, not what is measured",
    )
    batch_size: int = setting(
        32,
        "inferred",
        positive=True,
        alternatives=(64,),
        note="Keras' default batch of 32 ('default parameters', §4; the seed's was lost; "
        "alternative: 64, as common)",
    )
    sgd_epochs: int = setting(
        30,
        "inferred",
        at_least=2,
        no_alternative="a horizon, set per preset (the seed's was lost); the claims read "
        "fractions of it (early_fraction) and its end",
        note="≥ 2: the analysis reads epochs inside 10–90 % of training",
    )
    adam_epochs: int = setting(
        15,
        "inferred",
        at_least=2,
        no_alternative="a horizon, set per preset (the seed's was lost); the claims read "
        "fractions of it and its end",
        note="≥ 2: the analysis reads epochs inside 10–90 % of training",
    )
    sgd_lr: float = setting(
        0.01,
        "inferred",
        positive=True,
        no_alternative="the seed trains 'with default parameters for the optimizers' in "
        "TensorFlow (§4): Keras' SGD default",
        note="TensorFlow's SGD default",
    )
    adam_lr: float = setting(
        0.001,
        "inferred",
        positive=True,
        no_alternative="'default parameters for the optimizers' in TensorFlow (§4): Keras' "
        "Adam default (PyTorch's is the same)",
        note="TensorFlow's Adam default",
    )
    adam_eps: float = setting(
        1e-7,
        "inferred",
        positive=True,
        no_alternative="'default parameters for the optimizers' in TensorFlow (§4): Keras' "
        "Adam default (PyTorch's 1e-8 is not the seed's framework)",
        note="TensorFlow's Adam default",
    )
    train_seeds: int = setting(10, "choice", at_least=3, note="students per init")
    matched_output_variance: float = setting(
        1.0,
        "inferred",
        positive=True,
        alternatives=(0.1,),
        note="issue 45: every compared student has a twin whose last layer is rescaled so its "
        "output variance over the training inputs at initialisation is this value; the speed "
        "claims are judged on both populations. 1: the standardised targets' variance, so every "
        "twin starts at the target's scale (alternative: 0.1, a small output, the scale RAI and "
        "RAAI start at)",
    )
    deep_depth: int = setting(
        12,
        "inferred",
        positive=True,
        alternatives=(20,),
        note="§5's deeper network (its depth was lost; alternative: 20, deeper than both presets')",
    )
    weak_aci_k: float = setting(
        -0.5,
        "inferred",
        alternatives=(-0.25, -0.75),
        note="§5: a weaker correlation strength, lost (alternatives: weaker still, and "
        "nearer ACI's)",
    )
    plane_sigma_w2: tuple[float, ...] = setting(
        (1.0, 1.5, 1.8, 2.2, 2.6, 3.0), "choice", positive=True, note="beyond the seed"
    )
    plane_k: tuple[float, ...] = setting((-0.99, -0.5, 0.0, 0.5), "choice", note="beyond the seed")
    plane_sigma_b2: float = setting(
        0.63, "choice", positive=True, note="σ_b² > 0: the mean-field phase labels need it (§2)"
    )
    bias_sweep: tuple[float, ...] = setting(
        (0.0, 0.2, 0.63, 2.0), "choice", note="ACI's σ_b² as a metric (standard teacher, SGD)"
    )
    bias_sweep_seeds: int = setting(4, "choice", positive=True, note="students per σ_b²")
    deep_optimisers: tuple[str, ...] = setting(
        ("sgd", "adam"), "choice", note="§5 names no optimiser: both"
    )
    early_fraction: float = setting(
        0.2,
        "inferred",
        greater_than=0.0,
        less_than=1.0,
        judging=True,
        alternatives=(0.1, 0.3),
        note="§6's 'early training epochs': the first 20 % of the SGD epochs (alternatives: "
        "the first 10 % and 30 %)",
    )
    plane_seeds: int = setting(3, "choice", positive=True, note="students per plane point")
    divergence_cap: float = setting(
        1e6,
        "inferred",
        positive=True,
        judging=True,
        alternatives=(1e3, 1e9),
        note="the one divergence policy's cap: a student diverged when the engine froze it (a "
        "non-finite training loss), when a recorded validation loss is non-finite, or when one "
        "exceeds this cap (targets are standardised, so predicting 0 scores ≈ 1; the largest "
        "finite validation loss of the quick run is 2.2·10², a plane student at init); a "
        "diverged student counts as diverged in every claim that reads it and ranks last in "
        "every comparison (alternatives: 10³ and 10⁹)",
    )
    on_par_ratio: float = setting(
        1.1,
        "inferred",
        at_least=1.0,
        judging=True,
        alternatives=(1.05, 1.2),
        note="'on par': within 10 % in loss (alternatives: within 5 % and 20 %)",
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
        if any(o not in ("sgd", "adam") for o in self.deep_optimisers) or not self.deep_optimisers:
            raise ConfigError("deep_optimisers must name sgd and/or adam")
        if any(not (math.isfinite(v) and v >= 0) for v in self.bias_sweep):
            raise ConfigError("bias_sweep: every σ_b² must be a number ≥ 0")
        for name, width in (
            ("aci_k", self.correlation_width),
            ("positive_k", self.correlation_width),
        ):
            self._check_k(name, getattr(self, name), width)
        for name in ("train_aci_k", "positive_train_k", "weak_aci_k"):
            self._check_k(name, getattr(self, name), self.train_width)
        for k in (*self.correlation_sweep, *self.plane_k):
            self._check_k("correlation_sweep/plane_k", k, self.train_width)

    def _check_k(self, name: str, k: float, fan_in: int) -> None:
        """``k`` must give a valid covariance at the fan-in it is drawn with."""
        try:
            covariance_coefficients(k, self.parameterisation, fan_in)
        except ValueError as error:
            raise ConfigError(f"{name}: {error}") from None


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


def aci_operating_sigma_b2(config: CorrelatedInitConfig, length: float = 2.0) -> float:
    r"""The bias variance that puts ACI at seed 003's operating point with length fixed point
    ``length``: :math:`\sigma_b^2 = q^*(1 - \sigma_w^2(a/2 + b/2\pi))`.

    Seed 003 §2: the length map is :math:`q' = \sigma_w^2(a/2 + b/2\pi)q + \sigma_b^2`, so
    :math:`q^* = \sigma_b^2/(1 - \sigma_w^2(a/2 + b/2\pi))` is finite and non-zero only with
    :math:`\sigma_b^2 > 0` (at :math:`\sigma_b^2 = 0` the length shrinks to 0, the unbounded
    phase); there :math:`\chi_1 = \sigma_w^2 a/2 = 1` at :math:`\sigma_w^2 = 2, a = 1`, the
    order-to-chaos boundary the seed proposes. The default ``length = 2`` is He's length on
    unit-variance inputs (:math:`q = \sigma_w^2 = 2` at every layer).

    Args:
        config: the study's settings (ACI's σ_w², k, the reading of k, the students' width).
        length: the fixed point :math:`q^*` to reach.

    Returns:
        :math:`\sigma_b^2`.

    Example:
        >>> round(aci_operating_sigma_b2(CorrelatedInitConfig()), 2)
        0.63
    """
    a, b = covariance_coefficients(config.train_aci_k, config.parameterisation, config.train_width)
    slope = config.aci_train_sigma_w2 * (a / 2.0 + b / (2.0 * math.pi))
    return length * (1.0 - slope)
