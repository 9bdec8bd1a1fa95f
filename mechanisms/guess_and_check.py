from __future__ import annotations

import math

import numpy as np

from ladderlab.mechanism import FloatArray, Mechanism
from ladderlab.params import Interval
from ladderlab.stats.bounds import ProvenBound
from ladderlab.stats.guess_check import check_width, default_tau, failure_step, query_confidence, rounded_values
from ladderlab.stats.leaderboard_proofs import guess_and_check_bound


class GuessAndCheck(Mechanism):
    """Releases the participant's own guess of its score when the holdout confirms it within τ, else a rounded holdout score.

    After Rogers, Roth, Smith, Srebro, Thakkar & Woodworth 2020, "Guaranteed validity for empirical
    approaches to adaptive data analysis" (AISTATS), as their library's
    ``Guess_and_Check_Mechanism`` computes it (:mod:`ladderlab.stats.guess_check`). The public
    rows are split into a check part (``check_fraction`` of them) and a guess part. For
    submission q (after f failed checks) with guess g and check-part score h, both as
    fractions of the score's range (units of B):

        β_q = β·w(q)·w(f)/N(q, f)            (the union bound over the transcripts so far)
        pass  ⇔ |g − h| ≤ τ − w(g, β_q)      (w: the Chernoff–Hoeffding width at g ± τ)
        pass:  release g
        fail:  release h rounded to a multiple of γ = τ − √(ln(2/β_q)/(2 n_c)), clipped to the range;
               f ← f + 1; when γ ≤ 0 the check part is spent

    With probability ≥ 1 − β every answer is within τ of the submission's population score
    (:meth:`proven_bound`). The guess is the participant's, passed beside the predictions
    (``Board.submit(prediction, guess=…)``, ``submit_many(P, guesses=…)``, in the scorer's
    units); a submission without one (NaN, or any attack that does not guess) is guessed by
    its score on the guess part, the library's empirical guess mechanism. ``tau`` None (the
    default) derives τ from the check part's size and the expected number of submissions ``k``
    ([R]: twice the check width of submission k before any failure; a fixed τ of 0.05 spends a
    check part of 1,000 points within two submissions).

    Our choices [R]: the split is random (the library takes the first rows); a pass checks
    the wider of the two Chernoff widths (the library picks one by the sign of g − h); a
    rounded release can take ⌊1/γ⌋ + 2 values (the library counts ⌈1/γ⌉, missing the clipped
    top value); once the check part is spent, every later submission releases the last
    released value again (the library answers nothing), which tells nothing new (the middle of the
    range if the very first check spent it). τ is fixed
    (the library can grow it after each failure). The guarantee needs a score that is a
    mean of per-row values in a bounded range (a bounded loss, accuracy); for AUC or a
    correlation it is only approximate, and for a loss unbounded without a declared range
    (then in units of 1, as every mechanism's parameters) there is none. Leaderboard rows: each release is the submission's
    own score; the board shows the best.
    """

    id = "guess-and-check"
    reference = "Rogers et al. 2020 (AISTATS), their library's Guess_and_Check_Mechanism"
    takes_guesses = True
    _parameter_constraints = {
        "tau": [Interval(float, 0, 1, closed="neither"), None],
        "beta": [Interval(float, 0, 1, closed="neither")],
        "check_fraction": [Interval(float, 0, 1, closed="neither")],
        "k": [Interval(int, 1, 10**9)],
    }
    _search_space = {"tau": [None, 0.05, 0.1, 0.2]}

    def __init__(self, tau: float | None = None, beta: float = 0.05, check_fraction: float = 0.5, k: int = 1000):
        self.tau = tau
        self.beta = beta
        self.check_fraction = check_fraction
        self.k = k

    def effective_tau(self, n: int) -> float:
        """τ on n public points: the given one, or [R] twice the check width of submission ``k`` before
        any failure (:func:`ladderlab.stats.guess_check.default_tau`): 0.19 at n = 2,000, 0.06 at 20,000."""
        if self.tau is not None:
            return float(self.tau)
        return min(0.99, default_tau(max(1, math.floor(self.check_fraction * n)), self.beta, self.k))

    def _start(self) -> None:
        value_range = self.scorer_.value_range(self.classes_.size)
        checked = math.floor(self.check_fraction * self.n_)
        if not 1 <= checked <= self.n_ - 1:
            raise ValueError(f"{self.id}: check_fraction = {self.check_fraction} leaves {checked} check and "
                             f"{self.n_ - checked} guess rows of {self.n_}; each part needs at least 1")
        self.low_ = 0.0 if value_range is None else value_range[0]
        self.tau_ = self.effective_tau(self.n_)
        order = self.rng_.permutation(self.n_)
        self.check_rows_, self.guess_rows_ = np.sort(order[:checked]), np.sort(order[checked:])
        self.queries_ = 0
        self.failures_ = 0
        self.log_values_ = 0.0
        self.spent_ = False
        self.failed_checks_: list[int] = []

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound:
        """τ with probability ≥ 1 − β (its own β, whatever ``delta``), for every answer before the
        check part is spent."""
        return guess_and_check_bound(self.effective_tau(n), self.beta)

    def _fraction(self, scores: FloatArray) -> FloatArray:
        return (scores - self.low_) / self.unit_

    def _release(self, P: FloatArray) -> FloatArray:
        m = P.shape[0]
        guesses = self._next_guesses(m)
        missing = np.isnan(guesses)
        if missing.any():
            guesses = guesses.copy()
            guesses[missing] = self._scores_on(self.guess_rows_, P[missing])
        checks = self._fraction(self._scores_on(self.check_rows_, P))
        fractions = self._fraction(guesses)
        released = guesses.copy()
        start = 0
        while start < m and not self.spent_:
            queries = self.queries_ + np.arange(m - start)
            confidence = np.array([query_confidence(self.beta, int(q), self.failures_, self.log_values_)
                                   for q in queries])
            widths = check_width(self.check_rows_.size, fractions[start:], self.tau_, confidence)
            failed = np.flatnonzero(np.abs(fractions[start:] - checks[start:]) > self.tau_ - widths)
            if not failed.size:
                self.queries_ += m - start
                return released
            row = start + int(failed[0])
            self.queries_ += row - start + 1
            gamma = failure_step(self.check_rows_.size, self.tau_, float(confidence[row - start]))
            if gamma <= 0:
                self.spent_ = True
                start = row
                break
            self.failures_ += 1
            self.log_values_ += math.log(rounded_values(gamma))
            self.failed_checks_.append(len(self.released_) + row)
            released[row] = self.low_ + self.unit_ * min(1.0, max(0.0, round(checks[row] / gamma) * gamma))
            start = row + 1
        if self.spent_ and start < m:
            last = released[start - 1] if start else (self.released_[-1] if self.released_ else self.low_ + self.unit_ / 2)
            released[start:] = last
        return released
