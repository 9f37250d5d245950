"""Named fault points for testing crash safety: a process can be made to kill itself there.

The run contract promises that a run killed at any moment (``kill -9``, a power cut) leaves a
directory that resumes to the same results as an uninterrupted run. To test that promise
deterministically, the runner and the store call :func:`fault_point` at the moments that matter
(inside the store's creation, inside a unit's transaction, between the outputs). When the
environment variable ``RELULAB_FAULT`` names the point, the process sends itself
``RELULAB_FAULT_SIGNAL`` (default ``KILL``; ``STOP`` freezes it while it holds its locks). The
variable is for tests only; unset, a fault point costs one dictionary look-up.

Points: ``store-build`` (the new store's tables exist, its transaction is not committed),
``store-replace`` (the new store is complete under its temporary name, not yet renamed),
``unit-save:NAME`` (unit NAME's rows are inserted, the transaction is not committed),
``unit-saved:NAME`` (unit NAME is committed), ``outputs-figures`` (the figures are written, the
report is not), ``outputs-report`` (``report.html`` is written, ``summary.json`` is not).

Example:
    RELULAB_FAULT=unit-saved:activations relulab run anisotropy --out runs/a   # dies there
"""

from __future__ import annotations

import os
import signal

__all__ = ["FAULT_ENV", "FAULT_SIGNAL_ENV", "fault_point"]

FAULT_ENV = "RELULAB_FAULT"
FAULT_SIGNAL_ENV = "RELULAB_FAULT_SIGNAL"


def fault_point(name: str) -> None:
    """Send this process the configured signal if ``RELULAB_FAULT`` equals ``name``."""
    if os.environ.get(FAULT_ENV) != name:
        return
    signal_name = os.environ.get(FAULT_SIGNAL_ENV, "KILL").upper().removeprefix("SIG")
    os.kill(os.getpid(), getattr(signal, f"SIG{signal_name}"))
