from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.label_code import LabelCode
from ladderlab.params import Interval
from ladderlab.tasks import PublicData


class NearDuplicateBoosting(Attack):
    """Boosting through averaged near-duplicates: each random label vector is submitted as ``copies`` variants.

    Blum & Hardt's boosting attack (2015, §5) keeps the random label vectors whose released 0/1
    loss is at most ½ and outputs their majority vote. A mechanism that keys its noise by the
    submission (``keyed-noisy``, and any stateless release deployed as a Kaggle metric) gives a
    resubmitted file the same value, so averaging copies of one file gains nothing. Here the ``k``
    submissions go to k // ``copies`` random vectors, ``copies`` variants each; every variant
    differs from its vector in one holdout row (a different row per variant), which moves its 0/1
    loss by at most 1/n and draws fresh noise. The mean of a vector's releases estimates its loss
    with √copies times less noise; the attack keeps the vectors whose mean is at most ½. ladderlab's attack ([R]), not the paper's:
    the averaging of near-duplicates is the channel a keyed hash leaves open.
    """

    id = "near-duplicate-boosting"
    reference = "[R] Blum & Hardt 2015, §5 boosting, each query averaged over near-duplicate resubmissions"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 1, None)], "copies": [Interval(int, 1, None)]}

    def __init__(self, k: int = 400, copies: int = 8):
        self.k = k
        self.copies = copies

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget."""
        return {"k": budget}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """The whole budget, as many vectors averaged little (4 variants) or few averaged much (16)."""
        return [{"k": budget, "copies": copies} for copies in (4, 16)]

    def incompatibility(self, data: PublicData) -> str | None:
        if (why := LabelCode.incompatibility(data)) is not None:
            return f"near-duplicate boosting: {why}"
        if not data.binary_labels:
            return "near-duplicate boosting needs binary labels {0, 1}"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return self.k

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        code = LabelCode.of(data)
        n = board.holdout_size
        copies = min(self.copies, n)
        k = (self.k if board.remaining is None else min(self.k, board.remaining)) // copies
        per_batch = max(1, SUBMISSION_CHUNK_ELEMENTS // (n * code.values_per_row * copies))
        votes, kept = np.zeros(n), 0
        for start in range(0, k, per_batch):
            U = rng.integers(0, 2, (min(per_batch, k - start), n))
            variants = np.repeat(U, copies, axis=0)
            flipped = np.stack([rng.choice(n, copies, replace=False) for _ in range(U.shape[0])]).ravel()
            rows = np.arange(variants.shape[0])
            variants[rows, flipped] = 1 - variants[rows, flipped]
            loss = code.zero_one_loss(board.submit_many(code.submissions(variants))).reshape(U.shape[0], copies)
            keep = loss.mean(axis=1) <= 0.5
            votes += U[keep].sum(axis=0)
            kept += int(keep.sum())
        return code.submissions((2 * votes >= kept).astype(np.int64))
