"""Running experiments under the run contract: resolve and validate a request, execute its
units resumably into a locked run directory (in this process, a local process pool or on Ray),
and (re)build the outputs from the store; sweeps over config grids."""

from relulab.resources import available_memory_bytes, check_memory, max_threads
from relulab.runner.environment import library_versions, resolve_device
from relulab.runner.execute import (
    SUMMARY_FILENAME,
    PreparedRun,
    RunFailedError,
    RunOutcome,
    check_rebuildable,
    describe_error,
    execute,
    execute_runs,
    prepare_run,
    rebuild_outputs,
)
from relulab.runner.parallel import ExecutorUnavailableError, UnitTask, make_executor
from relulab.runner.rundir import (
    LOCK_FILENAME,
    DirectoryInUseError,
    check_not_in_use,
    is_scaffolding,
    locked,
)

__all__ = [
    "LOCK_FILENAME",
    "SUMMARY_FILENAME",
    "DirectoryInUseError",
    "ExecutorUnavailableError",
    "PreparedRun",
    "RunFailedError",
    "RunOutcome",
    "UnitTask",
    "available_memory_bytes",
    "check_memory",
    "check_not_in_use",
    "describe_error",
    "execute",
    "execute_runs",
    "is_scaffolding",
    "library_versions",
    "locked",
    "make_executor",
    "max_threads",
    "prepare_run",
    "check_rebuildable",
    "rebuild_outputs",
    "resolve_device",
]
