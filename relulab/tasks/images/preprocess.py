"""From ``uint8`` images to network inputs: scaling, the two normalisations of seed ``004_…``,
one-hot targets and a deterministic held-out split.

Seed 004 (§3, appendix C.1 and E): pixels are scaled into ``[0, 1]``; the main preprocessing
subtracts the pixel-wise mean over the training set, the "standard" one subtracts the mean and
divides by the standard deviation taken over all training images and pixels. The hidden bias is
an appended constant pixel (:func:`relulab.tasks.transforms.append_constant`, ``c = 10``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from relulab.tasks.transforms import append_constant

__all__ = [
    "NORMALIZATIONS",
    "Normalization",
    "fit_normalization",
    "holdout_split",
    "one_hot",
    "prepare_inputs",
    "to_unit_interval",
]

NormalizationMode = Literal["pixel_mean", "standard"]
NORMALIZATIONS: tuple[NormalizationMode, ...] = ("pixel_mean", "standard")


def to_unit_interval(
    images: np.ndarray,
    *,
    flatten: bool = False,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Tensor:
    r"""``uint8`` pixels scaled into :math:`[0, 1]`: :math:`x = p / 255` (seed ``004_…`` §3).

    Args:
        images: ``uint8`` array ``(N, C, H, W)`` (any shape works).
        flatten: return ``(N, C·H·W)`` rows, as a fully connected network takes them.
        dtype: floating dtype of the result.
        device: where the result lives.

    Returns:
        A tensor of the same shape (or ``(N, C·H·W)``) with values in ``[0, 1]``.

    Example:
        >>> to_unit_interval(np.array([[0, 255]], dtype=np.uint8)).tolist()
        [[0.0, 1.0]]
    """
    if images.dtype != np.uint8:
        raise ValueError(f"expected uint8 pixels, got {images.dtype}")
    x = torch.from_numpy(np.ascontiguousarray(images)).to(device=device, dtype=dtype) / 255
    return x.reshape(len(x), -1) if flatten else x


@dataclass(frozen=True)
class Normalization:
    r"""An affine input normalisation fitted on the training set: :math:`(x - \mu) / s`.

    Attributes:
        mode: ``"pixel_mean"`` or ``"standard"``.
        shift: :math:`\mu`, the pixel-wise mean image (``pixel_mean``) or the global mean.
        scale: :math:`s`, 1 (``pixel_mean``) or the global standard deviation (``standard``).
    """

    mode: NormalizationMode
    shift: Tensor
    scale: Tensor

    def __call__(self, x: Tensor) -> Tensor:
        """Normalise ``x`` (same trailing shape as the fitted training data)."""
        return (x - self.shift.to(x)) / self.scale.to(x)


def fit_normalization(train: Tensor, mode: NormalizationMode = "pixel_mean") -> Normalization:
    r"""Fit one of seed ``004_…``'s two preprocessings on training inputs in :math:`[0, 1]`.

    * ``"pixel_mean"`` (seed §3, the main one): :math:`\tilde x_i = x_i - \bar x` with the
      pixel-wise mean :math:`\bar x = \frac1P \sum_i x_i` over the training set.
    * ``"standard"`` (seed appendix C.1, fig. 7): :math:`\tilde x_i = (x_i - m) / s` with
      :math:`m` and :math:`s` the mean and standard deviation over all training images and
      pixels (population std, ``ddof = 0`` [inferred]).

    Statistics are accumulated in float64 and applied to train and test alike.

    Args:
        train: training inputs ``(P, …)``, e.g. from :func:`to_unit_interval`.
        mode: ``"pixel_mean"`` or ``"standard"``.

    Returns:
        The fitted :class:`Normalization`; call it on train and test inputs.

    Example:
        >>> x = torch.tensor([[0.0, 1.0], [1.0, 1.0]])
        >>> fit_normalization(x)(x).tolist()
        [[-0.5, 0.0], [0.5, 0.0]]
    """
    x64 = train.to(torch.float64)
    if mode == "pixel_mean":
        return Normalization(mode, x64.mean(dim=0), torch.ones((), dtype=torch.float64))
    if mode == "standard":
        std = x64.std(correction=0)
        if not std > 0:
            raise ValueError("standard normalisation needs inputs that are not all equal")
        return Normalization(mode, x64.mean(), std)
    raise ValueError(f"normalisation must be one of {', '.join(NORMALIZATIONS)}, got {mode!r}")


def prepare_inputs(
    train: Tensor,
    others: tuple[Tensor, ...] = (),
    *,
    mode: NormalizationMode = "pixel_mean",
    constant: float | None = None,
) -> tuple[Tensor, ...]:
    r"""Seed ``004_…``'s input pipeline: normalise (fitted on ``train``), then append ``c``.

    :math:`\tilde x = [\,\mathrm{norm}(x),\ c\,]` — the constant pixel is the hidden layer's
    bias (seed §3, appendix E: ``c = 10``); ``constant=None`` gives the bias-free variant.

    Args:
        train: flattened training inputs ``(P, d)`` in ``[0, 1]``.
        others: further inputs (test, held-out) normalised with the training statistics.
        mode: ``"pixel_mean"`` or ``"standard"`` (see :func:`fit_normalization`).
        constant: the appended pixel ``c``, or ``None`` for none.

    Returns:
        ``(train, *others)`` normalised, each ``(·, d)`` or ``(·, d + 1)``.

    Example:
        >>> x = torch.rand(100, 784)
        >>> train, test = prepare_inputs(x[:80], (x[80:],), constant=10.0)
        >>> train.shape, float(test[0, -1])
        (torch.Size([80, 785]), 10.0)
    """
    normalization = fit_normalization(train, mode)
    prepared = tuple(normalization(x) for x in (train, *others))
    if constant is None:
        return prepared
    return tuple(append_constant(x, constant) for x in prepared)


def one_hot(
    labels: np.ndarray | Tensor, n_classes: int, dtype: torch.dtype = torch.float32
) -> Tensor:
    """One-hot targets ``(N, n_classes)`` for a squared-error loss (seed ``004_…`` appendix E).

    Example:
        >>> one_hot(np.array([2, 0]), 3).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    index = torch.as_tensor(np.asarray(labels) if not isinstance(labels, Tensor) else labels)
    return torch.nn.functional.one_hot(index.long(), n_classes).to(dtype)


