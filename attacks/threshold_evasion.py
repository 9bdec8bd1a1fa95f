from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.label_code import LabelCode
from ladderlab.params import Interval
from ladderlab.tasks import PublicData

EXACT_TOLERANCE = 1e-9
"""How far from a multiple of 1/N (relative to 1/N) a release may be and still count as exact."""
EXACT_SHARE = 0.9
"""The share of the random vectors' releases a denominator N must explain."""


class ThresholdEvasion(Attack):
    """Boosting that stops just below a noisy threshold: it tells exact releases from noisy ones.

    The red team's attack on Thresholdout (issue 28). Thresholdout releases the score on
    its released half exactly, a multiple of 1/n_released for the 0/1 loss, until that
    score departs from the guard half's by more than a noisy threshold; then it releases
    the guard's score plus noise, which is no such multiple. The attack submits
    ``k − checks`` random label vectors, finds the denominator N that makes most of
    their releases multiples of 1/N (none: every release counts as exact), and keeps
    the vectors whose release is exact and at most ½ (boosting's Kaggle variant,
    Blum & Hardt §5). Its boosted vectors, the majorities of the first t kept vectors,
    overfit the released half more as t grows; it submits them for t = 1, 2, 4, …
    until a release is not exact, then bisects between the last exact t and the first
    noisy one with the remaining ``checks`` submissions, and keeps the largest t whose
    release was exact: an overfitted vector just below the threshold. Against a
    mechanism without a threshold it is boosting with a final check. After ``run``:
    ``denominator_`` (N, or None) and ``kept_release_``, the exact release of the vector
    it kept, as a 0/1 loss (NaN if none). On a log-loss leaderboard the vectors go in as
    one-hot probabilities and every release is read back as their 0/1 loss
    (:mod:`ladderlab.engines.label_code`, [R]), whose exact values are the multiples of 1/N.
    """

    id = "threshold-evasion"
    reference = "Issue 28's red team against Thresholdout (Dwork et al. 2015) and boosting (Blum & Hardt 2015, §5)"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 2, None)], "batch": [Interval(int, 1, None)]}

    def __init__(self, k: int = 1000, batch: int = 1000):
        self.k = k
        self.batch = batch

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget (at least 2: one vector and one check)."""
        return {"k": max(2, budget)}

    def incompatibility(self, data: PublicData) -> str | None:
        if (why := LabelCode.incompatibility(data)) is not None:
            return f"threshold-evasion: {why}"
        if not data.binary_labels:
            return "threshold-evasion needs binary labels {0, 1}"
        return super().incompatibility(data)

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        code = LabelCode.of(data)
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        checks = min(k - 1, 2 * math.ceil(math.log2(max(k, 2))) + 2)
        vectors, released = self._random_vectors(board, code, k - checks, rng)
        denominator = self.denominator_ = _denominator(released)
        kept = vectors[_exact(released, denominator) & (released <= 0.5)]
        self.kept_release_ = math.nan
        if kept.shape[0] == 0 or checks == 0:
            return code.submissions(vectors[0])

        def boosted(t: int) -> FloatArray:
            """The majority of the first ``t`` kept vectors (a few dozen are asked for: summed on demand)."""
            return code.submissions((2 * kept[:t].sum(axis=0, dtype=np.int32) >= t).astype(np.int64))

        releases: dict[int, float] = {}

        def below_threshold(t: int) -> bool:
            releases[t] = float(code.zero_one_loss(board.submit(boosted(t))))
            return bool(_exact(np.array([releases[t]]), denominator)[0])

        best, t = 0, 1
        while checks and t <= kept.shape[0]:
            checks -= 1
            if not below_threshold(t):
                break
            best, t = t, 2 * t
        high = min(t, kept.shape[0] + 1)
        while checks and high - best > 1:
            checks -= 1
            middle = (best + high) // 2
            if below_threshold(middle):
                best = middle
            else:
                high = middle
        if not best:
            return code.submissions(vectors[0])
        self.kept_release_ = releases[best]
        return boosted(best)

    def _random_vectors(self, board: Board, code: LabelCode, count: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, FloatArray]:
        """``count`` random label vectors and their released 0/1 losses."""
        batch = max(1, min(self.batch, SUBMISSION_CHUNK_ELEMENTS // (board.holdout_size * code.values_per_row)))
        vectors = np.empty((count, board.holdout_size), dtype=np.int8)
        released = np.empty(count)
        for start in range(0, count, batch):
            stop = min(count, start + batch)
            vectors[start:stop] = rng.integers(0, 2, (stop - start, board.holdout_size))
            released[start:stop] = code.zero_one_loss(board.submit_many(code.submissions(vectors[start:stop])))
        return vectors, released


def _exact(values: FloatArray, denominator: int | None) -> np.ndarray:
    """Which ``values`` are multiples of 1/``denominator`` (all of them without one)."""
    if denominator is None:
        return np.ones(values.size, dtype=bool)
    scaled = values * denominator
    return np.abs(scaled - np.rint(scaled)) <= EXACT_TOLERANCE * np.maximum(1.0, np.abs(scaled))


def _denominator(released: FloatArray, candidates: int = 100_000) -> int | None:
    """The smallest N ≤ ``candidates`` that makes at least 90% of the first releases multiples of
    1/N: the number of points an exact 0/1 score counts errors on (None: no such N)."""
    sample = released[: min(released.size, 64)]
    if sample.size == 0:
        return None
    for start in range(1, candidates + 1, 4096):
        N = np.arange(start, min(candidates, start + 4095) + 1, dtype=float)
        fits = _exact(sample[:, None] * N[None, :], 1)
        good = np.flatnonzero(fits.mean(axis=0) >= EXACT_SHARE)
        if good.size:
            return int(N[good[0]])
    return None
