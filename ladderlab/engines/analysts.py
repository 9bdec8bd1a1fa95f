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

Many analysts of one kind play as a :class:`~ladderlab.attack.Cohort`
(:class:`AnalystCohort`): their states are arrays, one random stream per member, and the
updates of a batch are array operations across members. Every reduction (a member's mean
risk, its gradient estimate, its logits) is computed for one member at a time, and the
element-wise updates are the same operations whether done for one member or many, so a
member's submissions do not depend on the other members: ``run`` plays a cohort of one.
Anchors are fitted once per distinct prefix of a ranked view (the same fit, reused).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import numpy as np

from ladderlab.attack import Attack, Cohort, FloatArray, IntArray, play_alone
from ladderlab.board import Board
from ladderlab.params import Interval
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import PublicData

RIDGE = 1.0
NEWTON_STEPS = 25
VIEW_CACHE_BYTES = 1 << 28
"""A cohort keeps each member's holdout columns (its ranked view) while they fit in 256 MiB;
later members gather theirs for every batch (the same values)."""


def fit_logistic(X: FloatArray, y: FloatArray, ridge: float = RIDGE) -> FloatArray:
    """Ridge-penalised logistic regression by Newton's method; coefficients then intercept.

    Minimises Σ log-loss + ridge/2·|w|² (intercept unpenalised); the objective is strongly
    convex, so Newton's method converges from 0.
    """
    design = np.column_stack([X, np.ones(len(y))])
    penalty = np.full(design.shape[1], ridge)
    penalty[-1] = 0.0
    ridge_matrix, jitter = np.diag(penalty), 1e-9 * np.eye(design.shape[1])
    theta = np.zeros(design.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-design @ theta))
        gradient = design.T @ (p - y) + penalty * theta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + ridge_matrix + jitter
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
        if not data.binary_labels:
            return "natural analysts need binary labels {0, 1}"
        if get_scorer(data.scorer).prediction_kind is PredictionKind.REAL:
            return f"natural analysts predict labels or probabilities, not real values for {data.scorer!r}"
        return super().incompatibility(data)

    @abstractmethod
    def _update(self, theta: FloatArray, anchor: FloatArray, memory: FloatArray, gradient: FloatArray,
                updates: IntArray) -> tuple[FloatArray, FloatArray]:
        """The next states (rows of ``theta``) and memories from the anchors θ₀, the estimates ĝ and the
        members' update counts: element-wise operations only, so rows do not affect each other."""

    def cohort(self, data: PublicData, rngs: list[np.random.Generator]) -> AnalystCohort:
        return AnalystCohort(self, data, rngs)

    def max_submissions(self, data: PublicData) -> int:
        return self.submissions

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        return play_alone(self.cohort(data, [rng]), board)


