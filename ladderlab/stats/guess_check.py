"""The confidence arithmetic of guess and check (Rogers, Roth, Smith, Srebro, Thakkar & Woodworth 2020).

As their library's ``Guess_and_Check_Mechanism`` computes it: query number q (counting from
0) after f failed checks is checked at confidence

    β_q = β · w(q) · w(f) / N(q, f),   w(x) = 6/(π²(x + 1)²)  (the terms of a series summing to 1),

where N(q, f) = C(q, f)·Π_j V(γ_j) counts the transcripts the first q answers can have: which
checks failed, and the value each failed check released (V(γ) values of a release rounded to a
multiple of γ). Summed over every query, failure count and transcript, the β_q add up to at most
β: with probability ≥ 1 − β every answer is within τ of its population value.

- :func:`check_width`: a pass needs |g − h| ≤ τ − w, with w the Chernoff–Hoeffding width
  (their ``mgf_width``: P(mean of n [0, 1] draws deviates by w from p) ≤ exp(−n·KL(p ± w ‖ p)))
  at the ends g ± τ of the claimed interval. The library picks one end by the sign of g − h; we take
  the wider of the two, which does not look at the data.
- :func:`failure_step`: the largest γ < τ with 2n(τ − γ)² ≥ ln(2/β_q) (Hoeffding), in closed form;
  none (0) means the check part is spent.
- :func:`rounded_values`: V(γ) counts the values of a release rounded to γ and clipped to [0, 1]:
  ⌊1/γ⌋ + 2 (the library's ⌈1/γ⌉ misses the clipped 1 when 1/γ is not whole).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray


def series_weight(x: int) -> float:
    """w(x) = 6/(π²(x + 1)²): Σ_{x≥0} w(x) = 1."""
    return 6.0 / (math.pi**2 * (x + 1) ** 2)


def rounded_values(gamma: float) -> int:
    """How many values a release rounded to a multiple of γ and clipped to [0, 1] can take."""
    return math.floor(1.0 / gamma) + 2


def query_confidence(beta: float, queries: int, failures: int, log_values: float) -> float:
    """β_q for query number ``queries`` after ``failures`` failed checks, whose rounded releases
    could take e^{``log_values``} value combinations."""
    log_transcripts = (math.lgamma(queries + 1) - math.lgamma(failures + 1) - math.lgamma(queries - failures + 1)
                       + log_values)
    return beta * series_weight(queries) * series_weight(failures) * math.exp(-log_transcripts)


def failure_step(n: int, tau: float, confidence: float) -> float:
    """γ for a failed check on n points at this per-query confidence (0: none is left)."""
    return max(0.0, tau - math.sqrt(math.log(2.0 / confidence) / (2.0 * n)))


def check_width(n: int, guesses: ArrayLike, tau: float, confidence: ArrayLike) -> NDArray[np.float64]:
    """w for each guess g (a fraction of the range) at its confidence: the deviation of an n-point mean
    beyond which a population value at g + τ (below) or g − τ (above) is rejected at confidence/2
    (their ``mgf_width``, both ends)."""
    g = np.asarray(guesses, dtype=float)
    target = np.log(2.0 / np.asarray(confidence, dtype=float)) / n
    return np.maximum(_kl_width(np.clip(1.0 - (g + tau), 0.0, 1.0), target),
                      _kl_width(np.clip(g - tau, 0.0, 1.0), target))


def default_tau(n: int, beta: float, queries: int) -> float:
    """[R] our default τ on a check part of n points: twice the Hoeffding width of query number
    ``queries`` before any failure, √(ln(2/β_q)/(2n)), so that an honest guess within half of τ
    passes all the way there (the library takes τ as given)."""
    return 2.0 * math.sqrt(math.log(2.0 / query_confidence(beta, queries, 0, 0.0)) / (2.0 * n))


def _kl_width(p: NDArray[np.float64], target: NDArray[np.float64]) -> NDArray[np.float64]:
    """The smallest w ∈ [0, 1 − p] with KL(p + w ‖ p) ≥ ``target`` (1 − p where none is), by bisection."""
    low, high = np.zeros_like(p), 1.0 - p
    reachable = _kl(p, np.ones_like(p)) >= target
    for _ in range(48):
        middle = (low + high) / 2
        enough = _kl(p, p + middle) >= target
        high = np.where(enough, middle, high)
        low = np.where(enough, low, middle)
    return np.where(reachable, high, 1.0 - p)


def _kl(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """KL(q ‖ p) of Bernoulli distributions."""
    from scipy import special

    return special.rel_entr(q, p) + special.rel_entr(1 - q, 1 - p)
