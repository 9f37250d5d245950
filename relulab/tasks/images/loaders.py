"""Loaders for the real data sets, read from a directory the user gives (never downloaded).

* MNIST and Fashion-MNIST: the four IDX files ``{train,t10k}-{images-idx3,labels-idx1}-ubyte``
  (also spelled ``…images.idx3-ubyte``), each plain or ``.gz``; in the directory itself or in
  its ``MNIST/raw`` or ``FashionMNIST/raw`` (torchvision's layout).
* CIFAR-10: the "python version" ``cifar-10-batches-py`` directory (``data_batch_1`` … ``_5``,
  ``test_batch``, optional ``batches.meta``), or its parent.
* ISBI 2012: ``train-volume.tif`` and ``train-labels.tif`` (and ``test-volume.tif``, unlabelled,
  when present), multi-page TIFFs of 512 × 512 slices.

Each returns an :class:`~relulab.tasks.images.dataset.ImageDataset` of ``uint8`` images
``(N, C, H, W)`` and raises :class:`~relulab.tasks.images.errors.ImageDataError` (one line) for
a missing directory, missing files, or malformed content.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from relulab.tasks.images.dataset import ImageDataset, rgb_to_luma
from relulab.tasks.images.errors import ImageDataError
from relulab.tasks.images.formats import read_idx, read_tiff_stack, unpickle_restricted

__all__ = [
    "CIFAR10_CLASSES",
    "FASHION_MNIST_CLASSES",
    "MNIST_CLASSES",
    "load_cifar10",
    "load_fashion_mnist",
    "load_isbi2012",
    "load_mnist",
]

MNIST_CLASSES = tuple(str(digit) for digit in range(10))
FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "trouser",
    "pullover",
    "dress",
    "coat",
    "sandal",
    "shirt",
    "sneaker",
    "bag",
    "ankle boot",
)
CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
ISBI_CLASSES = ("membrane", "cell")


def _existing_directory(data_dir: str | Path, dataset: str) -> Path:
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise ImageDataError(f"{dataset}: data directory {path} does not exist")
    return path


# --------------------------------------------------------------------------------------- MNIST


def _idx_candidates(split: str, kind: str) -> list[str]:
    """File names MNIST's IDX files go by: ``train-images-idx3-ubyte`` and the dotted variant."""
    dims = "3" if kind == "images" else "1"
    stems = [f"{split}-{kind}-idx{dims}-ubyte", f"{split}-{kind}.idx{dims}-ubyte"]
    return [name for stem in stems for name in (stem, f"{stem}.gz")]


def _find_mnist_file(directories: list[Path], split: str, kind: str) -> Path | None:
    for directory in directories:
        for name in _idx_candidates(split, kind):
            if (directory / name).is_file():
                return directory / name
    return None


def _mnist_split(
    directories: list[Path], split: str, name: str = "mnist"
) -> tuple[np.ndarray, np.ndarray]:
    found = {kind: _find_mnist_file(directories, split, kind) for kind in ("images", "labels")}
    missing = [_idx_candidates(split, kind)[0] for kind, path in found.items() if path is None]
    if missing:
        raise ImageDataError(f"{name}: {directories[0]} lacks {', '.join(missing)} (plain or .gz)")
    images_path, labels_path = found["images"], found["labels"]
    assert images_path is not None and labels_path is not None  # else missing, above
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ImageDataError(
            f"{name}: {images_path}: expected uint8 images N×28×28, got {images.dtype} "
            f"{'×'.join(map(str, images.shape))}"
        )
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise ImageDataError(f"{name}: {labels_path}: expected a uint8 vector of labels")
    if len(labels) != len(images):
        raise ImageDataError(
            f"{name}: {labels_path} has {len(labels)} labels for {len(images)} images"
        )
    if labels.size and labels.max() > 9:
        raise ImageDataError(f"{name}: {labels_path}: label {labels.max()} outside 0–9")
    return images[:, None], labels.astype(np.int64)


