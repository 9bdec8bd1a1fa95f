from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.changepoint import binary_segmentation
from ladderlab.engines.regression import forward_step_predictions, ols_predictions
from ladderlab.params import Interval, Options
from ladderlab.scoring import get_scorer
from ladderlab.tasks import PublicData

ROUND_OFF_ULPS = 64
"""How many units in the last place count as round-off (see :func:`round_off_gain`)."""


def last_record(trace: FloatArray, best_before: float) -> int | None:
    """Index of the last value that beat every earlier one and ``best_before`` (smaller is better)."""
    previous_best = np.minimum.accumulate(np.concatenate([[best_before], trace[:-1]]))
    records = np.flatnonzero(trace < previous_best)
    return int(records[-1]) if records.size else None


def noise_scale(trace: FloatArray) -> float:
    """Robust sd of i.i.d. noise around a piecewise-constant mean: MAD of first differences / (0.6745·√2)."""
    if trace.size < 2:
        return 0.0
    return float(np.median(np.abs(np.diff(trace))) / (0.6745 * np.sqrt(2)))


def round_off_gain(trace: FloatArray) -> float:
    """The largest gain in squared error that a split of ``trace`` can owe to round-off.

    Two sources, both relative to the trace's scale rather than its variance (a
    constant trace has variance 0, and so would every threshold): values that differ
    by at most ``ROUND_OFF_ULPS`` units in the last place of max|trace| (the same
    score summed in another order), whose splits gain at most m·(64·ε·max|trace|)²;
    and the cancellation in the segment costs Σx² − (Σx)²/len computed from prefix
    sums of the trace centred on its first value, of order m·64·ε·Σx².
    """
    if trace.size == 0:
        return 0.0
    eps = np.finfo(float).eps
    scale = float(np.max(np.abs(trace)))
    centred = trace - trace[0]
    return trace.size * max((ROUND_OFF_ULPS * eps * scale) ** 2, ROUND_OFF_ULPS * eps * float(centred @ centred))


