"""What the fork server of ``--jobs N`` imports before it forks any worker.

It first ignores SIGINT: a terminal's Ctrl-C reaches every process of the foreground group, and
the driver alone handles it (it stops the workers and exits 130); the server must not die with
a traceback while it is still importing. Then the worker code, with torch, so that every worker
starts with both already imported, and the allocator settings of the ``relulab`` command
(:func:`relulab.engine.memory.retain_freed_memory`).
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)

import relulab.runner.parallel  # noqa: E402, F401  (imported for its side effect: preloading)
from relulab.engine.memory import retain_freed_memory  # noqa: E402

retain_freed_memory()  # the workers fork from here, so they inherit the allocator's settings
