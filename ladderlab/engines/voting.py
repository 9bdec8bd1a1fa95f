"""Weighted plurality votes over labellings: the aggregation step of the boosting attacks.

Blum & Hardt 2015, §5 (binary: the coordinate-wise majority of the vectors that
looked good) and Feldman, Frostig & Hardt 2019 (m classes: each random labelling
votes for its label at every point with a weight that grows with its released
accuracy; the output takes the label with the largest total). The tally is one
``numpy.bincount`` per batch of labellings, O(k·n) whatever the number of classes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


class PluralityVote:
    """Running weighted tallies ``tally[i, l] = Σ_j w_j·1[u_j(i) = l]`` for n points and labels 0 … m−1.

    Ties go to the largest label, so for two labels and unit weights the winner is
    the majority with a tied vote giving 1, as in Ladder.jl's boosting attack.
    """

    def __init__(self, n_points: int, n_labels: int):
        if n_points < 1 or n_labels < 2:
            raise ValueError(f"a vote needs at least 1 point and 2 labels, got {n_points} and {n_labels}")
        self.n_points = n_points
        self.n_labels = n_labels
        self.tally = np.zeros((n_points, n_labels))

    def add(self, labellings: ArrayLike, weights: ArrayLike) -> None:
        """Add the votes of the rows of ``labellings`` (k × n integer labels) with ``weights`` (k)."""
        U = np.asarray(labellings)
        w = np.asarray(weights, dtype=float)
        if U.ndim != 2 or U.shape[1] != self.n_points or w.shape != (U.shape[0],):
            raise ValueError(f"expected k × {self.n_points} labellings and k weights, got {U.shape} and {w.shape}")
        if U.size == 0:
            return
        cells = (U.astype(np.int64) + self.n_labels * np.arange(self.n_points)).ravel()
        self.tally += np.bincount(
            cells, weights=np.repeat(w, self.n_points), minlength=self.n_points * self.n_labels
        ).reshape(self.n_points, self.n_labels)

    def winner(self) -> NDArray[np.int64]:
        """The label with the largest tally at each point (see :func:`plurality`)."""
        return plurality(self.tally)


def plurality(tally: NDArray[np.float64]) -> NDArray[np.int64]:
    """The column with the largest value in each row of an n × m tally, ties to the largest column."""
    return tally.shape[1] - 1 - np.argmax(tally[:, ::-1], axis=1)
