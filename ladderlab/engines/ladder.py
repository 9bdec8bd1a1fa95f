"""The engine shared by the Ladder mechanisms (Blum & Hardt Figs. 1–2; Chaibub Neto Algs. 1–4).

Every Ladder keeps a best submission and accepts a new one when its risk (the score
oriented so that smaller is better) is below a reference value by a margin:

    accept  ⇔  R(ŷ_t) < reference − margin_t.

The inequality is strict and a tie within floating-point rounding is a tie
(docs/decisions.md#ties): with 0/1 losses a single flipped label changes the risk by
exactly 1/n, which is also the parameter-free Ladder's margin.

Variants differ in the margin (fixed η, or c·sd(l_t − l_best)/√n), in the reference
(the last released value, or the unrounded risk of the best: docs/decisions.md#comparison) and in what
they release on acceptance and otherwise. Between acceptances the margin of every
row depends only on the current best, so the engine tests whole blocks of rows at
once and only restarts at an acceptance; blocks grow geometrically while nothing is
accepted. Per-row reductions run along contiguous rows, so a row's decision is
bit-identical whichever block it is tested in.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ladderlab.mechanism import FloatArray, Mechanism, round_to_multiple
from ladderlab.params import Interval
from ladderlab.stats.bounds import ProvenBound
from ladderlab.stats.leaderboard_proofs import ladder_bound

_FIRST_BLOCK = 16
_BLOCK_ELEMENTS = 1 << 21
TIE_TOLERANCE = 1e-12
"""Beating the threshold by less than this, relative to max(1, |reference|), is a tie."""


MAX_CRITICAL_VALUE = 10.0
"""The largest critical value c a Ladder of tests takes: a one-sided normal test at c = 10 has level
7.6·10⁻²⁴, far below any α worth asking; beyond it no submission after the first is ever accepted."""

class Ladder(Mechanism):
    """Abstract Ladder: accepts a submission that beats the reference by a margin."""

    releases_best = True
    compares_with_release: ClassVar[bool] = True
    """True: the reference is the last released value R_{t−1} (Algs. 1–3).
    False: it is the unrounded risk of the best submission (Alg. 4, line 11)."""
    decides_deterministically: ClassVar[bool] = True
    """True when whether a submission is accepted depends only on it and the state (no
    random draw), so that a resubmitted copy after a rejected one is rejected too and
    is not scored again (``submit_many(P, repeats)``); False for a randomised test."""

    def _start(self) -> None:
        self.best_risk_ = np.inf
        self.best_loss_row_ = self.holdout_.perfect_loss_row()
        self.current_release_ = np.nan
        self.block_rows_ = _FIRST_BLOCK

    @property
    def best_loss_(self) -> FloatArray:
        """The per-sample losses of the best submission (zero before the first acceptance)."""
        return self.holdout_.losses(self.best_loss_row_)

    @property
    def _reference(self) -> float:
        if not self.acceptances_:
            return math.inf
        if self.compares_with_release:
            return self.scorer_.sign * self.current_release_
        return self.best_risk_

    def _release(self, P: FloatArray) -> FloatArray:
        loss_rows, risks = self._risks(P)
        if P.shape[0] == 1:
            return self._release_one(loss_rows, risks)
        return self._release_rows(loss_rows, risks, 1)

    def _release_repeated(self, P: FloatArray, repeats: int) -> FloatArray:
        """Each row ``repeats`` times, scored once: a copy after a rejected one is rejected too,
        since the state it meets has not changed (``decides_deterministically``)."""
        if not self.decides_deterministically:
            return super()._release_repeated(P, repeats)
        loss_rows, risks = self._risks(P)
        return self._release_rows(loss_rows, risks, repeats)

    def _risks(self, P: FloatArray) -> tuple[FloatArray | None, FloatArray]:
        """The loss rows (for a mechanism that ``requires_loss``; else None,
        :class:`ladderlab.holdout.HoldoutScores`) and the risks of the rows of ``P``."""
        if not self.requires_loss:
            scores = self._scores(P)
            return None, (scores if self.scorer_.sign == 1.0 else -scores)
        return self.holdout_.loss_rows_and_risks(P, self._known_scores(P))

    def _release_rows(self, loss_rows: FloatArray | None, risks: FloatArray, repeats: int) -> FloatArray:
        """Releases of the rows, each ``repeats`` times in a row, tested in blocks that restart at
        each acceptance and otherwise grow, also from one call to the next (``block_rows_``)."""
        m = risks.size
        first = len(self.released_)
        released = np.empty(m * repeats)
        max_block = max(_FIRST_BLOCK, _BLOCK_ELEMENTS // self.n_)
        start, block = 0, self.block_rows_
        while start < m:
            stop = min(m, start + block)
            hits = self._hits(None if loss_rows is None else loss_rows[start:stop], risks[start:stop])
            held_until = start + hits[0] if hits.size else stop
            released[start * repeats : held_until * repeats] = self._held_releases((held_until - start) * repeats)
            if hits.size:
                row = held_until
                loss_row = None if loss_rows is None else loss_rows[row]
                released[row * repeats] = self._accept(first + row * repeats, loss_row, risks[row])
                if repeats > 1:
                    released[row * repeats + 1 : (row + 1) * repeats] = self._copies_of_the_best(
                        first + row * repeats + 1, loss_row, float(risks[row]), repeats - 1)
                start, block = row + 1, _FIRST_BLOCK
            else:
                start, block = stop, min(2 * block, max_block)
        self.block_rows_ = block
        return released

    def _release_one(self, loss_rows: FloatArray | None, risks: FloatArray) -> FloatArray:
        """``_release`` for one row, without the block bookkeeping (the same decisions and draws)."""
        risk = float(risks[0])  # Python's float: numpy's scalar arithmetic is slow
        if self._beats_one(loss_rows, risk):
            return np.array([self._accept(len(self.released_), None if loss_rows is None else loss_rows[0], risk)])
        return self._held_releases(1)

    def _copies_of_the_best(self, position: int, loss_row: FloatArray | None, risk: float, copies: int) -> FloatArray:
        """Releases of ``copies`` further copies of the submission just accepted, the first at stream
        ``position``: each is tested again until one is rejected; the rest are rejected too."""
        out = np.empty(copies)
        for copy in range(copies):
            if not self._beats_one(None if loss_row is None else loss_row[None, :], risk):
                out[copy:] = self._held_releases(copies - copy)
                break
            out[copy] = self._accept(position + copy, loss_row, risk)
        return out

    def _hits(self, loss_rows: FloatArray | None, risks: FloatArray) -> NDArray[np.intp]:
        """The positions of the rows that beat the reference by their margins."""
        return beats(risks, self._reference, self._margins(loss_rows, risks.size)).nonzero()[0]

    def _beats_one(self, loss_rows: FloatArray | None, risk: float) -> bool:
        """``_hits`` for one row (its loss row the one row of ``loss_rows``), in scalars."""
        margin = self._margins(loss_rows, 1)
        return bool(beats(risk, self._reference, margin if isinstance(margin, float) else margin[0]))

    def _accept(self, position: int, loss_row: FloatArray | None, risk: float) -> float:
        """Make the submission at stream ``position`` the best; return its release."""
        self.acceptances_.append(position)
        self.best_risk_ = risk
        if loss_row is not None:
            self.best_loss_row_ = loss_row.copy()  # a loss row may be a view of the caller's predictions
        self.current_release_ = self.scorer_.sign * self._accepted_release(risk)
        return self.current_release_

    @abstractmethod
    def _margins(self, loss_rows: FloatArray | None, rows: int) -> FloatArray | float:
        """The margin each of the next ``rows`` submissions must beat the reference by."""

    @abstractmethod
    def _accepted_release(self, risk: float) -> float:
        """The released risk when the best's risk becomes ``risk``."""

    def _held_releases(self, rows: int) -> FloatArray:
        """Releases for ``rows`` submissions that did not beat the best: the previous release."""
        released = np.empty(rows)
        released.fill(self.current_release_)
        return released


