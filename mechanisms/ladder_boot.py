from __future__ import annotations

from ladderlab.bootstrap import bootstrap_mean_losses
from ladderlab.ladder import PairedTTestLadder
from ladderlab.mechanism import FloatArray
from ladderlab.params import Interval


class LadderBoot(PairedTTestLadder):
    """LadderBoot: the t-test Ladder that releases the mean of b bootstrap means of the best loss vector.

    Chaibub Neto et al. 2016, Alg. 4. The test compares with the unrounded risk of
    the best submission (line 11, NOTES.md 4), and every submission draws fresh
    bootstrap noise, also when the best does not change (lines 15–16, NOTES.md 5).
    The release costs O(n): one Multinomial(b·n) count vector instead of b·n
    resampled indices (NOTES.md 6).
    """

    id = "ladder-boot"
    reference = "Chaibub Neto et al. 2016, Alg. 4"
    compares_with_release = False
    _parameter_constraints = {**PairedTTestLadder._parameter_constraints, "b": [Interval(int, 1, None)]}

    def __init__(self, alpha: float | None = 0.15, b: int = 1000, critical_value: float | None = None):
        self.alpha = alpha
        self.b = b
        self.critical_value = critical_value

    def _accepted_release(self, risk: float) -> float:
        return float(self._held_releases(1)[0])

    def _held_releases(self, rows: int) -> FloatArray:
        return bootstrap_mean_losses(self.best_loss_, self.b, self.rng_, rows)
