"""An example mechanism for the documentation: the best score so far, rounded.

Like Kaggle it rounds each score to a multiple of ``alpha``, but it releases the best
rounded score so far (a leaderboard that only ever shows a team's best), and it
records which submissions became the new best.
"""

import numpy as np

from ladderlab.mechanism import FloatArray, Mechanism, round_to_multiple
from ladderlab.params import Interval


class BestRounded(Mechanism):
    """Releases the best score so far, rounded to a multiple of ``alpha``."""

    id = "best-rounded"
    reference = "documentation example"
    releases_best = True
    monotone = True
    _parameter_constraints = {"alpha": [Interval(float, 0, None, closed="neither")]}

    def __init__(self, alpha: float = 1e-3):
        self.alpha = alpha

    def _start(self) -> None:
        self.best_risk_ = np.inf

    def _release(self, P: FloatArray) -> FloatArray:
        sign = self.scorer_.sign
        risks = sign * round_to_multiple(self._scores(P), self.alpha)
        previous = np.concatenate([[self.best_risk_], np.minimum.accumulate(risks)[:-1]])
        previous = np.minimum(previous, self.best_risk_)
        first = len(self.released_)
        self.acceptances_.extend((first + np.flatnonzero(risks < previous)).tolist())
        best = np.minimum(np.minimum.accumulate(risks), self.best_risk_)
        self.best_risk_ = float(best[-1])
        return sign * best
