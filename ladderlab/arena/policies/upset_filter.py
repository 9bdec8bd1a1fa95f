from __future__ import annotations

import numpy as np

from ladderlab.arena.battles import A_WINS, B_WINS
from ladderlab.arena.policies.plain_board import PlainBoard
from ladderlab.params import Boolean, Interval


class UpsetFilter(PlainBoard):
    """Drops new votes that crown a heavy underdog: Min et al. 2025's vote filtering.

    A vote is dropped when model_b wins although model_a's expected score on the board when voting
    began exceeds ``threshold``, or model_a wins although it is below 1 − ``threshold``
    (``vote_filtering.py``, default 0.7 there; 0.8 in its README's example). Otherwise the plain board.
    """

    id = "upset-filter"
    reference = "Min et al. 2025 (ICML), Algorithm 1; sail-sg/Rigging-ChatbotArena vote_filtering.py"
    _parameter_constraints = {"threshold": [Interval(float, 0.5, 1, closed="neither")], "retraction": [Boolean()]}

    def __init__(self, threshold: float = 0.8, retraction: bool = True):
        self.threshold = threshold
        self.retraction = retraction

    def keeps_votes(self, expected: np.ndarray, outcome: np.ndarray) -> np.ndarray:
        upset = ((outcome == B_WINS) & (expected > self.threshold)) | ((outcome == A_WINS) & (expected < 1 - self.threshold))
        return ~upset
