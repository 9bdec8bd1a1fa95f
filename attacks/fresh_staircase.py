from __future__ import annotations

import numpy as np

from .staircase import Staircase


class FreshStaircase(Staircase):
    """The staircase that never perturbs a row again once a kept block has flipped it.

    The red team's attack of round three (docs/certification.md). The staircase draws every
    block from all N holdout rows, so as the public loss falls below ½ a block flips more
    public rows from right to wrong than back: a drift of about m·(1 − 2·l)·n/N against a
    Ladder's step (Blum & Hardt 2015, Fig. 1), which ends the climb near l ≈ ½ − τ. Drawing
    each block only from rows no kept block has touched keeps the drift at zero: those rows
    are as right or wrong as the random start was, and what an accepted stair gained is never
    undone. The climb ends when no untouched row is left; the last block is what remains.
    Against a noisy Ladder the noise rule is the staircase's.
    """

    id = "fresh-staircase"
    reference = "Round three's red team against the Ladders (Blum & Hardt 2015, Fig. 1; the staircase)"

    def _start_climb(self, risk: float) -> None:
        super()._start_climb(risk)
        self.touched_: np.ndarray | None = None

    def _candidate_rows(self, rows: int, block: int, rng: np.random.Generator) -> np.ndarray:
        if self.touched_ is None:
            self.touched_ = np.zeros(rows, dtype=bool)
        untouched = np.flatnonzero(~self.touched_)
        return rng.choice(untouched, min(block, untouched.size), replace=False)

    def _kept(self, rows: np.ndarray) -> None:
        self.touched_[rows] = True
