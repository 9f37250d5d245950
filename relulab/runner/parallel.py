"""Where a run's units execute: in the driver, in a local process pool, or as Ray tasks.

The driver process plans the work, hands each unfinished unit to an executor as a
:class:`UnitTask` and stores every result that comes back; it stays the only writer of each
``runs.sqlite``, so a store's transactional, resumable behaviour does not depend on where the
units ran. A task carries what a worker needs to rebuild the unit (the experiment's name and
its config, a picklable frozen dataclass) rather than the unit itself (a closure): the worker
plans the experiment again and runs the unit of that name. An experiment missing from a fresh
worker's registry (one registered at run time) is found as ``EXPERIMENT`` of the module that
defines its ``plan``.

Executors (:func:`make_executor`):

* ``serial`` — ``--jobs 1``: the units run one after another in the driver, as they always did;
  a failing unit ends its run (the run's other units are skipped, other runs go on).
* ``pool`` — ``--jobs N``: ``N`` worker processes (``concurrent.futures``; started by a fork
  server that imported torch without running it, or spawned where there is none — never
  forked from the driver: torch is not fork-safe). A failing unit is reported; every other unit
  still runs. A worker whose driver dies (``kill -9`` included) exits at once: it watches a
  pipe whose other end only the driver holds.
* ``ray`` — ``--executor ray [--address ADDR]``: each unit a Ray task, retried by Ray
  (``max_retries``, application errors included) before it is reported as failed.

Threads. Each unit runs under a fixed torch thread count, recorded with it in the store:
``--threads T`` when given; otherwise torch's default in the driver (``serial``), the machine's
CPUs divided among the workers (``pool``: ``max(1, cpus // N)``) or 1 (``ray``, which reserves
that many CPUs per task). Randomness comes from ``context.generator(unit name)`` only, so a unit's
result does not depend on which process ran it or in which order: ``--jobs N`` gives the
bit-identical results of ``--jobs 1`` under the same thread count.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from relulab.errors import one_line_warnings
from relulab.resources import max_threads
from relulab.runner.environment import resolve_device

__all__ = [
    "EXECUTORS",
    "RAY_RETRIES",
    "ExecutorUnavailableError",
    "Outcome",
    "UnitTask",
    "check_reachable",
    "compute_unit",
    "make_executor",
]

EXECUTORS = ("local", "ray")
RAY_RETRIES = 2  # a Ray task is tried 1 + RAY_RETRIES times before its unit counts as failed


class ExecutorUnavailableError(RuntimeError):
    """The executor asked for cannot be used here (Ray not installed, no cluster at ADDR)."""


@dataclass(frozen=True)
class UnitTask:
    """One unit of one run, as sent to a worker: everything needed to rebuild and run it."""

    run: int  # index of the run among those executed together
    unit: str
    experiment: str
    module: str  # where the experiment is defined (its EXPERIMENT), for workers that lack it
    config: Any  # the experiment's frozen config dataclass
    device: str
    dtype: str
    seed: int
    threads: int | None  # torch threads to run under; None: leave the process's setting
    checkpoints: str | None = None  # the run's checkpoint area (relulab.engine.checkpoint)
    checkpoint_every: int = 0  # steps between a training's checkpoints; 0: none


@dataclass
class Outcome:
    """What came back for a task: its result (a ``UnitResult``) or the error it raised."""

    task: UnitTask
    result: Any = None
    error: BaseException | None = None
    threads: int | None = None
    wall_s: float = 0.0


_PLANS: dict[tuple[int, Any], tuple[Any, dict[str, Any]]] = {}


def _experiment(task: UnitTask) -> Any:
    """The experiment from the registry, or else its module's ``EXPERIMENT``: one registered at
    run time (a test's, a user's own) is not in a fresh worker's registry."""
    from relulab.experiments import REGISTRY, get_experiment

    if task.experiment not in REGISTRY:
        defined = getattr(importlib.import_module(task.module), "EXPERIMENT", None)
        if getattr(defined, "name", None) == task.experiment:
            return defined
    return get_experiment(task.experiment)


