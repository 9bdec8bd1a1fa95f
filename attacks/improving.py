from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import Attack, FloatArray
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import PublicData


class Improving(Attack):
    """An honest participant who improves every day: a model fitted on a growing share of the training data.

    The control of a long challenge with one submission a day (IDG-DREAM round 1b:
    59 days). On day t of ``days`` it fits ridge regression (``alpha``; on a classification
    task, L2-logistic regression with C = 1/``alpha``, predicting labels or probabilities
    as the scorer takes them) on the first ⌈t·n_train/days⌉ training rows (at least one of
    each class) and submits its prediction; it never looks at the
    released scores, so its final prediction, the last day's model, is not fitted to
    the holdout at all. With ``view`` set it uses that many features, drawn at random from
    its own stream (as the natural analysts' views in :mod:`ladderlab.engines.analysts`): teams of
    one entry then differ in skill, each with its own population score.
    """

    id = "improving"
    reference = "Honest control (Zrnic & Hardt 2019's non-adaptive analyst; IDG-DREAM round 1b schedule)"
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

    def check_params_for(self, data: PublicData) -> None:
        features = data.X_train.shape[1]
        if self.view is not None and self.view > features:
            raise ValueError(f"{self.id}: parameter 'view' = {self.view} is more than the {features} features the "
                             f"task has; give at most {features}")

    def max_submissions(self, data: PublicData) -> int:
        return self.days

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        days = self.days if board.remaining is None else min(self.days, board.remaining)
        n, d = data.X_train.shape
        X_train, X_holdout = data.X_train, data.X_holdout
        if self.view is not None:
            columns = np.sort(rng.choice(d, size=self.view, replace=False))
            X_train, X_holdout = X_train[:, columns], X_holdout[:, columns]
        fewest = 2 if data.task_type == "regression" else _first_rows_with_every_class(data.y_train)
        prediction = None
        for day in range(1, days + 1):
            rows = max(fewest, -(-day * n // days))
            prediction = self._predict(data, X_train[:rows], data.y_train[:rows], X_holdout)
            board.submit(prediction)
        return self._predict(data, X_train, data.y_train, X_holdout) if prediction is None else prediction

    def _predict(self, data: PublicData, X: FloatArray, y: FloatArray, X_holdout: FloatArray) -> FloatArray:
        from sklearn.linear_model import (  # imported when played: slow to import
            LogisticRegression,
            Ridge,
        )

        if data.task_type == "regression":
            return Ridge(alpha=self.alpha).fit(X, y).predict(X_holdout)
        model = LogisticRegression(C=1.0 / self.alpha if self.alpha > 0 else 1e12, max_iter=1000).fit(X, y)
        kind = get_scorer(data.scorer).prediction_kind
        if kind is PredictionKind.LABEL:
            return model.predict(X_holdout).astype(float)
        probabilities = model.predict_proba(X_holdout)
        return probabilities if kind is PredictionKind.PROBABILITIES else probabilities[:, -1].copy()


def _first_rows_with_every_class(y: FloatArray) -> int:
    """The fewest leading rows of ``y`` that hold every class (a classifier needs them all)."""
    return max(int(np.flatnonzero(y == label)[0]) + 1 for label in np.unique(y))
