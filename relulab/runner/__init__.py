"""Running experiments under the run contract: resolve and validate a request, execute its
units resumably into a run directory, and (re)build the outputs from the store."""

from relulab.runner.environment import library_versions, resolve_device
from relulab.runner.execute import (
    SUMMARY_FILENAME,
    PreparedRun,
    execute,
    prepare_run,
    rebuild_outputs,
)

__all__ = [
    "SUMMARY_FILENAME",
    "PreparedRun",
    "execute",
    "library_versions",
    "prepare_run",
    "rebuild_outputs",
    "resolve_device",
]
