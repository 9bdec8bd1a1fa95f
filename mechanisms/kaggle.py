from __future__ import annotations

import math
from typing import Any

from ladderlab.mechanism import FloatArray, Mechanism, round_to_multiple
from ladderlab.params import Interval
from ladderlab.stats.bounds import ProvenBound, TheoreticalBound, kaggle_boosting_order
from ladderlab.stats.leaderboard_proofs import rounding_bound
from ladderlab.stats.transcripts import grid_values


class Kaggle(Mechanism):
    """Releases every submission's empirical score rounded to a multiple of ``alpha``.

    Blum & Hardt 2015, Fig. 7: output [R_S(f_t)]_α, α = 10⁻⁵ on Kaggle. α is in units of
    the loss bound B (``Mechanism.unit_``; 1 for the 0/1 loss, as in the paper).
    """

    id = "kaggle"
    reference = "Blum & Hardt 2015, Fig. 7"
    scores_only = True
    stateless = True
    _parameter_constraints = {"alpha": [Interval(float, 0, 1, closed="right")]}
    """α is the rounding step in units of the loss bound B: above 1 every score in [0, B] rounds to 0 or
    to the step itself, and the board shows nothing."""
    _search_space = {"alpha": [1e-5, 0.001, 0.01, 0.03, 0.1]}

    def __init__(self, alpha: float = 1e-5):
        self.alpha = alpha

    def leaderboard_error_bound(self, n: int, k: int) -> TheoreticalBound | None:
        """Theorem 5.1's Ω(√(k/n)) against boosting, which needs α ≤ 1/√n."""
        return kaggle_boosting_order(n, k) if self.alpha <= 1 / math.sqrt(n) else None

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound:
        """Blum & Hardt's transcript count for a release of one of the multiples of α in [0, 1] after
        every submission (at most n + 1 of them for a 0/1 risk), plus α/2 of rounding: the upper
        bound beside Theorem 5.1's Ω(√(k/n)) lower bound."""
        return rounding_bound(n, k, delta, grid_values(self.alpha, n if zero_one else None), self.alpha / 2,
                              "binomial" if zero_one else "hoeffding", f"Kaggle's rounding to α = {self.alpha:g}")

    def releasing(self, improvement: float) -> dict[str, float]:
        """α = improvement: scores ``improvement`` apart round to multiples of α at least one step apart
        once α ≤ ``improvement``."""
        return {"alpha": improvement}

    def release_step(self, unit: float) -> float:
        return self.alpha * unit

    def release_recipe(self) -> dict[str, Any]:
        return {"noise": None, "step": self.release_step(self.unit_)}

    def _release(self, P: FloatArray) -> FloatArray:
        return round_to_multiple(self._scores(P), self.release_step(self.unit_))
