"""Running experiments under the run contract: resolve and validate a request, execute its
units resumably into a locked run directory, and (re)build the outputs from the store."""

from relulab.runner.environment import library_versions, resolve_device
from relulab.runner.execute import (
    SUMMARY_FILENAME,
    PreparedRun,
    RunFailedError,
    describe_error,
    execute,
    prepare_run,
    rebuild_outputs,
)
from relulab.runner.resources import available_memory_bytes, check_memory, max_threads
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
    "PreparedRun",
    "RunFailedError",
    "available_memory_bytes",
    "check_memory",
    "check_not_in_use",
    "describe_error",
    "execute",
    "is_scaffolding",
    "library_versions",
    "locked",
    "max_threads",
    "prepare_run",
    "rebuild_outputs",
    "resolve_device",
]
