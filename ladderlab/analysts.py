"""Honest participants that behave like real teams: the natural analysts of Zrnic & Hardt (2019).

Zrnic & Hardt ("Natural Analysts in Adaptive Data Analysis", ICML 2019) model an
analyst as a dynamical system whose inputs are released answers: a *progressive*
analyst forgets old answers geometrically (recency parameter λ), a *conservative*
analyst lets later answers matter less (anchoring exponent p). The paper gives the
model, not a simulator; the participant below is our reconstruction of one, not the
paper's algorithm.

A participant owns a model family: a logistic model on its own ``view`` of the
features (drawn at random, so every team's family has its own population score),
ranked by their training correlation with the label. It improves in two ways:

- from training data only: every ``grow_every`` submissions it adds the next feature
  of its view and refits the anchor θ₀ (ridge-penalised logistic regression);
- from released scores: each batch of ``batch`` submissions probes θ + ρ·u_k around
  its state (u_k random unit directions, SPSA), and the released risks give the
  gradient estimate ĝ = Σ_k (r_k − r̄) u_k / (ρ·batch), r̄ the batch mean (or the
  previous batch's mean for a batch of one). Then
  progressive: g ← λg + (1−λ)ĝ, θ ← θ₀ + λ(θ − θ₀) − step·g (a λ-contraction to θ₀);
  conservative: θ ← θ − step·(t+1)^(−p)·ĝ after t updates.

It never targets single holdout points, and it uses only training data, the
holdout inputs and the released scores. Without features (or training rows) its
model is the intercept alone. Its final prediction is its current θ
without a probe. Labels are thresholded at 1/2 for the 0/1 loss and accuracy;
log loss gets the probability.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import numpy as np

from ladderlab.attack import Attack, FloatArray
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import PublicData

RIDGE = 1.0
NEWTON_STEPS = 25


def fit_logistic(X: FloatArray, y: FloatArray, ridge: float = RIDGE) -> FloatArray:
    """Ridge-penalised logistic regression by Newton's method; coefficients then intercept.

    Minimises Σ log-loss + ridge/2·|w|² (intercept unpenalised); the objective is strongly
    convex, so Newton's method converges from 0.
    """
    design = np.column_stack([X, np.ones(len(y))])
    penalty = np.full(design.shape[1], ridge)
    penalty[-1] = 0.0
    theta = np.zeros(design.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-design @ theta))
        gradient = design.T @ (p - y) + penalty * theta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty) + 1e-9 * np.eye(design.shape[1])
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta


class NaturalAnalyst(Attack):
    """Abstract natural analyst (see the module docstring); subclasses choose the update."""

    task_types = frozenset({"classification"})
    honest: ClassVar[bool] = True
    """An honest participant: competitions count it in the honest utility, and
    ``ladderlab certify`` leaves it out of its attack battery."""
    _parameter_constraints: ClassVar[dict] = {
        "view": [Interval(int, 1, None)],
        "grow_every": [Interval(int, 1, None)],
        "batch": [Interval(int, 1, None)],
        "rho": [Interval(float, 0, None, closed="neither")],
        "step": [Interval(float, 0, None)],
        "submissions": [Interval(int, 0, None)],
    }

    def incompatibility(self, data: PublicData) -> str | None:
        if data.classes is None or set(data.classes.tolist()) != {0.0, 1.0}:
            return "natural analysts need binary labels {0, 1}"
        if get_scorer(data.scorer).prediction_kind is PredictionKind.REAL:
            return f"natural analysts predict labels or probabilities, not real values for {data.scorer!r}"
        return super().incompatibility(data)

    @abstractmethod
    def _update(self, theta: FloatArray, anchor: FloatArray, gradient: FloatArray, updates: int) -> FloatArray:
        """The next state from the current one, the anchor θ₀ and the estimate ĝ."""

    def max_submissions(self, data: PublicData) -> int:
        return self.submissions

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        scorer = get_scorer(data.scorer)
        view = rng.choice(data.X_train.shape[1], size=min(self.view, data.X_train.shape[1]), replace=False)
        X_train, X_holdout = data.X_train[:, view], data.X_holdout[:, view]
        d = len(view)
        if d and len(data.y_train):
            centred = X_train - X_train.mean(axis=0)
            strength = np.abs(centred.T @ (data.y_train - data.y_train.mean())) / (np.linalg.norm(centred, axis=0) + 1e-12)
            ranked = np.argsort(-strength, kind="stable")
            X_train, X_holdout = X_train[:, ranked], X_holdout[:, ranked]

        def anchor_for(active: int) -> FloatArray:
            theta = np.zeros(d + 1)
            fitted = fit_logistic(X_train[:, :active], data.y_train)
            theta[:active], theta[-1] = fitted[:-1], fitted[-1]
            return theta

        def predict(thetas: FloatArray) -> FloatArray:
            logits = thetas[:, :-1] @ X_holdout.T + thetas[:, -1:]
            if scorer.prediction_kind is PredictionKind.LABEL:
                return (logits >= 0).astype(float)
            return 1.0 / (1.0 + np.exp(-logits))

        total = self.submissions if board.remaining is None else min(self.submissions, board.remaining)
        active = min(1, d)
        anchor = anchor_for(active)
        theta, self.memory_ = anchor.copy(), np.zeros(d + 1)
        made, updates, previous = 0, 0, None
        while made < total:
            grown = min(d, 1 + made // self.grow_every)
            if grown > active:
                active, new_anchor = grown, anchor_for(grown)
                theta, anchor = new_anchor + (theta - anchor), new_anchor
            rows = min(self.batch, total - made)
            directions = rng.standard_normal((rows, d + 1))
            directions[:, active:d] = 0.0
            directions /= np.linalg.norm(directions, axis=1, keepdims=True)
            risks = scorer.sign * board.submit_many(predict(theta + self.rho * directions))
            made += rows
            baseline = risks.mean() if rows > 1 else previous
            if baseline is not None:
                estimate = (risks - baseline) @ directions / (self.rho * rows)
                theta = self._update(theta, anchor, estimate, updates)
                updates += 1
            previous = risks.mean()
        return predict(theta[None, :])[0]


class ProgressiveAnalyst(NaturalAnalyst):
    """Update with recency bias λ: g ← λg + (1−λ)ĝ, θ ← θ₀ + λ(θ − θ₀) − step·g."""

    def _update(self, theta: FloatArray, anchor: FloatArray, gradient: FloatArray, updates: int) -> FloatArray:
        self.memory_ = self.lam * self.memory_ + (1 - self.lam) * gradient
        return anchor + self.lam * (theta - anchor) - self.step * self.memory_


class ConservativeAnalyst(NaturalAnalyst):
    """Update with anchoring p: θ ← θ − step·(t+1)^(−p)·ĝ."""

    def _update(self, theta: FloatArray, anchor: FloatArray, gradient: FloatArray, updates: int) -> FloatArray:
        return theta - self.step * (updates + 1) ** (-self.p) * gradient