class StepForward(Attack):
    """Step-forward Freedman's attack: grow a feature set by the feature responsible for the last jump.

    Chaibub Neto et al. 2016, Alg. 7 (docs/decisions.md#step-forward-loop: lines 4 and 5 are one loop; with
    nothing selected it submits the univariate models). Each iteration submits the
    model [selected + x_j] for every remaining feature j (regressions fit all at once,
    Frisch–Waugh–Lovell) and selects the feature at the last jump of the released
    scores:

    - ``jump="last-record"``: the last submission that beat every earlier released
      score; for a deterministic Ladder, exactly its last change;
    - ``jump="binseg"``: the last changepoint of binary segmentation (``rules``
      "textbook", or "r" for R changepoint's BinSeg, see
      :mod:`ladderlab.engines.changepoint`), with ``changepoints`` an integer Q,
      ``"oracle"`` (the true number of visible jumps in the iteration, as in the
      paper's Fig. 5: new bests whose release differs from the release before,
      not counting the first model's, which no changepoint can show; needs an
      oracle board) or ``"penalty"`` (a change must cut the squared error by
      ``penalty_scale``·σ̂²·log m, σ̂ the noise sd estimated from first
      differences, and by more than round-off at the trace's scale: a constant
      trace has no changepoint, and on a deterministic trace it finds exactly the
      last change). A changepoint 0 (R's answer when no split gains) is none.

    ``repeats`` = T > 1 is the repeated-submission averaging attack (Discussion):
    every model is submitted T times and the T released scores averaged first.
    An iteration without a jump ends the attack early: the leaderboard gave no
    evidence for any further feature. The final model is the least-squares fit on
    the selected features. After ``run``, ``selected_`` lists them in order and
    ``iteration_starts_`` the number of submissions made before each iteration and
    ``located_jumps_`` the index of the submission at each iteration's located jump.
    """

    id = "step-forward"
    version = "3"  # 2: oracle Q counts visible jumps; a constant trace has no penalty changepoint; R-exact BinSeg
    # 3: candidate fits by QR (ladderlab.engines.regression), submissions moved by an ulp or so
    reference = "Chaibub Neto et al. 2016, Alg. 7 and Discussion (repeated submissions)"
    task_types = frozenset({"regression"})
    _parameter_constraints = {
        "iterations": [Interval(int, 1, None)],
        "jump": [Options({"last-record", "binseg"})],
        "changepoints": [Interval(int, 1, None), Options({"oracle", "penalty"})],
        "penalty_scale": [Interval(float, 0, None)],
        "rules": [Options({"textbook", "r"})],
        "repeats": [Interval(int, 1, None)],
    }

    def __init__(
        self,
        iterations: int = 5,
        jump: str = "last-record",
        changepoints: int | str = "penalty",
        penalty_scale: float = 3.0,
        rules: str = "textbook",
        repeats: int = 1,
    ):
        self.iterations = iterations
        self.jump = jump
        self.changepoints = changepoints
        self.penalty_scale = penalty_scale
        self.rules = rules
        self.repeats = repeats

    def max_submissions(self, data: PublicData) -> int:
        """Each iteration submits every feature not yet selected, ``repeats`` times."""
        return self.iterations * data.X_train.shape[1] * self.repeats

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        sign = get_scorer(data.scorer).sign
        selected: list[int] = []
        self.iteration_starts_: list[int] = []
        self.located_jumps_: list[int] = []
        remaining = np.arange(data.X_train.shape[1])
        for _ in range(self.iterations):
            if remaining.size == 0 or (
                board.remaining is not None and board.remaining < remaining.size * self.repeats
            ):
                break
            first = board.submissions
            self.iteration_starts_.append(first)
            best_before = float(np.min(sign * board.transcript)) if first else np.inf
            predictions = forward_step_predictions(data.X_train, data.y_train, data.X_holdout, selected, remaining)
            trace = sign * self._submit_averaged(board, predictions)
            position = self._last_jump(trace, best_before, board, first)
            if position is None:
                break
            selected.append(int(remaining[position]))
            self.located_jumps_.append(first + position * self.repeats)
            remaining = np.delete(remaining, position)
        self.selected_ = selected
        return ols_predictions(data.X_train, data.y_train, data.X_holdout, selected)

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """As many iterations as the budget allows (each stops the attack once the
        remaining budget cannot cover a full pass over the features)."""
        return {"iterations": budget}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """As many iterations as fit, with each model submitted T = 1, 2, 4, 8 times
        (T ≤ budget): more repeats average away more of a randomised mechanism's noise
        (Discussion) but leave budget for fewer iterations. A point whose first pass
        over the features does not fit the budget submits nothing; ``certify``
        reports it as not played."""
        return [{**cls.budget_params(budget), "repeats": repeats} for repeats in (1, 2, 4, 8) if repeats <= budget]

    def marks(self) -> dict[str, list[int]]:
        """Iteration starts and located jumps, as the red lines of Chaibub Neto et al. Figs. 1, 3, 5."""
        return {"iteration start": self.iteration_starts_, "located jump": self.located_jumps_}

    def _submit_averaged(self, board: Board, predictions: FloatArray) -> FloatArray:
        """Submit each prediction ``repeats`` times in a row; the mean released score of each."""
        per_chunk = max(1, SUBMISSION_CHUNK_ELEMENTS // (self.repeats * predictions.shape[1]))
        means = [
            board.submit_many(chunk, repeats=self.repeats).reshape(-1, self.repeats).mean(axis=1)
            for chunk in np.array_split(predictions, range(per_chunk, len(predictions), per_chunk))
        ]
        return np.concatenate(means)

    def _last_jump(self, trace: FloatArray, best_before: float, board: Board, first: int) -> int | None:
        if self.jump == "last-record":
            return last_record(trace, best_before)
        if self.changepoints == "oracle":
            jumps = board.oracle_jumps(first + self.repeats)
            if jumps == 0:
                return None
            found = binary_segmentation(trace, n_changepoints=jumps, rules=self.rules)
        elif self.changepoints == "penalty":
            penalty = max(self.penalty_scale * noise_scale(trace) ** 2 * np.log(trace.size), round_off_gain(trace))
            centred = trace - trace[0]  # exact zeros for a constant trace: no cancellation in the prefix sums
            if self.rules == "r":
                found = binary_segmentation(centred, n_changepoints=trace.size // 2, penalty=penalty, rules="r")
            else:
                found = binary_segmentation(centred, penalty=penalty)
        else:
            found = binary_segmentation(trace, n_changepoints=self.changepoints, rules=self.rules)
        found = [k for k in found if k > 0]  # R reports 0 when no split has a positive gain
        return found[-1] if found else None
