"""A mechanism whose safety depends on the public set's size alone (used by tests/test_plan.py).

``SafeAbove`` releases every submission's score 0.3 too good while the public set has fewer than ``n_safe``
rows (an optimism no tolerance below 0.3 lets pass, whatever the attack), and from ``n_safe`` rows on the
population score of any submission on random labels, ½ (it tells nothing): safe exactly from ``n_safe`` on.
"""

import numpy as np

from ladderlab.mechanism import Mechanism
from ladderlab.params import Interval
from ladderlab.stats.bounds import ProvenBound


class SafeAbove(Mechanism):
    """Scores 0.3 too good below ``n_safe`` public rows, a constant ½ from ``n_safe`` on."""

    id = "safe-above"
    reference = "test stand-in"
    _parameter_constraints = {"n_safe": [Interval(int, 1, None)]}

    def __init__(self, n_safe: int = 100):
        self.n_safe = n_safe

    def _release(self, P):
        if self.n_ >= self.n_safe:
            return np.full(P.shape[0], 0.5)
        return self._scores(P) - 0.3


class ProvenRoot(SafeAbove):
    """``SafeAbove`` with a proven bound of √(k / n)·log(1/δ) on the leaderboard error (a stand-in for a theorem)."""

    id = "proven-root"

    def proven_bound(self, n, k, delta=0.05, zero_one=False):
        return ProvenBound(float(np.sqrt(k / n) * np.log(1 / delta)), delta, "√(k/n)·log(1/δ)", "test stand-in")
