"""Maximum and constrained pseudolikelihood for the conditional-accuracy density (Zheng,
Achanta & Benjamini, *How many faces can be recognized?*, arXiv:1606.05228, Sec. 4.2, Eq. 6
and Fig. 1; the authors' own grid and Binomial(k, u) are :mod:`ladderlab.stats.authors`).

A test point's count V of outscored classes is Binomial(k − 1, U) given its conditional
accuracy U, and U has a density η on [0, 1] (Theorem 3.2); the t-class accuracy is the
moment p_t = ∫ u^{t−1} η(u) du (Theorem 3.1). The log pseudolikelihood treats the km
counts as if independent:

    ℓ(η) = Σᵢⱼ log ∫ u^{V_ij} (1 − u)^{k−1−V_ij} η(u) du            (Eq. 6)

with k − 1 where the paper prints k, for the reason given in
:mod:`ladderlab.stats.extrapolation` (V ≤ k − 1 is Binomial(k − 1, U)).

η is discretised as a histogram on ``bins`` equal bins of [0, 1]; every integral above
is then exact (regularised incomplete beta functions for Eq. 6, powers of the bin
edges for the moments), and ℓ is a concave function of the bin masses, so the
maximisation is a convex problem (an exponential-cone programme) solved with cvxpy:

- :func:`maximum_pseudolikelihood` — MPLE: any histogram density. The maximiser is
  generally not unique, and neither are its plug-in moments (the paper's motivation
  for constraints).
- :func:`constrained_pseudolikelihood` — CONS: η non-decreasing (Theorem 3.4: true of
  a Bayes classifier) and its (k − 1)-th moment equal to the unbiased estimate p̂ᵏ_UN,
  which is the observed k-class accuracy, so p̂ᵏ_CONS reproduces it.

The plug-in estimates p̂ᵗ = ∫ u^{t−1} η̂(u) du give the accuracy for any number of
classes t (:meth:`PseudolikelihoodFit.accuracies`).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

FloatArray = NDArray[np.float64]
DEFAULT_BINS = 1000
SOLVER = "auto"
SOLVERS = ("CLARABEL", "SCS")
"""``auto`` tries these in turn: Clarabel (interior point, accurate), then SCS (first-order,
tolerant of the near-degenerate problems Clarabel occasionally gives up on). Both are
installed with cvxpy."""
SOLVER_SETTINGS = {"SCS": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 20_000}}
NEEDS_SOLVER = ("cons", "mple")
"""The extrapolation methods that fit a pseudolikelihood, with cvxpy: an optional dependency."""
MISSING_SOLVER = ("CONS and MPLE fit a pseudolikelihood with cvxpy, which is not installed: "
                  "pip install 'ladderlab[extrapolation]'")


def solver_missing() -> str | None:
    """Why CONS and MPLE cannot run in this environment (None: they can), without importing cvxpy."""
    return None if importlib.util.find_spec("cvxpy") is not None else MISSING_SOLVER


def import_cvxpy() -> ModuleType:
    """cvxpy, imported only when a pseudolikelihood is fitted (it takes seconds); a missing cvxpy
    is a ``ModuleNotFoundError`` naming the extra that installs it."""
    try:
        import cvxpy
    except ModuleNotFoundError as missing:
        if missing.name != "cvxpy":
            raise
        raise ModuleNotFoundError(MISSING_SOLVER, name="cvxpy") from None
    return cvxpy


class InfeasibleConstraints(ValueError):
    """CONS has no solution: no non-decreasing density has the observed (k − 1)-th moment."""


@dataclass(frozen=True)
class PseudolikelihoodFit:
    """A fitted histogram density η̂ of the conditional accuracy U on [0, 1]."""

    edges: FloatArray
    masses: FloatArray
    k: int
    log_pseudolikelihood: float
    constrained: bool

    @property
    def density(self) -> FloatArray:
        """η̂ on each bin (mass / width)."""
        return self.masses / np.diff(self.edges)

    def moment(self, power: int | ArrayLike) -> FloatArray:
        """∫ u^power η̂(u) du, exact for the histogram."""
        exponent = np.atleast_1d(np.asarray(power, dtype=float)) + 1
        lower, upper = self.edges[:-1], self.edges[1:]
        per_bin = (upper[None, :] ** exponent[:, None] - lower[None, :] ** exponent[:, None]) / (
            exponent[:, None] * (upper - lower)[None, :])
        return per_bin @ self.masses

    def accuracies(self, K: int) -> FloatArray:
        """p̂ᵗ = E[U^{t−1}] under η̂ for t = 1…K (index t − 1)."""
        return self.moment(np.arange(K))


def _bin_probabilities(k: int, edges: FloatArray) -> FloatArray:
    """P(V = v | U uniform on bin g) for v = 0…k−1 (rows) and each bin (columns).

    ∫ C(k−1, v) u^v (1−u)^{k−1−v} du over [a, b] is (I_b − I_a)(v + 1, k − v) / k, with I
    the regularised incomplete beta function; dividing by the width b − a makes each
    column a probability distribution over v.
    """
    v = np.arange(k)[:, None]
    lower_tail = special.betainc(v + 1, k - v, edges[None, :])
    upper_tail = special.betainc(k - v, v + 1, 1 - edges[None, :])
    # Where I is near 1, differences of the upper tails keep the tiny probabilities accurate.
    mass = np.where(lower_tail[:, :-1] > 0.5, -np.diff(upper_tail, axis=1), np.diff(lower_tail, axis=1))
    return mass / (k * np.diff(edges)[None, :])


def check_counts(outscored: ArrayLike, k: int) -> NDArray[np.int64]:
    """How many test points have V = 0, 1, …, k − 1; refuses counts outside 0…k − 1 and a bad k."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"k (the number of observed classes) must be a whole number ≥ 2, got {k!r}")
    values = np.asarray(outscored)
    if values.size == 0:
        raise ValueError("no outscored counts given")
    if not np.issubdtype(values.dtype, np.integer) or values.min() < 0 or values.max() > k - 1:
        raise ValueError(f"outscored counts must be whole numbers in 0…{k - 1}")
    return np.bincount(values.ravel(), minlength=k)


