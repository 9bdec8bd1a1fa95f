"""Anytime-valid verdicts: confidence sequences for a Bernoulli probability, and the verdict of a grid point.

A certificate replicates each grid point until its verdict is decided at a stated
confidence, so its statements must hold at a data-dependent stopping time. For
indicators X₁, X₂, … independent with P(Xᵢ = 1) = p, Robbins' (1970) mixture
martingale with a Beta(a, b) prior,

    M_t(p) = B(a + S_t, b + t − S_t) / B(a, b) / (p^S_t (1 − p)^(t − S_t)),   S_t = X₁ + … + X_t,

is a nonnegative martingale of mean 1 under p, so by Ville's inequality
P(M_t(p) ≥ 1/δ for some t) ≤ δ: the sets CS_t = {p : M_t(p) < 1/δ} contain the true p
at every t simultaneously with probability at least 1 − δ (a confidence sequence,
Robbins 1970; Howard, Ramdas, McAuliffe & Sekhon 2021, §3). Each CS_t is an interval
around S_t/t (−log of the denominator is convex in p). The prior is Jeffreys',
Beta(½, ½): with unanimous indicators a sequence at δ = 0.025 excludes ½ after 8.

A grid point's verdict concerns two tails, of Δ against −τ and of the leaderboard's
optimism against ε, through p_Δ = P(Δ < −τ) and p_E = P(optimism > ε), against a level β
(the *tail criterion*; β = ½ is the old criterion on the medians: the median of Δ is below
−τ exactly when p_Δ > ½). Each probability gets a sequence at a per-sequence error δ that
the caller chooses (a certificate splits its error 1 − confidence over all its sequences,
a Bonferroni union: :func:`per_sequence_error`), and the point

- **fails** as soon as either sequence lies above β;
- **passes** as soon as both lie below β;
- is **inconclusive** if neither happened by the largest number of replications.

Whatever the truth, a decided verdict is wrong with probability at most 2δ: a wrong
"passes" needs a sequence below β that should contain a p ≥ β (δ), a wrong "fails" one
above β that should contain a p ≤ β (δ for each of two). A point whose p sits at β stays
inconclusive with probability at least 1 − 2δ.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special, stats

PRIOR = (0.5, 0.5)
"""Jeffreys' Beta(½, ½) mixing distribution."""
PASSES, FAILS, UNDECIDED, INCONCLUSIVE = "passes", "fails", "undecided", "inconclusive"
MEDIAN = 0.5
"""The level of the criterion on the medians (certificates before version 3)."""


def log_mixture_martingale(successes: ArrayLike, trials: ArrayLike, p: float,
                           prior: tuple[float, float] = PRIOR) -> Any:
    """log M_t(p) for S_t = ``successes`` of t = ``trials`` (module docstring; elementwise for arrays)."""
    a, b = prior
    log_mixture = special.betaln(a + successes, b + trials - successes) - special.betaln(a, b)
    return log_mixture - special.xlogy(successes, p) - special.xlog1py(trials - successes, -p)


def confidence_sequence(successes: int, trials: int, delta: float,
                        prior: tuple[float, float] = PRIOR) -> tuple[float, float]:
    """The interval {p : M_t(p) < 1/δ} at time t = ``trials`` (the whole [0, 1] before any trial)."""
    if trials == 0:
        return 0.0, 1.0
    threshold = -math.log(delta)

    def excess(p: float) -> float:
        return log_mixture_martingale(successes, trials, p, prior) - threshold

    estimate = successes / trials
    low = 0.0 if excess(0.0) < 0 else optimize.brentq(excess, 0.0, estimate, xtol=1e-12) if estimate > 0 else 0.0
    high = 1.0 if excess(1.0) < 0 else optimize.brentq(excess, estimate, 1.0, xtol=1e-12) if estimate < 1 else 1.0
    return float(low), float(high)


def excludes(successes: int, trials: int, delta: float, level: float = MEDIAN) -> int:
    """+1 when the sequence lies above ``level``, −1 when below, 0 when it contains it."""
    if trials == 0 or log_mixture_martingale(successes, trials, level) < -math.log(delta):
        return 0
    return 1 if successes > level * trials else -1


def per_sequence_error(confidence: float, points: int, sequences: int = 2) -> float:
    """δ of each of the ``sequences``·``points`` sequences of a certificate whose verdicts hold together at
    ``confidence`` (Bonferroni: every decided verdict of every point is right at once with probability at
    least ``confidence``); a holdout certificate's point has two sequences, an arena certificate's one."""
    if not 0 < confidence < 1 or points < 1:
        raise ValueError(f"need 0 < confidence < 1 and at least one point, got {confidence} and {points}")
    return (1.0 - confidence) / (sequences * points)


@dataclass(frozen=True)
class Verdict:
    """A grid point's verdict after ``replications`` replications, with the counts of indicators set and the
    per-sequence error; both probabilities' confidence sequences are computed when asked for."""

    verdict: str
    replications: int
    beyond_tau: int
    beyond_epsilon: int
    delta: float

    @functools.cached_property
    def p_delta(self) -> tuple[float, float]:
        """The confidence sequence of P(Δ < −τ) at this time."""
        return confidence_sequence(self.beyond_tau, self.replications, self.delta)

    @functools.cached_property
    def p_error(self) -> tuple[float, float]:
        """The confidence sequence of P(optimism > ε) at this time."""
        return confidence_sequence(self.beyond_epsilon, self.replications, self.delta)


