from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.label_code import LabelCode
from ladderlab.engines.voting import PluralityVote
from ladderlab.params import Interval, Options
from ladderlab.tasks import PublicData

GUIDED_R = (2, 5)
"""Candidate-set sizes of the model-guided settings in ``strength_grid``."""


class MulticlassBoosting(Attack):
    """Boosting for m classes: random labellings vote, weighted by how far their released accuracy beats chance.

    Feldman, Frostig & Hardt 2019 (The advantages of multiple classes for reducing
    overfitting from test set reuse, ICML), practical attacks; reconstructed from
    the paper's abstract and the binary attack of Blum & Hardt 2015, §5, not the
    paper's exact procedure. Submit k labellings u_j; at every point output the
    label with the largest Σ_j w_j·1[u_j(i) = l] (plurality vote, ties to the
    largest label). ``weighting="excess"``: w_j = acc_j − baseline;
    ``"threshold"``: w_j = 1[acc_j > baseline]. ``guide="none"`` draws labels
    uniformly from the m classes, baseline 1/m; the bias this buys falls with m like
    √(k/(m²n)) (the paper's efficient attack). ``guide="model"``: a side model
    (multinomial logistic regression on the training data) names a top-``r`` candidate
    set C_i per point, labels are drawn uniformly from C_i, the baseline is the mean
    released accuracy, and the vote is taken among C_i, ties to the model's higher
    ranked label (so an uninformative vote falls back to its top label): on points
    whose label is in C_i the problem is an r-class one. Labellings are drawn
    and submitted in batches of ``batch`` (fewer where ``SUBMISSION_CHUNK_ELEMENTS``
    demands; the transcript is the same); never more than the budget. On a log-loss
    leaderboard they go in as one-hot probability rows and their accuracy is read back
    from the released loss (:mod:`ladderlab.engines.label_code`, [R]).
    """

    id = "multiclass-boosting"
    reference = "Feldman, Frostig & Hardt 2019, ICML (practical attacks); Blum & Hardt 2015, §5"
    task_types = frozenset({"classification"})
    _parameter_constraints = {
        "k": [Interval(int, 1, None)],
        "guide": [Options({"none", "model"})],
        "r": [Interval(int, 2, None)],
        "weighting": [Options({"excess", "threshold"})],
        "batch": [Interval(int, 1, None)],
    }

    def __init__(self, k: int = 400, guide: str = "none", r: int = 2, weighting: str = "excess", batch: int = 1000):
        self.k = k
        self.guide = guide
        self.r = r
        self.weighting = weighting
        self.batch = batch

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget."""
        return {"k": budget}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """The plain attack, and the model-guided one with candidate sets of 2 and 5 labels
        (skipped on tasks without training features)."""
        return [{**cls.budget_params(budget), "guide": "none"},
                *({**cls.budget_params(budget), "guide": "model", "r": r} for r in GUIDED_R)]

    def incompatibility(self, data: PublicData) -> str | None:
        if (why := LabelCode.incompatibility(data)) is not None:
            return f"multiclass-boosting: {why}"
        if self.guide == "model":
            if data.X_train.shape[0] < 2 or data.X_train.shape[1] == 0:
                return "multiclass-boosting with guide='model' needs training data with features"
            if self.r > data.classes.size:
                return f"multiclass-boosting: r = {self.r} candidates but only {data.classes.size} classes"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return self.k

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        code = LabelCode.of(data)
        classes = board.classes
        m, n = classes.size, board.holdout_size
        candidates = self._candidates(data, classes)
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        batch = max(1, min(self.batch, SUBMISSION_CHUNK_ELEMENTS // (n * code.values_per_row)))
        labellings, accuracies = [], []
        for start in range(0, k, batch):
            size = min(batch, k - start)
            if candidates is None:
                U = rng.integers(0, m, (size, n), dtype=np.int32)
            else:
                U = candidates[np.arange(n), rng.integers(0, self.r, (size, n))]
            labellings.append(U)
            accuracies.append(code.accuracy(board.submit_many(code.submissions(U))))
        if not labellings:
            return code.submissions(candidates[:, 0] if candidates is not None else rng.integers(0, m, n))
        accuracy = np.concatenate(accuracies)
        baseline = 1.0 / m if candidates is None else float(accuracy.mean())
        weights = accuracy - baseline if self.weighting == "excess" else (accuracy > baseline).astype(float)
        vote = PluralityVote(n, m)
        for U, w in zip(labellings, np.split(weights, np.cumsum([len(U) for U in labellings])[:-1])):
            vote.add(U, w)
        if candidates is None:
            return code.submissions(vote.winner())
        among_candidates = np.take_along_axis(vote.tally, candidates, axis=1)
        return code.submissions(candidates[np.arange(n), np.argmax(among_candidates, axis=1)])

    def _candidates(self, data: PublicData, classes: FloatArray) -> np.ndarray | None:
        """The side model's top-``r`` class indices per holdout point, best first (None: unguided)."""
        if self.guide == "none":
            return None
        from sklearn.linear_model import (
            LogisticRegression,  # imported when played: slow to import
        )

        model = LogisticRegression(max_iter=1000).fit(data.X_train, data.y_train)
        scores = np.full((data.X_holdout.shape[0], classes.size), -np.inf)
        scores[:, np.searchsorted(classes, model.classes_)] = model.predict_proba(data.X_holdout)
        ranked = np.argsort(-scores, axis=1, kind="stable")
        return ranked[:, : self.r]