def _idx_dataset(
    data_dir: str | Path, name: str, title: str, folder: str, class_names: tuple[str, ...]
) -> ImageDataset:
    """The four IDX files of MNIST's format from ``data_dir`` or its torchvision layout
    ``folder/raw`` (``folder``: ``MNIST``, ``FashionMNIST``); ``title`` names the set in
    ``source``."""
    root = _existing_directory(data_dir, name)
    directories = [root, root / folder / "raw"]
    train_images, train_labels = _mnist_split(directories, "train", name)
    test_images, test_labels = _mnist_split(directories, "t10k", name)
    return ImageDataset(
        name=name,
        train_images=train_images,
        train_targets=train_labels,
        test_images=test_images,
        test_targets=test_labels,
        class_names=class_names,
        source=f"{title} IDX files in {root}",
        standin=False,
    )


def load_mnist(data_dir: str | Path) -> ImageDataset:
    """Read MNIST from its four IDX files (LeCun, Cortes & Burges; seed ``004_…`` §3).

    Args:
        data_dir: the directory holding ``train-images-idx3-ubyte[.gz]``,
            ``train-labels-idx1-ubyte[.gz]``, ``t10k-images-idx3-ubyte[.gz]`` and
            ``t10k-labels-idx1-ubyte[.gz]`` (or its ``MNIST/raw`` subdirectory does).

    Returns:
        The 60 000 training and 10 000 test images, ``uint8 (N, 1, 28, 28)``, labels 0–9.

    Raises:
        ImageDataError: a missing directory or file, or a malformed one.

    Example:
        >>> mnist = load_mnist("~/data/mnist")  # doctest: +SKIP
        >>> mnist.train_images.shape  # doctest: +SKIP
        (60000, 1, 28, 28)
    """
    return _idx_dataset(data_dir, "mnist", "MNIST", "MNIST", MNIST_CLASSES)


def load_fashion_mnist(data_dir: str | Path) -> ImageDataset:
    """Read Fashion-MNIST (Xiao, Rasul & Vollgraf, 2017) from its four IDX files.

    Fashion-MNIST is MNIST's drop-in replacement: the same file names, format and sizes (60 000
    training and 10 000 test images, 28×28 grayscale, ten classes), with clothing instead of
    digits. No seed uses it; relulab reads it as real image data of MNIST's shape where MNIST
    itself is not at hand (Debian ships it as ``dataset-fashion-mnist``, in
    ``/usr/share/datasets/fashion-mnist``).

    Args:
        data_dir: the directory holding ``train-images-idx3-ubyte[.gz]``,
            ``train-labels-idx1-ubyte[.gz]``, ``t10k-images-idx3-ubyte[.gz]`` and
            ``t10k-labels-idx1-ubyte[.gz]`` (or its ``FashionMNIST/raw`` subdirectory does).

    Returns:
        The training and test images, ``uint8 (N, 1, 28, 28)``, labels 0–9.

    Raises:
        ImageDataError: a missing directory or file, or a malformed one.

    Example:
        >>> fashion = load_fashion_mnist("/usr/share/datasets/fashion-mnist")  # doctest: +SKIP
        >>> fashion.train_images.shape, fashion.class_names[9]  # doctest: +SKIP
        ((60000, 1, 28, 28), 'ankle boot')
    """
    return _idx_dataset(
        data_dir, "fashion-mnist", "Fashion-MNIST", "FashionMNIST", FASHION_MNIST_CLASSES
    )


# ------------------------------------------------------------------------------------ CIFAR-10

CIFAR_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST_BATCH = "test_batch"
CIFAR_FOLDER = "cifar-10-batches-py"


