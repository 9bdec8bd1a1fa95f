"""A task plugin: labels from a noisy linear threshold of Gaussian features (docs/writing-a-task.md)."""

from __future__ import annotations

import numpy as np

from ladderlab.params import Interval
from ladderlab.tasks import PublicData, Split, Task


class NoisyThreshold(Task):
    """Binary labels y = 1{x·β + noise > 0} of d Gaussian features, fresh every replication.

    ``n_train`` training rows; a holdout of ``n_public`` public and as many final rows in
    one random order, so that a participant cannot tell which rows are public.
    """

    id = "noisy-threshold"
    reference = "docs/writing-a-task.md (a worked example)"
    task_type = "classification"
    default_scorer = "zero-one"
    _parameter_constraints = {
        "n_train": [Interval(int, 2, None)],
        "n_public": [Interval(int, 2, None)],
        "n_features": [Interval(int, 1, None)],
        "noise": [Interval(float, 0, None)],
    }

    def __init__(self, n_train: int = 500, n_public: int = 500, n_features: int = 5, noise: float = 1.0):
        self.n_train = n_train
        self.n_public = n_public
        self.n_features = n_features
        self.noise = noise

    def data_shape(self) -> tuple[int, int]:
        return self.n_train + 2 * self.n_public, self.n_features + 1

    def split(self, rng: np.random.Generator) -> Split:
        n_holdout = 2 * self.n_public
        X = rng.standard_normal((self.n_train + n_holdout, self.n_features))
        beta = np.ones(self.n_features) / np.sqrt(self.n_features)
        y = (X @ beta + self.noise * rng.standard_normal(X.shape[0]) > 0).astype(float)
        order = rng.permutation(n_holdout)  # holdout row i is drawn row order[i]
        public_rows = np.sort(np.flatnonzero(order < self.n_public))
        final_rows = np.sort(np.flatnonzero(order >= self.n_public))
        X_holdout, y_holdout = X[self.n_train:][order], y[self.n_train:][order]
        public = PublicData(X[: self.n_train], y[: self.n_train], X_holdout, "classification", "zero-one",
                            classes=np.array([0.0, 1.0]))
        return Split(public, public_rows, final_rows, y_holdout)
