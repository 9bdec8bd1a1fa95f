"""Scorers: per-sample losses and whole-vector metrics, each with a weighted form.

Every scorer works on a matrix of predictions ``P`` (m submissions × n samples) and
a label vector ``y`` (n). ``weighted(y, P, W)`` evaluates the metric under each row
of a weight matrix ``W`` (B × n, rows summing to one) for all m predictions at once
and returns a B × m matrix: the Bayesian bootstrap of Chaibub Neto et al. (Methods,
Δs under Dirichlet weights) and the ordinary bootstrap (integer count weights / n)
are both matrix products on it. The unweighted score is the weighted one under the
uniform weight vector, so there is exactly one implementation of each metric.

A :class:`LossScorer` is the mean of a per-sample loss (Chaibub Neto Eq. 1); the
paired-t-test mechanisms need one. A :class:`MetricScorer` is any other function of
weighted sample moments (Pearson, Lin's CCC, ...), usable with the Bayesian-bootstrap
mechanisms.

Bounded scores. Every scorer states the range of its per-sample loss or of its score
(:meth:`Scorer.value_range`); its width B is the unit in which mechanism parameters and
certificates are stated (Blum & Hardt's Theorem 3.1 assumes a loss in [0, 1]). Where the
range depends on the predictions (squared, absolute, RMSE, log loss near 0 or 1, sign
agreement), a declared prediction range bounds it: ``scorer.within((low, high))`` clips
every prediction into [low, high] before scoring (a projection, which never increases a
squared or absolute loss for a label inside the range) and caps a per-sample squared or
absolute loss at B, which binds only for a label outside the range; B then depends on
the declared range alone, never on a label. Without a declared range these scorers are
unbounded (``bound`` is None) and score as they always did.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.naming import unknown_name_error

FloatArray = NDArray[np.float64]


class PredictionKind(Enum):
    """What a scorer accepts as a prediction; the leaderboard validates against it."""

    LABEL = "label"
    """A class label from the task's label set (0/1 loss, accuracy)."""
    PROBABILITY = "probability"
    """A probability in [0, 1] of the positive class (log loss)."""
    REAL = "real"
    """Any finite real number (regression, ranking scores)."""
    PROBABILITIES = "probabilities"
    """A probability vector over the task's m classes for every sample (multiclass log
    loss): one submission is an n × m matrix whose rows sum to 1, a batch is b × n × m."""


class ScoreError(ValueError):
    """A submission whose score is not a finite number (an overflow, or an undefined metric).

    ``row`` is the submission's index in the scored rows; :meth:`in_batch` renumbers it for
    rows that were a block of a larger batch, so that a message names the row of the batch."""

    def __init__(self, name: str, row: int, value: float):
        self.name, self.row, self.value = name, row, value
        why = (
            "overflows: the predictions are too large for this score"
            if math.isinf(value)
            else "is undefined for these predictions (e.g. a correlation of a constant prediction)"
        )
        super().__init__(f"the {name} score of submission {row} is {value}: it {why}; nothing was released")

    def __reduce__(self) -> tuple[type, tuple[str, int, float]]:
        return type(self), (self.name, self.row, self.value)

    def in_batch(self, first_row: int) -> ScoreError:
        """The same error for rows that start at ``first_row`` of a batch."""
        return ScoreError(self.name, self.row + first_row, self.value)


def require_finite_scores(name: str, scores: FloatArray, first_row: int = 0) -> FloatArray:
    """Return ``scores``, or raise :class:`ScoreError` naming the first submission whose
    ``name`` score is infinite (an overflow: predictions too large for this score) or NaN
    (undefined, e.g. a correlation of a constant prediction); ``scores`` are those of the
    rows from ``first_row`` of a batch on."""
    finite = np.isfinite(scores)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise ScoreError(name, first_row + row, float(scores[row]))
    return scores


def scores_by_block(score: Callable[[FloatArray], FloatArray], P: FloatArray, step: int) -> FloatArray:
    """``score`` of every row of ``P``, ``step`` rows at a time (blocks that stay in cache); a
    :class:`ScoreError` names the row of ``P``, not of its block."""
    parts = []
    for start in range(0, P.shape[0], step):
        try:
            parts.append(score(P[start : start + step]))
        except ScoreError as error:
            raise error.in_batch(start) from None
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


