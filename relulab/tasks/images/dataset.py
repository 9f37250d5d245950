"""The container every image loader returns, and the RGB → grayscale conversion."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["LUMA_WEIGHTS", "ImageDataset", "rgb_to_luma"]

Task = Literal["classification", "segmentation"]


@dataclass(frozen=True)
class ImageDataset:
    """Images as distributed (``uint8``, channel-first) with their labels or masks.

    Attributes:
        name: ``"mnist"``, ``"fashion-mnist"``, ``"cifar10"`` or ``"isbi2012"``.
        train_images: ``uint8`` array ``(N, C, H, W)``.
        train_targets: class labels ``int64 (N,)``, or segmentation masks ``uint8 (N, H, W)``
            with values in ``{0, 1}`` (ISBI: 1 = cell interior, 0 = membrane).
        test_images: ``uint8 (M, C, H, W)``; ``M`` may be 0.
        test_targets: like ``train_targets`` for the test images, or ``None`` when the
            distribution withholds them (ISBI 2012's test volume is unlabelled).
        class_names: one name per class.
        source: one line saying where the data came from (a directory, or the stand-in and the
            package that ships it) — for the report.
        standin: ``True`` for the bundled offline stand-ins; paper presets refuse those.
    """

    name: str
    train_images: np.ndarray
    train_targets: np.ndarray
    test_images: np.ndarray
    test_targets: np.ndarray | None
    class_names: tuple[str, ...]
    source: str
    standin: bool

    @property
    def task(self) -> Task:
        """``"classification"`` (a label per image) or ``"segmentation"`` (a mask per image)."""
        return "classification" if self.train_targets.ndim == 1 else "segmentation"

    @property
    def n_classes(self) -> int:
        """The number of classes (2 for a binary segmentation)."""
        return len(self.class_names)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of one image."""
        return tuple(self.train_images.shape[1:])

    def describe(self) -> str:
        """One line for a report: name, sizes, shape and source."""
        c, h, w = self.image_shape
        kind = "stand-in" if self.standin else "real data"
        return (
            f"{self.name} ({kind}): {len(self.train_images)} train / {len(self.test_images)} test "
            f"images of {c}×{h}×{w}; {self.source}"
        )

    def replace(self, **changes: Any) -> ImageDataset:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


#: ITU-R BT.601 luma weights in Pillow's fixed point (``convert("L")``): numerators over 2^16,
#: i.e. 0.299, 0.587, 0.114 (to 1e-5).
LUMA_WEIGHTS: tuple[int, int, int] = (19595, 38470, 7471)
_LUMA_CHUNK = 4096


def rgb_to_luma(images: np.ndarray) -> np.ndarray:
    r"""Grayscale ``uint8`` images from RGB ones, exactly as Pillow's ``convert("L")``.

    .. math::
        L = \left\lfloor \frac{19595\,R + 38470\,G + 7471\,B + 2^{15}}{2^{16}} \right\rfloor
        \approx 0.299\,R + 0.587\,G + 0.114\,B,

    the ITU-R BT.601 luma, rounded to the nearest integer. Seed ``004_…`` trains on "grayscale"
    CIFAR-10 (§3, appendix C.2) without naming the conversion; BT.601 is the one Pillow and
    torchvision's ``Grayscale`` on PIL images use [inferred].

    Args:
        images: ``uint8`` array ``(N, 3, H, W)``.

    Returns:
        ``uint8`` array ``(N, 1, H, W)``.

    Example:
        >>> int(rgb_to_luma(np.full((1, 3, 1, 1), 255, dtype=np.uint8))[0, 0, 0, 0])
        255
    """
    if images.ndim != 4 or images.shape[1] != 3 or images.dtype != np.uint8:
        raise ValueError(f"expected uint8 RGB (N, 3, H, W), got {images.dtype} {images.shape}")
    tables = [np.arange(256, dtype=np.uint32) * weight for weight in LUMA_WEIGHTS]
    luma = np.empty((len(images), 1, *images.shape[2:]), dtype=np.uint8)
    for start in range(0, len(images), _LUMA_CHUNK):  # chunks keep the uint32 sums in cache
        chunk = images[start : start + _LUMA_CHUNK]
        total = tables[0][chunk[:, 0]]
        total += tables[1][chunk[:, 1]]
        total += tables[2][chunk[:, 2]]
        luma[start : start + _LUMA_CHUNK, 0] = (total + (1 << 15)) >> 16
    return luma
