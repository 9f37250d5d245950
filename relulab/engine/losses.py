r"""Every named loss of the engine, defined once (:data:`LOSSES`) and resolved in one place
(:func:`get_loss`).

A loss has up to two forms, for the two kinds of problem:

* *batched* — all S networks' outputs ``(S, B, d_out)`` and the targets → the per-network
  losses ``(S,)`` (:class:`~relulab.engine.SupervisedProblem`);
* *per network* — one network's output and targets → a scalar, vectorised over the networks by
  ``torch.func`` (:class:`~relulab.engine.FunctionalProblem`).

The losses:

* ``mse``: :math:`\frac{1}{B\,d_{out}} \sum_{i,k} (\hat y_{ik} - y_{ik})^2` (both forms);
* ``half_sum``: :math:`\frac12 \sum_{i,k} (\hat y_{ik} - y_{ik})^2` (batched; seed ``004_…``);
* ``cross_entropy``: ``torch.nn.functional.cross_entropy`` (per network).

The squared-error losses also give the factor :math:`c` of :math:`L = c \sum r^2` that a
family's explicit backpropagation starts from (:func:`squared_error_scale`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from torch import Tensor, nn

__all__ = ["LOSSES", "Loss", "LossName", "get_loss", "squared_error_scale"]

LossName = Literal["mse", "half_sum", "cross_entropy"]
LossForm = Literal["batched", "per_network"]


def _batched_mse(output: Tensor, target: Tensor) -> Tensor:
    return (output - target).square().mean(dim=(1, 2))


def _batched_half_sum(output: Tensor, target: Tensor) -> Tensor:
    return 0.5 * (output - target).square().sum(dim=(1, 2))


def _half_sum(output: Tensor, target: Tensor) -> Tensor:
    return 0.5 * (output - target).square().sum()


@dataclass(frozen=True)
class Loss:
    """One named loss and its forms (module docstring); a form it lacks is ``None``.

    Attributes:
        name: how problems and configs name it.
        batched: ``(S, B, d_out)`` outputs and targets → ``(S,)``.
        per_network: one network's ``(output, target)`` → a scalar.
        squared_scale: for a squared-error loss, ``(B, d_out)`` → :math:`c` in
            :math:`L = c \\sum r^2`; else ``None``.
    """

    name: str
    batched: Callable[[Tensor, Tensor], Tensor] | None = None
    per_network: Callable[[Tensor, Tensor], Tensor] | None = None
    squared_scale: Callable[[int, int], float] | None = None

    def form(self, form: LossForm) -> Callable[[Tensor, Tensor], Tensor] | None:
        """Its ``batched`` or ``per_network`` form (``None``: it has none)."""
        return self.batched if form == "batched" else self.per_network


#: Every loss by name.
LOSSES: dict[str, Loss] = {
    loss.name: loss
    for loss in (
        Loss(
            "mse",
            batched=_batched_mse,
            per_network=nn.functional.mse_loss,
            squared_scale=lambda samples, outputs: 1.0 / (samples * outputs),
        ),
        Loss(
            "half_sum",
            batched=_batched_half_sum,
            per_network=_half_sum,
            squared_scale=lambda samples, outputs: 0.5,
        ),
        Loss("cross_entropy", per_network=nn.functional.cross_entropy),
    )
}


def get_loss(
    name: str, form: LossForm, alternative: str | None = None
) -> Callable[[Tensor, Tensor], Tensor]:
    """The ``form`` (``"batched"`` or ``"per_network"``) of the loss named ``name``.

    Args:
        name: a name of :data:`LOSSES`.
        form: which form the caller computes.
        alternative: what else the caller accepts, for the error (``"a callable"``).

    Raises:
        ValueError: no loss has that name, or it has no such form; the message lists the
            names that would do.

    Example:
        >>> get_loss("half_sum", "batched").__name__
        '_batched_half_sum'
        >>> get_loss("hinge", "batched")
        Traceback (most recent call last):
        ...
        ValueError: unknown loss 'hinge'; choose mse or half_sum
    """
    loss = LOSSES.get(name) if isinstance(name, str) else None
    function = None if loss is None else loss.form(form)
    if function is None:
        names = [known.name for known in LOSSES.values() if known.form(form) is not None]
        why = f"unknown loss {name!r}" if loss is None else f"loss {name!r} has no {form} form"
        choices = " or ".join([*names, *([alternative] if alternative else [])])
        raise ValueError(f"{why}; choose {choices}")
    return function


def squared_error_scale(name: str, samples: int, outputs: int) -> float:
    """:math:`c` of :math:`L = c \\sum r^2` for the squared-error loss ``name`` on a batch of
    ``samples`` × ``outputs`` (what an explicit backward pass starts from: :math:`g = 2 c r`).

    Raises:
        ValueError: ``name`` is not a squared-error loss.

    Example:
        >>> squared_error_scale("mse", 4, 2), squared_error_scale("half_sum", 4, 2)
        (0.125, 0.5)
    """
    loss = LOSSES.get(name) if isinstance(name, str) else None
    if loss is None or loss.squared_scale is None:
        names = " or ".join(n for n, loss in LOSSES.items() if loss.squared_scale is not None)
        raise ValueError(f"{name!r} is not a squared-error loss; choose {names}")
    return loss.squared_scale(samples, outputs)
