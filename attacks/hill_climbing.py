from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladderlab.attack import Attack, FloatArray, random_predictions
from ladderlab.board import Board
from ladderlab.params import Interval, Options
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import PublicData

REPEAT_CHOICES = (1, 4, 16)
MIN_STEPS = 100
"""``strength_grid`` offers ``repeats`` = T only when the budget leaves at least this many steps."""


class HillClimbing(Attack):
    """Coordinate hill climbing on the released score: perturb a random block, keep it if the leaderboard says it helped.

    The folklore attack of Kaggle leaderboards, an instance of Blum & Hardt's adaptive
    analyst (2015, §2): start from a random prediction (``start="random"``) or a
    model fit on the training data (``"model"``); each step perturbs ``block``
    random holdout coordinates (labels: replaced by another class, uniformly;
    probabilities: moved by ± ``step``, clipped to [0, 1]; class-probability rows:
    moved by ``step`` towards a random class; real values: ± ``step``), submits the
    candidate and keeps it if its released score is better than the current one's
    (``accept="strict"``) or not worse (``"non-strict"``), otherwise reverts it.
    ``repeats`` = T submits every candidate T times and compares mean releases,
    against mechanisms that add fresh noise to each release (Chaibub Neto et al.
    2016, Discussion). ``k`` is the number of submissions, the start included.

    Why the block matters: a one-coordinate change moves a loss by 1/n, below most
    mechanisms' resolution, while a block of b flips moves it by about √b/n, which
    the parameter-free Ladder's threshold sd(l_t − l_best)/√n ≈ √b/n lets through
    whenever the block has a net gain (Blum & Hardt 2015, Fig. 2). ``"non-strict"``
    makes a random walk against every mechanism that holds its release (the
    Ladders) and equals ``"strict"`` against exact or noisy releases; it is not in
    the strength grid.
    """

    id = "hill-climbing"
    reference = "Kaggle label-flip hill climbing; Blum & Hardt 2015, §2 (adaptive analyst) and Fig. 2"
    task_types = frozenset({"classification", "regression"})
    _parameter_constraints = {
        "k": [Interval(int, 1, None)],
        "block": [Interval(int, 1, None)],
        "repeats": [Interval(int, 1, None)],
        "accept": [Options({"strict", "non-strict"})],
        "step": [Interval(float, 0, None, closed="neither")],
        "start": [Options({"random", "model"})],
    }

    def __init__(
        self,
        k: int = 1000,
        block: int = 1,
        repeats: int = 1,
        accept: str = "strict",
        step: float = 0.1,
        start: str = "random",
    ):
        self.k = k
        self.block = block
        self.repeats = repeats
        self.accept = accept
        self.step = step
        self.start = start

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget."""
        return {"k": budget}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """Blocks 1, 2, 4, … up to √n, each with repeats 1 and, where the budget still
        leaves 100 steps, 4 and 16."""
        blocks = [2**i for i in range(int(math.log2(max(1.0, math.sqrt(n)))) + 1)]
        repeats = [t for t in REPEAT_CHOICES if t == 1 or budget // t >= MIN_STEPS]
        return [{**cls.budget_params(budget), "block": b, "repeats": t} for t in repeats for b in blocks]

    def incompatibility(self, data: PublicData) -> str | None:
        if self.start == "model" and (data.X_train.shape[0] < 2 or data.X_train.shape[1] == 0):
            return "hill-climbing with start='model' needs training data with features"
        if get_scorer(data.scorer).prediction_kind is PredictionKind.LABEL and data.classes is None:
            return "hill-climbing needs the task's label set to perturb labels"
        return super().incompatibility(data)

    def check_params_for(self, data: PublicData) -> None:
        """A ``block`` given beyond the holdout's rows is refused; the default (a size for holdouts of
        thousands of rows) plays every row of a smaller one."""
        rows = data.X_holdout.shape[0]
        if self.block > rows and self.block != self.parameter_defaults()["block"]:
            raise ValueError(f"{self.id}: parameter 'block' = {self.block} is more than the {rows} holdout rows "
                             f"it perturbs; give at most {rows}")

    def max_submissions(self, data: PublicData) -> int:
        return self.k

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        scorer = get_scorer(data.scorer)
        kind = scorer.prediction_kind
        current = self._start(data, kind, board, rng)
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        if k < self.repeats:
            return current
        self._start_climb(self._risk(board, current, scorer.sign))
        block = min(self.block, board.holdout_size)  # the default on a small holdout: check_params_for
        self.accepted_steps_ = 0
        for _ in range(k // self.repeats - 1):
            rows = self._candidate_rows(board.holdout_size, block, rng)
            if rows.size == 0:
                break
            saved = current[rows].copy()
            current[rows] = self._perturbed(saved, kind, board.classes, rng)
            if self._improved(self._risk(board, current, scorer.sign)):
                self.accepted_steps_ += 1
                self._kept(rows)
            else:
                current[rows] = saved
        return current

    def _start_climb(self, risk: float) -> None:
        """Remember the starting point's released risk."""
        self.current_risk_ = risk

    def _candidate_rows(self, rows: int, block: int, rng: np.random.Generator) -> np.ndarray:
        """The holdout rows the next candidate perturbs (none: the climb ends)."""
        return rng.choice(rows, block, replace=False)

    def _kept(self, rows: np.ndarray) -> None:
        """Called with the rows of a candidate that was kept."""

    def _improved(self, risk: float) -> bool:
        """Whether a candidate released at ``risk`` is kept (and becomes the current point)."""
        if risk < self.current_risk_ or (self.accept == "non-strict" and risk == self.current_risk_):
            self.current_risk_ = risk
            return True
        return False

    def _risk(self, board: Board, prediction: FloatArray, sign: float) -> float:
        if self.repeats == 1:
            return sign * board.submit(prediction)
        return sign * float(board.submit_many(prediction[None], repeats=self.repeats).mean())

    def _start(self, data: PublicData, kind: PredictionKind, board: Board, rng: np.random.Generator) -> FloatArray:
        n = board.holdout_size
        classes = board.classes
        if self.start == "model":
            from sklearn.linear_model import LogisticRegression, Ridge  # imported when played: slow to import

            if data.task_type == "regression":
                return Ridge(alpha=1.0).fit(data.X_train, data.y_train).predict(data.X_holdout).astype(float)
            model = LogisticRegression(max_iter=1000).fit(data.X_train, data.y_train)
            if kind is PredictionKind.LABEL:
                return model.predict(data.X_holdout).astype(float)
            probabilities = model.predict_proba(data.X_holdout)
            return probabilities if kind is PredictionKind.PROBABILITIES else probabilities[:, -1].copy()
        return random_predictions(kind, classes, n, rng)

    def _perturbed(self, values: FloatArray, kind: PredictionKind, classes: FloatArray, rng: np.random.Generator) -> FloatArray:
        if kind is PredictionKind.LABEL:
            index = np.searchsorted(classes, values)
            return classes[(index + rng.integers(1, classes.size, values.shape[0])) % classes.size]
        if kind is PredictionKind.PROBABILITIES:
            towards = np.eye(values.shape[1])[rng.integers(0, values.shape[1], values.shape[0])]
            return (values + self.step * towards) / (1.0 + self.step)
        moved = values + self.step * rng.choice([-1.0, 1.0], values.shape[0])
        return np.clip(moved, 0.0, 1.0) if kind is PredictionKind.PROBABILITY else moved
