from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import Attack, FloatArray
from ladderlab.board import Board
from ladderlab.params import ListOf, Options
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import PublicData


MODELS = ("ridge", "lasso", "knn", "random-forest")


def _models(task_type: str, seed: int, n_classes: int) -> dict[str, Any]:
    # scikit-learn is imported here, when the attack plays: it is slow to import
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.linear_model import Lasso, LogisticRegression, Ridge
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

    if task_type == "regression":
        return {
            "ridge": Ridge(alpha=1.0),
            "lasso": Lasso(alpha=0.1, random_state=seed),
            "knn": KNeighborsRegressor(n_neighbors=10),
            "random-forest": RandomForestRegressor(n_estimators=50, random_state=seed, n_jobs=1),
        }
    l1_logistic = LogisticRegression(C=0.1, l1_ratio=1.0, solver="liblinear", random_state=seed)
    return {
        "ridge": LogisticRegression(C=1.0, max_iter=1000),
        # liblinear fits two classes only: one L1-logistic model per class beyond that
        "lasso": l1_logistic if n_classes <= 2 else OneVsRestClassifier(l1_logistic),
        "knn": KNeighborsClassifier(n_neighbors=10),
        "random-forest": RandomForestClassifier(n_estimators=50, random_state=seed, n_jobs=1),
    }


class Honest(Attack):
    """Honest participants: a few standard models fit on the training data, each submitted once.

    The control for utility and for "no overfitting": the leaderboard is used only
    to pick the best of ``models`` (ridge / L2-logistic, lasso / L1-logistic,
    k-nearest neighbours, random forest), whose prediction is the final one.
    """

    id = "honest"
    version = "2"  # 2: lasso models seeded from the attack's Generator, not numpy's global state
    reference = "Control participant (Blum & Hardt §6; Chaibub Neto et al., Discussion)"
    honest = True
    _parameter_constraints = {"models": [ListOf(Options(MODELS), min_length=1)]}

    def __init__(self, models: tuple[str, ...] = MODELS):
        self.models = models

    def incompatibility(self, data: PublicData) -> str | None:
        if data.X_train.shape[0] < 10 or data.X_train.shape[1] == 0:
            return "honest participants need training data with features"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return len(self.models)

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        n_classes = 0 if data.classes is None else len(data.classes)
        available = _models(data.task_type, int(rng.integers(2**31)), n_classes)
        scorer = get_scorer(data.scorer)
        predictions = []
        for name in self.models:
            model = available[name].fit(data.X_train, data.y_train)
            if scorer.prediction_kind is PredictionKind.LABEL:
                predictions.append(model.predict(data.X_holdout))
            elif scorer.prediction_kind is PredictionKind.PROBABILITIES:
                predictions.append(model.predict_proba(data.X_holdout))
            elif data.task_type == "classification":
                predictions.append(model.predict_proba(data.X_holdout)[:, 1])
            else:
                predictions.append(model.predict(data.X_holdout))
        budget = len(predictions) if board.remaining is None else min(len(predictions), board.remaining)
        if budget == 0:
            return predictions[0]
        released = board.submit_many(np.stack(predictions[:budget]))
        return predictions[int(np.argmin(scorer.sign * released))]
