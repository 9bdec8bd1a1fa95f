"""Binary segmentation for changes in mean, with cumulative sums (Scott & Knott 1974).

Chaibub Neto et al. locate the last jump of a noisy released-score trace with R's
changepoint package (BinSeg). Two rule sets are offered (docs/decisions.md#changepoints):

- ``rules="textbook"``: greedy binary segmentation with the L2 cost, exactly as
  ``ruptures.Binseg(model="l2", min_size=1, jump=1)``: at each step the split with
  the largest cost reduction over all segments is added (ties: the later index in a
  segment, the earlier segment); with ``penalty``, splits are added while the
  reduction exceeds it.
- ``rules="r"``: R changepoint's BinSeg (``binseg`` in its C code), reproduced to
  the last bit: candidate splits j = 2 … n−3 only, a left segment of at least
  ``min_size + 1`` points, ties to the first index, Q splits found greedily and the
  first ones kept while 2·gain ≥ penalty (gains made non-increasing). ``mbic=True``
  adds log(segment length) to each segment's cost and defaults the penalty to
  3·log n, as R's default MBIC does for a change in mean of unit-variance data.
  Floating point follows R: the prefix sums are R's ``c(0, cumsum(x))``, whose
  running sum is kept in long double and stored as double at each step (on a
  noiseless trace the extra changepoints are decided by gains of order 1e-13, so
  plain double prefix sums choose others); the gain of a split is computed in R's
  order of operations. When no split has a positive gain, R's maximum search stays
  on index 0 and it reports changepoint 0, and then only 0s for the rest of Q (a 0
  in the segment bounds stops the scan); this is reproduced, so a result may hold
  0s, which mean "no changepoint".

A changepoint k is the index at which a new segment starts (ruptures' breakpoints
without the final n; R's cpts are the same numbers).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike


def _segment_costs(s1: np.ndarray, s2: np.ndarray, start: int, stops: np.ndarray) -> np.ndarray:
    """Residual sum of squares of x[start:stop] for every stop, from prefix sums."""
    length = stops - start
    total = s1[stops] - s1[start]
    return (s2[stops] - s2[start]) - total**2 / length


def binary_segmentation(
    signal: ArrayLike,
    n_changepoints: int | None = None,
    penalty: float | None = None,
    min_size: int = 1,
    rules: Literal["textbook", "r"] = "textbook",
    mbic: bool = False,
) -> list[int]:
    """Sorted changepoints of a change in mean of ``signal``.

    Give ``n_changepoints`` (the number wanted; R: Q, the maximum), ``penalty``, or
    with ``rules="r"`` both (Q candidates, kept while 2·gain ≥ penalty).
    """
    x = np.asarray(signal, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"signal must be a vector, got shape {x.shape}")
    if min_size < 1:
        raise ValueError(f"min_size must be ≥ 1, got {min_size}")
    if rules == "textbook":
        if (n_changepoints is None) == (penalty is None):
            raise ValueError("textbook binary segmentation needs exactly one of n_changepoints and penalty")
        return _textbook(x, n_changepoints, penalty, min_size)
    if rules == "r":
        if n_changepoints is None:
            raise ValueError("R's BinSeg needs n_changepoints (its Q)")
        if penalty is None:
            penalty = 3 * math.log(x.size) if mbic else 0.0
        return _r_binseg(x, n_changepoints, penalty, min_size, mbic)
    raise ValueError(f"rules must be 'textbook' or 'r', got {rules!r}")


def _textbook(x: np.ndarray, n_changepoints: int | None, penalty: float | None, min_size: int) -> list[int]:
    n = x.size
    s1 = np.concatenate([[0.0], np.cumsum(x)])
    s2 = np.concatenate([[0.0], np.cumsum(x * x)])
    bounds = [0, n]
    while n_changepoints is None or len(bounds) - 2 < n_changepoints:
        best_gain, best_split = -np.inf, None
        for start, end in zip(bounds[:-1], bounds[1:]):
            splits = np.arange(start + min_size, end - min_size + 1)
            if splits.size == 0:
                continue
            whole = _segment_costs(s1, s2, start, np.array([end]))[0]
            left = _segment_costs(s1, s2, start, splits)
            right = (s2[end] - s2[splits]) - (s1[end] - s1[splits]) ** 2 / (end - splits)
            gains = whole - left - right
            top = np.flatnonzero(gains == gains.max())[-1]
            if gains[top] > best_gain:
                best_gain, best_split = gains[top], int(splits[top])
        if best_split is None or (penalty is not None and not best_gain > penalty):
            break
        bounds = sorted([*bounds, best_split])
    return bounds[1:-1]


def _r_prefix_sums(x: np.ndarray) -> np.ndarray:
    """R's ``c(0, cumsum(x))``: the running sum is accumulated in long double and each
    partial sum stored as a double."""
    return np.concatenate([[0.0], np.cumsum(x.astype(np.longdouble)).astype(float)])


def _r_binseg(x: np.ndarray, q_max: int, penalty: float, min_size: int, mbic: bool) -> list[int]:
    n = x.size
    s1 = _r_prefix_sums(x)
    s2 = _r_prefix_sums(x * x)
    log_length = np.array([0.0] + [math.log(length) for length in range(1, n + 1)])

    def cost(sum1: np.ndarray, sum2: np.ndarray, length: np.ndarray) -> np.ndarray:
        rss = sum2 - (sum1 * sum1) / length
        return rss + log_length[length] if mbic else rss

    tau = [0, n]
    found, gains = [], []
    old_max = 1.7e308
    for _ in range(q_max):
        gain = np.zeros(n)
        if tau[1] > 0:  # a 0 among the bounds ends R's scan: no split is evaluated again
            for start, end in zip(tau[:-1], tau[1:]):
                j = np.arange(max(start + 1, 2), min(end, n - 2))
                j = j[(j - start - 1 >= min_size) & (end - j >= min_size)]
                if j.size:
                    null = -0.5 * cost(s1[end] - s1[start], s2[end] - s2[start], np.array(end - start))
                    left = -0.5 * cost(s1[j] - s1[start], s2[j] - s2[start], j - start)
                    right = -0.5 * cost(s1[end] - s1[j], s2[end] - s2[j], end - j)
                    gain[j] = (left + right) - null
        best = int(np.argmax(gain))
        old_max = min(old_max, float(gain[best]))
        found.append(best)
        gains.append(old_max)
        tau = sorted([*tau, best])
    kept = 0
    while kept < q_max and 2 * gains[kept] >= penalty:
        kept += 1
    return sorted(found[:kept])
