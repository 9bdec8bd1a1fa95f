from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladderlab.attack import FloatArray
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.scoring import PredictionKind
from ladderlab.tasks import PublicData

from .fresh_staircase import FreshStaircase


class SybilStaircase(FreshStaircase):
    """The fresh staircase spread over several accounts, each disguised from the linking rule.

    The red team's attack of round five (docs/certification.md). A Ladder's guarantee holds per
    mechanism state (Blum & Hardt 2015, Theorem 3.1), so an attacker with ``accounts`` probe
    accounts of b submissions each climbs (accounts · b) steps. The budget is spent one account
    after the other, b = the budget at the start // ``accounts``. A fresh state accepts its first
    submission whatever it is, so each further account starts with the current point (its anchor,
    one submission) and the climb goes on from that release (two states' releases do not compare).

    The linking wrapper (docs/certification.md#linking) links two accounts when a submission of one
    and the latest of the other differ on fewer than a share p₀ of the N holdout rows. Every
    account therefore carries a mask of its own: ⌈``disguise``·N⌉ rows, disjoint between accounts,
    set to another class on every submission of that account and never climbed. Two accounts'
    submissions differ on both masks, and each differs from the final prediction (the climb
    without any mask, submitted on the main account) on its mask, so with ``disguise`` ≥ p₀ no
    pair is ever linked. A mask is fixed within its account, so it shifts both sides of each of the
    account's comparisons (the fixed Ladder's release and its candidate, the t-test Ladder's paired
    differences) alike and the climb inside an account is the fresh staircase's. The price is the
    masked rows, which the climb cannot use. With ``accounts`` = 1 and ``disguise`` = 0 it is the
    fresh staircase, transcript for transcript. ``repeats`` must be 1 when ``accounts`` > 1 (a
    candidate's copies could fall on two accounts).
    """

    id = "sybil-staircase"
    reference = "Round five's red team: the fresh staircase on several accounts under the linking wrapper"
    _parameter_constraints = {
        **FreshStaircase._parameter_constraints,
        "accounts": [Interval(int, 1, None)],
        "disguise": [Interval(float, 0, 0.5, closed="left")],
    }

    def __init__(
        self,
        k: int = 1000,
        block: int = 256,
        repeats: int = 1,
        step: float = 0.1,
        start: str = "random",
        noise_multiple: float = 4.0,
        accounts: int = 2,
        disguise: float = 0.05,
    ):
        super().__init__(k=k, block=block, repeats=repeats, step=step, start=start, noise_multiple=noise_multiple)
        self.accounts = accounts
        self.disguise = disguise

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """The staircase's blocks, on two probe accounts of half the budget each."""
        return [{**point, "accounts": 2} for point in super().strength_grid(budget, n)]

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        if self.accounts > 1 and self.repeats != 1:
            raise ValueError(f"{self.id}: repeats must be 1 when accounts > 1, got repeats={self.repeats}")
        self.total_ = self.k if board.remaining is None else min(self.k, board.remaining)
        self.account_budget_ = max(1, self.total_ // self.accounts)
        self.account_, self.submitted_, self.adopt_ = 0, 0, False
        return super().run(board, data, rng)

    def _start(self, data: PublicData, kind: PredictionKind, board: Board, rng: np.random.Generator) -> FloatArray:
        """The fresh staircase's start, and each account's mask: disjoint rows and their other class."""
        start = super()._start(data, kind, board, rng)
        size = math.ceil(self.disguise * board.holdout_size) if self.accounts > 1 else 0
        size = min(size, board.holdout_size // self.accounts)
        rows = rng.choice(board.holdout_size, size * self.accounts, replace=False) if size else np.empty(0, np.intp)
        self.masks_ = [rows[a * size : (a + 1) * size] for a in range(self.accounts)]
        self.mask_values_ = [self._perturbed(start[mask], kind, board.classes, rng) for mask in self.masks_]
        return start

    def _start_climb(self, risk: float) -> None:
        super()._start_climb(risk)
        self.current_copy_ = self.candidate_.copy()

    def _candidate_rows(self, rows: int, block: int, rng: np.random.Generator) -> np.ndarray:
        """No candidate once the anchors of the further accounts have used up the budget."""
        if self.submitted_ >= self.total_:
            return np.empty(0, np.intp)
        if self.touched_ is None:
            self.touched_ = np.zeros(rows, dtype=bool)
            for mask in self.masks_:
                self.touched_[mask] = True
        return super()._candidate_rows(rows, block, rng)

    def _risk(self, board: Board, prediction: FloatArray, sign: float) -> float:
        """The release of ``prediction`` on the account it falls on; on a further account's first
        submission, the current point goes first, as that account's reference (its anchor)."""
        account = min(self.submitted_ // self.account_budget_, self.accounts - 1)
        if account != self.account_:
            self.account_ = account
            if self.total_ - self.submitted_ >= 2:
                self._hold(self._disguised_risk(board, self.current_copy_, sign))
            else:
                self.adopt_ = True
        self.candidate_ = prediction
        return self._disguised_risk(board, prediction, sign)

    def _disguised_risk(self, board: Board, prediction: FloatArray, sign: float) -> float:
        """The release of ``prediction`` under the current account's mask."""
        disguised = prediction.copy()
        disguised[self.masks_[self.account_]] = self.mask_values_[self.account_]
        self.submitted_ += 1
        return super()._risk(board, disguised, sign)

    def _improved(self, risk: float) -> bool:
        """Kept by the staircase's rule; a candidate that a fresh account had to take as its first
        submission (no budget for an anchor) is kept whatever its release."""
        if self.adopt_:
            self.adopt_ = False
            self._hold(risk)
            kept = True
        else:
            kept = super()._improved(risk)
        if kept:
            self.current_copy_ = self.candidate_.copy()
        return kept
