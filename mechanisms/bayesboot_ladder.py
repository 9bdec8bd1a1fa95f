from __future__ import annotations

from numpy.typing import ArrayLike

from ladderlab.engines.bayesboot import BayesBootLadderBase
from ladderlab.mechanism import round_to_multiple


class BayesBootLadder(BayesBootLadderBase):
    """BayesBootLadder: a Bayesian-bootstrap test of improvement; releases the best score rounded to 1/n.

    Chaibub Neto et al. 2016, Alg. 5, for any scorer (Pearson, CCC, AUC, losses, …)
    and either orientation. PO_thr = (1 − α)/α: α = 0.01, 0.15, 0.5 give 99, 5.67, 1
    as in Suppl. S2.
    """

    id = "bayesboot-ladder"
    reference = "Chaibub Neto et al. 2016, Alg. 5"
    _search_space = {"alpha": [0.01, 0.15, 0.5]}

    def __init__(
        self,
        B: int = 1000,
        alpha: float | None = 0.15,
        po_threshold: float | None = None,
        initial_prediction: ArrayLike | None = None,
    ):
        self.B = B
        self.alpha = alpha
        self.po_threshold = po_threshold
        self.initial_prediction = initial_prediction

    def _released_score(self) -> float:
        return float(round_to_multiple(self.best_score_, 1.0 / self.n_))
