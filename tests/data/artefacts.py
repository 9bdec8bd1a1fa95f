"""Participants that learn nothing but used to fail every mechanism (issue 28; used by tests/test_certify.py).

``GarbageFinal`` submits one ordinary prediction (ridge regression on the training data)
and then makes a garbage final prediction (a constant far outside the labels). ``LoneProbe``
submits one huge probe s·u and predicts zero. Neither overfits anything.
"""

import numpy as np

from ladderlab.attack import Attack
from ladderlab.params import Interval


class GarbageFinal(Attack):
    id = "garbage-final"
    reference = "test stand-in"
    task_types = frozenset({"regression"})
    _parameter_constraints = {"constant": [Interval(float, None, None)]}

    def __init__(self, constant: float = 10.0):
        self.constant = constant

    def run(self, board, data, rng):
        from sklearn.linear_model import Ridge

        board.submit(Ridge().fit(data.X_train, data.y_train).predict(data.X_holdout))
        return np.full(board.holdout_size, self.constant)


class LoneProbe(Attack):
    id = "lone-probe"
    reference = "test stand-in"
    task_types = frozenset({"regression"})
    _parameter_constraints = {"scale": [Interval(float, 0, None)]}

    def __init__(self, scale: float = 100.0):
        self.scale = scale

    def run(self, board, data, rng):
        board.submit(self.scale * (2.0 * rng.integers(0, 2, board.holdout_size) - 1.0))
        return np.zeros(board.holdout_size)
