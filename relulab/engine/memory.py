"""Keep freed tensor memory inside the process, so large activations reuse warm pages.

A training step on the CPU allocates and frees tensors of tens of megabytes (the ``(S, N,
hidden)`` activations of a batch of networks). glibc serves blocks above its *mmap threshold*
with fresh ``mmap`` calls and gives freed memory at the top of the heap back to the kernel above
its *trim threshold*; either way the next step's tensor lands on new pages, and every page is
zero-filled by the kernel on first touch. For memory-bound operators that fault costs more than
the operator: on the bench machine a ReLU over a 24 MB activation took 2.9 ms inside the
residual-toy step against 0.3 ms into a reused buffer, and :func:`retain_freed_memory` raised the
W2 workload of ``relulab bench`` from 54 % to 56–57 % of the matmul peak (three runs each, idle
machine).
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

__all__ = ["retain_freed_memory"]

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
#: glibc's largest mmap threshold on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``)
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
_C_INT_MAX = 2**31 - 1  # mallopt's value is a C int
#: free memory at the top of the heap kept before any is handed back to the kernel (the largest
#: value ``mallopt`` takes, 2 GiB; 1 GiB made the W2 workload slower, measured)
TRIM_THRESHOLD = _C_INT_MAX


@functools.cache
def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt`` from the symbols already loaded into the process (no library search,
    which would start ``ldconfig``), or ``None`` without it (e.g. musl)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


def retain_freed_memory(
    mmap_threshold: int = MMAP_THRESHOLD_MAX, trim_threshold: int = TRIM_THRESHOLD
) -> bool:
    r"""Ask glibc's allocator to serve blocks up to ``mmap_threshold`` bytes from its heap and to
    keep up to ``trim_threshold`` bytes of freed memory there (``mallopt(M_MMAP_THRESHOLD)``,
    ``mallopt(M_TRIM_THRESHOLD)``; the ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``
    environment variables, set from inside the process). Module docstring for why.

    The price is resident memory: freed memory is kept rather than handed back (at the top of
    the heap up to ``trim_threshold`` bytes; freed blocks inside the heap stay mapped whatever
    their total), so the process's resident size stays near its peak. The ``relulab`` command
    calls this once at start; a library user may call it too. Elsewhere than Linux with glibc
    it does nothing.

    Args:
        mmap_threshold: blocks of at most this many bytes come from the heap (glibc caps it at
            :data:`MMAP_THRESHOLD_MAX`).
        trim_threshold: freed bytes at the top of the heap kept before trimming.

    Returns:
        Whether the allocator accepted both settings (``False`` without glibc).

    Example:
        >>> retain_freed_memory() in (True, False)
        True
    """
    if not sys.platform.startswith("linux"):
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    accepted_mmap = mallopt(_M_MMAP_THRESHOLD, int(min(mmap_threshold, MMAP_THRESHOLD_MAX)))
    accepted_trim = mallopt(_M_TRIM_THRESHOLD, int(min(trim_threshold, _C_INT_MAX)))
    return bool(accepted_mmap) and bool(accepted_trim)
