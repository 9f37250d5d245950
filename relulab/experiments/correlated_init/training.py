"""Teacher–student training of the correlated-init study (seed 003 §4–5, appendix B): the three
teachers, and every student init × seed of one teacher and optimiser as one
:class:`relulab.engine.BatchedMLP` — with the output-matched twins of issue 45 and the weights'
row correlation before and after training.

**Twins** (:func:`match_output_scale`): a twin is drawn from its student's seed, then its last
layer (weights and bias) is multiplied by √(target / v), v its output variance over the training
inputs at initialisation, so that it starts at the common output variance
``matched_output_variance``: the speed claims compare the schemes with and without their
initial output scale.

**Row correlation** (:func:`row_correlation`): for a layer whose rows (the weights into one
unit) have covariance (σ²/N)(I + (k/N)J), the row sum has variance σ²(1 + k) and the row's
squared norm mean σ²(1 + k/N), so Σ_rows (row sum)² / Σ_rows ‖row‖² − 1 estimates k (≈ 0 for
He, ≈ −1 for ACI): appendix B's "anti-correlation may develop in weights during training" is a
fall of it during training.
"""

from __future__ import annotations

import math

import torch

from relulab.engine import BatchedAdam, BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem, train
from relulab.experiments.context import RunContext
from relulab.experiments.correlated_init.config import CorrelatedInitConfig
from relulab.experiments.correlated_init.inits import Inits, matched, unmatched
from relulab.records import UnitResult

__all__ = [
    "match_output_scale",
    "row_correlation",
    "teacher_data",
    "train_students",
]


def _teacher(
    name: str, config: CorrelatedInitConfig, seed: int, dtype: torch.dtype, depth: int
) -> BatchedMLP:
    """The three teachers of seed 003 §4: a He ReLU net of the student's size, a single-layer
    ReLU net with few nodes, a tanh net of the student's size in tanh's chaotic phase."""
    hidden = (config.train_width,) * depth
    if name == "standard":
        return BatchedMLP(
            MLPSpec((config.input_dim, *hidden, 1)), 1, "kaiming_normal", seeds=[seed], dtype=dtype
        )
    if name == "simple":
        spec = MLPSpec((config.input_dim, config.simple_teacher_width, 1))
        return BatchedMLP(spec, 1, "kaiming_normal", seeds=[seed], dtype=dtype)
    spec = MLPSpec((config.input_dim, *hidden, 1), activation="tanh")
    return BatchedMLP(
        spec,
        1,
        "lecun_normal",
        init_scale=math.sqrt(config.tanh_teacher_sigma_w2),
        seeds=[seed],
        dtype=dtype,
    )


def teacher_data(
    teacher: str, config: CorrelatedInitConfig, context: RunContext, depth: int | None = None
) -> tuple[torch.Tensor, ...]:
    """Training and validation inputs :math:`x \\sim N(0, I)` and the outputs of a teacher of
    ``depth`` hidden layers (default: the students'), standardised on the training set (zero
    mean, unit variance) [I]."""
    depth = config.train_depth if depth is None else depth
    suffix = "" if depth == config.train_depth else f"-depth{depth}"
    generator = context.generator(f"teacher-{teacher}{suffix}")
    n = config.train_samples + config.validation_samples
    x = torch.randn(n, config.input_dim, generator=generator, dtype=torch.float64)
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    with torch.no_grad():
        y = _teacher(teacher, config, seed, torch.float64, depth).forward(x)[0]
    train_y = y[: config.train_samples]
    y = (y - train_y.mean()) / train_y.std()
    x, y = x.to(context.dtype), y.to(context.dtype)
    cut = config.train_samples
    return x[:cut], y[:cut], x[cut:], y[cut:]


@torch.no_grad()
def match_output_scale(
    model: BatchedMLP, x: torch.Tensor, rows: torch.Tensor, target: float
) -> None:
    """Rescale the last layer (weights and bias) of networks ``rows`` so that each one's output
    variance over the inputs ``x`` is ``target``; a network whose output is constant is left as
    it is (no scale gives it a variance)."""
    if len(rows) == 0:
        return
    variance = model.forward(x)[rows, :, 0].double().var(dim=1)
    factor = torch.where(variance > 0, torch.sqrt(target / variance), torch.ones_like(variance))
    weight = model.weights[-1]
    weight[rows] = weight[rows] * factor.to(weight.dtype).view(-1, *([1] * (weight.dim() - 1)))
    bias = model.biases[-1]
    if bias is not None:
        bias[rows] = bias[rows] * factor.to(bias.dtype).view(-1, *([1] * (bias.dim() - 1)))


