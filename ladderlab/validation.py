"""Validation of submitted predictions, with errors that name the problem.

Validation happens before a mechanism or a leaderboard changes any state, so a
rejected submission leaves the transcript and the random stream untouched.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.scoring import PredictionKind


def check_prediction_matrix(
    predictions: ArrayLike,
    n: int,
    kind: PredictionKind,
    classes: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Return ``predictions`` as an m × n float matrix, or raise ``ValueError``.

    A single vector of length n is one submission. Rejected: an empty batch, a wrong
    length, a non-numeric dtype, NaN or infinite values, labels outside ``classes``
    (for label predictions) and probabilities outside [0, 1]. For class-probability
    predictions (``PredictionKind.PROBABILITIES``) one submission is an n × m matrix,
    m = the number of ``classes``, and the result is b × n × m; rows must sum to 1.
    """
    if kind is PredictionKind.PROBABILITIES:
        return _check_probability_rows(predictions, n, classes)
    array = np.asarray(predictions)
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.number) or array.dtype == bool
    ):
        raise ValueError(f"predictions must be numeric, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError("predictions must be real numbers, got complex values")
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(
            f"predictions must be a vector of length {n} or a matrix with {n} columns, "
            f"got an array of shape {array.shape}"
        )
    if array.shape[0] == 0:
        raise ValueError("empty batch: no predictions were submitted")
    if array.shape[1] != n:
        raise ValueError(f"predictions have length {array.shape[1]}, the holdout has {n} samples")
    matrix = array.astype(float)
    finite = np.isfinite(matrix)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        raise ValueError(
            f"predictions must be finite: submission {row} has {matrix[row, col]} at position {col}"
        )
    if kind is PredictionKind.LABEL and classes is not None:
        outside = ~np.isin(matrix, classes)
        if outside.any():
            row, col = np.argwhere(outside)[0]
            raise ValueError(
                f"submission {row} has label {matrix[row, col]:g} at position {col}, "
                f"not one of the task's labels {sorted(classes.tolist())}"
            )
    if kind is PredictionKind.PROBABILITY:
        outside = (matrix < 0.0) | (matrix > 1.0)
        if outside.any():
            row, col = np.argwhere(outside)[0]
            raise ValueError(
                f"submission {row} has probability {matrix[row, col]:g} at position {col}, "
                "outside [0, 1]"
            )
    return matrix


ROW_SUM_TOLERANCE = 1e-6


def _check_probability_rows(predictions: ArrayLike, n: int, classes: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """``check_prediction_matrix`` for class-probability rows: b × n × m, finite, in [0, 1], rows summing to 1."""
    if classes is None:
        raise ValueError("class-probability predictions need the task's label set")
    m = len(classes)
    array = np.asarray(predictions)
    if array.dtype == object or not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"predictions must be real numbers, got dtype {array.dtype}")
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3 or array.shape[1:] != (n, m):
        raise ValueError(
            f"class-probability predictions must be an n × m = {n} × {m} matrix or a batch of them "
            f"(b × {n} × {m}), got an array of shape {np.asarray(predictions).shape}"
        )
    if array.shape[0] == 0:
        raise ValueError("empty batch: no predictions were submitted")
    matrix = array.astype(float)
    finite = np.isfinite(matrix)
    if not finite.all():
        row, col, _ = np.argwhere(~finite)[0]
        raise ValueError(f"predictions must be finite: submission {row} has a non-finite probability at position {col}")
    outside = (matrix < 0.0) | (matrix > 1.0)
    if outside.any():
        row, col, label = np.argwhere(outside)[0]
        raise ValueError(
            f"submission {row} has probability {matrix[row, col, label]:g} for class {label} at position {col}, outside [0, 1]"
        )
    off = np.abs(matrix.sum(axis=2) - 1.0) > ROW_SUM_TOLERANCE
    if off.any():
        row, col = np.argwhere(off)[0]
        raise ValueError(
            f"submission {row}: the class probabilities at position {col} sum to {matrix[row, col].sum():.9g}, not 1"
        )
    return matrix
