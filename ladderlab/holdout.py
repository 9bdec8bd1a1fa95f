"""Exact scores of validated predictions on a bound holdout (``Mechanism.holdout_``).

A mechanism, and the leaderboard around it, score only rows that passed
``check_prediction_matrix`` against the task's label set. :func:`holdout_scores`
binds the scorer to the labels and may use that knowledge. For the 0/1 loss on two
integer labels {a, b} every prediction is a or b, so the error indicator is affine
in it,

    1{ŷᵢ ≠ yᵢ} = sᵢ(ŷᵢ − yᵢ)/(b − a),   sᵢ = +1 where yᵢ = a and −1 where yᵢ = b,

and the error counts of a batch are one matrix–vector product, (P·s − s·y)/(b − a).
Every product and partial sum is an integer far below 2⁵³, so the counts are exact
in any summation order (BLAS blocking, threads, fused multiply-adds): the same bits
as counting mismatches, in one pass over the predictions instead of three. The same
identity counts where a row disagrees with the paired t-test's best, which is where
their 0/1 losses differ, so the test's standard deviation needs no loss matrix
(:class:`BinaryErrorCounts`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from ladderlab.scoring import FloatArray, LossScorer, Scorer, ZeroOneLoss, paired_sd_from_counts

EXACT_INTEGER_LABELS = 1 << 20
"""Largest |label| for which the sums of :class:`BinaryErrorCounts` stay exact integers
(n·2²¹ < 2⁵³ for any n below 2³²)."""


class HoldoutScores:
    """A scorer bound to holdout labels: scores of rows that passed validation.

    The Ladders' paired t-test works on *loss rows*: per submission, whatever
    :meth:`paired_with` compares with the best's loss row. Here they are the per-sample
    losses (``LossScorer.losses_and_means``).
    """

    scores_in_passing: ClassVar[bool] = False
    """True when scoring a block costs little beside validating it, so that a mechanism scores
    each block while validation has it in cache (:meth:`scores_of_valid_row` for one row)."""

    def __init__(self, scorer: Scorer, labels: FloatArray):
        self.scorer = scorer
        self.labels = labels

    def scores(self, P: FloatArray) -> FloatArray:
        """The scores of the rows of ``P``: ``scorer.score_many(labels, P)``, bit for bit."""
        return self.scorer.score_many(self.labels, P)

    def scores_of_valid_row(self, row: FloatArray) -> FloatArray | None:
        """For a holdout that scores in passing: the score of one submission (a one-element
        array) if it is a valid prediction, else None (it then takes the full check)."""
        raise NotImplementedError(f"{type(self).__name__} does not score in passing")

    def loss_rows_and_risks(self, P: FloatArray, scores: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """The loss rows of ``P`` and the mean loss of each (a :class:`LossScorer` only);
        ``scores``, when known, are those means (only read: here the losses are computed
        anyway, and the means with them)."""
        assert isinstance(self.scorer, LossScorer)
        return self.scorer.losses_and_means(self.labels, P)

    def perfect_loss_row(self) -> FloatArray:
        """The loss row of a prediction with zero loss everywhere: the paired t-test's best
        before the first acceptance."""
        return np.zeros(self.labels.size)

    def losses(self, loss_row: FloatArray) -> FloatArray:
        """The per-sample losses a loss row stands for."""
        return loss_row

    def paired_with(self, best_loss_row: FloatArray) -> Callable[[FloatArray], FloatArray]:
        """The paired t-test's standard deviation against a best: a function of loss rows giving
        the sd (ddof 1) of each row's losses minus the best's (Chaibub Neto Eq. 2), with the
        bits of ``LossScorer.paired_sd``. It pickles (a bound Ladder keeps one)."""
        assert isinstance(self.scorer, LossScorer)
        return functools.partial(self.scorer.paired_sd, best_loss=best_loss_row)

    def paired_sd_each(self, loss_rows: FloatArray, best_loss_rows: FloatArray) -> FloatArray:
        """The paired sd of each loss row against its own best (the matching row of
        ``best_loss_rows``): row by row the bits of :meth:`paired_with` (the Ladders of many
        accounts at once)."""
        assert isinstance(self.scorer, LossScorer)
        return self.scorer.paired_sd(loss_rows, best_loss_rows)


class BinaryErrorCounts(HoldoutScores):
    """The 0/1 loss on two integer labels {a, b}, by matrix–vector products (module docstring).

    Its scores cost a matrix–vector product on a block in cache, so they are computed in
    passing. Loss rows are the predictions themselves: where two valid rows disagree, exactly
    one of them is wrong, so the disagreements of two predictions are the
    disagreements of their 0/1 losses. The labels are the perfect row.
    """

    scores_in_passing = True

    def __init__(self, scorer: ZeroOneLoss, labels: FloatArray, classes: FloatArray):
        super().__init__(scorer, labels)
        self.low, self.high = float(classes[0]), float(classes[1])
        self.width = self.high - self.low
        self.n = float(labels.size)
        self.wrong_labels = np.where(labels == self.low, self.high, self.low)
        self.labels_signs, self.labels_offset = self.signs_and_offset(labels)

    @staticmethod
    def applies(scorer: Scorer, labels: FloatArray, classes: FloatArray) -> bool:
        """True for the 0/1 loss itself (a subclass may change what it computes) on a label set
        of two integers within ±2²⁰ that holds every label."""
        return (
            type(scorer) is ZeroOneLoss
            and classes.size == 2
            and bool(np.isin(labels, classes).all())
            and bool(np.all(classes == np.round(classes)))
            and bool(np.all(np.abs(classes) <= EXACT_INTEGER_LABELS))
        )

    def signs_and_offset(self, row: FloatArray) -> tuple[FloatArray, float]:
        """s with sᵢ = +1 where rowᵢ = a and −1 where rowᵢ = b, and s·row: a prediction p
        disagrees with ``row`` in (p·s − s·row)/(b − a) places."""
        signs = np.where(row == self.low, 1.0, -1.0)
        return signs, float(signs @ row)

    def disagreements(self, P: FloatArray, signs: FloatArray, offset: float | FloatArray) -> FloatArray:
        """The places where each row of ``P`` disagrees with the row(s) of ``signs_and_offset``
        (a column of ``signs`` per row)."""
        if P.shape[0] == 1 and signs.ndim == 1:
            return np.array([self._disagreements_of_one(P[0], signs, offset)])
        return (P @ signs - offset) / self.width

    def _disagreements_of_one(self, row: FloatArray, signs: FloatArray, offset: float) -> float:
        """``disagreements`` of one submission in Python's float arithmetic (the same operations),
        without numpy's per-call overhead on one-element arrays: sequential attacks submit one
        row at a time."""
        return (row.dot(signs) - offset) / self.width

    def errors(self, P: FloatArray) -> FloatArray:
        """The number of wrong labels in each row of ``P``, as exact floats."""
        return self.disagreements(P, self.labels_signs, self.labels_offset)

    def scores(self, P: FloatArray) -> FloatArray:
        if P.shape[0] == 1:
            return np.array([self._disagreements_of_one(P[0], self.labels_signs, self.labels_offset) / self.n])
        return self.errors(P) / self.n

    def scores_of_valid_row(self, row: FloatArray) -> FloatArray | None:
        """One count of matches with the labels and one with the other label: the row is valid
        when they add up to n, and the second is its error count."""
        wrong = int(np.count_nonzero(row == self.wrong_labels))  # Python's int: numpy's scalar arithmetic is slow
        if int(np.count_nonzero(row == self.labels)) + wrong != row.size:
            return None
        return np.array([wrong / self.n])

    def loss_rows_and_risks(self, P: FloatArray, scores: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        return P, self.scores(P) if scores is None else scores.copy()

    def perfect_loss_row(self) -> FloatArray:
        return self.labels

    def losses(self, loss_row: FloatArray) -> FloatArray:
        return (loss_row != self.labels).astype(float)

    def paired_with(self, best_loss_row: FloatArray) -> Callable[[FloatArray], FloatArray]:
        return PairedDisagreements(self, best_loss_row)

    def paired_sd_each(self, loss_rows: FloatArray, best_loss_rows: FloatArray) -> FloatArray:
        """From exact counts, as :class:`PairedDisagreements`: each row's disagreements with its own
        best, and the difference of their error counts."""
        best_signs = np.where(best_loss_rows == self.low, 1.0, -1.0)
        best_offsets = np.einsum("ij,ij->i", best_signs, best_loss_rows)
        disagreements = (np.einsum("ij,ij->i", loss_rows, best_signs) - best_offsets) / self.width
        differences = self.errors(loss_rows) - self.errors(best_loss_rows)
        return paired_sd_from_counts(disagreements, differences, self.labels.size)


class PairedDisagreements:
    """:meth:`BinaryErrorCounts.paired_with`: the paired sd from the number of places where a
    row disagrees with the best and from the difference of their error counts, both exact
    and from one pass over the rows (``ladderlab.scoring.paired_sd_from_counts``, the bits of
    ``ZeroOneLoss.paired_sd``)."""

    def __init__(self, holdout: BinaryErrorCounts, best: FloatArray):
        self.holdout = holdout
        best_signs, best_offset = holdout.signs_and_offset(best)
        self.signs = np.stack([holdout.labels_signs, best_signs], axis=1)
        self.offsets = np.array([holdout.labels_offset, best_offset])
        self.best_errors = float(holdout.errors(best[None, :])[0])

    def __call__(self, loss_rows: FloatArray) -> FloatArray:
        counts = self.holdout.disagreements(loss_rows, self.signs, self.offsets)
        return paired_sd_from_counts(counts[:, 1], counts[:, 0] - self.best_errors, self.holdout.labels.size)


def holdout_scores(scorer: Scorer, labels: FloatArray, classes: FloatArray) -> HoldoutScores:
    """``scorer`` bound to the holdout ``labels``, for predictions validated against ``classes``."""
    if BinaryErrorCounts.applies(scorer, labels, classes):
        return BinaryErrorCounts(scorer, labels, classes)
    return HoldoutScores(scorer, labels)