@torch.no_grad()
def row_correlation(model: BatchedMLP) -> torch.Tensor:
    """Per network, the estimate of k (module docstring) over the hidden-to-hidden layers'
    rows, averaged over those layers (``nan`` without such a layer)."""
    layers = model.weights[1:-1]
    if not layers:
        return torch.full((model.weights[0].shape[0],), float("nan"), dtype=torch.float64)
    estimates = []
    for weight in layers:
        rows = weight.double()  # (S, out, in): a row is the weights into one unit
        sums = rows.sum(dim=2).square().sum(dim=1)
        norms = rows.square().sum(dim=(1, 2))
        estimates.append(sums / norms - 1.0)
    return torch.stack(estimates).mean(dim=0)


def _conditions(
    inits: Inits, twins: tuple[str, ...], seeds: int, teacher: str, optimiser: str
) -> list[dict]:
    """One condition per student: every init × seed, then every twin × seed."""
    names = [*inits, *(matched(name) for name in twins)]
    return [
        {
            "init": name,
            "seed": s,
            "teacher": teacher,
            "optimiser": optimiser,
            **inits[unmatched(name)][1],
        }
        for name in names
        for s in range(seeds)
    ]


def _model(
    config: CorrelatedInitConfig,
    inits: Inits,
    conditions: list[dict],
    depth: int,
    context: RunContext,
) -> BatchedMLP:
    """Every student of ``conditions``; a twin draws its student's seed."""
    order = list(inits)
    bases = [unmatched(c["init"]) for c in conditions]
    return BatchedMLP(
        MLPSpec((config.input_dim, *(config.train_width,) * depth, 1)),
        n_networks=len(conditions),
        init=[inits[base][0] for base in bases],
        init_options=[inits[base][1] for base in bases],
        seeds=[
            1000 * order.index(base) + c["seed"] for base, c in zip(bases, conditions, strict=True)
        ],
        dtype=context.dtype,
        device=context.device,
    )


def train_students(
    context: RunContext,
    config: CorrelatedInitConfig,
    teacher: str,
    optimiser: str,
    inits: Inits,
    seeds: int,
    depth: int,
    name: str,
    twins: tuple[str, ...] = (),
) -> UnitResult:
    """Every init × seed (and every twin of ``twins`` × seed, :func:`match_output_scale`) as
    one :class:`~relulab.engine.BatchedMLP` of ``depth`` hidden layers trained on one teacher
    with one optimiser (TensorFlow's defaults [I]); validation loss per epoch, and per student
    its output variance on the validation inputs at initialisation
    (``arrays["initial_output_variance"]``) and the row correlation of its hidden weights
    before and after training (``arrays["initial_row_correlation"]``,
    ``arrays["final_row_correlation"]``)."""
    x, y, x_val, y_val = teacher_data(teacher, config, context, depth)
    conditions = _conditions(inits, twins, seeds, teacher, optimiser)
    device = context.device
    model = _model(config, inits, conditions, depth, context)
    twin_rows = [i for i, c in enumerate(conditions) if c["init"] != unmatched(c["init"])]
    match_output_scale(
        model,
        x.to(device),
        torch.tensor(twin_rows, dtype=torch.long, device=device),
        config.matched_output_variance,
    )
    problem = SupervisedProblem(
        model,
        x.to(device),
        y.to(device),
        "mse",
        config.batch_size,
        context.generator(f"batches-{name}"),
        validation=(x_val.to(device), y_val.to(device)),
    )
    with torch.no_grad():
        initial_variance = model.forward(x_val.to(device))[..., 0].var(dim=1)
    initial_rows = row_correlation(model)
    steps_per_epoch = config.train_samples // config.batch_size
    step: BatchedSGD | BatchedAdam
    if optimiser == "sgd":
        epochs, step = config.sgd_epochs, BatchedSGD(problem.params, config.sgd_lr)
    else:
        epochs = config.adam_epochs
        step = BatchedAdam(problem.params, config.adam_lr, eps=config.adam_eps)
    steps = epochs * steps_per_epoch
    with context.progress(steps, name) as advance:
        result = train(problem, step, steps, steps_per_epoch, advance)
    arrays = {
        "initial_output_variance": initial_variance.double().cpu().numpy(),
        "initial_row_correlation": initial_rows.cpu().numpy(),
        "final_row_correlation": row_correlation(model).cpu().numpy(),
    }
    return UnitResult.from_training(result, conditions, arrays)
