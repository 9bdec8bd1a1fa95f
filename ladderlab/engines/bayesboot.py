"""The engine shared by BayesBootLadder and BayesBootLadderBoot (Chaibub Neto et al. 2016, Algs. 5–6).

A submission replaces the best one when the posterior odds of improvement,
PO = P(H₁|D) / (1 − P(H₁|D)) from B paired Bayesian-bootstrap replicates of
Δs = s(ŷ_t) − s(ŷ_best), reach the threshold PO_thr = (1 − α)/α (docs/decisions.md#bayesian-bootstrap). The
test needs only weighted scores, so it works for any scorer and either orientation.
It is sequential (:func:`ladderlab.engines.bootstrap.improves_sequentially`): replicates are
drawn until the decision of all B is settled, the same decision on the same draws.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from ladderlab.engines.bootstrap import MAX_REPLICATES, improvements_needed, improves_sequentially
from ladderlab.mechanism import FloatArray, Mechanism
from ladderlab.params import Interval, Vector
from ladderlab.scoring import LossScorer, PredictionKind, Scorer
from ladderlab.validation import check_prediction_matrix

MAX_ODDS = 1e6
"""The largest posterior-odds (or Bayes-factor) threshold a mechanism takes: odds of 10⁶ to 1 ask a
bootstrap of up to 10⁶ replicates for more than it can show."""


class BayesBootLadderBase(Mechanism):
    """Abstract Bayesian-bootstrap Ladder; subclasses choose what is released.

    Parameters shared by both algorithms: ``B`` replicates for the test, ``alpha``
    or ``po_threshold`` (which overrides ``alpha``), and ``initial_prediction``
    ŷ₀; when it is None the first submission is accepted unconditionally (docs/decisions.md#bayesboot-initial).
    """

    releases_best = True
    _parameter_constraints = {
        "B": [Interval(int, 1, MAX_REPLICATES)],
        "alpha": [Interval(float, 0, 1, closed="neither"), None],
        "po_threshold": [Interval(float, 0, MAX_ODDS), None],
        "initial_prediction": [Vector(), None],
    }
    version = "4"
    """Version 2: the sequential test draws fewer replicates, so the random stream changed.
    Version 3: it stops within a chunk of the replicate that settles the decision, and
    BayesBootLadderBoot draws its resamples' indices as 16-bit integers: other streams again.
    Version 4: for a per-sample loss the test draws only what the decision depends on
    (:class:`ladderlab.engines.bootstrap.PairedImprovement`): one binomial draw for a 0/1 loss, the
    group sums where d takes few values, no weight of a sample with d = 0."""

    def resampled_values(self, n_public: int, scorer: Scorer | None = None) -> int:
        """The sequential test weighs up to B Bayesian-bootstrap replicates of the n public losses;
        none for a loss of labels, whose differences take a few values
        (:class:`ladderlab.engines.bootstrap.PairedImprovement`: one draw, or one per value)."""
        if isinstance(scorer, LossScorer) and scorer.prediction_kind == PredictionKind.LABEL:
            return 0
        return self.B * n_public

    def _check_params(self) -> None:
        if self.alpha is None and self.po_threshold is None:
            raise ValueError(f"{self.id}: give alpha or po_threshold (both are None)")

    def _start(self) -> None:
        self.po_threshold_ = (
            float(self.po_threshold) if self.po_threshold is not None else (1.0 - self.alpha) / self.alpha
        )
        if self.initial_prediction is None:
            self.best_prediction_: FloatArray | None = None
        else:
            try:
                self.best_prediction_ = check_prediction_matrix(
                    self.initial_prediction, self.n_, self.scorer_.prediction_kind, self.classes_
                )[0].copy()
            except ValueError as error:
                raise ValueError(f"{self.id}: parameter 'initial_prediction': {error}") from None
        self.improvements_needed_ = improvements_needed(self.B, self.po_threshold_)
        self.best_score_ = (
            np.nan
            if self.best_prediction_ is None
            else self.scorer_.score(self.labels_, self.best_prediction_)
        )
        if self.best_prediction_ is not None:
            self._new_best()

    def _release(self, P: FloatArray) -> FloatArray:
        self._scores(P)  # raises for a non-finite score before any state changes
        released = np.empty(P.shape[0])
        for row, prediction in enumerate(P):
            if self._improves(prediction):
                self.best_prediction_ = prediction.copy()
                self.best_score_ = self.scorer_.score(self.labels_, prediction)
                self._new_best()
                self.acceptances_.append(len(self.released_) + row)
            released[row] = self._released_score()
        return released

    def _improves(self, prediction: FloatArray) -> bool:
        if self.best_prediction_ is None:
            return True
        return improves_sequentially(
            self.scorer_, self.labels_, prediction, self.best_prediction_, self.B,
            self.improvements_needed_, self.rng_,
        )

    def _new_best(self) -> None:
        """Called after the best submission changed (to prepare its releases)."""

    @abstractmethod
    def _released_score(self) -> float:
        """The score released after the best has been updated."""
