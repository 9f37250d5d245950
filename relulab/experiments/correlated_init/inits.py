"""The initialisations the correlated-init study trains (seed 003 Table 1, appendix B, §5) with
their bias-matched companions and their output-matched twins (issue 45).

**Biases.** The seed draws ACI's bias from N(0, σ_b²), independent of the weights (§2: "the
bias is drawn from a Gaussian distribution … uncorrelated with the weights"); relulab puts ACI
at σ_b² = ``aci_train_sigma_b2`` (0.63, its operating point). RAI and RAAI draw the bias as one
more entry of each row (appendix C: "the weights and bias are treated on an equal footing";
§3: "we pick weights and bias incoming to each node from anti-correlated Gaussian
distribution"): its variance is a weight's, σ_w²/N, which the mean field drops (at width 40 its
second moment, Beta entry included, is 0.02 for RAI and 0.03 for RAAI) — and He's bias is 0. So
every comparison is made at one bias:

* appendix B's family (ACI, the positive control, the strength sweep) at ACI's σ_b², against
  :data:`HE_BIASED` — He's weights with ACI's bias, the k = 0 member of the family ("k = 0
  corresponds to uncorrelated weights (He initialization)");
* §5's comparisons of Table 1's schemes (He, RAI, RAAI) at σ_b² = 0, with ACI there as
  :data:`ACI_UNBIASED` — ACI's weights with He's, RAI's and RAAI's (mean-field) bias.

**Initial output scale.** Each student of :data:`COMPARED` has a twin (:func:`matched`) drawn
from the same seed whose last layer is rescaled so that its output variance over the training
inputs at initialisation equals ``matched_output_variance``; the speed claims are judged on both
populations.
"""

from __future__ import annotations

from typing import Any

from relulab.experiments.correlated_init.config import CorrelatedInitConfig

__all__ = [
    "ACI_UNBIASED",
    "COMPARED",
    "DEEP_COMPARED",
    "HE_BIASED",
    "Inits",
    "bias_inits",
    "bias_matched",
    "deep_inits",
    "family",
    "is_matched",
    "matched",
    "plane_inits",
    "student_inits",
    "table1_inits",
    "unmatched",
]

Inits = dict[str, tuple[str, dict[str, Any]]]

HE_BIASED = "he-biased"
ACI_UNBIASED = "aci-unbiased"
MATCHED = "-matched"
#: the students of the teacher × optimiser units that a speed claim compares (twinned)
COMPARED = ("he", HE_BIASED, "aci", ACI_UNBIASED, "rai", "raai", "positive")
#: the deeper students that §5's 'RAAI … consistently better … on deeper networks' compares
DEEP_COMPARED = ("he", ACI_UNBIASED, "rai", "raai")
_FAMILY = {HE_BIASED: "he", ACI_UNBIASED: "aci"}
HE_SIGMA_W2 = 2.0  # Table 1: He's σ_w² [S]


def matched(name: str) -> str:
    """The name of ``name``'s twin at the common initial output variance.

    Example:
        >>> matched("aci")
        'aci-matched'
    """
    return f"{name}{MATCHED}"


def is_matched(name: str) -> bool:
    """Whether ``name`` is an output-matched twin."""
    return name.endswith(MATCHED)


def unmatched(name: str) -> str:
    """The student a twin was drawn as (``name`` itself if it is no twin).

    Example:
        >>> unmatched("he-biased-matched")
        'he-biased'
    """
    return name[: -len(MATCHED)] if is_matched(name) else name


def family(name: str) -> str:
    """The scheme a student belongs to, whatever its bias and output scale (the training
    figures' colours; the tests' constructions).

    Example:
        >>> family("aci-unbiased-matched"), family("he-biased")
        ('aci', 'he')
    """
    base = unmatched(name)
    return _FAMILY.get(base, base)