def beats(risks: FloatArray | float, reference: float, margins: FloatArray | float) -> FloatArray | bool:
    """``risks < reference − margins``, with ties within rounding error counted as ties."""
    if not math.isfinite(reference):
        return risks < reference
    return risks < reference - margins - TIE_TOLERANCE * max(1.0, abs(reference))


def beats_each(risks: FloatArray, references: FloatArray, margins: FloatArray | float) -> NDArray[np.bool_]:
    """:func:`beats` element by element, each risk against its own reference (the Ladders of many
    accounts at once, :mod:`ladderlab.competition.banks`): the same operations, so the same decisions."""
    with np.errstate(invalid="ignore"):
        finite = risks < references - margins - TIE_TOLERANCE * np.maximum(1.0, np.abs(references))
    return np.where(np.isfinite(references), finite, risks < references)


class PairedTTestLadder(Ladder):
    """Abstract Ladder whose margin is a one-sided paired t-test (Chaibub Neto Eq. 2).

    Accept when R(ŷ_t) < reference − c·sd(l_t − l_best)/√n, with l_best = 0 before
    the first acceptance (docs/decisions.md#ladder-start). Releases are rounded to 1/n (docs/decisions.md#rounding).
    c is :meth:`_critical_value`, from the parameters ``alpha`` and ``critical_value`` (a subclass
    may declare either alone; the other counts as None); it is computed again after every
    acceptance, so that a subclass may let it depend on the state (``len(self.acceptances_)``).
    """

    requires_loss = True
    _parameter_constraints = {
        "alpha": [Interval(float, 0, 0.5, closed="right"), None],
        "critical_value": [Interval(float, 0, MAX_CRITICAL_VALUE), None],
    }
    """α must lie in (0, 0.5]: α > 0.5 makes c_α negative, so worse submissions would be
    accepted; for the same reason a given c must be ≥ 0, and at most :data:`MAX_CRITICAL_VALUE`."""

    def _check_params(self) -> None:
        if self._level() is None and self._given_critical_value() is None:
            raise ValueError(f"{self.id}: give alpha or critical_value (both are None)")

    def _level(self) -> float | None:
        return getattr(self, "alpha", None)

    def _given_critical_value(self) -> float | None:
        return getattr(self, "critical_value", None)

    def _start(self) -> None:
        super()._start()
        self.critical_value_ = self._critical_value()
        self.paired_sd_ = self.holdout_.paired_with(self.best_loss_row_)

    def _accept(self, position: int, loss_row: FloatArray | None, risk: float) -> float:
        release = super()._accept(position, loss_row, risk)
        self.paired_sd_ = self.holdout_.paired_with(self.best_loss_row_)
        self.critical_value_ = self._critical_value()
        return release

    def _hits(self, loss_rows: FloatArray | None, risks: FloatArray) -> NDArray[np.intp]:
        """Only rows already below the reference are tested: the margin c·sd/√n is never
        negative (c ≥ 0), so no other row can beat it, and the test's sd is computed for
        the few rows that might."""
        reference = self._reference
        below = beats(risks, reference, 0.0).nonzero()[0]
        if below.size == 0:
            return below
        return below[beats(risks[below], reference, self._margins(loss_rows[below], below.size))]

    def _beats_one(self, loss_rows: FloatArray | None, risk: float) -> bool:
        reference = self._reference
        return bool(beats(risk, reference, 0.0) and beats(risk, reference, self._margins(loss_rows, 1)[0]))

    def _critical_value(self) -> float:
        """c from the ``alpha`` and ``critical_value`` parameters."""
        return t_critical_value(self._level(), self._given_critical_value(), self.n_)

    def _largest_critical_value(self, n: int) -> float | None:
        """The largest c this Ladder can use on n points (None: unknown, as for a c that depends on
        the state, when a subclass overrides ``_critical_value``)."""
        if type(self)._critical_value is not PairedTTestLadder._critical_value:
            return None
        return t_critical_value(self._level(), self._given_critical_value(), n)

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound | None:
        """For a 0/1 loss, Blum & Hardt's transcript count (releases strictly decreasing multiples of
        1/n: n + 1 values), and the release within the largest margin c·sd/√n ≤ c/√(n − 1) of the
        best empirical risk (a rejected submission's risk is at least the release minus its margin;
        the sd of differences of 0/1 losses is at most √(n/(n − 1))). None for other losses (the
        1/n grid is then not one of the loss bound), for a Ladder that compares with its unrounded
        best or draws its decisions or releases, and for a c that depends on the state. [R]: Blum
        & Hardt prove no bound for the parameter-free Ladder; this one is ours."""
        critical = self._largest_critical_value(n)
        if not zero_one or critical is None or not self.compares_with_release or not self.decides_deterministically \
                or type(self)._accepted_release is not PairedTTestLadder._accepted_release:
            return None
        margin = critical / math.sqrt(n - 1) + TIE_TOLERANCE
        return ladder_bound(n, k, delta, n + 1, margin, "binomial", f"{self.id} with c = {critical:.4g}")

    def _margins(self, loss_rows: FloatArray | None, rows: int) -> FloatArray:
        assert loss_rows is not None
        return self.critical_value_ * self.paired_sd_(loss_rows) / math.sqrt(self.n_)

    def _accepted_release(self, risk: float) -> float:
        return float(round_to_multiple(risk, 1.0 / self.n_))


def t_critical_value(alpha: float | None, critical_value: float | None, n: int) -> float:
    """c_α = t⁻¹_{n−1}(1 − α) (docs/decisions.md#t-test-threshold: the upper quantile); a given critical value wins."""
    if critical_value is not None:
        return float(critical_value)
    return _t_quantile(1.0 - alpha, n - 1)


@functools.lru_cache(maxsize=256)
def _t_quantile(probability: float, degrees_of_freedom: int) -> float:
    """Student's t quantile, computed once per (probability, df): every duel binds a fresh Ladder,
    and scipy's ``ppf`` (40 µs at best) cost more than the rest of binding."""
    from scipy import stats  # imported here: scipy.stats is slow to import

    return float(stats.t.ppf(probability, degrees_of_freedom))
