"""A mechanism and an attack whose Δ has a known distribution (used by tests/test_sequential.py).

``Shifted`` releases each submission's exact score plus ``shift`` (in units of B). ``Guess``
submits one random label vector and returns it as its final prediction. On random labels
with n public and 2n final points the reported submission is that vector, so
Δ = shift + (public − final error rate) ≈ shift + N(0, ¼(1/n + 1/(2n))): its median is
``shift``, up to the atom of a tie.
"""

from ladderlab.attack import Attack
from ladderlab.mechanism import Mechanism
from ladderlab.params import Interval


class Shifted(Mechanism):
    """Releases the exact score plus ``shift``·B."""

    id = "shifted"
    reference = "test stand-in"
    _parameter_constraints = {"shift": [Interval(float, None, None)]}
    _search_space = {"shift": [-0.1, 0.0, -0.02]}

    def __init__(self, shift: float = 0.0):
        self.shift = shift

    def _release(self, P):
        return self._scores(P) + self.shift * self.unit_


class Guess(Attack):
    """One random label vector, submitted and kept."""

    id = "guess"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 0, None)]}

    def __init__(self, k: int = 1):
        self.k = k

    @classmethod
    def budget_params(cls, budget):
        return {"k": min(budget, 1)}

    def run(self, board, data, rng):
        vector = rng.integers(0, 2, board.holdout_size).astype(float)
        if self.k:
            board.submit(vector)
        return vector
