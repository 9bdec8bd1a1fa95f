"""How optimistic is the top of a leaderboard? The best observed accuracy among m classifiers.

Møllersen & Holsbø, "Multiplicity and the state of the art" (v1, v2):

- :func:`best_of_m` — the exact distribution of θ̂_max = max_j θ̂_j when classifier j
  makes X_j ~ Binomial(n, 1 − θ_j) independent errors on a test set of size n:
  P(min_j X_j ≤ z) = 1 − ∏_j (1 − P(X_j ≤ z)) (Eq. 2 for identical θ, Eq. 8–9 for
  non-identical θ). Computed in log space (log1p of the lower tail, log of the upper
  one, whichever is more accurate) over the window of z outside which the
  probability is below 1e-15 on each side, so m up to 10⁵ and n up to 10⁶ are exact.
- :func:`simulate_best_of_m` — dependent classifiers through a latent Y₀ (Sec. 4.1,
  4.3): given Y₀ the Y_j are independent with P(Y_j = 1 | Y₀) from Eq. 10–11, so
  corr(Y₀, Y_j) = ρ and corr(Y_j, Y_k) = ρ²; valid when Eq. 12 (and its mirror
  image for P ≤ 1) holds. Y₀ is random (Bernoulli(θ₀) per test point) or fixed
  (exactly round(θ₀·n) correct).
- :func:`estimate_sota` — v2, Sec. 5: from observed competition accuracies, the
  expected maximum if the observations were the true θ's, and the cropping level c
  at which θ̃_j = min(θ̂_j, c) makes the expected (or the upper-limit) maximum equal
  the observed one; c is the multiplicity-adjusted state of the art, with a
  bootstrap interval over teams.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ladderlab.utils.progress import progress_bar

FloatArray = NDArray[np.float64]
TAIL = 1e-15
"""Probability left out on each side of the exact distribution's window of error counts."""


