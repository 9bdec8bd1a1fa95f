"""The organiser's scores of competition submissions: public, private and population, a wave at a time.

A competition scores the submissions of all its teams on one holdout. :class:`HoldoutScorer`
scores a matrix of whole-holdout predictions (a round's submissions of every team) in
cache-sized blocks of rows, each block once:

- the exact **public** score (what the mechanism is lent, ``Mechanism._scores``) and the exact
  **private** score: for the 0/1 loss on two integer labels, error counts as one product of
  the block with the label signs of the public and of the private rows (exact integers in any
  summation order, :mod:`ladderlab.holdout`); for another per-sample loss the loss of every
  holdout value is computed once and its public and private columns are averaged; a
  whole-vector metric is scored on the gathered columns;
- the **population** score where the task knows p_i = P(y_i = 1 | x_i): the expected score over
  fresh labels at the holdout inputs, mean_i [p_i ℓ(1, ŷ_i) + (1 − p_i) ℓ(0, ŷ_i)]. For the 0/1
  loss that is the closed form (Σ_i p_i + ŷ·(1 − 2p)) / n, one dot product per row (accuracy:
  its complement); for log loss the two losses are the −log terms the observed loss is made
  of, computed once. Otherwise the task's constant population score, or else the private
  score.

Every reduction runs along one row, so a row's scores are the same bits whichever rows share
its block (the guarantee of :meth:`ladderlab.scoring.Scorer.score_many`), and the public and
private scores are those of ``scorer.score_many`` on the gathered columns.
"""

from __future__ import annotations

import math

import numpy as np

from ladderlab.holdout import BinaryErrorCounts, holdout_scores
from ladderlab.mechanism import FloatArray, columns
from ladderlab.scoring import LogLoss, LossScorer, Scorer, get_scorer, require_finite_scores
from ladderlab.tasks import LabelNoiseSplit, Split
from ladderlab.validation import rows_per_block


def population_scores(split: Split, scorer: Scorer, P: FloatArray) -> FloatArray:
    """Population score of each row of whole-holdout predictions ``P`` (module docstring)."""
    return HoldoutScorer(split, scorer).score(P).population


class Scores:
    """The scores of the rows of one matrix: ``public``, ``private``, ``population``, the population
    score on the public rows alone (``population_public``, NaN where the task has no closed form);
    for a per-sample loss also ``public_losses`` (rows × public rows), the loss rows the
    paired-t-test Ladders compare."""

    __slots__ = ("public", "private", "population", "population_public", "public_losses")

    def __init__(self, public: FloatArray, private: FloatArray, population: FloatArray,
                 public_losses: FloatArray | None = None, population_public: FloatArray | None = None):
        self.public, self.private, self.population, self.public_losses = public, private, population, public_losses
        self.population_public = np.full(public.size, np.nan) if population_public is None else population_public

    def part(self, start: int, stop: int) -> Scores:
        """The scores of rows ``start`` to ``stop`` (a row's scores do not depend on its neighbours)."""
        return Scores(self.public[start:stop], self.private[start:stop], self.population[start:stop],
                      None if self.public_losses is None else self.public_losses[start:stop],
                      self.population_public[start:stop])


