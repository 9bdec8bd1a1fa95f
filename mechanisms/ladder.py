from __future__ import annotations

from ladderlab.engines.ladder import Ladder
from ladderlab.mechanism import FloatArray, round_to_multiple
from ladderlab.params import Interval
from ladderlab.stats.bounds import ProvenBound, TheoreticalBound, ladder_error_bound
from ladderlab.stats.leaderboard_proofs import ladder_bound
from ladderlab.stats.transcripts import grid_values


class FixedLadder(Ladder):
    """The Ladder with a fixed step η: release [R]_η only when R < R_{t−1} − η.

    Blum & Hardt 2015, Fig. 1; Chaibub Neto et al. 2016, Alg. 1. R_0 = ∞, so the
    first submission is always released. Needs only the score, so it works with any
    scorer; for larger-is-better scores the test is mirrored. η is in units of the loss
    bound B (``Mechanism.unit_``; 1 for the 0/1 loss, the theorem's loss in [0, 1]).
    """

    id = "ladder"
    monotone = True
    scores_only = True
    reference = "Blum & Hardt 2015, Fig. 1; Chaibub Neto et al. 2016, Alg. 1"
    _parameter_constraints = {"eta": [Interval(float, 0, 1, closed="right")]}
    """η is the step in units of the loss bound B: above 1 no score in [0, B] is ever a step better than
    another, so the board releases its first value forever."""
    _search_space = {"eta": [0.005, 0.01, 0.02, 0.05, 0.1]}

    def __init__(self, eta: float = 0.01):
        self.eta = eta

    def releasing(self, improvement: float) -> dict[str, float]:
        """η = improvement / 2: a release is [R]_η, within η/2 of the risk it stands for, and the next
        is accepted below it by η, so any improvement beyond 1.5·η is released."""
        return {"eta": improvement / 2}

    def leaderboard_error_bound(self, n: int, k: int) -> TheoreticalBound:
        """Theorem 3.1 at this η."""
        return ladder_error_bound(n, k, self.eta)

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound:
        """Theorem 3.1's ε + η with its transcripts counted exactly: releases are strictly
        decreasing multiples of η in [0, 1] (at most n + 1 of them for a 0/1 risk)."""
        return ladder_bound(n, k, delta, grid_values(self.eta, n if zero_one else None), self.eta,
                            "binomial" if zero_one else "hoeffding", f"the Ladder with step η = {self.eta:g}")

    def _margins(self, loss_rows: FloatArray | None, rows: int) -> float:
        return self.eta * self.unit_

    def release_step(self, unit: float) -> float:
        return self.eta * unit

    def _accepted_release(self, risk: float) -> float:
        return float(round_to_multiple(risk, self.release_step(self.unit_)))
