"""Generalisation by counting transcripts: Blum & Hardt's (2015) proof of Theorem 3.1, computed exactly.

The proof (§3, Claim 3.2): an adaptive analyst is a fixed map from the transcript so far to
its next submission, so every submission it can make lies in the set F of labels of a tree
whose nodes are the transcripts the mechanism can produce; a union bound over F then gives
P(∃ f ∈ F: |R_S(f) − R_D(f)| > ε) ≤ |F| · sup_p P(|R_S(f) − p| > ε). The paper bounds |F|
by an encoding (|F| ≤ 2^B, B = (1/η + 2) log(4t/η)) and the tail by Hoeffding's
2 exp(−2ε²n). Here both are exact where they can be:

- |F| is counted in closed form (:func:`log_nodes_decreasing`, :func:`log_nodes_free`);
  the tree of depth k holds every t ≤ k, so no further union over t is needed.
- For a 0/1 loss, n·R_S(f) is Binomial(n, p): :func:`log_binomial_deviation` takes the
  supremum over the unknown p of each one-sided tail exactly (the lower tail mirrors the
  upper), and the two-sided tail is at most their sum. Any loss in [0, 1] keeps Hoeffding.

Everything is in natural logarithms and in units of the loss bound (losses in [0, 1]).
"""

from __future__ import annotations

import math

import numpy as np

TAILS = ("hoeffding", "binomial")
"""``hoeffding``: any loss in [0, 1]; ``binomial``: the 0/1 loss (exact binomial tails)."""

EXACT_LIMIT = 50_000
"""Above this many points the binomial tail's supremum is bounded by Chernoff's, not computed exactly."""

_REPRESENTABLE = 1e-290
"""Below this an exact binomial tail is not computed by ``binom.sf`` but bounded in log space."""


def log_nodes_decreasing(k: int, values: int) -> float:
    """ln |F| for a mechanism whose first release is any of ``values`` grid values and whose later
    releases either repeat the last one or move to a strictly smaller grid value (the Ladders).

    A transcript of length i ≥ 1 is a set of update times containing t = 1 and a strictly
    decreasing sequence of as many values: Σ_j C(i−1, j−1)·C(V, j) = C(i + V − 1, V − 1)
    (Vandermonde). Nodes of depth ≤ k are transcripts of length < k, so
    |F| = Σ_{i<k} C(i + V − 1, V − 1) = C(k + V − 1, V) (the hockey-stick identity).
    """
    _check_counts(k, values)
    return _log_binomial_coefficient(k + values - 1, values)


def log_nodes_free(k: int, values: int) -> float:
    """ln |F| for a mechanism that releases any of ``values`` values after every submission
    (Kaggle's rounding, a subsample's votes): |F| = Σ_{i<k} V^i."""
    _check_counts(k, values)
    if values == 1:
        return math.log(k)
    return k * math.log(values) + math.log1p(-(values ** -float(k))) - math.log(values - 1)


def grid_values(step: float, zero_one_n: int | None = None) -> int:
    """How many multiples of ``step`` rounding a value in [0, 1] to the nearest multiple can give
    (0, step, …, [1]_step); at most n + 1 when the value is a 0/1 risk on n points."""
    count = math.floor(1.0 / step + 0.5) + 1
    return count if zero_one_n is None else min(count, zero_one_n + 1)


def log_hoeffding_deviation(n: int, epsilon: float) -> float:
    """ln 2·exp(−2ε²n): Hoeffding's bound on P(|R_S(f) − R_D(f)| > ε) for a loss in [0, 1]."""
    return math.log(2.0) - 2.0 * epsilon**2 * n


