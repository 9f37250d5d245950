"""One loss vocabulary (issue 48): every loss name is defined once, in
:data:`relulab.engine.losses.LOSSES`, and resolved by :func:`~relulab.engine.losses.get_loss`
for both kinds of problem; the capabilities :func:`~relulab.engine.train` uses are declared as
protocols, not probed by name."""

from __future__ import annotations

from typing import get_args

import pytest
import torch
from torch import nn

from relulab.engine import (
    BatchedAdam,
    BatchedMLP,
    BatchedSGD,
    FunctionalFamily,
    FunctionalProblem,
    MLPSpec,
    SupervisedProblem,
    minibatches,
)
from relulab.engine.functional import FUNCTIONAL_LOSSES
from relulab.engine.losses import LOSSES, LossName, get_loss, squared_error_scale
from relulab.engine.train import Compilable, KnowsStepWork, RecordsInOnePass


def test_the_type_and_the_registry_name_the_same_losses():
    assert set(get_args(LossName)) == set(LOSSES)
    assert all(name == loss.name for name, loss in LOSSES.items())
    assert set(FUNCTIONAL_LOSSES) == {"mse", "half_sum", "cross_entropy"}  # every form


def test_the_batched_forms_are_the_formulas_the_problems_used():
    output, target = torch.randn(3, 5, 2, dtype=torch.float64), torch.randn(5, 2)
    squared = (output - target).square()
    assert torch.equal(get_loss("mse", "batched")(output, target), squared.mean(dim=(1, 2)))
    half = get_loss("half_sum", "batched")(output, target)
    assert torch.equal(half, 0.5 * squared.sum(dim=(1, 2)))
    assert get_loss("mse", "per_network") is nn.functional.mse_loss
    assert get_loss("cross_entropy", "per_network") is nn.functional.cross_entropy


def test_the_manual_backward_starts_from_the_registrys_scale():
    assert squared_error_scale("mse", 4, 2) == 1 / 8
    assert squared_error_scale("half_sum", 4, 2) == 0.5
    model = BatchedMLP(MLPSpec((3, 5, 2)), n_networks=2)
    x, y = torch.randn(7, 3), torch.randn(7, 2)
    for name in ("mse", "half_sum"):
        losses, _ = model.loss_and_grads(x, y, name)
        expected = get_loss(name, "batched")(model.forward(x), y)
        torch.testing.assert_close(losses, expected)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: SupervisedProblem(
                BatchedMLP(MLPSpec((2, 1)), 1), torch.ones(4, 2), torch.ones(4, 1), loss="hinge"
            ),
            "unknown loss 'hinge'; choose mse or half_sum",
        ),
        (
            lambda: SupervisedProblem(
                BatchedMLP(MLPSpec((2, 1)), 1),
                torch.ones(4, 2),
                torch.ones(4, 1),
                loss="cross_entropy",
            ),
            "loss 'cross_entropy' has no batched form; choose mse or half_sum",
        ),
        (
            lambda: FunctionalProblem(
                FunctionalFamily(lambda: nn.Linear(2, 1), 1), iter([]), "hinge"
            ),
            "unknown loss 'hinge'; choose mse or half_sum or cross_entropy or a callable",
        ),
        (
            lambda: BatchedMLP(MLPSpec((2, 1)), 1).loss_and_grads(
                torch.ones(4, 2), torch.ones(4, 1), "cross_entropy"
            ),
            "'cross_entropy' is not a squared-error loss; choose mse or half_sum",
        ),
    ],
)
def test_an_unknown_or_unfit_loss_name_is_a_clear_error(make, message):
    with pytest.raises(ValueError) as raised:
        make()
    assert str(raised.value) == message


def test_capabilities_are_declared_protocols():
    model = BatchedMLP(MLPSpec((3, 4, 1)), n_networks=2)
    supervised = SupervisedProblem(model, torch.randn(8, 3), torch.randn(8, 1))
    assert isinstance(supervised, RecordsInOnePass | KnowsStepWork | Compilable)
    assert all(isinstance(supervised, p) for p in (RecordsInOnePass, KnowsStepWork, Compilable))
    family = FunctionalFamily(lambda: nn.Linear(3, 1), 2)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    functional = FunctionalProblem(family, minibatches(x, y, 4, torch.Generator()))
    assert not any(isinstance(functional, p) for p in (RecordsInOnePass, KnowsStepWork, Compilable))
    assert isinstance(BatchedSGD(model.params, 0.1), Compilable)
    assert not isinstance(BatchedAdam(model.params, 0.1), Compilable)
