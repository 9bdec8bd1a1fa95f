"""The extrapolation estimators as the authors' own R code computes them (convention ``authors``).

Zheng, Achanta & Benjamini, *How many faces can be recognized? Performance extrapolation
for multi-class classification* (arXiv:1606.05228). Their simulation code
(``extrapolation/simulation_source.R`` in the public repository ``snarles/fmri``, which
produced the paper's Figure 3) departs from ladderlab's default convention
(:mod:`ladderlab.stats.extrapolation`, :mod:`ladderlab.stats.pseudolikelihood`) in these
ways, each reproduced here:

- **EXP**: the mixing measure lives on κ = 0, 0.01, …, 5 (u = e^{−κ} ≥ e^{−5}), the
  exponentials e^{−κt} are fitted to p̂ᵗ_UN at t = 1…k (t = 1 included), weights below
  1e-10 are dropped, and the fitted curve is returned at every t, also t ≤ k.
- **MPLE, CONS**: the density of U is a set of point masses on u = 0, 0.02, …, 1 (51
  points) with total mass at most 1; V is taken as Binomial(k, u) — the paper's printed
  Eq. 6, where Theorem 3.2 has Binomial(k − 1, u) — while the moment constraint and the
  plug-in estimates use u^{t−1}. CONS is their ``pmle_mm`` (non-decreasing masses and the
  moment constraint), MPLE their ``pmle``. They maximise with SLSQP from uniform masses;
  here the same problem is solved to optimality with cvxpy, so the two agree to the
  precision SLSQP reaches.
- **HD**: π̄_t(c) is the mean of Φ(c − zᵢ)^{t−1} over the 10,000 normal quantiles
  zᵢ = Φ⁻¹((i − ½)/10,000), and π̄_k⁻¹ is the nearest point of c = 0, 0.02, …, 20.

UN (Eq. 5 with C(k − 1, t − 1)) is the same in both conventions.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from ladderlab.stats.pseudolikelihood import import_cvxpy, solve

FloatArray = NDArray[np.float64]

KAPPAS = np.arange(501) * 0.01
"""EXP's grid: their ``-seq(0, 5, 0.01)``."""
POINTS = np.arange(51) * 0.02
"""The pseudolikelihood's support: their ``us = seq(0, 1, 0.02)``."""
SIGNALS = np.linspace(0.0, 20.0, 1001)
"""HD's grid of signal strengths: their ``seq(0, upper = 20, length.out = res + 1)``."""
QUANTILES = special.ndtri((np.arange(1, 10_001) - 0.5) / 10_000)
"""HD's quadrature: their ``qnorm(((1:mc.reps) - 0.5)/mc.reps)`` (the normal quantile function,
which ``scipy.stats.norm.ppf`` computes with ``ndtri`` too, without importing scipy.stats)."""
DROPPED_WEIGHT = 1e-10


def exponential_curve(unbiased: ArrayLike, K: int) -> FloatArray:
    """p̂ᵗ_EXP for t = 1…K: their ``expmix_binmom`` (non-negative least squares on t = 1…k)."""
    p = np.asarray(unbiased, dtype=float)
    t = np.arange(1, p.size + 1)[:, None]
    weights, _ = optimize.nnls(np.exp(-KAPPAS[None, :] * t), p)
    weights[weights < DROPPED_WEIGHT] = 0.0
    return np.exp(-KAPPAS[None, :] * np.arange(1, K + 1)[:, None]) @ weights


def point_likelihood(k: int) -> FloatArray:
    """P(V = v) under Binomial(k, u) for v = 0…k − 1 (rows) at each support point u (columns)."""
    from scipy import stats  # imported here: scipy.stats is slow to import, and scenarios load this module

    return stats.binom.pmf(np.arange(k)[:, None], k, POINTS[None, :])


def fit_point_masses(counts: NDArray[np.int64], k: int, constrained: bool) -> FloatArray:
    """The masses on :data:`POINTS` that maximise their pseudolikelihood, from the number of test
    points with V = 0…k − 1; ``constrained``: CONS (non-decreasing masses whose (k − 1)-th
    moment is p̂ᵏ_UN), otherwise MPLE."""
    cp = import_cvxpy()

    observed = np.flatnonzero(counts)
    likelihood = point_likelihood(k)[observed]
    scale = likelihood.max(axis=1, keepdims=True)  # a constant in the objective; entries of order one for the solver
    masses = cp.Variable(POINTS.size, nonneg=True)
    constraints = [cp.sum(masses) <= 1]
    if constrained:
        constraints += [cp.diff(masses) >= 0, POINTS ** (k - 1) @ masses == counts[-1] / counts.sum()]
    problem = cp.Problem(cp.Maximize(counts[observed] @ cp.log((likelihood / scale) @ masses)), constraints)
    solve(problem, "the authors' pseudolikelihood")
    return np.clip(masses.value, 0.0, None)


def point_moments(masses: FloatArray, K: int) -> FloatArray:
    """Σ masses · u^{t−1} for t = 1…K: their plug-in estimates."""
    return (POINTS[None, :] ** np.arange(K)[:, None]) @ masses


def point_log_pseudolikelihood(counts: NDArray[np.int64], k: int, masses: FloatArray) -> float:
    """Their objective: Σᵢ log Σ_u masses_u · Binomial(k, u)(Vᵢ), from the counts of V = 0…k − 1."""
    observed = np.flatnonzero(counts)
    return float(counts[observed] @ np.log(point_likelihood(k)[observed] @ masses))


def error_rate(signals: FloatArray, t: int) -> FloatArray:
    """Their ``piK``: 1 − π̄_t(c) by the quantile rule, computed as they compute it."""
    exponents = (t - 1) * np.log(1.0 - special.ndtr(QUANTILES[None, :] - signals[:, None]))
    top = exponents.max(axis=1, keepdims=True)
    return 1.0 - np.mean(np.exp(exponents - top), axis=1) * np.exp(top[:, 0])


@cache
def _error_grid(k: int) -> FloatArray:
    """The k-class error at every point of :data:`SIGNALS` (10 million normal tail values: computed once per k)."""
    return error_rate(SIGNALS, k)


def signal_strength(accuracy_k: float, k: int) -> float:
    """Their ``inv_piK``: the point of :data:`SIGNALS` whose k-class error is nearest 1 − p̂ᵏ."""
    if accuracy_k >= 1:
        return float("inf")
    return float(SIGNALS[np.argmin(np.abs(_error_grid(k) - (1.0 - accuracy_k)))])


def high_dimensional_curve(accuracy_k: float, k: int, K: int) -> FloatArray:
    """p̂ᵗ_HD for t = 1…K: their ``extrapolate_hd`` at every t."""
    c = np.array([signal_strength(accuracy_k, k)])
    return np.array([1.0 - error_rate(c, t)[0] for t in range(1, K + 1)])