def table1_inits(config: CorrelatedInitConfig) -> Inits:
    """The schemes of seed 003's Table 1 (plus the positive control) as engine schemes with
    their options: He (bias 0), ACI (σ_w² = 2, anti-correlated, σ_b² = ``aci_train_sigma_b2``),
    RAI (Lu et al.), RAAI (σ_w² = 0.92, anti-correlated rows [w, b] then RAI's Beta entry)."""
    reading = config.parameterisation
    correlated = {
        "sigma_w2": config.aci_train_sigma_w2,
        "parameterisation": reading,
        "sigma_b2": config.aci_train_sigma_b2,
    }
    return {
        "he": ("kaiming_normal", {}),
        "aci": ("correlated", {**correlated, "k": config.train_aci_k}),
        "rai": ("rai", {"alpha": config.beta_alpha}),
        "raai": (
            "raai",
            {
                "sigma_w2": config.raai_sigma_w2,
                "k": config.train_aci_k,
                "parameterisation": reading,
                "alpha": config.beta_alpha,
            },
        ),
        "positive": ("correlated", {**correlated, "k": config.positive_train_k}),
    }


def bias_matched(config: CorrelatedInitConfig) -> Inits:
    """He's weights at ACI's σ_b² (:data:`HE_BIASED`, appendix B's k = 0 member) and ACI's
    weights at σ_b² = 0 (:data:`ACI_UNBIASED`, the bias of He, RAI and RAAI)."""
    scheme, options = table1_inits(config)["aci"]
    return {
        HE_BIASED: (scheme, {**options, "sigma_w2": HE_SIGMA_W2, "k": 0.0}),
        ACI_UNBIASED: (scheme, {**options, "sigma_b2": 0.0}),
    }


def student_inits(config: CorrelatedInitConfig) -> Inits:
    """Table 1's schemes, appendix B's correlation-strength sweep at σ_w² = 2 (``k=…``, at ACI's
    σ_b²: only k differs) and the bias-matched companions (:func:`bias_matched`), in that order
    (a student's seed follows its place: the students before issue 45 keep theirs)."""
    inits = table1_inits(config)
    scheme, options = inits["aci"]
    known = {config.train_aci_k, config.positive_train_k, 0.0}
    for k in config.correlation_sweep:
        if not any(abs(k - other) < 1e-12 for other in known):
            inits[f"k={k:g}"] = (scheme, {**options, "k": k})
    return {**inits, **bias_matched(config)}


def plane_inits(config: CorrelatedInitConfig) -> Inits:
    """Correlated students on the (σ_w², k) grid of the beyond-the-seed plane, at
    ``plane_sigma_b2`` > 0 (the mean-field phases need a bias, seed 003 §2)."""
    return {
        f"w2={w2:g},k={k:g}": (
            "correlated",
            {
                "sigma_w2": w2,
                "k": k,
                "parameterisation": config.parameterisation,
                "sigma_b2": config.plane_sigma_b2,
            },
        )
        for w2 in config.plane_sigma_w2
        for k in config.plane_k
    }


def deep_inits(config: CorrelatedInitConfig) -> Inits:
    """The deeper students (§5): He, ACI, ACI with the weaker ``weak_aci_k`` (the overfitting
    remark, at ACI's σ_b²), RAAI, and for §5's 'RAAI … consistently better … on deeper
    networks' RAI and ACI at RAAI's (mean-field) bias, σ_b² = 0."""
    table1 = table1_inits(config)
    weak = ("correlated", {**table1["aci"][1], "k": config.weak_aci_k})
    return {
        "he": table1["he"],
        "aci": table1["aci"],
        "weak-aci": weak,
        "raai": table1["raai"],
        "rai": table1["rai"],
        ACI_UNBIASED: bias_matched(config)[ACI_UNBIASED],
    }


def bias_inits(config: CorrelatedInitConfig) -> Inits:
    """ACI (σ_w², k of Table 1) at every σ_b² of ``bias_sweep`` (``sb2=…``), and He."""
    scheme, options = table1_inits(config)["aci"]
    inits: Inits = {"he": table1_inits(config)["he"]}
    for sigma_b2 in config.bias_sweep:
        inits[f"sb2={sigma_b2:g}"] = (scheme, {**options, "sigma_b2": sigma_b2})
    return inits
