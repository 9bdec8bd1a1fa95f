from __future__ import annotations

import numpy as np

from ladderlab.mechanism import FloatArray, Mechanism, round_to_multiple
from ladderlab.params import Boolean, Interval
from ladderlab.stats.bounds import ProvenBound
from ladderlab.stats.leaderboard_proofs import subsample_bound


class Subsample(Mechanism):
    """Scores each submission on a fresh random subsample of the public rows and releases few bits.

    After Blanc 2023, "Subsampling suffices for adaptive data analysis" (arXiv:2302.08661): a
    query that sees only a random subsample and outputs few bits generalises, with no added
    noise. A reconstruction [R]: the paper's statistical-query mechanism (its §1.2.1) could not
    be read, so its shape follows ladderlab's literature notes (§8.3–8.4), and every choice
    below is ours. For submission t, ``size`` public rows J_t are drawn afresh (with
    replacement unless ``replace`` is False), and the release is the score of the rows J_t,
    scored as a holdout of their own, rounded to a multiple of ``step``·B (default step
    1/``size``: a 0/1 loss or an accuracy on ``size`` rows lies on that grid already, so it is
    released exactly, one of size + 1 values). The notes' other output, randomised votes
    (each row votes 1 with probability ℓ_j/B), is left out: for a 0/1 loss it is this
    release, and for other losses it needs a bounded per-sample loss, which rounding does not.

    The leaderboard shows the best release so far. Resubmitting one prediction m times gives
    m independent subsample estimates whose mean converges to its holdout score: the
    framework counts every resubmission as a query, and so does the proven bound (one of
    ``size`` + 1 values per release, :meth:`proven_bound`). Draws come from the mechanism's
    Generator, submission after submission, so a batch and a loop
    see the same subsamples.
    """

    id = "subsample"
    reference = "After Blanc 2023, arXiv:2302.08661 (reconstruction)"
    _parameter_constraints = {
        "size": [Interval(int, 1, 10**9)],
        "step": [Interval(float, 0, 1, closed="right"), None],
        "replace": [Boolean()],
    }
    _search_space = {"size": [25, 100, 400]}

    def __init__(self, size: int = 100, step: float | None = None, replace: bool = True):
        self.size = size
        self.step = step
        self.replace = replace

    def _step(self) -> float:
        return 1.0 / self.size if self.step is None else float(self.step)

    def _start(self) -> None:
        if not self.replace and self.size > self.n_:
            raise ValueError(f"{self.id}: size = {self.size} rows without replacement from {self.n_} public rows")

    def release_step(self, unit: float) -> float | None:
        return self._step() * unit

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound:
        """[R] our bound for a mechanism of few output values
        (:func:`ladderlab.stats.leaderboard_proofs.subsample_bound`), not Blanc's."""
        return subsample_bound(n, k, delta, self.size, self._step(), self.replace, "binomial" if zero_one else "hoeffding")

    def _release(self, P: FloatArray) -> FloatArray:
        self._scores(P)  # a row whose whole score overflows is refused, as every mechanism refuses it
        released = np.empty(P.shape[0])
        for row in range(P.shape[0]):
            if self.replace:
                rows = self.rng_.integers(0, self.n_, self.size)
            else:
                rows = self.rng_.choice(self.n_, self.size, replace=False)
            released[row] = round_to_multiple(self._scores_on(rows, P[row : row + 1]), self._step() * self.unit_)[0]
        return released
