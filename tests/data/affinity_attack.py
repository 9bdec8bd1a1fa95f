"""Attacks that report where they ran (used by tests/test_colocation.py): the CPUs their
process may run on, read inside the attack with ``os.sched_getaffinity(0)`` after each
submission, handed back as marks (the only channel an attack has besides its prediction)."""

import os

from ladderlab.attack import Attack
from ladderlab.params import Interval


class ReportsItsCpus(Attack):
    """Submits ``k`` random vectors one at a time; marks ``cpus``: the union of its
    affinity after each submission."""

    id = "reports-its-cpus"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 1, None)]}

    def __init__(self, k: int = 5):
        self.k = k

    def run(self, board, data, rng):
        self._cpus: set[int] = set()
        for _ in range(self.k):
            board.submit(rng.integers(0, 2, board.holdout_size).astype(float))
            self._cpus |= os.sched_getaffinity(0)
        return rng.integers(0, 2, board.holdout_size).astype(float)

    def marks(self):
        return {"cpus": sorted(self._cpus)}


class FailsAfterSubmitting(ReportsItsCpus):
    """Submits, then raises."""

    id = "fails-after-submitting"

    def run(self, board, data, rng):
        super().run(board, data, rng)
        raise ValueError("this attack fails on purpose")
