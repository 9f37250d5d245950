"""Data for the studies: teacher–student tasks, toy tasks, image loaders."""

from relulab.tasks.correlated import two_inputs_with_correlation
from relulab.tasks.hierarchical import (
    DEFAULT_N_ITEMS,
    binary_tree_targets,
    hierarchical_task,
    hierarchy_singular_values,
)
from relulab.tasks.images import ImageDataError, ImageDataset, load_images
from relulab.tasks.scalar import scalar_inputs, scalar_teacher
from relulab.tasks.transforms import append_constant
from relulab.tasks.xor import (
    PARALLEL_COMPLEX,
    PARALLEL_SIMPLE,
    parallel_task,
    xor_linear_task,
    xor_task,
)

__all__ = [
    "DEFAULT_N_ITEMS",
    "ImageDataError",
    "ImageDataset",
    "PARALLEL_COMPLEX",
    "PARALLEL_SIMPLE",
    "append_constant",
    "binary_tree_targets",
    "hierarchical_task",
    "hierarchy_singular_values",
    "load_images",
    "parallel_task",
    "scalar_inputs",
    "scalar_teacher",
    "xor_linear_task",
    "xor_task",
    "two_inputs_with_correlation",
]
