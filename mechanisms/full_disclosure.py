from __future__ import annotations

from typing import Any

from ladderlab.mechanism import FloatArray, Mechanism
from ladderlab.stats.bounds import ProvenBound
from ladderlab.stats.leaderboard_proofs import rounding_bound


class FullDisclosure(Mechanism):
    """Releases the exact empirical score of every submission.

    Chaibub Neto et al. 2016, Introduction: the baseline that offers no protection
    against adaptive overfitting.
    """

    id = "full-disclosure"
    reference = "Chaibub Neto et al. 2016, Introduction (Full-disclosure)"
    scores_only = True
    stateless = True
    _parameter_constraints = {}

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound | None:
        """For a 0/1 loss, Blum & Hardt's transcript count with n + 1 values per release (Kaggle's
        rounding at α = 1/n); None for other losses, whose exact scores take unboundedly many values."""
        if not zero_one:
            return None
        return rounding_bound(n, k, delta, n + 1, 0.0, "binomial", "full disclosure of a 0/1 risk")

    def release_recipe(self) -> dict[str, Any]:
        return {"noise": None, "step": None}

    def _release(self, P: FloatArray) -> FloatArray:
        return self._scores(P)
