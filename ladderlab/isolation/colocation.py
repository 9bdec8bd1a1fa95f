"""Co-location: an organiser's thread and its attack process take turns on one CPU.

An isolated duel is a conversation in which one side always waits for the other: the
organiser waits while the attack works, the attack while the organiser scores. When the two
processes sit on different CPUs, every message wakes a process on the other CPU, and on a
virtual machine that wakeup (an inter-processor interrupt, the idle CPU leaving the
hypervisor) costs several times a whole round trip on one CPU; see docs/isolation.md,
"Co-location". So while the organiser's thread lends an attack process
(:func:`ladderlab.isolation.protocol.lent_attack_process`), :func:`colocated` pins the thread to one
CPU, and the attack process adopts the same single CPU (:func:`adopt`). The thread's own
allowed set comes back when its last lent process does, so parallel workers are held to one
CPU only for the length of a duel, never for a run.

Which CPU: one that no other duel holds. Left to itself the scheduler of this machine packs
busy processes onto one CPU (with ``--jobs 2`` both workers chose the CPU they were on, and it
was the same one whenever both were pinned), so a thread *claims* its CPU with an exclusive
``flock`` on a per-user lock file (:func:`_claim`), trying the CPU it is on first; the
claim ends with the duel. When every allowed CPU is claimed, the thread is not pinned.

Affinity is only performance: results never depend on it, an attack that widens its own set
gains nothing, and where the kernel refuses (one allowed CPU, ``EPERM``, ``EINVAL``) nothing
is pinned and the duel runs as before. ``LADDERLAB_PIN=0`` in the environment turns it off.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

SWITCH = "LADDERLAB_PIN"
"""The environment variable that turns co-location off when it is ``0``."""


def enabled() -> bool:
    """Whether co-location is on (``LADDERLAB_PIN`` is not ``0``)."""
    return os.environ.get(SWITCH, "1") != "0"


_libc = ctypes.CDLL(None, use_errno=True)


def current_cpu() -> int:
    """The CPU the calling thread runs on (glibc's ``sched_getcpu``), or -1 if unknown."""
    return int(_libc.sched_getcpu())


class _ThreadPinning(threading.local):
    """One thread's pinning: how many lent attack processes hold it, its own allowed set to
    restore after the last, and the CPUs its attack processes adopt meanwhile."""

    depth = 0
    allowed: frozenset[int] = frozenset()
    cpus: frozenset[int] = frozenset()
    claim: int | None = None
    """The descriptor whose lock claims the pinned CPU."""


_pinning = _ThreadPinning()


@contextlib.contextmanager
def colocated() -> Iterator[frozenset[int]]:
    """Within: the calling thread runs on one CPU that it claimed when the outermost of
    these blocks began; yields the CPUs its attack process should adopt (that one CPU, or
    the thread's allowed set where pinning is off, refused or every CPU is claimed). Blocks
    may nest and interleave (a competition's teams, each in a greenlet of the thread); the
    thread's allowed set is restored when the last one ends, also when it raises."""
    pinning = _pinning
    if pinning.depth == 0:
        pinning.allowed = pinning.cpus = frozenset(os.sched_getaffinity(0))
        if enabled() and len(pinning.allowed) > 1:
            _pin(pinning)
    pinning.depth += 1
    try:
        yield pinning.cpus
    finally:
        pinning.depth -= 1
        if pinning.depth == 0:
            if pinning.cpus != pinning.allowed:
                _set_affinity(pinning.allowed)
            if pinning.claim is not None:
                os.close(pinning.claim)
                pinning.claim = None


def _pin(pinning: _ThreadPinning) -> None:
    """Pin the calling thread to an allowed CPU that no other duel claims, the one it runs
    on if it can; where every one is claimed or the kernel refuses, leave it as it is."""
    here = current_cpu()
    for cpu in sorted(pinning.allowed, key=lambda cpu: cpu != here):
        claim = _claim(cpu)
        if claim is None:
            continue
        if _set_affinity({cpu}):
            pinning.cpus, pinning.claim = frozenset({cpu}), claim
        else:
            os.close(claim)
        return


CLAIMS = Path(tempfile.gettempdir())
"""The folder of the lock files by which duels claim their CPUs (one file per user and CPU)."""


def _claim(cpu: int) -> int | None:
    """A descriptor holding an exclusive lock on ``cpu``'s lock file, or None if another
    duel holds it. Each claim opens the file anew, so that threads of one process exclude
    each other too; closing the descriptor ends the claim (also when the process dies)."""
    path = CLAIMS / f"ladderlab-cpu-{os.getuid()}-{cpu}.lock"
    try:
        claim = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:  # a file we cannot open (another user's) counts as claimed
        return None
    try:
        fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(claim)
        return None
    return claim


@contextlib.contextmanager
def unpinned() -> Iterator[None]:
    """Within: the calling thread has its own allowed set back, so that a process it starts
    (a sandbox server) inherits that set rather than the CPU of the current duel."""
    pinning = _pinning
    if pinning.depth == 0 or pinning.cpus == pinning.allowed:
        yield
        return
    _set_affinity(pinning.allowed)
    try:
        yield
    finally:
        _set_affinity(pinning.cpus)


def adopt(cpus: Iterable[int]) -> None:
    """In an attack process: run on ``cpus`` (what :func:`colocated` yielded to the organiser),
    or stay where it is if the kernel refuses."""
    _set_affinity(cpus)


def _set_affinity(cpus: Iterable[int]) -> bool:
    """``sched_setaffinity`` of the calling thread; False where the kernel refuses."""
    try:
        os.sched_setaffinity(0, cpus)
    except (OSError, ValueError, OverflowError):
        return False
    return True
