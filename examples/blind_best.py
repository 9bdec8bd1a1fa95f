"""A participant who never looks at the leaderboard: k random predictions, all drawn before any release.

Not an attack on a mechanism but a probe of the certificate's criterion (red team, round
four: docs/red-team-certificates.md#red-team-round-four). Blum & Hardt's Definition 2.1
pairs the leaderboard's release with the submission it reports, the best released one, so
k submissions that read nothing still show the winner's curse of the public set: Δ is about
−σ·E[max of k standard normals], σ the standard deviation of one submission's public score.
Where that passes −τ, no mechanism that releases the best of k scores can be certified at
that budget, adaptive participant or not. It is kept out of the battery (it is not adaptive,
and adding it would change the criterion, which is the lead's decision): name it with
``--attack examples/blind_best.py:BlindBest``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, random_predictions
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import PublicData


class BlindBest(Attack):
    """Submit ``k`` independent random predictions, every one drawn before the first release.

    Labels are uniform over the task's classes, probabilities uniform on [0, 1], class
    probabilities flat-Dirichlet rows, real values standard normal
    (``ladderlab.attack.random_predictions``, the draws of ``hill-climbing``'s random start). Submitted in batches; nothing released is read. The
    final prediction is the first one: the certificate's Δ is that of the submission the
    leaderboard reports, whatever the final prediction is.
    """

    id = "blind-best"
    reference = "Blum & Hardt 2015, Def. 2.1 (the best of k releases); no adaptivity"
    task_types = frozenset({"classification", "regression"})
    _parameter_constraints = {"k": [Interval(int, 1, None)]}

    def __init__(self, k: int = 100):
        self.k = k

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget."""
        return {"k": budget}

    def incompatibility(self, data: PublicData) -> str | None:
        if get_scorer(data.scorer).prediction_kind is PredictionKind.LABEL and data.classes is None:
            return "blind-best needs the task's label set to draw labels"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return self.k

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> np.ndarray:
        kind = get_scorer(data.scorer).prediction_kind
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        first = random_predictions(kind, board.classes, (1, board.holdout_size), rng)
        rows = max(1, SUBMISSION_CHUNK_ELEMENTS // first[0].size)
        if k:
            board.submit_many(first)
        for start in range(1, k, rows):
            board.submit_many(random_predictions(kind, board.classes, (min(rows, k - start), board.holdout_size), rng))
        return first[0]

