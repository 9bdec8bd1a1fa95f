"""CPU time of this process and of every process it started: workers, sandboxes and their
attack processes.

``resource.getrusage(RUSAGE_CHILDREN)`` counts a child only once it has ended and been waited
for, but ladderlab's workers (joblib's reusable pool) and sandboxed attack processes (kept for
the next duel) outlive the work they did. So a reading adds, for every live descendant, its own
CPU and that of the children it has reaped (psutil reads them from the operating system). Each
process's CPU then appears exactly once: in its own entry while it lives, in its reaper's
afterwards. The difference of two readings is what the whole tree spent between them. A child
that this process waits for while a reading is taken makes it read again (up to ``READINGS``
times); one that a descendant reaps meanwhile can be missed or counted twice (a window of
microseconds).
"""

from __future__ import annotations

import resource

import psutil

READINGS = 10
"""Readings taken at most while children keep being waited for (then the last one stands)."""


def tree_seconds() -> float:
    """User + system CPU seconds spent so far by this process and all its descendants, live or
    ended (ended ones once waited for, by this process or a descendant)."""
    for _ in range(READINGS):
        reaped = _reaped_children()
        live = sum(map(_with_reaped, psutil.Process().children(recursive=True)))
        if _reaped_children() == reaped:  # no child of this process was waited for meanwhile
            break
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime + reaped + live


def _reaped_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _with_reaped(process: psutil.Process) -> float:
    """A live process's CPU seconds and those of the children it has waited for (0 once it is gone)."""
    try:
        times = process.cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0
    return times.user + times.system + times.children_user + times.children_system