def log_binomial_deviation(n: int, epsilon: float) -> float:
    """ln of an upper bound on sup_p P(|X/n − p| > ε), X ~ Binomial(n, p): the sum of the two
    one-sided suprema, each exact.

    X/n − p > ε ⇔ X ≥ m with m = ⌊n(p + ε)⌋ + 1; on the p where m is constant the tail
    P(X ≥ m) grows with p, so sup_p P(X/n − p > ε) = max_{nε < m ≤ n} P(Binomial(n, m/n − ε) ≥ m).
    The lower tail is the upper one of n − X. Each tail is at most its Chernoff bound
    exp(−n·KL(m/n ‖ m/n − ε)), whose exponent is convex in m: the exact tails are computed
    outward from its peak until the bound falls below the largest exact tail found. Above
    :data:`EXACT_LIMIT` points that window grows too wide, and the Chernoff bound at its peak (valid,
    and within a factor of order √n of exact) is returned instead.
    """
    from scipy import special  # imported here: scipy is slow to import, and listing plugins must stay fast

    if epsilon >= 1.0:
        return -math.inf
    first, last = math.floor(n * epsilon) + 1, n
    if first > last:
        return -math.inf

    def chernoff(m: np.ndarray) -> np.ndarray:
        q = m / n
        p = np.clip(q - epsilon, 0.0, 1.0)
        return -n * (special.rel_entr(q, p) + special.rel_entr(1 - q, 1 - p))

    low, high = first, last
    while high - low > 2:  # the peak of a concave sequence, by ternary search
        a, b = low + (high - low) // 3, high - (high - low) // 3
        values = chernoff(np.array([a, b], dtype=float))
        low, high = (low, b) if values[0] >= values[1] else (a, high)
    peak = low + int(np.argmax(chernoff(np.arange(low, high + 1, dtype=float))))
    if n > EXACT_LIMIT:
        return math.log(2.0) + float(chernoff(np.array([float(peak)]))[0])
    best = -math.inf
    for direction in (1, -1):
        edge = peak if direction == 1 else peak - 1
        while first <= edge <= last:
            block = np.arange(edge, min(edge + 64, last + 1)) if direction == 1 else np.arange(max(edge - 63, first), edge + 1)
            if float(chernoff(np.array([float(edge)]))[0]) <= best:
                break
            m = block.astype(float)
            best = max(best, float(np.max(_log_upper_tail(n, m, np.clip(m / n - epsilon, 0.0, 1.0)))))
            edge = block[-1] + 1 if direction == 1 else block[0] - 1
    return math.log(2.0) + best


def _log_upper_tail(n: int, m: np.ndarray, p: np.ndarray) -> np.ndarray:
    """ln P(Binomial(n, p) ≥ m), exact where representable; deeper, the geometric bound
    pmf(m)/(1 − r), r = pmf(m + 1)/pmf(m), valid because the ratios of successive terms
    fall beyond the mode."""
    from scipy import stats

    exact = stats.binom.sf(m - 1, n, p)
    log_pmf = stats.binom.logpmf(m, n, p)
    with np.errstate(divide="ignore"):
        ratio = (n - m) * p / ((m + 1) * (1 - p))
        geometric = log_pmf - np.log1p(-np.minimum(ratio, 1.0))
    return np.where(exact > _REPRESENTABLE, np.log(np.maximum(exact, _REPRESENTABLE)), geometric)


def log_deviation(tail: str, n: int, epsilon: float) -> float:
    """ln of the bound on P(|R_S(f) − R_D(f)| > ε) of one fixed f that ``tail`` names."""
    if tail == "hoeffding":
        return log_hoeffding_deviation(n, epsilon)
    if tail == "binomial":
        return log_binomial_deviation(n, epsilon)
    raise ValueError(f"tail must be one of {', '.join(TAILS)}, got {tail!r}")


def union_deviation(log_count: float, n: int, delta: float, tail: str = "hoeffding") -> float:
    """The smallest ε (to 1e-9) with |F|·P(|R_S(f) − R_D(f)| > ε) ≤ δ, ln|F| = ``log_count``: with
    probability ≥ 1 − δ every f ∈ F has |R_S(f) − R_D(f)| ≤ ε. Hoeffding's is in closed form."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    target = math.log(delta) - log_count
    if tail == "hoeffding":
        return math.sqrt(max(0.0, math.log(2.0) - target) / (2 * n))
    low, high = 0.0, 1.0
    while high - low > 1e-9:
        middle = (low + high) / 2
        if log_deviation(tail, n, middle) <= target:
            high = middle
        else:
            low = middle
    return high


def _log_binomial_coefficient(a: int, b: int) -> float:
    return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)


def _check_counts(k: int, values: int) -> None:
    if k < 1 or values < 1:
        raise ValueError(f"k and values must be ≥ 1, got k = {k}, values = {values}")
