"""Rank as Chatbot Arena reports it: 1 + the number of others whose whole interval lies above.

FastChat's ``elo_analysis.py`` (``report_elo_analysis_results``) ranks model m as
1 + #{m' : q025(m') > q975(m)}, the 2.5 % and 97.5 % bootstrap quantiles of the ratings: a
model is placed below exactly those whose lower bound exceeds its upper bound, so models whose
intervals overlap share a rank. The comparison is strict, as FastChat's.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def interval_rank(lower: ArrayLike, upper: ArrayLike) -> NDArray[np.int64]:
    """Each entry's rank for scores where larger is better: 1 + the number of entries whose
    ``lower`` bound is strictly above its ``upper`` bound."""
    low, high = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if low.shape != high.shape or low.ndim != 1:
        raise ValueError(f"lower and upper must be vectors of one length, got shapes {low.shape} and {high.shape}")
    return (1 + (low[None, :] > high[:, None]).sum(axis=1)).astype(np.int64)