def _stratified_counts(labels: np.ndarray, n_holdout: int) -> dict[int, int]:
    """Largest-remainder allocation of ``n_holdout`` over the classes, proportional to size."""
    classes, sizes = np.unique(labels, return_counts=True)
    quota = n_holdout * sizes / sizes.sum()
    counts = np.floor(quota).astype(int)
    remainder_order = np.argsort(-(quota - counts), kind="stable")
    counts[remainder_order[: n_holdout - counts.sum()]] += 1
    return {int(c): int(n) for c, n in zip(classes, counts, strict=True)}


def holdout_split(
    n_items: int,
    n_holdout: int,
    *,
    seed: int | None = 0,
    labels: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Split ``range(n_items)`` deterministically into kept and held-out indices.

    * ``seed=None``: the last ``n_holdout`` items are held out, in order — the classic MNIST
      convention of training on the first 50 000 of the 60 000 training images (seed
      ``004_…`` appendix E trains on "50000 images") [inferred].
    * ``seed`` an integer: a random subset drawn with ``numpy.random.default_rng(seed)``;
      with ``labels``, stratified (each class held out in proportion to its size,
      largest-remainder rounding).

    Args:
        n_items: the number of items.
        n_holdout: how many to hold out, ``0 ≤ n_holdout ≤ n_items``.
        seed: ``None`` for the ordered split, else the random seed.
        labels: class labels ``(n_items,)`` for a stratified random split.

    Returns:
        ``(kept, held_out)``: sorted ``int64`` index arrays that partition ``range(n_items)``.

    Example:
        >>> kept, held = holdout_split(6, 2, seed=None)
        >>> kept.tolist(), held.tolist()
        ([0, 1, 2, 3], [4, 5])
    """
    if not 0 <= n_holdout <= n_items:
        raise ValueError(f"need 0 ≤ n_holdout ≤ n_items, got {n_holdout} of {n_items}")
    if seed is None:
        held = np.arange(n_items - n_holdout, n_items)
    else:
        rng = np.random.default_rng(seed)
        if labels is None:
            held = rng.choice(n_items, size=n_holdout, replace=False)
        else:
            labels = np.asarray(labels)
            if labels.shape != (n_items,):
                raise ValueError(f"labels must have shape ({n_items},), got {labels.shape}")
            held = np.concatenate(
                [
                    rng.choice(np.flatnonzero(labels == c), size=n, replace=False)
                    for c, n in _stratified_counts(labels, n_holdout).items()
                ]
            )
    mask = np.zeros(n_items, dtype=bool)
    mask[held] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)
