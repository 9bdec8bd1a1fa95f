"""Attacks that raise (used by tests/test_certificate_artefacts.py): a certificate counts their crashes.

``Guesses`` submits k random label vectors and keeps the one with the best release; with
``raise_unless_below`` it raises at the end, instead of returning it, unless that release lies below
the given loss (a climb that got lucky). The parameter only chooses the final prediction, so the
duels with and without it play one transcript. ``MostlyRaises`` raises before its first submission
in a share ``rate`` of its replications (one draw from its stream) and guesses once otherwise.
``Constant`` submits the all-ones vector and keeps it: it draws nothing.
"""

import numpy as np

from ladderlab.attack import Attack, FinalChoiceAttack
from ladderlab.params import Interval


class Guesses(FinalChoiceAttack):
    """k random guesses, the best kept; raises unless lucky, if told to."""

    id = "guesses"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    final_only_params = frozenset({"raise_unless_below"})
    _parameter_constraints = {"k": [Interval(int, 1, None)], "raise_unless_below": [Interval(float, 0, 1), None]}

    def __init__(self, k: int = 10, raise_unless_below: float | None = None):
        self.k = k
        self.raise_unless_below = raise_unless_below

    @classmethod
    def budget_params(cls, budget):
        return {"k": budget}

    def play(self, board, data, rng):
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        guesses = rng.integers(0, 2, (k, board.holdout_size)).astype(float)
        released = board.submit_many(guesses)
        return guesses[int(np.argmin(released))], float(released.min())

    def final_prediction(self, state, data):
        best, released = state
        if self.raise_unless_below is not None and released >= self.raise_unless_below:
            raise RuntimeError(f"no luck: the best release was {released:.3f}")
        return best


class MostlyRaises(Attack):
    """Raises before any submission in a share ``rate`` of replications; one guess otherwise."""

    id = "mostly-raises"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"rate": [Interval(float, 0, 1)]}

    def __init__(self, rate: float = 0.97):
        self.rate = rate

    def run(self, board, data, rng):
        if rng.random() < self.rate:
            raise ValueError("this plugin raised before its first submission")
        vector = rng.integers(0, 2, board.holdout_size).astype(float)
        board.submit(vector)
        return vector


class Constant(Attack):
    """The all-ones vector, submitted and kept; no random draw."""

    id = "constant"
    reference = "test stand-in"
    task_types = frozenset({"classification"})

    def run(self, board, data, rng):
        vector = np.ones(board.holdout_size)
        board.submit(vector)
        return vector
