"""Image data sets: loaders for MNIST, CIFAR-10 and ISBI 2012 as distributed.

Nothing is ever downloaded: real data are read from a directory the user gives.
"""

from relulab.tasks.images.dataset import LUMA_WEIGHTS, ImageDataset, rgb_to_luma
from relulab.tasks.images.errors import ImageDataError
from relulab.tasks.images.formats import read_idx, read_tiff_stack, unpickle_restricted
from relulab.tasks.images.loaders import load_cifar10, load_isbi2012, load_mnist

__all__ = [
    "LUMA_WEIGHTS",
    "ImageDataError",
    "ImageDataset",
    "load_cifar10",
    "load_isbi2012",
    "load_mnist",
    "read_idx",
    "read_tiff_stack",
    "rgb_to_luma",
    "unpickle_restricted",
]
