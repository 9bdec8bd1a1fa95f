"""Keep freed memory in the process, so that large temporaries are not faulted in again.

glibc's ``malloc`` serves a block above its mmap threshold (128 KiB at start, raised
to the size of the largest such block freed so far) with a fresh ``mmap`` and returns
it to the system on ``free``; it also gives back the top of the heap once more than
its trim threshold (twice the mmap threshold) is free there. Every page of the next
allocation is then faulted in and zeroed by the kernel again. A bootstrap release
allocates a few matrices of b × n draws per submission (2.5 MB each for b = 1000,
n = 314), so a Bayesian-bootstrap duel spent a third of its CPU time in the kernel.
:func:`retain_freed_memory` raises both thresholds once per process: freed blocks stay
in the heap and are reused. Results do not change; only where memory comes from does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 64 << 20
"""Blocks up to this size come from the heap and are reused after they are freed."""
TRIM_THRESHOLD_BYTES = 256 << 20
"""Free memory up to this size stays at the heap's top instead of going back to the system."""


@functools.cache
def retain_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process (once); False where malloc is not glibc's."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    accepted = [mallopt(option, value) for option, value in ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES), (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))]
    return all(accepted)