def verdict_at(beyond_tau: ArrayLike, beyond_epsilon: ArrayLike, delta: float, level: float = MEDIAN) -> Verdict:
    """The verdict after the given indicators (1{Δ < −τ} and 1{optimism > ε} per replication, in
    order), each sequence at error ``delta`` against ``level``: ``passes``, ``fails`` or ``undecided``."""
    x, y = np.asarray(beyond_tau, dtype=bool), np.asarray(beyond_epsilon, dtype=bool)
    t, s_delta, s_error = x.size, int(x.sum()), int(y.sum())
    sides = excludes(s_delta, t, delta, level), excludes(s_error, t, delta, level)
    verdict = FAILS if 1 in sides else PASSES if sides == (-1, -1) else UNDECIDED
    return Verdict(verdict, t, s_delta, s_error, delta)


def sides(indicators: np.ndarray, delta: float, level: float = MEDIAN) -> np.ndarray:
    """After each replication t: +1 when the sequence of the first t indicators lies above ``level``,
    −1 below, 0 when it contains it (:func:`excludes`, for every t at once)."""
    successes = np.cumsum(indicators)
    trials = np.arange(1, indicators.size + 1)
    excluded = log_mixture_martingale(successes, trials, level) >= -math.log(delta)
    return np.where(excluded, np.where(successes > level * trials, 1, -1), 0)


def stopping_verdict(beyond_tau: ArrayLike, beyond_epsilon: ArrayLike, delta: float, level: float = MEDIAN,
                     maximum: float = math.inf) -> Verdict:
    """The verdict at the first t at which it is decided (looking after every replication), or
    at the last t: ``inconclusive`` once ``maximum`` indicators were given, else ``undecided``.
    The indicators may run past the stopping time (a chunk of replications computed at once):
    what follows the stop is ignored, so the verdict and the replications it used do not
    depend on how the replications were chunked."""
    x, y = np.asarray(beyond_tau, dtype=bool), np.asarray(beyond_epsilon, dtype=bool)
    if x.size:
        sides_x, sides_y = sides(x, delta, level), sides(y, delta, level)
        decided = np.flatnonzero((sides_x == 1) | (sides_y == 1) | ((sides_x == -1) & (sides_y == -1)))
        if decided.size:
            return verdict_at(x[: decided[0] + 1], y[: decided[0] + 1], delta, level)
    final = verdict_at(x, y, delta, level)
    return dataclasses.replace(final, verdict=INCONCLUSIVE) if x.size >= maximum else final


def first_decision(delta: float, level: float = MEDIAN) -> int:
    """The fewest replications that can decide a pass: no indicator set in any of them."""
    t = 1
    while log_mixture_martingale(0, t, level) < -math.log(delta):
        t += 1
    return t


def median_interval(values: ArrayLike, confidence: float) -> tuple[float, float, float]:
    """The sample median and a distribution-free confidence interval for the median: order
    statistics x₍ₗ₎ ≤ x₍ᵤ₎ with l, u from Binomial(t, ½), so that P(x₍ₗ₎ ≤ median ≤ x₍ᵤ₎) ≥
    ``confidence`` (the sign-test interval); an end is ±inf where t is too small for it."""
    x = np.sort(np.asarray(values, dtype=float))
    t = x.size
    if t == 0:
        return math.nan, math.nan, math.nan
    lower_rank = int(stats.binom.ppf((1.0 - confidence) / 2.0, t, 0.5))  # P(Bin ≤ l − 1) ≤ (1 − c)/2
    if stats.binom.cdf(lower_rank, t, 0.5) > (1.0 - confidence) / 2.0:
        lower_rank -= 1
    low = x[lower_rank] if lower_rank >= 0 else -math.inf
    high = x[t - 1 - lower_rank] if lower_rank >= 0 else math.inf
    return float(np.median(x)), float(low), float(high)


MOST_REPLICATIONS_ESTIMATED = 1_000_000
"""Beyond this many replications, :func:`replications_to_decide` says none would decide."""


@dataclass(frozen=True)
class Outlook:
    """What more replications would likely do to an undecided point: the verdict they would reach and
    after how many replications in all, if the rates observed so far held (None: none would decide)."""

    verdict: str | None
    replications: int | None


def replications_to_decide(rate_tau: float, rate_epsilon: float, observed: int, delta: float,
                           level: float = MEDIAN) -> Outlook:
    """The plug-in outlook of a point undecided after ``observed`` replications, with shares
    ``rate_tau`` of Δ < −τ and ``rate_epsilon`` of optimism > ε: with each share held (S_t = rate·t),
    the first t at which its sequence (error ``delta``) excludes ``level``. It fails at the first t
    at which a share above the level is excluded from below, passes at the first t at which both
    shares, below it, are; a share exactly at the level (or an estimate beyond
    ``MOST_REPLICATIONS_ESTIMATED``) decides never. The count is at least ``observed`` + 1. An
    estimate, not a bound: the shares themselves are uncertain (their confidence sequences say how much)."""
    rates = (rate_tau, rate_epsilon)
    times = [_first_exclusion(rate, delta, level, observed + 1) for rate in rates]
    failing = [t for rate, t in zip(rates, times) if rate > level and t is not None]
    if failing:
        return Outlook(FAILS, min(failing))
    if all(rate < level for rate in rates) and None not in times:
        return Outlook(PASSES, max(t for t in times if t is not None))
    return Outlook(None, None)


def _first_exclusion(rate: float, delta: float, level: float, start: int = 1) -> int | None:
    """The first t ≥ ``start`` at which S_t = rate·t puts ``level`` outside the sequence (None: none up to
    the most estimated)."""
    if rate == level:
        return None
    while start <= MOST_REPLICATIONS_ESTIMATED:
        t = np.arange(start, min(4 * start, MOST_REPLICATIONS_ESTIMATED + 1))
        excluded = np.flatnonzero(log_mixture_martingale(rate * t, t, level) >= -math.log(delta))
        if excluded.size:
            return int(t[excluded[0]])
        start = 4 * start
    return None
