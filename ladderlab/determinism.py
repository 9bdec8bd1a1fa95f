"""One thread per task, so that floating-point sums happen in the same order on every backend.

A cell's numbers must not depend on where it runs. They did: on a Dask worker,
joblib's dask backend is active inside the task, so estimators that parallelise with
joblib when ``n_jobs=None`` (a random forest averaging its trees' predictions) ran on
several threads there and on one thread elsewhere. The forest adds each tree's
prediction into a shared sum in the order the threads finish, and floating-point
addition is not associative: the averages differed in the last bits from run to run.
Multi-threaded BLAS can likewise split a dot product's sum differently by thread count.

:func:`single_threaded` runs a block with joblib's sequential backend (thread-local,
so concurrent tasks in one process do not interfere) and with BLAS and OpenMP limited
to one thread (process-wide, reference-counted, so the limit holds until the last
concurrent task in the process leaves the block).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import joblib
from threadpoolctl import threadpool_limits

_lock = threading.Lock()
_depth = 0
_limits: threadpool_limits | None = None


@contextmanager
def single_threaded() -> Iterator[None]:
    """Run the block with one BLAS/OpenMP thread and joblib's sequential backend."""
    global _depth, _limits
    with _lock:
        if _depth == 0:
            _limits = threadpool_limits(limits=1)
        _depth += 1
    try:
        with joblib.parallel_config(backend="sequential"):
            yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limits is not None:
                _limits.restore_original_limits()
                _limits = None
