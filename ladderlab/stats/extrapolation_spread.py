"""How far apart the extrapolation methods' predictions are, and whether sampling explains it.

With k observed classes the outscored counts V ∈ {0, …, k − 1} fix the moments E[U^t] of the
conditional accuracy U only for t ≤ k − 1 (Zheng, Achanta & Benjamini, arXiv:1606.05228,
Theorems 3.1–3.2); the accuracy at K > k classes is E[U^{K−1}], which depends on the mass of U
near 1 that those moments pin down only coarsely. Each method fills the gap with its own
assumption (EXP a mixture of exponentials, CONS a non-decreasing density, MPLE the likeliest
histogram, HD a Gaussian signal), so their predictions can differ by more than their sampling
error. These functions state the spread, and with bootstrap intervals
(:func:`ladderlab.stats.extrapolation.bootstrap_accuracies`) whether it exceeds sampling error.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

LEVEL = 0.95


def interval(resampled: ArrayLike) -> dict[str, Any]:
    """The percentile interval at :data:`LEVEL` of a prediction's bootstrap resamples (NaN: failed)."""
    values = np.asarray(resampled, dtype=float)
    kept = values[~np.isnan(values)]
    tails = 100 * (1 - LEVEL) / 2
    bounds = [float(bound) for bound in np.percentile(kept, [tails, 100 - tails])] if kept.size else None
    return {"resamples": int(values.size), "failed": int(values.size - kept.size), "interval": bounds}


def verdict(predictions: dict[str, dict[str, Any]], k: int, K: int, bootstrap: int | None) -> list[str]:
    """Lines that say how far apart the methods' predictions at K are and, with bootstrap
    intervals, which of them sampling error cannot separate; computed from ``predictions``
    (``ladderlab stats extrapolate``'s JSON ``predictions``)."""
    values = {method: p["accuracy"] for method, p in predictions.items() if p.get("accuracy") is not None}
    if K <= k or len(values) < 2:
        return []
    low, high = min(values, key=values.get), max(values, key=values.get)
    lines = [f"the methods predict from {values[low]:.4f} ({low}) to {values[high]:.4f} ({high}) at K = {K}: "
             f"k = {k} classes fix the moments E[U^t] of the conditional accuracy up to t = {k - 1}, the accuracy at "
             f"K is E[U^{K - 1}], and each method fills the gap with its own assumption (docs/extrapolation.md)"]
    if not bootstrap:
        return [*lines, "--bootstrap 200 adds each method's sampling interval"]
    intervals = {method: p["bootstrap"]["interval"] for method, p in predictions.items()
                 if p.get("bootstrap") and p["bootstrap"]["interval"]}
    failed = {method: p["bootstrap"]["failed"] for method, p in predictions.items() if p.get("bootstrap", {}).get("failed")}
    if failed:
        lines.append("resamples on which a method failed: " + ", ".join(f"{m} {n} of {bootstrap}" for m, n in failed.items()))
    apart = [f"{a}–{b}" for a, b in combinations(intervals, 2)
             if intervals[a][1] < intervals[b][0] or intervals[b][1] < intervals[a][0]]
    widest = max(intervals, key=lambda method: intervals[method][1] - intervals[method][0])
    width = intervals[widest][1] - intervals[widest][0]
    if apart:
        lines.append(f"{LEVEL:.0%} intervals that do not overlap ({', '.join(apart)}): their assumptions, not sampling "
                     f"error, separate those methods; the widest interval ({widest}) is {width:.4f} wide")
    else:
        lines.append(f"every {LEVEL:.0%} interval overlaps every other: these test points cannot tell the methods "
                     f"apart; the widest ({widest}) is {width:.4f} wide")
    return lines
