from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ladderlab.attack import Attack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.label_code import LabelCode
from ladderlab.params import Interval
from ladderlab.tasks import PublicData


class ForcedUpdates(Attack):
    """Forces a Ladder to update again and again, and harvests each update's released loss to boost a block of random labels.

    After the attack that separates Hardt 2017's randomised Ladder from the Ladder ("Climbing a
    shaky ladder", arXiv:1706.02733, §§ on lower bounds): a deterministic Ladder answers about
    1/η statistical queries to precision η, one per update, and a boosting analyst who can make
    it update often learns that many bits of the holdout; noise on the comparisons and releases
    destroys that signal. The paper's attack could not be read; this is the reconstruction of
    ladderlab's literature notes (§1.5, [R]), every detail ours:

    - a side model g (Fisher's linear discriminant on the training data) predicts every holdout row;
      its accuracy a is estimated by 5-fold cross-validation on the training data;
    - the holdout rows are split at random into a steering block A (``steer_fraction``) and an
      attack block B; in round t of k, the first ⌈t·|A|/k⌉ rows of A follow g and the rest its
      opposite, so the public loss falls by (2a − 1)·|A|/(k·N) a round and the Ladder updates
      whenever the fall since its last update passes its step;
    - B carries a fresh uniform random label vector u_t each round;
    - when a release changes, u_t's public error on B is estimated from it as
      (r_t − |A|/N·e_A(t))·N/|B|, e_A(t) the expected error rate of round t's steering;
    - the final prediction is g on A, and on B the majority vote of the u_t whose estimated
      error is below the median of those estimated (ties give 1, as ``boosting``).

    Against a Ladder of step η it overfits B by the information in its updates; against a
    mechanism that releases every score (Kaggle) every round counts. Needs binary labels and a
    task with features that predict them (a side model better than chance): on ``random-labels``
    give ``side_information`` > 0.
    """

    id = "forced-updates"
    reference = "After Hardt 2017, arXiv:1706.02733 (the separating attack; reconstruction)"
    task_types = frozenset({"classification"})
    check_task = ("random-labels", {"n_public": 60, "n_holdout": 180, "side_information": 2.0, "n_train": 120})
    _parameter_constraints = {
        "k": [Interval(int, 1, None)],
        "steer_fraction": [Interval(float, 0, 1, closed="neither")],
    }

    def __init__(self, k: int = 300, steer_fraction: float = 0.5):
        self.k = k
        self.steer_fraction = steer_fraction

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget."""
        return {"k": budget}

    def incompatibility(self, data: PublicData) -> str | None:
        if (why := LabelCode.binary_incompatibility(data, "forced-updates")) is not None:
            return why
        if data.X_train.ndim != 2 or data.X_train.shape[1] == 0 or np.unique(data.y_train).size < 2 \
                or min(np.bincount(data.y_train.astype(int), minlength=2)) < 5:
            return "forced updates need training data with features and at least 5 rows of each class (a side model)"
        return super().incompatibility(data)

    def max_submissions(self, data: PublicData) -> int:
        return self.k

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        code = LabelCode.of(data)
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        X, y = data.X_train, data.y_train.astype(np.int64)
        folds = np.array_split(np.arange(y.size), 5)
        correct = sum(int(np.sum(_discriminant(X[rest], y[rest])(X[fold]) == y[fold]))
                      for fold in folds for rest in [np.setdiff1d(np.arange(y.size), fold)])
        accuracy = correct / y.size
        side = _discriminant(X, y)(data.X_holdout)
        total = board.holdout_size
        order = rng.permutation(total)
        steering, attacked = order[: round(self.steer_fraction * total)], order[round(self.steer_fraction * total):]
        votes, estimates = [], []
        previous = np.nan
        for t in range(1, k + 1):
            following = -(-t * steering.size // k)
            vector = np.empty(total, dtype=np.int64)
            vector[steering] = 1 - side[steering]
            vector[steering[:following]] = side[steering[:following]]
            u = rng.integers(0, 2, attacked.size)
            vector[attacked] = u
            released = float(code.zero_one_loss(board.submit(code.submissions(vector))))
            if released != previous:
                expected_steering = (following * (1 - accuracy) + (steering.size - following) * accuracy) / total
                estimates.append((released - expected_steering) * total / max(attacked.size, 1))
                votes.append(u)
            previous = released
        final = side.copy()
        if votes:
            chosen = np.asarray(estimates) < np.median(estimates)
            kept = np.asarray(votes)[chosen] if chosen.any() else np.asarray(votes)
            final[attacked] = (2 * kept.sum(axis=0) >= kept.shape[0]).astype(np.int64)
        return code.submissions(final)


def _discriminant(X: FloatArray, y: np.ndarray) -> Callable[[FloatArray], np.ndarray]:
    """Fisher's linear discriminant of labels {0, 1} (class means, pooled covariance with a small
    ridge, class priors): a side model in numpy alone, with no random state."""
    if np.unique(y).size < 2:
        majority = int(np.bincount(y, minlength=2).argmax())
        return lambda Z: np.full(Z.shape[0], majority, dtype=np.int64)
    means = [X[y == label].mean(axis=0) for label in (0, 1)]
    centred = np.concatenate([X[y == label] - means[label] for label in (0, 1)])
    covariance = centred.T @ centred / max(1, y.size - 2) + 1e-6 * np.eye(X.shape[1])
    weights = np.linalg.solve(covariance, means[1] - means[0])
    prior = np.log(np.mean(y == 1) / np.mean(y == 0))
    offset = -0.5 * (means[0] + means[1]) @ weights + prior
    return lambda Z: (Z @ weights + offset > 0).astype(np.int64)
