from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import FinalChoiceAttack, FloatArray
from ladderlab.board import Board
from ladderlab.params import Interval, Options
from ladderlab.tasks import PublicData


class FeatureSelection(FinalChoiceAttack):
    """The analyst of the reusable-holdout experiment: select features by training and holdout correlation.

    Dwork et al. 2015 (Science, Fig. 1). The analyst computes each feature's
    correlation c = mean(x·s) with the ±1-coded labels s on the training data, and
    asks the leaderboard for it on the holdout by submitting the feature column
    itself (scored with ``sign-agreement``, which releases (1 + c)/2). It keeps the
    features whose two correlations both exceed ``threshold`` (default 1/√n_train)
    in absolute value with the same sign, takes the ``k`` with the largest
    |training correlation|, and submits sign(Σ_j sign(c_j)·x_j) as its classifier.
    Queries go in batches of ``batch``; with a budget, only the first features are
    queried (one submission is kept for the classifier). ``k`` only chooses the
    classifier, so the duels at every k of a replication share one transcript
    (:mod:`ladderlab.runs.sharing`; version 2: the random streams no longer depend on k).

    ``units="correlation"`` submits 2x instead of x, whose release is 1/2 + c: a
    mechanism's threshold and noise then act on c itself, as the Science code's
    Thresholdout does on its correlation queries (with ``units="accuracy"``, the
    default, they act on c/2); the classifier's release is its accuracy either way.
    """

    id = "feature-selection"
    reference = "Dwork et al. 2015, Science, Fig. 1 (the analyst)"
    task_types = frozenset({"classification"})
    check_task = ("correlated-feature-selection", {"n": 60, "d": 30})
    final_only_params = frozenset({"k"})
    version = "2"
    _parameter_constraints = {
        "k": [Interval(int, 0, None)],
        "threshold": [Interval(float, 0, None), None],
        "batch": [Interval(int, 1, None)],
        "units": [Options({"accuracy", "correlation"})],
    }
    _added_parameters = frozenset({"units"})

    def __init__(self, k: int = 100, threshold: float | None = None, batch: int = 250, units: str = "accuracy"):
        self.k = k
        self.threshold = threshold
        self.batch = batch
        self.units = units

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """The analyst needs one query per feature plus its report; it reads ``board.remaining``."""
        return {}

    def incompatibility(self, data: PublicData) -> str | None:
        if data.scorer != "sign-agreement":
            return f"feature-selection reads correlations through 'sign-agreement', not {data.scorer!r}"
        if data.X_train.shape[1] == 0:
            return "feature-selection needs features"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return data.X_train.shape[1] + 1

    def play(self, board: Board, data: PublicData, rng: np.random.Generator) -> tuple[FloatArray, FloatArray, float]:
        """Query every feature's holdout correlation; return both correlations and the threshold."""
        n, d = data.X_train.shape
        signs = 2.0 * data.y_train - 1.0
        training = (signs @ data.X_train) / n
        threshold = 1.0 / np.sqrt(n) if self.threshold is None else self.threshold
        queried = d if board.remaining is None else max(0, min(d, board.remaining - 1))
        holdout = np.full(d, np.nan)
        for start in range(0, queried, self.batch):
            columns = slice(start, min(queried, start + self.batch))
            queries = data.X_holdout[:, columns].T.astype(float)
            if self.units == "correlation":
                holdout[columns] = board.submit_many(2.0 * queries) - 0.5
            else:
                holdout[columns] = 2.0 * board.submit_many(queries) - 1.0
        return training, holdout, threshold

    def final_prediction(self, state: tuple[FloatArray, FloatArray, float], data: PublicData) -> FloatArray:
        """The sign of the vote of the k agreeing features with the largest training correlation."""
        training, holdout, threshold = state
        kept = np.flatnonzero(
            (np.abs(training) > threshold) & (np.abs(holdout) > threshold) & (np.sign(training) == np.sign(holdout))
        )
        top = kept[np.argsort(-np.abs(training[kept]), kind="stable")[: self.k]]
        return np.sign(data.X_holdout[:, top].astype(float) @ np.sign(training[top]))
