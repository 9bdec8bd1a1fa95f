from __future__ import annotations

from typing import Any

from ladderlab.engines.stateless import release
from ladderlab.mechanism import FloatArray
from ladderlab.mechanisms.noisy import Noisy


class KeyedNoisy(Noisy):
    """Noisy release whose noise is keyed by the submission: a resubmitted file gets the same value.

    The score plus noise of ``noise`` and ``scale``, optionally rounded, as :class:`Noisy`
    releases, except that each draw comes from a generator seeded by HMAC-SHA256 of a key
    (drawn from the mechanism's stream at ``bind``) and the SHA-256 of the prediction
    (:mod:`ladderlab.engines.stateless`): the release is a function of the submission alone,
    so it deploys where the scorer keeps no state (``ladderlab export kaggle``), and averaging
    resubmissions of one file gains nothing. Averaging near-duplicates does, which
    ``near-duplicate-boosting`` measures. One key for all teams (``shared_state``): Sybil
    accounts submitting one file see one value. ladderlab's construction ([R]): the keyed
    hash is not from the papers, the noise is Dwork et al.'s (2015) as in :class:`Noisy`.
    """

    id = "keyed-noisy"
    reference = "[R] Noisy release (Dwork et al. 2015) with noise keyed by a hash of the submission"
    scores_only = False
    stateless = True
    shared_state = True

    def _start(self) -> None:
        super()._start()
        self.key_ = self.rng_.bytes(32)

    def release_recipe(self) -> dict[str, Any]:
        return {"noise": self.noise, "scale": self.scale_, "key": self.key_.hex(), "step": self.release_step(self.unit_)}

    def _release(self, P: FloatArray) -> FloatArray:
        return release(self._scores(P), P, self.release_recipe())
