"""One entry point for every image data set: the real files when a directory is given, else the
offline stand-in (which a paper preset refuses)."""

from __future__ import annotations

from pathlib import Path

from relulab.tasks.images.dataset import ImageDataset
from relulab.tasks.images.errors import ImageDataError
from relulab.tasks.images.loaders import (
    load_cifar10,
    load_fashion_mnist,
    load_isbi2012,
    load_mnist,
)
from relulab.tasks.images.standins import cifar10_standin, isbi2012_standin, mnist_standin

__all__ = ["IMAGE_DATASETS", "load_images"]

#: Accepted names → canonical name.
IMAGE_DATASETS: dict[str, str] = {
    "mnist": "mnist",
    "fashion-mnist": "fashion-mnist",
    "fashion_mnist": "fashion-mnist",
    "fashionmnist": "fashion-mnist",
    "cifar10": "cifar10",
    "cifar-10": "cifar10",
    "isbi2012": "isbi2012",
    "isbi": "isbi2012",
}

_EXPECTED_FILES = {
    "mnist": "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-… likewise",
    "fashion-mnist": "Fashion-MNIST's train-images-idx3-ubyte[.gz] and the three others",
    "cifar10": "cifar-10-batches-py (data_batch_1 … 5, test_batch)",
    "isbi2012": "train-volume.tif, train-labels.tif",
}


def load_images(
    name: str,
    data_dir: str | Path | None = None,
    *,
    standin_ok: bool = True,
    grayscale: bool = False,
) -> ImageDataset:
    """Load an image data set from ``data_dir``, or its offline stand-in when there is none.

    Args:
        name: ``"mnist"``, ``"fashion-mnist"``, ``"cifar10"`` or ``"isbi2012"`` (also
            ``"cifar-10"``, ``"isbi"``). Fashion-MNIST has no stand-in.
        data_dir: a directory with the distribution's files (see the loaders), or ``None`` for
            the bundled stand-in.
        standin_ok: ``False`` (paper presets) turns a missing ``data_dir`` into an error.
        grayscale: one luma channel for CIFAR-10 (seed ``004_…``); MNIST and ISBI already
            have one.

    Returns:
        An :class:`ImageDataset`; its ``standin`` flag says whether the data are real.

    Raises:
        ImageDataError: an unknown name, a stand-in where none is allowed, or missing or
            malformed files — one line each.

    Example:
        >>> data = load_images("mnist")  # the bundled stand-in
        >>> data.standin, data.train_images.shape
        (True, (4000, 1, 28, 28))
    """
    key = IMAGE_DATASETS.get(name.lower())
    if key is None:
        raise ImageDataError(
            f"unknown image data set {name!r}; choose one of mnist, fashion-mnist, cifar10, "
            "isbi2012"
        )
    if data_dir is None or str(data_dir) == "":
        if key == "fashion-mnist":
            raise ImageDataError(
                f"fashion-mnist has no stand-in: give data_dir=DIR, a directory with "
                f"{_EXPECTED_FILES[key]} (Debian: /usr/share/datasets/fashion-mnist)"
            )
        if not standin_ok:
            raise ImageDataError(
                f"{key}: this preset needs the real data set: give data_dir=DIR, a directory "
                f"with {_EXPECTED_FILES[key]} (the bundled stand-in is for quick runs only)"
            )
        if key == "mnist":
            return mnist_standin()
        if key == "cifar10":
            return cifar10_standin(grayscale=grayscale)
        return isbi2012_standin()
    if key == "mnist":
        return load_mnist(data_dir)
    if key == "fashion-mnist":
        return load_fashion_mnist(data_dir)
    if key == "cifar10":
        return load_cifar10(data_dir, grayscale=grayscale)
    return load_isbi2012(data_dir)
