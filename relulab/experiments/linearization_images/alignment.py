"""The alignment claims on image data (seed 004 §3, fig. 1A; appendix C.1, fig. 7; C.2, fig. 8):
a ReLU network's training loss against the linear network's of the same seed and variant, on
both seed-004 studies' one convention (:mod:`relulab.experiments.seed004`): the log gap over an
early window after the best time rescaling :math:`1 \\le \\kappa \\le 1 +` ``max_rescale``, no
additive shift; "without bias they part" as the paired contrast over the bias pair's window.

The window is the images' own "early in training": it ends when the ReLU network has made
``window_fraction`` of its drop over the first ``early_steps`` SGD steps (:func:`early_windows`),
not when the linear network has made that share of its whole drop (on images that spans its slow
creep over the whole horizon). That window and the rescaling were chosen after results had been
seen (issue 30): each is declared (:class:`~relulab.experiments.claims.PostHoc`), and every
alignment claim also records its verdict without it. ``early_steps`` itself is a declared reading
(the seed states no window): its alternatives span a quarter epoch to two.

**Divergence**: a pair with a diverged network is left out and counted (a parts claim leaves out
a seed when any of its four networks diverged); a claim with no pair left is *not tested*.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from relulab.analysis import Estimate, divergence_text
from relulab.experiments.base import Results
from relulab.experiments.claims import ClaimSpec, PostHoc, Reading
from relulab.experiments.linearization_images.config import LinearizationImagesConfig, scale
from relulab.experiments.linearization_images.readings import (
    alignments,
    diverged,
    divergence_by_group,
    early_windows,
    shift_only_alignments,
    whole_run_alignments,
    whole_run_windows,
)
from relulab.experiments.linearization_images.units import Training, pair
from relulab.experiments.seed004 import SEED, alignment_reading, alignment_spec, finite_mean_ci

__all__ = [
    "ALIGNMENT_CLAIMS",
    "CIFAR_ALIGNED",
    "CIFAR_STANDARD_ALIGNED",
    "CIFAR_STANDARD_PARTS",
    "EARLY",
    "MNIST_ALIGNED",
    "MNIST_PARTS",
    "MNIST_STANDARD_ALIGNED",
    "MNIST_STANDARD_ALIGNED_FREE",
]

Config = LinearizationImagesConfig
Measure = Callable[[Results, Config], Reading]
Rows = Callable[[Training, Training, Config, np.ndarray | None], np.ndarray]
Windows = Callable[[Training, Training, Config], np.ndarray]

EARLY = (
    "early in training ('aligned in early training', §3): until the ReLU network has made "
    "window_fraction of its drop over the first early_steps SGD steps (the seed's first epoch)"
)
EARLY_PAIRS = (
    "early in training: both pairs over the bias pair's window (until its ReLU network has made "
    "window_fraction of its drop over the first early_steps SGD steps)"
)


def _early_windows_of_pair(relu: Training, linear: Training, config: Config) -> np.ndarray:
    return early_windows(relu, config)


def _untested(
    detail: str, config: Config, counts: dict[str, tuple[int, int]], part: bool = False
) -> Reading:
    """Nothing to measure: every pair (seed) has a diverged network."""
    nothing = Estimate(math.nan, -math.inf, math.inf, 0)
    return Reading(
        {"contrast": nothing, "no bias": nothing} if part else nothing,
        detail=detail,
        scale=scale(config),
        untested="every pair has a diverged network: no alignment to measure",
        diverged=counts,
    )


def _alignment_with(
    rows_of: Rows, norm: str, bias: bool, windows_of: Windows = _early_windows_of_pair
) -> Measure:
    """The alignment measure of one variant from ``rows_of`` (the claim's own
    :func:`alignments`, or a version without a post-hoc choice) over the windows ``windows_of``
    gives, under the divergence policy: a pair with a diverged network is left out and
    counted."""

    def measure(results: Results, config: Config) -> Reading:
        relu, linear = pair(results, norm, bias)
        out = diverged(relu) | diverged(linear)
        counts = divergence_by_group({"ReLU": relu, "linear": linear})
        tail = f"{divergence_text(counts)} (pairs left out: {int(out.sum())}/{out.size})"
        if out.all():
            return _untested(tail, config, counts)
        kept = ~out
        windows = windows_of(relu, linear, config)
        reading = alignment_reading(rows_of(relu, linear, config, windows)[kept], scale(config))
        shown = np.round(windows[kept]).tolist()
        return dataclasses.replace(
            reading, detail=f"{reading.detail}; windows (steps) {shown}; {tail}", diverged=counts
        )

    return measure


def _parts_with(rows_of: Rows, norm: str, windows_of: Windows = _early_windows_of_pair) -> Measure:
    """The parts measure of one preprocessing: per seed the bias-free pair's gap minus the bias
    pair's, both from ``rows_of`` over the bias pair's windows (``windows_of``), and the
    bias-free gap; a seed any of whose four networks diverged is left out and counted."""

    def measure(results: Results, config: Config) -> Reading:
        (relu, linear), (free_relu, free_linear) = (
            pair(results, norm, True),
            pair(results, norm, False),
        )
        groups = {"ReLU": free_relu, "linear": free_linear, "ReLU with bias": relu}
        counts = divergence_by_group(groups | {"linear with bias": linear})
        out = diverged(relu) | diverged(linear) | diverged(free_relu) | diverged(free_linear)
        tail = f"{divergence_text(counts)} (seeds left out: {int(out.sum())}/{out.size})"
        if out.all():
            return _untested(tail, config, counts, part=True)
        kept, windows = ~out, windows_of(relu, linear, config)
        free = rows_of(free_relu, free_linear, config, windows)[kept]
        bias = rows_of(relu, linear, config, windows)[kept]
        detail = (
            f"{alignment_reading(free, '').detail}; bias pair per seed: "
            f"{np.round(bias[:, 0], 3).tolist()}; windows (steps, the bias pair's) "
            f"{np.round(windows[kept]).tolist()}; {tail}"
        )
        measured = {
            "contrast": finite_mean_ci(free[:, 0] - bias[:, 0]),
            "no bias": finite_mean_ci(free[:, 0]),
        }
        return Reading(measured, detail=detail, scale=scale(config), diverged=counts)

    return measure


WINDOW_WHY = (
    "chosen in 64738af (issue 30) after the quick run (g = 0.98 with bias, 1.64 without, "
    "standard 1.68 and 1.71) and the Fashion-MNIST paper run had been judged over the linear "
    "network's 95 % drop over the whole run (the toy tasks' window); the seed gives no window "
    "('in early training', §3) and the 781 steps are its first epoch, but window and length "
    "were fixed with those results in view (at quick, mnist-aligned-with-bias holds at 390)"
)
RESCALE_WHY = (
    "the time rescaling t → κt (the seed's 'mode-wise time shift', §5) was added to the image "
    "alignment in 64738af (issue 30), after the same results had been seen; before, one "
    "additive shift was searched (without it: that shift alone)"
)
WINDOW_WHAT = (
    "the early window: until the ReLU network has made window_fraction of its drop over its "
    "first early_steps SGD steps"
)


def _post_hoc(norm: str, bias: bool, part: bool) -> tuple[PostHoc, ...]:
    """The two choices of issue 30 every alignment claim declares, each with its measure
    without it (a parts claim: both pairs over the bias pair's window without the choice)."""
    if part:
        without_window = _parts_with(whole_run_alignments, norm, whole_run_windows)
        without_rescaling = _parts_with(shift_only_alignments, norm)
    else:
        without_window = _alignment_with(whole_run_alignments, norm, bias, whole_run_windows)
        without_rescaling = _alignment_with(shift_only_alignments, norm, bias)
    return (
        PostHoc(WINDOW_WHAT, WINDOW_WHY, measure=without_window),
        PostHoc(
            "the time rescaling κ in the alignment fit", RESCALE_WHY, measure=without_rescaling
        ),
    )


def _alignment_claim(
    claim_id: str,
    statement: str,
    source: str,
    norm: str,
    bias: bool,
    counterexample: str,
    *,
    part: bool = False,
) -> ClaimSpec[LinearizationImagesConfig]:
    """An alignment claim of one variant (``part``: the parts contrast of ``norm``)."""
    measure = _parts_with(alignments, norm) if part else _alignment_with(alignments, norm, bias)
    spec = alignment_spec(
        claim_id,
        statement,
        source,
        measure,
        figure="alignment.png",
        part=part,
        scope=EARLY_PAIRS if part else EARLY,
    )
    return dataclasses.replace(
        spec, counterexample=counterexample, post_hoc=_post_hoc(norm, bias, part)
    )


NO_BIAS = (
    "the same networks without the constant pixel (c = 0, the seed's own contrast in fig. 1A): "
    "the ReLU units gate from the start and its loss parts from the linear network's"
)
LARGE_INIT = (
    "outside the seed's small initialisation ('from small initial weights', §3): at "
    "σ² = 0.05 instead of 2·10⁻⁴ (lr lowered so that the linear network does not diverge) "
    "the ReLU and linear networks compute different functions from the first step and their "
    "losses part at once (g ≈ 0.3–0.4 at a tiny size, above the tolerance)"
)
NO_GATING = (
    "a hidden non-linearity that is linear around zero (tanh in place of the ReLU, no constant "
    "pixel): from the seed's small initialisation its units stay in their linear range and its "
    "loss follows the linear network's closer than the bias pair's does (contrast < 0)"
)

MNIST_ALIGNED = _alignment_claim(
    "mnist-aligned-with-bias",
    "On MNIST with bias terms, loss curves of linear and ReLU networks are aligned in early "
    "training.",
    f"{SEED} §3, Fig. 1A",
    "pixel_mean",
    True,
    NO_BIAS,
)
MNIST_PARTS = _alignment_claim(
    "mnist-part-without-bias",
    "On MNIST without bias terms, in contrast, the loss curves of ReLU and linear networks "
    "diverge quickly.",
    f"{SEED} §3, Fig. 1A ('In contrast, loss curves of diverge quickly when bias terms are "
    "ablated')",
    "pixel_mean",
    False,
    NO_GATING,
    part=True,
)
MNIST_STANDARD_ALIGNED = _alignment_claim(
    "mnist-standard-aligned-with-bias",
    "With standard preprocessing, early dynamics of linear and ReLU networks align (with bias).",
    f"{SEED} appendix C.1, Fig. 7",
    "standard",
    True,
    LARGE_INIT,
)
MNIST_STANDARD_ALIGNED_FREE = _alignment_claim(
    "mnist-standard-aligned-without-bias",
    "With standard preprocessing, early dynamics align independently of bias terms (without bias).",
    f"{SEED} appendix C.1, Fig. 7",
    "standard",
    False,
    LARGE_INIT,
)
CIFAR_ALIGNED = _alignment_claim(
    "cifar-aligned-with-bias",
    "On CIFAR-10 with pixel-wise mean subtraction, loss curves are closely aligned early when "
    "the hidden layer has bias terms.",
    f"{SEED} appendix C.2, Fig. 8A",
    "pixel_mean",
    True,
    NO_BIAS,
)
CIFAR_STANDARD_ALIGNED = _alignment_claim(
    "cifar-standard-aligned-with-bias",
    "On CIFAR-10 with standard preprocessing, ReLU and linear networks with bias terms align "
    "early.",
    f"{SEED} appendix C.2, Fig. 8B",
    "standard",
    True,
    LARGE_INIT,
)
CIFAR_STANDARD_PARTS = _alignment_claim(
    "cifar-standard-part-without-bias",
    "On CIFAR-10 with standard preprocessing, biases still drive early alignment: without them "
    "the curves part, in contrast to the bias pair.",
    f"{SEED} appendix C.2, Fig. 8B",
    "standard",
    False,
    NO_GATING,
    part=True,
)

ALIGNMENT_CLAIMS = (
    MNIST_ALIGNED,
    MNIST_PARTS,
    MNIST_STANDARD_ALIGNED,
    MNIST_STANDARD_ALIGNED_FREE,
    CIFAR_ALIGNED,
    CIFAR_STANDARD_ALIGNED,
    CIFAR_STANDARD_PARTS,
)
