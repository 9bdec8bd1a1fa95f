from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import Attack, FloatArray
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.tasks import PublicData


class Improving(Attack):
    """An honest participant who improves every day: ridge regression on a growing share of the training data.

    The control of a long challenge with one submission a day (IDG-DREAM round 1b:
    59 days). On day t of ``days`` it fits ridge regression (``alpha``) on the first
    ⌈t·n_train/days⌉ training rows and submits its prediction; it never looks at the
    released scores, so its final prediction, the last day's model, is not fitted to
    the holdout at all.
    """

    id = "improving"
    reference = "Honest control (Zrnic & Hardt 2019's non-adaptive analyst; IDG-DREAM round 1b schedule)"
    task_types = frozenset({"regression"})
    _parameter_constraints = {"days": [Interval(int, 1, None)], "alpha": [Interval(float, 0, None)]}

    def __init__(self, days: int = 59, alpha: float = 1.0):
        self.days = days
        self.alpha = alpha

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """One submission a day for ``budget`` days."""
        return {"days": budget}

    def incompatibility(self, data: PublicData) -> str | None:
        if data.X_train.shape[0] < 2 or data.X_train.shape[1] == 0:
            return "the improving participant needs training data with features"
        return super().incompatibility(data)

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        from sklearn.linear_model import Ridge  # imported when played: slow to import

        days = self.days if board.remaining is None else min(self.days, board.remaining)
        n = data.X_train.shape[0]
        prediction = np.zeros(board.holdout_size)
        for day in range(1, days + 1):
            rows = max(2, -(-day * n // days))
            model = Ridge(alpha=self.alpha).fit(data.X_train[:rows], data.y_train[:rows])
            prediction = model.predict(data.X_holdout)
            board.submit(prediction)
        return prediction