def read_numbers(path: str | Path, what: str) -> FloatArray:
    """Numbers separated by white space or commas (one per line, say) from a text file."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read the {what} file {path}: {error}") from None
    tokens = text.replace(",", " ").split()
    if not tokens:
        raise ValueError(f"{path}: the {what} file holds no numbers")
    try:
        return np.array([float(token) for token in tokens])
    except ValueError:
        bad = next(token for token in tokens if not _is_number(token))
        raise ValueError(f"{path}: {bad!r} in the {what} file is not a number") from None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _check_accuracies(thetas: ArrayLike, name: str = "theta") -> FloatArray:
    values = np.atleast_1d(np.asarray(thetas, dtype=float))
    if values.size == 0:
        raise ValueError(f"{name}: no values given")
    bad = values[~((values >= 0) & (values <= 1))]
    if bad.size:
        raise ValueError(f"{name} must lie in [0, 1] (a probability of correct prediction), got {float(bad[0])}")
    return values


def _check_count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class BestOfM:
    """The distribution of the best observed accuracy θ̂_max = (n − Z)/n, Z the fewest errors.

    ``errors`` is the window of Z values carrying all but ≤ 2e-15 of the probability
    and ``pmf`` their probabilities f(z) (Eq. 3 / 9).
    """

    n: int
    m: int
    errors: NDArray[np.int64]
    pmf: FloatArray

    @property
    def accuracies(self) -> FloatArray:
        return (self.n - self.errors) / self.n

    @property
    def mean(self) -> float:
        return float(np.dot(self.pmf, self.accuracies))

    @property
    def sd(self) -> float:
        return float(np.sqrt(max(np.dot(self.pmf, (self.accuracies - self.mean) ** 2), 0.0)))

    def cdf_errors(self) -> FloatArray:
        """F(z) = P(Z ≤ z) on ``errors`` (Eq. 2 / 8)."""
        return np.cumsum(self.pmf)

    def quantile(self, q: float) -> float:
        """The smallest accuracy a with P(θ̂_max ≤ a) ≥ q."""
        if not 0 <= q <= 1:
            raise ValueError(f"quantile must lie in [0, 1], got {q!r}")
        at_least = np.cumsum(self.pmf[::-1])  # P(θ̂_max ≤ accuracy), accuracies ascending
        index = min(int(np.searchsorted(at_least, q - 1e-12)), at_least.size - 1)
        return float(self.accuracies[::-1][index])

    def upper_limit(self, alpha: float = 0.05) -> float:
        """θ^m_{1−α/2}, the multiplicity-adjusted upper limit of the (1 − α) interval: the
        (1 − α/2) quantile of θ̂_max, i.e. (n − x)/n for the smallest x with F(x) ≥ α/2
        (Sec. 3.4: P_x = 2.532e-5 and 0.9213 for m = 1000, n = 3000, θ = 0.9)."""
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
        return self.quantile(1 - alpha / 2)

    def summary(self, alpha: float = 0.05) -> dict[str, float]:
        return {"mean": self.mean, "sd": self.sd, "upper": self.upper_limit(alpha),
                "median": self.quantile(0.5), "lower": self.quantile(alpha / 2)}


def best_of_m(thetas: ArrayLike, n: int, m: int | None = None) -> BestOfM:
    """Exact distribution of the best accuracy of independent classifiers on n test points.

    ``thetas`` is one θ shared by ``m`` classifiers (Eq. 2–3), or one θ per classifier
    (Eq. 8–9; ``m`` then defaults to their number). Classifiers with the same θ are
    computed once; a classifier whose chance of as few errors as the window's largest is
    below 1e-15/m changes no probability by more than 1e-15 and is left out.
    """
    from scipy import (
        stats,  # imported here: scipy.stats is slow to import, and challenges load this module
    )

    n = _check_count("n", n)
    values = _check_accuracies(thetas)
    if m is None:
        m = values.size
    m = _check_count("m", m)
    if values.size == 1:
        unique, counts = values, np.array([m])
    elif values.size == m:
        unique, counts = np.unique(values, return_counts=True)
    else:
        raise ValueError(f"give one theta, or m = {m} thetas (one per classifier); got {values.size}")
    error_rates = 1.0 - unique
    best = float(error_rates.min())
    if 0 < best < 1:
        low = max(int(stats.binom.ppf(TAIL / m, n, best)) - 1, 0)
        high = int(stats.binom.isf(TAIL, n, best)) + 1
    else:
        low = high = round(best * n)
    errors = np.arange(low, min(high, n) + 1)
    relevant = stats.binom.logcdf(errors[-1], n, error_rates) > np.log(TAIL / m)
    log_survival, log_survival_before = _log_survival(errors, n, error_rates[relevant])
    log_s = counts[relevant] @ log_survival  # log P(Z > z) = Σ_j log(1 − P(X_j ≤ z)), Eq. 8
    log_s_before = np.concatenate([[counts[relevant] @ log_survival_before], log_s[:-1]])
    with np.errstate(invalid="ignore"):
        pmf = np.where(np.isneginf(log_s_before), 0.0, np.exp(log_s_before) * -np.expm1(log_s - log_s_before))  # Eq. 9
    return BestOfM(n=n, m=m, errors=errors, pmf=pmf)


def _log_survival(errors: NDArray[np.int64], n: int, rates: FloatArray) -> tuple[FloatArray, FloatArray]:
    """log P(X > z) for X ~ Binomial(n, rate), for every rate × z in the window ``errors``,
    and log P(X > errors[0] − 1) per rate.

    The tails at the window's ends come from the incomplete beta function; inside, they
    are those plus running sums of the pmf (its log-binomial coefficient depends on z
    only), each from the side where it is small, so neither tail loses precision."""
    z = errors[None, :]
    p = rates[:, None]
    log_choose = special.gammaln(n + 1) - special.gammaln(errors + 1) - special.gammaln(n - errors + 1)
    pmf = np.exp(log_choose[None, :] + special.xlogy(z, p) + special.xlog1py(n - z, -p))
    below = special.bdtr(errors[0] - 1, n, rates)[:, None] if errors[0] > 0 else np.zeros((rates.size, 1))
    above = special.bdtrc(errors[-1], n, rates)[:, None]
    lower = np.minimum(below + np.cumsum(pmf, axis=1), 1.0)
    upper = above + np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1] - pmf
    with np.errstate(divide="ignore"):
        log_survival = np.where(lower < 0.5, np.log1p(-lower), np.log(upper))
        before = np.where(below < 0.5, np.log1p(-below), np.log(upper[:, :1] + pmf[:, :1]))[:, 0]
    return log_survival, before


def conditional_accuracies(thetas: ArrayLike, theta0: float, rho: float) -> tuple[FloatArray, FloatArray]:
    """P(Y_j = 1 | Y₀ = 1) and P(Y_j = 1 | Y₀ = 0), Eq. 10–11; NaN where they leave [0, 1]
    (Eq. 12 and its mirror image)."""
    values = _check_accuracies(thetas)
    if not 0 < theta0 < 1:
        raise ValueError(f"theta0 must lie in (0, 1), got {theta0!r}")
    if not 0 <= rho <= 1:
        raise ValueError(f"rho must lie in [0, 1], got {rho!r}")
    shared = rho * np.sqrt(values * (1 - values) * theta0 * (1 - theta0))
    given_one = (shared + values * theta0) / theta0
    given_zero = (-shared + values * (1 - theta0)) / (1 - theta0)
    valid = (given_one <= 1 + 1e-12) & (given_zero >= -1e-12)
    return (np.where(valid, np.clip(given_one, 0, 1), np.nan), np.where(valid, np.clip(given_zero, 0, 1), np.nan))


def simulate_best_of_m(
    thetas: ArrayLike,
    n: int,
    rho: float,
    rng: np.random.Generator,
    m: int | None = None,
    theta0: float | None = None,
    y0: Literal["random", "fixed"] = "random",
    repetitions: int = 10_000,
) -> FloatArray:
    """Best accuracies of ``repetitions`` simulated test sets for dependent classifiers (Sec. 4.1, 4.3).

    Given Y₀ with n₁ correct points, classifier j has Binomial(n₁, P(Y_j|Y₀=1)) +
    Binomial(n − n₁, P(Y_j|Y₀=0)) correct predictions, independently of the others.
    θ₀ defaults to the largest θ. Raises if some θ_j violates Eq. 12 for this ρ.
    """
    n = _check_count("n", n)
    repetitions = _check_count("repetitions", repetitions)
    values = _check_accuracies(thetas)
    m = values.size if m is None else _check_count("m", m)
    if values.size not in (1, m):
        raise ValueError(f"give one theta, or m = {m} thetas (one per classifier); got {values.size}")
    theta0 = float(values.max()) if theta0 is None else theta0
    given_one, given_zero = conditional_accuracies(values, theta0, rho)
    if np.isnan(given_one).any():
        bad = values[np.isnan(given_one)]
        raise ValueError(
            f"theta {float(bad[0])} is too small for rho = {rho} and theta0 = {theta0} (Eq. 12): "
            f"P(Y_j | Y_0) would leave [0, 1]"
        )
    given_one, given_zero = np.broadcast_to(given_one, (m,)), np.broadcast_to(given_zero, (m,))
    contenders = _contenders(np.broadcast_to(values, (m,)), n)
    given_one, given_zero, m = given_one[contenders], given_zero[contenders], int(contenders.sum())
    if y0 == "fixed":
        ones = np.full(repetitions, round(theta0 * n))
    elif y0 == "random":
        ones = rng.binomial(n, theta0, size=repetitions)
    else:
        raise ValueError(f"y0 must be 'random' or 'fixed', got {y0!r}")
    chunk = max(1, 4_000_000 // m)
    best = np.empty(repetitions)
    for start in range(0, repetitions, chunk):
        n1 = ones[start:start + chunk, None]
        correct = rng.binomial(n1, given_one) + rng.binomial(n - n1, given_zero)
        best[start:start + chunk] = correct.max(axis=1) / n
    return best


def _contenders(thetas: FloatArray, n: int) -> NDArray[np.bool_]:
    """Classifiers that can be the best: those whose marginal chance to reach the best
    classifier's 1e-6 lower accuracy quantile is above 1e-9/m. Leaving the others out
    changes the distribution of the maximum by at most about 2e-6 in total variation,
    far below the simulation's own error."""
    from scipy import stats  # imported here: scipy.stats is slow to import

    floor = stats.binom.ppf(1e-6, n, thetas.max())
    return stats.binom.logsf(floor - 1, n, thetas) > np.log(1e-9 / thetas.size)