def _mix_rising(columns: FloatArray) -> FloatArray:
    """Rows of ``columns`` (per bin) turned into rows per rising histogram h = 0…bins−1, the
    histogram of Uniform[edge_h, 1]: their mixtures with weights π ≥ 0 are exactly the
    non-decreasing histograms (bin g has mass Σ_{h ≤ g} π_h / (bins − h))."""
    bins = columns.shape[-1]
    return np.cumsum(columns[..., ::-1], axis=-1)[..., ::-1] / (bins - np.arange(bins))


def solve(problem: Any, what: str, solver: str = "auto", usable: Callable[[], bool] = lambda: True) -> None:
    """Solve the cvxpy ``problem`` with ``solver``, or with each of :data:`SOLVERS` in turn for
    ``auto``, until one ends optimal (an inaccurate optimum is accepted, and said so by its status)
    with a ``usable`` solution; else ``ValueError`` naming ``what`` and every solver's failure."""
    cp = import_cvxpy()
    failures = []
    for name in SOLVERS if solver == "auto" else (solver,):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                problem.solve(solver=name, **SOLVER_SETTINGS.get(name, {}))
        except cp.error.SolverError:
            failures.append(f"{name} failed")
            continue
        if problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and usable():
            return
        failures.append(f"{name} ended with status {problem.status!r}")
    raise ValueError(f"{what} could not be maximised: {'; '.join(failures)}")


def _rising_masses(weights: FloatArray) -> FloatArray:
    return np.cumsum(weights / (weights.size - np.arange(weights.size)))


