"""A mechanism whose safety depends on the public set's size alone (used by tests/test_plan.py).

``SafeAbove`` releases every submission's exact score (full disclosure) while the public set has fewer
than ``n_safe`` rows, and from ``n_safe`` rows on releases the population score of any submission on
random labels, ½ (it tells nothing): safe exactly from ``n_safe`` on, whatever the attack.
"""

import numpy as np

from ladderlab.mechanism import Mechanism
from ladderlab.params import Interval


class SafeAbove(Mechanism):
    """Full disclosure below ``n_safe`` public rows, a constant ½ from ``n_safe`` on."""

    id = "safe-above"
    reference = "test stand-in"
    _parameter_constraints = {"n_safe": [Interval(int, 1, None)]}

    def __init__(self, n_safe: int = 100):
        self.n_safe = n_safe

    def _release(self, P):
        if self.n_ >= self.n_safe:
            return np.full(P.shape[0], 0.5)
        return self._scores(P)