def _unit(task: UnitTask) -> Any:
    """The unit ``task.unit`` of the experiment's plan (the last plan is cached per process)."""
    experiment = _experiment(task)
    key = (id(experiment), task.config)  # the cached value keeps the experiment alive
    if key not in _PLANS:
        _PLANS.clear()  # one config at a time is plenty; plans may hold data
        _PLANS[key] = (experiment, {unit.name: unit for unit in experiment.plan(task.config)})
    return _PLANS[key][1][task.unit]


def _checkpoint_identity(task: UnitTask) -> dict[str, str]:
    """What a unit's checkpoint must have been taken under to be resumed: the experiment, its
    config, relulab's commit (or version), torch's version, the device, dtype and threads."""
    from relulab.config import config_to_dict
    from relulab.records.registration import registration_hash
    from relulab.runner.environment import library_versions

    versions = library_versions()
    return {
        "experiment": task.experiment,
        "config": registration_hash(config_to_dict(task.config)),
        "relulab": versions.get("relulab_commit", versions["relulab"]),
        "torch": versions["torch"],
        "device": task.device,
        "dtype": task.dtype,
        "threads": str(torch.get_num_threads()),
    }


def compute_unit(task: UnitTask, quiet: bool = True) -> tuple[Any, int, float]:
    """Run one unit; returns ``(UnitResult, torch threads it ran under, wall seconds)``."""
    from relulab.experiments.context import RunContext

    if task.threads is not None and torch.get_num_threads() != task.threads:
        torch.set_num_threads(task.threads)
    unit = _unit(task)
    context = RunContext(
        device=resolve_device(task.device),
        dtype=getattr(torch, task.dtype),
        seed=task.seed,
        quiet=quiet,
        unit=task.unit,
        checkpoints=None if task.checkpoints is None else Path(task.checkpoints) / task.unit,
        checkpoint_identity=_checkpoint_identity(task),
        checkpoint_every=task.checkpoint_every,
    )
    started = time.perf_counter()
    result = unit.run(context)
    wall_s = time.perf_counter() - started
    result.wall_s = wall_s
    return result, torch.get_num_threads(), wall_s


class SerialExecutor:
    """``--jobs 1``: every unit in the driver, in order; a failure skips its run's other units."""

    kind = "serial"
    keeps_going = False

    def __init__(self, threads: int | None, quiet: bool) -> None:
        self.threads = threads
        self.quiet = quiet

    def unit_threads(self) -> int:
        return self.threads if self.threads is not None else torch.get_num_threads()

    def task_threads(self) -> int | None:
        return self.threads  # None: the driver's own setting (torch's default or --threads)

    def outcomes(
        self, tasks: Iterable[UnitTask], skip: Callable[[UnitTask], bool]
    ) -> Iterator[Outcome]:
        for task in tasks:
            if skip(task):
                continue
            try:
                result, threads, wall_s = compute_unit(task, quiet=self.quiet)
            except Exception as error:
                yield Outcome(task, error=error)
            else:
                yield Outcome(task, result, threads=threads, wall_s=wall_s)

    def activity(self, label: Callable[[UnitTask], str]) -> str:
        return ""

    def connect(self) -> None:
        pass

    def close(self, abort: bool = False) -> None:
        pass

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, kind: type | None, *rest: object) -> None:
        self.close(abort=kind is not None)


def _exit_with_driver(lifeline: Any) -> None:
    """Block on the driver's end of a pipe; when it closes (the driver ended, however it died),
    end this worker at once."""
    with contextlib.suppress(EOFError, OSError):
        while True:
            lifeline.recv()
    os._exit(1)