def _solve_dual(frequencies: FloatArray, likelihood: FloatArray, moment_row: FloatArray | None,
                target: float, solver: str) -> FloatArray:
    """Maximise Σ_v f_v log (A w)_v over w ≥ 0, Σ w = 1 (and m·w = target) through its dual,

        minimise −Σ_v f_v log ν_v + λ + μ·target   subject to   Aᵀν ≤ λ + μ m,

    whose multiplier is the maximising w (the route Koenker & Mizera take for the
    Kiefer–Wolfowitz NPMLE): k + 2 variables instead of one per bin, which interior-point
    solvers handle reliably where the primal stalls.
    """
    cp = import_cvxpy()

    nu, level = cp.Variable(likelihood.shape[0]), cp.Variable()
    bound, objective = level, -frequencies @ cp.log(nu) + level
    if moment_row is not None:
        slope = cp.Variable()
        bound, objective = bound + slope * moment_row, objective + slope * target
    dominated = likelihood.T @ nu <= bound
    problem = cp.Problem(cp.Minimize(objective), [dominated])
    solve(problem, "the pseudolikelihood", solver, usable=lambda: dominated.dual_value is not None)
    weights = np.clip(np.asarray(dominated.dual_value, dtype=float), 0.0, None)
    return weights / weights.sum()


def _fit(outscored: ArrayLike, k: int, bins: int, constrained: bool, solver: str) -> PseudolikelihoodFit:
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 2:
        raise ValueError(f"bins must be a whole number ≥ 2, got {bins!r}")
    counts = check_counts(outscored, k)
    observed = np.flatnonzero(counts)
    frequencies = counts[observed] / counts.sum()
    edges = np.linspace(0.0, 1.0, bins + 1)
    bin_likelihood = _bin_probabilities(k, edges)[observed]
    likelihood = _mix_rising(bin_likelihood) if constrained else bin_likelihood
    # Rescale each row (a constant in ℓ) so the solver sees entries of order one.
    likelihood = likelihood / likelihood.max(axis=1, keepdims=True)
    if constrained:
        target = counts[-1] / counts.sum()  # p̂ᵏ_UN (Eq. 5 at t = k): the share with V = k − 1
        moment_row = _mix_rising((edges[1:] ** k - edges[:-1] ** k) / (k * np.diff(edges)))
        lowest, highest = float(moment_row[0]), float(moment_row[-1])
        if not lowest - 1e-12 <= target <= highest:
            raise InfeasibleConstraints(
                f"no non-decreasing density on {bins} bins has (k−1)-th moment {target:.6g} (the observed "
                f"accuracy at k = {k}): it must lie in [1/k = {lowest:.6g}, {highest:.6g}]; at chance or below "
                "nothing fits, and near 1 more bins are needed")
        masses = _rising_masses(_solve_dual(frequencies, likelihood, moment_row, target, solver))
    else:
        masses = _solve_dual(frequencies, likelihood, None, 0.0, solver)
    masses = masses / masses.sum()
    return PseudolikelihoodFit(edges=edges, masses=masses, k=k, constrained=constrained,
                               log_pseudolikelihood=float(counts[observed] @ np.log(bin_likelihood @ masses)))


def maximum_pseudolikelihood(outscored: ArrayLike, k: int, bins: int = DEFAULT_BINS,
                             solver: str = SOLVER) -> PseudolikelihoodFit:
    """MPLE: the histogram density maximising the log pseudolikelihood (Eq. 6)."""
    return _fit(outscored, k, bins, constrained=False, solver=solver)


def constrained_pseudolikelihood(outscored: ArrayLike, k: int, bins: int = DEFAULT_BINS,
                                 solver: str = SOLVER) -> PseudolikelihoodFit:
    """CONS: the MPLE over non-decreasing densities whose (k − 1)-th moment is p̂ᵏ_UN (Sec. 4.2).

    Raises :class:`InfeasibleConstraints` when the observed accuracy is at or below chance
    (1/k, the least (k − 1)-th moment of a non-decreasing density) or above what the grid
    can reach near 1 (the instability at high accuracy that the paper reports).
    """
    return _fit(outscored, k, bins, constrained=True, solver=solver)