ValueRange = tuple[float, float]


@dataclass(frozen=True, kw_only=True)
class Scorer(ABC):
    """A score of predictions against labels; ``greater_is_better`` gives its orientation.

    ``prediction_range``, set by :meth:`within`, is the declared range every prediction is
    clipped into before it is scored (None: no range declared)."""

    name: str
    greater_is_better: bool
    prediction_kind: PredictionKind
    prediction_range: ValueRange | None = None
    binary_labels: ClassVar[bool] = False
    """True for a scorer defined on labels 0 and 1 only (binary log loss, ROC AUC)."""

    def within(self, prediction_range: ValueRange | None) -> Self:
        """This scorer with predictions clipped into ``prediction_range`` = (low, high), or
        unchanged for None; ``ValueError`` naming the range when it is not finite with
        low < high, is declared for label predictions, or leaves [0, 1] for probabilities."""
        if prediction_range is None:
            return self if self.prediction_range is None else dataclasses.replace(self, prediction_range=None)
        low, high = check_prediction_range(prediction_range)
        if self.prediction_kind is PredictionKind.LABEL:
            raise ValueError(f"prediction range {[low, high]}: the {self.name!r} scorer takes class labels, "
                             "which have no range to clip into")
        if self.prediction_kind is not PredictionKind.REAL and not 0.0 <= low < high <= 1.0:
            raise ValueError(f"prediction range {[low, high]}: the {self.name!r} scorer takes probabilities, "
                             "so the range must lie within [0, 1]")
        return dataclasses.replace(self, prediction_range=(low, high))

    def value_range(self, n_classes: int | None = None) -> ValueRange | None:
        """The range [low, high] of the per-sample loss (a :class:`LossScorer`) or of the score,
        under the declared prediction range; None where it is unbounded. ``n_classes``: the
        number of classes, for scorers whose range depends on it."""
        return None

    def bound(self, n_classes: int | None = None) -> float | None:
        """B, the width of :meth:`value_range`: the unit of mechanism parameters, leaderboard
        errors and Δ in a certificate (1 for the 0/1 loss and accuracy); None when unbounded."""
        value_range = self.value_range(n_classes)
        return None if value_range is None else value_range[1] - value_range[0]

    def _clipped(self, P: FloatArray) -> FloatArray:
        """``P`` clipped into the declared prediction range (``P`` itself when none is declared)."""
        return P if self.prediction_range is None else np.clip(P, *self.prediction_range)

    def _range_width(self) -> float:
        low, high = self.prediction_range
        return high - low

    @abstractmethod
    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        """Scores of every row of ``P`` (m × n) under every weight row of ``W`` (B × n): B × m."""

    def weighted_by_counts(self, y: FloatArray, P: FloatArray, C: FloatArray) -> FloatArray:
        """``weighted`` under the rows of ``C`` normalised to sum to one (bootstrap counts,
        or standard exponentials for the Bayesian bootstrap): B × m. Scorers built on
        weighted moments divide the moments instead of the B × n matrix."""
        return self.weighted(y, P, C / C.sum(axis=1, keepdims=True))

    def by_counts(self, y: FloatArray, P: FloatArray) -> Callable[[FloatArray], FloatArray]:
        """``weighted_by_counts`` for fixed ``y`` and ``P``, as a function of ``C``: what does not
        depend on the weights (a loss matrix, a moment matrix) is computed once, for callers
        that evaluate many weight matrices against the same predictions. The function pickles
        (a bound mechanism keeps one)."""
        return functools.partial(self.weighted_by_counts, y, P)

    def on_resamples(self, y: FloatArray, P: FloatArray, counts: FloatArray) -> FloatArray:
        """Scores of every row of ``P`` on every bootstrap resample: B × m.

        ``counts`` (B × n) says how often each sample was drawn in each resample (rows
        sum to n); the result is the score of the resampled (ŷ, y) pairs, duplicates
        included. For a function of weighted moments that is the weighted score under the
        normalised counts, computed directly (not through a scorer's faster
        :meth:`weighted_by_counts`, whose one-product moments round differently when a
        prediction equals the labels, and sage's reference comparison is exact); a rank
        metric overrides this, since duplicates change the ranks.
        """
        return Scorer.weighted_by_counts(self, y, P, counts)

    def score_many(self, y: ArrayLike, P: ArrayLike) -> FloatArray:
        """Unweighted scores of the m rows of ``P``: a vector of length m; :class:`ScoreError`
        when one of them is not finite.

        Each row is weighted on its own: a BLAS product over several rows may sum each of
        them in a different order, and a row's score, released or recorded, must not depend
        on the rows that happen to share its batch."""
        y = np.asarray(y, dtype=float)
        P = np.atleast_2d(np.asarray(P, dtype=float))
        uniform = np.full((1, y.shape[0]), 1.0 / y.shape[0])
        with np.errstate(over="ignore", invalid="ignore"):
            scores = np.array([self.weighted(y, P[row : row + 1], uniform)[0, 0] for row in range(P.shape[0])])
        return require_finite_scores(self.name, scores)

    def score(self, y: ArrayLike, prediction: ArrayLike) -> float:
        """Unweighted score of one prediction vector."""
        return float(self.score_many(y, np.asarray(prediction, dtype=float)[None, :])[0])

    @property
    def sign(self) -> float:
        """+1 when smaller is better, −1 when larger is better: ``sign * score`` is a risk."""
        return -1.0 if self.greater_is_better else 1.0


