"""The two sides of a leaderboard: the organiser's :class:`Leaderboard` and the participant's :class:`Board`.

A participant predicts the whole holdout (public and final rows, in the order of
the holdout inputs it was given, not knowing which rows are public), as on Kaggle.
The :class:`Leaderboard` passes the public rows to the bound mechanism and records,
for the organiser, the exact public and final scores of every submission.

The :class:`Board` is all an attack holds: it validates predictions, meters the
budget and keeps the transcript of released scores. Its public attributes lead to
no labels; the leaderboard behind it is private. This keeps honest attack code from
touching labels by accident; it is not a sandbox against hostile code in the same
process.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.holdout import holdout_scores
from ladderlab.mechanism import FloatArray, Mechanism, check_guesses, check_repeats, columns
from ladderlab.scoring import PredictionKind, scores_by_block
from ladderlab.validation import check_prediction_matrix, rows_per_block


class BudgetExceeded(RuntimeError):
    """A submission would exceed the participant's budget; nothing was submitted."""


class Leaderboard:
    """The organiser's side: a bound mechanism, the split of the holdout, and the records.

    ``public_rows`` are the holdout positions scored by the mechanism (default: all
    of them); ``final_rows`` and ``final_labels`` the private set, scored only for
    the record. For every submission the records keep the released score, the
    exact public score and the final score (NaN without a final set).
    """

    def __init__(
        self,
        mechanism: Mechanism,
        public_rows: ArrayLike | None = None,
        final_rows: ArrayLike | None = None,
        final_labels: ArrayLike | None = None,
    ):
        if not hasattr(mechanism, "labels_"):
            raise ValueError("the leaderboard needs a bound mechanism: call mechanism.bind(...) first")
        n_public = mechanism.n_
        self.mechanism = mechanism
        self.public_rows = np.arange(n_public) if public_rows is None else np.asarray(public_rows)
        if self.public_rows.size != n_public:
            raise ValueError(
                f"{self.public_rows.size} public rows for a mechanism bound to {n_public} labels"
            )
        if (final_rows is None) != (final_labels is None):
            raise ValueError("give final_rows and final_labels together")
        self.final_rows = np.asarray([], dtype=int) if final_rows is None else np.asarray(final_rows)
        self.final_labels = (
            np.asarray([], dtype=float) if final_labels is None else np.asarray(final_labels, dtype=float)
        )
        if self.final_rows.size != self.final_labels.size:
            raise ValueError(
                f"{self.final_rows.size} final rows but {self.final_labels.size} final labels"
            )
        self.holdout_size = self.public_rows.size + self.final_rows.size
        covered = np.sort(np.concatenate([self.public_rows, self.final_rows]))
        if not np.array_equal(covered, np.arange(self.holdout_size)):
            raise ValueError("public_rows and final_rows must partition 0 … holdout_size − 1")
        self._public: list[FloatArray] = []
        self._final: list[FloatArray] = []
        self._final_holdout = holdout_scores(mechanism.scorer_, self.final_labels, mechanism.classes_)
        self._public_columns = _as_slice(self.public_rows)
        self._final_columns = _as_slice(self.final_rows)

    def check(self, predictions: ArrayLike) -> FloatArray:
        """Validate whole-holdout predictions against the mechanism's scorer and label set."""
        return check_prediction_matrix(
            predictions,
            self.holdout_size,
            self.mechanism.scorer_.prediction_kind,
            self.mechanism.classes_,
        )

    def submit_many(self, P: FloatArray, repeats: int = 1, guesses: FloatArray | None = None) -> FloatArray:
        """Score whole-holdout predictions validated by ``check``, each ``repeats`` times in a
        row; return the released scores (the copies of a row together). ``guesses`` (checked by
        :func:`ladderlab.mechanism.check_guesses`) go to the mechanism with their rows.

        The rows go through in cache-sized blocks, each gathered once per pass: the exact
        public and final scores of every row first (a score that is not finite raises
        before the mechanism sees the batch), then the mechanism's releases, which reuse
        the public scores. A row's exact scores are computed once for all its copies.
        """
        step = rows_per_block(self.holdout_size)
        mechanism = self.mechanism
        public_scores, final_scores = self.exact_scores(P)
        released = _joined([mechanism.submit_validated(columns(P[start : start + step], self._public_columns), repeats,
                                                       public_scores[start : start + step],
                                                       None if guesses is None else guesses[start : start + step])
                            for start in range(0, P.shape[0], step)])
        self._public.append(np.repeat(public_scores, repeats))
        self._final.append(np.repeat(final_scores, repeats))
        return released

    def exact_scores(self, P: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The exact public and final scores of predictions validated by ``check``, without the
        mechanism seeing them (final: NaN without a final set)."""
        step = rows_per_block(self.holdout_size)
        public_scores = scores_by_block(lambda block: self.mechanism.holdout_.scores(columns(block, self._public_columns)),
                                        P, step)
        if not self.final_rows.size:
            return public_scores, np.full(P.shape[0], np.nan)
        return public_scores, scores_by_block(lambda block: self._final_holdout.scores(columns(block, self._final_columns)),
                                              P, step)

    def last_records(self) -> dict[str, FloatArray]:
        """``records`` of the last ``submit_many`` batch only."""
        count = self._public[-1].size
        return {"released": np.array(self.mechanism.released_[-count:]), "public": self._public[-1].copy(),
                "final": self._final[-1].copy()}

    def records(self) -> dict[str, FloatArray]:
        """Per submission: ``released``, ``public`` (exact) and ``final`` scores."""
        return {
            "released": np.array(self.mechanism.released_),
            "public": np.concatenate(self._public) if self._public else np.empty(0),
            "final": np.concatenate(self._final) if self._final else np.empty(0),
        }


class Board:
    """The participant's client of a leaderboard: submit, read the transcript, see the budget.

    ``holdout_size`` is the length of a prediction vector; ``budget`` the number of
    submissions allowed (None: unlimited); ``classes`` the task's label set, public
    knowledge for a classification task (empty for a real-valued target).
    """

    __slots__ = ("_leaderboard", "_oracle", "_transcript", "budget", "classes", "holdout_size", "prediction_ndim")

    def __init__(self, leaderboard: Leaderboard, budget: int | None = None, oracle: bool = False):
        if budget is not None and budget < 0:
            raise ValueError(f"budget must be ≥ 0 or None, got {budget}")
        self._leaderboard = leaderboard
        self._oracle = oracle
        self._transcript: list[float] = []
        self.budget = budget
        self.holdout_size = leaderboard.holdout_size
        mechanism = leaderboard.mechanism
        predicts_labels = mechanism.scorer_.prediction_kind is not PredictionKind.REAL
        # for a real-valued target the "label set" would be the sorted public labels themselves
        self.classes = mechanism.classes_.copy() if predicts_labels else np.empty(0)
        self.prediction_ndim = 2 if mechanism.scorer_.prediction_kind is PredictionKind.PROBABILITIES else 1
        """1: a submission is a vector of n values; 2: n rows of class probabilities."""

    @property
    def submissions(self) -> int:
        """How many submissions have been scored."""
        return len(self._transcript)

    @property
    def remaining(self) -> int | None:
        """Submissions left in the budget (None: unlimited)."""
        return None if self.budget is None else self.budget - self.submissions

    @property
    def transcript(self) -> NDArray[np.float64]:
        """The released scores so far, oldest first (a copy)."""
        return np.array(self._transcript)

    def oracle_jumps(self, since: int) -> int:
        """How many submissions from number ``since`` on became the mechanism's new best
        with a release that differs from the one before it: the visible jumps.

        The paper's oracle (Chaibub Neto et al., Fig. 5: "we informed the true number
        of jumps to the change-point detection method"): organiser knowledge, given
        only to boards created with ``oracle=True``. Changepoint detection sees only
        the released values, so an acceptance whose release rounds to the previous
        release is no jump; counting it would make binary segmentation place
        spurious changepoints late in the trace.
        """
        if not self._oracle:
            raise PermissionError("this board was not created with oracle=True")
        mechanism = self._leaderboard.mechanism
        if not mechanism.releases_best:
            raise ValueError(f"mechanism {mechanism.id!r} has no notion of a best submission")
        released = mechanism.released_
        return sum(
            1 for index in mechanism.acceptances_
            if index >= since and index > 0 and released[index] != released[index - 1]
        )

    def submit(self, prediction: ArrayLike, guess: float | None = None) -> float:
        """Submit one whole-holdout prediction vector, with your own estimate of its score if you have
        one (``guess``, for a mechanism that checks guesses); return its released score."""
        prediction = np.asarray(prediction)
        if prediction.ndim != self.prediction_ndim:
            hint = "; use submit_many for several" if prediction.ndim > self.prediction_ndim else ""
            raise ValueError(f"submit takes one prediction vector, got an array of shape {prediction.shape}{hint}")
        return float(self.submit_many(prediction[None, :], guesses=None if guess is None else [guess])[0])

    def submit_many(self, predictions: ArrayLike, repeats: int = 1,
                    guesses: ArrayLike | None = None) -> NDArray[np.float64]:
        """Submit the rows of a matrix in order, each ``repeats`` times in a row; same result
        as ``submit`` on each row, ``repeats`` times.

        ``repeats`` > 1 is the repeated-submission attack's move (Chaibub Neto et al.,
        Discussion): m·repeats submissions count against the budget and m·repeats released
        scores come back, the copies of a row together. Where the mechanism's decisions
        allow, copies are answered without being scored again. ``guesses``: your own estimate
        of each row's score (NaN: none), which a mechanism that checks guesses (guess and
        check) releases when its holdout confirms it; others ignore them. The batch is
        validated and checked against the budget first; if any of that fails, nothing is
        submitted.
        """
        check_repeats(repeats)
        P = self._leaderboard.check(predictions)
        guesses = check_guesses(guesses, P.shape[0])
        if self.remaining is not None and P.shape[0] * repeats > self.remaining:
            raise BudgetExceeded(
                f"{P.shape[0] * repeats} submissions would exceed the budget of {self.budget} "
                f"({self.remaining} left)"
            )
        released = self._leaderboard.submit_many(P, repeats, guesses)
        self._transcript.extend(released.tolist())
        return released.copy()


def _joined(parts: list[FloatArray]) -> FloatArray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _as_slice(rows: NDArray[np.int64]) -> slice | NDArray[np.int64]:
    """Consecutive ascending positions as a slice (a view, not a gather); others unchanged."""
    if rows.size and rows[-1] - rows[0] == rows.size - 1 and (rows.size == 1 or (np.diff(rows) == 1).all()):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows

