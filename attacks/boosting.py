from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.label_code import LabelCode
from ladderlab.params import Interval, Options
from ladderlab.tasks import PublicData


class Boosting(Attack):
    """The boosting attack: submit k random label vectors, output the coordinate-wise majority of the useful ones.

    Blum & Hardt 2015, §5 (Theorem 5.1, Fig. 3) and docs/decisions.md#boosting. On a log-loss
    leaderboard the vectors go in as one-hot probabilities and their 0/1 loss is read back
    from the released loss (:mod:`ladderlab.engines.label_code`, [R]). ``variant="kaggle"``
    keeps the vectors with released 0/1 loss ≤ 1/2; ``variant="ladder"`` keeps those
    that lowered the best released loss so far, the variant the paper uses against
    the Ladder. A tied vote gives 1 (as in Ladder.jl). Vectors are drawn and
    submitted in batches of ``batch``, or fewer where ``SUBMISSION_CHUNK_ELEMENTS``
    demands (the transcript is the same); never more than the board's budget.

    ``keep_first`` says when the ladder variant keeps the very first vector, which
    has no earlier release to beat: ``"always"`` (it lowered the best from +∞), or
    ``"below-half"``, only if its released loss is below ½, as the authors' code for
    Fig. 3 does (Ladder.jl, ``examples/attacks.jl``).
    """

    id = "boosting"
    reference = "Blum & Hardt 2015, §5"
    task_types = frozenset({"classification"})
    _parameter_constraints = {
        "k": [Interval(int, 1, None)],
        "variant": [Options({"kaggle", "ladder"})],
        "batch": [Interval(int, 1, None)],
        "keep_first": [Options({"always", "below-half"})],
    }
    _added_parameters = frozenset({"keep_first"})

    def __init__(self, k: int = 400, variant: str = "kaggle", batch: int = 1000, keep_first: str = "always"):
        self.k = k
        self.variant = variant
        self.batch = batch
        self.keep_first = keep_first

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget."""
        return {"k": budget}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """Both variants with k = the whole budget: keeping the vectors with loss ≤ ½
        breaks a mechanism that releases every score, keeping those that lowered the
        best breaks one that releases only improvements."""
        return [{**cls.budget_params(budget), "variant": variant} for variant in ("kaggle", "ladder")]

    def incompatibility(self, data: PublicData) -> str | None:
        return LabelCode.binary_incompatibility(data, "boosting") or super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return self.k

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        code = LabelCode.of(data)
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        votes = np.zeros(board.holdout_size)
        kept, best = 0, np.inf
        batch = max(1, min(self.batch, SUBMISSION_CHUNK_ELEMENTS // (board.holdout_size * code.values_per_row)))
        for start in range(0, k, batch):
            U = rng.integers(0, 2, (min(batch, k - start), board.holdout_size))
            loss = code.zero_one_loss(board.submit_many(code.submissions(U)))
            if self.variant == "kaggle":
                keep = loss <= 0.5
            else:
                previous_best = np.minimum.accumulate(np.concatenate([[best], loss[:-1]]))
                if start == 0 and self.keep_first == "below-half":
                    previous_best[0] = 0.5
                keep = loss < previous_best
                best = min(best, loss.min())
            votes += U[keep].sum(axis=0)
            kept += int(keep.sum())
        return code.submissions((2 * votes >= kept).astype(np.int64))
