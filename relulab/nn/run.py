"""Running a user's model with a clear error when the data do not fit it."""

from __future__ import annotations

from torch import Tensor, nn

__all__ = ["expected_input", "run_model"]


def expected_input(model: nn.Module) -> str:
    """The input shape the model's first Linear/Conv layer expects, for error messages."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            return f"(N, {module.in_features})"
        if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d):
            return f"(N, {module.in_channels}, …)"
    return "unknown"


def run_model(model: nn.Module, batch: Tensor, data_shape: tuple[int, ...] | None = None) -> Tensor:
    """``model(batch)``, turning a shape error into a ``ValueError`` naming the data's shape
    (``data_shape`` when ``batch`` is a slice of larger data) and what the model expects."""
    try:
        return model(batch)
    except RuntimeError as error:
        raise ValueError(
            f"the model could not run on data of shape {data_shape or tuple(batch.shape)} "
            f"(its first layer expects {expected_input(model)}): {error}"
        ) from None
