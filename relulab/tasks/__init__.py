"""Data for the studies: teacher–student tasks, toy tasks, image loaders."""

from relulab.tasks.hierarchical import binary_tree_targets, hierarchical_task
from relulab.tasks.images import ImageDataError, ImageDataset, load_images
from relulab.tasks.scalar import scalar_inputs, scalar_teacher
from relulab.tasks.transforms import append_constant

__all__ = [
    "ImageDataError",
    "ImageDataset",
    "append_constant",
    "binary_tree_targets",
    "hierarchical_task",
    "load_images",
    "scalar_inputs",
    "scalar_teacher",
]
