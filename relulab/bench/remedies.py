r"""``relulab bench remedies``: does each remedy the advice can offer improve *training*, not
only the statistic it targets?

Each case of :data:`relulab.bench.broken.CASES` is a deliberately broken network. Per seed:
the untreated network is probed at init (or, for the learning-rate case, monitored while it
trains) and :func:`relulab.probe.advise` with ``validated=False`` lists every candidate remedy
of every finding it makes; then the network is trained untreated, with each candidate applied
through relulab's API (:func:`apply_remedy`), and with the practitioner's obvious fix
(standardise, a lower learning rate, a residual LayerNorm network, PyTorch's default init, …)
— Adam, :attr:`Size.steps` steps of :attr:`Size.batch` samples — and its held-out loss is
measured. Every arm of a seed shares the data, the initial draw and the batches.

**The comparison** (:func:`compare`): per seed the ratio of held-out losses, treated over
untreated; over the seeds the geometric mean ratio with the Student-t interval of the mean log
ratio (:func:`relulab.analysis.mean_ci`), 95 %. A network whose loss is not finite
*diverged*; where any did, the verdict follows the probability that the treated network ends
better, a diverged one ranking last (:func:`relulab.analysis.superiority_ci`). Verdicts:
``improved`` (the ratio's interval below 1, or the probability's above 1/2), ``hurt`` (the
other way) or ``undecided``.

The table it writes (``relulab/bench/remedies.json``, committed) is what
:mod:`relulab.probe.evidence` reads: the advice offers a remedy for a finding only where it
improved the held-out loss here and hurt it nowhere.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from relulab import init
from relulab.analysis import mean_ci, superiority_ci
from relulab.bench.broken import CASES, VARIANTS, Case, Size, Split
from relulab.engine.losses import get_loss
from relulab.nn import ReLUMinusB, replace_activations
from relulab.probe import Monitor, advise, probe
from relulab.probe.upstream import non_finite_parameters, standardise

__all__ = [
    "FULL",
    "QUICK",
    "Trial",
    "apply_remedy",
    "compare",
    "remedies_markdown",
    "run_case",
    "run_remedies",
    "train",
]

#: The committed benchmark's sizes.
FULL = Size()

#: A smoke-test size (seconds): every case and arm, tiny networks, few steps.
QUICK = Size(
    seeds=3,
    steps=12,
    train=64,
    test=64,
    batch=16,
    width=12,
    deep=8,
    d_model=8,
    heads=2,
    layers=1,
    every=4,
    warmup=4,
)


@dataclass
class Trial:
    """One network to train: the model, its data, its learning rate and warmup."""

    model: nn.Module
    split: Split
    lr: float
    warmup: int = 0


def _redraw_non_finite(model: nn.Module) -> None:
    """``find_nan``: re-draw (``reset_parameters``) each module owning a non-finite
    parameter, as the remedy's code does."""
    for name in non_finite_parameters(model):
        owner = model.get_submodule(name.rpartition(".")[0])
        owner.reset_parameters()  # type: ignore[operator]  # torch: Module.__getattr__ -> Tensor | Module


def _relu_minus_b(model: nn.Module, data: torch.Tensor) -> None:
    replace_activations(model, ReLUMinusB(init.analytic_relu_shift(scheme="torch_default")))
    init.calibrate_relu_shift_(model, data)


def _positive_bias(model: nn.Module) -> None:
    for layer in model.modules():
        if isinstance(layer, nn.Linear) and layer.bias is not None:
            init.constant_(layer.bias, 0.1)


#: The remedies that change the model in place: how → ``apply(model, x_train, generator)``.
_MODEL_REMEDIES: dict[str, Callable[[nn.Module, torch.Tensor, torch.Generator], Any]] = {
    "relu_minus_b": lambda m, x, g: _relu_minus_b(m, x),
    "scale_bias": lambda m, x, g: init.scale_bias_(m, x, generator=g, bias_free="add"),
    "rai": lambda m, x, g: init.init_model_(m, "rai", g, bias_free="add"),
    "raai": lambda m, x, g: init.init_model_(m, "raai", g, bias_free="add"),
    "positive_bias": lambda m, x, g: _positive_bias(m),
    "default_init": lambda m, x, g: init.init_model_(m, "torch_default", g),
    "find_nan": lambda m, x, g: _redraw_non_finite(m),
}


