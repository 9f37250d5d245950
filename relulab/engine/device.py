"""What the engine needs to know about devices: when queued GPU work has finished."""

from __future__ import annotations

import torch

__all__ = ["synchronise"]


def synchronise(device: torch.device | str) -> None:
    """Wait for the work queued on ``device`` (CUDA runs kernels asynchronously, so a timer
    read without this measures the launches, not the work); nothing on the CPU.

    Args:
        device: a ``torch.device`` or its name.

    Example:
        >>> synchronise("cpu")  # returns at once
    """
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
