"""One thread per task and one task at a time per process, so that a cell's numbers (and
whether it runs at all) do not depend on where it runs.

A cell's numbers must not depend on where it runs. They did: on a Dask worker,
joblib's dask backend is active inside the task, so estimators that parallelise with
joblib when ``n_jobs=None`` (a random forest averaging its trees' predictions) ran on
several threads there and on one thread elsewhere. The forest adds each tree's
prediction into a shared sum in the order the threads finish, and floating-point
addition is not associative: the averages differed in the last bits from run to run.
Multi-threaded BLAS can likewise split a dot product's sum differently by thread count.

A Dask worker with several threads also ran several cells at once in one process, and
cells import slow packages lazily (scikit-learn, scipy.stats) when they first play. Two
threads importing a package with circular imports (scikit-learn's ``sklearn.base``)
trip CPython's import deadlock detection, which hands one of them the partially
initialised module (CPython issues 82276 and 83065): ``ImportError: cannot import name
'clone' from partially initialized module 'sklearn.base'``, and the replication was
recorded as failed on that backend only, depending on timing.

:func:`single_threaded` runs a block with joblib's sequential backend and with BLAS and
OpenMP limited to one thread, holding a process-wide lock: blocks in other threads of the
process wait, so no two tasks import (or run) at once. The lock is re-entrant, so a
task may nest blocks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import joblib
from threadpoolctl import threadpool_limits

_one_task = threading.RLock()
_depth = 0
_limits: threadpool_limits | None = None


@contextmanager
def single_threaded() -> Iterator[None]:
    """Run the block alone in this process, with one BLAS/OpenMP thread and joblib's sequential backend."""
    global _depth, _limits
    with _one_task:
        if _depth == 0:
            _limits = threadpool_limits(limits=1)
        _depth += 1
        try:
            with joblib.parallel_config(backend="sequential"):
                yield
        finally:
            _depth -= 1
            if _depth == 0 and _limits is not None:
                _limits.restore_original_limits()
                _limits = None