LATENT_MARGIN = 1e-9
"""How far θ₀ stays inside (0, 1) in :func:`estimate_sota` (see :func:`_latent_accuracy`)."""


def _latent_accuracy(largest: float) -> float:
    """θ₀ = the largest θ̃ (Sec. 5), moved into [1e-9, 1 − 1e-9]: Eq. 10–11 divide by θ₀ and
    1 − θ₀, so a perfect (or null) observed accuracy, which a small test set often shows, is
    taken as the nearest value at which the model is defined. A perfect team then keeps
    P(Y_j = 1 | Y₀) = 1 and teams below Eq. 12's bound are excluded, as at any large θ₀."""
    return min(max(float(largest), LATENT_MARGIN), 1 - LATENT_MARGIN)


@dataclass(frozen=True)
class SotaEstimate:
    """Multiplicity-adjusted state of the art from observed accuracies (v2, Sec. 5, Table 3)."""

    observed_max: float
    teams: int
    excluded: int
    expected_max_uncropped: float
    interval_uncropped: tuple[float, float]
    target: str
    estimate: float
    interval: tuple[float, float]
    expected_max: float
    realised_interval: tuple[float, float]
    teams_above: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def estimate_sota(
    scores: ArrayLike,
    n: int,
    rng: np.random.Generator,
    rho: float = 0.6,
    alpha: float = 0.05,
    target: Literal["expected", "upper"] = "expected",
    repetitions: int = 1_000,
    bootstrap: int = 30,
    progress: bool | None = False,
) -> SotaEstimate:
    """Crop the observed accuracies at c so that the simulated best accuracy matches the
    observed best: its expectation (``target="expected"``) or the upper limit of its
    (1 − α) interval (``"upper"``, the conservative row of Table 3). c is the estimate.

    The simulation is Sec. 4.3's (non-identical, dependent through a random Y₀ with θ₀ the
    largest θ̃, ``rho``). Observations that violate Eq. 12 are excluded, as in the paper.
    The interval is the bootstrap percentile interval of c over resamples of the teams
    (``bootstrap`` resamples, each searched afresh; the paper's 1000 resamples are
    affordable only for small leaderboards). Every evaluation inside the search
    reuses one random stream, so the simulated maximum is monotone in c up to ties.
    ``progress`` shows a bar over the bootstrap resamples (None: on a terminal).
    """
    n = _check_count("n", n)
    repetitions = _check_count("repetitions", repetitions)
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise ValueError(f"bootstrap must be a whole number ≥ 0 (0: no interval), got {bootstrap!r}")
    observed = _check_accuracies(scores, "scores")
    if observed.size < 2:
        raise ValueError("scores: need at least two teams' accuracies")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if target not in ("expected", "upper"):
        raise ValueError(f"target must be 'expected' or 'upper', got {target!r}")
    observed_max = float(observed.max())
    given_one, _ = conditional_accuracies(observed, _latent_accuracy(observed_max), rho)
    kept = observed[~np.isnan(given_one)]
    seeds = rng.integers(0, 2**63, size=bootstrap + 1)

    def statistic(thetas: FloatArray, seed: int) -> tuple[float, float, float]:
        best = simulate_best_of_m(thetas, n, rho, np.random.default_rng(seed), theta0=_latent_accuracy(thetas.max()),
                                  repetitions=repetitions)
        return float(best.mean()), float(np.quantile(best, alpha / 2)), float(np.quantile(best, 1 - alpha / 2))

    def matched(thetas: FloatArray, seed: int) -> float:
        column = 0 if target == "expected" else 2
        levels = np.unique(thetas)
        low, high = 0, levels.size - 1
        if statistic(np.minimum(thetas, levels[high]), seed)[column] <= observed_max:
            return float(levels[high])
        while high - low > 1:
            middle = (low + high) // 2
            if statistic(np.minimum(thetas, levels[middle]), seed)[column] <= observed_max:
                low = middle
            else:
                high = middle
        return float(levels[low])

    uncropped = statistic(kept, seeds[0])
    estimate = matched(kept, seeds[0])
    cropped = statistic(np.minimum(kept, estimate), seeds[0])
    resampled = [matched(rng.choice(kept, size=kept.size, replace=True), seed)
                 for seed in progress_bar(seeds[1:], progress=progress, desc="bootstrap", unit="resample")]
    interval = tuple(float(v) for v in np.quantile(resampled, [alpha / 2, 1 - alpha / 2])) if resampled else (estimate, estimate)
    return SotaEstimate(
        observed_max=observed_max,
        teams=int(observed.size),
        excluded=int(observed.size - kept.size),
        expected_max_uncropped=uncropped[0],
        interval_uncropped=(uncropped[1], uncropped[2]),
        target=target,
        estimate=estimate,
        interval=interval,
        expected_max=cropped[0],
        realised_interval=(cropped[1], cropped[2]),
        teams_above=int(np.sum(observed > estimate)),
    )
