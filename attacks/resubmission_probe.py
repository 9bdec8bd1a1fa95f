from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import Attack, FloatArray
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.tasks import PublicData


class ResubmissionProbe(Attack):
    """Averages the fresh noise of a randomised release: submit one model, then resubmit it ``repeats`` times.

    The averaging channel of mechanisms that redraw their noise on every call even
    when nothing changes (Chaibub Neto et al. 2016, Discussion, for LadderBoot;
    Sage's bootLadderBoot, whose unused seed makes every call draw fresh
    resamples). Against bootLadderBoot the resubmitted copy ties the lead on every
    resample, is rejected, and re-releases a fresh 10-resample estimate of the lead,
    which is the model itself; the mean of the 1 + ``repeats`` releases
    (``estimate_``) estimates the lead's bootstrap-mean public score with √(1 +
    repeats) times less noise than one release. The model is ridge regression
    (``alpha``) on all training data, also the final prediction.
    """

    id = "resubmission-probe"
    reference = "Chaibub Neto et al. 2016, Discussion (repeated submissions); Sage bootLadderBoot's fresh resamples"
    task_types = frozenset({"regression"})
    _parameter_constraints = {"repeats": [Interval(int, 0, None)], "alpha": [Interval(float, 0, None)]}

    def __init__(self, repeats: int = 58, alpha: float = 1.0):
        self.repeats = repeats
        self.alpha = alpha

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """The first submission and ``budget − 1`` copies."""
        return {"repeats": max(0, budget - 1)}

    def incompatibility(self, data: PublicData) -> str | None:
        if data.X_train.shape[0] < 2 or data.X_train.shape[1] == 0:
            return "the resubmission probe needs training data with features"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return 1 + self.repeats

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        from sklearn.linear_model import Ridge  # imported when played: slow to import

        prediction = Ridge(alpha=self.alpha).fit(data.X_train, data.y_train).predict(data.X_holdout)
        copies = 1 + self.repeats if board.remaining is None else min(1 + self.repeats, board.remaining)
        released = board.submit_many(prediction[None, :], repeats=copies) if copies else np.empty(0)
        self.estimate_ = float(np.mean(released)) if released.size else float("nan")
        return prediction
