"""Extrapolating multi-class accuracy from k classes to more: Zheng, Achanta & Benjamini, *How many
faces can be recognized? Performance extrapolation for multi-class classification* (arXiv:1606.05228).

Classes are drawn at random from a population and each class's scoring function is
learned from that class alone (marginal classifiers). For a test point of class i,
V = the number of the other k − 1 classes that its own class outscores;
V ~ Binomial(k − 1, U) given the conditional accuracy U (Theorem 3.2), and the
expected accuracy with t classes is p_t = E[U^{t−1}] (Theorem 3.1).

- :func:`outscored_counts` — V from a score matrix or from the rank of the true label;
- :func:`unbiased_accuracy` — p̂ᵗ_UN = mean C(V, t−1)/C(k−1, t−1), t = 1…k (Eq. 5, with
  C(k−1, t−1) where the paper prints C(k, t−1): with V ≤ k − 1 only k − 1 makes p̂ᵏ
  the observed accuracy, and Theorem 3.2 says Binomial(k − 1, U));
- :func:`exponential_extrapolation` — p̂ᵗ_EXP: p_t = ∫ e^{−κ(t−1)} dα(κ) with α ≥ 0
  on a grid of κ = −log u, fitted to p̂ᵗ_UN, t = 2…k, by non-negative least squares
  (Sec. 4.1);
- :func:`high_dimensional_extrapolation` — p̂ᴷ_HD = π̄_K(π̄_k⁻¹(p̂ᵏ_UN)) with
  π̄_k(c) = ∫ φ(z − c) Φ(z)^{k−1} dz (Sec. 4.3);
- :func:`accuracy_curve` — any of these, or the pseudolikelihood estimators MPLE and
  CONS (:mod:`ladderlab.stats.pseudolikelihood`, Sec. 4.2), as p̂ᵗ for t = 1…K, in
  ladderlab's convention or, with ``convention="authors"``, exactly as the authors' R code
  computes them (:mod:`ladderlab.stats.authors`: coarser grids, Binomial(k, u) in Eq. 6).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate, optimize, special

from ladderlab.stats import authors, pseudolikelihood
from ladderlab.utils.progress import progress_bar

FloatArray = NDArray[np.float64]
KAPPA_GRID = np.concatenate([[0.0], np.geomspace(1e-5, 20.0, 400)])
"""κ = −log u for the discretised mixing measure: u from 1 down to e⁻²⁰."""


def outscored_counts(scores: ArrayLike | None = None, labels: ArrayLike | None = None,
                     ranks: ArrayLike | None = None, k: int | None = None) -> NDArray[np.int64]:
    """V per test point: how many of the other classes its true class strictly outscores.

    Either ``scores`` (instances × k, larger is more likely) with ``labels`` (column of
    the true class), or ``ranks`` (1 = the true label scored highest) with ``k``.
    """
    if scores is not None:
        matrix = np.asarray(scores, dtype=float)
        if matrix.ndim != 2 or matrix.shape[1] < 2:
            raise ValueError(f"scores must be an instances × classes matrix with ≥ 2 classes, got shape {matrix.shape}")
        truth = np.asarray(labels)
        if truth.shape != (matrix.shape[0],) or not np.issubdtype(truth.dtype, np.integer):
            raise ValueError("labels must give the true class's column (an integer) for every row of scores")
        if truth.min() < 0 or truth.max() >= matrix.shape[1]:
            raise ValueError(f"labels must lie in 0…{matrix.shape[1] - 1}")
        own = matrix[np.arange(matrix.shape[0]), truth]
        return np.sum(matrix < own[:, None], axis=1)
    if ranks is None or k is None:
        raise ValueError("give scores and labels, or ranks and k")
    rank = np.asarray(ranks)
    if k < 2 or rank.min() < 1 or rank.max() > k:
        raise ValueError(f"ranks must lie in 1…k with k ≥ 2, got k = {k}, ranks {rank.min()}…{rank.max()}")
    return (k - rank).astype(np.int64)


def unbiased_accuracy(outscored: ArrayLike, k: int) -> FloatArray:
    """p̂ᵗ_UN for t = 1…k (index t − 1): the unbiased estimate of the t-class accuracy (Eq. 5)."""
    counts = np.bincount(np.asarray(outscored, dtype=np.int64), minlength=k)
    if counts.size > k:
        raise ValueError(f"outscored counts must lie in 0…{k - 1}")
    v = np.arange(k)[:, None]
    draws = np.arange(k)[None, :]  # t − 1
    with np.errstate(invalid="ignore"):
        log_ratio = (special.gammaln(v + 1) - special.gammaln(v - draws + 1)
                     - special.gammaln(k) + special.gammaln(k - draws))
    ratio = np.where(v >= draws, np.exp(log_ratio), 0.0)  # C(v, t−1) / C(k−1, t−1)
    return counts @ ratio / counts.sum()


def exponential_extrapolation(unbiased: ArrayLike, K: int, kappas: FloatArray = KAPPA_GRID) -> FloatArray:
    """p̂ᵗ_EXP for t = 1…K (Sec. 4.1): p̂ᵗ_UN up to k, the fitted mixture of exponentials beyond."""
    p = np.asarray(unbiased, dtype=float)
    k = p.size
    if K < k:
        raise ValueError(f"K must be at least k = {k}, got {K}")
    t = np.arange(2, k + 1)[:, None]
    weights, _ = optimize.nnls(np.exp(-kappas[None, :] * (t - 1)), p[1:])
    beyond = np.exp(-kappas[None, :] * (np.arange(k + 1, K + 1)[:, None] - 1)) @ weights
    return np.concatenate([p, beyond])


LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def pi_bar(k: int, c: float) -> float:
    """π̄_k(c) = ∫ φ(z − c) Φ(z)^{k−1} dz: the k-class accuracy at signal strength c (Sec. 4.3)."""
    def integrand(z: float) -> float:  # the normal log density written out: scipy.stats' costs 50× more a call
        return math.exp(-0.5 * (z - c) ** 2 - LOG_SQRT_2PI + (k - 1) * special.log_ndtr(z))

    value, _ = integrate.quad(integrand, c - 12.0, c + 12.0, points=[c], limit=200)
    return value


def _signal_strength(accuracy_k: float, k: int) -> float:
    """c with π̄_k(c) = p̂ᵏ."""
    if not 0 < accuracy_k < 1:
        raise ValueError(f"accuracy at k classes must lie in (0, 1), got {accuracy_k!r}")
    return optimize.brentq(lambda c: pi_bar(k, c) - accuracy_k, -20.0, 40.0, xtol=1e-10)


def high_dimensional_extrapolation(accuracy_k: float, k: int, K: int) -> float:
    """p̂ᴷ_HD = π̄_K(π̄_k⁻¹(p̂ᵏ)) (Sec. 4.3)."""
    return pi_bar(K, _signal_strength(accuracy_k, k))


METHODS = ("un", "exp", "cons", "mple", "hd")
"""The estimators of Sec. 4: unbiased (Eq. 5), exponential, constrained and maximum
pseudolikelihood, high-dimensional."""
CONVENTIONS = ("ladderlab", "authors")
"""``ladderlab``: Theorem 3.2's Binomial(k − 1, U) throughout, a histogram density on ``bins``
bins with exact integrals, a wide κ grid for EXP and HD's π̄_k inverted by root finding;
``authors``: the authors' R code (:mod:`ladderlab.stats.authors`)."""


