from __future__ import annotations

from ladderlab.engines.bootstrap import MAX_REPLICATES, BootstrapMeanSampler
from ladderlab.engines.ladder import PairedTTestLadder
from ladderlab.mechanism import FloatArray
from ladderlab.params import Interval
from ladderlab.seeding import substream

COMPLETION_STREAM = "bootstrap-completion"
"""The identity, inside the mechanism's stream, of the Poissonized sampler's completion indices."""


class LadderBoot(PairedTTestLadder):
    """LadderBoot: the t-test Ladder that releases the mean of b bootstrap means of the best loss vector.

    Chaibub Neto et al. 2016, Alg. 4. The test compares with the unrounded risk of
    the best submission (line 11, docs/decisions.md#comparison), and every submission draws fresh
    bootstrap noise, also when the best does not change (lines 15–16, docs/decisions.md#ladderboot-fresh-noise).
    The release is drawn exactly without resampling b·n indices: one binomial for a
    0/1 loss, a multinomial over the distinct loss values, or Poissonized counts of every
    sample completed from a second stream (``completion_rng_``) where many losses are
    distinct (:class:`ladderlab.engines.bootstrap.BootstrapMeanSampler`). Version 2: that sampler's
    random stream. Version 3: its index draws pick pairs of samples where n is small.
    Version 4: Poissonized counts with completion where many losses are distinct.
    """

    id = "ladder-boot"
    reference = "Chaibub Neto et al. 2016, Alg. 4"
    compares_with_release = False
    _parameter_constraints = {**PairedTTestLadder._parameter_constraints, "b": [Interval(int, 1, MAX_REPLICATES)]}
    _search_space = {"alpha": [0.01, 0.15, 0.5], "b": [10, 1000]}
    version = "4"

    def __init__(self, alpha: float | None = 0.15, b: int = 1000, critical_value: float | None = None):
        self.alpha = alpha
        self.b = b
        self.critical_value = critical_value

    def _start(self) -> None:
        super()._start()
        self.completion_rng_ = substream(self.rng_, COMPLETION_STREAM)
        self.release_sampler_ = BootstrapMeanSampler(self.best_loss_, self.b)

    def _accepted_release(self, risk: float) -> float:
        self.release_sampler_ = BootstrapMeanSampler(self.best_loss_, self.b)
        return float(self._held_releases(1)[0])

    def _held_releases(self, rows: int) -> FloatArray:
        return self.release_sampler_.draw(self.rng_, rows, self.completion_rng_)
