from __future__ import annotations

from numpy.typing import ArrayLike

from ladderlab.engines.bayesboot import BayesBootLadderBase
from ladderlab.engines.bootstrap import MAX_REPLICATES, BootstrapScoreSampler
from ladderlab.params import Interval


class BayesBootLadderBoot(BayesBootLadderBase):
    """BayesBootLadderBoot: the Bayesian-bootstrap test; releases the mean of b bootstrap replicates of the best score.

    Chaibub Neto et al. 2016, Alg. 6. The released value is the mean of b ordinary
    bootstrap replicates of the statistic, resampling (ŷ, y) pairs (docs/decisions.md#bayesboot-ladderboot-release),
    drawn afresh for every submission.
    """

    id = "bayesboot-ladderboot"
    reference = "Chaibub Neto et al. 2016, Alg. 6"
    _parameter_constraints = {**BayesBootLadderBase._parameter_constraints, "b": [Interval(int, 1, MAX_REPLICATES)]}
    _search_space = {"alpha": [0.01, 0.15, 0.5], "b": [10, 1000]}

    def __init__(
        self,
        B: int = 1000,
        b: int = 1000,
        alpha: float | None = 0.15,
        po_threshold: float | None = None,
        initial_prediction: ArrayLike | None = None,
    ):
        self.B = B
        self.b = b
        self.alpha = alpha
        self.po_threshold = po_threshold
        self.initial_prediction = initial_prediction

    def _new_best(self) -> None:
        self.release_sampler_ = BootstrapScoreSampler(self.scorer_, self.labels_, self.best_prediction_, self.b)

    def _released_score(self) -> float:
        return self.release_sampler_.draw(self.rng_)
