"""Validation of submitted predictions, with errors that name the problem.

Validation happens before a mechanism or a leaderboard changes any state, so a
rejected submission leaves the transcript and the random stream untouched. A
float64 matrix is not copied, and the checks run over blocks of rows that stay in
cache, so validating costs a small fraction of scoring.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.scoring import PredictionKind

BLOCK_ELEMENTS = 1 << 17
"""Elements per block of rows checked (and scored, see ``Mechanism.submit_validated``) at once:
1 MiB of float64, the size of this machine's L2 caches together. Measured against 2¹⁵ on
1000 × 4000 batches: 5.1–5.7 against 6.5–7.3 µs per submission for Kaggle (0/1 loss),
7.6–9.3 against 10–20 µs under the squared loss. A row's bits do not depend on it."""


class PredictionError(ValueError):
    """A prediction that fails validation at one value: ``row`` is its submission in the batch
    and ``position`` its holdout position (a server names the holdout id from it)."""

    def __init__(self, message: str, row: int, position: int):
        super().__init__(message)
        self.row = row
        self.position = position


def rows_per_block(n: int) -> int:
    """Rows of length ``n`` in one cache-sized block (at least one)."""
    return max(1, BLOCK_ELEMENTS // max(n, 1))


def check_prediction_matrix(
    predictions: ArrayLike,
    n: int,
    kind: PredictionKind,
    classes: NDArray[np.float64] | None = None,
    each_block: Callable[[NDArray[np.float64]], object] | None = None,
) -> NDArray[np.float64]:
    """Return ``predictions`` as an m × n float matrix, or raise ``ValueError``.

    A single vector of length n is one submission. Rejected: an empty batch, a wrong
    length, a non-numeric dtype, NaN or infinite values, labels outside ``classes``
    (for label predictions) and probabilities outside [0, 1]. For class-probability
    predictions (``PredictionKind.PROBABILITIES``) one submission is an n × m matrix,
    m = the number of ``classes``, and the result is b × n × m; rows must sum to 1.
    ``each_block`` is called on every block of rows, in order, right after it passed,
    while it is in cache (a mechanism scores it there, :meth:`Mechanism.submit_many`).
    """
    if kind is PredictionKind.PROBABILITIES:
        return _check_probability_rows(predictions, n, classes)
    array = np.asarray(predictions)
    if array.dtype != np.float64 and (
        array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool)
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
    matrix = np.ascontiguousarray(array, dtype=np.float64)
    step = rows_per_block(n)
    for start in range(0, matrix.shape[0], step):
        block = matrix[start : start + step]
        _check_block(block, start, kind, classes)
        if each_block is not None:
            each_block(block)
    return matrix


def _check_block(
    block: NDArray[np.float64], first_row: int, kind: PredictionKind, classes: NDArray[np.float64] | None
) -> None:
    """Raise ``ValueError`` naming the first bad value of ``block`` (rows numbered from ``first_row``)."""
    if kind is PredictionKind.LABEL and classes is not None:
        valid = _is_one_of(block, classes)
        if not valid.all():
            _raise_first_invalid(block, valid, first_row, classes)
    elif kind is PredictionKind.PROBABILITY:
        valid = (block >= 0.0) & (block <= 1.0)
        if not valid.all():
            _raise_first_invalid(block, valid, first_row, None)
    elif not np.isfinite(block.sum()) and not np.isfinite(block).all():
        _raise_first_invalid(block, np.isfinite(block), first_row, None)


class QuickRowCheck:
    """A cheap test that a float64 vector is a valid prediction of ``kind``: True only when
    ``check_prediction_matrix`` would accept it (False sends it to the full check and its
    error). A plain object, so that a bound mechanism holding one still pickles."""

    def __init__(self, kind: PredictionKind, classes: NDArray[np.float64] | None):
        self.kind = kind
        self.classes = classes
        self.binary = kind is PredictionKind.LABEL and classes is not None and classes.size == 2
        if self.binary:
            self.low, self.high = float(classes[0]), float(classes[1])

    def __call__(self, row: NDArray[np.float64]) -> bool:
        if self.binary:  # NaN and ±inf equal neither label
            return np.count_nonzero(row == self.low) + np.count_nonzero(row == self.high) == row.size
        if self.kind is PredictionKind.LABEL and self.classes is not None:
            return bool(_is_one_of(row[None, :], self.classes).all())
        if self.kind is PredictionKind.PROBABILITY:
            return bool(row.min() >= 0.0 and row.max() <= 1.0)
        return math.isfinite(row.sum())


def quick_row_check(kind: PredictionKind, classes: NDArray[np.float64] | None) -> Callable[[NDArray[np.float64]], bool]:
    """The :class:`QuickRowCheck` of predictions of ``kind`` against ``classes``."""
    return QuickRowCheck(kind, classes)


def _is_one_of(block: NDArray[np.float64], classes: NDArray[np.float64]) -> NDArray[np.bool_]:
    """``np.isin(block, classes)`` by one comparison per class (task label sets are small)."""
    if classes.size > 8:
        return np.isin(block, classes)
    valid = block == classes[0]
    for label in classes[1:]:
        valid |= block == label
    return valid


def _shown(value: float) -> str:
    """A value as short as it reads (``2``, ``0.5``), but every digit where fewer would name another
    number: a label 1.0000000001 is not the label 1."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def _raise_first_invalid(
    block: NDArray[np.float64], valid: NDArray[np.bool_], first_row: int, classes: NDArray[np.float64] | None
) -> None:
    row, col = np.argwhere(~valid)[0]
    value = block[row, col]
    row, col = int(first_row + row), int(col)
    if not np.isfinite(value):
        raise PredictionError(f"predictions must be finite: submission {row} has {value} at position {col}", row, col)
    if classes is not None:
        raise PredictionError(
            f"submission {row} has label {_shown(value)} at position {col}, "
            f"not one of the task's labels {sorted(classes.tolist())}", row, col
        )
    raise PredictionError(f"submission {row} has probability {_shown(value)} at position {col}, outside [0, 1]", row, col)


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
        raise PredictionError(f"predictions must be finite: submission {row} has a non-finite probability at position {col}",
                              int(row), int(col))
    outside = (matrix < 0.0) | (matrix > 1.0)
    if outside.any():
        row, col, label = np.argwhere(outside)[0]
        raise PredictionError(
            f"submission {row} has probability {_shown(matrix[row, col, label])} for class {label} at position {col}, outside [0, 1]",
            int(row), int(col),
        )
    off = np.abs(matrix.sum(axis=2) - 1.0) > ROW_SUM_TOLERANCE
    if off.any():
        row, col = np.argwhere(off)[0]
        raise PredictionError(
            f"submission {row}: the class probabilities at position {col} sum to {matrix[row, col].sum():.9g}, not 1",
            int(row), int(col),
        )
    return matrix
