"""The training loop shared by every batched network family.

A *problem* holds S networks of one family with their data; it computes the per-network loss
and gradients in one batched computation, and reports per-network observables to record. The
loop steps a batched optimiser, records every k steps on the device, and freezes any network
whose loss turns NaN/Inf (it is flagged with the step, the others go on). An optional stop
criterion, checked on the recorded values at each recording step, freezes a network the same
way when it is met (e.g. "training loss reached 0.025"), and records the step it stopped at;
once every network is frozen the loop ends and the remaining recordings repeat the last one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np
import torch
from torch import Tensor

from relulab.engine.checkpoint import FileCheckpoint, load_problem_state, problem_state
from relulab.engine.recorder import Recorder
from relulab.engine.threads import ThreadsOption, train_threads, using_threads

__all__ = [
    "BatchedProblem",
    "Compilable",
    "KnowsStepWork",
    "Optimiser",
    "RecordsInOnePass",
    "TrainResult",
    "train",
]


class BatchedProblem(Protocol):
    """What :func:`train` needs from a family of S networks with their data: e.g.
    :class:`~relulab.engine.SupervisedProblem` or :class:`~relulab.engine.BatchedSingleNeuron`.

    Example:
        >>> from relulab.engine import BatchedMLP, MLPSpec, SupervisedProblem
        >>> problem = SupervisedProblem(BatchedMLP(MLPSpec((2, 4, 1)), 3), torch.randn(8, 2),
        ...                             torch.randn(8, 1))
        >>> loss, grads = problem.loss_and_grads()
        >>> loss.shape, len(grads) == len(problem.params)
        (torch.Size([3]), True)
    """

    n_networks: int
    params: list[Tensor]

    def loss_and_grads(self) -> tuple[Tensor, list[Tensor]]:
        """Per-network loss ``(S,)`` and gradients matching :attr:`params`."""

    def observe(self) -> dict[str, Tensor]:
        """Per-network observables ``{name: (S,)}`` to record besides the loss."""

    # optional capabilities, each declared by its own protocol below: RecordsInOnePass,
    # KnowsStepWork, Compilable


@runtime_checkable
class RecordsInOnePass(Protocol):
    """A problem that gives a recording step's losses, gradients and observables in one call
    (:class:`~relulab.engine.SupervisedProblem`: one forward pass where it can); :func:`train`
    uses it at recording steps instead of ``loss_and_grads`` and ``observe``."""

    def recording_step(
        self, with_grads: bool = True
    ) -> tuple[Tensor, list[Tensor] | None, dict[str, Tensor]]:
        """``(losses (S,), gradients or None without with_grads, observables)``."""
        ...


@runtime_checkable
class KnowsStepWork(Protocol):
    """A problem that knows the multiply–adds of one step's forward pass, all networks: what
    :func:`train` sizes its thread count by (``threads="auto"``)."""

    work_per_step: int


@runtime_checkable
class Compilable(Protocol):
    """A problem or optimiser that says whether its steps keep no Python-side state, so that
    :func:`train` may compile several into one call (``compiled_steps``)."""

    compilable: bool


class Optimiser(Protocol):
    def step(self, grads: list[Tensor], active: Tensor | None = None) -> None: ...


@dataclass
class TrainResult:
    """What :func:`train` recorded.

    Attributes:
        steps: the recording steps ``(T,)``.
        curves: metric → ``(S, T)`` (``loss`` and the problem's observables).
        final: metric → ``(S,)``, the last recorded values.
        diverged: ``(S,)`` whether a network's loss turned non-finite.
        diverged_step: ``(S,)`` the step it did (−1 if never).
        stopped_step: ``(S,)`` the recording step at which the stop criterion froze a network
            (−1 if never, or without a criterion).
        threads: the torch CPU threads the loop ran with (``train``'s ``threads``).

    Example:
        >>> from relulab.engine import BatchedMLP, BatchedSGD, MLPSpec, SupervisedProblem
        >>> problem = SupervisedProblem(BatchedMLP(MLPSpec((2, 4, 1)), 3), torch.randn(8, 2),
        ...                             torch.randn(8, 1))
        >>> result = train(problem, BatchedSGD(problem.params, 0.01), steps=10, record_every=5)
        >>> result.steps.tolist(), result.curves["loss"].shape
        ([0, 5, 10], (3, 3))
    """

    steps: np.ndarray
    curves: dict[str, np.ndarray]
    final: dict[str, np.ndarray]
    diverged: np.ndarray
    diverged_step: np.ndarray
    stopped_step: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    threads: int = 0


ProgressCallback = Callable[[int], None]
StopCriterion = Callable[[dict[str, Tensor]], Tensor]


def compile_mode(device: torch.device) -> str | None:
    """``torch.compile``'s mode for a chunk of steps on ``device``: on CUDA
    ``"reduce-overhead"``, which captures the compiled chunk as a CUDA graph and replays it with
    one launch, so steps of small networks are not bound by kernel launches (issue 44); on the
    CPU the default (inductor's C++ kernel, already one call per step)."""
    return "reduce-overhead" if device.type == "cuda" else None


class _CompiledChunks:
    """Up to ``length`` optimiser steps as one call of a function compiled by
    ``torch.compile`` (one compiled function per chunk length used: the full length, and the
    shorter one that fits before the next recording); :meth:`run` undoes a chunk (parameters
    restored) if any of its losses came out non-finite."""

    def __init__(self, problem: BatchedProblem, optimiser: Optimiser, length: int) -> None:
        self.length = length
        self._problem, self._optimiser = problem, optimiser
        self._compiled: dict[int, Callable[[], Tensor]] = {}

    def length_at(self, step: int, recorder: Recorder) -> int:
        """How many steps from ``step`` on may run as one chunk: none at a recording step,
        else up to the step before the next recording (the final step is one)."""
        if recorder.wants(step):
            return 0
        next_recording = int(recorder.steps[np.searchsorted(recorder.steps, step, side="right")])
        return min(self.length, next_recording - step)

    def _function(self, length: int) -> Callable[[], Tensor]:
        if length not in self._compiled:
            problem, optimiser = self._problem, self._optimiser

            def steps() -> Tensor:
                losses = []
                for _ in range(length):
                    loss, grads = problem.loss_and_grads()
                    optimiser.step(grads)
                    losses.append(loss)
                return torch.stack(losses)

            self._compiled[length] = torch.compile(
                steps, dynamic=False, mode=compile_mode(self._problem.params[0].device)
            )
        return self._compiled[length]

    def run(self, length: int) -> bool:
        """Run ``length`` steps; ``False`` (and the parameters as before) if a loss was
        non-finite."""
        with torch.no_grad():
            before = [p.detach().clone() for p in self._problem.params]
            if _all_finite(self._function(length)()):
                return True
            for p, saved in zip(self._problem.params, before, strict=True):
                p.copy_(saved)
        return False


def _chunk_runner(
    problem: BatchedProblem, optimiser: Optimiser, compiled_steps: int | None
) -> _CompiledChunks | None:
    if compiled_steps is None:
        return None
    if compiled_steps < 1:
        raise ValueError(f"compiled_steps must be at least 1, got {compiled_steps}")
    if problem.params[0].device.type != "cpu":
        raise ValueError("compiled_steps runs on the CPU only (where it was measured)")
    for name, part in (("problem", problem), ("optimiser", optimiser)):
        if not (isinstance(part, Compilable) and part.compilable):
            raise ValueError(
                f"compiled_steps needs a {name} without Python-side state per step "
                f"(compilable), not {type(part).__name__} as configured"
            )
    return _CompiledChunks(problem, optimiser, compiled_steps)


def _all_finite(loss: Tensor) -> bool:
    """Whether every network's loss is finite, asked with one reduction while the sum is finite
    (the common case: one operator and one read instead of three); a sum that overflows from
    finite losses falls back to the elementwise test."""
    return math.isfinite(float(loss.sum())) or bool(torch.isfinite(loss).all())


def train(
    problem: BatchedProblem,
    optimiser: Optimiser,
    steps: int,
    record_every: int | Sequence[int] | np.ndarray,
    progress: ProgressCallback | None = None,
    stop: StopCriterion | None = None,
    compiled_steps: int | None = None,
    threads: ThreadsOption = "auto",
    checkpoint: FileCheckpoint | None = None,
) -> TrainResult:
    """Run ``steps`` optimiser steps on all S networks at once; record the loss and the
    problem's observables at steps 0, k, 2k, …, ``steps`` (module docstring). A network whose
    loss turns NaN/Inf is frozen from that step on and flagged; the others go on.

    Args:
        problem: a :class:`BatchedProblem`.
        optimiser: e.g. :class:`~relulab.engine.BatchedAdam` over ``problem.params``.
        steps: the number of optimiser steps.
        record_every: k; or the recording steps themselves (an explicit grid, e.g.
            :func:`~relulab.engine.dense_then_sparse`; 0 and ``steps`` are always recorded).
        progress: called with the number of steps done since its last call, at recordings.
        stop: called at each recording step with the recorded values ``{name: (S, …)}``;
            returns ``(S,)`` booleans: a network for which it is true is frozen from that step
            on (its recorded values stay those of that step's parameters) and its step is kept
            in ``stopped_step``.
        compiled_steps: run the steps between recordings in chunks of up to this many (the
            last before a recording shorter; recording steps themselves run eagerly), each
            one call of a function compiled by ``torch.compile``, while no network
            has diverged; a chunk in which any loss turns non-finite is undone and replayed
            step by step, so divergence freezing is as without it. Needs a problem and an
            optimiser without Python-side state (``compilable``: a full-batch
            :class:`~relulab.engine.SupervisedProblem` of a model with a manual backward,
            :class:`~relulab.engine.BatchedSGD` without momentum). Results equal the eager
            loop's to rounding, not bit for bit; the first call compiles (seconds, cached on
            disk by inductor for later processes), so it pays only for long runs of small
            networks (docs/performance.md has the measured break-even). CPU only; each
            ``train`` call compiles anew (from inductor's caches), and past torch's limit of
            recompilations in one process it runs eagerly. Default: eager.
        threads: torch CPU threads for the loop (restored afterwards): ``"auto"`` runs
            problems of fewer than :data:`relulab.engine.threads.SMALL_STEP_WORK`
            multiply–adds per step (``problem.work_per_step``) on one thread, where a second
            one only adds hand-over time, and leaves torch's setting otherwise and for
            ``compiled_steps`` (one fused kernel a step, which a second thread shares well); a
            count; or ``None`` for torch's setting. The count used is in ``TrainResult.threads``.
        checkpoint: save the training's whole state there every ``checkpoint.every`` steps and
            its result at the end, and resume from what it holds (:mod:`relulab.engine.checkpoint`:
            a killed training ends bit for bit as an uninterrupted one). Needs an optimiser
            and a minibatch stream with ``state_dict``; not with ``compiled_steps``.

    Returns:
        A :class:`TrainResult`.

    Example:
        >>> from relulab.engine import BatchedMLP, BatchedAdam, MLPSpec, SupervisedProblem
        >>> x, y = torch.randn(16, 3), torch.randn(16, 1)
        >>> problem = SupervisedProblem(BatchedMLP(MLPSpec((3, 8, 1)), 4), x, y)
        >>> result = train(problem, BatchedAdam(problem.params, 1e-2), 50, record_every=10)
        >>> bool((result.final["loss"] < result.curves["loss"][:, 0]).all())
        True
    """
    work = problem.work_per_step if isinstance(problem, KnowsStepWork) else None
    count = (
        train_threads(work, threads, compiled=compiled_steps is not None)
        if problem.params[0].device.type == "cpu"
        else torch.get_num_threads()
    )
    if checkpoint is not None and compiled_steps is not None:
        raise ValueError("checkpoints are taken between eager steps: not with compiled_steps")
    with using_threads(count):
        result = _train(
            problem, optimiser, steps, record_every, progress, stop, compiled_steps, checkpoint
        )
    result.threads = count
    return result


@dataclass
class _Loop:
    """The training loop's variables (what a checkpoint saves beside the problem): the step,
    which networks still train, the step each diverged or stopped at (−1: never), whether every
    network is still finite and unstopped (the optimiser then skips its masks), and the last
    step reported to the progress callback."""

    step: int
    active: Tensor
    diverged_step: Tensor
    stopped_step: Tensor
    all_healthy: bool = True
    last_reported: int = 0

    @classmethod
    def fresh(cls, n_networks: int, device: torch.device) -> _Loop:
        active = torch.ones(n_networks, dtype=torch.bool, device=device)
        diverged_step = torch.full((n_networks,), -1, dtype=torch.long, device=device)
        return cls(0, active, diverged_step, torch.full_like(diverged_step, -1))

    def state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _LOOP_STATE}

    def health_mask(self, loss: Tensor, check_on_host: bool) -> Tensor | None:
        """The optimiser's mask after this step's loss: ``None`` while every network is finite
        (asked on the host only on the CPU, where it costs nothing), else the networks still
        training, with newly non-finite ones frozen at this step."""
        if check_on_host and self.all_healthy and _all_finite(loss):
            return None
        self.all_healthy = False
        finite = torch.isfinite(loss)
        self.diverged_step = torch.where(self.active & ~finite, self.step, self.diverged_step)
        self.active = self.active & finite
        return self.active

    def apply_stop(self, reached: Tensor, check_on_host: bool) -> bool:
        """Freeze the networks ``reached`` (a stop criterion); whether any was frozen."""
        reached = self.active & reached
        if check_on_host and not bool(reached.any()):
            return False
        self.stopped_step = torch.where(reached, self.step, self.stopped_step)
        self.active = self.active & ~reached
        self.all_healthy = False
        return True

    def report(self, progress: ProgressCallback | None, upto: int) -> None:
        if progress is not None:
            progress(upto - self.last_reported)
            self.last_reported = upto


def _start(
    problem: BatchedProblem,
    optimiser: Optimiser,
    recorder: Recorder,
    progress: ProgressCallback | None,
    checkpoint: FileCheckpoint | None,
) -> _Loop:
    """A fresh loop, or the one ``checkpoint`` saved (its progress reported again)."""
    first = problem.params[0]
    loop = _Loop.fresh(problem.n_networks, first.device)
    if checkpoint is not None and (resumed := _resume(checkpoint, problem, optimiser, recorder)):
        loop = _Loop(**{name: resumed[name] for name in _LOOP_STATE})
        if progress is not None and loop.last_reported:
            progress(loop.last_reported)
    return loop


def _train(
    problem: BatchedProblem,
    optimiser: Optimiser,
    steps: int,
    record_every: int | Sequence[int] | np.ndarray,
    progress: ProgressCallback | None,
    stop: StopCriterion | None,
    compiled_steps: int | None,
    checkpoint: FileCheckpoint | None = None,
) -> TrainResult:
    first = problem.params[0]
    recorder = Recorder(steps, record_every, problem.n_networks, first.device, first.dtype)
    # On the CPU asking "is every network still finite?" costs nothing, and while the answer is
    # yes the optimiser skips the per-network masks. On CUDA that question would stall the
    # stream every step, so there the masks are always applied (no host synchronisation).
    check_on_host = first.device.type == "cpu"
    chunk = _chunk_runner(problem, optimiser, compiled_steps)
    loop = _start(problem, optimiser, recorder, progress, checkpoint)
    saved_at, replay_until = loop.step, -1
    one_pass = isinstance(problem, RecordsInOnePass)
    while loop.step <= steps:
        step = loop.step
        if checkpoint is not None and 0 < checkpoint.every <= step - saved_at and step < steps:
            _save(checkpoint, problem, optimiser, recorder, loop.state())
            saved_at = step
        if chunk is not None and loop.all_healthy and step > replay_until:
            length = chunk.length_at(step, recorder)
            if length > 1:
                if chunk.run(length):
                    loop.step += length
                    continue
                replay_until = step + length - 1  # undone: these steps go one by one
        loss, grads, observed = _losses(problem, recorder.wants(step) and one_pass, step, steps)
        mask = loop.health_mask(loss, check_on_host)
        if recorder.wants(step):
            values = {"loss": loss, **(problem.observe() if observed is None else observed)}
            recorder.record(step, values)
            if stop is not None:
                reached = stop(values).to(device=first.device, dtype=torch.bool)
                if loop.apply_stop(reached, check_on_host):
                    mask = loop.active
            loop.report(progress, step)
            if stop is not None and not bool(loop.active.any()):
                recorder.hold(step)  # every network frozen: later recordings repeat this one
                if progress is not None:
                    progress(steps - loop.last_reported)  # the bar completes; the state keeps step
                break
        if step < steps:
            optimiser.step(grads, mask)
        loop.step += 1
    if checkpoint is not None and loop.step <= steps + 1:  # a resumed finished run skips this
        _save(checkpoint, problem, optimiser, recorder, {**loop.state(), "step": steps + 2})
    return _result(recorder, loop)


def _losses(
    problem: BatchedProblem, in_one_pass: bool, step: int, steps: int
) -> tuple[Tensor, Any, dict[str, Tensor] | None]:
    """This step's per-network loss, gradients (``None`` after the last step) and, for a problem
    that records in the same pass, its observations."""
    if in_one_pass:  # isinstance(problem, RecordsInOnePass), checked once before the loop
        return cast(RecordsInOnePass, problem).recording_step(with_grads=step < steps)
    if step < steps:
        loss, grads = problem.loss_and_grads()
        return loss, grads, None
    return problem.loss_and_grads()[0], None, None  # the last recording: no step follows


def _result(recorder: Recorder, loop: _Loop) -> TrainResult:
    curves = recorder.to_numpy()
    final = {name: curve[:, -1].copy() for name, curve in curves.items()}
    return TrainResult(
        recorder.steps,
        curves,
        final,
        (loop.diverged_step >= 0).cpu().numpy(),
        loop.diverged_step.cpu().numpy(),
        loop.stopped_step.cpu().numpy(),
    )


_LOOP_STATE = ("step", "active", "diverged_step", "stopped_step", "all_healthy", "last_reported")


def _save(
    checkpoint: FileCheckpoint,
    problem: BatchedProblem,
    optimiser: Optimiser,
    recorder: Recorder,
    loop: dict[str, Any],
) -> None:
    """Save the loop at the top of step ``loop["step"]`` (nothing of that step done yet)."""
    state = {**loop, "recorder": recorder.state_dict(), **problem_state(problem, optimiser)}
    checkpoint.save(state)


def _resume(
    checkpoint: FileCheckpoint, problem: BatchedProblem, optimiser: Optimiser, recorder: Recorder
) -> dict[str, Any] | None:
    """Restore what ``checkpoint`` holds into the problem, optimiser and recorder; returns the
    loop's variables (``step`` past ``steps`` for a finished training), or ``None``."""
    state = checkpoint.load()
    if state is None:
        return None
    load_problem_state(problem, optimiser, state)
    recorder.load_state_dict(state["recorder"])
    device = problem.params[0].device
    return {k: v.to(device) if isinstance(v, Tensor) else v for k, v in state.items()}