class AnalystCohort(Cohort):
    """Natural analysts of one kind and parameters, one random stream each (module docstring)."""

    def __init__(self, analyst: NaturalAnalyst, data: PublicData, rngs: list[np.random.Generator]):
        self.analyst, self.data, self.rngs = analyst, data, rngs
        self.scorer = get_scorer(data.scorer)
        members = len(rngs)
        self.d = d = min(analyst.view, data.X_train.shape[1])
        self.columns = np.zeros((members, d), dtype=np.intp)
        self.active = np.zeros(members, dtype=np.intp)
        self.anchor = np.zeros((members, d + 1))
        self.theta = np.zeros((members, d + 1))
        self.memory = np.zeros((members, d + 1))
        self.made = np.zeros(members, dtype=np.intp)
        self.total = np.zeros(members, dtype=np.intp)
        self.updates = np.zeros(members, dtype=np.intp)
        self.previous = np.full(members, np.nan)
        self.directions: list[FloatArray | None] = [None] * members
        self.fits: dict[tuple[int, ...], FloatArray] = {}
        self.views: dict[int, FloatArray] = {}
        self.view_bytes = 0

    def begin(self, member: int, budget: int | None) -> None:
        analyst, data, rng = self.analyst, self.data, self.rngs[member]
        view = rng.choice(data.X_train.shape[1], size=self.d, replace=False)
        if self.d and len(data.y_train):
            centred = data.X_train[:, view] - data.X_train[:, view].mean(axis=0)
            strength = np.abs(centred.T @ (data.y_train - data.y_train.mean())) / (np.linalg.norm(centred, axis=0) + 1e-12)
            view = view[np.argsort(-strength, kind="stable")]
        self.columns[member] = view
        self.total[member] = analyst.submissions if budget is None else min(analyst.submissions, budget)
        self.active[member] = min(1, self.d)
        self.anchor[member] = self._anchor(member, int(self.active[member]))
        self.theta[member] = self.anchor[member]

    def _anchor(self, member: int, active: int) -> FloatArray:
        """θ₀ fitted on the first ``active`` features of the member's ranked view (fitted once per prefix)."""
        key = tuple(self.columns[member, :active].tolist())
        if key not in self.fits:
            self.fits[key] = fit_logistic(self.data.X_train[:, list(key)], self.data.y_train)
        fitted = self.fits[key]
        theta = np.zeros(self.d + 1)
        theta[:active], theta[-1] = fitted[:-1], fitted[-1]
        return theta

    def _holdout_view(self, member: int) -> FloatArray:
        view = self.views.get(member)
        if view is None:
            view = self.data.X_holdout[:, self.columns[member]]
            if self.view_bytes + view.nbytes <= VIEW_CACHE_BYTES:
                self.views[member] = view
                self.view_bytes += view.nbytes
        return view

    def _predict(self, member: int, thetas: FloatArray) -> FloatArray:
        logits = thetas[:, :-1] @ self._holdout_view(member).T + thetas[:, -1:]
        if self.scorer.prediction_kind is PredictionKind.LABEL:
            return (logits >= 0).astype(float)
        return 1.0 / (1.0 + np.exp(-logits))

    def next_batches(self, members: IntArray) -> IntArray:
        analyst, d = self.analyst, self.d
        rows = np.minimum(analyst.batch, self.total[members] - self.made[members])
        for member, count in zip(members.tolist(), rows.tolist()):
            if count <= 0:
                continue
            grown = min(d, 1 + int(self.made[member]) // analyst.grow_every)
            if grown > self.active[member]:
                new_anchor = self._anchor(member, grown)
                self.theta[member] = new_anchor + (self.theta[member] - self.anchor[member])
                self.anchor[member], self.active[member] = new_anchor, grown
            directions = self.rngs[member].standard_normal((count, d + 1))
            directions[:, int(self.active[member]):d] = 0.0
            directions /= np.linalg.norm(directions, axis=1, keepdims=True)
            self.directions[member] = directions
        return np.maximum(rows, 0)

    def predictions(self, member: int) -> FloatArray:
        return self._predict(member, self.theta[member] + self.analyst.rho * self.directions[member])

    def deliver(self, members: IntArray, released: list[FloatArray]) -> None:
        sign, rho = self.scorer.sign, self.analyst.rho
        updated, estimates = [], []
        for member, scores in zip(members.tolist(), released):
            risks = sign * scores
            rows = risks.size
            self.made[member] += rows
            previous = self.previous[member]
            baseline = risks.mean() if rows > 1 else (None if np.isnan(previous) else previous)
            if baseline is not None:
                updated.append(member)
                estimates.append((risks - baseline) @ self.directions[member] / (rho * rows))
            self.previous[member] = risks.mean()
            self.directions[member] = None
        if updated:
            chosen = np.array(updated)
            self.theta[chosen], self.memory[chosen] = self.analyst._update(
                self.theta[chosen], self.anchor[chosen], self.memory[chosen], np.array(estimates), self.updates[chosen])
            self.updates[chosen] += 1

    def final(self, member: int) -> FloatArray:
        return self._predict(member, self.theta[member][None, :])[0]


class ProgressiveAnalyst(NaturalAnalyst):
    """Update with recency bias λ: g ← λg + (1−λ)ĝ, θ ← θ₀ + λ(θ − θ₀) − step·g."""

    def _update(self, theta: FloatArray, anchor: FloatArray, memory: FloatArray, gradient: FloatArray,
                updates: IntArray) -> tuple[FloatArray, FloatArray]:
        memory = self.lam * memory + (1 - self.lam) * gradient
        return anchor + self.lam * (theta - anchor) - self.step * memory, memory


class ConservativeAnalyst(NaturalAnalyst):
    """Update with anchoring p: θ ← θ − step·(t+1)^(−p)·ĝ."""

    def _update(self, theta: FloatArray, anchor: FloatArray, memory: FloatArray, gradient: FloatArray,
                updates: IntArray) -> tuple[FloatArray, FloatArray]:
        rates = np.array([self.step * (count + 1) ** (-self.p) for count in updates.tolist()])  # Python's pow, as one analyst
        return theta - rates[:, None] * gradient, memory
