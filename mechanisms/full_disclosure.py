from __future__ import annotations

from typing import Any

from ladderlab.mechanism import FloatArray, Mechanism


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

    def release_recipe(self) -> dict[str, Any]:
        return {"noise": None, "step": None}

    def _release(self, P: FloatArray) -> FloatArray:
        return self._scores(P)