def _cifar_directory(root: Path) -> Path:
    for directory in (root, root / CIFAR_FOLDER):
        if (directory / CIFAR_TRAIN_BATCHES[0]).is_file():
            return directory
    raise ImageDataError(
        f"cifar10: neither {root} nor {root / CIFAR_FOLDER} holds the python batches "
        f"({CIFAR_TRAIN_BATCHES[0]} … {CIFAR_TRAIN_BATCHES[-1]}, {CIFAR_TEST_BATCH})"
    )


def _text_keys(entry: object, path: Path) -> dict[str, object]:
    if not isinstance(entry, dict):
        kind = type(entry).__name__
        raise ImageDataError(f"cifar10: {path}: expected a pickled dict, got {kind}")
    return {k.decode("latin-1") if isinstance(k, bytes) else str(k): v for k, v in entry.items()}


def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    if not path.is_file():
        raise ImageDataError(f"cifar10: {path.parent} lacks {path.name}")
    batch = _text_keys(unpickle_restricted(path), path)
    if "data" not in batch or "labels" not in batch:
        raise ImageDataError(f"cifar10: {path}: the batch has no 'data' or no 'labels' entry")
    data, labels = batch["data"], batch["labels"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2:
        raise ImageDataError(f"cifar10: {path}: 'data' is not a uint8 matrix")
    if data.shape[1] != 3 * 32 * 32:
        raise ImageDataError(f"cifar10: {path}: rows of {data.shape[1]} values, expected 3072")
    try:
        label_array = np.asarray(labels, dtype=np.int64)
    except (TypeError, ValueError):
        raise ImageDataError(f"cifar10: {path}: 'labels' are not integers") from None
    if label_array.shape != (len(data),):
        raise ImageDataError(f"cifar10: {path}: {label_array.size} labels for {len(data)} images")
    if label_array.size and (label_array.min() < 0 or label_array.max() > 9):
        raise ImageDataError(f"cifar10: {path}: labels outside 0–9")
    return data.reshape(-1, 3, 32, 32), label_array


def _cifar_class_names(directory: Path) -> tuple[str, ...]:
    meta_path = directory / "batches.meta"
    if not meta_path.is_file():
        return CIFAR10_CLASSES
    names = _text_keys(unpickle_restricted(meta_path), meta_path).get("label_names")
    if not isinstance(names, list) or len(names) != 10:
        raise ImageDataError(f"cifar10: {meta_path}: 'label_names' is not a list of 10 names")
    return tuple(n.decode("latin-1") if isinstance(n, bytes) else str(n) for n in names)


def load_cifar10(data_dir: str | Path, *, grayscale: bool = False) -> ImageDataset:
    """Read CIFAR-10's python batches (Krizhevsky 2009; seeds ``002_…`` §3.3, ``004_…`` §3).

    Each batch is a pickled dict: ``data``, a ``uint8`` matrix ``(10000, 3072)`` whose rows are
    the red, green and blue 32 × 32 planes in row-major order, and ``labels``, 10 000 integers
    0–9. Read through :func:`~relulab.tasks.images.formats.unpickle_restricted` (no code runs).

    Args:
        data_dir: ``cifar-10-batches-py`` itself or the directory that contains it.
        grayscale: convert to one luma channel with :func:`rgb_to_luma` (seed 004 trains on
            grayscale CIFAR-10).

    Returns:
        50 000 training and 10 000 test images, ``uint8 (N, 3, 32, 32)`` (``(N, 1, 32, 32)``
        when ``grayscale``), labels 0–9.

    Raises:
        ImageDataError: a missing directory or batch, or a malformed batch.

    Example:
        >>> cifar = load_cifar10("~/data", grayscale=True)  # doctest: +SKIP
        >>> cifar.train_images.shape  # doctest: +SKIP
        (50000, 1, 32, 32)
    """
    directory = _cifar_directory(_existing_directory(data_dir, "cifar10"))
    train = [_cifar_batch(directory / name) for name in CIFAR_TRAIN_BATCHES]
    test_images, test_labels = _cifar_batch(directory / CIFAR_TEST_BATCH)
    train_images = np.concatenate([images for images, _ in train])
    train_labels = np.concatenate([labels for _, labels in train])
    source = f"CIFAR-10 python batches in {directory}"
    if grayscale:
        train_images, test_images = rgb_to_luma(train_images), rgb_to_luma(test_images)
        source += ", grayscale (BT.601 luma)"
    return ImageDataset(
        name="cifar10",
        train_images=train_images,
        train_targets=train_labels,
        test_images=test_images,
        test_targets=test_labels,
        class_names=_cifar_class_names(directory),
        source=source,
        standin=False,
    )


# ----------------------------------------------------------------------------------- ISBI 2012

ISBI_TRAIN_VOLUME = "train-volume.tif"
ISBI_TRAIN_LABELS = "train-labels.tif"
ISBI_TEST_VOLUME = "test-volume.tif"


def load_isbi2012(data_dir: str | Path) -> ImageDataset:
    """Read ISBI 2012's EM segmentation stacks (Arganda-Carreras et al. 2015; seed 002 §3.3).

    ``train-volume.tif`` holds 30 serial-section EM slices of 512 × 512, ``train-labels.tif``
    their membrane maps (white = cell interior, black = membrane), ``test-volume.tif`` 30 more
    slices whose labels the challenge withholds (optional here). Masks are thresholded at
    128: 1 = cell interior, 0 = membrane.

    Args:
        data_dir: the directory holding the TIFF stacks.

    Returns:
        Train images ``uint8 (30, 1, 512, 512)`` with masks ``uint8 (30, 512, 512)`` in
        ``{0, 1}``; the test images (none when ``test-volume.tif`` is absent), no test masks.

    Raises:
        ImageDataError: a missing directory or stack, a malformed stack, or image and label
            stacks that disagree in shape.

    Example:
        >>> isbi = load_isbi2012("~/data/isbi2012")  # doctest: +SKIP
        >>> isbi.train_images.shape, isbi.train_targets.shape  # doctest: +SKIP
        ((30, 1, 512, 512), (30, 512, 512))
    """
    root = _existing_directory(data_dir, "isbi2012")
    for name in (ISBI_TRAIN_VOLUME, ISBI_TRAIN_LABELS):
        if not (root / name).is_file():
            raise ImageDataError(
                f"isbi2012: {root} lacks {name} (needs {ISBI_TRAIN_VOLUME} and {ISBI_TRAIN_LABELS})"
            )
    volume = read_tiff_stack(root / ISBI_TRAIN_VOLUME)
    labels = read_tiff_stack(root / ISBI_TRAIN_LABELS)
    if volume.shape != labels.shape:
        raise ImageDataError(
            f"isbi2012: {ISBI_TRAIN_VOLUME} is {'×'.join(map(str, volume.shape))} but "
            f"{ISBI_TRAIN_LABELS} is {'×'.join(map(str, labels.shape))}"
        )
    test_path = root / ISBI_TEST_VOLUME
    if test_path.is_file():
        test = read_tiff_stack(test_path)
        if test.shape[1:] != volume.shape[1:]:
            raise ImageDataError(
                f"isbi2012: {ISBI_TEST_VOLUME} slices are {test.shape[1]}×{test.shape[2]}, "
                f"train slices {volume.shape[1]}×{volume.shape[2]}"
            )
    else:
        test = np.zeros((0, *volume.shape[1:]), dtype=np.uint8)
    source = f"ISBI 2012 TIFF stacks in {root}"
    if not test_path.is_file():
        source += f" (no {ISBI_TEST_VOLUME})"
    return ImageDataset(
        name="isbi2012",
        train_images=volume[:, None],
        train_targets=(labels >= 128).astype(np.uint8),
        test_images=test[:, None],
        test_targets=None,
        class_names=ISBI_CLASSES,
        source=source,
        standin=False,
    )