def _worker_start(lifeline: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    if not os.environ.get("RELULAB_DEBUG"):
        one_line_warnings()  # a unit's numpy/scipy warnings as relulab: warning: lines
    threading.Thread(target=_exit_with_driver, args=(lifeline,), daemon=True).start()


def _start_context() -> multiprocessing.context.BaseContext:
    """``forkserver`` (one server imports torch and relulab once, workers fork from it before
    torch ran anything) where it exists, else ``spawn``; never plain ``fork``."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["relulab.runner._forkserver_preload"])
    return context


def _pool_compute(task: UnitTask) -> tuple[Any, int, float]:
    return compute_unit(task, quiet=True)


class PoolExecutor:
    """``--jobs N``: ``N`` spawned worker processes; every unit runs, failures are reported."""

    kind = "pool"
    keeps_going = True
    quiet = True  # the workers' units never show their own bars

    def __init__(self, jobs: int, threads: int | None) -> None:
        self.jobs = jobs
        self.threads = threads if threads is not None else max(1, max_threads() // jobs)
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lifeline: Any = None
        self._running: dict[concurrent.futures.Future, UnitTask] = {}

    def unit_threads(self) -> int:
        return self.threads

    def task_threads(self) -> int | None:
        return self.threads

    def _started(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            context = _start_context()
            lifeline, self._lifeline = context.Pipe(duplex=False)  # workers read, we hold
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.jobs,
                mp_context=context,
                initializer=_worker_start,
                initargs=(lifeline,),
            )
        return self._pool

    def connect(self) -> None:
        pass  # the workers start with the first units

    def outcomes(
        self, tasks: Iterable[UnitTask], skip: Callable[[UnitTask], bool]
    ) -> Iterator[Outcome | None]:
        todo = [task for task in tasks if not skip(task)]
        if not todo:
            return
        pool = self._started()
        futures = [pool.submit(_pool_compute, task) for task in todo]
        order = {future: position for position, future in enumerate(futures)}
        self._running = dict(zip(futures, todo, strict=True))
        waiting = set(futures)
        while waiting:
            done, waiting = concurrent.futures.wait(
                waiting, timeout=0.5, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in sorted(done, key=order.__getitem__):
                task = self._running[future]
                try:
                    result, threads, wall_s = future.result()
                except Exception as error:  # the unit's own error, or a worker that died
                    yield Outcome(task, error=error)
                else:
                    yield Outcome(task, result, threads=threads, wall_s=wall_s)
            if not done:
                yield None  # a tick: the driver refreshes its progress display
        self._running = {}

    def activity(self, label: Callable[[UnitTask], str]) -> str:
        """The units the workers are computing now."""
        if self._pool is None:
            return f"starting {self.jobs} workers"
        running = [label(task) for future, task in self._running.items() if future.running()]
        return "running " + ", ".join(running) if running else ""

    def close(self, abort: bool = False) -> None:
        """Stop the workers: after their current unit, or at once with ``abort`` (Ctrl-C)."""
        if self._pool is None:
            return
        self._pool.shutdown(wait=not abort, cancel_futures=True)
        self._lifeline.close()  # idle workers (and, with abort, busy ones) end now
        self._pool = self._lifeline = None

    def __enter__(self) -> PoolExecutor:
        return self

    def __exit__(self, kind: type | None, *rest: object) -> None:
        self.close(abort=kind is not None)


def ray_module() -> Any:
    """The ``ray`` module, or :class:`ExecutorUnavailableError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ExecutorUnavailableError(
            "--executor ray needs Ray, which is not installed; pip install 'relulab[ray]'"
        ) from None
    return ray


RAY_CONNECT_TIMEOUT_S = 5.0  # a cluster that does not answer a TCP connection in this is absent


def check_reachable(address: str | None, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Refuse a Ray address nothing listens at, within ``timeout_s``, before ``ray.init`` —
    which would retry for minutes, printing Ray's own log lines. ``None``, ``auto`` and
    ``local`` are left to Ray (it fails fast on them without a cluster).

    Args:
        address: ``host:port`` or ``ray://host:port`` (``--address`` or ``RAY_ADDRESS``).
        timeout_s: seconds to wait for the TCP connection.

    Raises:
        ExecutorUnavailableError: a malformed address, or nothing accepting connections there.

    Example:
        >>> check_reachable("auto")  # left to Ray
    """
    if address is None or address.strip() in ("", "auto", "local"):
        return
    host_port = address.strip().removeprefix("ray://")
    host, separator, port = host_port.rpartition(":")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ExecutorUnavailableError(
            f"cannot connect to Ray at {address}: expected host:port, ray://host:port or auto"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ExecutorUnavailableError(
            f"cannot connect to Ray at {address} ({reason}; nothing answered within "
            f"{timeout_s:g} s)"
        ) from None


class RayExecutor:
    """``--executor ray``: each unit a Ray task, retried by Ray, on the cluster at ``address``
    (default: ``RAY_ADDRESS``, else a Ray instance started for this command)."""

    kind = "ray"
    keeps_going = True
    quiet = True  # the tasks' units never show their own bars

    def __init__(self, address: str | None, jobs: int | None, threads: int | None) -> None:
        self.ray = ray_module()
        self.address = address
        self.jobs = jobs  # at most this many units in flight (None: as many as Ray schedules)
        self.threads = threads if threads is not None else 1
        self._connected = False
        self._in_flight = 0

    def unit_threads(self) -> int:
        return self.threads

    def task_threads(self) -> int | None:
        return self.threads

    def connect(self) -> None:
        """Connect to the cluster (or start a local Ray instance); once."""
        if self._connected:
            return
        check_reachable(self.address if self.address is not None else os.environ.get("RAY_ADDRESS"))
        try:
            self.ray.init(
                address=self.address,
                log_to_driver=False,
                logging_level="ERROR",
                include_dashboard=False,
                configure_logging=True,
            )
        except Exception as error:  # ConnectionError, a missing cluster, a bad address
            raise ExecutorUnavailableError(
                f"cannot connect to Ray at {self.address or 'a new local instance'} "
                f"({' '.join(str(error).split())[:200]})"
            ) from None
        self._connected = True

    def outcomes(
        self, tasks: Iterable[UnitTask], skip: Callable[[UnitTask], bool]
    ) -> Iterator[Outcome | None]:
        queue = [task for task in tasks if not skip(task)]
        if not queue:
            return
        self.connect()
        remote = self.ray.remote(_ray_compute).options(
            num_cpus=self.threads, max_retries=RAY_RETRIES, retry_exceptions=True
        )
        limit = self.jobs or len(queue)
        flying: dict[Any, UnitTask] = {}
        position = 0
        while position < len(queue) or flying:
            while position < len(queue) and len(flying) < limit:
                task = queue[position]
                flying[remote.remote(task, self.threads)] = task
                position += 1
            self._in_flight = len(flying)
            ready, _ = self.ray.wait(list(flying), num_returns=1, timeout=0.5)
            if not ready:
                yield None  # a tick: the driver refreshes its progress display
            for reference in ready:
                task = flying.pop(reference)
                try:
                    result, threads, wall_s = self.ray.get(reference)
                except Exception as error:
                    yield Outcome(task, error=_ray_cause(error))
                else:
                    yield Outcome(task, result, threads=threads, wall_s=wall_s)
        self._in_flight = 0

    def activity(self, label: Callable[[UnitTask], str]) -> str:
        return f"{self._in_flight} unit(s) in flight on Ray" if self._in_flight else ""

    def close(self, abort: bool = False) -> None:
        """Disconnect (a Ray instance started for this command stops; its tasks are cancelled)."""
        if self._connected:
            with contextlib.suppress(Exception):
                self.ray.shutdown()
            self._connected = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, kind: type | None, *rest: object) -> None:
        self.close(abort=kind is not None)


def _ray_compute(task: UnitTask, threads: int) -> tuple[Any, int, float]:
    torch.set_num_threads(threads)
    return compute_unit(task, quiet=True)


def _ray_cause(error: BaseException) -> BaseException:
    """The unit's own exception inside Ray's wrapper (``RayTaskError.cause``), when there is one."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


def make_executor(
    kind: str = "local",
    jobs: int | None = None,
    threads: int | None = None,
    address: str | None = None,
    quiet: bool = False,
) -> SerialExecutor | PoolExecutor | RayExecutor:
    """The executor for ``--executor KIND --jobs N --threads T [--address ADDR]``.

    Args:
        kind: ``local`` (serial with ``jobs`` 1 or ``None``, else a process pool) or ``ray``.
        jobs: local worker processes; for Ray the most units in flight (``None``: no limit).
        threads: torch threads per unit (``None``: see the module docstring).
        address: a Ray cluster's address (Ray only).
        quiet: silence the units' own progress bars (serial only; workers are always quiet).

    Raises:
        ValueError: an unknown kind, or ``address`` without Ray.
        ExecutorUnavailableError: Ray is asked for but not installed.
    """
    if kind not in EXECUTORS:
        raise ValueError(f"unknown executor {kind!r}; choose {' or '.join(EXECUTORS)}")
    if kind == "ray":
        return RayExecutor(address, jobs, threads)
    if address is not None:
        raise ValueError("--address is for --executor ray only")
    if jobs is None or jobs == 1:
        return SerialExecutor(threads, quiet)
    return PoolExecutor(jobs, threads)
