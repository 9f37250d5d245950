"""Data for the studies: teacher–student tasks, toy tasks, image loaders."""

from relulab.tasks.correlated import two_inputs_with_correlation
from relulab.tasks.hierarchical import binary_tree_targets, hierarchical_task
from relulab.tasks.scalar import scalar_inputs, scalar_teacher
from relulab.tasks.transforms import append_constant

__all__ = [
    "append_constant",
    "binary_tree_targets",
    "hierarchical_task",
    "scalar_inputs",
    "scalar_teacher",
    "two_inputs_with_correlation",
]
