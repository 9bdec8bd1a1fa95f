"""Least-squares fits for many candidate models at once (the attacks' inner loop).

Adding one candidate feature x_j to a fixed set S (with intercept) gives, by
Frisch–Waugh–Lovell, the coefficient β_j = ⟨r_j, r_y⟩ / ⟨r_j, r_j⟩, where r_y and
r_j are the residuals of y and x_j on [1, X_S]. The model's prediction on new rows
is the base model's plus β_j times x_j's out-of-sample residual. One least-squares
solve of all candidates on [1, X_S] therefore replaces one regression per
candidate.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def _design(X: FloatArray, features: list[int]) -> FloatArray:
    return np.column_stack([np.ones(X.shape[0]), X[:, features]])


def ols_predictions(X_train: FloatArray, y_train: FloatArray, X_new: FloatArray, features: list[int]) -> FloatArray:
    """Predictions on ``X_new`` of the least-squares fit of y on [1, X[:, features]]."""
    coef, *_ = np.linalg.lstsq(_design(X_train, features), y_train, rcond=None)
    return _design(X_new, features) @ coef


def forward_step_predictions(
    X_train: FloatArray,
    y_train: FloatArray,
    X_new: FloatArray,
    selected: list[int],
    candidates: NDArray[np.int64],
) -> FloatArray:
    """Predictions on ``X_new`` of the fits of y on [1, X_S, x_j], one row per candidate j.

    With ``selected`` empty these are the univariate regressions of Freedman's attack.
    A candidate that is collinear with [1, X_S] on the training rows gets β_j = 0.
    """
    Z, Z_new = _design(X_train, selected), _design(X_new, selected)
    base, *_ = np.linalg.lstsq(Z, y_train, rcond=None)
    r_y = y_train - Z @ base
    C = X_train[:, candidates]
    delta, *_ = np.linalg.lstsq(Z, C, rcond=None)
    R = C - Z @ delta
    norms = np.einsum("ij,ij->j", R, R)
    tolerance = 1e-10 * np.maximum(np.einsum("ij,ij->j", C, C), 1.0)
    beta = np.divide(R.T @ r_y, norms, out=np.zeros(len(candidates)), where=norms > tolerance)
    residual_new = X_new[:, candidates] - Z_new @ delta
    return (Z_new @ base)[None, :] + beta[:, None] * residual_new.T
