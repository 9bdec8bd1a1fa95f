from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladderlab.attack import FloatArray
from ladderlab.board import Board
from ladderlab.engines.label_code import LabelCode
from ladderlab.params import Interval
from ladderlab.scoring import PredictionKind
from ladderlab.tasks import PublicData

from .hill_climbing import HillClimbing


class Staircase(HillClimbing):
    """Label-flip hill climbing with blocks sized to the step a Ladder accepts.

    The red team's attack of round two (docs/certification.md). A Ladder with step η
    (Blum & Hardt 2015, Fig. 1) releases a submission only when its public loss drops
    by more than η, so each accepted submission is a stair at least η below the last.
    Flipping a block of m random holdout labels, of which about m·n/N are public, moves
    the public 0/1 loss by a net count whose standard deviation is √(m·n/N), over n; a
    block climbs a stair when that count beats η·n, which needs m of the order of
    (η·n)²·N/n, far above the √n of ``hill-climbing``'s grid (at n = 2000, N = 6000 and
    η = 0.005 the best block is about 512). The parameter-free Ladder's threshold
    (Fig. 2) grows with the block too, but the gain per accepted stair grows faster up
    to a few hundred rows. Each accepted stair lowers the public loss and leaves the
    final-set loss at chance, so its release overfits by the stairs climbed.

    A mechanism that adds fresh noise to every release of its best (LadderBoot,
    Chaibub Neto et al. 2016, Alg. 4) makes hill climbing's rule, keep what was released
    lower, keep a rejected candidate half the time. The staircase keeps a candidate only
    when its release lies more than ``noise_multiple`` deviations below the mean release
    of the current point (its acceptance and every rejection since), the deviation pooled
    over the run; a deterministic Ladder repeats its release exactly, the deviation is 0,
    and the climb is hill climbing's (with its strict rule), candidate for candidate.

    On a log-loss leaderboard the labels go in as one-hot probability rows and a flip
    moves a row's one-hot to another class (:mod:`ladderlab.engines.label_code`, [R]): the
    released loss is then an increasing affine function of the public 0/1 loss, and
    every decision the one the 0/1 climb would make.
    """

    id = "staircase"
    reference = "Round two's red team against the Ladders (Blum & Hardt 2015, Figs. 1–2; hill climbing, §2)"
    task_types = frozenset({"classification"})
    _parameter_constraints = {
        **{name: rule for name, rule in HillClimbing._parameter_constraints.items() if name != "accept"},
        "noise_multiple": [Interval(float, 0, None)],
    }

    def __init__(
        self,
        k: int = 1000,
        block: int = 256,
        repeats: int = 1,
        step: float = 0.1,
        start: str = "random",
        noise_multiple: float = 4.0,
    ):
        super().__init__(k=k, block=block, repeats=repeats, step=step, start=start)
        self.noise_multiple = noise_multiple

    def _start_climb(self, risk: float) -> None:
        self._hold(risk)
        self.pooled_squares_, self.pooled_degrees_ = 0.0, 0

    def _hold(self, risk: float) -> None:
        """Make ``risk`` the first release of a new current point."""
        self.held_count_, self.held_mean_, self.held_squares_ = 1, risk, 0.0

    def _improved(self, risk: float) -> bool:
        """Kept when released more than ``noise_multiple`` noise deviations below the mean release of
        the current point (its acceptance and every rejection since, all releases of the same best)."""
        degrees = self.pooled_degrees_ + self.held_count_ - 1
        noise = math.sqrt((self.pooled_squares_ + self.held_squares_) / degrees) if degrees else 0.0
        if risk < self.held_mean_ - self.noise_multiple * noise:
            self.pooled_squares_ += self.held_squares_
            self.pooled_degrees_ += self.held_count_ - 1
            self._hold(risk)
            return True
        self.held_count_ += 1
        change = risk - self.held_mean_
        self.held_mean_ += change / self.held_count_
        self.held_squares_ += change * (risk - self.held_mean_)
        return False

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """Blocks 2√n … n in powers of two: those above ``hill-climbing``'s largest, √n."""
        smallest = int(math.log2(max(1.0, math.sqrt(n)))) + 1
        largest = max(smallest, int(math.log2(max(1, n))))
        return [{**cls.budget_params(budget), "block": 2**i} for i in range(smallest, largest + 1)]

    def incompatibility(self, data: PublicData) -> str | None:
        if (why := LabelCode.incompatibility(data)) is not None:
            return f"staircase flips labels: {why}"
        return super().incompatibility(data)

    def _start(self, data: PublicData, kind: PredictionKind, board: Board, rng: np.random.Generator) -> FloatArray:
        """Hill climbing's start as labels, in the scorer's code."""
        self.label_code_ = LabelCode.of(data)
        labels = super()._start(data, PredictionKind.LABEL, board, rng)
        return self.label_code_.submissions(np.searchsorted(board.classes, labels))

    def _perturbed(self, values: FloatArray, kind: PredictionKind, classes: FloatArray,
                   rng: np.random.Generator) -> FloatArray:
        """Hill climbing's label flips, in the scorer's code."""
        code = self.label_code_
        flipped = super()._perturbed(classes[code.labels(values)], PredictionKind.LABEL, classes, rng)
        return code.submissions(np.searchsorted(classes, flipped))