def accuracy_curve(outscored: ArrayLike, k: int, K: int, method: str, bins: int | None = None,
                   convention: str = "ladderlab", progress: bool | None = False) -> FloatArray:
    """p̂ᵗ for t = 1…K (index t − 1) by one of :data:`METHODS`, from the outscored counts of k classes.

    ``un`` exists only up to k (NaN beyond); ``bins`` is the pseudolikelihood grid of the
    ``ladderlab`` convention (default 1000); the ``authors`` convention has its own fixed grids.
    ``progress`` shows a bar over HD's K quadratures (None: on a terminal).
    """
    if method not in METHODS:
        raise ValueError(f"unknown extrapolation method {method!r}; choose from {', '.join(METHODS)}")
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; choose from {', '.join(CONVENTIONS)}")
    if convention == "authors" and bins is not None:
        raise ValueError(f"bins = {bins}: the authors' convention has its fixed grid of {authors.POINTS.size} points")
    if K < k:
        raise ValueError(f"K must be at least k = {k}, got {K}")
    unbiased = unbiased_accuracy(outscored, k)
    if method == "un":
        return np.concatenate([unbiased, np.full(K - k, np.nan)])
    if convention == "authors":
        if method == "exp":
            return authors.exponential_curve(unbiased, K)
        if method == "hd":
            return authors.high_dimensional_curve(float(unbiased[-1]), k, K)
        counts = pseudolikelihood.check_counts(outscored, k)
        return authors.point_moments(authors.fit_point_masses(counts, k, constrained=method == "cons"), K)
    if method == "exp":
        return exponential_extrapolation(unbiased, K)
    if method == "hd":
        c = _signal_strength(float(unbiased[-1]), k)
        classes = range(2, K + 1)
        return np.array([1.0] + [pi_bar(t, c) for t in progress_bar(classes, progress=progress if K > 1000 else False,
                                                                  desc="hd", unit="class count")])
    fit = pseudolikelihood.constrained_pseudolikelihood if method == "cons" else pseudolikelihood.maximum_pseudolikelihood
    return fit(outscored, k, bins=pseudolikelihood.DEFAULT_BINS if bins is None else bins).accuracies(K)


def accuracy_at(outscored: ArrayLike, k: int, K: int, method: str, bins: int | None = None,
                convention: str = "ladderlab") -> float:
    """p̂ᴷ alone: :func:`accuracy_curve`'s last value, without the curve where the method has a
    closed form at K (HD: one quadrature instead of K)."""
    if method == "hd" and K >= k and convention in CONVENTIONS:
        accuracy_k = float(unbiased_accuracy(outscored, k)[-1])
        if convention == "authors":
            return float(1.0 - authors.error_rate(np.array([authors.signal_strength(accuracy_k, k)]), K)[0])
        if convention == "ladderlab":
            return high_dimensional_extrapolation(accuracy_k, k, K)
    return float(accuracy_curve(outscored, k, K, method, bins=bins, convention=convention)[-1])


def bootstrap_accuracies(outscored: ArrayLike, k: int, K: int, method: str, rng: np.random.Generator,
                         resamples: int, bins: int | None = None, convention: str = "ladderlab") -> FloatArray:
    """p̂ᴷ by ``method`` on each of ``resamples`` resamples of the test points, drawn with replacement
    (Efron's nonparametric bootstrap): the sampling spread of a prediction. A resample on which
    the method fails (CONS infeasible, HD at accuracy 0 or 1) gives NaN.

    Test points are resampled independently; the k classes themselves are held fixed, so the
    spread leaves out the variation from which classes were drawn (Zheng et al. Sec. 2).
    """
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise ValueError(f"resamples must be a whole number ≥ 1, got {resamples!r}")
    points = np.asarray(outscored)
    drawn = rng.integers(0, points.size, size=(resamples, points.size))
    predictions = np.full(resamples, np.nan)
    for index, rows in enumerate(drawn):
        try:
            predictions[index] = accuracy_at(points[rows], k, K, method, bins=bins, convention=convention)
        except ValueError:
            continue
    return predictions