def _standardised(split: Split) -> Split | None:
    if not split.x_train.is_floating_point():
        return None
    x_test = standardise(split.x_test, reference=split.x_train)
    return Split(standardise(split.x_train), split.y_train, x_test, split.y_test)


def apply_remedy(how: str, case: Case, size: Size, seed: int) -> Trial | None:
    """The case's network and data for one seed, broken, with remedy ``how`` applied (or
    ``"untreated"``) through relulab's API — the code of :data:`relulab.probe.remedies.SNIPPETS`.

    Args:
        how: ``"untreated"``, a remedy of :data:`relulab.probe.remedies.SNIPPETS`, or an
            architecture variant of :data:`relulab.bench.broken.VARIANTS`.
        case: the broken network.
        size: the sizes.
        seed: the seed.

    Returns:
        A :class:`Trial`, or ``None`` when the remedy does not apply to the case (a variant
        its architecture has not, standardising token ids).

    Example:
        >>> trial = apply_remedy("lower_lr", CASES["lr_kills_units"], QUICK, 0)
        >>> round(trial.lr, 6), trial.warmup
        (0.01, 0)
    """
    variant = how if how in VARIANTS else "plain"
    model = case.build(size, seed, variant)
    if model is None:
        return None
    if case.breaks is not None:
        case.breaks(model)
    split = case.data(seed, size)
    lr = size.high_lr if case.high_lr else size.lr
    if how in _MODEL_REMEDIES:
        _MODEL_REMEDIES[how](model, split.x_train, torch.Generator().manual_seed(40_000 + seed))
    elif how == "standardise":
        standardised = _standardised(split)
        if standardised is None:
            return None
        split = standardised
    elif how not in ("untreated", "lower_lr", "warmup", *VARIANTS):
        raise ValueError(f"unknown remedy {how!r}")
    if how == "lower_lr":
        lr *= 0.1
    return Trial(model, split, lr, size.warmup if how == "warmup" else 0)