class HoldoutScorer:
    """Scores whole-holdout predictions on a split's public and private rows (module docstring)."""

    def __init__(self, split: Split, scorer: Scorer | str, classes: FloatArray | None = None):
        self.scorer = get_scorer(scorer)
        self.public_rows, self.final_rows = split.public_rows, split.final_rows
        self.y_holdout = split.y_holdout
        self.n = self.y_holdout.size
        label_set = np.unique(split.y_public if classes is None else classes)
        self.public_holdout = holdout_scores(self.scorer, split.y_public, label_set)
        self.final_holdout = holdout_scores(self.scorer, split.y_final, label_set)
        probabilities = split.holdout_probabilities if isinstance(split, LabelNoiseSplit) else None
        self.probabilities = None if probabilities is None or self.scorer.name not in ("zero-one", "accuracy", "log-loss") \
            else np.asarray(probabilities, dtype=float)
        self.constant_population = None if split.population_score is None else float(split.population_score)
        self.binary_counts = isinstance(self.public_holdout, BinaryErrorCounts) and isinstance(self.final_holdout, BinaryErrorCounts)
        if self.binary_counts:
            self.signs = np.zeros((self.n, 2))
            self.signs[self.public_rows, 0] = self.public_holdout.labels_signs
            self.signs[self.final_rows, 1] = self.final_holdout.labels_signs
            self.offsets = np.array([self.public_holdout.labels_offset, self.final_holdout.labels_offset])
            self.width = self.public_holdout.width
        self.closed_form = self.probabilities is not None and self.scorer.name in ("zero-one", "accuracy")
        self.public_noise_sd = self.private_noise_sd = float("nan")
        if self.closed_form:
            self.error_weights = 1.0 - 2.0 * self.probabilities
            self.error_base = float(np.sum(self.probabilities))
            public_p = self.probabilities[self.public_rows]
            self.public_weights = np.zeros(self.n)
            self.public_weights[self.public_rows] = self.error_weights[self.public_rows]
            self.public_base = float(np.sum(public_p))
            # a fixed submission's public (private) 0/1 loss: a mean of independent Bernoulli errors, each of
            # variance p_i(1 − p_i) whatever the prediction
            variances = self.probabilities * (1.0 - self.probabilities)
            self.public_noise_sd = math.sqrt(float(np.sum(variances[self.public_rows]))) / self.public_rows.size
            self.private_noise_sd = math.sqrt(float(np.sum(variances[self.final_rows]))) / self.final_rows.size

    @property
    def keeps_loss_rows(self) -> bool:
        """True when the loss rows of the public columns are the per-sample losses (a
        :class:`LossScorer` without the 0/1 shortcut, whose loss rows are the predictions)."""
        return isinstance(self.scorer, LossScorer) and not self.binary_counts

    def score(self, P: FloatArray, keep_losses: bool = False) -> Scores:
        """The scores of every row of the validated whole-holdout predictions ``P``; ``keep_losses``
        also returns the public loss rows (for a per-sample loss without the 0/1 shortcut)."""
        step = rows_per_block(self.n)
        parts = [self._score_block(P[start : start + step], keep_losses) for start in range(0, P.shape[0], step)]
        if len(parts) == 1:
            return parts[0]
        losses = [part.public_losses for part in parts]
        public, private, population, population_public = (np.concatenate([getattr(part, name) for part in parts])
                                                          for name in ("public", "private", "population", "population_public"))
        return Scores(public, private, population, np.concatenate(losses) if keep_losses and losses[0] is not None else None,
                      population_public)

    def _score_block(self, block: FloatArray, keep_losses: bool) -> Scores:
        if self.binary_counts:
            counts = (block @ self.signs - self.offsets) / self.width
            public = counts[:, 0] / self.public_holdout.n
            private = counts[:, 1] / self.final_holdout.n
            return Scores(public, private, self._population(block, private), population_public=self._population_public(block))
        if isinstance(self.scorer, LogLoss):
            return self._log_loss_block(block, keep_losses)
        if isinstance(self.scorer, LossScorer):
            with np.errstate(over="ignore", invalid="ignore"):
                losses = self.scorer.loss(self.y_holdout, block)
            return self._loss_scores(block, losses, keep_losses)
        public_block = columns(block, self.public_rows)
        private = self.final_holdout.scores(columns(block, self.final_rows))
        return Scores(self.public_holdout.scores(public_block), private, self._population(block, private),
                      population_public=self._population_public(block))

    def _log_loss_block(self, block: FloatArray, keep_losses: bool) -> Scores:
        """Log loss from its two terms, −log p̂ and −log(1 − p̂), each computed once per value: the
        observed loss picks one (the bits of ``LogLoss.loss``, whose other term is 0) and the
        population score weighs both."""
        clipped = np.clip(block, *self.scorer.probability_limits())  # ε and the declared prediction range, as LogLoss.loss
        if_one, if_zero = -np.log(clipped), -np.log1p(-clipped)
        losses = np.where(self.y_holdout == 1.0, if_one, if_zero)
        scores = self._loss_scores(block, losses, keep_losses, population=False)
        if self.probabilities is not None:
            if_one *= self.probabilities
            if_zero *= 1.0 - self.probabilities
            if_one += if_zero
            scores.population = np.add.reduce(if_one, axis=1) / self.n
        else:
            scores.population = self._population(block, scores.private)
        return scores

    def _loss_scores(self, block: FloatArray, losses: FloatArray, keep_losses: bool, population: bool = True) -> Scores:
        """Public and private means of the per-sample ``losses`` (the bits of ``losses_and_means``
        on the gathered columns)."""
        public_losses = columns(losses, self.public_rows)
        public = require_finite_scores(self.scorer.name, np.add.reduce(public_losses, axis=1) / self.public_rows.size)
        private_losses = columns(losses, self.final_rows)
        private = require_finite_scores(self.scorer.name, np.add.reduce(private_losses, axis=1) / self.final_rows.size)
        return Scores(public, private, self._population(block, private) if population else private,
                      public_losses if keep_losses else None)

    def _population(self, block: FloatArray, private: FloatArray) -> FloatArray:
        if self.closed_form:
            # E[0/1 loss] = Σ p_i + ŷ·(1 − 2p), one dot product per row (a row's bits do not depend on its block)
            errors = np.array([self.error_base + row.dot(self.error_weights) for row in block]) / self.n
            return errors if self.scorer.name == "zero-one" else 1.0 - errors
        if self.constant_population is not None:
            return np.full(block.shape[0], self.constant_population)
        return private.copy()

    def _population_public(self, block: FloatArray) -> FloatArray | None:
        """The population score on the public rows (the closed form's public part), or None."""
        if not self.closed_form:
            return None
        errors = np.array([self.public_base + row.dot(self.public_weights) for row in block]) / self.public_rows.size
        return errors if self.scorer.name == "zero-one" else 1.0 - errors
