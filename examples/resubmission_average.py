"""An example attack for the documentation: average the releases of one resubmitted prediction.

Against a mechanism that draws fresh noise on every submission (LadderBoot, a noisy
release), the mean of T releases of the same prediction estimates its exact public
score to within about 1/√T of the noise. The attack submits an all-zero prediction
``repeats`` times, then returns it: its final Δ shows how far the averaged release
moved from one release.
"""

from typing import Any

import numpy as np

from ladderlab.attack import Attack
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.tasks import PublicData


class ResubmissionAverage(Attack):
    """Submit one prediction ``repeats`` times; remember the mean release."""

    id = "resubmission-average"
    reference = "Chaibub Neto et al. 2016, repeated-submission averaging"
    task_types = frozenset({"classification", "regression"})
    _parameter_constraints = {"repeats": [Interval(int, 1, None)]}

    def __init__(self, repeats: int = 10):
        self.repeats = repeats

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        return {"repeats": budget}

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> np.ndarray:
        repeats = self.repeats if board.remaining is None else min(self.repeats, board.remaining)
        prediction = np.zeros(board.holdout_size)
        if data.classes is not None:
            prediction[:] = data.classes[0]
        released = board.submit_many(prediction[None, :], repeats=repeats) if repeats else np.empty(0)
        self.mean_release_ = float(released.mean()) if released.size else float("nan")
        return prediction
