"""A stand-in for a third-party attack with a strength grid (used by tests/test_certify.py).

``block`` plays the role of hill climbing's block size: below 8 the attack submits one
random vector and keeps it (no overfitting at all); from 8 on it submits k random
vectors and keeps the coordinate-wise majority of those whose released 0/1 loss is at
most ½ (the boosting attack, which breaks Kaggle). Its default, block 1, is harmless.
"""

import time
from typing import Any

import numpy as np

from ladderlab.attack import Attack
from ladderlab.params import Interval


class BlockAttack(Attack):
    """Weak at small blocks, boosting from block 8 on."""

    id = "block-attack"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 1, None)], "block": [Interval(int, 1, None)]}

    def __init__(self, k: int = 100, block: int = 1):
        self.k = k
        self.block = block

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        return {"k": budget}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        blocks = [2**i for i in range(int(np.log2(np.sqrt(n))) + 1)]
        return [{**cls.budget_params(budget), "block": block} for block in blocks]

    def run(self, board, data, rng):
        if self.block < 8:
            vector = rng.integers(0, 2, board.holdout_size).astype(float)
            board.submit(vector)
            return vector
        U = rng.integers(0, 2, (min(self.k, board.remaining), board.holdout_size))
        released = board.submit_many(U)
        kept = U[released <= 0.5]
        return (2 * kept.sum(axis=0) >= len(kept)).astype(float)


class Idle(Attack):
    """Submits nothing and guesses."""

    id = "idle"
    reference = "test stand-in"
    task_types = frozenset({"classification"})

    def run(self, board, data, rng):
        return rng.integers(0, 2, board.holdout_size).astype(float)


class Burner(Attack):
    """Spends ``seconds`` of CPU time in its own process, then submits one random vector and keeps it."""

    id = "burner"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"seconds": [Interval(float, 0, None)]}

    def __init__(self, seconds: float = 0.1):
        self.seconds = seconds

    def run(self, board, data, rng):
        until = time.process_time() + self.seconds
        while time.process_time() < until:
            pass
        vector = rng.integers(0, 2, board.holdout_size).astype(float)
        board.submit(vector)
        return vector
