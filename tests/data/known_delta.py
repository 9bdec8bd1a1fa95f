"""Mechanisms and an attack whose Δ has a known distribution (used by tests/test_sequential.py).

``Shifted`` releases each submission's exact score plus ``shift`` (in units of B). ``Overstating``
releases them ``size`` below in a share ``rate`` of its replications (one draw when it binds),
exactly otherwise: against ``Guess`` on random labels, Δ and the leaderboard's optimism exceed a
tolerance well between the noise and ``size`` in a share ``rate`` of contests. ``Slope`` overstates
the t-th submission by ``per``·t, so that Δ grows with the budget; ``Frozen`` releases the first
submission's score for ever (safe, and useless to honest participants). ``Guess``
submits one random label vector and returns it as its final prediction. On random labels
with n public and 2n final points the reported submission is that vector, so
Δ = shift + (public − final error rate) ≈ shift + N(0, ¼(1/n + 1/(2n))): its median is
``shift``, up to the atom of a tie.
"""

import numpy as np

from ladderlab.attack import Attack
from ladderlab.mechanism import Mechanism
from ladderlab.params import Interval


class Shifted(Mechanism):
    """Releases the exact score plus ``shift``·B."""

    id = "shifted"
    reference = "test stand-in"
    _parameter_constraints = {"shift": [Interval(float, None, None)]}
    _search_space = {"shift": [-0.1, 0.0, -0.005]}

    def __init__(self, shift: float = 0.0):
        self.shift = shift

    def _release(self, P):
        return self._scores(P) + self.shift * self.unit_


class Overstating(Mechanism):
    """Releases every score ``size``·B below the exact one, in a share ``rate`` of replications."""

    id = "overstating"
    reference = "test stand-in"
    _parameter_constraints = {"rate": [Interval(float, 0, 1)], "size": [Interval(float, 0, None)]}

    def __init__(self, rate: float = 0.1, size: float = 0.1):
        self.rate = rate
        self.size = size

    def _start(self):
        self.overstates_ = bool(self.rng_.random() < self.rate)

    def _release(self, P):
        return self._scores(P) - (self.size * self.unit_ if self.overstates_ else 0.0)


class Guess(Attack):
    """One random label vector, submitted and kept."""

    id = "guess"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 0, None)]}

    def __init__(self, k: int = 1):
        self.k = k

    @classmethod
    def budget_params(cls, budget):
        return {"k": min(budget, 1)}

    def run(self, board, data, rng):
        vector = rng.integers(0, 2, board.holdout_size).astype(float)
        if self.k:
            board.submit(vector)
        return vector


class Slope(Mechanism):
    """Releases the t-th submission's exact score less ``per``·t·B: overstates more the more it is sent."""

    id = "slope"
    reference = "test stand-in"
    _parameter_constraints = {"per": [Interval(float, 0, None)]}

    def __init__(self, per: float = 0.001):
        self.per = per

    def _release(self, P):
        done = len(self.released_)
        return self._scores(P) - self.per * self.unit_ * (done + 1 + np.arange(P.shape[0]))


class Frozen(Mechanism):
    """Releases the first submission's exact score, to that submission and every later one."""

    id = "frozen"
    reference = "test stand-in"

    def _release(self, P):
        first = self.released_[0] if self.released_ else float(self._scores(P[:1])[0])
        return np.full(P.shape[0], first)
