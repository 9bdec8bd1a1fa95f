from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import FinalChoiceAttack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.regression import forward_step_predictions, ols_predictions
from ladderlab.params import Interval
from ladderlab.scoring import get_scorer
from ladderlab.tasks import PublicData


class Freedman(FinalChoiceAttack):
    """Freedman's attack: submit every univariate regression, refit on the k best by released score.

    Chaibub Neto et al. 2016, Results ("Freedman's attack", Fig. 2), after Freedman
    (1983). Ties in the released scores go to the earliest feature, as in the paper
    (Fig. 1b). The p submissions are one batch; with a budget smaller than p, only
    the first features are submitted. ``k`` changes only the final regression, so the
    duels at every k of a replication share one transcript (:mod:`ladderlab.runs.sharing`;
    version 2: the random streams no longer depend on k; version 3 computes the univariate
    submissions once for every k, with the same results; version 4 fits them by QR, which
    moves the submissions by an ulp or so).
    """

    id = "freedman"
    reference = "Chaibub Neto et al. 2016, Results (Freedman's attack)"
    task_types = frozenset({"regression"})
    _parameter_constraints = {"k": [Interval(int, 1, None)]}
    final_only_params = frozenset({"k"})
    version = "4"

    def __init__(self, k: int = 10):
        self.k = k

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """k = 1, 2, 5, 10, 20, 50 features refit (k ≤ budget): few features overfit
        the public set hardest per feature, more of them add up (Fig. 2)."""
        return [{**cls.budget_params(budget), "k": k} for k in (1, 2, 5, 10, 20, 50) if k <= budget]

    def max_submissions(self, data: PublicData) -> int:
        return data.X_train.shape[1]

    def play(self, board: Board, data: PublicData, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        """Submit the univariate regressions; return the features submitted and their released scores."""
        p = data.X_train.shape[1]
        submitted = np.arange(p if board.remaining is None else min(p, board.remaining))
        predictions = forward_step_predictions(data.X_train, data.y_train, data.X_holdout, [], submitted)
        return submitted, board.submit_many(predictions)

    def final_prediction(self, state: tuple[FloatArray, FloatArray], data: PublicData) -> FloatArray:
        """The least-squares fit on the k features with the best released scores."""
        submitted, released = state
        ranking = np.argsort(get_scorer(data.scorer).sign * released, kind="stable")
        top = sorted(submitted[ranking[: self.k]].tolist())
        return ols_predictions(data.X_train, data.y_train, data.X_holdout, top)