def _loss(kind: str, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return get_loss(kind, "per_network")(output, target)


def train(trial: Trial, size: Size, seed: int, loss: str, monitor: Monitor | None = None) -> float:
    """Train a trial with Adam and return its held-out loss (NaN when the training loss turned
    non-finite: the network diverged).

    Args:
        trial: the network, data, learning rate and warmup.
        size: the steps and batch size.
        seed: seeds the batches (the same for every arm of a seed).
        loss: ``"mse"`` or ``"cross_entropy"``.
        monitor: stepped before each training step, when given.

    Returns:
        The mean loss on the held-out split.
    """
    model, split = trial.model, trial.split
    optimiser = torch.optim.Adam(model.parameters(), lr=trial.lr)
    schedule = None
    if trial.warmup:
        schedule = torch.optim.lr_scheduler.LinearLR(optimiser, 0.01, total_iters=trial.warmup)
    generator = torch.Generator().manual_seed(30_000 + seed)
    model.train()
    for step in range(size.steps):
        if monitor is not None:
            monitor.step(step)
        index = torch.randint(0, len(split.x_train), (size.batch,), generator=generator)
        value = _loss(loss, model(split.x_train[index]), split.y_train[index])
        if not torch.isfinite(value):
            return math.nan
        optimiser.zero_grad()
        value.backward()
        optimiser.step()
        if schedule is not None:
            schedule.step()
    model.eval()
    with torch.no_grad():
        return float(_loss(loss, model(split.x_test), split.y_test))


def _findings(case: Case, size: Size, seed: int) -> tuple[set[tuple[str, str]], float | None]:
    """The (finding, remedy) pairs the advice makes on the untreated network, every candidate
    (``validated=False``); for a monitored case also the untreated held-out loss (the
    monitored run is the untreated run: the monitor changes nothing)."""
    trial = apply_remedy("untreated", case, size, seed)
    assert trial is not None  # "untreated" applies to every case
    if not case.monitored:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            advice = advise(probe(trial.model, trial.split.x_train), validated=False)
        return {(a.finding, a.how) for a in advice}, None
    monitor = Monitor(trial.model, trial.split.x_train, every=size.every, learning_rate=trial.lr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = train(trial, size, seed, case.loss, monitor)
        advice = monitor.advice(validated=False)
    return {(a.finding, a.how) for a in advice}, loss


def compare(treated: Iterable[float], untreated: Iterable[float]) -> dict[str, Any]:
    """The paired comparison of held-out losses (module docstring).

    Args:
        treated: per seed, the treated network's held-out loss (NaN: diverged).
        untreated: per seed, the untreated one's.

    Returns:
        ``ratio``, ``low``, ``high`` (the geometric mean ratio over the seeds where neither
        diverged and its 95 % interval; ``None`` without such seeds), ``n``, ``diverged``
        (treated, untreated), ``superiority`` (``[value, low, high]`` of P(treated ends
        better), where any diverged) and ``verdict``.

    Example:
        >>> compare([0.5, 0.4, 0.45, 0.5], [1.0, 1.1, 0.9, 1.0])["verdict"]
        'improved'
    """
    a, b = np.asarray(list(treated), float), np.asarray(list(untreated), float)
    bad_a, bad_b = ~np.isfinite(a), ~np.isfinite(b)
    both = ~bad_a & ~bad_b
    out: dict[str, Any] = {"ratio": None, "low": None, "high": None, "n": int(len(a))}
    out["diverged"] = [int(bad_a.sum()), int(bad_b.sum())]
    if both.any():
        estimate = mean_ci(np.log(a[both] / b[both]))
        out.update(
            ratio=_round(math.exp(estimate.value)),
            low=_round(math.exp(estimate.low)),
            high=_round(math.exp(estimate.high)),
        )
    if bad_a.any() or bad_b.any():
        theta = superiority_ci(np.where(bad_a, 0, a), np.where(bad_b, 0, b), bad_a, bad_b)
        out["superiority"] = [_round(theta.value), _round(theta.low), _round(theta.high)]
        better, worse = theta.low > 0.5, theta.high < 0.5
    else:
        better, worse = out["high"] < 1, out["low"] > 1
    out["verdict"] = "improved" if better else "hurt" if worse else "undecided"
    return out


def _round(value: float, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")


def _arms(case: Case, pairs: set[tuple[str, str]]) -> list[str]:
    """The arms of a case: untreated, every candidate remedy, the practitioner's fixes."""
    remedies = dict.fromkeys(how for _, how in sorted(pairs))
    return ["untreated", *remedies, *(fix for fix in case.practice if fix not in remedies)]


def _rows(case: Case, pairs: set[tuple[str, str]], losses: dict[str, list[float]]) -> list[dict]:
    """One row per (finding, remedy) the advice made, and per practitioner fix that is no
    remedy of them (a comparator, under the case's symptom)."""
    rows = []
    for finding, how in sorted(pairs):
        if how in losses:
            rows.append({"case": case.name, "finding": finding, "remedy": how, "role": "remedy"})
    offered = {how for _, how in pairs}
    for fix in case.practice:
        if fix not in offered and fix in losses:
            rows.append(
                {"case": case.name, "finding": case.symptom, "remedy": fix, "role": "comparator"}
            )
    for row in rows:
        row.update(compare(losses[row["remedy"]], losses["untreated"]))
    return rows


def run_case(
    case: Case, size: Size, progress: Callable[[str], None] = lambda text: None
) -> tuple[dict[str, Any], list[dict]]:
    """Every arm of one case over the seeds: the case's record and its rows.

    Args:
        case: the broken network.
        size: the sizes.
        progress: called with a line per arm.

    Returns:
        ``(case record, rows)``: the record has the findings flagged (seeds per finding), each
        arm's held-out losses per seed and the case's CPU seconds.
    """
    started = time.process_time()
    flagged: dict[str, int] = {}
    pairs: set[tuple[str, str]] = set()
    untreated = []
    for seed in range(size.seeds):
        found, loss = _findings(case, size, seed)
        pairs |= found
        untreated.append(loss)
        for finding in {finding for finding, _ in found}:
            flagged[finding] = flagged.get(finding, 0) + 1
    losses: dict[str, list[float]] = {}
    for arm in _arms(case, pairs):
        drawn = [apply_remedy(arm, case, size, seed) for seed in range(size.seeds)]
        trials = [trial for trial in drawn if trial is not None]
        if len(trials) < len(drawn):
            continue
        losses[arm] = []
        for seed, trial in enumerate(trials):
            earlier = untreated[seed] if arm == "untreated" else None
            losses[arm].append(train(trial, size, seed, case.loss) if earlier is None else earlier)
        progress(f"{case.name}: {arm} trained on {size.seeds} seeds")
    record = {
        "name": case.name,
        "symptom": case.symptom,
        "description": case.description,
        "flagged": dict(sorted(flagged.items())),
        "losses": {arm: [_round(v) for v in values] for arm, values in losses.items()},
        "cpu_seconds": round(time.process_time() - started, 1),
    }
    return record, _rows(case, pairs, losses)


def run_remedies(
    size: Size = FULL,
    cases: Iterable[str] | None = None,
    progress: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """Run the benchmark: every case (or those named), every arm, every seed.

    Args:
        size: the sizes (:data:`FULL` for the committed table, :data:`QUICK` for a smoke test).
        cases: the case names (default: all of :data:`relulab.bench.broken.CASES`).
        progress: called with a line per arm.

    Returns:
        The table: ``size``, ``cost`` (CPU seconds, threads, machine), ``cases`` and ``rows``.
    """
    from relulab.runner.environment import library_versions

    started = time.process_time()
    records, rows = [], []
    for name in cases or CASES:
        record, found = run_case(CASES[name], size, progress)
        records.append(record)
        rows += found
    versions = library_versions()
    return {
        "benchmark": "relulab bench remedies",
        "size": dataclasses.asdict(size),
        "cost": {
            "cpu_seconds": round(time.process_time() - started, 1),
            "threads": torch.get_num_threads(),
            "torch": versions.get("torch"),
            "relulab_commit": versions.get("relulab_commit"),
        },
        "cases": records,
        "rows": rows,
    }


def _ratio_text(row: dict[str, Any]) -> str:
    if row["ratio"] is None:
        value, low, high = row["superiority"]
        return f"P(better) {value:.2g} [{low:.2g}, {high:.2g}]"
    return f"×{row['ratio']:.2g} [{row['low']:.2g}, {row['high']:.2g}]"


def _geometric_mean(values: list[float | None]) -> str:
    finite = [value for value in values if value is not None and value > 0]
    if not finite:
        return "diverged"
    text = f"{math.exp(sum(math.log(v) for v in finite) / len(finite)):.3g}"
    return text if len(finite) == len(values) else f"{text} ({len(values) - len(finite)} diverged)"


def _cases_markdown(table: dict[str, Any]) -> list[str]:
    lines = [
        "| case | broken network | findings on the untreated network (seeds) "
        "| untreated held-out loss | CPU s |",
        "|---|---|---|---|---|",
    ]
    for case in table["cases"]:
        flagged = ", ".join(f"{name} ({count})" for name, count in case["flagged"].items())
        untreated = _geometric_mean(case["losses"]["untreated"])
        lines.append(
            f"| {case['name']} | {case['description']} | {flagged} | {untreated} "
            f"| {case['cpu_seconds']:.0f} |"
        )
    return lines


def remedies_markdown(table: dict[str, Any]) -> str:
    """The benchmark in Markdown: the cases (the broken network, the findings the advice made
    on it, the untreated held-out loss — the geometric mean over seeds — and the CPU time),
    then per row the case, finding, remedy, role (``practice``: the practitioner's fix for the
    case), held-out loss ratio vs untreated with its interval, n, diverged and verdict; then
    the cost.

    Args:
        table: :func:`run_remedies`' result (or the committed table).

    Returns:
        Two Markdown tables and a line of cost.
    """
    lines = [*_cases_markdown(table), ""]
    lines += [
        "| case | finding | remedy | role | held-out loss vs untreated [95 % CI] | n "
        "| diverged (treated, untreated) | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in table["rows"]:
        diverged = "{}, {}".format(*row["diverged"])
        practice = row["remedy"] in CASES[row["case"]].practice if row["case"] in CASES else False
        role = row["role"] + (", practice" if practice and row["role"] == "remedy" else "")
        lines.append(
            f"| {row['case']} | {row['finding']} | {row['remedy']} | {role} "
            f"| {_ratio_text(row)} | {row['n']} | {diverged} | **{row['verdict']}** |"
        )
    cost = table["cost"]
    lines.append("")
    lines.append(
        f"Cost: {cost['cpu_seconds']:.0f} CPU seconds on {cost['threads']} thread(s) "
        f"(torch {cost['torch']})."
    )
    return "\n".join(lines)
