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
    resubmitted file the same value, so averaging copies of one file gains nothing; here every
    copy differs from the vector in one holdout row (a different row per copy), which moves its
    0/1 loss by at most 1/n and draws fresh noise. The mean of the ``copies`` releases estimates
    the vector's loss with √copies times less noise, at ``copies`` submissions per vector; the
    attack keeps the vectors whose mean is at most ½. ladderlab's attack ([R]), not the paper's:
    the averaging of near-duplicates is the channel a keyed hash leaves open.
    """

    id = "near-duplicate-boosting"
    reference = "[R] Blum & Hardt 2015, §5 boosting, each query averaged over near-duplicate resubmissions"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 1, None)], "copies": [Interval(int, 1, None)]}

    def __init__(self, k: int = 50, copies: int = 8):
        self.k = k
        self.copies = copies

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """Eight copies of each of budget // 8 vectors (one vector below eight submissions)."""
        copies = min(8, budget)
        return {"k": max(1, budget // copies), "copies": copies}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """Few vectors averaged much, and more vectors averaged less."""
        return [{"k": max(1, budget // copies), "copies": copies} for copies in sorted({min(4, budget), min(16, budget)})]

    def incompatibility(self, data: PublicData) -> str | None:
        if (why := LabelCode.incompatibility(data)) is not None:
            return f"near-duplicate boosting: {why}"
        if not data.binary_labels:
            return "near-duplicate boosting needs binary labels {0, 1}"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return self.k * self.copies

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        code = LabelCode.of(data)
        n = board.holdout_size
        k = self.k if board.remaining is None else min(self.k, board.remaining // self.copies)
        copies = min(self.copies, n)
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
