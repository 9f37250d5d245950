"""Data for the studies: teacher–student tasks, toy tasks, image loaders."""

from relulab.tasks.scalar import scalar_inputs, scalar_teacher

__all__ = ["scalar_inputs", "scalar_teacher"]