@dataclass(frozen=True, kw_only=True)
class LossScorer(Scorer):
    """The mean of a per-sample loss ℓ(ŷᵢ, yᵢ) (Chaibub Neto Eq. 1): smaller is better."""

    greater_is_better: bool = False

    @abstractmethod
    def loss(self, y: FloatArray, P: FloatArray) -> FloatArray:
        """Per-sample losses of every row of ``P``: same shape as ``P``."""

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        return W @ self.loss(y, P).T

    def weighted_by_counts(self, y: FloatArray, P: FloatArray, C: FloatArray) -> FloatArray:
        return self.by_counts(y, P)(C)

    def by_counts(self, y: FloatArray, P: FloatArray) -> Callable[[FloatArray], FloatArray]:
        return functools.partial(_mean_losses_by_counts, self.loss(y, P).T)

    def score_many(self, y: ArrayLike, P: ArrayLike) -> FloatArray:
        return self.losses_and_means(*_as_float_arrays(y, P))[1]

    def losses_and_means(self, y: FloatArray, P: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The per-sample losses of the rows of ``P`` and their means, with the bits of
        ``loss(y, P).mean(axis=1)``; :class:`ScoreError` for a mean that is not finite."""
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is a ScoreError just below
            losses = self.loss(y, P)
            means = np.add.reduce(losses, axis=1) / y.shape[0]
        if not np.isfinite(means).all():
            require_finite_scores(self.name, means)
        return losses, means

    def paired_sd(self, losses: FloatArray, best_loss: FloatArray) -> FloatArray:
        """The standard deviation (ddof 1) of each row of ``losses − best_loss``: the paired
        t-test's (Chaibub Neto et al. 2016, Eq. 2), with the bits of ``np.std``."""
        return paired_sd(losses, best_loss)


def check_prediction_range(prediction_range: object) -> ValueRange:
    """(low, high) as floats, or ``ValueError`` naming the value unless it is two finite
    numbers with low < high."""
    try:
        low, high = (float(value) for value in prediction_range)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise ValueError(f"a prediction range is two numbers [low, high], got {prediction_range!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"a prediction range needs finite low < high, got {[low, high]}")
    return low, high


def _row_counts(flags: NDArray[np.bool_]) -> NDArray[np.intp]:
    """The number of True values in each row (numpy counts one row several times faster without an axis)."""
    if flags.shape[0] == 1:
        return np.array([np.count_nonzero(flags[0])])
    return np.count_nonzero(flags, axis=1)


def _row_means(flags: NDArray[np.bool_]) -> FloatArray:
    """The share of True values in each row: a count over n, the bits of the mean of 0/1 floats."""
    return _row_counts(flags) / flags.shape[1]


def paired_sd(losses: FloatArray, best_loss: FloatArray) -> FloatArray:
    """``np.std(losses - best_loss, axis=1, ddof=1)``, the same operations in place, without
    its per-call overhead (half the cost of a t-test Ladder's submission at n = 4000)."""
    differences = losses - best_loss
    mean = np.add.reduce(differences, axis=1, keepdims=True)
    mean /= differences.shape[1]
    differences -= mean
    np.multiply(differences, differences, out=differences)
    return np.sqrt(np.add.reduce(differences, axis=1) / (differences.shape[1] - 1))


def paired_sd_from_counts(disagreements: ArrayLike, differences: FloatArray, n: int) -> FloatArray:
    """The sd (ddof 1) of n paired differences of 0/1 losses from exact counts: the number of
    places where the losses differ (each difference ±1 there, 0 elsewhere) and the sum of
    the differences, so (n − 1)·var = #disagreements − (Σ differences)²/n."""
    return np.sqrt((disagreements - differences * differences / n) / (n - 1))


def _as_float_arrays(y: ArrayLike, P: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``y`` and ``P`` as float arrays, P with one row per submission (no copy when they are already)."""
    if type(P) is np.ndarray and P.ndim == 2 and P.dtype == np.float64 and type(y) is np.ndarray:
        return y, P
    return np.asarray(y, dtype=float), np.atleast_2d(np.asarray(P, dtype=float))


def _mean_losses_by_counts(losses: FloatArray, C: FloatArray) -> FloatArray:
    """The mean losses (the columns of ``losses``, n × m) under the normalised rows of ``C``."""
    return (C @ losses) / C.sum(axis=1)[:, None]


@dataclass(frozen=True, kw_only=True)
class ZeroOneLoss(LossScorer):
    """Classification error: ℓ = 1{ŷ ≠ y} (Blum & Hardt §2)."""

    name: str = "zero-one"
    prediction_kind: PredictionKind = PredictionKind.LABEL

    def value_range(self, n_classes: int | None = None) -> ValueRange:
        return 0.0, 1.0

    def loss(self, y: FloatArray, P: FloatArray) -> FloatArray:
        return (P != y).astype(float)

    def score_many(self, y: ArrayLike, P: ArrayLike) -> FloatArray:
        y, P = _as_float_arrays(y, P)
        return _row_means(P != y)  # no float losses needed, and an error count over n is always finite

    def losses_and_means(self, y: FloatArray, P: FloatArray) -> tuple[FloatArray, FloatArray]:
        # a sum of 0/1 values is an exact integer in any order: counting gives the same bits
        errors = P != y
        return errors.astype(float), _row_means(errors)

    def paired_sd(self, losses: FloatArray, best_loss: FloatArray) -> FloatArray:
        """From counts: the differences of two 0/1 loss vectors are ±1 where they disagree and 0
        elsewhere, so (n − 1)·var = #disagreements − (Σ differences)²/n, every sum an exact
        integer. The same statistic as ``np.std``, rounded once at the end instead of at
        every step (the Ladders' tie tolerance absorbs the last-bit difference)."""
        differences = np.add.reduce(losses, axis=1) - np.add.reduce(best_loss)
        return paired_sd_from_counts(_row_counts(losses != best_loss), differences, best_loss.size)


@dataclass(frozen=True, kw_only=True)
class SquaredLoss(LossScorer):
    """Squared error ℓ = (ŷ − y)²; its mean is the MSE of Chaibub Neto."""

    name: str = "squared"
    prediction_kind: PredictionKind = PredictionKind.REAL

    def value_range(self, n_classes: int | None = None) -> ValueRange | None:
        return None if self.prediction_range is None else (0.0, self._range_width() ** 2)

    def loss(self, y: FloatArray, P: FloatArray) -> FloatArray:
        losses = (self._clipped(P) - y) ** 2
        if self.prediction_range is not None:  # binds only where a label lies outside the range
            np.minimum(losses, self._range_width() ** 2, out=losses)
        return losses


@dataclass(frozen=True, kw_only=True)
class AbsoluteLoss(LossScorer):
    """Absolute error ℓ = |ŷ − y|; its mean is the MAE."""

    name: str = "absolute"
    prediction_kind: PredictionKind = PredictionKind.REAL

    def value_range(self, n_classes: int | None = None) -> ValueRange | None:
        return None if self.prediction_range is None else (0.0, self._range_width())

    def loss(self, y: FloatArray, P: FloatArray) -> FloatArray:
        losses = np.abs(self._clipped(P) - y)
        if self.prediction_range is not None:  # binds only where a label lies outside the range
            np.minimum(losses, self._range_width(), out=losses)
        return losses


@dataclass(frozen=True, kw_only=True)
class LogLoss(LossScorer):
    """Binary cross-entropy of a probability clipped to [ε, 1 − ε], and into the declared
    prediction range [p₀, p₁]: the loss then lies between −log max(p₁, 1 − p₀) and
    −log min(p₀, 1 − p₁). Without a declared range it is unbounded (up to −log ε = 34.5)."""

    name: str = "log-loss"
    prediction_kind: PredictionKind = PredictionKind.PROBABILITY
    eps: float = 1e-15
    binary_labels: ClassVar[bool] = True

    def probability_limits(self) -> ValueRange:
        """The interval probabilities are clipped into: [ε, 1 − ε] within the declared range."""
        low, high = self.prediction_range or (0.0, 1.0)
        return max(low, self.eps), min(high, 1.0 - self.eps)

    def value_range(self, n_classes: int | None = None) -> ValueRange | None:
        if self.prediction_range is None:
            return None
        low, high = self.probability_limits()
        return -math.log(max(high, 1.0 - low)), -math.log(min(low, 1.0 - high))

    def loss(self, y: FloatArray, P: FloatArray) -> FloatArray:
        p = np.clip(P, *self.probability_limits())
        return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


@dataclass(frozen=True, kw_only=True)
class MulticlassLogLoss(LossScorer):
    """Multiclass cross-entropy ℓ = −log p(yᵢ) of class-probability rows clipped to [ε, 1 − ε]
    (and into the declared prediction range [p₀, p₁]) and renormalised, as Kaggle scores
    multi-class log loss; labels are the column indices 0 … m − 1. Under a declared range
    the loss lies in [log(p₁ + (m − 1)p₀) − log p₁, log(p₀ + (m − 1)p₁) − log p₀]."""

    name: str = "multiclass-log-loss"
    prediction_kind: PredictionKind = PredictionKind.PROBABILITIES
    eps: float = 1e-15

    def probability_limits(self) -> ValueRange:
        """The interval probabilities are clipped into: [ε, 1 − ε] within the declared range."""
        low, high = self.prediction_range or (0.0, 1.0)
        return max(low, self.eps), min(high, 1.0 - self.eps)

    def value_range(self, n_classes: int | None = None) -> ValueRange | None:
        if self.prediction_range is None or n_classes is None:
            return None
        low, high = self.probability_limits()
        others = n_classes - 1
        return math.log(high + others * low) - math.log(high), math.log(low + others * high) - math.log(low)

    def loss(self, y: FloatArray, P: FloatArray) -> FloatArray:
        p = np.clip(P, *self.probability_limits())
        picked = np.take_along_axis(p, y.astype(np.int64)[None, :, None], axis=2)[:, :, 0]
        return np.log(p.sum(axis=2)) - np.log(picked)


@dataclass(frozen=True, kw_only=True)
class MetricScorer(Scorer):
    """A whole-vector metric, computed from weighted moments."""


@dataclass(frozen=True, kw_only=True)
class RootMeanSquaredError(MetricScorer):
    """The square root of the mean squared loss (its per-sample losses bounded like ``squared``'s)."""

    name: str = "rmse"
    greater_is_better: bool = False
    prediction_kind: PredictionKind = PredictionKind.REAL

    def value_range(self, n_classes: int | None = None) -> ValueRange | None:
        return None if self.prediction_range is None else (0.0, self._range_width())

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        return np.sqrt(W @ SquaredLoss(prediction_range=self.prediction_range).loss(y, P).T)


@dataclass(frozen=True, kw_only=True)
class Accuracy(MetricScorer):
    """Fraction of correct labels; 1 − the 0/1 loss, so larger is better."""

    name: str = "accuracy"
    greater_is_better: bool = True
    prediction_kind: PredictionKind = PredictionKind.LABEL

    def value_range(self, n_classes: int | None = None) -> ValueRange:
        return 0.0, 1.0

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        return W @ (P == y).astype(float).T


def _weighted_moments(
    y: FloatArray, P: FloatArray, W: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Weighted means, variances and covariance of (y, ŷ) for all B × m pairs.

    Returns ``mean_y`` (B × 1), ``mean_p`` (B × m), ``var_y`` (B × 1), ``var_p`` and
    ``cov`` (B × m), all population (weights-sum-to-one) moments.
    """
    mean_y = (W @ y)[:, None]
    var_y = (W @ (y * y))[:, None] - mean_y**2
    mean_p = W @ P.T
    var_p = W @ (P * P).T - mean_p**2
    cov = W @ (P * y).T - mean_y * mean_p
    return mean_y, mean_p, var_y, var_p, cov


class MomentsByCounts:
    """``_weighted_moments`` under the normalised rows of a count matrix C, as one product C·M
    with the n × (3 + 3m) moment matrix M = [1, y, y², ŷ, ŷ², ŷy], built once for (y, P), and
    a division by the row totals: C is read once, and never normalised."""

    def __init__(self, y: FloatArray, P: FloatArray):
        m = P.shape[0]
        self.m = m
        self.M = np.empty((y.size, 3 + 3 * m))
        self.M[:, 0] = 1.0
        self.M[:, 1] = y
        self.M[:, 2] = y * y
        self.M[:, 3 : 3 + m] = P.T
        self.M[:, 3 + m : 3 + 2 * m] = (P * P).T
        self.M[:, 3 + 2 * m :] = (P * y).T

    def __call__(self, C: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
        m = self.m
        R = C @ self.M
        R[:, 1:] /= R[:, :1]
        mean_y, mean_p = R[:, 1:2], R[:, 3 : 3 + m]
        var_y = R[:, 2:3] - mean_y**2
        var_p = R[:, 3 + m : 3 + 2 * m] - mean_p**2
        cov = R[:, 3 + 2 * m :] - mean_y * mean_p
        return mean_y, mean_p, var_y, var_p, cov


@dataclass(frozen=True, kw_only=True)
class MomentMetric(MetricScorer):
    """A function of the weighted means, variances and covariance of (y, ŷ) (``_from_moments``),
    a correlation in [−1, 1] whatever the predictions."""

    def value_range(self, n_classes: int | None = None) -> ValueRange:
        return -1.0, 1.0

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        P = self._clipped(P)
        return self._from_moments(*_weighted_moments(y, P, W))

    def weighted_by_counts(self, y: FloatArray, P: FloatArray, C: FloatArray) -> FloatArray:
        return self.by_counts(y, P)(C)

    def by_counts(self, y: FloatArray, P: FloatArray) -> Callable[[FloatArray], FloatArray]:
        P = self._clipped(P)
        return functools.partial(self._by_moments, MomentsByCounts(y, P))

    def _by_moments(self, moments: MomentsByCounts, C: FloatArray) -> FloatArray:
        return self._from_moments(*moments(C))

    @staticmethod
    @abstractmethod
    def _from_moments(mean_y, mean_p, var_y, var_p, cov) -> FloatArray:
        """The metric from the moments of :func:`_weighted_moments`."""


@dataclass(frozen=True, kw_only=True)
class PearsonCorrelation(MomentMetric):
    """Pearson's r; weighted form as in Chaibub Neto, Methods (ΔCOR)."""

    name: str = "pearson"
    greater_is_better: bool = True
    prediction_kind: PredictionKind = PredictionKind.REAL

    @staticmethod
    def _from_moments(mean_y, mean_p, var_y, var_p, cov) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return cov / np.sqrt(var_y * var_p)


def _ranks(y: FloatArray, P: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Mid-ranks of ``y`` and of each row of ``P``."""
    from scipy.stats import rankdata  # imported here: scipy.stats is slow to import

    return rankdata(y), rankdata(P, axis=1)


@dataclass(frozen=True, kw_only=True)
class SpearmanCorrelation(MetricScorer):
    """Spearman's ρ: Pearson's r of mid-ranks.

    The weighted form ranks once, unweighted, and weights the Pearson moments of the
    ranks; with uniform weights it is exactly Spearman's ρ.
    """

    name: str = "spearman"
    greater_is_better: bool = True
    prediction_kind: PredictionKind = PredictionKind.REAL

    def value_range(self, n_classes: int | None = None) -> ValueRange:
        return -1.0, 1.0

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        P = self._clipped(P)
        return PEARSON.weighted(*_ranks(y, P), W)

    def weighted_by_counts(self, y: FloatArray, P: FloatArray, C: FloatArray) -> FloatArray:
        return self.by_counts(y, P)(C)

    def by_counts(self, y: FloatArray, P: FloatArray) -> Callable[[FloatArray], FloatArray]:
        P = self._clipped(P)
        return PEARSON.by_counts(*_ranks(y, P))

    def on_resamples(self, y: FloatArray, P: FloatArray, counts: FloatArray) -> FloatArray:
        """Spearman's ρ of each resample, re-ranked as the resampled data would be.

        A resample's mid-rank of sample i is (copies of smaller values) + (copies of
        equal values + 1)/2, so ties from duplicates count as they do in
        ``cor(..., method = "spearman")`` on the resampled rows; then Pearson's r of
        the two rank vectors under the counts.
        """
        P = self._clipped(P)
        weights = counts / counts.sum(axis=1, keepdims=True)
        rank_y = _resample_midranks(y, counts)
        out = np.empty((counts.shape[0], P.shape[0]))
        for j, p in enumerate(P):
            out[:, j] = _weighted_row_pearson(rank_y, _resample_midranks(p, counts), weights)
        return out


def _resample_midranks(values: FloatArray, counts: FloatArray) -> FloatArray:
    """B × n: the mid-rank each sample would have among the rows of each resample (by counts)."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    starts_group = np.r_[True, sorted_values[1:] != sorted_values[:-1]]
    ties = not starts_group.all()
    in_group = counts[:, order]
    if ties:
        in_group = np.add.reduceat(in_group, np.flatnonzero(starts_group), axis=1)
    group_ranks = np.cumsum(in_group, axis=1) - in_group + (in_group + 1.0) / 2.0
    ranks = np.empty_like(counts, dtype=float)
    ranks[:, order] = group_ranks[:, np.cumsum(starts_group) - 1] if ties else group_ranks
    return ranks


def _weighted_row_pearson(a: FloatArray, b: FloatArray, weights: FloatArray) -> FloatArray:
    """Pearson's r of rows a_j and b_j under weight row j (all B × n): a vector of B."""
    mean_a = (weights * a).sum(axis=1, keepdims=True)
    mean_b = (weights * b).sum(axis=1, keepdims=True)
    da, db = a - mean_a, b - mean_b
    cov = (weights * da * db).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return cov / np.sqrt((weights * da * da).sum(axis=1) * (weights * db * db).sum(axis=1))


@dataclass(frozen=True, kw_only=True)
class ConcordanceCorrelation(MomentMetric):
    """Lin's concordance correlation coefficient (Lin 1989; Chaibub Neto Suppl. S2)."""

    name: str = "ccc"
    greater_is_better: bool = True
    prediction_kind: PredictionKind = PredictionKind.REAL

    @staticmethod
    def _from_moments(mean_y, mean_p, var_y, var_p, cov) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return 2.0 * cov / (var_y + var_p + (mean_y - mean_p) ** 2)


@dataclass(frozen=True, kw_only=True)
class RocAuc(MetricScorer):
    """Area under the ROC curve of scores for binary labels {0, 1}, ties counted half.

    Weighted form: AUC = Σ_{i pos, j neg} wᵢ wⱼ (1{sᵢ > sⱼ} + ½·1{sᵢ = sⱼ}) / (W₊ W₋).
    Each prediction is sorted once; the weight of negatives below each tie group is a
    cumulative sum over the sorted weight matrix, so all B weight rows cost O(B·n).
    """

    name: str = "roc-auc"
    greater_is_better: bool = True
    prediction_kind: PredictionKind = PredictionKind.REAL
    binary_labels: ClassVar[bool] = True

    def value_range(self, n_classes: int | None = None) -> ValueRange:
        return 0.0, 1.0

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        P = self._clipped(P)
        positive = y == 1
        out = np.empty((W.shape[0], P.shape[0]))
        w_pos_total = W @ positive
        w_neg_total = W @ ~positive
        for j, p in enumerate(P):
            order = np.argsort(p, kind="stable")
            sorted_p = p[order]
            group_starts = np.flatnonzero(np.r_[True, sorted_p[1:] != sorted_p[:-1]])
            Ws = W[:, order]
            neg_w = Ws * ~positive[order]
            pos_w = Ws * positive[order]
            neg_in_group = np.add.reduceat(neg_w, group_starts, axis=1)
            pos_in_group = np.add.reduceat(pos_w, group_starts, axis=1)
            neg_below_group = np.cumsum(neg_in_group, axis=1) - neg_in_group
            pairs = (pos_in_group * (neg_below_group + 0.5 * neg_in_group)).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, j] = pairs / (w_pos_total * w_neg_total)
        return out


@dataclass(frozen=True, kw_only=True)
class SignAgreement(MetricScorer):
    """Accuracy of ±1 predictions against 0/1 labels, extended linearly to real predictions.

    The mean of (1 + ŷᵢ·sᵢ)/2 with sᵢ = 2yᵢ − 1 ∈ {−1, +1}: for ŷ ∈ {−1, +1} it is the
    accuracy (ŷ = 0 counts one half), for a feature column x it is (1 + c)/2 with c
    the correlation statistic mean(x·s) of Dwork et al. 2015 (Science), so one
    leaderboard answers both the analyst's correlation queries and its accuracy report.
    Under a declared range with M = max(|low|, |high|) each sample's term lies in
    [(1 − M)/2, (1 + M)/2]: B = M, 1 for the range [−1, 1].
    """

    name: str = "sign-agreement"
    greater_is_better: bool = True
    prediction_kind: PredictionKind = PredictionKind.REAL

    def value_range(self, n_classes: int | None = None) -> ValueRange | None:
        if self.prediction_range is None:
            return None
        largest = max(abs(value) for value in self.prediction_range)
        return (1.0 - largest) / 2.0, (1.0 + largest) / 2.0

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        return 0.5 + 0.5 * (W @ (self._clipped(P) * (2.0 * y - 1.0)).T)


PEARSON = PearsonCorrelation()

SCORERS: dict[str, Scorer] = {
    s.name: s
    for s in (
        ZeroOneLoss(),
        SquaredLoss(),
        AbsoluteLoss(),
        LogLoss(),
        MulticlassLogLoss(),
        RootMeanSquaredError(),
        Accuracy(),
        PEARSON,
        SpearmanCorrelation(),
        ConcordanceCorrelation(),
        RocAuc(),
        SignAgreement(),
    )
}
ALIASES: dict[str, str] = {"mse": "squared", "mae": "absolute", "error": "zero-one"}


def scorer_option(name: str, option: str = "--scorer") -> Scorer:
    """:func:`get_scorer`, with an unknown name's error naming the ``option`` that gave it."""
    try:
        return get_scorer(name)
    except ValueError as error:
        raise ValueError(f"{option}: {error}") from None


def get_scorer(scorer: str | Scorer) -> Scorer:
    """The scorer with this name (or alias); a scorer instance is returned as it is."""
    if isinstance(scorer, Scorer):
        return scorer
    name = ALIASES.get(scorer, scorer)
    if name in SCORERS:
        return SCORERS[name]
    raise unknown_name_error("scorer", scorer, [*SCORERS, *ALIASES])
