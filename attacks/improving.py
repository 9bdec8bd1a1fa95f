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
    the holdout at all. With ``view`` set it uses that many features, drawn at random from
    its own stream (as the natural analysts' views in :mod:`ladderlab.analysts`): teams of
    one entry then differ in skill, each with its own population score.
    """

    id = "improving"
    reference = "Honest control (Zrnic & Hardt 2019's non-adaptive analyst; IDG-DREAM round 1b schedule)"
    task_types = frozenset({"regression"})
    honest = True
    _parameter_constraints = {
        "days": [Interval(int, 1, None)],
        "alpha": [Interval(float, 0, None)],
        "view": [Interval(int, 1, None), None],
    }

    def __init__(self, days: int = 59, alpha: float = 1.0, view: int | None = None):
        self.days = days
        self.alpha = alpha
        self.view = view

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
        n, d = data.X_train.shape
        X_train, X_holdout = data.X_train, data.X_holdout
        if self.view is not None:
            columns = np.sort(rng.choice(d, size=min(self.view, d), replace=False))
            X_train, X_holdout = X_train[:, columns], X_holdout[:, columns]
        prediction = np.zeros(board.holdout_size)
        for day in range(1, days + 1):
            rows = max(2, -(-day * n // days))
            model = Ridge(alpha=self.alpha).fit(X_train[:rows], data.y_train[:rows])
            prediction = model.predict(X_holdout)
            board.submit(prediction)
        return prediction
